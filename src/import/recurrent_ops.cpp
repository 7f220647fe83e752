// RNN, GRU and LSTM lowered (rewrites.h): the input's product with W for
// all steps at once, then either one RecurrentSteps node per direction
// (graph.h; one kernel over the steps, lower/recurrent.cpp) or the steps
// unrolled into products and elementwise nodes, which every device runs
// and the optimizer fuses: per step one product of the state with R and
// the cell's elementwise arithmetic, the states Y's slices (concat elision
// writes them in place). Either way a recurrent layer needs its input, Y
// and one step's gates, nothing per step beyond
// (docs/optimizations.md#import-rewrites-srcimportrewritesh).
#include <bit>
#include <map>
#include <string>

#include "import/rewrites.h"
#include "reference/recurrent.h"

namespace texplan {
namespace {

using reference::CellActivation;
using reference::Recurrence;
using reference::RecurrentForm;

class RecurrentLowering {
 public:
  RecurrentLowering(const Graph& g, const Node& n, const RecurrentForm& f, RewriteNodes& r, bool steps_nodes)
      : g_(g), n_(n), f_(f), r_(r), B_(f.batch), H_(f.hidden), per_gate_(f.batch > 1 && f.gates > 1),
        steps_nodes_(steps_nodes) {}

  void run() {
    const int x = steps_major(input(0), {f_.steps, B_, f_.input}, {1, 0, 2});
    if (one_node_per_direction()) return run_steps_nodes(x);
    std::vector<int> pieces(size_t(f_.steps * f_.directions), -1), last_h, last_c;
    for (int64_t d = 0; d < f_.directions; ++d) {
      std::vector<int> xw;  // [T, B, G], or per_gate_ one [T, B, H] per gate
      for (int64_t k = 0; k < (per_gate_ ? f_.gates : 1); ++k)
        xw.push_back(input_products(x, d, per_gate_ ? k : 0, per_gate_ ? 1 : f_.gates));
      int h = initial_state(5, d), c = f_.kind == Recurrence::Lstm ? initial_state(6, d) : -1;
      for (int64_t s = 0; s < f_.steps; ++s) {
        const int64_t t = f_.backward(d) ? f_.steps - 1 - s : s;
        std::vector<int> xt;
        for (int part : xw) xt.push_back(r_.reshape(slice(part, 0, t, t + 1), {B_, g_.tensors[part].shape[2]}));
        step(d, xt, h, c);
        pieces[size_t(t * f_.directions + d)] = h;
      }
      last_h.push_back(h);
      last_c.push_back(c);
    }
    if (wanted(0)) {
      std::vector<int> all;
      for (int p : pieces) all.push_back(r_.reshape(p, {1, B_, H_}));
      const int y = concat(all, {f_.steps * f_.directions, B_, H_});
      output(0, r_.reshape(y, {f_.steps, f_.directions, B_, H_}), {2, 0, 1, 3});
    }
    states_out(last_h, last_c);
  }

 private:
  const Graph& g_;
  const Node& n_;
  const RecurrentForm& f_;
  RewriteNodes& r_;
  const int64_t B_, H_;
  // Several sequences: each gate's products apart (a gate of [B, G] is a
  // strided column block, which a Slice would copy every step). One: all
  // gates in one product, each gate a view of its columns.
  const bool per_gate_;
  const bool steps_nodes_;  // ImportOptions::recurrent_steps_nodes

  std::map<std::string, int> made_;  // constants every step shares, by what they hold

  // The constant `key` names, made by make() the first time only: one copy
  // of R and the cell's parameters per direction, not one per step.
  template <class F> int once(const std::string& key, F make) {
    auto it = made_.find(key);
    if (it == made_.end()) it = made_.emplace(key, make()).first;
    return it->second;
  }
  int scalar(float v) {
    // Keyed by its bits: std::to_string's six decimals would merge near values.
    return once("scalar " + std::to_string(std::bit_cast<uint32_t>(v)), [&] { return r_.float_scalar(v); });
  }

  int input(size_t i) const { return i < n_.inputs.size() ? n_.inputs[i] : -1; }
  bool wanted(size_t k) const { return k < n_.outputs.size() && n_.outputs[k] >= 0; }
  DataType dtype() const { return g_.tensors[input(0)].dtype; }

  int add(const std::string& op, std::vector<int> in, const Shape& shape) {
    const int out = r_.tensor(shape, dtype());
    r_.add(op, std::move(in), {out});
    return out;
  }
  int binary(const char* op, int a, int b) {
    const Shape& sa = g_.tensors[a].shape;
    return add(op, {a, b}, sa.size() >= g_.tensors[b].shape.size() ? sa : g_.tensors[b].shape);
  }
  // a [.., M, K] times a constant b [K, N]: [.., M, N].
  int product(int a, int b) {
    Shape s = g_.tensors[a].shape;
    s.back() = g_.tensors[b].shape.back();
    return add("MatMul", {a, b}, s);
  }
  int slice(int t, int64_t axis, int64_t begin, int64_t end) {
    Shape s = g_.tensors[t].shape;
    s[size_t(axis)] = end - begin;
    return add("Slice", {t, r_.int64_constant({begin}), r_.int64_constant({end}), r_.int64_constant({axis})}, s);
  }
  int transpose(int t, const std::vector<int64_t>& perm) {
    Shape s;
    for (int64_t p : perm) s.push_back(g_.tensors[t].shape[size_t(p)]);
    const int out = add("Transpose", {t}, s);
    r_.back().attrs["perm"] = Attribute::of_ints(perm);
    return out;
  }
  int concat(const std::vector<int>& parts, const Shape& shape) {
    if (parts.size() == 1) return parts[0];
    const int out = add("Concat", parts, shape);
    r_.back().attrs["axis"] = Attribute::of_int(0);
    return out;
  }
  // `t` in steps-major order: itself in layout 0; layout 1's batch-major form
  // transposed by `perm` (a reshape for one sequence).
  int steps_major(int t, const Shape& shape, const std::vector<int64_t>& perm) {
    if (!f_.batch_major || B_ == 1) return r_.reshape(t, shape);
    return transpose(t, perm);
  }
  // Writes `t` (steps-major) as the node's output k, batch-major in layout 1.
  void output(size_t k, int t, const std::vector<int64_t>& perm) {
    if (f_.batch_major && B_ > 1) {
      r_.add("Transpose", {t}, {n_.outputs[k]}).attrs["perm"] = Attribute::of_ints(perm);
      return;
    }
    r_.add("Reshape", {t, r_.int64_constant(g_.tensors[n_.outputs[k]].shape)}, {n_.outputs[k]});
  }

  // Y_h and Y_c from each direction's last state [B, H].
  void states_out(const std::vector<int>& last_h, const std::vector<int>& last_c) {
    for (int k : {1, 2}) {
      if (!wanted(k) || (k == 2 && f_.kind != Recurrence::Lstm)) continue;
      std::vector<int> all;
      for (int s : k == 1 ? last_h : last_c) all.push_back(r_.reshape(s, {1, B_, H_}));
      output(k, concat(all, {f_.directions, B_, H_}), {1, 0, 2});
    }
  }

  // A state small enough for one work-group's local memory takes one
  // RecurrentSteps node per direction (graph.h), whose kernel runs a step in
  // one launch, or all of them in one (lower/recurrent.cpp). Larger batches
  // are products worth a GEMM each step: unrolled. So is GRU's form without
  // linear_before_reset, whose r multiplies h before the product.
  bool one_node_per_direction() const {
    return steps_nodes_ && B_ * H_ <= kMaxRecurrentState && (f_.kind != Recurrence::Gru || f_.linear_before_reset);
  }
  void run_steps_nodes(int x) {
    std::vector<int> ys, last_h, last_c;
    const int64_t G = f_.gates * H_;
    for (int64_t d = 0; d < f_.directions; ++d) {
      std::vector<int> in = {input_products(x, d, 0, f_.gates), transposed_rows(2, d, 0, G), -1, -1, -1, -1};
      if (f_.kind == Recurrence::Gru && input(3) >= 0) in[2] = state_bias(d, H_, 2 * H_);
      if (input(5) >= 0) in[3] = initial_state(5, d);
      if (f_.kind == Recurrence::Lstm && input(6) >= 0) in[4] = initial_state(6, d);
      if (f_.kind == Recurrence::Lstm && input(7) >= 0) in[5] = peepholes(d);
      while (in.back() < 0) in.pop_back();
      const int y = r_.tensor({f_.steps, B_, H_}, dtype());
      std::vector<int> out = {y};
      if (f_.kind == Recurrence::Lstm) out.push_back(r_.tensor({B_, H_}, dtype()));
      Node& n = r_.add("RecurrentSteps", in, out);
      RecurrentCell cell;
      cell.kind = f_.kind;
      cell.activations = f_.activations[size_t(d)];
      cell.reverse = f_.backward(d);
      cell.clip = f_.clip;
      cell.input_forget = f_.input_forget;
      cell.linear_before_reset = f_.linear_before_reset;
      n.decisions.recurrent_cell = cell;
      ys.push_back(r_.reshape(y, {f_.steps, 1, B_, H_}));
      const int64_t last = f_.backward(d) ? 0 : f_.steps - 1;
      last_h.push_back(r_.reshape(slice(y, 0, last, last + 1), {B_, H_}));
      if (f_.kind == Recurrence::Lstm) last_c.push_back(out[1]);
    }
    if (wanted(0)) {
      int y = ys[0];
      if (ys.size() > 1) {
        y = add("Concat", ys, {f_.steps, f_.directions, B_, H_});
        r_.back().attrs["axis"] = Attribute::of_int(1);
      }
      output(0, y, {2, 0, 1, 3});
    }
    states_out(last_h, last_c);
  }
  // LSTM's peepholes (i o f) of direction d: [3 * H].
  int peepholes(int64_t d) {
    const float* p = values(7);
    return constant({3 * H_}, p != nullptr, [&](int64_t e) { return p[d * 3 * H_ + e]; });
  }

  // A float constant of `shape` from value(i) (shape only where the
  // weights were not loaded).
  template <class F> int constant(const Shape& shape, bool known, F value) {
    HostTensor t;
    t.dtype = DataType::Float32;
    t.shape = shape;
    if (known) {
      t = HostTensor(DataType::Float32, shape);
      for (int64_t i = 0; i < t.count(); ++i) t.data<float>()[i] = value(i);
    }
    return r_.constant(std::move(t));
  }
  const float* values(size_t i) const {
    const Tensor& t = g_.tensors[input(i)];
    return t.has_data ? t.value.data<float>() : nullptr;
  }
  // Rows [row0, row0 + rows) of W or R (input i) of direction d, transposed:
  // [cols, rows], the right operand of a product.
  int transposed_rows(size_t i, int64_t d, int64_t row0, int64_t rows) {
    return once("rows " + std::to_string(i) + " " + std::to_string(d) + " " + std::to_string(row0) + " " +
                    std::to_string(rows),
                [&] {
                  const int64_t cols = g_.tensors[input(i)].shape[2], G = f_.gates * H_;
                  const float* v = values(i);
                  return constant({cols, rows}, v != nullptr,
                                  [&](int64_t e) { return v[(d * G + row0 + e % rows) * cols + e / rows]; });
                });
  }

  // X W^T + the biases that do not depend on the state, every step, for
  // gates [first, first + count): [T, B, count * H].
  int input_products(int x, int64_t d, int64_t first, int64_t count) {
    const int64_t G = f_.gates * H_, row0 = first * H_, rows = count * H_;
    const int xw = product(x, transposed_rows(1, d, row0, rows));
    if (input(3) < 0) return xw;
    const float* b = values(3);
    // GRU's Rb_h stays with the state's product under linear_before_reset.
    const int bias = constant({rows}, b != nullptr, [&](int64_t e) {
      const bool inside = f_.kind == Recurrence::Gru && f_.linear_before_reset && row0 + e >= 2 * H_;
      return b[d * 2 * G + row0 + e] + (inside ? 0.0f : b[d * 2 * G + G + row0 + e]);
    });
    return binary("Add", xw, bias);
  }

  // Gate k of x's part of a step.
  int x_gate(const std::vector<int>& xt, int64_t k) { return per_gate_ ? xt[size_t(k)] : gate(xt[0], k); }
  // x's part plus the state's product, gates [first, first + count), one tensor per gate.
  std::vector<int> gate_inputs(const std::vector<int>& xt, int h, int64_t d, int64_t first, int64_t count) {
    std::vector<int> out;
    if (per_gate_) {
      for (int64_t k = first; k < first + count; ++k)
        out.push_back(binary("Add", xt[size_t(k)], product(h, transposed_rows(2, d, k * H_, H_))));
      return out;
    }
    const int x = count == f_.gates ? xt[0] : slice(xt[0], 1, first * H_, (first + count) * H_);
    const int pre = binary("Add", x, product(h, transposed_rows(2, d, first * H_, count * H_)));
    for (int64_t k = 0; k < count; ++k) out.push_back(count == 1 ? pre : gate(pre, k));
    return out;
  }

  // initial_h or initial_c (input i) of direction d as [B, H]; zeros if absent.
  int initial_state(size_t i, int64_t d) {
    if (input(i) < 0) return constant({B_, H_}, true, [](int64_t) { return 0.0f; });
    return r_.reshape(slice(input(i), f_.batch_major ? 1 : 0, d, d + 1), {B_, H_});
  }

  // a(x), x clipped first where it is a gate's input (not LSTM's cell state).
  int activate(CellActivation a, int x, bool gate_input = true) {
    if (f_.clip > 0 && gate_input) {
      x = add("Clip", {x, scalar(-f_.clip), scalar(f_.clip)}, g_.tensors[x].shape);
    }
    const char* op = a == CellActivation::Sigmoid ? "Sigmoid" : a == CellActivation::Tanh ? "Tanh" : "Relu";
    return add(op, {x}, g_.tensors[x].shape);
  }
  int gate(int t, int64_t k) { return slice(t, 1, k * H_, (k + 1) * H_); }
  // LSTM's peephole k (i, o, f) of direction d times the cell state c.
  int peephole(int64_t d, int64_t k, int c) {
    const int weights = once("peephole " + std::to_string(d) + " " + std::to_string(k), [&] {
      const float* p = values(7);
      return constant({H_}, p != nullptr, [&](int64_t e) { return p[d * 3 * H_ + k * H_ + e]; });
    });
    return binary("Mul", c, weights);
  }

  // One step of direction d from x's part of the gates: h (and c) become the new state.
  void step(int64_t d, const std::vector<int>& xt, int& h, int& c) {
    const auto& act = f_.activations[size_t(d)];
    const int64_t G = f_.gates * H_;
    const bool peepholes = f_.kind == Recurrence::Lstm && input(7) >= 0;
    if (f_.kind == Recurrence::Rnn) {
      h = activate(act[0], gate_inputs(xt, h, d, 0, 1)[0]);
    } else if (f_.kind == Recurrence::Lstm) {
      const std::vector<int> pre = gate_inputs(xt, h, d, 0, 4);  // i o f c
      int i_pre = pre[0], f_pre = pre[2], o_pre = pre[1];
      if (peepholes) {
        i_pre = binary("Add", i_pre, peephole(d, 0, c));
        f_pre = binary("Add", f_pre, peephole(d, 2, c));
      }
      const int i = activate(act[0], i_pre);
      const int fg = f_.input_forget ? binary("Sub", scalar(1.0f), i) : activate(act[0], f_pre);
      c = binary("Add", binary("Mul", fg, c), binary("Mul", i, activate(act[1], pre[3])));
      if (peepholes) o_pre = binary("Add", o_pre, peephole(d, 1, c));
      h = binary("Mul", activate(act[0], o_pre), activate(act[2], c, false));
    } else {
      int z_pre, r_pre, rec_h = -1;
      if (f_.linear_before_reset && !per_gate_) {
        // One product for all three gates; Rb_h rides with it.
        int rec = product(h, transposed_rows(2, d, 0, G));
        if (input(3) >= 0) rec = binary("Add", rec, state_bias(d, G, 0));
        const int zr = binary("Add", slice(xt[0], 1, 0, 2 * H_), slice(rec, 1, 0, 2 * H_));
        z_pre = gate(zr, 0), r_pre = gate(zr, 1), rec_h = gate(rec, 2);
      } else {
        const std::vector<int> zr = gate_inputs(xt, h, d, 0, 2);
        z_pre = zr[0], r_pre = zr[1];
        if (f_.linear_before_reset) {
          rec_h = product(h, transposed_rows(2, d, 2 * H_, H_));
          if (input(3) >= 0) rec_h = binary("Add", rec_h, state_bias(d, H_, 2 * H_));
        }
      }
      const int z = activate(act[0], z_pre), rg = activate(act[0], r_pre);
      const int reset = f_.linear_before_reset ? binary("Mul", rg, rec_h)
                                               : product(binary("Mul", rg, h), transposed_rows(2, d, 2 * H_, H_));
      const int candidate = activate(act[1], binary("Add", x_gate(xt, 2), reset));
      h = binary("Add", candidate, binary("Mul", z, binary("Sub", h, candidate)));
    }
  }

  // GRU's Rb under linear_before_reset, rows [row0, row0 + rows) of the
  // state's product: Rb_h where the rows are h's, 0 for z's and r's.
  int state_bias(int64_t d, int64_t rows, int64_t row0) {
    return once("state bias " + std::to_string(d) + " " + std::to_string(row0) + " " + std::to_string(rows), [&] {
      const float* b = values(3);
      const int64_t G = f_.gates * H_;
      return constant({rows}, b != nullptr,
                      [&](int64_t e) { return row0 + e >= 2 * H_ ? b[d * 2 * G + G + row0 + e] : 0.0f; });
    });
  }
};

// Lowered: float32, constant W, R, B and P, every sequence as long as X.
bool lowerable(const Graph& g, const Node& n) {
  if (n.op_type != "RNN" && n.op_type != "GRU" && n.op_type != "LSTM") return false;
  if (n.inputs.size() < 3 || g.tensors[n.inputs[0]].dtype != DataType::Float32) return false;
  for (size_t i : {1, 2, 3, 7})
    if (i < n.inputs.size() && n.inputs[i] >= 0 && !g.tensors[n.inputs[i]].is_constant) return false;
  if (n.inputs.size() > 4 && n.inputs[4] >= 0) {
    const Tensor& lens = g.tensors[n.inputs[4]];
    if (!lens.is_constant || !lens.has_data) return false;
    const Shape& x = g.tensors[n.inputs[0]].shape;
    const int64_t steps = n.get_int("layout", 0) ? x[1] : x[0];
    for (int64_t L : lens.value.as_int64())
      if (L != steps) return false;
  }
  return true;
}

}  // namespace

int lower_recurrent_ops(Graph& g, bool steps_nodes) {
  return replace_nodes(
      g,
      [&](const Node& n, RewriteNodes& r) {
        if (!lowerable(g, n)) return false;
        std::vector<const HostTensor*> shapes;
        std::vector<HostTensor> views(n.inputs.size());
        for (size_t i = 0; i < n.inputs.size(); ++i) {
          if (n.inputs[i] < 0) {
            shapes.push_back(nullptr);
            continue;
          }
          views[i].dtype = g.tensors[n.inputs[i]].dtype;
          views[i].shape = g.tensors[n.inputs[i]].shape;
          shapes.push_back(&views[i]);
        }
        RecurrentForm f;
        try {
          f = reference::recurrent_form(reference::OpContext(n, shapes));
        } catch (const Error&) {
          return false;  // the validator names the fault after import's rewrites
        }
        if (f.steps < 1 || f.batch < 1) return false;  // nothing to unroll: the reference's empty outputs
        RecurrentLowering(g, n, f, r, steps_nodes).run();
        return true;
      },
      "unrolled");
}

}  // namespace texplan
