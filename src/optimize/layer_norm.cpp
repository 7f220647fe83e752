// LayerNormalization spelled out as elementwise ops (PyTorch's exporter below
// opset 17, BERT-style models):
//   m = ReduceMean(x, axes=[last]); d = Sub(x, m); p = Pow(d, 2);
//   v = ReduceMean(p, axes=[last]); s = Sqrt(Add(v, eps)); q = Div(d, s);
//   y = Add(Mul(q, gamma), beta)        (Mul/Add operands in either order)
// becomes one LayerNormalization(x, gamma, beta; axis=-1, epsilon=eps): nine
// launches and four stored intermediates become one row-wise kernel. Only the
// exact pattern is rewritten: every intermediate has exactly the consumers
// above and is no graph output, gamma and beta are constant vectors of the
// last dim, Pow's exponent and eps constant scalars with their values known.
//
// Then (layer_norms_into_products), on GPUs, a LayerNormalization over the
// last axis of a FusedMatMul's output that nothing else reads goes into that
// product (graph.h RowNorm): BERT's post-norm sums of a product and its
// residual, one launch of the layer's seven each.
#include <algorithm>

#include "optimize/passes.h"

namespace texplan {
namespace {

class LayerNormFuser {
 public:
  explicit LayerNormFuser(Graph& g) : g_(g), dead_(g.nodes.size(), 0), cons_(g.consumers()) {}

  int run() {
    int made = 0;
    for (int k = 0; k < int(g_.nodes.size()); ++k)
      if (!dead_[k] && g_.nodes[k].op_type == "ReduceMean" && try_fuse(k)) ++made;
    if (made == 0) return 0;
    g_.erase_nodes(dead_);
    return made;
  }

 private:
  Graph& g_;
  std::vector<char> dead_;
  std::vector<std::vector<int>> cons_;

  const Tensor& t(int id) const { return g_.tensors[id]; }
  const Node& n(int id) const { return g_.nodes[id]; }

  int only_consumer(int id) const { return only_reader(g_, cons_, id); }
  bool single_output(const Node& node) const {
    return node.outputs.size() == 1 && node.outputs[0] >= 0 && t(node.outputs[0]).dtype == DataType::Float32;
  }
  bool is(int node, const char* op, size_t inputs) const {
    return node >= 0 && !dead_[node] && n(node).op_type == op && n(node).inputs.size() == inputs &&
           single_output(n(node));
  }
  // A float constant scalar (one element) with its value known.
  bool scalar(int id, float& v) const {
    if (id < 0 || !t(id).is_constant || !t(id).has_data || t(id).dtype != DataType::Float32 ||
        element_count(t(id).shape) != 1 || t(id).value.bytes.size() != 4)
      return false;
    v = t(id).value.data<float>()[0];
    return true;
  }
  // A float constant of shape [C] (values need not be loaded: planning).
  bool vector_of(int id, int64_t C) const {
    return id >= 0 && t(id).is_constant && t(id).dtype == DataType::Float32 && t(id).shape == Shape{C};
  }
  // ReduceMean over exactly the last axis of its input, keepdims.
  bool mean_of_last_axis(int node) const {
    const Node& r = n(node);
    if (r.op_type != "ReduceMean" || r.inputs.empty() || r.inputs[0] < 0 || !single_output(r)) return false;
    if (r.get_int("keepdims", 1) != 1) return false;
    std::vector<int64_t> axes;
    if (r.has("axes")) {
      if (r.inputs.size() != 1) return false;
      axes = r.get_ints("axes");
    } else {
      if (r.inputs.size() != 2 || r.inputs[1] < 0 || !t(r.inputs[1]).is_constant || !t(r.inputs[1]).has_data)
        return false;
      axes = t(r.inputs[1]).value.as_int64();
    }
    const int64_t rank = int64_t(t(r.inputs[0]).shape.size());
    return rank >= 1 && axes.size() == 1 && (axes[0] == -1 || axes[0] == rank - 1);
  }
  // Of a binary node with `known` as one operand, the other one (-1 if neither).
  int other_operand(int node, int known) const {
    const auto& in = n(node).inputs;
    if (in[0] == known && in[1] != known) return in[1];
    if (in[1] == known && in[0] != known) return in[0];
    return -1;
  }

  bool try_fuse(int mean1) {
    if (!mean_of_last_axis(mean1)) return false;
    const int x = n(mean1).inputs[0], m = n(mean1).outputs[0];
    const Shape& xs = t(x).shape;
    if (t(x).dtype != DataType::Float32 || xs.empty()) return false;
    const int64_t C = xs.back();
    // Sub(x, m): its output d feeds exactly Pow and Div.
    const int sub = only_consumer(m);
    if (!is(sub, "Sub", 2) || n(sub).inputs[0] != x || n(sub).inputs[1] != m) return false;
    const int d = n(sub).outputs[0];
    if (t(d).shape != xs || t(d).is_output || cons_[d].size() != 2) return false;
    int pow = cons_[d][0], div = cons_[d][1];
    if (n(pow).op_type != "Pow") std::swap(pow, div);
    float exponent = 0, eps = 0;
    if (!is(pow, "Pow", 2) || n(pow).inputs[0] != d || !scalar(n(pow).inputs[1], exponent) || exponent != 2.0f)
      return false;
    if (!is(div, "Div", 2) || n(div).inputs[0] != d) return false;
    // ReduceMean(p) -> Add(eps) -> Sqrt -> the Div's divisor.
    const int mean2 = only_consumer(n(pow).outputs[0]);
    if (mean2 < 0 || dead_[mean2] || !mean_of_last_axis(mean2) || n(mean2).inputs[0] != n(pow).outputs[0]) return false;
    const int add_eps = only_consumer(n(mean2).outputs[0]);
    if (!is(add_eps, "Add", 2) || !scalar(other_operand(add_eps, n(mean2).outputs[0]), eps)) return false;
    const int sqrt = only_consumer(n(add_eps).outputs[0]);
    if (!is(sqrt, "Sqrt", 1) || n(div).inputs[1] != n(sqrt).outputs[0] || only_consumer(n(sqrt).outputs[0]) != div)
      return false;
    // Mul(q, gamma), then Add(., beta) when the Mul's only consumer is one.
    const int q = n(div).outputs[0];
    if (t(q).shape != xs) return false;
    const int mul = only_consumer(q);
    if (!is(mul, "Mul", 2)) return false;
    const int gamma = other_operand(mul, q);
    if (!vector_of(gamma, C)) return false;
    int y = n(mul).outputs[0], last = mul, beta = -1;
    const int add_beta = only_consumer(y);
    if (is(add_beta, "Add", 2) && vector_of(other_operand(add_beta, y), C)) {
      beta = other_operand(add_beta, y);
      y = n(add_beta).outputs[0];
      last = add_beta;
    }
    if (t(y).shape != xs) return false;

    Node ln;
    ln.name = n(last).name + "@layernorm";
    ln.op_type = "LayerNormalization";
    ln.inputs = {x, gamma};
    if (beta >= 0) ln.inputs.push_back(beta);
    ln.outputs = {y};
    ln.attrs["axis"] = Attribute::of_int(-1);
    ln.attrs["epsilon"] = Attribute::of_float(eps);
    for (int k : {mean1, sub, pow, mean2, add_eps, sqrt, div, mul}) dead_[k] = 1;
    g_.nodes[last] = std::move(ln);  // at the last node's place: every input exists by then
    dead_[last] = 0;
    g_.tensors[y].producer = last;
    return true;
  }
};

}  // namespace

int fuse_layer_norm(Graph& g) { return LayerNormFuser(g).run(); }

int layer_norms_into_products(Graph& g) {
  const auto readers = g.consumers();
  std::vector<char> erased(g.nodes.size(), 0);
  int made = 0;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& ln = g.nodes[k];
    if (ln.op_type != "LayerNormalization" || ln.inputs.size() < 2 || ln.inputs[0] < 0 || ln.inputs[1] < 0) continue;
    if (ln.outputs.empty() || ln.outputs[0] < 0 || ln.get_int("stash_type", 1) != 1) continue;
    if (std::any_of(ln.outputs.begin() + 1, ln.outputs.end(), [&](int t) { return t >= 0; }))
      continue;  // its mean and inverse deviation asked for
    const int z = ln.inputs[0];
    const Tensor& zt = g.tensors[size_t(z)];
    if (only_reader(g, readers, z) < 0 || zt.dtype != DataType::Float32 || zt.shape.empty()) continue;
    const int64_t rank = int64_t(zt.shape.size()), axis = ln.get_int("axis", -1);
    if (axis != -1 && axis != rank - 1) continue;
    // Back through Reshapes that keep the last dim, so rows stay rows (the
    // out-projection's [S, 1, D] viewed as [1, S, D]), each read only by the
    // next; `last` is the one whose output the LayerNormalization read.
    int t = z, last = -1;
    while (true) {
      const int q = g.tensors[size_t(t)].producer;
      if (q < 0 || g.nodes[size_t(q)].op_type != "Reshape") break;
      const int in = g.nodes[size_t(q)].inputs[0];
      const Tensor& it = g.tensors[size_t(in)];
      if (only_reader(g, readers, in) < 0 || it.shape.empty() || it.shape.back() != zt.shape.back()) break;
      if (last < 0) last = q;
      t = in;
    }
    const int p = g.tensors[size_t(t)].producer;
    if (p < 0) continue;
    Node& prod = g.nodes[size_t(p)];
    if (prod.op_type != "FusedMatMul" || prod.outputs.size() != 1 || row_norm(prod) || operand_view(prod, 0) ||
        operand_view(prod, 1))
      continue;
    // gamma and beta: constant vectors of the last dim.
    const int64_t n = zt.shape.back();
    // Not a product long in K against its rows: unfused, it splits over K
    // (or takes the k-groups), which a row-normalizing product cannot; on
    // the H200 BERT-mini's second MLP products lost more that way than the
    // launch saved (docs/fused-ops.md#row-norm).
    const Tensor& a = g.tensors[size_t(prod.inputs[0])];
    if (a.shape.empty() || a.shape.back() > 2 * n) continue;
    const int beta = ln.inputs.size() > 2 ? ln.inputs[2] : -1;
    auto vector_of_n = [&](int v) {
      return v >= 0 && g.tensors[size_t(v)].is_constant && g.tensors[size_t(v)].dtype == DataType::Float32 &&
             element_count(g.tensors[size_t(v)].shape) == n;
    };
    if (!vector_of_n(ln.inputs[1]) || (beta >= 0 && !vector_of_n(beta))) continue;
    prod.inputs.push_back(ln.inputs[1]);
    prod.inputs.push_back(beta);
    prod.decisions.row_norm = RowNorm{ln.get_float("epsilon", 1e-5f)};
    g.nodes[size_t(last >= 0 ? last : p)].outputs[0] = ln.outputs[0];  // the Reshapes now view normalized rows
    erased[k] = 1;
    ++made;
  }
  if (made > 0) g.erase_nodes(erased);
  return made;
}

}  // namespace texplan
