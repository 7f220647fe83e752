#include "optimize/patch.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "optimize/optimize.h"
#include "optimize/passes.h"
#include "optimize/usage.h"
#include "plan/memory_plan.h"

namespace texplan {

PatchOptions parse_patch(const std::string& s) {
  PatchOptions o;
  if (s == "off") return o;
  if (s == "auto") {
    o.mode = PatchOptions::Mode::Auto;
    return o;
  }
  int r = 0, c = 0;
  char x = 0, extra = 0;
  if (std::sscanf(s.c_str(), "%d%c%d%c", &r, &x, &c, &extra) == 3 && (x == 'x' || x == 'X') && r >= 1 && r <= 16 &&
      c >= 1 && c <= 16 && r * c > 1) {
    o.mode = PatchOptions::Mode::Grid;
    o.rows = r, o.cols = c;
    return o;
  }
  throw Error("patch setting '" + s + "': expected off, auto, or a grid RxC of 1..16 each (e.g. 4x4)");
}

std::string to_string(const PatchOptions& o) {
  switch (o.mode) {
    case PatchOptions::Mode::Off: return "off";
    case PatchOptions::Mode::Auto: return "auto";
    case PatchOptions::Mode::Grid: return std::to_string(o.rows) + "x" + std::to_string(o.cols);
  }
  return "off";
}

namespace {

bool activation(const Graph& g, int t) { return t >= 0 && !g.tensors[t].is_constant; }

int single_output(const Node& n) {
  int out = -1;
  for (size_t k = 0; k < n.outputs.size(); ++k)
    if (n.outputs[k] >= 0) {
      if (k != 0) return -1;
      out = n.outputs[k];
    }
  return out;
}

const std::set<std::string>& same_region_ops() {
  static const std::set<std::string> ops = {
      "Relu", "Sigmoid", "Tanh", "Exp",  "Log",       "Sqrt",        "Abs",       "Neg", "Erf",  "Reciprocal",
      "Floor", "Ceil", "Round",   "Softplus", "Sign", "HardSwish", "HardSigmoid", "LeakyRelu", "Elu", "Gelu", "Clip",
      "Add",  "Sub",     "Mul",  "Div",  "Pow",       "Max",         "Min",       "FusedElementwise", "Identity",
      "BatchNormalization"};
  return ops;
}

bool is_conv(const std::string& op) { return op == "Conv" || op == "FusedConv" || op == "FusedConvMaxPool"; }
bool is_pool(const std::string& op) { return op == "MaxPool" || op == "AveragePool"; }

// One spatial dim of a sliding window.
struct Window {
  int64_t k = 1, s = 1, d = 1, pad = 0;
};

// Begin padding of spatial dim `dim` (0: rows, 1: columns) as ONNX defines it.
int64_t begin_pad(const Node& n, const std::string& prefix, size_t dim, int64_t in, int64_t out, const Window& w) {
  return conv_axis_pad(n, dim, 2, in, out, w.k, w.s, w.d, prefix).begin;
}

// What output span [a, b) of a window reads of an input of `in` elements:
// the span clamped to the input, and the padding on each side.
struct Span {
  int64_t lo = 0, hi = 0, pad_lo = 0, pad_hi = 0;
};
Span window_span(int64_t a, int64_t b, int64_t in, const Window& w) {
  const int64_t lo = a * w.s - w.pad, hi = (b - 1) * w.s - w.pad + w.d * (w.k - 1) + 1;
  return {std::max<int64_t>(lo, 0), std::min(hi, in), std::max<int64_t>(0, -lo), std::max<int64_t>(0, hi - in)};
}

// The windows of a convolution or pool node: `inner` is the convolution (or
// the pool of a pool node), `outer` the pool of a FusedConvMaxPool over the
// convolution's output of `inner_out` rows and columns.
struct Windows {
  Window inner[2], outer[2];
  bool pooled = false;
  int64_t inner_out[2] = {0, 0};
};

Windows windows(const Graph& g, const Node& n) {
  Windows w;
  const Shape& x = g.tensors[n.inputs[0]].shape;
  const Shape& y = g.tensors[single_output(n)].shape;
  auto fill = [&](Window* dims, const std::string& prefix, const std::vector<int64_t>& kernel) {
    const std::vector<int64_t> s = n.get_ints(prefix + "strides", {1, 1}), d = n.get_ints(prefix + "dilations", {1, 1});
    for (size_t k = 0; k < 2; ++k) {
      dims[k].k = kernel[k];
      dims[k].s = s.size() == 2 ? s[k] : 1;
      dims[k].d = d.size() == 2 ? d[k] : 1;
    }
  };
  if (is_conv(n.op_type)) {
    const Shape& wt = g.tensors[n.inputs[1]].shape;
    fill(w.inner, "", {wt[2], wt[3]});
    for (size_t k = 0; k < 2; ++k) {
      const int64_t out = conv_out_extent(n, k, 2, x[2 + k], w.inner[k].k, w.inner[k].s, w.inner[k].d);
      w.inner_out[k] = n.op_type == "FusedConvMaxPool" ? out : y[2 + k];
      w.inner[k].pad = begin_pad(n, "", k, x[2 + k], w.inner_out[k], w.inner[k]);
    }
    if (n.op_type == "FusedConvMaxPool") {
      w.pooled = true;
      fill(w.outer, "pool_", n.get_ints("pool_kernel_shape"));
      for (size_t k = 0; k < 2; ++k) w.outer[k].pad = begin_pad(n, "pool_", k, w.inner_out[k], y[2 + k], w.outer[k]);
    }
  } else {
    fill(w.inner, "", n.get_ints("kernel_shape"));
    for (size_t k = 0; k < 2; ++k) {
      w.inner_out[k] = y[2 + k];
      w.inner[k].pad = begin_pad(n, "", k, x[2 + k], y[2 + k], w.inner[k]);
    }
  }
  return w;
}

// The region of input 0 that output region `r` of windowed node `n` reads,
// and (when `m` is given) the pads that make `m` compute exactly `r` from it.
Region window_input(const Graph& g, const Node& n, const Region& r, Node* m) {
  const Windows w = windows(g, n);
  const Shape& x = g.tensors[n.inputs[0]].shape;
  Span sy{r.y0, r.y1, 0, 0}, sx{r.x0, r.x1, 0, 0};
  if (w.pooled) {
    sy = window_span(r.y0, r.y1, w.inner_out[0], w.outer[0]);
    sx = window_span(r.x0, r.x1, w.inner_out[1], w.outer[1]);
    if (m) {
      m->attrs["pool_pads"] = Attribute::of_ints({sy.pad_lo, sx.pad_lo, sy.pad_hi, sx.pad_hi});
      m->attrs["pool_ceil_mode"] = Attribute::of_int(0);
      m->attrs.erase("pool_auto_pad");
    }
  }
  const Span iy = window_span(sy.lo, sy.hi, x[2], w.inner[0]), ix = window_span(sx.lo, sx.hi, x[3], w.inner[1]);
  if (m) {
    m->attrs["pads"] = Attribute::of_ints({iy.pad_lo, ix.pad_lo, iy.pad_hi, ix.pad_hi});
    m->attrs.erase("auto_pad");
    if (is_pool(n.op_type)) m->attrs["ceil_mode"] = Attribute::of_int(0);
  }
  return {iy.lo, iy.hi, ix.lo, ix.hi};
}

// The region input position `pos` of `n` must hold for output region `r`.
Region input_region(const Graph& g, const Node& n, size_t pos, const Region& r) {
  if (pos == 0 && (is_conv(n.op_type) || is_pool(n.op_type))) return window_input(g, n, r, nullptr);
  return r;
}

Region unite(const Region& a, const Region& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return {std::min(a.y0, b.y0), std::max(a.y1, b.y1), std::min(a.x0, b.x0), std::max(a.x1, b.x1)};
}

Region whole(const Tensor& t) { return {0, t.shape[2], 0, t.shape[3]}; }

}  // namespace

bool patchable(const Graph& g, const Node& n) {
  const int y = single_output(n);
  if (y < 0) return false;
  const Tensor& ty = g.tensors[y];
  if (ty.shape.size() != 4 || ty.dtype != DataType::Float32 || ty.is_constant) return false;
  bool any = false;
  for (size_t pos = 0; pos < n.inputs.size(); ++pos) {
    const int t = n.inputs[pos];
    if (!activation(g, t)) continue;
    any = true;
    const Shape& s = g.tensors[t].shape;
    if (s.size() != 4 || g.tensors[t].dtype != DataType::Float32 || s[0] != ty.shape[0]) return false;
    const bool windowed = pos == 0 && (is_conv(n.op_type) || is_pool(n.op_type));
    if (!windowed && (s[2] != ty.shape[2] || s[3] != ty.shape[3])) return false;
    if ((is_conv(n.op_type) || is_pool(n.op_type) || n.op_type == "BatchNormalization") && pos > 0 &&
        !(n.op_type == "FusedConv" && pos >= 3))
      return false;  // weights, bias, statistics: constants only
  }
  if (!any) return false;
  const std::string& op = n.op_type;
  if (is_conv(op)) {
    if (!activation(g, n.inputs[0]) || n.inputs.size() < 2 || n.inputs[1] < 0) return false;
    if (g.tensors[n.inputs[1]].shape.size() != 4 || channel_scaled(n) || channel_program(n) || shuffled_output(n))
      return false;
    if (op == "FusedConvMaxPool" && n.get_ints("pool_kernel_shape").size() != 2) return false;
    return true;
  }
  if (is_pool(op)) {
    if (!activation(g, n.inputs[0]) || n.get_ints("kernel_shape").size() != 2) return false;
    if (n.get_int("storage_order", 0) != 0) return false;
    // Pad counting with a ceil overhang: the overhang is not counted, the pads are.
    if (op == "AveragePool" && n.get_int("count_include_pad", 0) != 0 && n.get_int("ceil_mode", 0) != 0) return false;
    return true;
  }
  if (op == "Concat") {
    const int64_t axis = n.get_int("axis", 0);
    if (axis != 1 && axis != -3) return false;
    for (int t : n.inputs)
      if (!activation(g, t)) return false;
    return true;
  }
  return same_region_ops().count(op) != 0;
}

std::vector<Region> required_regions(const Graph& g, int begin, int end, const std::vector<std::pair<int, Region>>& wanted) {
  std::vector<Region> regs(g.tensors.size());
  for (const auto& [t, r] : wanted) regs[t] = unite(regs[t], r);
  for (int k = end; k-- > begin;) {
    const Node& n = g.nodes[k];
    const int y = single_output(n);
    bool needed = false;
    for (int t : n.outputs) needed = needed || (t >= 0 && !regs[t].empty());
    if (!needed) continue;
    if (!patchable(g, n))
      throw Error(g.model_name + ": node " + n.name + " (" + n.op_type + "): cannot be run by patches");
    for (size_t pos = 0; pos < n.inputs.size(); ++pos) {
      const int t = n.inputs[pos];
      if (!activation(g, t)) continue;
      regs[t] = unite(regs[t], input_region(g, n, pos, regs[y]));
    }
  }
  return regs;
}

bool writes_windows(const Graph& g, const Node& n) {
  const int y = single_output(n);
  if (y < 0 || g.tensors[y].shape.size() != 4 || g.tensors[y].dtype != DataType::Float32) return false;
  const std::string& op = n.op_type;
  if (is_conv(op)) return !channel_scaled(n) && !channel_program(n) && !shuffled_output(n);
  return is_pool(op) || op == "FusedElementwise" || op == "Concat";
}

bool reads_window(const Graph& g, const Node& n, size_t pos) {
  const int y = single_output(n);
  if (y < 0 || pos >= n.inputs.size() || !activation(g, n.inputs[pos])) return false;
  const Shape& x = g.tensors[n.inputs[pos]].shape;
  if (pos == 0 && (is_conv(n.op_type) || is_pool(n.op_type)))  // X, planes evenly apart (window_input)
    return x.size() == 4 && g.tensors[n.inputs[pos]].dtype == DataType::Float32 && x[0] == 1 && !channel_scaled(n) &&
           !channel_program(n) && !shuffled_output(n);
  if (n.op_type == "Concat") return x.size() == 4;  // a copy through strides
  if (x != g.tensors[y].shape) return false;
  if (n.op_type == "FusedConv") return pos >= 3 && !channel_scaled(n) && !channel_program(n) && !shuffled_output(n);
  return n.op_type == "FusedElementwise";
}

double graph_flops(const Graph& g) {
  static const std::set<std::string> copies = {"Slice",   "Concat",  "PatchWrite", "PatchJoin", "Reshape",         "Identity",
                                               "Flatten", "Squeeze", "Unsqueeze",  "Transpose",       "Split",
                                               "Gather",  "Pad",     "Expand",     "Tile",            "BufferToTexture",
                                               "TextureToBuffer"};
  double total = 0;
  for (const Node& n : g.nodes) {
    if (n.outputs.empty() || n.outputs[0] < 0 || copies.count(n.op_type)) continue;
    const Shape& y = g.tensors[n.outputs[0]].shape;
    const double ye = double(element_count(y));
    auto in_shape = [&](size_t i) -> const Shape* {
      return i < n.inputs.size() && n.inputs[i] >= 0 ? &g.tensors[n.inputs[i]].shape : nullptr;
    };
    const std::string& op = n.op_type;
    if (op == "Conv" || op == "FusedConv" || op == "ConvTranspose" || op == "FusedConvMaxPool") {
      const Shape* w = in_shape(1);
      double per = 1;
      if (w)
        for (size_t k = 1; k < w->size(); ++k) per *= double((*w)[k]);
      if (op == "ConvTranspose") {
        total += 2 * per * double(element_count(*in_shape(0)));
      } else if (op == "FusedConvMaxPool" && y.size() == 4 && w && w->size() == 4) {
        const Windows win = windows(g, n);
        const double conv_out = double(y[0] * y[1] * win.inner_out[0] * win.inner_out[1]);
        total += 2 * per * conv_out + ye * double(win.outer[0].k * win.outer[1].k);
      } else {
        total += 2 * per * ye;
      }
    } else if (op == "MatMul" || op == "Gemm" || op == "FusedMatMul") {
      const Shape* a = in_shape(0);
      int64_t k = a && !a->empty() ? a->back() : 1;
      if (op == "Gemm" && n.get_int("transA", 0) && a && a->size() == 2) k = (*a)[0];
      total += 2 * ye * double(k);
    } else if (is_pool(op)) {
      double window = 1;
      for (int64_t k : n.get_ints("kernel_shape")) window *= double(k);
      total += ye * window;
    } else if (op.rfind("Global", 0) == 0 || op.rfind("Reduce", 0) == 0) {
      const Shape* x = in_shape(0);
      total += x ? double(element_count(*x)) : ye;
    } else {
      total += ye;
    }
  }
  return total;
}

namespace {

// A segment, nodes [begin, end), and the tensors that leave it (read later or graph outputs).
struct Cut {
  int begin = 0, end = 0;
  std::vector<int> outputs;
};

constexpr int kLateStarts = 2;

std::vector<Cut> cuts(const Graph& g, size_t max_outputs) {
  std::vector<Cut> out;
  std::vector<int> last_read(g.tensors.size(), -1);
  for (int k = 0; k < int(g.nodes.size()); ++k)
    for (int t : g.nodes[k].inputs)
      if (t >= 0) last_read[t] = std::max(last_read[t], k);
  for (int t : g.outputs) last_read[t] = int(g.nodes.size());
  const int n = int(g.nodes.size());
  for (int begin = 0; begin < n;) {
    // Nodes of an earlier segment's patches stay as they are.
    int limit = begin;
    while (limit < n && patchable(g, g.nodes[limit]) && g.nodes[limit].name.find("@patch") == std::string::npos) ++limit;
    // Also a node or two into the run: a stem that shrinks the image
    // (ShuffleNet's conv and pool) may be better run whole, its input freed.
    for (int first = begin; first < std::min(limit, begin + kLateStarts + 1); ++first)
      for (int end = first + 1; end <= limit; ++end) {
        Cut c;
        c.begin = first, c.end = end;
        for (int k = first; k < end; ++k) {
          const int t = single_output(g.nodes[k]);
          if (t >= 0 && last_read[t] >= end) c.outputs.push_back(t);
        }
        if (c.outputs.empty() || c.outputs.size() > max_outputs) continue;
        out.push_back(std::move(c));
      }
    begin = limit + 1;
  }
  return out;
}

Region tile(const Shape& s, int rows, int cols, int i, int j) {
  return {s[2] * i / rows, s[2] * (i + 1) / rows, s[3] * j / cols, s[3] * (j + 1) / cols};
}

bool fits(const Graph& g, const Cut& c, int rows, int cols) {
  for (int t : c.outputs)
    if (g.tensors[t].shape[2] < rows || g.tensors[t].shape[3] < cols) return false;
  return true;
}

int add_activation(Graph& g, const Tensor& like, const std::string& name, const Region& r) {
  Tensor t;
  t.name = name;
  t.dtype = like.dtype;
  t.storage_exponent = like.storage_exponent;
  t.shape = {like.shape[0], like.shape[1], r.height(), r.width()};
  return g.add_tensor(std::move(t));
}

// What the rewrite of one segment copies: bytes per run, and which nodes.
struct Copies {
  int64_t bytes = 0;
  std::vector<std::string> what;
  void add(const std::string& w, int64_t b) {
    bytes += b;
    if (std::find(what.begin(), what.end(), w) == what.end()) what.push_back(w);
  }
};

// Rewrites `g` so that nodes [c.begin, c.end) run per patch of a rows x cols grid
// over each of c.outputs; returns what the crops and writes copy.
// `round` tells the names of a graph's segments apart.
Copies patch_in_place(Graph& g, const Cut& c, int rows, int cols, int round) {
  const size_t nt = g.tensors.size();
  std::vector<char> produced(nt, 0);
  for (int k = c.begin; k < c.end; ++k)
    for (int t : g.nodes[k].outputs)
      if (t >= 0) produced[t] = 1;
  std::vector<Node> nodes(g.nodes.begin(), g.nodes.begin() + c.begin);
  std::vector<int> full(c.outputs.size(), -1);  // each output's full tensor so far (PatchWrite)
  std::vector<std::vector<int>> tiles(c.outputs.size());  // each output's windows (PatchJoin)
  Copies moved;
  // The first reader of t inside the segment, but node `except`, whose
  // kernels read no window there (-1: none, then t's patch tensors may be
  // windows of a larger tensor).
  auto reader_without_windows = [&](int t, int except = -1) {
    for (int k = c.begin; k < c.end; ++k)
      for (size_t pos = 0; pos < g.nodes[k].inputs.size(); ++pos)
        if (k != except && g.nodes[k].inputs[pos] == t && !reads_window(g, g.nodes[k], pos)) return k;
    return -1;
  };
  auto read_as_windows = [&](int t, int except = -1) { return reader_without_windows(t, except) < 0; };
  auto readers = [&](int t) {
    int count = 0;
    for (int k = c.begin; k < c.end; ++k) count += int(std::count(g.nodes[k].inputs.begin(), g.nodes[k].inputs.end(), t));
    return count;
  };
  const int patches = rows * cols;
  for (int p = 0; p < patches; ++p) {
    const int i = p / cols, j = p % cols;
    const std::string suffix =
        "@patch" + (round > 0 ? std::to_string(round) + ":" : std::string()) + std::to_string(i) + "_" + std::to_string(j);
    std::vector<std::pair<int, Region>> wanted;
    for (int t : c.outputs) wanted.emplace_back(t, tile(g.tensors[t].shape, rows, cols, i, j));
    const std::vector<Region> regs = required_regions(g, c.begin, c.end, wanted);
    std::vector<int> local(nt, -1);  // per tensor: this patch's
    std::map<int, int> maker;        // per patch tensor: the node (k) whose copy makes it
    std::map<std::tuple<int, int64_t, int64_t, int64_t, int64_t, bool>, int> crops;
    // Tensor t as `need` of it for input `pos` of node k: the patch's
    // tensor, or its part: a window where k reads windows, else a copy.
    auto source = [&](int t, const Region& need, int k, size_t pos) {
      const Region have = produced[t] ? regs[t] : whole(g.tensors[t]);
      const int id = produced[t] ? local[t] : t;
      if (have == need) return id;
      const bool view = reads_window(g, g.nodes[k], pos);
      auto key = std::make_tuple(t, need.y0, need.y1, need.x0, need.x1, view);
      auto it = crops.find(key);
      if (it != crops.end()) return it->second;
      const std::string name = g.tensors[t].name + suffix + (view ? "@view" : "@crop") + std::to_string(crops.size());
      const int crop = add_activation(g, g.tensors[t], name, need);
      Node s;
      s.name = name;
      s.op_type = "Slice";
      const int64_t y = need.y0 - have.y0, x = need.x0 - have.x0;
      s.inputs = {id, add_int64_constant(g, name + "@starts", {y, x}), add_int64_constant(g, name + "@ends", {y + need.height(), x + need.width()}),
                  add_int64_constant(g, name + "@axes", {2, 3})};
      s.outputs = {crop};
      nodes.push_back(std::move(s));
      if (view)
        g.tensors[crop].window = TensorWindow{id, 0, y, x};
      else
        moved.add("crop of " + g.tensors[t].name + " for " + g.nodes[k].name + " (" + g.nodes[k].op_type + ")",
                  g.tensors[crop].bytes());
      return crops[key] = crop;
    };
    for (int k = c.begin; k < c.end; ++k) {
      const Node& n = g.nodes[k];
      const int y = single_output(n);
      const Region r = regs[y];
      if (r.empty()) continue;
      Node m = n;
      m.name = n.name + suffix;
      for (size_t pos = 0; pos < n.inputs.size(); ++pos)
        if (activation(g, n.inputs[pos])) m.inputs[pos] = source(n.inputs[pos], input_region(g, n, pos, r), k, pos);
      if (is_conv(n.op_type) || is_pool(n.op_type)) window_input(g, n, r, &m);
      // A Concat writes its inputs' bytes in place only where they are this
      // patch's own tensors: a segment input read whole is every patch's.
      // Nor where one is a window (a crop's, a segment output's tile).
      if (n.op_type == "Concat")
        for (int t : m.inputs)
          if (t >= 0 && (size_t(t) < nt || g.tensors[t].window)) m.decisions.elided = false;
      local[y] = add_activation(g, g.tensors[y], g.tensors[y].name + suffix, r);
      maker[local[y]] = k;
      m.outputs = {local[y]};
      const auto out = std::find(c.outputs.begin(), c.outputs.end(), y);
      const size_t q = size_t(out - c.outputs.begin());
      // A segment output's part written where it belongs in the full tensor
      // (all of region r: where r overhangs the tile, the neighbours' values
      // are the same); an elided Concat's inputs each at their channels.
      bool in_place = out != c.outputs.end() && writes_windows(g, n) && read_as_windows(y);
      if (in_place && m.op_type == "Concat" && m.decisions.elided) {
        bool inputs = true;  // each input written as a window at its channels: the Concat stays elided
        for (int t : m.inputs)
          inputs = inputs && maker.count(t) && !g.tensors[t].window && writes_windows(g, g.nodes[maker[t]]) &&
                     g.nodes[maker[t]].op_type != "Concat" && readers(g.nodes[maker[t]].outputs[0]) == 1 &&
                     g.tensors[t].shape[2] == r.height() &&
                     g.tensors[t].shape[3] == r.width() && std::count(m.inputs.begin(), m.inputs.end(), t) == 1;
        int64_t channel = 0;
        for (int t : m.inputs) {
          if (!inputs) break;
          g.tensors[t].window = TensorWindow{y, channel, r.y0, r.x0};
          channel += g.tensors[t].shape[1];
        }
        if (!inputs) {  // else it copies its inputs into the window
          m.decisions.elided = false;
          moved.add("tiles of " + g.tensors[y].name + ": copied by " + n.name + " (Concat), its inputs not windows",
                    g.tensors[local[y]].bytes());
        }
      }
      if (in_place) {
        g.tensors[local[y]].window = TensorWindow{y, 0, r.y0, r.x0};
        tiles[q].push_back(local[y]);
      }
      nodes.push_back(std::move(m));
      if (out == c.outputs.end() || in_place) continue;
      const Region t = wanted[q].second;
      Node w;
      w.name = n.name + suffix + "@write";
      w.op_type = "PatchWrite";
      w.inputs = full[q] >= 0 ? std::vector<int>{full[q], local[y]} : std::vector<int>{local[y]};
      const int next = p + 1 == patches ? y : add_activation(g, g.tensors[y], g.tensors[y].name + "@written" + std::to_string(p), whole(g.tensors[y]));
      w.outputs = {next};
      w.attrs["tile"] = Attribute::of_ints({t.y0, t.x0, t.height(), t.width()});
      w.attrs["source"] = Attribute::of_ints({t.y0 - r.y0, t.x0 - r.x0});
      w.decisions.in_place = full[q] >= 0;
      full[q] = next;
      const int reader = reader_without_windows(y);
      moved.add("tiles of " + g.tensors[y].name + ": " +
                    (reader >= 0 ? "read by " + g.nodes[reader].name + " (" + g.nodes[reader].op_type + ")"
                                 : "written by " + n.name + " (" + n.op_type + ")"),
                g.tensors[y].bytes() / (g.tensors[y].shape[2] * g.tensors[y].shape[3]) * t.height() * t.width());
      nodes.push_back(std::move(w));
    }
  }
  for (size_t q = 0; q < c.outputs.size(); ++q) {
    if (tiles[q].empty()) continue;
    const int y = c.outputs[q];
    Node j;
    j.name = g.tensors[y].name + "@patch" + (round > 0 ? std::to_string(round) + ":" : std::string()) + "join";
    j.op_type = "PatchJoin";
    j.inputs = tiles[q];
    j.outputs = {y};
    nodes.push_back(std::move(j));
  }
  for (size_t k = size_t(c.end); k < g.nodes.size(); ++k) nodes.push_back(std::move(g.nodes[k]));
  g.nodes = std::move(nodes);
  g.topological_sort();
  g.remove_dead_nodes();
  return moved;
}

struct Candidate {
  Cut cut;
  int rows = 0, cols = 0;
  int64_t bound = 0;
  double flops = 0;
};

}  // namespace

namespace {

// The best segment and grid for `g` as it stands, or none; `max_flops`
// bounds the model's FLOPs after it (auto).
std::optional<Candidate> best_segment(const Graph& g, const PatchOptions& opt, double max_flops, int round, int& evaluated) {
  const std::vector<Cut> all = cuts(g, 2);
  if (all.empty()) return std::nullopt;
  const Graph meta = without_values(g);
  auto evaluate = [&](const Cut& c, int rows, int cols) {
    Graph x = meta;
    patch_in_place(x, c, rows, cols, round);
    ++evaluated;
    return Candidate{c, rows, cols, plan::lower_bound_bytes(make_usage_records(x).records), graph_flops(x)};
  };
  std::vector<Candidate> found;
  if (opt.mode == PatchOptions::Mode::Grid) {
    for (const Cut& c : all)
      if (fits(g, c, opt.rows, opt.cols)) found.push_back(evaluate(c, opt.rows, opt.cols));
  } else {
    // Every segment at 4x4 (or the largest square grid that fits), then
    // every grid on the six best segments.
    std::vector<Candidate> first;
    for (const Cut& c : all)
      for (int n = 4; n >= 2; --n)
        if (fits(g, c, n, n)) {
          first.push_back(evaluate(c, n, n));
          break;
        }
    std::stable_sort(first.begin(), first.end(), [](const Candidate& a, const Candidate& b) { return a.bound < b.bound; });
    if (first.size() > 6) first.resize(6);
    for (const Candidate& f : first)
      for (int n = 2; n <= 8; ++n)
        if (fits(g, f.cut, n, n)) {
          Candidate c = n == f.rows ? f : evaluate(f.cut, n, n);
          if (c.flops <= max_flops) found.push_back(c);
        }
  }
  if (found.empty()) return std::nullopt;
  int64_t least = found.front().bound;
  for (const Candidate& c : found) least = std::min(least, c.bound);
  const Candidate* best = nullptr;
  for (const Candidate& c : found)
    if (double(c.bound) <= double(least) * 1.01 && (!best || c.flops < best->flops)) best = &c;
  return *best;
}

}  // namespace

PatchReport apply_patching(Graph& g, const PatchOptions& opt) {
  PatchReport r;
  r.mode = to_string(opt);
  r.bound_without = r.bound_with = graph_lower_bound(g);
  r.flops_without = r.flops_with = graph_flops(g);
  if (opt.mode == PatchOptions::Mode::Off) {
    r.reason = "off";
    return r;
  }
  const double max_flops = r.flops_without * (1 + opt.recompute_budget);
  const int rounds = opt.mode == PatchOptions::Mode::Grid ? 1 : 4;
  for (int round = 0; round < rounds; ++round) {
    const std::optional<Candidate> best = best_segment(g, opt, max_flops, round, r.candidates);
    // Each further segment must pay: more than 1% off the bound.
    if (!best || double(best->bound) >= double(r.bound_with) * (round == 0 ? 1.0 : 0.99)) break;
    PatchSegment s;
    s.first = best->cut.begin;
    s.nodes = best->cut.end - best->cut.begin;
    for (int t : best->cut.outputs) s.outputs.push_back(g.tensors[t].name);
    s.rows = best->rows, s.cols = best->cols;
    const Copies copied = patch_in_place(g, best->cut, best->rows, best->cols, round);
    r.copy_bytes += copied.bytes;
    r.copies.insert(r.copies.end(), copied.what.begin(), copied.what.end());
    r.segments.push_back(std::move(s));
    r.bound_with = graph_lower_bound(g);
    r.flops_with = graph_flops(g);
  }
  r.applied = !r.segments.empty();
  if (!r.applied)
    r.reason = opt.mode == PatchOptions::Mode::Grid ? "no segment patched " + to_string(opt) + " lowers the bound"
                                                    : "no segment and grid within the recompute budget lowers the bound";
  return r;
}

}  // namespace texplan
