// Views: nodes whose output is bytes their input already holds run no
// kernel and own no storage. Nodes that keep every element where it was
// become Reshapes: Transposes that move only size-1 dims (BERT's attention
// as torch exports it has two per layer, [1, S, D] <-> [S, 1, D]) and pools
// of 1x1 windows, stride 1, no padding (VGG's adaptive average pool of its
// 7x7 maps to 7x7). Slices of one contiguous run of their input are marked
// with its byte offset, for storage_sharing() to place. A product's operand
// that Slices, Gathers of one constant index (torch's unbind of q, k and v),
// Transposes and Reshapes make from another tensor is read through strides
// (OperandView), those nodes dropped where nothing else reads them.
#include <algorithm>
#include <string>
#include <vector>

#include "optimize/optimize.h"
#include "optimize/passes.h"

namespace texplan {

namespace {

// Whether node n moves no element: output i is input i.
bool keeps_elements(const Graph& g, const Node& n) {
  const Shape& in = g.tensors[n.inputs[0]].shape;
  const Shape& out = g.tensors[n.outputs[0]].shape;
  if (out.size() != in.size()) return false;
  const int64_t rank = int64_t(in.size());
  if (n.op_type == "Transpose") {
    const std::vector<int64_t> perm = transpose_perm(n, in.size());
    if (int64_t(perm.size()) != rank) return false;
    int64_t last = -1;
    for (int64_t p : perm) {
      if (p < 0 || p >= rank) return false;
      if (in[size_t(p)] == 1) continue;
      if (p < last) return false;
      last = p;
    }
    return true;
  }
  if (n.op_type == "AveragePool" || n.op_type == "MaxPool") {
    return in == out && rank >= 3 && n.get_string("auto_pad", "NOTSET") == "NOTSET" &&
           all_equal(n.get_ints("kernel_shape", {0}), 1) && all_equal(n.get_ints("strides", {1}), 1) &&
           all_equal(n.get_ints("pads", {0}), 0) && all_equal(n.get_ints("dilations", {1}), 1);
  }
  return false;
}

// Values of constant integer input i of n; false when absent or not constant.
bool constant_ints(const Graph& g, const Node& n, size_t i, std::vector<int64_t>& v) {
  if (i >= n.inputs.size() || n.inputs[i] < 0) return false;
  const Tensor& t = g.tensors[n.inputs[i]];
  if (!t.is_constant || !t.has_data) return false;
  v = t.value.as_int64();
  return true;
}

// The byte offset of a Slice's output in its input when the output is one
// contiguous run of the input's bytes (one axis cut, step 1, only 1s before
// it); -1 otherwise.
int64_t contiguous_slice_offset(const Graph& g, const Node& n) {
  if (n.inputs.size() < 3 || n.outputs.size() != 1 || n.inputs[0] < 0 || n.outputs[0] < 0) return -1;
  const Tensor& x = g.tensors[n.inputs[0]];
  const Tensor& y = g.tensors[n.outputs[0]];
  const int64_t rank = int64_t(x.shape.size());
  if (x.dtype != y.dtype || int64_t(y.shape.size()) != rank) return -1;
  std::vector<int64_t> starts, ends, axes, steps;
  if (!constant_ints(g, n, 1, starts) || !constant_ints(g, n, 2, ends)) return -1;
  if (!constant_ints(g, n, 3, axes))
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(int64_t(i));
  if (!constant_ints(g, n, 4, steps)) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size()) return -1;
  int64_t cut = -1;
  for (int64_t d = 0; d < rank; ++d)
    if (y.shape[size_t(d)] != x.shape[size_t(d)]) {
      if (cut >= 0) return -1;
      cut = d;
    }
  if (cut < 0) return -1;  // the whole input: not a Slice worth a view here
  for (int64_t d = 0; d < cut; ++d)
    if (x.shape[size_t(d)] != 1) return -1;
  int64_t start = -1;
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (steps[i] != 1) return -1;
    if (a != cut) continue;
    const int64_t dim = x.shape[size_t(a)];
    start = std::clamp(starts[i] < 0 ? starts[i] + dim : starts[i], int64_t(0), dim);
    const int64_t end = std::clamp(ends[i] < 0 ? ends[i] + dim : ends[i], int64_t(0), dim);
    if (end - start != y.shape[size_t(cut)]) return -1;  // the output's shape must be this range's
  }
  if (start < 0 || start + y.shape[size_t(cut)] > x.shape[size_t(cut)]) return -1;
  int64_t inner = int64_t(element_size(x.dtype));
  for (int64_t d = cut + 1; d < rank; ++d) inner *= x.shape[size_t(d)];
  return start * inner;
}

// Reads n's view-op parameters: the operand view `v` of its input becomes
// that of its output; false where strides cannot express it.
bool reshape_view(OperandView& v, const Shape& out) {
  std::vector<std::pair<int64_t, int64_t>> in;  // the input's (size, stride), 1s dropped
  for (size_t d = 0; d < v.shape.size(); ++d)
    if (v.shape[d] != 1) in.push_back({v.shape[d], v.strides[d]});
  std::vector<int64_t> strides(out.size(), 0);
  size_t i = 0;
  for (size_t o = 0; o < out.size();) {
    if (out[o] == 1) {
      ++o;
      continue;
    }
    if (i >= in.size()) return false;
    // Output dims [o, o2) and input dims [i, i2) of equal products.
    int64_t po = out[o], pi = in[i].first;
    size_t o2 = o + 1, i2 = i + 1;
    while (po != pi) {
      if (po < pi) {
        if (o2 >= out.size()) return false;
        po *= out[o2++];
      } else {
        if (i2 >= in.size()) return false;
        pi *= in[i2++].first;
      }
    }
    for (size_t j = i; j + 1 < i2; ++j)  // the input dims must be one run
      if (in[j].second != in[j + 1].second * in[j + 1].first) return false;
    int64_t stride = in[i2 - 1].second;
    for (size_t k = o2; k-- > o;) {
      strides[k] = out[k] == 1 ? 0 : stride;
      stride *= out[k];
    }
    o = o2;
    i = i2;
  }
  if (i != in.size()) return false;
  v.shape = out;
  v.strides = strides;
  return true;
}

bool apply_view(const Graph& g, const Node& n, OperandView& v) {
  const Shape& out = g.tensors[n.outputs[0]].shape;
  const int64_t rank = int64_t(v.shape.size());
  if (n.op_type == "Transpose") {
    const std::vector<int64_t> perm = transpose_perm(n, v.shape.size());
    if (int64_t(perm.size()) != rank) return false;
    OperandView t = v;
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t p = perm[size_t(d)];
      if (p < 0 || p >= rank) return false;
      t.shape[size_t(d)] = v.shape[size_t(p)], t.strides[size_t(d)] = v.strides[size_t(p)];
    }
    v = t;
  } else if (n.op_type == "Slice") {
    std::vector<int64_t> starts, ends, axes, steps;
    if (!constant_ints(g, n, 1, starts) || !constant_ints(g, n, 2, ends)) return false;
    if (!constant_ints(g, n, 3, axes))
      for (size_t i = 0; i < starts.size(); ++i) axes.push_back(int64_t(i));
    if (!constant_ints(g, n, 4, steps)) steps.assign(starts.size(), 1);
    if (axes.size() != starts.size() || steps.size() != starts.size() || int64_t(out.size()) != rank) return false;
    for (size_t i = 0; i < axes.size(); ++i) {
      const int64_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
      if (a < 0 || a >= rank || steps[i] <= 0) return false;
      const int64_t dim = v.shape[size_t(a)];
      const int64_t start = std::clamp(starts[i] < 0 ? starts[i] + dim : starts[i], int64_t(0), dim);
      v.offset += start * v.strides[size_t(a)];
      v.strides[size_t(a)] *= steps[i];
      v.shape[size_t(a)] = out[size_t(a)];
    }
  } else if (n.op_type == "Gather") {  // one constant index: a Slice of one, its axis dropped when scalar
    std::vector<int64_t> index;
    if (!constant_ints(g, n, 1, index) || index.size() != 1) return false;
    const int64_t axis = n.get_int("axis", 0), a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank) return false;
    const int64_t dim = v.shape[size_t(a)], i = index[0] < 0 ? index[0] + dim : index[0];
    if (i < 0 || i >= dim) return false;
    v.offset += i * v.strides[size_t(a)];
    if (g.tensors[n.inputs[1]].shape.empty()) {
      v.shape.erase(v.shape.begin() + a);
      v.strides.erase(v.strides.begin() + a);
    } else {
      v.shape[size_t(a)] = 1;
    }
  } else if (!reshape_view(v, out)) {  // Reshape, Squeeze, Unsqueeze, Flatten: the output's shape
    return false;
  }
  return v.shape == out;
}

bool view_op(const Graph& g, const Node& n) {
  static const char* ops[] = {"Transpose", "Slice", "Gather", "Reshape", "Squeeze", "Unsqueeze", "Flatten"};
  return std::find(std::begin(ops), std::end(ops), n.op_type) != std::end(ops) && !n.inputs.empty() &&
         n.inputs[0] >= 0 && n.outputs.size() == 1 && n.outputs[0] >= 0 &&
         g.tensors[n.inputs[0]].dtype == g.tensors[n.outputs[0]].dtype;
}

}  // namespace

// The byte offset of a Gather's output in its input when it picks one
// constant index along an axis with only 1s before it (BERT's [CLS] row of a
// batch-1 sequence): one contiguous run of the input's bytes; -1 otherwise.
int64_t contiguous_gather_offset(const Graph& g, const Node& n) {
  if (n.inputs.size() != 2 || n.outputs.size() != 1 || n.inputs[0] < 0 || n.outputs[0] < 0) return -1;
  const Tensor& x = g.tensors[n.inputs[0]];
  const Tensor& y = g.tensors[n.outputs[0]];
  std::vector<int64_t> index;
  if (x.dtype != y.dtype || !constant_ints(g, n, 1, index) || index.size() != 1) return -1;
  const int64_t rank = int64_t(x.shape.size()), axis = n.get_int("axis", 0), a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) return -1;
  for (int64_t d = 0; d < a; ++d)
    if (x.shape[size_t(d)] != 1) return -1;
  const int64_t dim = x.shape[size_t(a)], i = index[0] < 0 ? index[0] + dim : index[0];
  if (i < 0 || i >= dim || dim == 1) return -1;  // out of range: the kernel's error; one row: the whole input
  int64_t inner = int64_t(element_size(x.dtype));
  for (int64_t d = a + 1; d < rank; ++d) inner *= x.shape[size_t(d)];
  if (y.bytes() != inner) return -1;
  return i * inner;
}

int strided_product_operands(Graph& g, const OperandViewKeep& keep) {
  std::vector<int> producer(g.tensors.size(), -1);
  for (int k = 0; k < int(g.nodes.size()); ++k)
    for (int t : g.nodes[size_t(k)].outputs)
      if (t >= 0) producer[size_t(t)] = k;
  int made = 0;
  for (Node& n : g.nodes) {
    // FusedAttention reads Q, K (or K^T) and V through strides as products do.
    const bool attention = n.op_type == "FusedAttention";
    if ((n.op_type != "MatMul" && n.op_type != "FusedMatMul" && !attention) || n.get_int("transB", 0) != 0) continue;
    const int slots = attention ? 3 : 2;
    for (int slot = 0; slot < slots && slot < int(n.inputs.size()); ++slot) {
      const int t = n.inputs[size_t(slot)];
      if (t < 0 || operand_view(n, slot) || g.tensors[t].dtype != DataType::Float32 || g.tensors[t].shape.size() < 2)
        continue;
      std::vector<int> chain;  // producers from t back towards the source
      for (int cur = t; producer[size_t(cur)] >= 0 && view_op(g, g.nodes[size_t(producer[size_t(cur)])]);
           cur = g.nodes[size_t(producer[size_t(cur)])].inputs[0])
        chain.push_back(producer[size_t(cur)]);
      // The longest chain (nearest the product) strides express, if it moves data.
      for (; !chain.empty(); chain.pop_back()) {
        bool moves = false;
        for (int k : chain) {
          const std::string& op = g.nodes[size_t(k)].op_type;
          moves = moves || op == "Transpose" || op == "Slice" || op == "Gather";
        }
        if (!moves) break;
        const int src = g.nodes[size_t(chain.back())].inputs[0];
        if (g.tensors[src].is_constant) continue;
        OperandView v{0, g.tensors[src].shape, {}};
        v.strides.assign(v.shape.size(), 1);
        for (size_t d = v.shape.size(); d-- > 1;) v.strides[d - 1] = v.strides[d] * v.shape[d];
        bool ok = true;
        for (auto it = chain.rbegin(); ok && it != chain.rend(); ++it) ok = apply_view(g, g.nodes[size_t(*it)], v);
        if (!ok) continue;
        set_operand_view(n, slot, v);
        n.inputs[size_t(slot)] = src;
        if (!keep(g, n, slot)) {
          clear_operand_view(n, slot);
          n.inputs[size_t(slot)] = t;
          continue;
        }
        ++made;
        break;
      }
    }
  }
  return made;
}

int elements_in_place_to_views(Graph& g) {
  int made = 0;
  for (Node& n : g.nodes) {
    if (n.inputs.size() != 1 || n.outputs.size() != 1 || n.inputs[0] < 0 || n.outputs[0] < 0 ||
        !keeps_elements(g, n))
      continue;
    const Shape out = g.tensors[n.outputs[0]].shape;
    const int id = add_int64_constant(g, n.name + "/view_shape", out);
    n.op_type = "Reshape";
    n.attrs.clear();
    n.decisions = {};
    n.inputs.push_back(id);
    ++made;
  }
  return made;
}

int slices_into_concats_to_views(Graph& g) {
  const auto consumers = g.consumers();
  int64_t best = graph_lower_bound(g);
  int made = 0;
  for (Node& n : g.nodes) {
    if (n.op_type != "Slice" || n.decisions.view_offset >= 0) continue;
    const int64_t offset = contiguous_slice_offset(g, n);
    if (offset < 0) continue;
    const int x = n.inputs[0], y = n.outputs[0];
    if (g.tensors[x].is_constant || g.tensors[y].is_output) continue;
    bool into_elided = false;
    for (int c : consumers[size_t(y)]) {
      const Node& m = g.nodes[size_t(c)];
      into_elided = into_elided || (m.op_type == "Concat" && m.decisions.elided);
    }
    if (!into_elided) continue;
    n.decisions.view_offset = offset;
    bool kept = false;
    try {
      const int64_t bytes = graph_lower_bound(g);  // storage_sharing throws where an elided Concat no longer lays out
      kept = bytes <= best;
      if (kept) best = bytes;
    } catch (const Error&) {
    }
    if (kept) ++made;
    else n.decisions.view_offset = -1;
  }
  return made;
}

int slices_to_views(Graph& g) {
  const auto consumers = g.consumers();
  int marked = 0;
  for (Node& n : g.nodes) {
    n.decisions.view_offset = -1;
    if (n.op_type != "Slice" && n.op_type != "Gather") continue;
    const int64_t offset = n.op_type == "Slice" ? contiguous_slice_offset(g, n) : contiguous_gather_offset(g, n);
    if (offset < 0) continue;
    const int x = n.inputs[0], y = n.outputs[0];
    if (g.tensors[x].is_constant || g.tensors[y].is_output) continue;
    // A Slice feeding a Concat is better a kernel writing into the elided
    // Concat's output (ShuffleNet's passed-through half) than a view that
    // keeps the Concat from being elided.
    bool into_concat = false;
    for (int c : consumers[size_t(y)]) into_concat = into_concat || g.nodes[size_t(c)].op_type == "Concat";
    if (into_concat) continue;
    n.decisions.view_offset = offset;
    ++marked;
  }
  return marked;
}

}  // namespace texplan
