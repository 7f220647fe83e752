// Patch-based execution's part of the plan and run reports (optimize/patch.h).
#pragma once
#include <nlohmann/json.hpp>
#include <ostream>

#include "optimize/patch.h"

namespace texplan::cli {

// JSON fields: mode, applied, reason (when not applied), grid ("RxC"),
// segment_nodes, segment_outputs, bound_without_bytes, bound_with_bytes,
// bound_ratio, flops_without, flops_with, extra_flops_pct, copy_bytes,
// candidates.
nlohmann::json patch_json(const PatchReport& r);
// One line: "patching 4x4 over 23 nodes: bound 6.1 MiB -> 1.9 MiB (0.31x), +12.0% FLOPs, ..."
void print_patch_summary(const nlohmann::json& p, std::ostream& out);

}  // namespace texplan::cli
