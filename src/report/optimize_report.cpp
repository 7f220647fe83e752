// The optimizer's part of the reports (texplan plan, texplan run, texplan_bench).
#include <algorithm>
#include <cstdio>

#include "report/report.h"

namespace texplan::report {

json optimize_json(const OptimizeReport& r, const std::vector<OptimizationShare>& shares) {
  json j{{"raw_lower_bound_bytes", r.raw_lower_bound_bytes},
         {"lower_bound_bytes", r.lower_bound_bytes},
         {"nodes_before", r.nodes_before},
         {"nodes_after", r.nodes_after},
         {"fused_conv", r.fused_conv},
         {"fused_matmul", r.fused_matmul},
         {"fused_elementwise", r.fused_elementwise},
         {"fused_gather", r.fused_gather},
         {"folded_batchnorm", r.folded_batchnorm},
         {"folded_pads", r.folded_pads},
         {"fused_pool", r.fused_pool},
         {"fused_channel_scales", r.fused_channel_scales},
         {"fused_channel_programs", r.fused_channel_programs},
         {"fused_channel_gates", r.fused_channel_gates},
         {"fused_depthwise_inputs", r.fused_depthwise_inputs},
         {"fused_mlps", r.fused_mlps},
         {"fused_layernorm", r.fused_layernorm},
         {"fused_attention", r.fused_attention},
         {"fused_channel_shuffles", r.fused_channel_shuffles},
         {"fused_row_norms", r.fused_row_norms},
         {"inplace", r.inplace},
         {"elided_concats", r.elided_concats},
         {"viewed_nodes", r.viewed_nodes},
         {"order", r.order},
         {"order_ms", r.order_ms},
         {"optimize_ms", r.total_ms}};
  j["order_candidates"] = json::object();
  for (const auto& [name, bytes] : r.order_candidates) j["order_candidates"][name] = bytes;
  j["shares"] = json::array();
  for (const auto& s : shares)
    j["shares"].push_back({{"name", s.name}, {"lower_bound_without", s.lower_bound_without}, {"bytes_saved", s.bytes_saved}});
  return j;
}

void print_optimize_summary(const json& o, std::ostream& out) {
  out << "optimized: " << o["nodes_before"] << " -> " << o["nodes_after"] << " nodes (" << o["fused_conv"]
      << " FusedConv, " << o["fused_matmul"] << " FusedMatMul, " << o["fused_elementwise"] << " FusedElementwise, "
      << o["fused_gather"] << " FusedGather, "
      << o["fused_pool"] << " FusedConvMaxPool, " << o["fused_channel_scales"] << " channel scales into convs, "
      << o["fused_channel_programs"] << " channel programs into convs, " << o["fused_channel_gates"]
      << " channel gates, " << o["fused_depthwise_inputs"]
      << " depthwise convs into 1x1s, " << o["fused_channel_shuffles"] << " channel shuffles into convs, "
      << o["fused_row_norms"] << " LayerNormalizations into products, "
      << o["fused_mlps"] << " FusedMlp, " << o["fused_attention"] << " FusedAttention, "
      << o["fused_layernorm"] << " LayerNormalization, " << o["folded_batchnorm"] << " BatchNormalization folded), " << o["inplace"] << " in place, "
      << o["elided_concats"] << " concats elided, " << o["viewed_nodes"] << " made views, order "
      << o["order"].get<std::string>() << "\n";
  out << "lower bound: " << human_bytes(o["raw_lower_bound_bytes"]) << " as imported -> "
      << human_bytes(o["lower_bound_bytes"]) << " optimized";
  const double raw = double(std::max<int64_t>(1, o["raw_lower_bound_bytes"].get<int64_t>()));
  char ratio[32];
  std::snprintf(ratio, sizeof ratio, " (%.3f)", double(o["lower_bound_bytes"].get<int64_t>()) / raw);
  out << ratio << "\n";
  if (!o["shares"].empty()) {
    out << "saved by each (bound with it off alone):";
    for (const auto& s : o["shares"])
      out << " " << s["name"].get<std::string>() << " " << human_bytes(s["bytes_saved"].get<int64_t>());
    out << "\n";
  }
}

}  // namespace texplan::report
