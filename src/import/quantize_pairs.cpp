// QuantizeLinear -> DequantizeLinear pairs on activations as float
// arithmetic (rewrites.h). Quantized ("QDQ") models put such a pair on every
// activation a quantized operator reads; texplan computes in float, where
// the pair is y = clip(round(x / s), qmin - z, qmax - z) * s: four
// elementwise ops that every device runs and the optimizer fuses into the
// op before them. Their weights' DequantizeLinear is folded at import.
#include <cmath>
#include <map>
#include <optional>

#include "import/rewrites.h"

namespace texplan {
namespace {

// A per-tensor scale and zero point: one float32 value, one int8/uint8 value
// (absent: uint8 0).
struct Affine {
  float scale = 0;
  int32_t zero = 0;
  DataType type = DataType::UInt8;
  bool operator==(const Affine& o) const { return scale == o.scale && zero == o.zero && type == o.type; }
};

std::optional<Affine> affine(const Graph& g, const Node& n) {
  if (n.inputs.size() < 2 || n.inputs[1] < 0) return std::nullopt;
  const Tensor& s = g.tensors[n.inputs[1]];
  if (!s.is_constant || !s.has_data || s.dtype != DataType::Float32 || s.value.count() != 1) return std::nullopt;
  Affine a;
  a.scale = s.value.data<float>()[0];
  if (!(a.scale > 0.0f) || !std::isfinite(a.scale)) return std::nullopt;
  if (n.inputs.size() > 2 && n.inputs[2] >= 0) {
    const Tensor& z = g.tensors[n.inputs[2]];
    if (!z.is_constant || !z.has_data || z.value.count() != 1) return std::nullopt;
    a.type = z.dtype;
    if (z.dtype == DataType::Int8) a.zero = z.value.data<int8_t>()[0];
    else if (z.dtype == DataType::UInt8) a.zero = z.value.data<uint8_t>()[0];
    else return std::nullopt;
  }
  return a;
}

}  // namespace

int lower_quantize_pairs(Graph& g) {
  // Each QuantizeLinear of a float32 tensor read only by DequantizeLinears
  // of its own scale and zero point, none a graph output.
  const auto consumers = g.consumers();
  std::vector<char> graph_output(g.tensors.size(), 0);
  for (int t : g.outputs) graph_output[size_t(t)] = 1;
  struct Pair {
    Affine affine;
    std::vector<int> dequantizers;
  };
  std::map<int, Pair> pairs;  // by Quantize node
  std::vector<char> paired(g.nodes.size(), 0);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& q = g.nodes[k];
    if (q.op_type != "QuantizeLinear" || q.inputs.empty() || q.inputs[0] < 0 || q.outputs.size() != 1 ||
        q.outputs[0] < 0 || g.tensors[q.inputs[0]].dtype != DataType::Float32 || graph_output[size_t(q.outputs[0])])
      continue;
    const std::optional<Affine> a = affine(g, q);
    const std::vector<int>& readers = consumers[size_t(q.outputs[0])];
    if (!a || readers.empty()) continue;
    bool all = true;
    for (int r : readers) {
      const Node& d = g.nodes[size_t(r)];
      all = all && d.op_type == "DequantizeLinear" && d.inputs[0] == q.outputs[0] && d.outputs.size() == 1 &&
            d.outputs[0] >= 0 && affine(g, d) == a;
    }
    if (!all) continue;
    pairs[int(k)] = {*a, readers};
    for (int r : readers) paired[size_t(r)] = 1;
  }
  if (pairs.empty()) return 0;
  int at = -1;  // replace_nodes visits the nodes in order
  replace_nodes(
      g,
      [&](const Node& n, RewriteNodes& r) {
        ++at;
        if (paired[size_t(at)]) return true;  // a Dequantize: its value comes from the pair's Mul
        const auto p = pairs.find(at);
        if (p == pairs.end()) return false;
        const Affine& a = p->second.affine;
        const Shape shape = g.tensors[n.inputs[0]].shape;
        const int lo = a.type == DataType::Int8 ? -128 : 0, hi = a.type == DataType::Int8 ? 127 : 255;
        const int scaled = r.tensor(shape, DataType::Float32), rounded = r.tensor(shape, DataType::Float32),
                  clipped = r.tensor(shape, DataType::Float32);
        r.add("Div", {n.inputs[0], r.float_scalar(a.scale)}, {scaled});
        r.add("Round", {scaled}, {rounded});
        r.add("Clip", {rounded, r.float_scalar(float(lo - a.zero)), r.float_scalar(float(hi - a.zero))}, {clipped});
        const std::vector<int>& dequantized = p->second.dequantizers;
        const int out = g.nodes[size_t(dequantized.front())].outputs[0];
        r.add("Mul", {clipped, r.float_scalar(a.scale)}, {out});
        for (size_t i = 1; i < dequantized.size(); ++i)
          r.add("Identity", {out}, {g.nodes[size_t(dequantized[i])].outputs[0]});
        return true;
      },
      "dequantized");
  g.quantized_pairs += int(pairs.size());
  return int(pairs.size());
}

}  // namespace texplan
