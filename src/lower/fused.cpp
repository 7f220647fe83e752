// FusedConv, FusedMatMul and FusedElementwise (docs/fused-ops.md): the conv
// and matmul lowerings with the epilogue generated into their stores, and one
// elementwise kernel for a whole chain. Every kernel reads an element's
// operands before writing that element, at the same index only, so Y may
// share storage with an epilogue input (in-place).
#include "graph/epilogue.h"
#include "lower/epilogue_cl.h"
#include "lower/ops.h"

namespace texplan::lower {
namespace {

bool float32(const Tensor& t) { return t.dtype == DataType::Float32; }

// The input xj (j > 0, read directly) of the residual form (make_tail) and,
// in `rest`, the program without its Add, reading Y's value (x0 + xj) as x0;
// 0 where there is none. The Add must be one of a leading chain of Adds each
// onto the previous value, and nothing else may read xj or the raw x0.
int residual_operand(const Epilogue& e, const std::vector<EpilogueRead>& reads, std::vector<EpilogueInstr>& rest) {
  using K = EpilogueOperand::Kind;
  auto is = [](const EpilogueOperand& o, K kind, int index) { return o.kind == kind && o.index == index; };
  int at = -1, j = 0;
  for (size_t k = 0; k < e.code.size() && at < 0; ++k) {
    const EpilogueInstr& in = e.code[k];
    if (in.op != "Add" || in.args.size() != 2) return 0;
    const EpilogueOperand running = k == 0 ? EpilogueOperand{K::Input, 0} : EpilogueOperand{K::Temp, int(k) - 1};
    const int r = is(in.args[0], running.kind, running.index) ? 0 : is(in.args[1], running.kind, running.index) ? 1 : -1;
    if (r < 0) return 0;
    const EpilogueOperand& other = in.args[1 - r];
    if (other.kind == K::Input && other.index > 0 && reads[size_t(other.index)] == EpilogueRead::Direct)
      at = int(k), j = other.index;
    else if (other.kind != K::Literal && !(other.kind == K::Input && other.index > 0)) return 0;
  }
  if (at < 0) return 0;
  rest.clear();
  for (size_t k = 0; k < e.code.size(); ++k) {
    if (int(k) == at) continue;
    EpilogueInstr in = e.code[k];
    for (size_t a = 0; a < in.args.size(); ++a) {
      EpilogueOperand& o = in.args[a];
      if (o.kind == K::Input && o.index == j) return 0;  // xj read again: Y holds the sum by then
      if (o.kind == K::Input && o.index == 0 && k != 0) return 0;  // the raw product: gone
      if (o.kind != K::Temp) continue;
      if (o.index < at && int(k) > at) return 0;  // a value from before the residual, after it
      if (o.index == at) o = at == 0 ? EpilogueOperand{K::Input, 0} : EpilogueOperand{K::Temp, at - 1};
      else if (o.index > at) --o.index;
    }
    rest.push_back(in);
  }
  return j;
}

// The tail whose program operands are, in order: the kernel's own value (when
// value_x0), then node inputs `first`..`end` (-1: to the last) as buffers.
// Inputs with Y's elements are read at Y's index, the others through
// broadcast strides. `copied`: the input the kernels also store as
// tail.copy says (which the caller sets), or -1.
bool make_tail(NodeBuilder& b, int first, bool value_x0, FusedTail& tail, int end = -1, int copied = -1) {
  if (end < 0) end = b.inputs();
  const Shape& y = b.out(0).shape;
  if (!float32(b.out(0))) return false;
  Epilogue e = fused_epilogue(b);
  std::vector<EpilogueRead> reads;
  if (value_x0) reads.push_back(EpilogueRead::Value);
  std::vector<std::vector<int64_t>> strides = {contiguous_strides(y)};
  for (int i = first; i < end; ++i) {
    if (!b.has_in(i) || !float32(b.in(i))) return false;
    const Shape& s = b.in(i).shape;
    if (s.size() > y.size()) return false;
    for (size_t k = 0; k < s.size(); ++k)
      if (s[k] != 1 && s[k] != y[y.size() - s.size() + k]) return false;
    // Broadcast-compatible with as many elements: the same order, no
    // strides; a window (a patch's part of a larger tensor) through its
    // storage's strides.
    const bool window = b.in_window(i) && s == y;
    bool direct = element_count(s) == element_count(y) && !window;
    reads.push_back(direct ? EpilogueRead::Direct : EpilogueRead::Strided);
    tail.inputs.push_back({b.arg_in(i), !direct, Dims{}});
    strides.push_back(window ? b.take_in_window(i) : broadcast_strides(s, y));
    tail.strided = tail.strided || !direct;
  }
  if (e.inputs() > int(reads.size()))
    throw Error("program reads x" + std::to_string(e.inputs() - 1) + " but the node binds " +
                std::to_string(reads.size()) + " operands");
  std::vector<bool> row_constant(reads.size(), false);
  if (tail.strided) {
    Strided c = collapse({y, strides});
    tail.dims = to_dims(c.dims, 1);
    for (size_t k = 0; k < tail.inputs.size(); ++k) {
      tail.inputs[k].strides = to_dims(c.strides[k + 1], 0);
      row_constant[reads.size() - tail.inputs.size() + k] =
          tail.inputs[k].strided && !c.strides[k + 1].empty() && c.strides[k + 1].back() == 0;
    }
  }
  // A product's program that is the identity (a projection's folded
  // BatchNormalization, no activation) needs no prelude: the kernels' EPI
  // default stores the value, and split-K needs no pass after its slices.
  if (value_x0 && e.code.empty() && reads.size() == 1) return true;
  const int copied_read = copied < 0 ? -1 : copied - first + (value_x0 ? 1 : 0);
  if (copied_read >= 0 && reads.at(size_t(copied_read)) != EpilogueRead::Direct) return false;
  tail.prelude = epilogue_cl(e, reads, row_constant, copied_read);
  tail.transcendental = e.transcendental();
  if (copied_read >= 0) return true;  // no residual form: nothing is stored in place
  // The residual form (FusedTail::residual_prelude): one Add of a leading
  // chain of Adds onto the kernel's value x0 (x0 + bias + residual, as a
  // MatMul with its bias exports) adds an input xj stored exactly where Y is.
  // Y then already holds xj, so split-K's slices add onto it, and the program
  // without that Add runs on the sum (the adds reassociated: x0 + xj first).
  if (value_x0) {
    std::vector<EpilogueInstr> rest;
    if (int j = residual_operand(e, reads, rest); j > 0) {
      const TensorArg x = b.arg_in(first + j - 1), y = b.arg_out(0);
      if (x.mem == y.mem && x.offset == y.offset && !output_overlaps_input(b, first + j - 1)) {
        tail.residual = true;
        if (!rest.empty()) tail.residual_prelude = epilogue_cl(Epilogue{rest}, reads, row_constant);
        // rest = x0 + xk with xk a vector along Y's last dim.
        auto input = [](const EpilogueOperand& o) { return o.kind == EpilogueOperand::Kind::Input ? o.index : -1; };
        if (rest.size() == 1 && rest[0].op == "Add" && rest[0].args.size() == 2) {
          const int a = input(rest[0].args[0]), c = input(rest[0].args[1]), k = a == 0 ? c : c == 0 ? a : -1;
          const Shape& ys = b.out(0).shape;
          if (k > 0 && !ys.empty()) {
            const Shape& s = b.in(first + k - 1).shape;
            if (!s.empty() && s.back() == ys.back() && element_count(s) == ys.back())
              tail.residual_bias = b.arg_in(first + k - 1);
          }
        }
      }
    }
  }
  return true;
}

}  // namespace

bool lower_fused_conv(NodeBuilder& b) {
  if (b.inputs() < 2) return false;
  // channel_scaled(), channel_program(): the last inputs are X's channel
  // scale or its program's operands, none of the epilogue's; the conv
  // lowerings that take them read them from there.
  const int end = int(operand_inputs_end(b.node));
  const std::optional<ShuffledOutput> shuffled = shuffled_output(b.node);
  if (shuffled) {
    // Y is the channel shuffle of the conv's output and input end - 1: the
    // conv stores channel c at Y's 2c + slot (window_output makes its YI),
    // and its epilogue copies the other half's element to 2c + 1 - slot.
    const Shape& y = b.out(0).shape;
    if (end < 4 || y.size() != 4 || y[1] % 2 != 0 || b.in_window(end - 1) || b.out_window(0)) return false;
    b.write_output_interleaved({y[0], y[1] / 2, y[2], y[3]}, shuffled->slot * y[2] * y[3]);
  }
  for (int i = 3; i < end; ++i)
    if (!b.has_in(i) || b.in(i).shape != b.out(0).shape) return false;  // the contract: Ej has Y's (the conv's) shape
  FusedTail tail;
  if (!make_tail(b, 3, true, tail, end, shuffled ? end - 1 : -1)) return false;
  if (shuffled) {
    const int64_t plane = b.out(0).shape[2] * b.out(0).shape[3];
    TensorArg other_half = b.arg_out(0);
    other_half.offset += i32((1 - 2 * shuffled->slot) * plane);
    tail.copy = FusedTail::PlaneCopy{other_half, i32(plane)};
  }
  if (const std::optional<ChannelProgram> cp = channel_program(b.node)) {
    const int64_t C = b.in(0).shape.size() == 4 ? b.in(0).shape[1] : -1;
    const int operands_end = b.inputs() - (cp->depthwise ? 1 : 0);
    if (cp->depthwise) {
      // ChannelProgram::depthwise: input 0 is the depthwise conv's input; the
      // last input its weights [C, 1, KH, KW]; Y's pixels its output's.
      const ChannelDepthwise& d = *cp->depthwise;
      const Shape &e = b.in(0).shape, &y = b.out(0).shape;
      if (!b.has_in(operands_end) || !float32(b.in(operands_end)) || C < 1 || y.size() != 4 ||
          b.in(operands_end).shape != Shape{C, 1, d.kh, d.kw})
        return false;
      if (y[2] != conv_out_extent(e[2], d.pads[0] + d.pads[2], d.kh, d.sh, d.dh) ||
          y[3] != conv_out_extent(e[3], d.pads[1] + d.pads[3], d.kw, d.sw, d.dw))
        return false;
      tail.xdepthwise = true;
      tail.xdepthwise_weights = b.arg_in(operands_end);
      tail.xdepthwise_dims = to_dims({e[2], e[3], y[3]}, 0);
    }
    const int gate_inputs = cp->gate ? (cp->gate->bias ? 3 : 2) : 0;
    for (int i = end; i < operands_end - gate_inputs; ++i) {
      if (!b.has_in(i) || !float32(b.in(i)) || element_count(b.in(i).shape) != C) return false;
      tail.xprogram_args.push_back(b.arg_in(i));
    }
    std::optional<ChannelGateShape> gate;
    if (cp->gate) {
      // ChannelProgram::gate: h, W (and b) in place of the last operand;
      // the kernel keeps its C values in local memory.
      const int at = operands_end - gate_inputs;
      for (int i = at; i < operands_end; ++i)
        if (!b.has_in(i) || !float32(b.in(i))) return false;
      const int64_t J = element_count(b.in(at).shape);
      if (cp->depthwise || C < 1 || C > kMaxGateChannels || J < 1 || element_count(b.in(at + 1).shape) != C * J ||
          (cp->gate->bias && element_count(b.in(at + 2).shape) != C))
        return false;
      for (int i = at; i < operands_end; ++i) tail.xprogram_args.push_back(b.arg_in(i));
      gate = ChannelGateShape{Epilogue::parse(cp->gate->program), C, J, cp->gate->bias};
    }
    tail.xprogram_prelude = channel_program_cl(Epilogue::parse(cp->program), cp->operands, cp->depthwise, gate);
  }
  if (!lower_conv(b, tail)) return false;
  if (shuffled && !b.output_interleave_taken())
    throw Error("its kernels cannot write the shuffled channels (channel-shuffle fusion): run with "
                "--no-channel-shuffle-fusion");
  return true;
}

// FusedMlp (fused.cl mlp2): one work-group per image, one item on CPU
// devices (PoCL runs a group on one thread), 256 elsewhere; the hidden
// vector in local memory.
bool lower_fused_mlp(NodeBuilder& b) {
  if (b.inputs() != 5 || !b.has_in(0) || !b.has_in(1) || !b.has_in(3)) return false;
  const Shape &x = b.in(0).shape, &w1 = b.in(1).shape, &w2 = b.in(3).shape, &y = b.out(0).shape;
  if (x.size() != 4 || w1.size() != 4 || w2.size() != 4 || x[2] * x[3] != 1 || w1[1] != x[1] ||
      w1[2] * w1[3] != 1 || w2[1] != w1[0] || w2[2] * w2[3] != 1 || y != Shape{x[0], w2[0], 1, 1})
    return false;
  for (int i = 0; i < 5; ++i)
    if (b.has_in(i) && !float32(b.in(i))) return false;
  const int64_t N = x[0], C = x[1], HID = w1[0], O = w2[0];
  if (N * O == 0) return true;
  if (HID * 4 > b.device().info().local_mem_bytes) return false;
  FusedTail tail;
  if (!make_tail(b, 5, true, tail)) return false;
  Node hidden;
  hidden.name = b.node.name;
  if (b.node.has("hidden_program")) hidden.attrs["program"] = b.node.attrs.at("hidden_program");
  const std::string prelude = tail.prelude + "\n" + epilogue_function_cl(Epilogue::parse(hidden), "mlp_hidden");
  const size_t items = b.device_type() == "cpu" && !b.gpu_kernels_forced() ? 1 : 256;
  Range r;
  r.dims = 1;
  r.has_local = true;
  r.local[0] = items;
  r.global[0] = size_t(N) * items;
  const TensorArg dummy = b.arg_in(0);
  b.launch(Source("fused.cl", "-DMLP_HID=" + std::to_string(HID), prelude), "mlp2", r, b.arg_in(0), b.arg_in(1),
           b.has_in(2) ? b.arg_in(2) : dummy, b.arg_in(3), b.has_in(4) ? b.arg_in(4) : dummy, b.arg_out(0), i32(C),
           i32(O), cl_int(b.has_in(2)), cl_int(b.has_in(4)));
  tail.append_args(b);
  return true;
}

bool lower_fused_matmul(NodeBuilder& b) {
  if (b.inputs() < 2) return false;
  const int end = int(operand_inputs_end(b.node));
  FusedTail tail;
  if (!make_tail(b, 2, true, tail, end)) return false;
  if (const std::optional<RowNorm> rn = row_norm(b.node)) {
    // gamma and beta (graph.h RowNorm): the last two inputs, vectors of Y's last dim.
    const Shape& y = b.out(0).shape;
    if (b.half || y.empty() || b.out_window(0) || end + 2 != b.inputs() || !b.has_in(end)) return false;
    for (int i = end; i < end + 2; ++i)
      if (b.has_in(i) && (!float32(b.in(i)) || element_count(b.in(i).shape) != y.back())) return false;
    tail.row_norm = FusedTail::RowNormArgs{b.arg_in(end), b.has_in(end + 1) ? b.arg_in(end + 1) : TensorArg{},
                                           b.has_in(end + 1), rn->epsilon, y.back()};
  }
  return lower_matmul(b, b.node.get_int("transB", 0) != 0, tail);
}

// FusedGather (fused.cl fused_gather): a Gather of floats, the program over
// each gathered element, one work-item per element.
bool lower_fused_gather(NodeBuilder& b) {
  if (b.inputs() < 2 || !b.has_in(0) || !b.has_in(1) || !float32(b.in(0))) return false;
  if (b.in_window(0) || b.in_window(1)) return false;  // read as whole tensors
  const std::optional<GatherGeometry> g = gather_geometry(b);
  if (!g) return false;
  FusedTail tail;
  if (!make_tail(b, 2, true, tail)) return false;
  window_output(b, tail);
  const int64_t n = g->count();
  if (n == 0) return true;
  const Source src("fused.cl", std::string("-DGATHER_INDEX=") + (g->int64_indices ? "long" : "int"), tail.prelude);
  const MemArg faults{g->faults.mem};
  if (g->by_rows) {
    const int64_t rows = g->outer * g->nidx;
    b.launch(src, "fused_gather_rows", cpu_item_range(rows), b.arg_in(0), b.arg_in(1), b.arg_out(0), i32(rows),
             i32(g->axis_len), i32(g->nidx), i32(g->inner), faults, g->faults.node);
  } else {
    b.launch(src, "fused_gather", linear_range(n), b.arg_in(0), b.arg_in(1), b.arg_out(0), i32(n), i32(g->axis_len),
             i32(g->nidx), i32(g->inner), faults, g->faults.node);
  }
  tail.append_args(b);
  return true;
}

bool lower_fused_elementwise(NodeBuilder& b) {
  if (b.inputs() < 1) return false;
  FusedTail tail;
  if (!make_tail(b, 0, false, tail)) return false;
  window_output(b, tail);
  int64_t n = element_count(b.out(0).shape);
  if (n == 0) return true;
  // CPU devices with broadcast operands: a row of the innermost dim per work-item.
  const int64_t row = tail.dims.d[kMaxRank - 1];
  if (tail.strided && b.device_type() == "cpu" && !b.gpu_kernels_forced() && row >= 8) {
    b.launch(Source("fused.cl", "", tail.prelude), "fused_elementwise_rows", linear_range(n / row), b.arg_out(0),
             i32(n / row), i32(row));
    tail.append_args(b);
    return true;
  }
  b.launch(Source("fused.cl", "", tail.prelude), "fused_elementwise", linear_range(n), b.arg_out(0), i32(n));
  tail.append_args(b);
  return true;
}

}  // namespace texplan::lower
