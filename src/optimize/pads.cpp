// Zero padding of the spatial dims taken into the window op that reads it:
// TorchScript's exporter writes avg_pool2d(padding=p) as Pad then
// AveragePool without pads (Inception-v3's nine branch pools, DenseNet's
// transitions), and F.pad before a conv likewise. The consumer then pads on
// the fly (a Conv's pads, an AveragePool's pads with count_include_pad, which
// counts the zeros as the explicit Pad's output did): one launch and one
// stored tensor fewer.
#include <algorithm>

#include "optimize/passes.h"

namespace texplan {
namespace {

// The Pad node's pads when it pads only dims 2.. of a float tensor with
// zeros ("constant" mode, value 0), none negative; empty otherwise.
std::vector<int64_t> zero_spatial_pads(const Graph& g, const Node& n) {
  if (n.inputs.empty() || n.inputs[0] < 0 || n.outputs.size() != 1 || n.outputs[0] < 0) return {};
  const Tensor& x = g.tensors[n.inputs[0]];
  if (!is_f32(x) || x.shape.size() < 3) return {};
  if (n.get_string("mode", "constant") != "constant") return {};
  std::vector<int64_t> pads;
  if (n.has("pads")) {  // opset < 11
    if (n.get_float("value", 0.0f) != 0.0f) return {};
    pads = n.get_ints("pads");
  } else {
    if (n.inputs.size() < 2 || n.inputs.size() > 3 || n.inputs[1] < 0) return {};  // opset 18's axes: left alone
    const Tensor& p = g.tensors[n.inputs[1]];
    if (!p.is_constant || !p.has_data) return {};
    pads = p.value.as_int64();
    if (n.inputs.size() == 3 && n.inputs[2] >= 0) {
      const Tensor& v = g.tensors[n.inputs[2]];
      if (!v.is_constant || !v.has_data || !is_f32(v) || v.value.as_float().size() != 1 ||
          v.value.as_float()[0] != 0.0f)
        return {};
    }
  }
  const size_t rank = x.shape.size();
  if (pads.size() != 2 * rank) return {};
  for (int64_t p : pads)
    if (p < 0) return {};
  if (pads[0] || pads[1] || pads[rank] || pads[rank + 1]) return {};
  return pads;
}

}  // namespace

int pads_into_windows(Graph& g) {
  const std::vector<std::vector<int>> cons = g.consumers();
  int folded = 0;
  for (Node& pad : g.nodes) {
    if (pad.op_type != "Pad") continue;
    const std::vector<int64_t> pads = zero_spatial_pads(g, pad);
    if (pads.empty()) continue;
    const int y = pad.outputs[0];
    if (g.tensors[y].is_output || cons[y].size() != 1) continue;
    Node& c = g.nodes[cons[y][0]];
    if (c.inputs.empty() || c.inputs[0] != y || c.get_string("auto_pad", "NOTSET") != "NOTSET") continue;
    if (std::count(c.inputs.begin(), c.inputs.end(), y) != 1) continue;
    const size_t rank = g.tensors[y].shape.size(), k = rank - 2;
    std::vector<int64_t> own = c.get_ints("pads", std::vector<int64_t>(2 * k, 0));
    if (own.size() != 2 * k) continue;
    if (c.op_type == "AveragePool") {
      // count_include_pad counts the pool's own padding as zeros, as the
      // Pad's were counted; without it, only where the pool has none. A
      // ceil_mode window may start in the end padding: left alone.
      if (c.get_int("ceil_mode", 0) != 0) continue;
      if (c.get_int("count_include_pad", 0) == 0 && !all_equal(own, 0)) continue;
      c.attrs["count_include_pad"] = Attribute::of_int(1);
    } else if (c.op_type != "Conv") {
      continue;
    }
    for (size_t i = 0; i < k; ++i) own[i] += pads[2 + i], own[k + i] += pads[rank + 2 + i];
    c.attrs["pads"] = Attribute::of_ints(own);
    c.inputs[0] = pad.inputs[0];
    ++folded;
  }
  if (folded) g.remove_dead_nodes();
  return folded;
}

}  // namespace texplan
