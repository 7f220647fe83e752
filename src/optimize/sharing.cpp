#include "optimize/sharing.h"

#include <algorithm>
#include <set>

#include "optimize/usage.h"

namespace texplan {
namespace {

bool is_alias_op(const std::string& op) {
  return op == "Identity" || op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze";
}

const std::set<std::string>& elementwise_in_place_ops() {
  static const std::set<std::string> ops = {
      "Relu", "Sigmoid", "Tanh", "Exp",       "Log",         "Sqrt",      "Abs", "Neg", "Erf",  "Reciprocal",
      "Floor", "Ceil", "Round",   "Softplus", "Sign",  "HardSwish",   "HardSigmoid", "LeakyRelu", "Elu", "Gelu", "Clip",
      "Add",  "Sub",     "Mul",  "Div",       "Pow",         "Max",       "Min", "FusedElementwise"};
  return ops;
}

// Inputs before this index are read at other elements than the one written
// (the core operands of a fused node); from it on, at the written element.
size_t first_same_index_input(const Node& n) {
  if (n.op_type == "FusedConv") return 3;
  if (n.op_type == "FusedMatMul") return 2;
  if (n.op_type == "Clip") return 0;  // min/max are scalars: never the same shape as Y
  return 0;
}

// Parent links: tensor t lives at offset[t] bytes inside parent[t] (-1: own storage).
struct Forest {
  std::vector<int> parent;
  std::vector<int64_t> offset;
  explicit Forest(size_t n) : parent(n, -1), offset(n, 0) {}
  // (root, byte offset in root); compresses paths (a link, once set, never changes).
  std::pair<int, int64_t> resolve(int t) {
    int64_t off = 0;
    int r = t;
    while (parent[r] >= 0) {
      off += offset[r];
      r = parent[r];
    }
    int64_t rest = off;
    for (int x = t; parent[x] >= 0;) {
      const int next = parent[x];
      const int64_t step = offset[x];
      if (next != r) {
        parent[x] = r;
        offset[x] = rest;
      }
      rest -= step;
      x = next;
    }
    return {r, off};
  }
};

// A Slice or Gather the optimizer marked as a view (optimize/views.cpp): its
// output's byte offset in its input, else -1.
int64_t view_offset(const Node& n) {
  return n.op_type == "Slice" || n.op_type == "Gather" ? n.decisions.view_offset : -1;
}

void place_windows(const Graph& g, Forest& f) {
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    const Tensor& x = g.tensors[t];
    if (!x.window) continue;
    const int base = x.window->base;
    if (base < 0 || size_t(base) >= g.tensors.size() || base == int(t) || x.shape.size() != 4 ||
        g.tensors[base].shape.size() != 4 || g.tensors[base].dtype != x.dtype || g.tensors[base].is_constant)
      throw Error(g.model_name + ": tensor " + x.name + " is a window of a tensor it cannot lie in");
    const Shape& b = g.tensors[base].shape;
    const TensorWindow& w = *x.window;
    if (w.c0 < 0 || w.y0 < 0 || w.x0 < 0 || x.shape[0] != b[0] || w.c0 + x.shape[1] > b[1] ||
        w.y0 + x.shape[2] > b[2] || w.x0 + x.shape[3] > b[3])
      throw Error(g.model_name + ": tensor " + x.name + " reaches outside its window's base " + g.tensors[base].name);
    f.parent[t] = base;
    f.offset[t] = window_offset(g, int(t)) * int64_t(element_size(x.dtype));
  }
}

void place_aliases(const Graph& g, Forest& f) {
  for (const auto& n : g.nodes) {  // execution order: a root is resolved before its aliases
    const int64_t view = view_offset(n);
    if ((!is_alias_op(n.op_type) && view < 0) || n.inputs.empty() || n.outputs.empty()) continue;
    const int in = n.inputs[0], out = n.outputs[0];
    if (in < 0 || out < 0 || in == out || g.tensors[in].is_constant) continue;
    if (g.tensors[in].dtype != g.tensors[out].dtype || g.tensors[in].window) continue;
    // A target shape computed at run time is checked against the plan when
    // the node runs (lower/shape.cpp), so such a node is not elided.
    if (view < 0 && n.op_type != "Identity" && n.inputs.size() > 1 && n.inputs[1] >= 0 &&
        !g.tensors[n.inputs[1]].is_constant)
      continue;
    if (view < 0 ? g.tensors[in].bytes() != g.tensors[out].bytes()
                 : view + g.tensors[out].bytes() > g.tensors[in].bytes())
      continue;
    if (f.parent[out] >= 0) continue;
    f.parent[out] = in;
    f.offset[out] = std::max<int64_t>(view, 0);
  }
}

// Concats in the order they claim storage: largest output first, so an
// earlier (prefix) concat finds its inputs already laid out in a later one.
std::vector<int> concat_order(const Graph& g) {
  std::vector<int> order;
  for (int k = 0; k < int(g.nodes.size()); ++k)
    if (g.nodes[k].op_type == "Concat" && !g.nodes[k].outputs.empty() && g.nodes[k].outputs[0] >= 0) order.push_back(k);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return g.tensors[g.nodes[a].outputs[0]].bytes() > g.tensors[g.nodes[b].outputs[0]].bytes();
  });
  return order;
}

bool slice_candidate(const Tensor& t) { return !t.is_constant && !t.is_input && !t.is_output && t.producer >= 0; }

// Whether storage root r (a tensor whose Slice view is input of Concat n)
// can move into n's output at byte offset `at`, the view then at its place
// there (ShuffleNet: the channel shuffle's output, whose first half the next
// block passes through). r must lie inside the output, be written before
// every other input it overlaps there, and every part of it those inputs
// overlap must have been read for the last time before they are written.
// `local`: the inputs' offsets in the output.
bool adoptable(const Graph& g, Forest& f, const Node& n, int r, int64_t at, const std::vector<int64_t>& local) {
  const Tensor& tr = g.tensors[r];
  const Tensor& y = g.tensors[n.outputs[0]];
  if (f.parent[r] >= 0 || !slice_candidate(tr) || tr.window || tr.dtype != y.dtype || at < 0 ||
      at + tr.bytes() > y.bytes())
    return false;
  // The parts of r's storage (r and the views in it): byte range in the
  // output, and the last node reading each.
  struct Part {
    int64_t begin, end;
    int last_read;
  };
  std::vector<Part> parts;
  // Steps in the graph's order; an alias or view node reads no bytes.
  std::vector<int> last_read(g.tensors.size(), -1), written(g.tensors.size(), -1);
  for (int k = 0; k < int(g.nodes.size()); ++k) {
    const Node& m = g.nodes[k];
    for (int t : m.outputs)
      if (t >= 0) written[t] = k;
    if (is_alias_op(m.op_type) || view_offset(m) >= 0) continue;
    for (int t : m.inputs)
      if (t >= 0) last_read[t] = k;
  }
  for (int t = 0; t < int(g.tensors.size()); ++t) {
    const auto [rt, ot] = f.resolve(t);
    if (rt == r) parts.push_back({at + ot, at + ot + g.tensors[t].bytes(), last_read[t]});
  }
  for (size_t j = 0; j < n.inputs.size(); ++j) {
    const int t = n.inputs[j];
    const int64_t begin = local[j], end = local[j] + g.tensors[t].bytes();
    if (end <= at || begin >= at + tr.bytes()) continue;
    const auto [rt, ot] = f.resolve(t);
    if (rt == r) {
      if (at + ot != begin) return false;  // another view of r, elsewhere than its place
      continue;
    }
    const int writer = written[t];
    if (writer <= written[r] || f.parent[t] >= 0) return false;
    for (const Part& p : parts)
      if (p.begin < end && begin < p.end && p.last_read >= writer) return false;
  }
  return true;
}

// Lays out the inputs of Concat node `k` as views of its output; false (and
// nothing changed) when the layout does not allow it.
bool place_concat(const Graph& g, int k, Forest& f) {
  const Node& n = g.nodes[k];
  const int out = n.outputs[0];
  const Tensor& y = g.tensors[out];
  const int64_t rank = int64_t(y.shape.size());
  int64_t axis = n.get_int("axis", 0);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank || n.inputs.empty()) return false;
  // With every dim before the axis 1, the output is its inputs' bytes one after another.
  for (int64_t d = 0; d < axis; ++d)
    if (y.shape[d] != 1) return false;
  if (y.is_constant) return false;
  std::vector<int64_t> local;
  int64_t sum = 0;
  std::set<int> seen;
  for (int t : n.inputs) {
    if (t < 0 || !seen.insert(t).second) return false;
    const Tensor& x = g.tensors[t];
    if (x.dtype != y.dtype || x.is_constant) return false;
    local.push_back(sum);
    sum += x.bytes();
  }
  if (sum != y.bytes()) return false;

  // A window (a patch's part of a segment output): its inputs are windows
  // of the same base, each at its channels.
  if (y.window) {
    int64_t c = y.window->c0;
    for (int t : n.inputs) {
      const std::optional<TensorWindow>& w = g.tensors[t].window;
      if (!w || w->base != y.window->base || w->c0 != c || w->y0 != y.window->y0 || w->x0 != y.window->x0 ||
          g.tensors[t].shape.size() != 4 || y.shape.size() != 4 || axis != 1)
        return false;
      c += g.tensors[t].shape[1];
    }
    return true;
  }

  // Inputs already contiguous in one storage: the output is a view there.
  if (f.parent[out] < 0 && !y.is_output && std::all_of(n.inputs.begin(), n.inputs.end(), [&](int t) { return f.parent[t] >= 0; })) {
    const auto [r0, o0] = f.resolve(n.inputs[0]);
    bool contiguous = r0 != out;
    for (size_t i = 0; i < n.inputs.size() && contiguous; ++i) {
      const auto [r, o] = f.resolve(n.inputs[i]);
      contiguous = r == r0 && o == o0 + local[i];
    }
    if (contiguous && o0 + y.bytes() <= g.tensors[r0].bytes()) {
      f.parent[out] = r0;
      f.offset[out] = o0;
      return true;
    }
  }

  const auto [root, base] = f.resolve(out);
  std::vector<int> to_place;
  std::vector<std::pair<int, int64_t>> adopted;  // (storage root, its offset in out)
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const int t = n.inputs[i];
    if (f.parent[t] < 0 && t != root) {
      if (!slice_candidate(g.tensors[t])) return false;
      to_place.push_back(int(i));
      continue;
    }
    const auto [r, o] = f.resolve(t);
    if (r == root && o == base + local[i]) continue;
    // A view of another tensor's storage (a Slice): that whole storage
    // moves into the output, where the view then lies at its place.
    const int64_t at = local[i] - o;
    if (r == root || r == out || !adoptable(g, f, n, r, at, local)) return false;
    adopted.push_back({r, at});
  }
  for (int i : to_place) {
    f.parent[n.inputs[i]] = out;
    f.offset[n.inputs[i]] = local[i];
  }
  for (const auto& [r, at] : adopted) {
    f.parent[r] = out;
    f.offset[r] = at;
  }
  return true;
}

bool elided(const Node& n) { return n.op_type == "Concat" && n.decisions.elided; }

// Takes each in-place mark whose conditions hold in the graph's order.
void place_in_place(const Graph& g, Forest& f) {
  const size_t nt = g.tensors.size();
  // Per storage root: last step that touches any tensor in it, and whether
  // it holds a graph input or output (then it must not be overwritten).
  std::vector<int> last(nt, -1);
  std::vector<char> io(nt, 0);
  for (size_t t = 0; t < nt; ++t)
    if (g.tensors[t].is_input || g.tensors[t].is_output) io[f.resolve(int(t)).first] = 1;
  for (int k = 0; k < int(g.nodes.size()); ++k)
    for (const auto* list : {&g.nodes[k].inputs, &g.nodes[k].outputs})
      for (int t : *list)
        if (t >= 0) {
          int& l = last[f.resolve(t).first];
          l = std::max(l, k);
        }

  for (int k = 0; k < int(g.nodes.size()); ++k) {
    const Node& n = g.nodes[k];
    if (!n.decisions.in_place || !may_run_in_place(n) || n.outputs.size() != 1) continue;
    const int y = n.outputs[0];
    if (y < 0 || f.parent[y] >= 0 || io[y] || g.tensors[y].is_constant) continue;
    const Tensor& ty = g.tensors[y];
    const size_t first_same = first_same_index_input(n);
    for (size_t j = first_same; j < n.inputs.size(); ++j) {
      const int x = n.inputs[j];
      if (x < 0 || x == y) continue;
      const Tensor& tx = g.tensors[x];
      if (tx.is_constant || tx.shape != ty.shape || tx.dtype != ty.dtype || tx.window) continue;
      const auto [r, ox] = f.resolve(x);
      if (r == y || io[r] || g.tensors[r].is_constant || last[r] != k) continue;
      bool overlap = false;  // another input of n in the same storage, read elsewhere
      for (size_t i = 0; i < n.inputs.size() && !overlap; ++i) {
        const int t = n.inputs[i];
        if (i == j || t < 0 || g.tensors[t].is_constant) continue;
        const auto [ri, oi] = f.resolve(t);
        if (ri != r) continue;
        overlap = i < first_same || oi != ox || g.tensors[t].shape != tx.shape;
      }
      if (overlap) continue;
      f.parent[y] = x;
      f.offset[y] = 0;
      last[r] = std::max(last[r], last[y]);
      break;
    }
  }
}

}  // namespace

bool may_run_in_place(const Node& n) {
  // PatchWrite (optimize/patch.h) writes one tile of its first input's storage.
  // A shuffled output's element is not its inputs' at the same index.
  if (shuffled_output(n)) return false;
  return n.op_type == "FusedConv" || n.op_type == "PatchWrite" || n.op_type == "FusedMatMul" || elementwise_in_place_ops().count(n.op_type);
}

std::vector<int64_t> storage_strides(const Graph& g, int t) {
  while (g.tensors[t].window) t = g.tensors[t].window->base;
  std::vector<int64_t> st(g.tensors[t].shape.size());
  int64_t acc = 1;
  for (size_t k = st.size(); k-- > 0;) {
    st[k] = acc;
    acc *= g.tensors[t].shape[k];
  }
  return st;
}

int64_t window_offset(const Graph& g, int t) {
  const std::optional<TensorWindow>& w = g.tensors[t].window;
  if (!w) return 0;
  const std::vector<int64_t> s = storage_strides(g, w->base);
  return w->c0 * s[1] + w->y0 * s[2] + w->x0 * s[3];
}

int64_t storage_span_bytes(const Graph& g, int t) {
  const Tensor& x = g.tensors[t];
  if (!x.window || element_count(x.shape) == 0) return x.bytes();
  const std::vector<int64_t> s = storage_strides(g, t);
  int64_t last = 0;
  for (size_t k = 0; k < s.size(); ++k) last += (x.shape[k] - 1) * s[k];
  return (last + 1) * int64_t(element_size(x.dtype));
}

StorageSharing storage_sharing(const Graph& g) {
  Forest f(g.tensors.size());
  place_windows(g, f);
  place_aliases(g, f);
  for (int k : concat_order(g))
    if (elided(g.nodes[k]) && !place_concat(g, k, f))
      throw Error(g.model_name + ": node " + g.nodes[k].name +
                  " (Concat): marked elided, but its inputs cannot be laid out in its output");
  place_in_place(g, f);
  StorageSharing s;
  s.root.resize(g.tensors.size());
  s.offset.resize(g.tensors.size());
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    std::tie(s.root[t], s.offset[t]) = f.resolve(int(t));
    if (s.offset[t] + storage_span_bytes(g, int(t)) > g.tensors[s.root[t]].bytes())
      throw Error(g.model_name + ": tensor " + g.tensors[t].name + " does not fit in the storage of " +
                  g.tensors[s.root[t]].name);
  }
  return s;
}

std::vector<int> elidable_concats(const Graph& g, const std::vector<char>& candidates) {
  Forest f(g.tensors.size());
  place_windows(g, f);
  place_aliases(g, f);
  std::vector<int> chosen;
  for (int k : concat_order(g)) {
    const bool wanted = elided(g.nodes[k]) || candidates.empty() || (size_t(k) < candidates.size() && candidates[k]);
    if (wanted && place_concat(g, k, f)) chosen.push_back(k);
  }
  std::sort(chosen.begin(), chosen.end());
  return chosen;
}

bool writes_nothing(const Graph& g, const Node& n, const std::vector<int>& root, const std::vector<int64_t>& offset) {
  if (elided(n)) return true;
  // A PatchJoin whose inputs are windows of its output (their producers
  // wrote them there), a Slice whose output is a window of its input.
  auto window_of = [&](int t, int base) {
    return t >= 0 && g.tensors[t].window && g.tensors[t].window->base == base;
  };
  if (n.op_type == "PatchJoin" && n.outputs.size() == 1)
    return std::all_of(n.inputs.begin(), n.inputs.end(), [&](int t) { return window_of(t, n.outputs[0]); });
  if (n.op_type == "Slice" && !n.inputs.empty() && n.outputs.size() == 1 && window_of(n.outputs[0], n.inputs[0]))
    return true;
  const int64_t view = view_offset(n);
  if ((!is_alias_op(n.op_type) && view < 0) || n.inputs.empty() || n.inputs[0] < 0 || root.empty()) return false;
  if (view > 0 && offset.empty()) return false;
  for (int o : n.outputs) {
    if (o < 0) continue;
    const int i = n.inputs[0];
    if (root[o] != root[i] || (!offset.empty() && offset[o] != offset[i] + std::max<int64_t>(view, 0))) return false;
  }
  return true;
}

std::vector<int> alias_roots(const Graph& g) { return storage_sharing(g).root; }

}  // namespace texplan
