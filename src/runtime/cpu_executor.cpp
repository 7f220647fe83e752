#include "runtime/cpu_executor.h"

#include <cstring>

#include "optimize/sharing.h"
#include "reference/reference_ops.h"

namespace texplan::runtime {

void check_inputs(const Graph& g, const std::vector<HostTensor>& inputs) {
  if (inputs.size() != g.inputs.size())
    throw Error(g.model_name + ": expects " + std::to_string(g.inputs.size()) + " input(s), got " +
                std::to_string(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = g.tensors[g.inputs[i]];
    if (inputs[i].dtype != t.dtype || inputs[i].shape != t.shape)
      throw Error(g.model_name + ": input '" + t.name + "' must be " + to_string(t.dtype) + " " +
                  to_string(t.shape) + ", got " + to_string(inputs[i].dtype) + " " + to_string(inputs[i].shape));
  }
}

CpuExecutor::CpuExecutor(const Graph& g, const PlanInput& in, const plan::MemoryPlan& plan)
    : g_(g), in_(in), plan_(plan) {
  // The reference kernels read and write whole contiguous tensors.
  for (const Tensor& t : g.tensors)
    if (t.window)
      throw Error(g.model_name + ": tensor " + t.name + " is a window of a larger tensor (patch-based execution), which the host's reference executor does not run");
  for (const auto& p : plan.pools) pools_.emplace_back(size_t(p.bytes));
}

int64_t CpuExecutor::activation_bytes() const {
  int64_t b = 0;
  for (const auto& p : pools_) b += int64_t(p.size());
  return b;
}

uint8_t* CpuExecutor::place(int t) {
  int r = in_.record_of_tensor[t];
  const auto& pl = plan_.placements[r];
  // Textures keep their values linearly at the start of their pool or view.
  return pools_[pl.pool].data() + pl.offset + (in_.alias_offset.empty() ? 0 : in_.alias_offset[t]);
}

HostTensor CpuExecutor::read(int t) const {
  const Tensor& x = g_.tensors[t];
  if (x.is_constant) return x.value;
  HostTensor v(x.dtype, x.shape);
  if (!v.bytes.empty()) std::memcpy(v.bytes.data(), const_cast<CpuExecutor*>(this)->place(t), v.bytes.size());
  return v;
}

void CpuExecutor::write(int t, const HostTensor& v) {
  const Tensor& x = g_.tensors[t];
  if (v.shape != x.shape || v.dtype != x.dtype)
    throw Error(g_.model_name + ": reference result for '" + x.name + "' is " + to_string(v.dtype) + " " +
                to_string(v.shape) + ", the graph says " + to_string(x.dtype) + " " + to_string(x.shape));
  if (!v.bytes.empty()) std::memmove(place(t), v.bytes.data(), v.bytes.size());  // zero-size: no pointer to pass
}

std::vector<HostTensor> CpuExecutor::run(const std::vector<HostTensor>& inputs) {
  check_inputs(g_, inputs);
  for (size_t i = 0; i < inputs.size(); ++i) write(g_.inputs[i], inputs[i]);
  for (const auto& n : g_.nodes) {
    if (writes_nothing(g_, n, in_.alias_root, in_.alias_offset)) continue;  // zero-copy: the output already holds the bytes
    std::vector<HostTensor> vals;
    std::vector<const HostTensor*> args;
    vals.reserve(n.inputs.size());
    for (int t : n.inputs) vals.push_back(t >= 0 ? read(t) : HostTensor());
    for (size_t k = 0; k < n.inputs.size(); ++k) args.push_back(n.inputs[k] >= 0 ? &vals[k] : nullptr);
    std::vector<HostTensor> outs;
    try {
      outs = reference::evaluate(n, args);
    } catch (const Error& e) {  // "NAME (OP): reason", said as a session says it (index faults alike)
      throw Error("model " + g_.model_name + ": node '" + n.name + "' (" + n.op_type +
                  "): " + reference::failure_reason(n, e.what()));
    }
    for (size_t k = 0; k < n.outputs.size() && k < outs.size(); ++k)
      if (n.outputs[k] >= 0) write(n.outputs[k], outs[k]);
  }
  std::vector<HostTensor> outs;
  for (int t : g_.outputs) outs.push_back(read(t));
  return outs;
}

}  // namespace texplan::runtime
