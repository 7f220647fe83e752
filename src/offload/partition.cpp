// The pattern table: which nodes CLBlast can run, as what sequence of calls
// over the node's own tensors and its scratch space, and the cost rule.
// Nothing here talks to a device: the calls are described, clblast.cpp runs
// them.
#include "offload/work.h"

#include <algorithm>
#include <sstream>

#include "lower/ops.h"

namespace texplan::offload {

namespace {

bool all_float(const Graph& g, const Node& n) {
  for (int t : n.inputs)
    if (t >= 0 && g.tensors[t].dtype != DataType::Float32) return false;
  for (int t : n.outputs)
    if (t >= 0 && g.tensors[t].dtype != DataType::Float32) return false;
  return true;
}

// Activations must be flat buffers: CLBlast takes cl_mem + offset.
bool all_buffers(const Graph& g, const PlanInput& pin, const Node& n) {
  auto buffer = [&](int t) {
    if (t < 0 || g.tensors[t].is_constant) return true;
    int root = pin.alias_root.empty() ? t : pin.alias_root[t];
    int r = pin.record_of_tensor[root];
    return r < 0 || pin.records[r].storage == plan::Storage::Buffer;
  };
  return std::all_of(n.inputs.begin(), n.inputs.end(), buffer) && std::all_of(n.outputs.begin(), n.outputs.end(), buffer);
}

std::vector<std::string> program_of(const Node& n) {
  auto it = n.attrs.find("program");
  return it == n.attrs.end() ? std::vector<std::string>{} : it->second.strings;
}

// Y prefilled with `src` broadcast (numpy) to Y's shape, for beta = 1.
void prefill_from(NodeWork& w, const Graph& g, int src, const Shape& y) {
  w.prefill_src = src;
  w.prefill_dims = y;
  w.prefill_src_strides = lower::broadcast_strides(g.tensors[src].shape, y);
}

bool broadcastable(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  size_t lead = to.size() - from.size();
  for (size_t k = 0; k < from.size(); ++k)
    if (from[k] != 1 && from[k] != to[lead + k]) return false;
  return true;
}

// The epilogue of a fused node: handled as a prefill (a lone bias Add) or by
// a following in-place FusedElementwise kernel (texplan's own).
void add_epilogue(NodeWork& w, const Graph& g, const Node& n, int first_extra, bool& beta_one) {
  std::vector<std::string> program = program_of(n);
  int y = n.outputs[0];
  std::vector<int> extras(n.inputs.begin() + std::min<size_t>(n.inputs.size(), size_t(first_extra)), n.inputs.end());
  if (program.empty()) return;
  if (program.size() == 1 && program[0] == "Add x0 x1" && extras.size() == 1 && w.prefill_src < 0 &&
      broadcastable(g.tensors[extras[0]].shape, g.tensors[y].shape)) {
    prefill_from(w, g, extras[0], g.tensors[y].shape);
    beta_one = true;
    return;
  }
  w.epilogue_program = program;
  w.epilogue_inputs = extras;
}

std::string gemm_dims(int64_t m, int64_t n, int64_t k) {
  return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
}

Match match_conv(const Graph& g, const Node& n, const MatchContext& cx) {
  Match r;
  const bool fused = n.op_type == "FusedConv";
  const Shape& x = g.tensors[n.inputs[0]].shape;
  const Shape& wt = g.tensors[n.inputs[1]].shape;
  const Shape& y = g.tensors[n.outputs[0]].shape;
  if (x.size() != 4 || wt.size() != 4 || y.size() != 4) return r.no("not a 2-D convolution");
  if (!g.tensors[n.inputs[1]].is_constant) return r.no("weights are not constant");
  if (channel_scaled(n)) return r.no("its input channels are scaled (channel-scale fusion)");
  if (channel_program(n)) return r.no("its input goes through a channel program first (channel-program fusion)");
  if (shuffled_output(n)) return r.no("it writes a channel shuffle (channel-shuffle fusion)");
  int64_t groups = n.get_int("group", 1);
  int64_t N = x[0], C = x[1], H = x[2], W = x[3], OC = y[1], OH = y[2], OW = y[3];
  if (groups <= 0 || C % groups || OC % groups) return r.no("group does not divide the channels");
  int64_t Cg = C / groups, OCg = OC / groups;
  if (Cg * wt[2] * wt[3] < 8 || OCg < 4)  // depthwise and the like: a GEMM with K or M of a few
    return r.no("depthwise or narrow groups (" + std::to_string(Cg) + " in, " + std::to_string(OCg) +
                " out per group): no GEMM to speak of");
  if (groups > 8) return r.no(std::to_string(groups) + " groups: one call each");
  std::vector<int64_t> s = n.get_ints("strides", {1, 1}), d = n.get_ints("dilations", {1, 1});
  if (s.size() != 2 || d.size() != 2) return r.no("strides or dilations not 2-D");
  int64_t kh = wt[2], kw = wt[3];
  const SpatialPad ph = conv_axis_pad(n, 0, 2, H, OH, kh, s[0], d[0]);
  const SpatialPad pw = conv_axis_pad(n, 1, 2, W, OW, kw, s[1], d[1]);
  // CLBlast pads both sides alike: its output size must be ours.
  if (ph.begin != ph.end || pw.begin != pw.end || conv_out_extent(H, 2 * ph.begin, kh, s[0], d[0]) != OH ||
      conv_out_extent(W, 2 * pw.begin, kw, s[1], d[1]) != OW)
    return r.no("asymmetric padding");
  NodeWork& w = r.work;
  const int64_t K = Cg * kh * kw, P = OH * OW;
  const bool pointwise = kh == 1 && kw == 1 && s[0] == 1 && s[1] == 1 && ph.begin == 0 && pw.begin == 0;
  bool beta_one = false;
  if (n.inputs.size() > 2 && n.inputs[2] >= 0) {
    prefill_from(w, g, n.inputs[2], {N, OC, OH, OW});
    w.prefill_src_strides = {0, 1, 0, 0};  // bias [OC] along the channel axis
    beta_one = true;
  }
  if (fused) add_epilogue(w, g, n, 3, beta_one);
  // Input channels per im2col chunk: all of them if the scratch fits the budget.
  const int64_t per_channel = kh * kw * P;
  int64_t chunk = Cg;
  if (!pointwise) {
    // At least K = 64 per GEMM: thinner ones waste CLBlast's tiles, and more
    // calls cost more than the bytes they save.
    const int64_t least = std::min(Cg, (64 + kh * kw - 1) / (kh * kw));
    chunk = std::clamp<int64_t>(cx.col_budget_bytes / 4 / per_channel, least, Cg);
    w.col_elems = chunk * per_channel;
  }
  for (int64_t b = 0; b < N; ++b)
    for (int64_t gi = 0; gi < groups; ++gi)
      for (int64_t c0 = 0; c0 < Cg; c0 += chunk) {
        const int64_t cc = std::min(chunk, Cg - c0);
        Operand image{n.inputs[0], false, (b * C + gi * Cg + c0) * H * W};
        Operand col = image;
        if (!pointwise) {
          Im2colCall ic{cc, H, W, kh, kw, ph.begin, pw.begin, s[0], s[1], d[0], d[1], image};
          w.calls.push_back(ic);
          col = Operand{-1, true, 0};
        }
        GemmCall gc;
        gc.m = OCg, gc.n = P, gc.k = cc * kh * kw;
        gc.beta = beta_one || c0 > 0 ? 1.f : 0.f;  // later chunks accumulate
        gc.a = {n.inputs[1], false, gi * OCg * K + c0 * kh * kw}, gc.lda = K;
        gc.b = col, gc.ldb = P;
        gc.c = {n.outputs[0], false, (b * OC + gi * OCg) * P}, gc.ldc = P;
        w.calls.push_back(gc);
      }
  w.routine = std::string(pointwise ? "gemm (1x1 conv)" : "im2col+gemm") + " " + gemm_dims(OCg, P, K) +
              (N * groups > 1 ? " x" + std::to_string(N * groups) : "") +
              (chunk < Cg ? " in " + std::to_string((Cg + chunk - 1) / chunk) + " channel chunks" : "");
  w.flops = 2.0 * double(N * groups) * double(OCg) * double(P) * double(K);
  r.ok = true;
  return r;
}

Match match_gemm(const Graph& g, const Node& n, const MatchContext& cx) {
  Match r;
  const Shape& a = g.tensors[n.inputs[0]].shape;
  const Shape& b = g.tensors[n.inputs[1]].shape;
  const Shape& y = g.tensors[n.outputs[0]].shape;
  if (a.size() != 2 || b.size() != 2 || y.size() != 2) return r.no("operands not 2-D");
  bool ta = n.get_int("transA", 0) != 0, tb = n.get_int("transB", 0) != 0;
  int64_t M = ta ? a[1] : a[0], K = ta ? a[0] : a[1], N = tb ? b[0] : b[1];
  NodeWork& w = r.work;
  GemmCall gc;
  gc.ta = ta, gc.tb = tb, gc.m = M, gc.n = N, gc.k = K;
  gc.alpha = n.get_float("alpha", 1.f);
  float beta = n.get_float("beta", 1.f);
  bool has_c = n.inputs.size() > 2 && n.inputs[2] >= 0 && beta != 0.f;
  if (has_c) {
    if (!broadcastable(g.tensors[n.inputs[2]].shape, y)) return r.no("C does not broadcast to Y");
    prefill_from(w, g, n.inputs[2], y);
  }
  gc.beta = has_c ? beta : 0.f;
  gc.a = {n.inputs[0], false, 0}, gc.lda = ta ? M : K;
  gc.b = {n.inputs[1], false, 0}, gc.ldb = tb ? K : N;
  gc.c = {n.outputs[0], false, 0}, gc.ldc = N;
  w.calls.push_back(gc);
  w.routine = "gemm " + gemm_dims(M, N, K);
  w.flops = 2.0 * double(M) * double(N) * double(K);
  r.ok = true;
  return r;
}

// MatMul (numpy batching and broadcast) and FusedMatMul (transB, epilogue).
Match match_matmul(const Graph& g, const Node& n, const MatchContext& cx) {
  Match r;
  const bool fused = n.op_type == "FusedMatMul";
  if (operand_view(n, 0) || operand_view(n, 1)) return r.no("an operand read through strides");
  if (row_norm(n)) return r.no("it layer-normalizes its rows (row-norm fusion)");
  Shape A = g.tensors[n.inputs[0]].shape, B = g.tensors[n.inputs[1]].shape;
  const Shape& y = g.tensors[n.outputs[0]].shape;
  if (A.size() < 2 || B.size() < 2) return r.no("1-D operand");
  const bool tb = fused && n.get_int("transB", 0) != 0;
  if (tb && B.size() != 2) return r.no("transB with a batched B");
  int64_t M = A[A.size() - 2], K = A.back(), N = tb ? B[0] : B.back();
  Shape ab(A.begin(), A.end() - 2), bb(B.begin(), B.end() - 2);
  size_t rank = std::max(ab.size(), bb.size());
  ab.insert(ab.begin(), rank - ab.size(), 1);
  bb.insert(bb.begin(), rank - bb.size(), 1);
  Shape batch(rank);
  for (size_t k = 0; k < rank; ++k) {
    if (ab[k] != bb[k] && ab[k] != 1 && bb[k] != 1) return r.no("batch dims do not broadcast");
    batch[k] = std::max(ab[k], bb[k]);
  }
  NodeWork& w = r.work;
  bool beta_one = false;
  if (fused) add_epilogue(w, g, n, 2, beta_one);
  GemmCall gc;
  gc.tb = tb, gc.k = K, gc.n = N;
  gc.beta = beta_one ? 1.f : 0.f;
  gc.lda = K, gc.ldb = tb ? K : N, gc.ldc = N;
  int64_t batches = element_count(batch);
  if (element_count(bb) == 1) {  // B shared by every batch: one tall GEMM
    gc.m = M * element_count(ab);
    gc.a = {n.inputs[0], false, 0}, gc.b = {n.inputs[1], false, 0}, gc.c = {n.outputs[0], false, 0};
    w.calls.push_back(gc);
    w.routine = "gemm " + gemm_dims(gc.m, N, K);
  } else {
    if (batches > 256) return r.no(std::to_string(batches) + " batches: one call each");
    std::vector<int64_t> as = lower::broadcast_strides(ab, batch), bs = lower::broadcast_strides(bb, batch);
    std::vector<int64_t> idx(rank, 0);
    gc.m = M;
    for (int64_t i = 0; i < batches; ++i) {
      int64_t ao = 0, bo = 0, rem = i;
      for (size_t k = rank; k-- > 0;) {
        idx[k] = rem % batch[k];
        rem /= batch[k];
        ao += idx[k] * as[k];
        bo += idx[k] * bs[k];
      }
      gc.a = {n.inputs[0], false, ao * M * K};
      gc.b = {n.inputs[1], false, bo * K * N};
      gc.c = {n.outputs[0], false, i * M * N};
      w.calls.push_back(gc);
    }
    w.routine = "gemm " + gemm_dims(M, N, K) + " x" + std::to_string(batches);
  }
  if (element_count(y) != batches * M * N) return r.no("output shape is not the product's");
  w.flops = 2.0 * double(batches) * double(M) * double(N) * double(K);
  r.ok = true;
  return r;
}

}  // namespace

const std::vector<Pattern>& pattern_table() {
  static const std::vector<Pattern> t = {
      {"Conv", "2-D, fp32, buffers, groups of 4+ channels (at most 8), symmetric padding", match_conv},
      {"FusedConv", "as Conv; epilogue: bias prefill, then texplan's FusedElementwise in place", match_conv},
      {"Gemm", "fp32, buffers, 2-D", match_gemm},
      {"MatMul", "fp32, buffers, rank >= 2, batches broadcast (at most 256 calls)", match_matmul},
      {"FusedMatMul", "as MatMul; a lone bias Add as prefill, other epilogues by texplan's FusedElementwise", match_matmul},
  };
  return t;
}

Match match_node(const Graph& g, const MatchContext& cx, int node) {
  const PlanInput& pin = cx.pin;
  const Node& n = g.nodes[node];
  Match r;
  for (const Pattern& p : pattern_table()) {
    if (p.op != n.op_type) continue;
    if (n.inputs.size() < 2 || n.inputs[0] < 0 || n.inputs[1] < 0 || n.outputs.empty() || n.outputs[0] < 0)
      return r.no("missing operands");
    if (!all_float(g, n)) return r.no("not fp32");
    if (!all_buffers(g, pin, n)) return r.no("a texture operand (CLBlast reads buffers)");
    if (element_count(g.tensors[n.outputs[0]].shape) == 0) return r.no("empty output");
    // CLBlast writes Y in several passes (prefill, GEMMs, epilogue): an
    // input living in Y's storage (in-place sharing) would be overwritten
    // before it is read.
    if (!pin.alias_root.empty())
      for (int t : n.inputs)
        if (t >= 0 && pin.alias_root[t] == pin.alias_root[n.outputs[0]]) return r.no("output shares an input's storage (in place)");
    r = p.match(g, n, cx);
    if (r.ok && r.work.flops < kMinOffloadFlops) {
      std::ostringstream o;
      o << "tiny: " << r.work.flops / 1e6 << " MFLOP < " << kMinOffloadFlops / 1e6 << " (texplan's kernel avoids CLBlast's launch overhead)";
      r.ok = false;
      r.reason = o.str();
    }
    return r;
  }
  return r.no("no pattern");
}

}  // namespace texplan::offload
