// Attention as one FusedAttention node (docs/fused-ops.md#fusedattention):
//
//   [Mul/Div q by a scalar]  [Transpose k's last two axes] [Mul/Div by a scalar]
//            \                 /
//             MatMul(q, k^T) -> [Mul/Div by a scalar] -> [Add mask] -> Softmax(last axis) -> MatMul(., v)
//
// becomes FusedAttention(Q, K or K^T, V, [mask]) with the scalars multiplied
// into one typed scale and the K layout a typed flag (AttentionForm,
// graph.h): the score matrix [..., Sq, Sk] and the probabilities are never
// stored. The forms PyTorch writes: BERT's q / sqrt(d) before the product,
// scaled_dot_product_attention's q * sqrt(s) and k^T * sqrt(s), a scale
// after the product, an additive float mask (a boolean one arrives as
// Where(mask, 0, -inf), an additive tensor like any other, and torch then
// zeroes fully masked rows with Where(IsNaN(P), 0, P) after the Softmax:
// AttentionForm::masked_rows_zero). Only exact,
// static cases: every intermediate has the pattern's reader alone and is
// no graph output, all float32, batch dims equal on Q, K, V (at most two of
// them), the mask broadcasts to the scores without widening them.
#include <algorithm>
#include <cmath>

#include "optimize/passes.h"

namespace texplan {
namespace {

class AttentionFuser {
 public:
  AttentionFuser(Graph& g, int64_t max_head_dim)
      : g_(g), max_head_dim_(max_head_dim), dead_(g.nodes.size(), 0), cons_(g.consumers()) {}

  int run() {
    int made = 0;
    for (int k = 0; k < int(g_.nodes.size()); ++k)
      if (!dead_[k] && g_.nodes[k].op_type == "Softmax" && try_fuse(k)) ++made;
    if (made > 0) g_.erase_nodes(dead_);
    return made;
  }

 private:
  Graph& g_;
  int64_t max_head_dim_;
  std::vector<char> dead_;
  std::vector<std::vector<int>> cons_;

  const Tensor& t(int id) const { return g_.tensors[size_t(id)]; }
  const Node& n(int id) const { return g_.nodes[size_t(id)]; }

  // The node producing `id` when `id` is an intermediate read by one node
  // alone and no graph output; else -1.
  int private_producer(int id) const {
    if (only_reader(g_, cons_, id) < 0) return -1;
    const int p = t(id).producer;
    return p >= 0 && !dead_[size_t(p)] && n(p).outputs.size() == 1 ? p : -1;
  }
  bool f32(int id) const { return id >= 0 && t(id).dtype == DataType::Float32; }
  // A float constant scalar with its value known.
  bool scalar(int id, float& v) const {
    if (id < 0 || !t(id).is_constant || !t(id).has_data || !f32(id) || element_count(t(id).shape) != 1 ||
        t(id).value.bytes.size() != 4)
      return false;
    v = t(id).value.data<float>()[0];
    return std::isfinite(v);
  }
  // When node p is x * c, c * x or x / c with c a constant scalar: x, with
  // `scale` multiplied by c (or 1/c); else -1.
  int unscaled(int p, float& scale) const {
    const Node& s = n(p);
    if (s.inputs.size() != 2 || s.inputs[0] < 0 || s.inputs[1] < 0) return -1;
    float c = 0;
    int x = -1;
    if (s.op_type == "Mul") {
      if (scalar(s.inputs[1], c)) x = s.inputs[0];
      else if (scalar(s.inputs[0], c)) x = s.inputs[1];
    } else if (s.op_type == "Div" && scalar(s.inputs[1], c) && c != 0.0f) {
      x = s.inputs[0];
      c = 1.0f / c;
    }
    if (x < 0 || !f32(x) || t(x).shape != t(s.outputs[0]).shape) return -1;
    scale *= c;
    return x;
  }
  // When node p is a Transpose swapping the last two axes and nothing else: its input; else -1.
  int untransposed(int p) const {
    const Node& tr = n(p);
    if (tr.op_type != "Transpose" || tr.inputs.size() != 1 || tr.inputs[0] < 0) return -1;
    const int64_t rank = int64_t(t(tr.inputs[0]).shape.size());
    const std::vector<int64_t> perm = transpose_perm(tr, size_t(rank));
    if (rank < 2 || int64_t(perm.size()) != rank) return -1;
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t want = d == rank - 2 ? rank - 1 : d == rank - 1 ? rank - 2 : d;
      if (perm[size_t(d)] != want) return -1;
    }
    return tr.inputs[0];
  }

  // Walks back from the product's left operand: an optional scalar scale.
  int query(int a, float& scale, std::vector<int>& gone) const {
    const int p = private_producer(a);
    if (p < 0) return a;
    const int x = unscaled(p, scale);
    if (x < 0) return a;
    gone.push_back(p);
    return x;
  }
  // Walks back from the product's right operand (K^T): at most one scalar
  // scale and one Transpose of the last two axes, in either order.
  int key(int b, float& scale, bool& k_transposed, std::vector<int>& gone) const {
    k_transposed = true;
    bool scaled = false;
    for (int cur = b;;) {
      const int p = private_producer(cur);
      if (p < 0) return cur;
      float s = scale;
      int x = -1;
      if (!scaled && (x = unscaled(p, s)) >= 0) {
        scaled = true;
        scale = s;
      } else if (k_transposed && (x = untransposed(p)) >= 0) {
        k_transposed = false;
      } else {
        return cur;
      }
      gone.push_back(p);
      cur = x;
    }
  }

  // From the scores (before a mask): an optional scalar scale, then the
  // MatMul making them (added to `gone` with the scale); -1 if none.
  int product_of(int scores, float& scale, std::vector<int>& gone) const {
    int p = private_producer(scores);
    if (p >= 0 && n(p).op_type != "MatMul") {
      const int x = unscaled(p, scale);
      if (x < 0) return -1;
      gone.push_back(p);
      p = private_producer(x);
    }
    if (p < 0 || n(p).op_type != "MatMul") return -1;
    gone.push_back(p);
    return p;
  }

  // torch's export of a boolean mask zeroes the NaN rows of fully masked
  // queries: P read by IsNaN(P) and Where(IsNaN(P), 0, P) alone, nothing
  // else reading the IsNaN. The Where's output (added to `gone` with both),
  // else -1.
  int nan_guard(int probs, std::vector<int>& gone) const {
    int isnan = -1, where = -1;
    for (int c : cons_[size_t(probs)]) {
      if (dead_[size_t(c)]) return -1;
      if (n(c).op_type == "IsNaN") isnan = c;
      else if (n(c).op_type == "Where") where = c;
    }
    if (isnan < 0 || where < 0 || n(isnan).inputs.size() != 1 || n(isnan).outputs.size() != 1) return -1;
    const int mask = n(isnan).outputs[0];
    if (private_producer(mask) != isnan || cons_[size_t(mask)][0] != where) return -1;
    const Node& w = n(where);
    float zero = 1.0f;
    if (w.inputs.size() != 3 || w.inputs[0] != mask || w.inputs[2] != probs || !scalar(w.inputs[1], zero) ||
        zero != 0.0f || w.outputs.size() != 1 || !f32(w.outputs[0]) || t(w.outputs[0]).shape != t(probs).shape ||
        t(w.outputs[0]).is_output)
      return -1;
    gone.push_back(isnan);
    gone.push_back(where);
    return w.outputs[0];
  }

  bool try_fuse(int sm) {
    const Node& softmax = n(sm);
    if (softmax.inputs.size() != 1 || softmax.outputs.size() != 1 || !f32(softmax.inputs[0]) ||
        !f32(softmax.outputs[0]))
      return false;
    const Shape scores = t(softmax.inputs[0]).shape;
    const int64_t rank = int64_t(scores.size());
    // Batch dims (at most two: heads and one more) are what the kernels index.
    if (rank < 2 || rank > 4) return false;
    int64_t axis = softmax.get_int("axis", -1);
    if (axis < 0) axis += rank;
    if (axis != rank - 1) return false;
    // The probabilities: read by one MatMul alone, as its left operand, or
    // first through Where(IsNaN(P), 0, P).
    std::vector<int> gone = {sm};
    int probs = softmax.outputs[0];
    if (t(probs).is_output) return false;
    const bool masked_rows_zero = cons_[size_t(probs)].size() == 2;
    if (masked_rows_zero) {
      probs = nan_guard(probs, gone);
      if (probs < 0) return false;
    }
    if (cons_[size_t(probs)].size() != 1) return false;
    const int pv = cons_[size_t(probs)][0];
    const Node& out = n(pv);
    if (dead_[size_t(pv)] || out.op_type != "MatMul" || out.inputs.size() != 2 || out.inputs[0] != probs ||
        out.inputs[1] == probs || out.outputs.size() != 1 || !f32(out.inputs[1]) || !f32(out.outputs[0]))
      return false;
    const int v = out.inputs[1];
    gone.push_back(pv);
    // Back from the scores: [Add mask] <- [scale] <- MatMul.
    float scale = 1.0f;
    int mask = -1, p = -1;
    const int scores_in = softmax.inputs[0];
    const int add = private_producer(scores_in);
    if (add < 0) return false;
    if (n(add).op_type == "Add" && n(add).inputs.size() == 2) {
      // Either operand may be the scores; the other is the mask.
      for (int side = 0; side < 2 && p < 0; ++side) {
        const int x = n(add).inputs[size_t(side)], m = n(add).inputs[size_t(1 - side)];
        if (x < 0 || m < 0 || x == m || t(x).shape != scores || !f32(m) || !broadcasts_to(t(m).shape, scores)) continue;
        std::vector<int> trial = gone;
        float s = 1.0f;
        p = product_of(x, s, trial);
        if (p < 0) continue;
        gone = trial;
        gone.push_back(add);
        scale = s;
        mask = m;
      }
    } else {
      p = product_of(scores_in, scale, gone);
    }
    if (p < 0) return false;
    const Node& qk = n(p);
    if (qk.inputs.size() != 2 || qk.inputs[0] < 0 || qk.inputs[1] < 0 || !f32(qk.inputs[0]) || !f32(qk.inputs[1]))
      return false;
    bool k_transposed = true;
    const int q = query(qk.inputs[0], scale, gone);
    const int k = key(qk.inputs[1], scale, k_transposed, gone);
    if (!std::isfinite(scale) || q == k || q == v || k == v) return false;
    // Shapes: Q [B.., Sq, D], K [B.., Sk, D] (K^T [B.., D, Sk]), V [B.., Sk, Dv], Y [B.., Sq, Dv].
    const Shape &qs = t(q).shape, &ks = t(k).shape, &vs = t(v).shape, &ys = t(out.outputs[0]).shape;
    if (qs.size() != size_t(rank) || ks.size() != size_t(rank) || vs.size() != size_t(rank) || ys.size() != size_t(rank))
      return false;
    const Shape batch(scores.begin(), scores.end() - 2);
    for (const Shape* s : {&qs, &ks, &vs, &ys})
      if (!std::equal(batch.begin(), batch.end(), s->begin())) return false;
    const int64_t Sq = scores[size_t(rank - 2)], Sk = scores[size_t(rank - 1)], D = qs.back(), Dv = vs.back();
    const int64_t k_rows = k_transposed ? ks.back() : ks[size_t(rank - 2)];
    const int64_t k_cols = k_transposed ? ks[size_t(rank - 2)] : ks.back();
    if (qs[size_t(rank - 2)] != Sq || k_rows != Sk || k_cols != D || vs[size_t(rank - 2)] != Sk ||
        ys[size_t(rank - 2)] != Sq || ys.back() != Dv)
      return false;
    if (Sq < 1 || Sk < 1 || D < 1 || Dv < 1 || D > max_head_dim_ || Dv > max_head_dim_) return false;

    Node fused;
    fused.name = out.name + "@attention";
    fused.op_type = "FusedAttention";
    fused.inputs = {q, k, v};
    if (mask >= 0) fused.inputs.push_back(mask);
    fused.outputs = out.outputs;
    fused.decisions.attention = AttentionForm{scale, k_transposed, masked_rows_zero, {}};
    for (int g : gone) dead_[size_t(g)] = 1;
    g_.nodes[size_t(pv)] = std::move(fused);  // at the last node's place: every input exists by then
    dead_[size_t(pv)] = 0;
    return true;
  }

  // numpy broadcast of `s` to `to` without changing `to`.
  static bool broadcasts_to(const Shape& s, const Shape& to) {
    if (s.size() > to.size()) return false;
    for (size_t i = 0; i < s.size(); ++i) {
      const int64_t a = s[s.size() - 1 - i], b = to[to.size() - 1 - i];
      if (a != b && a != 1) return false;
    }
    return true;
  }
};

}  // namespace

int fuse_attention(Graph& g, int64_t max_head_dim) { return AttentionFuser(g, max_head_dim).run(); }

int transposes_into_attention_outputs(Graph& g) {
  const auto consumers = g.consumers();
  std::vector<char> erased(g.nodes.size(), 0);
  int made = 0;
  for (Node& n : g.nodes) {
    if (n.op_type != "FusedAttention" || !n.decisions.attention || !n.decisions.attention->output_perm.empty() ||
        n.outputs.size() != 1 || n.outputs[0] < 0)
      continue;
    const int y = n.outputs[0];
    if (g.tensors[y].is_output || consumers[size_t(y)].size() != 1) continue;
    const int k = consumers[size_t(y)][0];
    const Node& t = g.nodes[size_t(k)];
    if (t.op_type != "Transpose" || t.inputs.size() != 1 || t.outputs.size() != 1 || t.outputs[0] < 0 ||
        g.tensors[t.outputs[0]].dtype != g.tensors[y].dtype)
      continue;
    const int64_t rank = int64_t(g.tensors[y].shape.size());
    const std::vector<int64_t> perm = transpose_perm(t, size_t(rank));
    std::vector<int64_t> sorted = perm;
    std::sort(sorted.begin(), sorted.end());
    bool valid = rank >= 2 && rank <= 4 && int64_t(perm.size()) == rank && perm.back() == rank - 1;
    for (int64_t d = 0; valid && d < rank; ++d) valid = sorted[size_t(d)] == d;
    if (!valid) continue;  // the last axis must stay last: each query's row stays one contiguous store
    n.decisions.attention->output_perm = perm;
    n.outputs[0] = t.outputs[0];
    erased[size_t(k)] = 1;
    ++made;
  }
  if (made > 0) g.erase_nodes(erased);
  return made;
}

}  // namespace texplan
