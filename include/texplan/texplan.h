// texplan's one-call API: an ONNX file in, its outputs out, run on an OpenCL
// device in the least device memory texplan can plan.
//
//   #include <texplan/texplan.h>
//   texplan::Session session("model.onnx", {.device = "gpu", .precision = "fp16"});
//   std::vector<texplan::HostTensor> y = session.run({texplan::load_tensor("input_0.pb")});
//   session.memory().activation_bytes;  // what the plan holds; .lower_bound_bytes beside it
//
// One Session compiles the model (import, graph optimization for the device,
// storage, memory plan, validation) once per distinct set of input shapes
// and keeps the last `cache_size` of them; the same steps as `texplan run`,
// so it plans the same bytes. Every failure a caller can cause throws
// texplan::Error with a one-line message naming the model, node or input.
// Link texplan::texplan (static) or texplan::texplan_shared (libtexplan.so);
// docs/library-api.md has the rest.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"  // HostTensor, DataType, Shape, Error

namespace texplan {

const char* version();  // "0.1.0"

struct Options {
  std::string device = "pocl";     // "pocl" (CPU), "gpu" (the first GPU), "opencl:N" (`texplan devices`)
  std::string precision = "fp32";  // fp32 | tf32 | fp16 (docs/precision.md)
  std::string textures = "none";   // none | auto | pools | views (docs/textures.md)
  std::string strategy = "best";   // the planning strategy (docs/strategies.md)
  std::map<std::string, int64_t> dims = {};      // symbolic dimensions fixed for every run: {{"batch", 1}}
  std::map<std::string, Shape> input_shapes = {}; // whole input shapes fixed: {{"input", {1, 3, 224, 224}}}
  bool guard = false;                            // check the plan while running (slow; guard_violations())
  size_t cache_size = 4;                         // compiled shapes kept
  bool program_cache = true;                     // built kernels kept on disk (docs/cli.md#program-cache)
};

// An input or output as the model declares it: dims < 0 where symbolic, with
// the symbol's name in `symbols`.
struct ValueInfo {
  std::string name;
  DataType dtype = DataType::Float32;
  Shape dims;
  std::vector<std::string> symbols;
};

// The memory of the most recently run (or, for static models, the compiled)
// specialization.
struct MemoryReport {
  int64_t activation_bytes = 0;          // the plan's pools together
  int64_t lower_bound_bytes = 0;         // the least any plan of these tensors can hold
  int64_t buffer_lower_bound_bytes = 0;  // the same graph with every tensor a buffer
  int64_t weight_bytes = 0;              // constants on the device
  int pools = 0;
  std::string strategy;
};

class Session {
 public:
  explicit Session(const std::string& model_path, const Options& options = {});
  ~Session();
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;

  // Inputs in the model's input order; outputs in its output order.
  std::vector<HostTensor> run(const std::vector<HostTensor>& inputs);
  // Inputs by name (every input once); outputs by name.
  std::map<std::string, HostTensor> run(const std::map<std::string, HostTensor>& feeds);

  const std::vector<ValueInfo>& inputs() const;
  const std::vector<ValueInfo>& outputs() const;
  MemoryReport memory() const;  // throws Error before the first run of a model with open dims
  std::string device_name() const;
  std::string precision() const;  // what runs: "fp32" where a device lacks tf32, say
  int64_t compilations() const;   // shapes compiled so far
  std::vector<std::string> guard_violations() const;  // of the last run with Options::guard: empty when the plan held

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A tensor from / to an ONNX TensorProto file (test_data_set_N/input_0.pb).
HostTensor load_tensor(const std::string& pb_path);
void save_tensor(const HostTensor& tensor, const std::string& name, const std::string& pb_path);

}  // namespace texplan
