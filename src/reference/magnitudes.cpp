// The graph run once on the host for each activation's largest magnitude.
#include <cmath>

#include "reference/reference_ops.h"

namespace texplan::reference {

namespace {

float largest(const HostTensor& v) {
  if (v.dtype != DataType::Float32) return 0;
  float m = 0;
  const float* p = v.data<float>();
  for (int64_t i = 0, n = v.count(); i < n; ++i) m = std::max(m, std::fabs(p[i]));
  return m;
}

}  // namespace

std::vector<float> largest_magnitudes(const Graph& g, const std::vector<HostTensor>& inputs) {
  if (inputs.size() != g.inputs.size())
    throw Error(g.model_name + ": expected " + std::to_string(g.inputs.size()) + " inputs, got " +
                std::to_string(inputs.size()));
  const size_t nt = g.tensors.size();
  std::vector<float> out(nt, 0.0f);
  std::vector<HostTensor> value(nt);
  std::vector<int> readers(nt, 0);
  for (const Node& n : g.nodes)
    for (int t : n.inputs)
      if (t >= 0) ++readers[t];
  for (size_t i = 0; i < inputs.size(); ++i) {
    const int t = g.inputs[i];
    value[t] = inputs[i];
    out[t] = largest(inputs[i]);
  }
  for (const Node& n : g.nodes) {
    std::vector<const HostTensor*> args;
    args.reserve(n.inputs.size());
    for (int t : n.inputs)
      args.push_back(t < 0 ? nullptr : g.tensors[t].is_constant ? &g.tensors[t].value : &value[t]);
    std::vector<HostTensor> results = evaluate(n, args);
    for (int t : n.inputs)
      if (t >= 0 && --readers[t] == 0 && !g.tensors[t].is_constant) value[t] = HostTensor();
    for (size_t k = 0; k < n.outputs.size() && k < results.size(); ++k) {
      const int t = n.outputs[k];
      if (t < 0) continue;
      out[t] = largest(results[k]);
      if (readers[t] > 0) value[t] = std::move(results[k]);
    }
  }
  return out;
}

}  // namespace texplan::reference
