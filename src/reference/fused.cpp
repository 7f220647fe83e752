// Fused operators of the optimizer (docs/fused-ops.md): FusedConv,
// FusedConvMaxPool, FusedMlp, FusedMatMul, FusedAttention, FusedElementwise, FusedGather. Each runs its unfused core (Conv, MatMul, Gather)
// through the reference table, then the epilogue program elementwise, so the
// fused result means exactly what the unfused ONNX ops mean.
#include <algorithm>

#include "graph/epilogue.h"
#include "reference/ops.h"

namespace texplan::reference {
namespace {

Epilogue program_of(const OpContext& c) {
  try {
    return Epilogue::parse(c.node);
  } catch (const Error& e) {
    throw OpError(e.what());  // already names the node
  }
}

// Checks that the program reads no operand beyond x0..x<k>.
void check_operands(const OpContext& c, const Epilogue& e, size_t extra_inputs) {
  if (size_t(e.inputs()) > extra_inputs + 1)
    c.fail("program reads x" + std::to_string(e.inputs() - 1) + " but the node has " + std::to_string(extra_inputs) +
           " epilogue inputs");
}

// y[i] = program(y[i], E1[i], ..., Ek[i]); each Ej already has y's shape.
void apply_epilogue(const Epilogue& e, HostTensor& y, const std::vector<HostTensor>& extra) {
  if (e.code.empty()) return;
  float* py = y.data<float>();
  std::vector<float> x(extra.size() + 1);
  for (int64_t i = 0; i < y.count(); ++i) {
    x[0] = py[i];
    for (size_t j = 0; j < extra.size(); ++j) x[j + 1] = extra[j].data<float>()[i];
    py[i] = e.eval(x.data());
  }
}

// The program over y with node inputs `first`.. as E1.., each broadcast
// (numpy) to y's shape.
void apply_broadcast_epilogue(const OpContext& c, const Epilogue& e, size_t first, HostTensor& y,
                              size_t end = SIZE_MAX) {
  std::vector<HostTensor> extra;
  for (size_t j = first; j < std::min(end, c.input_count()); ++j) {
    const HostTensor& t = c.input(j);
    require_dtype(c, t, DataType::Float32, "epilogue input");
    if (broadcast_shapes(c, {t.shape, y.shape}) != y.shape)
      c.fail("epilogue input " + std::to_string(j - first + 1) + " of shape " + to_string(t.shape) +
             " does not broadcast to Y's " + to_string(y.shape));
    extra.push_back(broadcast_to(c, t, y.shape));
  }
  check_operands(c, e, extra.size());
  apply_epilogue(e, y, extra);
}

// A node like `n` with another op type, only the named attributes and the
// given inputs (the unfused core).
Node core_node(const Node& n, const std::string& op, const std::vector<std::string>& keep, size_t input_count) {
  Node core;
  core.name = n.name;
  core.op_type = op;
  for (const auto& k : keep)
    if (n.has(k)) core.attrs[k] = n.attrs.at(k);
  core.inputs.assign(n.inputs.begin(), n.inputs.begin() + std::min(input_count, n.inputs.size()));
  core.outputs = n.outputs;
  return core;
}

// `x` with channel program `p` applied at every element, its operands the
// inputs from `first` on (one value per channel each); `what` names it in
// errors.
HostTensor channel_program_applied(const OpContext& c, const HostTensor& x, const ChannelProgram& p, size_t first,
                                   const std::string& what) {
  Epilogue e;
  try {
    e = Epilogue::parse(p.program);
  } catch (const Error& err) {
    c.fail(what + ": " + err.what());
  }
  if (e.inputs() > p.operands + 1)
    c.fail(what + " reads x" + std::to_string(e.inputs() - 1) + " but has " + std::to_string(p.operands) +
           " operands");
  if (x.shape.size() < 3) c.fail(what + " over a rank-" + std::to_string(x.shape.size()) + " X");
  const int64_t n = x.count(), C = x.shape[1], inner = n / std::max<int64_t>(1, x.shape[0] * C);
  std::vector<std::vector<float>> v;
  const int read = p.gate ? p.operands - 1 : p.operands;  // operands that are inputs
  for (int j = 0; j < read; ++j) {
    if (!c.has_input(first + size_t(j))) c.fail(what + " operand " + std::to_string(j + 1) + " missing");
    const HostTensor& t = c.input(first + size_t(j));
    require_dtype(c, t, DataType::Float32, (what + " operand").c_str());
    if (t.count() != C)
      c.fail(what + " operand " + std::to_string(j + 1) + " has " + std::to_string(t.count()) + " values for " +
             std::to_string(C) + " channels");
    v.push_back(t.as_float());
  }
  if (p.gate) {
    // ChannelProgram::gate: Vk[c] = G(sum_j W[c, j] h[j] + b[c]).
    const size_t at = first + size_t(read);
    for (size_t i = at; i < at + (p.gate->bias ? 3 : 2); ++i)
      if (!c.has_input(i)) c.fail(what + ": the gate's inputs missing");
    const HostTensor &h = c.input(at), &w = c.input(at + 1);
    for (const HostTensor* t : {&h, &w}) require_dtype(c, *t, DataType::Float32, (what + " gate").c_str());
    const int64_t J = h.count();
    if (J < 1 || w.count() != C * J)
      c.fail(what + ": a gate of " + std::to_string(J) + " inputs has " + std::to_string(w.count()) +
             " weights for " + std::to_string(C) + " channels");
    std::vector<float> b(static_cast<size_t>(C), 0.0f);
    if (p.gate->bias) {
      const HostTensor& bt = c.input(at + 2);
      require_dtype(c, bt, DataType::Float32, (what + " gate bias").c_str());
      if (bt.count() != C) c.fail(what + ": a gate bias of " + std::to_string(bt.count()) + " values");
      b = bt.as_float();
    }
    Epilogue g;
    try {
      g = Epilogue::parse(p.gate->program);
    } catch (const Error& err) {
      c.fail(what + " gate: " + err.what());
    }
    if (g.inputs() > 1) c.fail(what + " gate reads x" + std::to_string(g.inputs() - 1) + "; only x0 is bound");
    const std::vector<float> hv = h.as_float(), wv = w.as_float();
    std::vector<float> gate(static_cast<size_t>(C));
    for (int64_t ch = 0; ch < C; ++ch) {
      float s = b[size_t(ch)];
      for (int64_t j = 0; j < J; ++j) s += wv[size_t(ch * J + j)] * hv[size_t(j)];
      gate[size_t(ch)] = g.eval(&s);
    }
    v.push_back(std::move(gate));
  }
  HostTensor y = x;
  float* py = y.data<float>();
  std::vector<float> args(size_t(p.operands) + 1);
  for (int64_t i = 0; i < n; ++i) {
    const size_t ch = size_t((i / inner) % C);
    args[0] = py[i];
    for (size_t j = 0; j < v.size(); ++j) args[j + 1] = v[j][ch];
    py[i] = e.eval(args.data());
  }
  return y;
}

const std::vector<std::string> kConvAttrs = {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"};

Outputs FusedConv(const OpContext& c) {
  const Epilogue e = program_of(c);
  if (c.input_count() < 2) c.fail("needs X and W");
  require_dtype(c, c.input(0), DataType::Float32, "X");
  // channel_scaled(): the last input scales X's channels first, the
  // channel program "Mul x0 x1"; channel_program(): the last inputs are a
  // program's per-channel operands.
  const bool scaled = channel_scaled(c.node);
  const std::optional<ChannelProgram> cp =
      scaled ? ChannelProgram{{"Mul x0 x1"}, 1, std::nullopt, std::nullopt} : channel_program(c.node);
  const std::string what = scaled ? "channel scale" : "channel program";
  if (cp && (cp->operands < (cp->gate ? 1 : 0) || c.input_count() < 3 + cp->trailing_inputs()))
    c.fail(what + " of " + std::to_string(cp->operands) + " operands without its inputs");
  const size_t end = c.input_count() - (cp ? cp->trailing_inputs() : 0);
  HostTensor x_scaled, sums;
  if (cp && cp->depthwise) {
    // ChannelProgram::depthwise: X is the depthwise conv of input 0, the
    // program over its sums.
    const ChannelDepthwise& d = *cp->depthwise;
    const HostTensor& x = c.input(0);
    if (x.shape.size() != 4) c.fail("depthwise input over a rank-" + std::to_string(x.shape.size()) + " X");
    Node dw;
    dw.name = c.node.name;
    dw.op_type = "Conv";
    dw.attrs["group"] = Attribute::of_int(x.shape[1]);
    dw.attrs["kernel_shape"] = Attribute::of_ints({d.kh, d.kw});
    dw.attrs["strides"] = Attribute::of_ints({d.sh, d.sw});
    dw.attrs["dilations"] = Attribute::of_ints({d.dh, d.dw});
    dw.attrs["pads"] = Attribute::of_ints({d.pads[0], d.pads[1], d.pads[2], d.pads[3]});
    const HostTensor* none = nullptr;
    sums = evaluate(dw, {&x, &c.input(c.input_count() - 1), none})[0];
  }
  if (cp) x_scaled = channel_program_applied(c, cp->depthwise ? sums : c.input(0), *cp, end, what);
  std::vector<const HostTensor*> core_in = {cp ? &x_scaled : &c.input(0), &c.input(1),
                                            c.has_input(2) ? &c.input(2) : nullptr};
  Outputs out = evaluate(core_node(c.node, "Conv", kConvAttrs, 3), core_in);
  HostTensor& y = out[0];
  std::vector<HostTensor> extra;
  for (size_t j = 3; j < end; ++j) {
    const HostTensor& t = c.input(j);
    require_dtype(c, t, DataType::Float32, "epilogue input");
    if (t.shape != y.shape)
      c.fail("epilogue input " + std::to_string(j - 2) + " has shape " + to_string(t.shape) + ", Y has " +
             to_string(y.shape));
    extra.push_back(t);
  }
  check_operands(c, e, extra.size());
  apply_epilogue(e, y, extra);
  if (const std::optional<ShuffledOutput> s = shuffled_output(c.node)) {
    // Y's channel 2ch + slot is the conv's channel ch, 2ch + 1 - slot the
    // last epilogue input's (graph.h ShuffledOutput).
    if (extra.empty() || y.shape.size() != 4 || (s->slot != 0 && s->slot != 1))
      c.fail("a shuffled output needs a 4D conv and the other half as its last epilogue input");
    const HostTensor& other = extra.back();
    const int64_t N = y.shape[0], C = y.shape[1], plane = y.shape[2] * y.shape[3];
    HostTensor shuffled(DataType::Float32, {N, 2 * C, y.shape[2], y.shape[3]});
    const float *conv = y.data<float>(), *half = other.data<float>();
    float* to = shuffled.data<float>();
    for (int64_t n = 0; n < N; ++n)
      for (int64_t ch = 0; ch < C; ++ch) {
        const int64_t from = (n * C + ch) * plane;
        std::copy(conv + from, conv + from + plane, to + (n * 2 * C + 2 * ch + s->slot) * plane);
        std::copy(half + from, half + from + plane, to + (n * 2 * C + 2 * ch + 1 - s->slot) * plane);
      }
    out[0] = std::move(shuffled);
  }
  return out;
}

// FusedConvMaxPool: Y = MaxPool(program(conv(X, W) + B)), pool attributes
// under a pool_ prefix; no epilogue inputs.
Outputs FusedConvMaxPool(const OpContext& c) {
  if (c.input_count() > 3) c.fail("takes no epilogue inputs");
  Node conv = core_node(c.node, "FusedConv", kConvAttrs, 3);
  if (c.node.has("program")) conv.attrs["program"] = c.node.attrs.at("program");
  std::vector<const HostTensor*> in;
  for (size_t i = 0; i < c.input_count(); ++i) in.push_back(c.has_input(i) ? &c.input(i) : nullptr);
  Outputs y = evaluate(conv, in);
  Node pool;
  pool.name = c.node.name;
  pool.op_type = "MaxPool";
  pool.outputs = {c.node.outputs.empty() ? 0 : c.node.outputs[0]};
  for (const auto& [name, value] : c.node.attrs)
    if (name.rfind("pool_", 0) == 0) pool.attrs[name.substr(5)] = value;
  return evaluate(pool, {&y[0]});
}

// FusedMlp: Y = program(W2 h + B2), h = hidden_program(W1 X + B1): two 1x1
// FusedConvs, the first's program under `hidden_program`.
Outputs FusedMlp(const OpContext& c) {
  if (!c.has_input(0) || !c.has_input(1) || !c.has_input(3)) c.fail("needs X, W1 and W2");
  Node layer;
  layer.name = c.node.name;
  layer.op_type = "FusedConv";
  layer.inputs = {0, 1, 2};
  layer.outputs = {3};
  if (c.node.has("hidden_program")) layer.attrs["program"] = c.node.attrs.at("hidden_program");
  const Outputs h = evaluate(layer, {&c.input(0), &c.input(1), c.has_input(2) ? &c.input(2) : nullptr});
  layer.attrs.erase("program");
  if (c.node.has("program")) layer.attrs["program"] = c.node.attrs.at("program");
  return evaluate(layer, {&h[0], &c.input(3), c.has_input(4) ? &c.input(4) : nullptr});
}

Outputs FusedMatMul(const OpContext& c) {
  const Epilogue e = program_of(c);
  if (c.input_count() < 2) c.fail("needs A and B");
  HostTensor held_a, held_b;
  const HostTensor &a = product_operand(c, 0, held_a), &b0 = product_operand(c, 1, held_b);
  require_dtype(c, a, DataType::Float32, "A");
  const bool trans_b = c.node.get_int("transB", 0) != 0;
  HostTensor b_t;
  if (trans_b) {
    if (b0.shape.size() != 2) c.fail("transB needs a 2-D B, got " + to_string(b0.shape));
    b_t = transpose(c, b0, {1, 0});
  }
  Outputs out = evaluate(core_node(c.node, "MatMul", {}, 2), {&a, trans_b ? &b_t : &b0});
  HostTensor& y = out[0];
  const std::optional<RowNorm> rn = row_norm(c.node);
  if (rn && (c.input_count() < 4 || !c.has_input(c.input_count() - 2))) c.fail("a row normalization without its gamma");
  const size_t end = c.input_count() - (rn ? 2 : 0);
  apply_broadcast_epilogue(c, e, 2, y, end);
  if (rn) {
    // LayerNormalization over the last axis (graph.h RowNorm), gamma and
    // beta the last two inputs.
    Node norm = core_node(c.node, "LayerNormalization", {}, 0);
    norm.attrs["axis"] = Attribute::of_int(-1);
    norm.attrs["epsilon"] = Attribute::of_float(rn->epsilon);
    const HostTensor* beta = c.has_input(end + 1) ? &c.input(end + 1) : nullptr;
    y = evaluate(norm, {&y, &c.input(end), beta})[0];
  }
  return out;
}

// FusedAttention (attention_form(), graph.h): softmax(scale Q K^T + M) V
// over the last two axes, through the unfused MatMul and Softmax; Q, K and V
// read through their operand views where they have them, Y transposed by
// its output_perm where it has one.
Outputs FusedAttention(const OpContext& c) {
  const std::optional<AttentionForm> form = attention_form(c.node);
  if (!form) c.fail("FusedAttention without its form (scale and K layout)");
  if (c.input_count() < 3 || c.input_count() > 4) c.fail("needs Q, K, V and an optional mask");
  HostTensor held_q, held_k, held_v;
  const HostTensor &q = product_operand(c, 0, held_q), &k = product_operand(c, 1, held_k),
                   &v = product_operand(c, 2, held_v);
  require_dtype(c, q, DataType::Float32, "Q");
  require_dtype(c, k, DataType::Float32, "K");
  require_dtype(c, v, DataType::Float32, "V");
  const size_t rank = q.shape.size();
  if (rank < 2 || k.shape.size() != rank || v.shape.size() != rank)
    c.fail("Q, K and V must have one rank of 2 or more, got " + to_string(q.shape) + ", " + to_string(k.shape) +
           ", " + to_string(v.shape));
  HostTensor k_t;
  if (!form->k_transposed) {
    std::vector<int64_t> perm(rank);
    for (size_t d = 0; d < rank; ++d) perm[d] = int64_t(d);
    std::swap(perm[rank - 2], perm[rank - 1]);
    k_t = transpose(c, k, perm);
  }
  const Node product = core_node(c.node, "MatMul", {}, 2);
  Outputs s = evaluate(product, {&q, form->k_transposed ? &k : &k_t});
  HostTensor& scores = s[0];
  float* ps = scores.data<float>();
  for (int64_t i = 0; i < scores.count(); ++i) ps[i] *= form->scale;
  if (c.has_input(3)) {
    const HostTensor& m = c.input(3);
    require_dtype(c, m, DataType::Float32, "mask");
    if (broadcast_shapes(c, {m.shape, scores.shape}) != scores.shape)
      c.fail("mask of shape " + to_string(m.shape) + " does not broadcast to the scores' " + to_string(scores.shape));
    const HostTensor mb = broadcast_to(c, m, scores.shape);
    const float* pm = mb.data<float>();
    for (int64_t i = 0; i < scores.count(); ++i) ps[i] += pm[i];
  }
  Node softmax = core_node(c.node, "Softmax", {}, 1);
  softmax.attrs["axis"] = Attribute::of_int(-1);
  Outputs p = evaluate(softmax, {&scores});
  if (form->masked_rows_zero) {
    float* pp = p[0].data<float>();
    for (int64_t i = 0; i < p[0].count(); ++i)
      if (std::isnan(pp[i])) pp[i] = 0.0f;
  }
  Outputs y = evaluate(product, {&p[0], &v});
  if (!form->output_perm.empty()) {
    if (form->output_perm.size() != rank) c.fail("output_perm of another rank than Y's");
    y[0] = transpose(c, y[0], form->output_perm);
  }
  return y;
}

// FusedGather: the Gather, then the program over its output (x0) and the
// epilogue inputs 2.., each broadcast to it.
Outputs FusedGather(const OpContext& c) {
  const Epilogue e = program_of(c);
  if (c.input_count() < 2) c.fail("needs data and indices");
  require_dtype(c, c.input(0), DataType::Float32, "data");
  Outputs out = evaluate(core_node(c.node, "Gather", {"axis"}, 2), {&c.input(0), &c.input(1)});
  HostTensor& y = out[0];
  apply_broadcast_epilogue(c, e, 2, y);
  return out;
}

Outputs FusedElementwise(const OpContext& c) {
  const Epilogue e = program_of(c);
  if (c.input_count() == 0) c.fail("needs at least one input");
  std::vector<Shape> shapes;
  for (size_t j = 0; j < c.input_count(); ++j) {
    require_dtype(c, c.input(j), DataType::Float32, "input");
    shapes.push_back(c.input(j).shape);
  }
  const Shape shape = broadcast_shapes(c, shapes);
  if (size_t(e.inputs()) > c.input_count())
    c.fail("program reads x" + std::to_string(e.inputs() - 1) + " but the node has " +
           std::to_string(c.input_count()) + " inputs");
  std::vector<HostTensor> in;
  for (size_t j = 0; j < c.input_count(); ++j) in.push_back(broadcast_to(c, c.input(j), shape));
  HostTensor y(DataType::Float32, shape);
  float* py = y.data<float>();
  std::vector<float> x(in.size());
  for (int64_t i = 0; i < y.count(); ++i) {
    for (size_t j = 0; j < in.size(); ++j) x[j] = in[j].data<float>()[i];
    py[i] = e.eval(x.data());
  }
  return single(std::move(y));
}

}  // namespace

void register_fused(OpTable& t) {
  std::vector<std::string> conv_attrs = kConvAttrs;
  conv_attrs.push_back("program");
  t["FusedConv"] = {FusedConv, conv_attrs};
  t["FusedMatMul"] = {FusedMatMul, {"transB", "program"}};
  for (const char* a : {"pool_kernel_shape", "pool_strides", "pool_pads", "pool_dilations", "pool_ceil_mode"})
    conv_attrs.push_back(a);
  t["FusedConvMaxPool"] = {FusedConvMaxPool, conv_attrs};
  t["FusedElementwise"] = {FusedElementwise, {"program"}};
  t["FusedGather"] = {FusedGather, {"axis", "program"}};
  t["FusedMlp"] = {FusedMlp, {"hidden_program", "program"}};
  t["FusedAttention"] = {FusedAttention, {}};
}

}  // namespace texplan::reference
