// Passes that bring an operand into a product's kernel: a scalar scale moved
// after a MatMul (then fused into its epilogue), squeeze-and-excitation's
// channel scale into the 1x1 convolution that reads it, and its two fully
// connected layers into one FusedMlp (docs/fused-ops.md).
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "graph/epilogue.h"
#include "optimize/passes.h"

namespace texplan {
namespace {

// A Conv or FusedConv without channel scale or channel program that is a plain 1x1 product:
// one output, X and W present and 4-D, W 1x1, ungrouped, unpadded.
bool plain_1x1_conv(const Graph& g, const Node& conv) {
  if ((conv.op_type != "Conv" && conv.op_type != "FusedConv") || channel_scaled(conv) || channel_program(conv) ||
      conv.inputs.size() < 2 ||
      conv.outputs.size() != 1 || conv.inputs[0] < 0 || conv.inputs[1] < 0)
    return false;
  const Shape &x = g.tensors[conv.inputs[0]].shape, &w = g.tensors[conv.inputs[1]].shape;
  const std::string auto_pad = conv.get_string("auto_pad", "NOTSET");
  return x.size() == 4 && w.size() == 4 && w[2] == 1 && w[3] == 1 && conv.get_int("group", 1) == 1 &&
         all_equal(conv.get_ints("pads", {0, 0, 0, 0}), 0) && (auto_pad == "NOTSET" || auto_pad == "VALID");
}

// Per tensor: the node writing it (-1: none) and how many inputs read it.
struct Links {
  std::vector<int> producer, uses;
  explicit Links(const Graph& g) : producer(g.tensors.size(), -1), uses(g.tensors.size(), 0) {
    for (int k = 0; k < int(g.nodes.size()); ++k) {
      for (int t : g.nodes[k].outputs)
        if (t >= 0) producer[t] = k;
      for (int t : g.nodes[k].inputs)
        if (t >= 0) ++uses[t];
    }
  }
};

// The node writing X of `conv` for it alone (no other reader, no graph
// output, float32) when conv is a plain 1x1, stride-1, undilated conv of at
// least two pixels; -1 otherwise (or when that node is `erased`).
int sole_writer_of_pointwise_input(const Graph& g, const Node& conv, const Links& l, const std::vector<char>& erased) {
  if (!plain_1x1_conv(g, conv)) return -1;
  const int x = conv.inputs[0];
  const Shape& xs = g.tensors[x].shape;
  if (xs[2] * xs[3] < 2 || !all_equal(conv.get_ints("strides", {1, 1}), 1) ||
      !all_equal(conv.get_ints("dilations", {1, 1}), 1))
    return -1;
  const int p = l.producer[x];
  if (p < 0 || erased[size_t(p)] || l.uses[x] != 1 || g.tensors[x].is_output || !is_f32(g.tensors[x])) return -1;
  return p;
}

// Offers each plain 1x1 conv and the node writing its X for it alone
// (sole_writer_of_pointwise_input) to `take`, which rewrites the conv to read
// what that node read and returns true; those nodes are erased. Returns how
// many were taken.
int fuse_writers_into_pointwise_convs(Graph& g, const std::function<bool(Node& conv, const Node& writer)>& take) {
  const Links links(g);
  std::vector<char> erased(g.nodes.size(), 0);
  int fused = 0;
  for (int k = 0; k < int(g.nodes.size()); ++k) {
    const int writer = sole_writer_of_pointwise_input(g, g.nodes[k], links, erased);
    if (writer < 0 || !take(g.nodes[k], g.nodes[size_t(writer)])) continue;
    erased[size_t(writer)] = 1;
    ++fused;
  }
  if (fused) g.erase_nodes(erased);
  return fused;
}

// A Conv as a FusedConv with no program (the conv alone), its bias input
// present (-1 when none), so inputs can follow it.
void as_fused_conv(Node& conv) {
  if (conv.op_type != "Conv") return;
  conv.op_type = "FusedConv";
  if (conv.inputs.size() == 2) conv.inputs.push_back(-1);
}

// [C, 1, 1] or [1, C, 1, 1]: one value per channel of an NCHW tensor of C
// channels, the same for every image.
bool one_value_per_channel(const Shape& s, int64_t C) {
  return (s.size() == 3 || (s.size() == 4 && s[0] == 1)) && s[s.size() - 3] == C && s[s.size() - 2] == 1 &&
         s.back() == 1;
}
}  // namespace

// A scalar Mul or Div on a MatMul's input moves after it, where the fuser
// takes it into the product's epilogue: (x / c) @ w = (x @ w) / c. BERT's
// attention scales q by 1 / sqrt(d) before q @ k^T, one kernel per layer.
// Where the other operand is a weight no other node reads, the scale goes
// into the weight instead, x @ (w / c), and the epilogue keeps none: GELU's
// final 0.5 before an MLP's second Linear would otherwise lead its epilogue
// and keep the residual Add after it from being split-K's starting value
// (lower/fused.cpp residual_operand). Only where the scaled tensor feeds
// that MatMul alone and is no output.
int scales_after_products(Graph& g) {
  const Links links(g);
  const std::vector<int>&producer = links.producer, &uses = links.uses;
  auto scalar = [&](int t) {
    const Tensor& c = g.tensors[t];
    return c.is_constant && c.has_data && is_f32(c) && c.value.count() == 1;
  };
  int moved = 0;
  for (int k = 0; k < int(g.nodes.size()); ++k) {
    Node& mm = g.nodes[k];
    if (mm.op_type != "MatMul" || mm.inputs.size() != 2 || mm.outputs.size() != 1) continue;
    for (int slot = 0; slot < 2; ++slot) {
      const int t = mm.inputs[size_t(slot)];
      if (t < 0 || producer[t] < 0 || uses[t] != 1 || g.tensors[t].is_output || !is_f32(g.tensors[t])) continue;
      Node& sc = g.nodes[size_t(producer[t])];
      if (sc.inputs.size() != 2 || sc.outputs.size() != 1 || sc.inputs[0] < 0 || sc.inputs[1] < 0) continue;
      int x = -1;  // the scaled operand; the other input is the scalar, kept where it is
      if (sc.op_type == "Div" && scalar(sc.inputs[1])) x = 0;
      else if (sc.op_type == "Mul") x = scalar(sc.inputs[1]) ? 0 : scalar(sc.inputs[0]) ? 1 : -1;
      if (x < 0 || g.tensors[sc.inputs[size_t(x)]].shape != g.tensors[t].shape) continue;
      const float c = g.tensors[sc.inputs[size_t(1 - x)]].value.as_float()[0];
      if (const int w = mm.inputs[size_t(1 - slot)]; w >= 0 && uses[w] == 1 && producer[w] < 0) {
        Tensor& wt = g.tensors[w];
        if (wt.is_constant && wt.has_data && is_f32(wt) && !wt.is_output && !wt.is_input && std::isfinite(c) &&
            (sc.op_type == "Mul" || c != 0.0f)) {
          float* v = wt.value.data<float>();
          for (int64_t i = 0; i < wt.value.count(); ++i) v[i] = sc.op_type == "Div" ? v[i] / c : v[i] * c;
          mm.inputs[size_t(slot)] = sc.inputs[size_t(x)];
          ++moved;  // sc: its output no longer read
          continue;
        }
      }
      // mm: inputs (.., x, ..) -> y0 (t's slot reused for the product); sc: (.., y0, ..) -> y.
      const int y = mm.outputs[0];
      Tensor product = g.tensors[t];
      product.name = unique_tensor_name(g, g.tensors[y].name + "@unscaled");
      product.shape = g.tensors[y].shape;
      product.dtype = g.tensors[y].dtype;
      product.is_output = false;
      mm.inputs[size_t(slot)] = sc.inputs[size_t(x)];
      const int y0 = g.add_tensor(std::move(product));
      mm.outputs[0] = y0;
      sc.inputs[size_t(x)] = y0;
      sc.outputs[0] = y;
      ++moved;  // t: no node writes or reads it now
    }
  }
  if (moved) {
    g.topological_sort();
    g.remove_dead_nodes();
  }
  return moved;
}


// An elementwise node after a product's Reshape moves before it, its other
// operand reshaped instead (a view, no kernel), where the fuser takes it
// into the product's epilogue: reshape(x @ w) + r = reshape(x @ w +
// reshape(r)). PyTorch's attention ends in out_proj as a 2-D Gemm, a
// Reshape back to [batch, tokens, width] and the residual Add: one kernel
// (and a residual split-K can add onto) per layer instead of two. A
// convolution's activation likewise (volume ops' 2-D convs over frames,
// reshaped back to clips: import/volume_ops.cpp).
// Only where the product's output feeds the Reshape (or a chain of them)
// alone, the Reshape's the elementwise node alone, and a binary node's
// other operand has the Reshape's shape.
int reshapes_after_products(Graph& g) {
  static const std::set<std::string> binary = {"Add", "Sub", "Mul", "Div", "Max", "Min"};
  const Links links(g);
  const std::vector<std::vector<int>> consumers = g.consumers();
  auto only_reader = [&](int t) {
    return t >= 0 && links.uses[t] == 1 && !g.tensors[t].is_output && consumers[t].size() == 1 ? consumers[t][0] : -1;
  };
  int moved = 0;
  for (int k = 0; k < int(g.nodes.size()); ++k) {
    const Node& mm = g.nodes[k];
    if ((mm.op_type != "MatMul" && mm.op_type != "Gemm" && mm.op_type != "Conv" && mm.op_type != "FusedConv") ||
        mm.outputs.size() != 1)
      continue;
    const int t = mm.outputs[0];
    const int r = only_reader(t);
    if (r < 0 || g.nodes[r].op_type != "Reshape" || g.nodes[r].inputs.empty() || g.nodes[r].inputs[0] != t ||
        g.nodes[r].outputs.size() != 1 || !is_f32(g.tensors[t]))
      continue;
    int last = r, y = g.nodes[r].outputs[0], e = only_reader(y);
    while (e >= 0 && g.nodes[e].op_type == "Reshape" && g.nodes[e].inputs[0] == y && g.nodes[e].outputs.size() == 1 &&
           g.nodes[e].outputs[0] >= 0)  // a chain of them (a Transpose of a size-1 dim became one)
      last = e, y = g.nodes[e].outputs[0], e = only_reader(y);
    if (e < 0) continue;
    Node& op = g.nodes[e];
    if (Epilogue::unary_node(g, op) && op.inputs[0] == y) {
      // The op reads the product and writes a tensor of its shape, which
      // the Reshape (chain) then turns into the op's own output.
      const int z = op.outputs[0];
      Tensor before = g.tensors[z];
      before.name = unique_tensor_name(g, g.tensors[z].name + "@before_reshape");
      before.shape = g.tensors[t].shape;
      before.is_input = before.is_output = before.has_data = false;
      before.value = HostTensor{};
      before.producer = -1;
      before.window.reset();
      const int z2 = g.add_tensor(std::move(before));
      Node& un = g.nodes[e];  // add_tensor does not move nodes
      un.inputs[0] = t;
      un.outputs[0] = z2;
      g.nodes[r].inputs[0] = z2;
      g.nodes[last].outputs[0] = z;
      ++moved;
      continue;
    }
    if (!binary.count(op.op_type) || op.inputs.size() != 2 || op.outputs.size() != 1 || op.outputs[0] < 0) continue;
    const int slot = op.inputs[0] == y ? 0 : 1, o = op.inputs[size_t(1 - slot)], z = op.outputs[0];
    if (op.inputs[size_t(slot)] != y || o < 0 || o == y || g.tensors[o].is_constant) continue;
    const Shape ts = g.tensors[t].shape, ys = g.tensors[y].shape;  // copies: add_tensor below may move them
    if (g.tensors[o].shape != ys || g.tensors[z].shape != ys || !is_f32(g.tensors[o]) || !is_f32(g.tensors[z]) ||
        ts.empty() || std::find(ts.begin(), ts.end(), 0) != ts.end() || element_count(ts) != element_count(ys))
      continue;
    // A tensor like `like` (its metadata, no value) of the product's shape.
    auto add = [&](Tensor like, const std::string& suffix) {
      like.name = unique_tensor_name(g, g.tensors[z].name + suffix);
      like.shape = ts;
      like.is_input = like.is_output = like.has_data = false;
      like.value = HostTensor{};
      like.producer = -1;
      like.window.reset();
      return g.add_tensor(std::move(like));
    };
    const int shape_id = add_int64_constant(g, g.tensors[z].name + "@product_shape", ts);
    const int o2 = add(g.tensors[o], "@operand"), z2 = add(g.tensors[z], "@before_reshape");
    Node view;
    view.name = g.nodes[r].name + "@operand";
    view.op_type = "Reshape";
    view.inputs = {o, shape_id};
    view.outputs = {o2};
    op.inputs[size_t(slot)] = t;
    op.inputs[size_t(1 - slot)] = o2;
    op.outputs[0] = z2;
    g.nodes[r].inputs[0] = z2;
    g.nodes[last].outputs[0] = z;
    g.nodes.push_back(std::move(view));  // `op` is not used after this
    ++moved;  // y: no node writes or reads it now
  }
  if (moved) {
    g.topological_sort();
    g.remove_dead_nodes();
  }
  return moved;
}

// Squeeze-and-excitation ends in Mul(A, S), S one value per channel, read
// by a pointwise projection alone: conv(A * S, W) = sum_c W[o, c] S[c]
// A[c, p], so the conv reads A and scales its input channels as it goes
// (set_channel_scaled, S its last input; docs/fused-ops.md).
// One kernel and the scaled copy of A fewer per block (EfficientNet: 16).
// Only 1x1, stride 1, unpadded, ungrouped convolutions of more than one
// pixel (the CPU kernels' GEMM form), with S shared by the batch.
int channel_scales_into_convs(Graph& g) {
  return fuse_writers_into_pointwise_convs(g, [&](Node& conv, const Node& mul) {
    const Shape& xs = g.tensors[conv.inputs[0]].shape;
    if (mul.op_type != "Mul" || mul.inputs.size() != 2 || mul.inputs[0] < 0 || mul.inputs[1] < 0) return false;
    int a = -1, sc = -1;
    for (int i = 0; i < 2; ++i) {
      const Tensor& t = g.tensors[mul.inputs[size_t(i)]];
      const Tensor& o = g.tensors[mul.inputs[size_t(1 - i)]];
      // S one value per channel, A X's shape.
      if (one_value_per_channel(t.shape, xs[1]) && is_f32(t) && o.shape == xs && is_f32(o))
        a = mul.inputs[size_t(1 - i)], sc = mul.inputs[size_t(i)];
    }
    if (a < 0) return false;
    as_fused_conv(conv);
    conv.inputs[0] = a;
    conv.inputs.push_back(sc);
    set_channel_scaled(conv);
    return true;
  });
}

// A FusedElementwise (or a lone Mul, Add, Sub, Div) read only by a 1x1
// convolution, whose inputs but one (X's shape) hold one value per channel,
// becomes that convolution's channel program (ChannelProgram, graph.h): the
// GEMM applies it to each element of X it stages, so that copy of X is never
// stored and its kernel never runs. DenseNet's BatchNormalization + Relu
// before each bottleneck's 1x1 conv (x * s + b, Relu): 61 of DenseNet-121's
// launches; squeeze-and-excitation's Mul before the projection where the
// channel scale (channel_scales_into_convs) is not made: EfficientNet-B0's 16.
// Only 1x1, stride-1, unpadded, ungrouped convolutions of at least two
// pixels and two output channels (the GEMM's tiles, not its vector form).
int channel_programs_into_convs(Graph& g) {
  return fuse_writers_into_pointwise_convs(g, [&](Node& conv, const Node& ew) {
    const Shape& xs = g.tensors[conv.inputs[0]].shape;
    if (g.tensors[conv.inputs[1]].shape[0] < 2) return false;
    // A lone binary op (squeeze-and-excitation's scale on GPUs: Mul) is the
    // program of one instruction.
    const bool binary = (ew.op_type == "Mul" || ew.op_type == "Add" || ew.op_type == "Sub" || ew.op_type == "Div") &&
                        ew.inputs.size() == 2 && ew.attrs.empty();
    if ((ew.op_type != "FusedElementwise" && !binary) || ew.outputs.size() != 1) return false;
    int data = -1;
    for (size_t i = 0; i < ew.inputs.size(); ++i) {
      const int t = ew.inputs[i];
      if (t < 0 || !is_f32(g.tensors[t])) return false;
      const Shape& s = g.tensors[t].shape;
      if (s == xs && data < 0) data = int(i);
      else if (!one_value_per_channel(s, xs[1])) return false;
    }
    if (data < 0) return false;
    // The program's operands renumbered: X first, then the channel values.
    Epilogue e = binary ? Epilogue::parse(std::vector<std::string>{ew.op_type + " x0 x1"}) : Epilogue::parse(ew);
    std::vector<int> to(ew.inputs.size());
    std::vector<int> operands;
    for (size_t i = 0, next = 1; i < ew.inputs.size(); ++i) {
      if (int(i) == data) {
        to[i] = 0;
      } else {
        to[i] = int(next++);
        operands.push_back(ew.inputs[i]);
      }
    }
    for (EpilogueInstr& in : e.code)
      for (EpilogueOperand& a : in.args)
        if (a.kind == EpilogueOperand::Kind::Input) a.index = to.at(size_t(a.index));
    as_fused_conv(conv);
    conv.inputs[0] = ew.inputs[size_t(data)];
    conv.inputs.insert(conv.inputs.end(), operands.begin(), operands.end());
    conv.decisions.channel_program = ChannelProgram{e.to_strings(), int(operands.size()), std::nullopt, std::nullopt};
    return true;
  });
}

// Squeeze-and-excitation's second fully connected layer, fc2: a 1x1 Conv
// or FusedConv (its Sigmoid the program) of a one-pixel map of one image,
// whose output is the last operand of a 1x1 conv's channel program and
// read nowhere else. The conv takes fc2's input, weights and bias in place
// of that operand and computes G(W h + b) for its channels itself
// (ChannelProgram::gate; gemm.cl's XPRO_SETUP), so fc2's kernel never
// runs. Every work-group of the conv computes all C sums, so only small
// layers go (bounds.weights: EfficientNet-B0's first 9 of 16).
int channel_gates_into_convs(Graph& g, GateBounds bounds) {
  const Links links(g);
  std::vector<char> erased(g.nodes.size(), 0);
  int fused = 0;
  for (Node& conv : g.nodes) {
    std::optional<ChannelProgram> cp = channel_program(conv);
    if (!cp || cp->depthwise || cp->gate || cp->operands < 1 || conv.inputs.empty() || conv.inputs[0] < 0) continue;
    const Shape& xs = g.tensors[conv.inputs[0]].shape;
    const int64_t C = xs.size() == 4 ? xs[1] : -1;
    const size_t at = operand_inputs_end(conv) + size_t(cp->operands) - 1;
    const int s = at < conv.inputs.size() ? conv.inputs[at] : -1;
    if (C < 1 || C > bounds.channels || s < 0 || links.uses[size_t(s)] != 1 || g.tensors[size_t(s)].is_output)
      continue;
    const int p = links.producer[size_t(s)];
    if (p < 0 || erased[size_t(p)]) continue;
    const Node& fc = g.nodes[size_t(p)];
    if ((fc.op_type != "Conv" && fc.op_type != "FusedConv") || channel_scaled(fc) || channel_program(fc) ||
        fc.outputs.size() != 1 || fc.inputs.size() < 2 || fc.inputs.size() > 3 || fc.inputs[0] < 0 || fc.inputs[1] < 0)
      continue;
    const Tensor &h = g.tensors[size_t(fc.inputs[0])], &w = g.tensors[size_t(fc.inputs[1])];
    const int bias = fc.inputs.size() == 3 ? fc.inputs[2] : -1;
    const int64_t J = h.shape.size() == 4 ? h.shape[1] : -1;
    const std::string auto_pad = fc.get_string("auto_pad", "NOTSET");
    if (J < 1 || C * J > bounds.weights || h.shape != Shape{1, J, 1, 1} || w.shape != Shape{C, J, 1, 1} ||
        !is_f32(h) || !is_f32(w) || g.tensors[size_t(s)].shape != Shape{1, C, 1, 1} || fc.get_int("group", 1) != 1 ||
        !all_equal(fc.get_ints("pads", {0, 0, 0, 0}), 0) || (auto_pad != "NOTSET" && auto_pad != "VALID") ||
        (bias >= 0 && (!is_f32(g.tensors[size_t(bias)]) || g.tensors[size_t(bias)].shape != Shape{C})))
      continue;
    const Epilogue program = Epilogue::parse(fc);
    if (program.inputs() > 1) continue;  // a residual or other operand: not a gate
    std::vector<int> gate_inputs = {fc.inputs[0], fc.inputs[1]};
    if (bias >= 0) gate_inputs.push_back(bias);
    conv.inputs.erase(conv.inputs.begin() + long(at));
    conv.inputs.insert(conv.inputs.begin() + long(at), gate_inputs.begin(), gate_inputs.end());
    cp->gate = ChannelGate{program.to_strings(), bias >= 0};
    conv.decisions.channel_program = cp;
    erased[size_t(p)] = 1;
    ++fused;
  }
  if (fused) g.erase_nodes(erased);
  return fused;
}

// A depthwise convolution (Conv or FusedConv, one filter per channel, no
// epilogue inputs, explicit pads) read only by a 1x1 convolution: the
// conv reads the depthwise conv's input and computes each depthwise sum as
// its GEMM loads X, then the depthwise bias and program as its channel
// program (x0 + V1, then the activation), so the expanded map after the
// depthwise conv is never stored and its kernel never runs: MobileNet-V2's,
// MNASNet's and ShuffleNet's blocks end in these two convs.
int depthwise_into_pointwise_convs(Graph& g) {
  return fuse_writers_into_pointwise_convs(g, [&](Node& conv, const Node& dw) {
    if ((dw.op_type != "Conv" && dw.op_type != "FusedConv") || channel_scaled(dw) || channel_program(dw) ||
        dw.outputs.size() != 1 || dw.inputs.size() < 2 || dw.inputs.size() > 3 || dw.inputs[0] < 0 || dw.inputs[1] < 0)
      return false;
    if (g.tensors[conv.inputs[1]].shape[0] < 2) return false;
    const Tensor &x = g.tensors[dw.inputs[0]], &w = g.tensors[dw.inputs[1]], &y = g.tensors[dw.outputs[0]];
    const int64_t C = x.shape.size() == 4 ? x.shape[1] : -1;
    if (C < 1 || !is_f32(x) || !is_f32(w) || w.shape.size() != 4 || w.shape[0] != C || w.shape[1] != 1 ||
        dw.get_int("group", 1) != C || y.shape.size() != 4 || y.shape[1] != C)
      return false;
    const int bias = dw.inputs.size() == 3 ? dw.inputs[2] : -1;
    if (bias >= 0 && (!is_f32(g.tensors[bias]) || g.tensors[bias].shape != Shape{C})) return false;
    const std::string auto_pad = dw.get_string("auto_pad", "NOTSET");
    const std::vector<int64_t> s = dw.get_ints("strides", {1, 1}), d = dw.get_ints("dilations", {1, 1}),
                               p = dw.get_ints("pads", {0, 0, 0, 0});
    if ((auto_pad != "NOTSET" && auto_pad != "VALID") || s.size() != 2 || d.size() != 2 || p.size() != 4) return false;
    ChannelDepthwise stage{w.shape[2], w.shape[3], s[0], s[1], d[0], d[1]};
    for (int k = 0; k < 4 && auto_pad == "NOTSET"; ++k) stage.pads[k] = p[size_t(k)];
    Epilogue e;
    try {
      e = Epilogue::parse(dw);
    } catch (const Error&) {
      return false;
    }
    if (e.inputs() > 1) return false;
    // Program: the bias as operand x1 first (t0 = x0 + x1), then the
    // depthwise conv's program on t0.
    if (bias >= 0) {
      Epilogue with_bias;
      with_bias.code.push_back({"Add", {{EpilogueOperand::Kind::Input, 0, 0}, {EpilogueOperand::Kind::Input, 1, 0}}});
      for (EpilogueInstr in : e.code) {
        for (EpilogueOperand& a : in.args)
          if (a.kind == EpilogueOperand::Kind::Input) a = {EpilogueOperand::Kind::Temp, 0, 0};
          else if (a.kind == EpilogueOperand::Kind::Temp) ++a.index;
        with_bias.code.push_back(in);
      }
      e = with_bias;
    }
    as_fused_conv(conv);
    conv.inputs[0] = dw.inputs[0];
    if (bias >= 0) conv.inputs.push_back(bias);
    conv.inputs.push_back(dw.inputs[1]);  // the depthwise weights last
    conv.decisions.channel_program = ChannelProgram{e.to_strings(), bias >= 0 ? 1 : 0, stage, std::nullopt};
    return true;
  });
}

namespace {

// A Conv or FusedConv that is a fully connected layer: a 1x1 conv of a
// one-pixel map ([N, C, 1, 1]), ungrouped and unpadded, with no epilogue
// inputs and no channel scale.
bool dense_conv(const Graph& g, const Node& conv) {
  if (!plain_1x1_conv(g, conv) || conv.inputs.size() > 3 || conv.outputs[0] < 0) return false;
  const Tensor &x = g.tensors[conv.inputs[0]], &w = g.tensors[conv.inputs[1]], &y = g.tensors[conv.outputs[0]];
  return x.shape[2] == 1 && x.shape[3] == 1 && w.shape[1] == x.shape[1] &&
         y.shape == Shape{x.shape[0], w.shape[0], 1, 1} && is_f32(x) && is_f32(w) && is_f32(y) &&
         Epilogue::parse(conv).inputs() <= 1;
}

}  // namespace

// Squeeze-and-excitation's excitation: FC (1x1 conv of the pooled vector),
// its activation, FC, sigmoid. The two layers become one FusedMlp at the
// second's place: inputs X, W1, B1, W2, B2; the first layer's program as
// `hidden_program`, the second's as `program`. The hidden vector is never
// stored and one kernel runs instead of two (EfficientNet-B0: 16 pairs).
int mlp_pairs(Graph& g) {
  const Links links(g);
  const std::vector<int>&producer = links.producer, &uses = links.uses;
  std::vector<char> erased(g.nodes.size(), 0);
  int fused = 0;
  for (int k = 0; k < int(g.nodes.size()); ++k) {
    const Node& second = g.nodes[size_t(k)];
    if (!dense_conv(g, second)) continue;
    const int h = second.inputs[0];
    if (producer[h] < 0 || erased[size_t(producer[h])] || uses[h] != 1 || g.tensors[h].is_output) continue;
    const Node& first = g.nodes[size_t(producer[h])];
    if (!dense_conv(g, first)) continue;
    Node f;
    f.name = second.name;
    f.op_type = "FusedMlp";
    if (first.has("program")) f.attrs["hidden_program"] = first.attrs.at("program");
    if (second.has("program")) f.attrs["program"] = second.attrs.at("program");
    auto input = [](const Node& n, size_t i) { return i < n.inputs.size() ? n.inputs[i] : -1; };
    f.inputs = {first.inputs[0], first.inputs[1], input(first, 2), second.inputs[1], input(second, 2)};
    f.outputs = second.outputs;
    erased[size_t(producer[h])] = 1;
    g.nodes[size_t(k)] = std::move(f);
    ++fused;
  }
  if (fused) g.erase_nodes(erased);
  return fused;
}

}  // namespace texplan
