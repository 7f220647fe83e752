// The commands behind the CLI, as functions that return JSON reports, so the
// CLI, the benchmarks and the tests share one implementation.
#pragma once
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "optimize/usage.h"
#include "plan/memory_plan.h"

namespace texplan::cli {

using nlohmann::json;

std::string human_bytes(int64_t b);  // "3.06 MiB"

// Device profile by name ("pocl", "h100", "adreno"), JSON path, or "opencl"
// (read off the default OpenCL device: the first GPU, else PoCL).
plan::DeviceProfile load_target(const std::string& target);

struct PlanOptions {
  std::vector<std::string> strategies;  // empty: all
  TextureMode textures = TextureMode::None;
  bool include_tensors = true;          // per-tensor placements in the report
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

}  // namespace texplan::cli
