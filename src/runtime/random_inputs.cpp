#include "runtime/random_inputs.h"

#include <algorithm>
#include <random>

#include "reference/common.h"

namespace texplan::runtime {
namespace {

constexpr int64_t kIntegerBound = 100;

bool passes_values_through(const std::string& op) {
  return op == "Cast" || op == "Reshape" || op == "Squeeze" || op == "Unsqueeze" || op == "Flatten" ||
         op == "Identity";
}

}  // namespace

int64_t random_integer_bound(const Graph& g, int input) {
  const auto consumers = g.consumers();
  int64_t bound = kIntegerBound;
  std::vector<int> pending = {input};
  std::vector<char> seen(g.tensors.size(), 0);
  while (!pending.empty()) {
    const int t = pending.back();
    pending.pop_back();
    if (seen[t]) continue;
    seen[t] = 1;
    for (int c : consumers[t]) {
      const Node& n = g.nodes[c];
      if (passes_values_through(n.op_type) && n.inputs[0] == t) {
        for (int o : n.outputs)
          if (o >= 0) pending.push_back(o);
      } else if (n.op_type == "Gather" && n.inputs.size() > 1 && n.inputs[1] == t && n.inputs[0] >= 0) {
        const Shape& table = g.tensors[n.inputs[0]].shape;
        int64_t axis = n.get_int("axis", 0);
        if (axis < 0) axis += int64_t(table.size());
        if (axis >= 0 && axis < int64_t(table.size()) && table[axis] > 0) bound = std::min(bound, table[axis]);
      }
    }
  }
  return bound;
}

std::vector<HostTensor> random_inputs(const Graph& g, uint32_t seed) {
  std::vector<HostTensor> out;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const Tensor& t = g.tensors[g.inputs[i]];
    std::mt19937 rng(seed * 7919u + uint32_t(i));
    HostTensor h(t.dtype, t.shape);
    const int64_t n = h.count();
    std::uniform_real_distribution<float> real(-1.0f, 1.0f);
    switch (t.dtype) {
      case DataType::Float32:
        for (int64_t k = 0; k < n; ++k) h.data<float>()[k] = real(rng);
        break;
      case DataType::Float64:
        for (int64_t k = 0; k < n; ++k) h.data<double>()[k] = real(rng);
        break;
      case DataType::Float16:
        for (int64_t k = 0; k < n; ++k) h.data<uint16_t>()[k] = reference::float_to_half(real(rng));
        break;
      case DataType::Bool:
        for (int64_t k = 0; k < n; ++k) h.bytes[k] = uint8_t(rng() & 1);
        break;
      default: {
        std::uniform_int_distribution<int64_t> integer(0, random_integer_bound(g, g.inputs[i]) - 1);
        for (int64_t k = 0; k < n; ++k) {
          const int64_t v = integer(rng);
          switch (t.dtype) {
            case DataType::Int64: h.data<int64_t>()[k] = v; break;
            case DataType::Int32: h.data<int32_t>()[k] = int32_t(v); break;
            case DataType::Int8: h.data<int8_t>()[k] = int8_t(v); break;
            default: h.bytes[k] = uint8_t(v); break;
          }
        }
      }
    }
    out.push_back(std::move(h));
  }
  return out;
}

}  // namespace texplan::runtime
