#include "cli/patch_report.h"

#include <cstdio>

namespace texplan::cli {

nlohmann::json patch_json(const PatchReport& r) {
  nlohmann::json j{{"mode", r.mode},
                   {"applied", r.applied},
                   {"bound_without_bytes", r.bound_without},
                   {"bound_with_bytes", r.bound_with},
                   {"bound_ratio", r.bound_without > 0 ? double(r.bound_with) / double(r.bound_without) : 1.0},
                   {"flops_without", r.flops_without},
                   {"flops_with", r.flops_with},
                   {"extra_flops_pct", r.extra_flops_pct()},
                   {"candidates", r.candidates}};
  if (r.applied) {
    j["grid"] = std::to_string(r.rows) + "x" + std::to_string(r.cols);
    j["segment_nodes"] = r.segment_nodes;
    j["segment_outputs"] = r.segment_outputs;
    j["copy_bytes"] = r.copy_bytes;
  } else {
    j["reason"] = r.reason;
  }
  return j;
}

void print_patch_summary(const nlohmann::json& p, std::ostream& out) {
  if (p["mode"] == "off") return;
  if (!p["applied"].get<bool>()) {
    out << "patching (" << p["mode"].get<std::string>() << "): not applied: " << p["reason"].get<std::string>()
        << "; bound " << human_bytes(p["bound_without_bytes"]) << "\n";
    return;
  }
  char ratio[64];
  std::snprintf(ratio, sizeof ratio, "(%.3fx), %+.1f%% FLOPs", p["bound_ratio"].get<double>(), p["extra_flops_pct"].get<double>());
  out << "patching " << p["grid"].get<std::string>() << " over the first " << p["segment_nodes"] << " nodes (to";
  for (const auto& t : p["segment_outputs"]) out << " " << t.get<std::string>();
  out << "): bound " << human_bytes(p["bound_without_bytes"]) << " -> " << human_bytes(p["bound_with_bytes"]) << " "
      << ratio << ", " << human_bytes(p["copy_bytes"]) << " copied by crops and patch writes\n";
}

}  // namespace texplan::cli
