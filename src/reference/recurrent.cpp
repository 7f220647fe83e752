// RNN, GRU and LSTM (ONNX's recurrent operators, every opset to 14): one
// loop over steps per direction and batch element, in double, with
// sequence_lens (steps past a sequence's length leave zeros in Y and do not
// move its state).
#include "reference/recurrent.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "reference/ops.h"

namespace texplan::reference {

Shape RecurrentForm::y_shape() const {
  return batch_major ? Shape{batch, steps, directions, hidden} : Shape{steps, directions, batch, hidden};
}
Shape RecurrentForm::state_shape() const {
  return batch_major ? Shape{batch, directions, hidden} : Shape{directions, batch, hidden};
}

namespace {

std::string lower(std::string s) {
  for (char& ch : s) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

void require_shape(const OpContext& c, size_t i, const Shape& want, const char* what) {
  if (!c.has_input(i)) return;
  const HostTensor& t = c.input(i);
  if (t.shape != want)
    c.fail(std::string(what) + " must be " + to_string(want) + ", got " + to_string(t.shape));
}

}  // namespace

RecurrentForm recurrent_form(const OpContext& c) {
  RecurrentForm f;
  const std::string& op = c.node.op_type;
  f.kind = op == "RNN" ? Recurrence::Rnn : op == "GRU" ? Recurrence::Gru : Recurrence::Lstm;
  f.gates = f.kind == Recurrence::Rnn ? 1 : f.kind == Recurrence::Gru ? 3 : 4;
  const std::string direction = c.choice("direction", {"forward", "reverse", "bidirectional"});
  f.directions = direction == "bidirectional" ? 2 : 1;
  f.reverse = direction == "reverse";
  f.batch_major = c.node.get_int("layout", 0) != 0;
  f.clip = c.node.get_float("clip", 0.0f);
  if (c.node.attrs.count("clip") && !(f.clip > 0.0f)) c.fail("clip must be positive, got " + std::to_string(f.clip));
  f.input_forget = f.kind == Recurrence::Lstm && c.node.get_int("input_forget", 0) != 0;
  f.linear_before_reset = f.kind == Recurrence::Gru && c.node.get_int("linear_before_reset", 0) != 0;
  if (c.node.attrs.count("activation_alpha") || c.node.attrs.count("activation_beta"))
    c.fail("activation_alpha and activation_beta are not supported (only Sigmoid, Tanh and Relu cells)");

  const size_t per_direction = f.kind == Recurrence::Rnn ? 1 : f.kind == Recurrence::Gru ? 2 : 3;
  std::vector<std::string> names = c.node.get_strings("activations");
  if (names.empty()) {
    for (int64_t d = 0; d < f.directions; ++d) {
      if (f.kind == Recurrence::Rnn) names.push_back("Tanh");
      else if (f.kind == Recurrence::Gru) names.insert(names.end(), {"Sigmoid", "Tanh"});
      else names.insert(names.end(), {"Sigmoid", "Tanh", "Tanh"});
    }
  }
  if (names.size() != per_direction * size_t(f.directions))
    c.fail("activations lists " + std::to_string(names.size()) + " functions, expected " +
           std::to_string(per_direction * size_t(f.directions)));
  f.activations.assign(size_t(f.directions), {});
  for (size_t k = 0; k < names.size(); ++k) {
    const std::string a = lower(names[k]);
    CellActivation act;
    if (a == "sigmoid") act = CellActivation::Sigmoid;
    else if (a == "tanh") act = CellActivation::Tanh;
    else if (a == "relu") act = CellActivation::Relu;
    else c.fail("activation '" + names[k] + "' is not supported (Sigmoid, Tanh, Relu)");
    f.activations[k / per_direction].push_back(act);
  }

  const HostTensor &x = c.input(0), &w = c.input(1), &r = c.input(2);
  if (!is_float(x.dtype)) c.fail("X must be a float tensor, got " + std::string(to_string(x.dtype)));
  require_same_dtype(c, x, w);
  require_same_dtype(c, x, r);
  if (x.shape.size() != 3) c.fail("X must have rank 3, got " + to_string(x.shape));
  f.steps = x.shape[f.batch_major ? 1 : 0];
  f.batch = x.shape[f.batch_major ? 0 : 1];
  f.input = x.shape[2];
  if (r.shape.size() != 3) c.fail("R must have rank 3, got " + to_string(r.shape));
  f.hidden = r.shape[2];
  const int64_t declared = c.node.get_int("hidden_size", f.hidden);
  if (declared != f.hidden) c.fail("hidden_size " + std::to_string(declared) + " differs from R's " + to_string(r.shape));
  if (f.hidden < 1) c.fail("the hidden size must be positive, got " + std::to_string(f.hidden));
  const int64_t G = f.gates * f.hidden, D = f.directions;
  require_shape(c, 1, {D, G, f.input}, "W");
  require_shape(c, 2, {D, G, f.hidden}, "R");
  require_shape(c, 3, {D, 2 * G}, "B");
  require_shape(c, 4, {f.batch}, "sequence_lens");
  if (c.has_input(4) && c.input(4).dtype != DataType::Int32 && c.input(4).dtype != DataType::Int64)
    c.fail("sequence_lens must be int32");
  require_shape(c, 5, f.state_shape(), "initial_h");
  if (f.kind == Recurrence::Lstm) {
    require_shape(c, 6, f.state_shape(), "initial_c");
    require_shape(c, 7, {D, 3 * f.hidden}, "P");
  }
  for (size_t i = 3; i < c.input_count(); ++i)
    if (i != 4 && c.has_input(i)) require_same_dtype(c, x, c.input(i));
  return f;
}

namespace {

double activate(CellActivation a, double v) {
  switch (a) {
    case CellActivation::Sigmoid: return 1.0 / (1.0 + std::exp(-v));
    case CellActivation::Tanh: return std::tanh(v);
    case CellActivation::Relu: return v > 0 ? v : 0.0;
  }
  return v;
}

// One direction's cell, as both operators run it: RNN, GRU and LSTM from
// their ONNX node, RecurrentSteps (graph.h) from its input products.
struct Cell {
  Recurrence kind = Recurrence::Lstm;
  std::vector<CellActivation> act;
  double clip = 0;
  bool input_forget = false, linear_before_reset = false;
  int64_t H = 0;
  const double* R = nullptr;    // [G*H, H]
  const double* Rbh = nullptr;  // GRU's Rb_h [H]
  const double* P = nullptr;    // LSTM's peepholes [3*H], or none

  double clipped(double v) const { return clip > 0 ? std::clamp(v, -clip, clip) : v; }

  // One step of one sequence: h (and c) from the step's input part of the
  // gates, xg [G*H] (x W^T + Wb, + Rb but GRU's Rb_h).
  void step(const double* xg, std::vector<double>& hs, std::vector<double>& cs) const {
    const int64_t G = gate_count(kind) * H;
    std::vector<double> gates(static_cast<size_t>(G)), hn(static_cast<size_t>(H));
    for (int64_t g = 0; g < G; ++g) {
      double v = xg[g];
      if (kind != Recurrence::Gru || g < 2 * H)  // GRU's h gate takes the state's product below
        for (int64_t k = 0; k < H; ++k) v += hs[size_t(k)] * R[g * H + k];
      gates[size_t(g)] = v;
    }
    if (kind == Recurrence::Rnn) {
      for (int64_t j = 0; j < H; ++j) hn[size_t(j)] = activate(act[0], clipped(gates[size_t(j)]));
    } else if (kind == Recurrence::Gru) {
      std::vector<double> z(static_cast<size_t>(H)), rr(static_cast<size_t>(H));
      for (int64_t j = 0; j < H; ++j) {
        z[size_t(j)] = activate(act[0], clipped(gates[size_t(j)]));
        rr[size_t(j)] = activate(act[0], clipped(gates[size_t(H + j)]));
      }
      for (int64_t j = 0; j < H; ++j) {
        const double* Rh = R + (2 * H + j) * H;
        double hr = 0;
        if (linear_before_reset) {
          for (int64_t k = 0; k < H; ++k) hr += hs[size_t(k)] * Rh[k];
          hr = rr[size_t(j)] * (hr + Rbh[j]);
        } else {
          for (int64_t k = 0; k < H; ++k) hr += rr[size_t(k)] * hs[size_t(k)] * Rh[k];
          hr += Rbh[j];
        }
        const double h = activate(act[1], clipped(gates[size_t(2 * H + j)] + hr));
        hn[size_t(j)] = (1.0 - z[size_t(j)]) * h + z[size_t(j)] * hs[size_t(j)];
      }
    } else {
      for (int64_t j = 0; j < H; ++j) {
        const double cp = cs[size_t(j)];
        const double i = activate(act[0], clipped(gates[size_t(j)] + (P ? P[j] * cp : 0.0)));
        const double fg =
            input_forget ? 1.0 - i : activate(act[0], clipped(gates[size_t(2 * H + j)] + (P ? P[2 * H + j] * cp : 0.0)));
        const double cc = activate(act[1], clipped(gates[size_t(3 * H + j)]));
        const double cn = fg * cp + i * cc;
        const double o = activate(act[0], clipped(gates[size_t(H + j)] + (P ? P[H + j] * cn : 0.0)));
        cs[size_t(j)] = cn;
        hn[size_t(j)] = o * activate(act[2], cn);
      }
    }
    hs = hn;
  }
};

HostTensor to_tensor(const OpContext& c, DataType dt, const std::vector<double>& v, const Shape& s) {
  HostTensor out(dt, s);
  dispatch_float(c, dt, [&](auto tag) {
    using T = decltype(tag);
    for (size_t k = 0; k < v.size(); ++k) out.data<T>()[k] = T(v[k]);
  });
  return out;
}

Outputs Recurrent(const OpContext& c) {
  const RecurrentForm f = recurrent_form(c);
  const int64_t T = f.steps, Bn = f.batch, I = f.input, H = f.hidden, G = f.gates * H, D = f.directions;
  const std::vector<double> x = c.doubles(c.input(0)), w = c.doubles(c.input(1)), r = c.doubles(c.input(2));
  const std::vector<double> bias = c.has_input(3) ? c.doubles(c.input(3)) : std::vector<double>(size_t(D * 2 * G), 0.0);
  const std::vector<double> h0 = c.has_input(5) ? c.doubles(c.input(5)) : std::vector<double>();
  const bool lstm = f.kind == Recurrence::Lstm;
  const std::vector<double> c0 = lstm && c.has_input(6) ? c.doubles(c.input(6)) : std::vector<double>();
  const std::vector<double> peep = lstm && c.has_input(7) ? c.doubles(c.input(7)) : std::vector<double>();
  std::vector<int64_t> lens(size_t(Bn), T);
  if (c.has_input(4)) {
    lens = c.int_values(4);
    for (int64_t L : lens)
      if (L < 0 || L > T) c.fail("sequence_lens holds " + std::to_string(L) + ", outside 0.." + std::to_string(T));
  }
  // Element offsets in X, Y and the states for both layouts.
  auto xi = [&](int64_t t, int64_t b) { return (f.batch_major ? b * T + t : t * Bn + b) * I; };
  auto yi = [&](int64_t t, int64_t d, int64_t b) { return (f.batch_major ? (b * T + t) * D + d : (t * D + d) * Bn + b) * H; };
  auto si = [&](int64_t d, int64_t b) { return (f.batch_major ? b * D + d : d * Bn + b) * H; };

  std::vector<double> y(static_cast<size_t>(T * D * Bn * H), 0.0), yh(static_cast<size_t>(D * Bn * H), 0.0),
      yc(static_cast<size_t>(D * Bn * H), 0.0);
  std::vector<double> xg(static_cast<size_t>(G)), hs(static_cast<size_t>(H)), cs(static_cast<size_t>(H));
  for (int64_t d = 0; d < D; ++d) {
    const double* W = w.data() + d * G * I;
    const double* Wb = bias.data() + d * 2 * G;
    const double* Rb = Wb + G;
    const Cell cell{f.kind, f.activations[size_t(d)], double(f.clip), f.input_forget, f.linear_before_reset, H,
                    r.data() + d * G * H, Rb + 2 * H, peep.empty() ? nullptr : peep.data() + d * 3 * H};
    for (int64_t b = 0; b < Bn; ++b) {
      for (int64_t j = 0; j < H; ++j) {
        hs[size_t(j)] = h0.empty() ? 0.0 : h0[size_t(si(d, b) + j)];
        cs[size_t(j)] = c0.empty() ? 0.0 : c0[size_t(si(d, b) + j)];
      }
      const int64_t L = lens[size_t(b)];
      for (int64_t s = 0; s < L; ++s) {
        const int64_t t = f.backward(d) ? L - 1 - s : s;
        const double* xt = x.data() + xi(t, b);
        for (int64_t g = 0; g < G; ++g) {
          double v = Wb[g] + (f.kind == Recurrence::Gru && g >= 2 * H ? 0.0 : Rb[g]);
          for (int64_t k = 0; k < I; ++k) v += xt[k] * W[g * I + k];
          xg[size_t(g)] = v;
        }
        cell.step(xg.data(), hs, cs);
        for (int64_t j = 0; j < H; ++j) y[size_t(yi(t, d, b) + j)] = hs[size_t(j)];
      }
      for (int64_t j = 0; j < H; ++j) {
        yh[size_t(si(d, b) + j)] = hs[size_t(j)];
        yc[size_t(si(d, b) + j)] = cs[size_t(j)];
      }
    }
  }
  const DataType dt = c.input(0).dtype;
  Outputs out;
  out.push_back(to_tensor(c, dt, y, f.y_shape()));
  out.push_back(to_tensor(c, dt, yh, f.state_shape()));
  if (lstm) out.push_back(to_tensor(c, dt, yc, f.state_shape()));
  out.resize(c.output_count());
  return out;
}

// RecurrentSteps (graph.h RecurrentCell): inputs XW [T, B, G*H], R^T [H, G*H],
// Rb_h [H], h0 [B, H], c0 [B, H], P [3*H]; outputs Y [T, B, H], last c [B, H].
Outputs RecurrentSteps(const OpContext& c) {
  const RecurrentCell* rc = recurrent_cell(c.node);
  if (!rc) c.fail("has no recurrent cell");
  const HostTensor& xw = c.input(0);
  if (xw.shape.size() != 3 || !c.has_input(1) || c.input(1).shape.size() != 2)
    c.fail("XW must be [T, B, G*H] and R^T [H, G*H], got " + to_string(xw.shape));
  const int64_t T = xw.shape[0], Bn = xw.shape[1], H = c.input(1).shape[0], G = gate_count(rc->kind) * H;
  const size_t activations = rc->kind == Recurrence::Rnn ? 1 : rc->kind == Recurrence::Gru ? 2 : 3;
  if (rc->activations.size() != activations) c.fail("its cell lists the wrong number of activations");
  if (rc->kind == Recurrence::Gru && !rc->linear_before_reset) c.fail("a GRU cell must be linear_before_reset");
  require_shape(c, 0, {T, Bn, G}, "XW");
  require_shape(c, 1, {H, G}, "R^T");
  require_shape(c, 2, {H}, "Rb_h");
  require_shape(c, 3, {Bn, H}, "initial_h");
  require_shape(c, 4, {Bn, H}, "initial_c");
  require_shape(c, 5, {3 * H}, "P");
  const std::vector<double> x = c.doubles(xw), rt = c.doubles(c.input(1));
  std::vector<double> r(rt.size());  // R [G*H, H], as the cell reads it
  for (int64_t k = 0; k < H; ++k)
    for (int64_t g = 0; g < G; ++g) r[size_t(g * H + k)] = rt[size_t(k * G + g)];
  auto optional = [&](size_t i, int64_t n) {
    return c.has_input(i) ? c.doubles(c.input(i)) : std::vector<double>(size_t(n), 0.0);
  };
  const std::vector<double> rbh = optional(2, H), h0 = optional(3, Bn * H), c0 = optional(4, Bn * H);
  const std::vector<double> peep = c.has_input(5) ? c.doubles(c.input(5)) : std::vector<double>();
  const Cell cell{rc->kind, rc->activations, double(rc->clip), rc->input_forget, rc->linear_before_reset, H,
                  r.data(), rbh.data(), peep.empty() ? nullptr : peep.data()};
  std::vector<double> y(static_cast<size_t>(T * Bn * H)), last_c(static_cast<size_t>(Bn * H)),
      hs(static_cast<size_t>(H)), cs(static_cast<size_t>(H));
  for (int64_t b = 0; b < Bn; ++b) {
    std::copy_n(h0.begin() + b * H, H, hs.begin());
    std::copy_n(c0.begin() + b * H, H, cs.begin());
    for (int64_t s = 0; s < T; ++s) {
      const int64_t t = rc->reverse ? T - 1 - s : s;
      cell.step(x.data() + (t * Bn + b) * G, hs, cs);
      std::copy(hs.begin(), hs.end(), y.begin() + (t * Bn + b) * H);
    }
    std::copy(cs.begin(), cs.end(), last_c.begin() + b * H);
  }
  Outputs out;
  out.push_back(to_tensor(c, xw.dtype, y, {T, Bn, H}));
  if (rc->kind == Recurrence::Lstm) out.push_back(to_tensor(c, xw.dtype, last_c, {Bn, H}));
  out.resize(c.output_count());
  return out;
}

}  // namespace

void register_recurrent(OpTable& t) {
  const std::vector<std::string> common = {"activation_alpha", "activation_beta", "activations", "clip", "direction",
                                           "hidden_size", "layout"};
  auto with = [&](std::vector<std::string> more) {
    more.insert(more.end(), common.begin(), common.end());
    return more;
  };
  t["RNN"] = {Recurrent, common};
  t["GRU"] = {Recurrent, with({"linear_before_reset"})};
  t["LSTM"] = {Recurrent, with({"input_forget"})};
  t["RecurrentSteps"] = {RecurrentSteps, {}};
}

}  // namespace texplan::reference
