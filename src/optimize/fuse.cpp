// Operator fusion (docs/fused-ops.md): BatchNormalization folded into the
// preceding convolution, then regions of elementwise nodes grown from a core
// (Conv, MatMul, Gemm) or from an elementwise node, each becoming one fused
// node whose epilogue program computes the region. A region's intermediate
// values disappear, so only its final value needs memory.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>

#include "graph/epilogue.h"
#include "optimize/passes.h"

namespace texplan {
namespace {

constexpr size_t kMaxExtraInputs = 8;   // epilogue tensors of one fused node
constexpr size_t kMaxInstructions = 32;

std::string literal(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", double(v));
  return buf;
}

// numpy broadcast of `s` to `to` without changing `to`.
bool broadcasts_to(const Shape& s, const Shape& to) {
  if (s.size() > to.size()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const int64_t a = s[s.size() - 1 - i], b = to[to.size() - 1 - i];
    if (a != b && a != 1) return false;
  }
  return true;
}

const std::set<std::string>& unary_ops() {
  static const std::set<std::string> ops = {"Relu", "Sigmoid", "Tanh",  "Exp",      "Log",  "Sqrt",      "Abs",
                                            "Neg",  "Erf",     "Reciprocal", "Floor", "Ceil", "Round", "Softplus", "Sign",
                                            "HardSwish"};
  return ops;
}
const std::set<std::string>& binary_ops() {
  static const std::set<std::string> ops = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min"};
  return ops;
}

enum class Mode { Conv, MatMul, Gather, Elementwise };

struct Region {
  Mode mode = Mode::Elementwise;
  Shape shape;                        // of every value in the region
  std::vector<std::string> program;
  std::vector<int> extra;             // epilogue tensors
  std::map<int, std::string> value;   // tensor -> operand naming it in the program
  std::vector<int> nodes;             // absorbed nodes (not the core)
  int last_value = -1;                // tensor the program's last instruction computes
  int base() const { return mode == Mode::Elementwise ? 0 : 1; }
};

class Fuser {
 public:
  Fuser(Graph& g, bool pool)
      : g_(g), pool_(pool), dead_(g.nodes.size(), 0), cons_(g.tensors.size()), member_(g.nodes.size(), 0) {
    for (int k = 0; k < int(g.nodes.size()); ++k)
      for (int t : g.nodes[k].inputs)
        if (t >= 0 && (cons_[t].empty() || cons_[t].back() != k)) cons_[t].push_back(k);
  }

  FuseCounts run() {
    for (int k = 0; k < int(g_.nodes.size()); ++k)
      if (!dead_[k] && g_.nodes[k].op_type == "BatchNormalization") fold_batchnorm(k);
    for (int k = 0; k < int(g_.nodes.size()); ++k) {
      if (dead_[k]) continue;
      const std::string& op = g_.nodes[k].op_type;
      if (op == "Conv" || op == "MatMul" || op == "Gemm")
        grow_core(k);
      else if (op == "Gather")
        grow_gather(k);
      else
        grow_elementwise(k);
    }
    if (pool_) 
      for (int k = 0; k < int(g_.nodes.size()); ++k)
        if (!dead_[k] && g_.nodes[k].op_type == "MaxPool") fuse_max_pool(k);
    g_.erase_nodes(dead_);
    return counts_;
  }

 private:
  Graph& g_;
  bool pool_;
  std::vector<char> dead_;
  std::vector<std::vector<int>> cons_;
  FuseCounts counts_;
  mutable std::vector<char> member_;  // grow's region, by node id
  mutable bool growing_ = false;

  int add_constant(const std::string& base, Shape shape, const std::vector<float>* values) {
    Tensor t;
    t.name = unique_tensor_name(g_, base);
    t.shape = std::move(shape);
    t.is_constant = true;
    if (values) {
      t.value = HostTensor(DataType::Float32, t.shape);
      std::copy(values->begin(), values->end(), t.value.data<float>());
      t.has_data = true;
    }
    const int id = g_.add_tensor(std::move(t));
    cons_.resize(g_.tensors.size());
    return id;
  }
  static constexpr int64_t kMaxRecomputedTaps = 256;  // input channels x kernel taps per output
  int64_t largest_activation_bytes() const {
    int64_t m = 0;
    for (const Tensor& t : g_.tensors)
      if (!t.is_constant) m = std::max(m, t.bytes());
    return m;
  }
  // Conv/FusedConv (no epilogue inputs) -> MaxPool: one FusedConvMaxPool, so
  // the full-resolution convolution output is never stored (VGG, ResNet and
  // GoogLeNet stems: the peak of the whole model).
  void fuse_max_pool(int k) {
    const Node& pool = g_.nodes[k];
    if (pool.inputs.size() != 1 || pool.inputs[0] < 0 || pool.outputs.empty() || pool.outputs[0] < 0) return;
    for (size_t i = 1; i < pool.outputs.size(); ++i)
      if (pool.outputs[i] >= 0) return;  // Indices wanted
    if (pool.get_string("auto_pad", "NOTSET") != "NOTSET" || pool.get_int("storage_order", 0) != 0) return;
    const int x = pool.inputs[0];
    const int p = g_.tensors[x].producer;
    if (p < 0 || dead_[p] || g_.tensors[x].is_output || alive_consumers(x) != 1 || !is_f32(g_.tensors[x])) return;
    const Node& conv = g_.nodes[p];
    if ((conv.op_type != "Conv" && conv.op_type != "FusedConv") || conv.inputs.size() > 3 || conv.outputs.size() != 1)
      return;
    if (conv.get_string("auto_pad", "NOTSET") != "NOTSET" || g_.tensors[x].shape.size() != 4) return;
    // Overlapping windows (3x3 stride 2) recompute the conv at every window
    // position, (k/s)^2 = 2.25x its work: cheap for stems over a few input
    // channels (ResNet, GoogLeNet, SqueezeNet: 3x7x7 or 3x3x3 taps per
    // output), not for deep convs
    // (docs/kernel-choices.md#overlapping-pool-windows-fuse-only-into-stems).
    // Non-overlapping windows recompute nothing.
    const std::vector<int64_t> pk = pool.get_ints("kernel_shape"), ps = pool.get_ints("strides", {1, 1});
    const bool overlapping = pk.size() != 2 || ps.size() != 2 || pk[0] > ps[0] || pk[1] > ps[1] ||
                             pool.get_ints("dilations", {1, 1}) != std::vector<int64_t>{1, 1};
    const Shape& w = g_.tensors[conv.inputs.at(1)].shape;
    if (overlapping && (w.size() != 4 || w[1] * w[2] * w[3] > kMaxRecomputedTaps)) return;
    // A conv output under 1/16 of the largest activation is never the peak
    // (the pool saves no bound bytes there), while the fused kernel cannot
    // split K on GPUs (docs/kernel-choices.md#small-conv-outputs-keep-their-maxpool).
    if (16 * g_.tensors[x].bytes() < largest_activation_bytes()) return;
    Node fused = conv;
    fused.op_type = "FusedConvMaxPool";
    for (const auto& [name, value] : pool.attrs) fused.attrs["pool_" + name] = value;
    fused.attrs.erase("pool_auto_pad");
    fused.attrs.erase("pool_storage_order");
    fused.outputs = {pool.outputs[0]};
    const int y = pool.outputs[0];
    g_.nodes[k] = std::move(fused);  // at the pool's place: its inputs came before the conv
    g_.tensors[y].producer = k;
    dead_[p] = 1;
    for (int t : g_.nodes[k].inputs)
      if (t >= 0) std::replace(cons_[t].begin(), cons_[t].end(), p, k);
    ++counts_.pool;
  }

  bool constant_f32(int t, int64_t count) const {
    return t >= 0 && g_.tensors[t].is_constant && is_f32(g_.tensors[t]) && element_count(g_.tensors[t].shape) == count;
  }
  std::vector<float> values(int t) const {
    const Tensor& x = g_.tensors[t];
    return std::vector<float>(x.value.data<float>(), x.value.data<float>() + element_count(x.shape));
  }
  bool literal_of(int t, float& v) const {
    const Tensor& x = g_.tensors[t];
    if (!x.is_constant || !x.has_data || !is_f32(x) || element_count(x.shape) != 1 || x.value.bytes.size() != 4)
      return false;
    v = x.value.data<float>()[0];
    return true;
  }
  int alive_consumers(int t) const {
    int n = 0;
    for (int c : cons_[t]) n += !dead_[c];
    return n;
  }

  // Conv -> BatchNormalization: W' = W * s, B' = (B - mean) * s + beta with
  // s = scale / sqrt(var + eps). Without weight data the new constants have
  // shapes only, so planning gives the same graph with or without weights.
  // A BatchNormalization after anything else becomes x * s + b' (a
  // FusedElementwise), which the elementwise pass can merge further.
  void fold_batchnorm(int k) {
    const Node& bn = g_.nodes[k];
    if (bn.inputs.size() != 5 || bn.get_int("training_mode", 0) != 0) return;
    for (size_t i = 1; i < bn.outputs.size(); ++i)
      if (bn.outputs[i] >= 0) return;
    const int x = bn.inputs[0], y = bn.outputs[0];
    if (x < 0 || y < 0 || !is_f32(g_.tensors[x]) || g_.tensors[x].shape.size() < 2) return;
    const int64_t C = g_.tensors[x].shape[1];
    for (int i = 1; i <= 4; ++i)
      if (!constant_f32(bn.inputs[i], C)) return;
    const float eps = bn.get_float("epsilon", 1e-5f);
    bool data = true;
    for (int i = 1; i <= 4; ++i) data = data && g_.tensors[bn.inputs[i]].has_data;
    std::vector<float> s(C), shift(C);
    if (data) {
      const auto scale = values(bn.inputs[1]), beta = values(bn.inputs[2]), mean = values(bn.inputs[3]),
                 var = values(bn.inputs[4]);
      for (int64_t c = 0; c < C; ++c) {
        s[c] = scale[c] / std::sqrt(var[c] + eps);
        shift[c] = beta[c] - mean[c] * s[c];
      }
    }

    const int p = g_.tensors[x].producer;
    if (p >= 0 && !dead_[p] && g_.nodes[p].op_type == "Conv" && !g_.tensors[x].is_output && alive_consumers(x) == 1 &&
        g_.nodes[p].outputs.size() == 1) {
      Node& conv = g_.nodes[p];
      const int w = conv.inputs.size() > 1 ? conv.inputs[1] : -1;
      const int b = conv.inputs.size() > 2 ? conv.inputs[2] : -1;
      if (w >= 0 && g_.tensors[w].is_constant && is_f32(g_.tensors[w]) && !g_.tensors[w].shape.empty() &&
          g_.tensors[w].shape[0] == C && (b < 0 || constant_f32(b, C))) {
        const bool all = data && g_.tensors[w].has_data && (b < 0 || g_.tensors[b].has_data);
        std::vector<float> nw, nb(C);
        if (all) {
          nw = values(w);
          const int64_t per = int64_t(nw.size()) / C;
          for (int64_t m = 0; m < C; ++m) {
            for (int64_t i = 0; i < per; ++i) nw[m * per + i] *= s[m];
            const float old = b >= 0 ? g_.tensors[b].value.data<float>()[m] : 0.0f;
            nb[m] = old * s[m] + shift[m];
          }
        }
        const Shape wshape = g_.tensors[w].shape;
        const int nwid = add_constant(g_.tensors[w].name + "@bn", wshape, all ? &nw : nullptr);
        const int nbid = add_constant(g_.nodes[k].name + "@bias", {C}, all ? &nb : nullptr);
        Node& conv2 = g_.nodes[p];  // add_tensor does not move nodes, but be explicit
        conv2.inputs.resize(3);
        conv2.inputs[1] = nwid;
        conv2.inputs[2] = nbid;
        conv2.outputs[0] = y;
        g_.tensors[y].producer = p;
        dead_[k] = 1;
        ++counts_.batchnorm;
        return;
      }
    }
    // x * s + shift with s, shift shaped [C, 1, ...] to broadcast over NC...
    Shape ps = {C};
    for (size_t i = 2; i < g_.tensors[x].shape.size(); ++i) ps.push_back(1);
    const int sid = add_constant(bn.name + "@scale", ps, data ? &s : nullptr);
    const int bid = add_constant(g_.nodes[k].name + "@shift", ps, data ? &shift : nullptr);
    Node& n = g_.nodes[k];
    Node fused;
    fused.name = n.name;
    fused.op_type = "FusedElementwise";
    fused.inputs = {x, sid, bid};
    fused.outputs = {y};
    fused.attrs["program"] = Attribute::of_strings({"Mul x0 x1", "Add t0 x2"});
    n = std::move(fused);
    cons_[sid] = {k};
    cons_[bid] = {k};
    ++counts_.batchnorm;
  }

  // Operand naming tensor t in region r: a region value, a literal, or an
  // epilogue input (added when new and allowed).
  bool operand(Region& r, int t, std::string& out) const {
    if (t < 0) return false;
    auto it = r.value.find(t);
    if (it != r.value.end()) {
      out = it->second;
      return true;
    }
    float v;
    if (literal_of(t, v)) {
      out = literal(v);
      return true;
    }
    const Tensor& x = g_.tensors[t];
    if (!is_f32(x)) return false;
    if (r.mode == Mode::Conv ? x.shape != r.shape : !broadcasts_to(x.shape, r.shape)) return false;
    auto pos = std::find(r.extra.begin(), r.extra.end(), t);
    if (pos == r.extra.end()) {
      if (r.extra.size() >= kMaxExtraInputs) return false;
      r.extra.push_back(t);
      pos = r.extra.end() - 1;
    }
    out = "x" + std::to_string(r.base() + int(pos - r.extra.begin()));
    return true;
  }

  // Appends node n's computation to r (its output becomes a value); false,
  // with r possibly changed, when n cannot be expressed.
  bool append(Region& r, int k) const {
    const Node& n = g_.nodes[k];
    if (n.outputs.empty() || n.outputs[0] < 0) return false;
    for (size_t i = 1; i < n.outputs.size(); ++i)
      if (n.outputs[i] >= 0) return false;
    const int y = n.outputs[0];
    const Tensor& ty = g_.tensors[y];
    if (!is_f32(ty) || ty.is_constant || ty.shape != r.shape) return false;
    const std::string& op = n.op_type;
    std::vector<std::string> code;
    std::string a, b;
    auto temp = [&](size_t i) { return "t" + std::to_string(r.program.size() + i); };
    if (unary_ops().count(op) && n.inputs.size() == 1) {
      if (!operand(r, n.inputs[0], a)) return false;
      code.push_back(op + " " + a);
    } else if (binary_ops().count(op) && n.inputs.size() == 2) {
      if (!operand(r, n.inputs[0], a) || !operand(r, n.inputs[1], b)) return false;
      code.push_back(op + " " + a + " " + b);
    } else if (op == "Gelu" && n.inputs.size() == 1 && n.get_string("approximate", "none") == "none") {
      if (!operand(r, n.inputs[0], a)) return false;
      code.push_back("Gelu " + a);
    } else if ((op == "LeakyRelu" || op == "Elu") && n.inputs.size() == 1) {
      if (!operand(r, n.inputs[0], a)) return false;
      code.push_back(op + " " + a + " " + literal(n.get_float("alpha", op == "Elu" ? 1.0f : 0.01f)));
    } else if (op == "HardSigmoid" && n.inputs.size() == 1) {
      if (!operand(r, n.inputs[0], a)) return false;
      code.push_back(op + " " + a + " " + literal(n.get_float("alpha", 0.2f)) + " " + literal(n.get_float("beta", 0.5f)));
    } else if (op == "Clip" && !n.inputs.empty()) {
      float lo = -3.40282347e+38f, hi = 3.40282347e+38f;
      if (n.has("min")) lo = n.get_float("min", lo);
      if (n.has("max")) hi = n.get_float("max", hi);
      if (n.inputs.size() > 1 && n.inputs[1] >= 0 && !literal_of(n.inputs[1], lo)) return false;
      if (n.inputs.size() > 2 && n.inputs[2] >= 0 && !literal_of(n.inputs[2], hi)) return false;
      if (!operand(r, n.inputs[0], a)) return false;
      code.push_back("Clip " + a + " " + literal(lo) + " " + literal(hi));
    } else if (op == "FusedElementwise") {
      Epilogue e;
      try {
        e = Epilogue::parse(n);
      } catch (const Error&) {
        return false;
      }
      std::vector<std::string> xs;
      for (int t : n.inputs) {
        if (!operand(r, t, a)) return false;
        xs.push_back(a);
      }
      for (const auto& instr : e.code) {
        std::string s = instr.op;
        for (const auto& arg : instr.args) {
          if (arg.kind == EpilogueOperand::Kind::Input) {
            if (arg.index >= int(xs.size())) return false;
            s += " " + xs[arg.index];
          } else if (arg.kind == EpilogueOperand::Kind::Temp) {
            s += " " + temp(size_t(arg.index));
          } else {
            s += " " + literal(arg.value);
          }
        }
        code.push_back(s);
      }
      if (code.empty()) return false;
    } else {
      return false;
    }
    if (r.program.size() + code.size() > kMaxInstructions) return false;
    for (auto& c : code) r.program.push_back(std::move(c));
    r.value[y] = "t" + std::to_string(r.program.size() - 1);
    r.last_value = y;
    r.nodes.push_back(k);
    return true;
  }

  // Within grow, membership is a flag per node (member_); a region of 32
  // nodes is asked about its members at every step of its growth.
  bool in_region(const Region& r, int k, int core) const {
    if (growing_) return member_[size_t(k)] != 0;
    return k == core || std::find(r.nodes.begin(), r.nodes.end(), k) != r.nodes.end();
  }

  // Only the last value may be seen outside the region.
  bool valid(const Region& r, int core) const {
    for (const auto& [t, name] : r.value) {
      if (t == r.last_value) continue;
      if (g_.tensors[t].is_output) return false;
      for (int c : cons_[t])
        if (!dead_[c] && !in_region(r, c, core)) return false;
    }
    return r.last_value >= 0 && !r.nodes.empty();
  }

  // Grows r by the consumers of its values, smallest node id first; returns
  // the largest valid region reached (nodes empty when none).
  // r grows in place (a failed append is undone: it may only have added
  // epilogue inputs) and the best region is remembered by its sizes, not
  // copied: a chain of a million nodes grows a region at every node.
  Region grow(Region r, int core) const {
    struct Sizes {
      size_t program = 0, extra = 0, nodes = 0;
      int last_value = -1;
    };
    std::optional<Sizes> best;
    auto mark = [&](int k, char on) {
      if (k >= 0) member_[size_t(k)] = on;
    };
    mark(core, 1);
    for (int k : r.nodes) mark(k, 1);
    growing_ = true;
    std::vector<int> candidates;
    for (;;) {
      candidates.clear();
      for (const auto& [t, name] : r.value)
        for (int c : cons_[t])
          if (!dead_[c] && !in_region(r, c, core)) candidates.push_back(c);
      std::sort(candidates.begin(), candidates.end());
      candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
      bool grown = false;
      for (int c : candidates) {
        const size_t extra = r.extra.size();
        if (!append(r, c)) {
          r.extra.resize(extra);
          continue;
        }
        mark(c, 1);
        grown = true;
        break;
      }
      if (!grown) break;
      if (valid(r, core)) best = Sizes{r.program.size(), r.extra.size(), r.nodes.size(), r.last_value};
    }
    growing_ = false;
    mark(core, 0);
    for (int k : r.nodes) mark(k, 0);
    if (!best) return Region{};
    // The values of the nodes cut off stay in r.value: callers read only
    // program, extra, nodes and last_value.
    r.program.resize(best->program);
    r.extra.resize(best->extra);
    r.nodes.resize(best->nodes);
    r.last_value = best->last_value;
    return r;
  }

  // Replaces the region's nodes by `fused`, placed where its last node was.
  void commit(const Region& r, int core, Node fused) {
    int at = core;
    for (int k : r.nodes) at = std::max(at, k);
    std::vector<int> gone = r.nodes;
    if (core >= 0) gone.push_back(core);
    for (int k : gone) dead_[k] = 1;
    dead_[at] = 0;
    fused.outputs = {r.last_value};
    g_.nodes[at] = std::move(fused);
    g_.tensors[r.last_value].producer = at;
    for (int t : g_.nodes[at].inputs) {
      if (t < 0) continue;
      auto& c = cons_[t];
      c.erase(std::remove_if(c.begin(), c.end(), [&](int k) { return dead_[k] || k == at; }), c.end());
      c.push_back(at);
      std::sort(c.begin(), c.end());
    }
  }

  void grow_core(int k) {
    const Node& n = g_.nodes[k];
    if (n.outputs.size() != 1 || n.outputs[0] < 0 || n.inputs.size() < 2) return;
    const int y = n.outputs[0];
    const Tensor& ty = g_.tensors[y];
    if (!is_f32(ty) || n.inputs[0] < 0 || n.inputs[1] < 0 || !is_f32(g_.tensors[n.inputs[0]]) ||
        !is_f32(g_.tensors[n.inputs[1]]))
      return;
    Region r;
    r.shape = ty.shape;
    r.value[y] = "x0";
    Node fused;
    fused.name = n.name;
    if (n.op_type == "Conv") {
      const size_t rank = ty.shape.size();
      if (rank != 3 && rank != 4) return;
      r.mode = Mode::Conv;
      fused.op_type = "FusedConv";
      fused.attrs = n.attrs;
      fused.decisions = n.decisions;
      fused.inputs = {n.inputs[0], n.inputs[1], n.inputs.size() > 2 ? n.inputs[2] : -1};
    } else {
      r.mode = Mode::MatMul;
      fused.op_type = "FusedMatMul";
      fused.inputs = {n.inputs[0], n.inputs[1]};
      if (n.op_type == "Gemm") {
        if (n.get_int("transA", 0) != 0 || n.get_float("alpha", 1.0f) != 1.0f || n.get_float("beta", 1.0f) != 1.0f)
          return;
        if (n.get_int("transB", 0) != 0) fused.attrs["transB"] = Attribute::of_int(1);
        if (n.inputs.size() > 2 && n.inputs[2] >= 0) {
          std::string c;
          if (!operand(r, n.inputs[2], c)) return;
          r.program.push_back("Add x0 " + c);
          r.value.erase(y);
          r.value[y] = "t0";
        }
      }
    }
    r.last_value = y;
    Region best = grow(r, k);
    if (best.nodes.empty()) return;
    fused.attrs["program"] = Attribute::of_strings(best.program);
    for (int t : best.extra) fused.inputs.push_back(t);
    commit(best, k, std::move(fused));
    ++(r.mode == Mode::Conv ? counts_.conv : counts_.matmul);
  }

  // A Gather of floats with the elementwise chain after it: an embedding
  // lookup and the position embeddings added to it (BERT, GPT) in one kernel.
  void grow_gather(int k) {
    const Node& n = g_.nodes[k];
    if (n.inputs.size() != 2 || n.outputs.size() != 1 || n.outputs[0] < 0 || n.inputs[0] < 0 || n.inputs[1] < 0)
      return;
    const int y = n.outputs[0];
    if (!is_f32(g_.tensors[y]) || !is_f32(g_.tensors[n.inputs[0]])) return;
    if (contiguous_gather_offset(g_, n) >= 0) return;  // a view (slices_to_views): no kernel to save
    Region r;
    r.mode = Mode::Gather;
    r.shape = g_.tensors[y].shape;
    r.value[y] = "x0";
    r.last_value = y;
    Region best = grow(r, k);
    if (best.nodes.empty()) return;
    Node fused;
    fused.name = n.name;
    fused.op_type = "FusedGather";
    fused.attrs = n.attrs;
    fused.attrs["program"] = Attribute::of_strings(best.program);
    fused.inputs = {n.inputs[0], n.inputs[1]};
    for (int t : best.extra) fused.inputs.push_back(t);
    commit(best, k, std::move(fused));
    ++counts_.gathers;
  }

  void grow_elementwise(int k) {
    const Node& n = g_.nodes[k];
    if (n.outputs.empty() || n.outputs[0] < 0) return;
    Region r;
    r.mode = Mode::Elementwise;
    r.shape = g_.tensors[n.outputs[0]].shape;
    if (!append(r, k)) return;
    r.nodes.clear();  // the start node is the core
    Region best = grow(r, k);
    if (best.nodes.empty()) return;
    Node fused;
    fused.name = n.name;
    fused.op_type = "FusedElementwise";
    fused.attrs["program"] = Attribute::of_strings(best.program);
    fused.inputs = best.extra;
    commit(best, k, std::move(fused));
    ++counts_.elementwise;
  }
};

}  // namespace

FuseCounts fuse(Graph& g, bool pool, bool channel_scales, bool channel_programs, GateBounds gates,
                bool depthwise_inputs, bool mlps) {
  scales_after_products(g);
  reshapes_after_products(g);
  FuseCounts c = Fuser(g, pool).run();
  if (channel_scales) c.channel_scales = channel_scales_into_convs(g);
  if (channel_programs) c.channel_programs = channel_programs_into_convs(g);
  if (channel_programs && gates.channels > 0 && gates.weights > 0) c.channel_gates = channel_gates_into_convs(g, gates);
  if (depthwise_inputs) c.depthwise_inputs = depthwise_into_pointwise_convs(g);
  if (mlps) c.mlps = mlp_pairs(g);
  return c;
}

}  // namespace texplan
