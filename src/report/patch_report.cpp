#include "report/report.h"

#include <cstdio>

namespace texplan::report {

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
    j["segments"] = nlohmann::json::array();
    for (const PatchSegment& s : r.segments)
      j["segments"].push_back({{"grid", std::to_string(s.rows) + "x" + std::to_string(s.cols)},
                               {"first_node", s.first},
                               {"nodes", s.nodes},
                               {"outputs", s.outputs}});
    j["copy_bytes"] = r.copy_bytes;
    j["copies"] = r.copies;
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
  out << "patching";
  for (const auto& s : p["segments"]) {
    out << (&s == &p["segments"].front() ? " " : "; ") << s["grid"].get<std::string>() << " over nodes "
        << s["first_node"] << ".." << s["first_node"].get<int>() + s["nodes"].get<int>() - 1 << " (to";
    for (const auto& t : s["outputs"]) out << " " << t.get<std::string>();
    out << ")";
  }
  out << ": bound " << human_bytes(p["bound_without_bytes"]) << " -> " << human_bytes(p["bound_with_bytes"]) << " "
      << ratio << ", " << human_bytes(p["copy_bytes"]) << " copied by crops and patch writes\n";
}

}  // namespace texplan::report
