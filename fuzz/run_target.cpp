// The `run` fuzz target (targets.h): the whole path a user's model takes,
// on PoCL. Kept apart from targets.cpp because it needs the OpenCL runtime,
// which the other targets do not.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "device/device.h"
#include "import/onnx_import.h"
#include "lower/lower.h"
#include "optimize/optimize.h"
#include "optimize/usage.h"
#include "plan/memory_plan.h"
#include "runtime/session.h"
#include "targets.h"

namespace texplan::fuzz {
namespace {

// Bounds that keep one input in milliseconds: small pools, small inputs,
// few nodes (the decoder makes at most 12).
constexpr int64_t kMaxPlanBytes = int64_t{4} << 20;
constexpr int64_t kMaxInputElements = 1 << 16;

[[noreturn]] void broken(const std::string& what) {
  std::fprintf(stderr, "texplan fuzz: broken promise: %s\n", what.c_str());
  std::abort();
}

std::shared_ptr<runtime::Device> pocl() {
  static const std::shared_ptr<runtime::Device> device = [] {
    try {
      return runtime::open_device("pocl");
    } catch (const Error& e) {
      std::fprintf(stderr, "texplan fuzz: the run target needs PoCL: %s\n", e.what());
      std::exit(1);
    }
  }();
  return device;
}

// Deterministic input values from the fuzz bytes (small magnitudes, some
// negative; integer inputs small, so indices are sometimes in range).
HostTensor input_for(const Tensor& t, const uint8_t* data, size_t size, size_t& at) {
  HostTensor h(t.dtype, t.shape);
  auto next = [&]() -> int { return size == 0 ? 0 : int8_t(data[at++ % size]); };
  const int64_t n = h.count();
  switch (t.dtype) {
    case DataType::Float32:
      for (int64_t i = 0; i < n; ++i) h.data<float>()[i] = float(next()) / 16;
      break;
    case DataType::Int64:
      for (int64_t i = 0; i < n; ++i) h.data<int64_t>()[i] = next() % 4;
      break;
    case DataType::Int32:
      for (int64_t i = 0; i < n; ++i) h.data<int32_t>()[i] = next() % 4;
      break;
    default:
      for (auto& b : h.bytes) b = uint8_t(next() & 1);
      break;
  }
  return h;
}

// The decoder's symbolic dimension "N" fixed to 2 where an input has it
// (naming a dimension no input has is an error of its own).
Graph import_symbolic_as_two(const std::string& model) {
  ImportOptions o;
  o.load_weights = true;
  o.dims = {{"N", 2}};
  try {
    return import_onnx_bytes(model, "fuzz", scratch_dir(), o);
  } catch (const Error&) {
    o.dims.clear();
    return import_onnx_bytes(model, "fuzz", scratch_dir(), o);
  }
}

}  // namespace

void run_model(const uint8_t* data, size_t size) {
  const std::string model = shapes_model(data, size);
  try {
    Graph g = import_symbolic_as_two(model);  // validates every node
    for (int id : g.inputs)
      if (element_count(g.tensors[id].shape) > kMaxInputElements) return;
    std::shared_ptr<runtime::Device> device = pocl();
    optimize(g, {.device_forms = lower::kernel_catalog().fused_for("cpu")});
    PlanInput in = make_usage_records(g);
    plan::MemoryPlan p = plan::plan_memory(in.records, device->info().profile, "best");
    plan::validate(p, in.records, device->info().profile);
    if (p.total_bytes() > kMaxPlanBytes) return;
    std::vector<HostTensor> inputs;
    size_t at = 0;
    for (int id : g.inputs) inputs.push_back(input_for(g.tensors[id], data, size, at));
    runtime::Session session(g, in, p, device);
    const std::vector<HostTensor> outputs = session.run(inputs);
    if (outputs.size() != g.outputs.size()) broken("a run returned " + std::to_string(outputs.size()) + " outputs, not " +
                                                   std::to_string(g.outputs.size()));
    for (size_t k = 0; k < outputs.size(); ++k) {
      const Tensor& t = g.tensors[g.outputs[k]];
      if (outputs[k].shape != t.shape || outputs[k].dtype != t.dtype)
        broken("output '" + t.name + "' came back in another shape or type than planned");
    }
  } catch (const Error& e) {
    if (std::string_view(e.what()).find('\n') != std::string_view::npos) broken("multi-line error: " + std::string(e.what()));
  } catch (const plan::PlanError&) {
  }
}

}  // namespace texplan::fuzz
