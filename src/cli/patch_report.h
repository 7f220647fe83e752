// Patch-based execution's part of the plan and run reports (optimize/patch.h).
#pragma once
#include <nlohmann/json.hpp>
#include <ostream>

#include "optimize/patch.h"

namespace texplan::cli {

// JSON fields: mode, applied, reason (when not applied), segments
// [{grid "RxC", first_node, nodes, outputs}], bound_without_bytes, bound_with_bytes,
// bound_ratio, flops_without, flops_with, extra_flops_pct, copy_bytes,
// candidates.
nlohmann::json patch_json(const PatchReport& r);
// One line: "patching 4x4 over nodes 0..11 (to T): bound 5.74 MiB -> 1.24 MiB (0.217x), +9.3% FLOPs, ..."
void print_patch_summary(const nlohmann::json& p, std::ostream& out);

}  // namespace texplan::cli
