// The plan report: a model (or usage records) planned with each strategy
// against the lower bound, as JSON (docs/plan-json.md) and as the table
// `texplan plan` prints, with the optimizer's and the patches' parts that
// `texplan run` reports too. The CLI, the Python module, the benchmarks and
// the tests share this one implementation.
//
//   plan::DeviceProfile dev = runtime::load_profile("adreno");
//   nlohmann::json r = report::plan_model("squeezenet1_1", dev, {});  // every strategy
//   report::print_plan_table(r, std::cout);
#pragma once
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "import/onnx_import.h"
#include "optimize/optimize.h"
#include "optimize/patch.h"
#include "optimize/usage.h"
#include "plan/memory_plan.h"

namespace texplan::report {

using nlohmann::json;

struct PlanOptions {
  std::vector<std::string> strategies;  // empty: all
  TextureMode textures = TextureMode::None;
  LayoutPolicy texture_layouts = LayoutPolicy::Cost;  // --texture-layout (optimize/storage.h)
  bool include_tensors = true;          // per-tensor placements in the report
  std::string patch = "off";            // off | auto | RxC: the first stages run by patches (optimize/patch.h)
  std::string offload = "none";         // none | clblast | auto: partition and scratch records (src/offload)
  bool offload_on_device = false;       // --target opencl: CLBlast sizes its scratch on that device
  OptimizeOptions optimize;             // graph rewrites before planning (optimize/optimize.h)
  bool optimization_shares = true;      // re-optimize with each one off to report its share
  ImportOptions import;                 // symbolic dimensions fixed by --dim / --input-shape
  // --precision fp16: Float32 tensors planned as 2-byte halves (UsageOptions::float_storage).
  DataType float_storage = DataType::Float32;
};

// Plans `recs` with each strategy and validates every plan. JSON fields:
// model, target, textures, records, lower_bound_bytes, naive_bytes,
// strategies[{name, total_bytes, buffer_bytes, texture_bytes, ratio, valid,
// error, plan_ms, pools[], tensors[]}].
json plan_report(const std::string& model, const std::vector<plan::UsageRecord>& recs,
                 const plan::DeviceProfile& dev, const PlanOptions& opt);
void print_plan_table(const json& report, std::ostream& out);

// Import + usage records + plan_report, for a model file or folder.
json plan_model(const std::string& model_path, const plan::DeviceProfile& dev, const PlanOptions& opt);

// JSON fields: raw_lower_bound_bytes, lower_bound_bytes, nodes_before/after,
// fused_conv, fused_matmul, fused_elementwise, folded_batchnorm, inplace,
// elided_concats, order, order_ms, optimize_ms, shares[{name,
// lower_bound_without, bytes_saved}].
json optimize_json(const OptimizeReport& r, const std::vector<OptimizationShare>& shares);
void print_optimize_summary(const json& optimization, std::ostream& out);

// Patch-based execution's part (optimize/patch.h). JSON fields: mode,
// applied, reason (when not applied), segments [{grid "RxC", first_node,
// nodes, outputs}], bound_without_bytes, bound_with_bytes, bound_ratio,
// flops_without, flops_with, extra_flops_pct, copy_bytes, candidates.
json patch_json(const PatchReport& r);
// One line: "patching 4x4 over nodes 0..11 (to T): bound 5.74 MiB -> 1.24 MiB (0.217x), +9.3% FLOPs, ..."
void print_patch_summary(const json& p, std::ostream& out);

}  // namespace texplan::report
