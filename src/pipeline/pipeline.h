// The stages of the data flow chained in one place: an ONNX file and a
// device in, a runnable session out; and a session over a model with
// symbolic dimensions that specializes once per input shape.
//
//   auto device = runtime::open_device("pocl");
//   ModelSession s("model.onnx", device);               // dims left symbolic
//   std::vector<HostTensor> y = s.run({x});              // specialized for x's shape
//   s.specializations();                                 // shapes, bytes, compile time
//
// Promises: a specialization is compiled (import -> optimize -> patch ->
// storage -> usage records -> plan -> validate -> runtime::Session; the
// stages are chained here only) once per distinct
// set of input shapes and kept while among the `cache_size` most recently
// used; each is planned at its own lower bound. Inputs whose shape does not
// fit the model's declared dims are refused naming the input and dimension.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "import/onnx_import.h"
#include "optimize/half_range.h"
#include "optimize/optimize.h"
#include "optimize/patch.h"
#include "optimize/storage.h"
#include "optimize/usage.h"
#include "plan/memory_plan.h"
#include "runtime/session.h"

namespace texplan {

struct CompileOptions {
  std::string strategy = "best";
  std::string textures = "none";   // none | auto | pools | views
  LayoutPolicy texture_layouts = LayoutPolicy::Cost;  // how each texture's layout is picked (optimize/storage.h)
  OptimizeOptions optimize;        // its device_forms set from the device (lower::kernel_catalog)
  // Each optimization's share of the lower bound (optimization_shares): the
  // imported graph copied and optimized again once per optimization. Graphs
  // of more than kMaxShareNodes imported nodes get none and are not copied.
  bool optimization_shares = false;
  std::string patch = "off";       // off | auto | RxC: first stages by patches (optimize/patch.h); OpenCL devices only
  runtime::SessionOptions session;  // its precision sets how floats are stored (fp16: 2-byte records)
};

// Wall time of each stage (0 for one that did not run), for `texplan -v`.
struct StageTimes {
  double import_ms = 0;
  double optimize_ms = 0;  // the rewrites and patching
  double shares_ms = 0;    // the copy of the imported graph and the optimization shares
  double records_ms = 0;   // buffer-only bound, storage assignment, usage records
  double plan_ms = 0;      // plan and validation
};

// One specialization of a model: its graph as optimized, storage, usage
// records and validated plan.
struct CompiledModel {
  Graph graph;
  OptimizeReport optimized;
  std::vector<OptimizationShare> optimization_shares;  // with CompileOptions::optimization_shares
  HalfRangeReport half_range;  // fp16 on a device: activations scaled into half's range
  int tf32_stored_tensors = 0;  // tf32 on a device: activations stored rounded (optimize/tf32_storage.h)
  PatchReport patching;
  StorageAssignment storage;
  PlanInput usage;
  std::string strategy;                  // the one planned: strategy_for(storage.mode, options.strategy)
  plan::MemoryPlan plan;
  int64_t lower_bound_bytes = 0;         // of the planned records (textures at their real size)
  int64_t buffer_lower_bound_bytes = 0;  // the same graph with every tensor a buffer
  StageTimes times;
};

// Import (with `import`'s dims and weights as it says) through a validated
// plan for `device_type` ("gpu", "cpu", "cpu-executor" for the host
// reference, or "" for a profile without a device, as `texplan plan`
// plans: the optimizations as given) and `profile`.
CompiledModel compile(const std::string& model_path, const ImportOptions& import, const plan::DeviceProfile& profile,
                      const std::string& device_type, const CompileOptions& options);

// compile's stages one by one, for callers that act between them: draw
// inputs for the imported graph, partition the records for an offload
// library, plan every strategy for a report.
//
//   CompiledModel m = import_model(path, import);           // m.graph as imported
//   lower_to_records(m, profile, device_type, options);     // optimized, patched, stored, m.usage
//   plan_records(m, profile, options);                      // m.plan validated, m.lower_bound_bytes
//
// lower_to_records throws Error for patching on "cpu-executor".
CompiledModel import_model(const std::string& model_path, const ImportOptions& import);
void lower_to_records(CompiledModel& m, const plan::DeviceProfile& profile, const std::string& device_type,
                      const CompileOptions& options);
// m.graph's usage records over m.storage made again (after lower_to_records).
PlanInput usage_records(const CompiledModel& m, const CompileOptions& options);
void plan_records(CompiledModel& m, const plan::DeviceProfile& profile, const CompileOptions& options);

class ModelSession {
 public:
  struct Specialization {
    std::vector<Shape> input_shapes;  // in the model's input order
    int64_t plan_bytes = 0, lower_bound_bytes = 0;
    double compile_ms = 0;
    int64_t runs = 0;
  };

  // `import.dims` / `input_shapes` fix dims for every specialization (weights
  // are always loaded); `cache_size` >= 1 specializations are kept.
  ModelSession(std::string model_path, std::shared_ptr<runtime::Device> device, CompileOptions options = {},
               ImportOptions import = {}, size_t cache_size = 4);
  ~ModelSession();
  ModelSession(const ModelSession&) = delete;
  ModelSession& operator=(const ModelSession&) = delete;

  // Inputs in the model's input order; specializes for their shapes when no
  // cached specialization has them.
  std::vector<HostTensor> run(const std::vector<HostTensor>& inputs);

  const std::string& model_name() const;
  const std::vector<InputSignature>& inputs() const;             // as the file declares them
  const std::vector<InputSignature>& declared_outputs() const;   // likewise
  // The outputs of the most recently used specialization (static shapes).
  std::vector<std::pair<std::string, Shape>> outputs() const;
  std::vector<DataType> output_dtypes() const;
  std::vector<Specialization> specializations() const;  // cached, most recently used first
  int64_t compilations() const;                          // specializations compiled so far
  const runtime::Session& current() const;              // the last run's (compiles one if none)
  const CompiledModel& current_model() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace texplan
