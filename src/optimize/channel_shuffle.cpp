// ShuffleNet's channel shuffle into the conv computing one of its halves
// (graph.h ShuffledOutput): Concat(a, b) -> Reshape [N, 2, C, H, W] ->
// Transpose(0, 2, 1, 3, 4) -> Reshape [N, 2C, H, W] runs a Transpose kernel
// per block; the FusedConv that writes a or b writes the shuffled tensor
// instead, every other channel, and copies the other half into the channels
// between as it stores its own: on GPUs, where ShuffleNet is launch-bound,
// a launch a block fewer (docs/fused-ops.md#shuffled-output).
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "optimize/optimize.h"
#include "optimize/passes.h"

namespace texplan {
namespace {

bool is_4d_float(const Tensor& t) { return t.dtype == DataType::Float32 && t.shape.size() == 4; }

// A FusedConv whose kernels can write the shuffled output: a plain 1x1 conv
// (the GEMM tiles, which store through a window's strides), writing `y` read
// by nothing but the Concat.
bool can_write_shuffled(const Graph& g, const Node& p, int y) {
  if (p.op_type != "FusedConv" || p.outputs.size() != 1 || p.outputs[0] != y || shuffled_output(p) ||
      channel_scaled(p) || p.inputs.size() < 2 || p.inputs[1] < 0)
    return false;
  const Shape& w = g.tensors[size_t(p.inputs[1])].shape;
  return w.size() == 4 && w[2] == 1 && w[3] == 1 && p.get_int("group", 1) == 1 &&
         all_equal(p.get_ints("strides", {1, 1}), 1) && all_equal(p.get_ints("pads", {0, 0, 0, 0}), 0) &&
         p.get_string("auto_pad", "NOTSET") == "NOTSET";
}

// One way to write a channel shuffle: the FusedConv computing half `slot`
// writes it and reads the other half.
struct Writer {
  int conv = -1;   // node id
  int slot = 1;    // its half's place in the Concat
  int other = -1;  // the other half (tensor id)
};

struct Shuffle {
  std::string concat;                       // the Concat's name (ids move with each rewrite)
  int first = -1, transpose = -1, last = -1;  // the Reshape, Transpose, Reshape after it
  int shuffled = -1;                        // the last Reshape's output
  std::vector<Writer> writers;              // either half's conv, where it can
};

// Concat node k as the first node of a channel shuffle of two halves.
bool match(const Graph& g, const std::vector<std::vector<int>>& readers, int k, Shuffle& s) {
  const Node& cat = g.nodes[size_t(k)];
  if (cat.op_type != "Concat" || cat.inputs.size() != 2 || cat.outputs.size() != 1) return false;
  const int a = cat.inputs[0], b = cat.inputs[1];
  if (a < 0 || b < 0 || a == b) return false;
  const Tensor &ta = g.tensors[size_t(a)], &tb = g.tensors[size_t(b)];
  if (!is_4d_float(ta) || ta.shape != tb.shape || tb.dtype != ta.dtype) return false;
  const int64_t axis = cat.get_int("axis", 0);
  if (axis != 1 && axis != -3) return false;
  const int64_t N = ta.shape[0], C = ta.shape[1], H = ta.shape[2], W = ta.shape[3];
  s.concat = cat.name;
  s.first = only_reader(g, readers, cat.outputs[0]);
  if (s.first < 0 || g.nodes[size_t(s.first)].op_type != "Reshape") return false;
  const int grouped = g.nodes[size_t(s.first)].outputs[0];
  if (g.tensors[size_t(grouped)].shape != Shape{N, 2, C, H, W}) return false;
  s.transpose = only_reader(g, readers, grouped);
  if (s.transpose < 0 || g.nodes[size_t(s.transpose)].op_type != "Transpose" ||
      transpose_perm(g.nodes[size_t(s.transpose)], 5) != std::vector<int64_t>{0, 2, 1, 3, 4})
    return false;
  s.last = only_reader(g, readers, g.nodes[size_t(s.transpose)].outputs[0]);
  if (s.last < 0 || g.nodes[size_t(s.last)].op_type != "Reshape") return false;
  s.shuffled = g.nodes[size_t(s.last)].outputs[0];
  const Tensor& y = g.tensors[size_t(s.shuffled)];
  if (y.shape != Shape{N, 2 * C, H, W} || y.dtype != ta.dtype || y.window) return false;
  for (int slot : {0, 1}) {
    const int t = cat.inputs[size_t(slot)], p = g.tensors[size_t(t)].producer;
    if (p >= 0 && only_reader(g, readers, t) == k && can_write_shuffled(g, g.nodes[size_t(p)], t))
      s.writers.push_back({p, slot, cat.inputs[size_t(1 - slot)]});
  }
  return !s.writers.empty();
}

// The graph with shuffle s written by w: the conv reads the other half (it
// may now run later, after it), and the Concat, Reshapes and Transpose go.
void rewrite(Graph& g, const Shuffle& s, const Writer& w) {
  Node& p = g.nodes[size_t(w.conv)];
  // The other half goes last among the epilogue's inputs (input 3 on), the
  // bias slot kept (-1) where the conv has none.
  size_t end = operand_inputs_end(p);
  while (end < 3) p.inputs.insert(p.inputs.begin() + std::ptrdiff_t(end++), -1);
  p.inputs.insert(p.inputs.begin() + std::ptrdiff_t(end), w.other);
  p.outputs[0] = s.shuffled;
  p.decisions.shuffled_output = ShuffledOutput{w.slot};
  std::vector<char> erased(g.nodes.size(), 0);
  for (int k : {s.first, s.transpose, s.last}) erased[size_t(k)] = 1;
  for (size_t k = 0; k < g.nodes.size(); ++k) erased[k] = erased[k] || g.nodes[k].name == s.concat;
  g.erase_nodes(erased);
}

// The next shuffle not yet tried, or none.
std::optional<Shuffle> next_shuffle(const Graph& g, const std::vector<std::string>& tried) {
  const auto readers = g.consumers();
  for (int k = 0; k < int(g.nodes.size()); ++k) {
    if (g.nodes[size_t(k)].op_type != "Concat" ||
        std::find(tried.begin(), tried.end(), g.nodes[size_t(k)].name) != tried.end())
      continue;
    Shuffle s;
    if (match(g, readers, k, s)) return s;
  }
  return std::nullopt;
}

}  // namespace

int channel_shuffles_into_convs(Graph& g) {
  // One at a time, each by the writer that gives the lower bound, kept only
  // where the bound does not rise: the shuffled output lives from its
  // conv on, beside the half it copies (ShuffleNet's first block: both
  // halves from 24 channels at 56x56, which a stride-2 block keeps alive).
  std::vector<std::string> tried;
  int64_t bound = -1;
  int made = 0;
  while (const std::optional<Shuffle> s = next_shuffle(g, tried)) {
    tried.push_back(s->concat);
    if (bound < 0) bound = graph_lower_bound(g);
    const Writer* best = nullptr;
    int64_t best_bound = bound;
    for (const Writer& w : s->writers) {
      Graph trial = without_values(g);  // the bound needs no weights
      rewrite(trial, *s, w);
      const int64_t b = graph_lower_bound(trial);
      if (b <= best_bound) best = &w, best_bound = b;
    }
    if (!best) continue;
    rewrite(g, *s, *best);
    bound = best_bound;
    ++made;
  }
  return made;
}

}  // namespace texplan
