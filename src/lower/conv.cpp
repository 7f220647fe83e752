// Conv, ConvTranspose, Gemm and MatMul lowerings onto gemm.cl / conv.cl: the
// launches of the variant lower/conv_select.cpp chooses.
#include <optional>

#include "graph/epilogue.h"
#include "lower/conv_select.h"
#include "lower/epilogue_cl.h"
#include "lower/mma.h"
#include "lower/opencl_cpu/lowerings.h"
#include "lower/ops.h"
#include "lower/tuning.h"
#include "lower/winograd_weights.h"

namespace texplan::lower {

SpatialPad spatial_pad(const Node& n, size_t dim, size_t rank, int64_t in, int64_t out, int64_t k, int64_t s,
                       int64_t d, bool transposed, int64_t out_pad) {
  std::string auto_pad = n.get_string("auto_pad", "NOTSET");
  bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  if (transposed && (same || n.has("output_shape"))) {
    // What the full output s*(in-1)+out_pad+(k-1)*d+1 loses to reach `out`;
    // halves rounded down as the spec's Python does (a negative total pads).
    int64_t total = s * (in - 1) + out_pad + (k - 1) * d + 1 - out;
    int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
    return auto_pad == "SAME_UPPER" ? SpatialPad{half, total - half} : SpatialPad{total - half, half};
  }
  return conv_axis_pad(n, dim, rank, in, out, k, s, d);
}

namespace {

// `conv_out`: the convolution's output shape when Y is not it (a fused pool).
bool conv_geometry(const NodeBuilder& b, bool transposed, ConvGeometry& g, const Shape* conv_out = nullptr) {
  const Shape &x = b.in(0).shape, &w = b.in(1).shape, &y = conv_out ? *conv_out : b.out(0).shape;
  if (x.size() != 3 && x.size() != 4) return false;
  if (b.in(0).dtype != DataType::Float32 || b.in(1).dtype != DataType::Float32) return false;
  if (b.has_in(2) && b.in(2).dtype != DataType::Float32) return false;
  size_t rank = x.size() - 2;
  const Node& n = b.node;
  std::vector<int64_t> s = n.get_ints("strides", std::vector<int64_t>(rank, 1));
  std::vector<int64_t> d = n.get_ints("dilations", std::vector<int64_t>(rank, 1));
  std::vector<int64_t> op = n.get_ints("output_padding", std::vector<int64_t>(rank, 0));
  if (s.size() != rank || d.size() != rank || op.size() != rank) return false;
  g.N = x[0], g.C = x[1], g.OC = y[1], g.groups = n.get_int("group", 1);
  auto spatial = [&](size_t k, int64_t& in, int64_t& out, int64_t& kk, int64_t& st, int64_t& dl, int64_t& p) {
    in = x[2 + k], out = y[2 + k], kk = w[2 + k], st = s[k], dl = d[k];
    p = spatial_pad(n, k, rank, in, out, kk, st, dl, transposed, op[k]).begin;
  };
  if (rank == 2) spatial(0, g.H, g.OH, g.KH, g.sh, g.dh, g.ph);
  spatial(rank - 1, g.W, g.OW, g.KW, g.sw, g.dw, g.pw);
  return g.groups > 0 && g.C % g.groups == 0 && g.OC % g.groups == 0;
}

Dims batch_dims(std::vector<int64_t> v) { return to_dims(v, 1); }

// conv_winograd.cl's weights, packed once so that a chunk of kWinogradCK
// input channels is one contiguous block: [OC / 32][CP][taps][32], zeros
// past OC and C (CP: C rounded up to the chunk), with taps the 16 values of
// G g G^T (`transformed`, 16/9 of the weights' bytes) or the 9 raw ones.
std::vector<float> winograd_weights(const HostTensor& weights, int64_t OC, int64_t C, bool transformed) {
  const std::vector<float> w = weights.as_float();
  const int64_t CP = ceil_div(C, kWinogradCK) * kWinogradCK, taps = transformed ? 16 : 9;
  std::vector<float> p(size_t(ceil_div(OC, 32) * CP * taps * 32), 0.0f);
  double u[16];
  for (int64_t oc = 0; oc < OC; ++oc)
    for (int64_t c = 0; c < C; ++c) {
      const float* g = w.data() + (oc * C + c) * 9;
      if (transformed) winograd_filter_transform(g, 2, u);
      for (int64_t k = 0; k < taps; ++k)
        p[size_t((((oc / 32) * CP + c) * taps + k) * 32 + oc % 32)] = transformed ? float(u[k]) : g[k];
    }
  return p;
}

// conv_winograd.cl's launches for variant `v` (whole, or split over the
// input channels with gemm.cl's zero and finish passes); PH, PW > 0: the
// 2x2 stride-2 max pool of the output (POOL2, never split).
void launch_winograd(NodeBuilder& b, const ConvGeometry& g, bool has_bias, const TensorArg& bias, const FusedTail& tail,
                     const Variant& v, int64_t PH = 0, int64_t PW = 0) {
  // --precision tf32: the transforms' products on the tensor cores (WG_MMA).
  const bool mma = b.tf32 && tf32_runs(b);
  // Tiles per work-group (BT): 32, or 16 in 128-item groups (fp32 only;
  // the variant's form double-buffered, forced forms as forced).
  const Forced f = forced(b);
  const bool halves = !mma && v.wg_tiles == 16;
  const int64_t bt = mma ? 32 : halves ? 16 : f.winograd_tiles;
  const bool db = !mma && (halves || f.winograd_db);
  const int64_t tiles = ceil_div(g.OH, 2) * ceil_div(g.OW, 2), total = g.N * g.OC * g.OH * g.OW;
  Range r = group_range({size_t(ceil_div(tiles, bt)), size_t(ceil_div(g.OC, 32)), size_t(g.N * v.splits)},
                        {size_t(8 * bt), 1, 1});
  const bool pre = f.winograd_weights != "raw";
  // WG_PAIRS: input rows as aligned float2s, where W and X's offset are even.
  const bool pairs = f.winograd_pairs && g.W % 2 == 0 && b.arg_in(0).offset % 2 == 0;
  const std::string build = f.winograd_build + (bt != 32 ? " -DWG_BT=" + std::to_string(bt) : "") +
                            (db ? " -DWG_DB" : "") + (db && f.winograd_ck8 ? " -DWG_CK=8" : "") +
                            (pairs ? std::string(" -DWG_PAIRS=") + (g.pw % 2 ? "1" : "2") : "");
  // TEXPLAN_PTX on NVIDIA: split-K's red.global.add (common.cl split_add); nothing else reads it here.
  auto source = [&](const std::string& defines, const std::string& prelude) {
    const std::string form = defines + build + (pre ? " -DWG_PRE" : "");
    if (mma) return mma_build(b, "conv_winograd.cl", form + " -DWG_MMA", prelude);
    return Source("conv_winograd.cl", form + (accepts_inline_ptx(b.device()) ? " -DTEXPLAN_PTX" : ""),
                  prelude);
  };
  const MemArg weights = b.packed(pre ? "winograd u" : "winograd g", [&] {
    return winograd_weights(*b.constant(1), g.OC, g.C, pre);
  });
  ConvParams p = conv_params(g, has_bias);
  auto args = [&](const Source& src) {
    launch_conv_kernel(b, src, "conv2d_winograd", r, TensorArg{weights.mem, 0}, bias, p);
  };
  if (mma) b.used_tf32 = true;
  if (PH > 0) {
    p.pool_h = i32(PH), p.pool_w = i32(PW);
    args(source("-DPOOL2", tail.prelude));
    tail.append_args(b);
  } else if (v.splits > 1) {
    launch_splitk_zero(b, Source("gemm.cl", "-DSPLITK"), b.arg_out(0), total, tail);
    p.splits = i32(v.splits), p.kslice = i32(v.kslice);
    args(source("-DSPLITK", ""));
    launch_splitk_finish(b, b.arg_out(0), total, tail);
  } else {
    args(source("", tail.prelude));
    tail.append_args(b);
  }
}

}  // namespace

// Whether Y's planned storage overlaps an input's (in-place sharing, e.g. a
// residual): split-K zeroes Y before the slices read the inputs and adds
// into it, so it must not.
bool output_overlaps_input(const NodeBuilder& b, int except) {
  const TensorArg y = b.arg_out(0);
  const int64_t ye = int64_t(b.stored_size(b.out(0).dtype));
  const int64_t y0 = int64_t(y.offset) * ye, y1 = y0 + element_count(b.out(0).shape) * ye;
  for (int i = 0; i < b.inputs(); ++i) {
    if (!b.has_in(i) || i == except) continue;
    const TensorArg x = b.arg_in(i);
    const int64_t xe = int64_t(b.stored_size(b.in(i).dtype));
    const int64_t x0 = int64_t(x.offset) * xe, x1 = x0 + element_count(b.in(i).shape) * xe;
    if (x.mem == y.mem && x0 < y1 && y0 < x1) return true;
  }
  return false;
}

// Split-K's passes around the slices' launch (prepared between them): Y's
// `total` elements zeroed, and after the slices the epilogue in place, where
// there is one.
// With Y over its residual (FusedTail::residual), nothing is zeroed
// and the finish pass runs the program after the residual Add.
bool splits_onto_residual(const NodeBuilder& b, const FusedTail& tail) {
  return tail.residual && output_overlaps_input(b);
}
void launch_splitk_zero(NodeBuilder& b, const Source& split, const TensorArg& Y, int64_t total, const FusedTail& tail) {
  b.used_split_k = true;  // every split lowering starts here but SPLITK_ONE's
  if (splits_onto_residual(b, tail)) return;
  b.launch(split, "splitk_zero", linear_range(total), Y, i32(total));
  b.launches.back().zeroes = Y, b.launches.back().zero_count = total;
}
// The epilogue after the slices: the tail's program, or over the residual the program after its Add.
const std::string& splitk_finish_prelude(const NodeBuilder& b, const FusedTail& tail) {
  return splits_onto_residual(b, tail) ? tail.residual_prelude : tail.prelude;
}
void launch_splitk_finish(NodeBuilder& b, const TensorArg& Y, int64_t total, const FusedTail& tail) {
  const std::string& prelude = splitk_finish_prelude(b, tail);
  if (prelude.empty()) return;
  b.launch(Source("gemm.cl", "", prelude), "splitk_finish", linear_range(total), Y, i32(total), Y, i32(0));
  b.launches.back().zero_args = 3;  // Z, zo, ztotal: nothing to zero until absorb_zeroing
  tail.append_args(b);
}
bool splits_add_bias(const NodeBuilder& b, const FusedTail& tail, GemmParams& p, TensorArg& C) {
  if (!splits_onto_residual(b, tail) || !tail.residual_bias || p.has_c) return false;
  C = *tail.residual_bias;
  p.has_c = 1, p.beta = 1, p.c_sm = 0, p.c_sn = 1, p.c_sb = Dims{};
  return true;
}
bool splitk_takes_both_passes(const NodeBuilder& b, const FusedTail& tail) {
  return !splits_onto_residual(b, tail) && !splitk_finish_prelude(b, tail).empty();
}

namespace {

// "kernel 1,2,3": a tuning cache key.
std::string shape_key(const char* kernel, std::initializer_list<int64_t> v) {
  std::string s = kernel;
  char sep = ' ';
  for (int64_t x : v) {
    s += sep;
    s += std::to_string(x);
    sep = ',';
  }
  return s;
}

// ROW_NORM's build: with rows of at most 64 floats an item (RN_PER), the
// normalizing group holds its rows in registers, read once (gemm.cl).
std::string row_norm_defines(const Tiles& t, const FusedTail& tail) {
  if (!tail.row_norm) return "";
  const int64_t items = 256 / (16 * t.wptm), per = ceil_div(tail.row_norm->row, items);
  return " -DROW_NORM" + (per <= 64 ? " -DRN_PER=" + std::to_string(per) : std::string());
}

Source gemm_source(const Tiles& t, const FusedTail& tail, int64_t depth = kTK) {
  return Source("gemm.cl", "-DWPTM=" + std::to_string(t.wptm) + " -DWPTN=" + std::to_string(t.wptn) +
                               (t.vec ? " -DVEC" : "") + (depth != kTK ? " -DTK=" + std::to_string(depth) : "") +
                               row_norm_defines(t, tail),
                tail.prelude + tail.xprogram_prelude);
}

// The split-K build of gemm.cl's tiles (no epilogue but in SPLITK_ONE's
// `prelude`: splitk_finish applies it); on NVIDIA's driver the adds are PTX
// reductions, elsewhere (PoCL's CUDA device included: NVIDIA vendor, another
// compiler) compare-and-swap loops.
Source split_source(const Tiles& t, const NodeBuilder& b, const std::string& prelude = "") {
  return Source("gemm.cl", "-DWPTM=" + std::to_string(t.wptm) + " -DWPTN=" + std::to_string(t.wptn) +
                               (t.vec ? " -DVEC" : "") + " -DSPLITK" +
                               (accepts_inline_ptx(b.device()) ? " -DTEXPLAN_PTX" : ""),
                prelude);
}

// Prepared `gemm` launch; `batch` and the *_sb strides describe the batch.
struct GemmArgs {
  int64_t M, N, K, a_sm, a_sk, b_sk, b_sn, c_sm = 0, c_sn = 0;
  bool has_c = false;
  float alpha = 1, beta = 1;
  std::vector<int64_t> batch{1}, a_sb{0}, b_sb{0}, c_sb{0};
  bool narrow_tiles = true;  // among the candidates (not for 1x1 convs: docs/kernel-choices.md#the-gemm-time-model)
};

// GEMMs with a single row or column become matrix-vector products; the
// others take register tiles chosen by choose_tiles.
void launch_gemm(NodeBuilder& b, const TensorArg& A, const TensorArg& B, const TensorArg& C, const TensorArg& Y,
                 const GemmArgs& g, const FusedTail& tail) {
  if (b.device_type() == "cpu" && !b.gpu_kernels_forced() && !tail.xprogram() && !tail.row_norm &&
      launch_gemm_cpu(b, A, B, C, Y, g, tail))
    return;  // PoCL: lower/opencl_cpu/conv_gemm.cpp
  int64_t nb = 1;
  for (int64_t d : g.batch) nb *= d;
  if (g.M == 0 || g.N == 0 || nb == 0) return;
  if ((g.M == 1 || g.N == 1) && g.K >= 64 && !tail.xprogram() && !tail.row_norm) {
    bool col = g.N == 1;  // outputs run along M: rows of A times B's column
    int64_t outputs = col ? g.M : g.N;
    const TensorArg &mat = col ? A : B, &vec = col ? B : A;
    const int64_t m_so = col ? g.a_sm : g.b_sn, m_sk = col ? g.a_sk : g.b_sk, v_sk = col ? g.b_sk : g.a_sk;
    bool vec4 = !b.half && m_sk == 1 && v_sk == 1 && g.K % 4 == 0 && mat.offset % 4 == 0 && vec.offset % 4 == 0 &&
                m_so % 4 == 0;
    for (int64_t st : col ? g.a_sb : g.b_sb) vec4 = vec4 && st % 4 == 0;
    for (int64_t st : col ? g.b_sb : g.a_sb) vec4 = vec4 && st % 4 == 0;
    b.launch(Source("gemm.cl", vec4 ? "-DGV_VEC4" : "", tail.prelude), "gemv", group_range({size_t(outputs), size_t(nb)}, {64, 1}),
             mat, vec, C, Y, i32(outputs), i32(g.K), i32(m_so), i32(m_sk), i32(v_sk), i32(col ? g.c_sm : g.c_sn),
             cl_int(g.has_c),
             g.alpha, g.beta, batch_dims(g.batch), to_dims(col ? g.a_sb : g.b_sb, 0),
             to_dims(col ? g.b_sb : g.a_sb, 0), to_dims(g.c_sb, 0));
    tail.append_args(b);
    return;
  }
  if (!tail.window && !tail.xwindow && !tail.xprogram() && !tail.row_norm && launch_gemm_mma(b, A, B, C, Y, g, tail))
    return;  // --precision tf32
  const int64_t total = nb * g.M * g.N;
  bool one_launch = false;  // split-K in one launch (SPLITK_ONE)
  auto emit = [&](const Variant& v) {
    const Tiles& t = *v.tiles;
    if (v.kgroups) {
      // Operands read as float4s where four elements run contiguous along
      // the slice's fast coordinate and whole quads stay inside K or N.
      std::string defines = kgroups_defines(v);
      if (g.a_sk == 1 && g.K % 4 == 0) defines += " -DKG_A4";
      if (g.b_sn == 1 && g.N % 4 == 0 && !tail.xwindow) defines += " -DKG_B4N";
      else if (g.b_sk == 1 && g.K % 4 == 0) defines += " -DKG_B4K";
      Range r = group_range({size_t(ceil_div(g.N, t.tn())), size_t(ceil_div(g.M, t.tm())), size_t(nb)},
                            {64, size_t(v.kgroups), 1});
      launch_gemm_kernel(b, Source("gemm_kgroups.cl", defines, tail.prelude + tail.xprogram_prelude), "gemm_kgroups", r, A, B,
                         C, Y, gemm_params(g));
      tail.append_args(b);
      tail.append_xprogram_args(b);
      return;
    }
    Range r = group_range({size_t(ceil_div(g.N, t.tn())), size_t(ceil_div(g.M, t.tm())), size_t(nb * v.splits)},
                          {16, 16, 1});
    if (v.splits > 1 && one_launch) {
      // SPLITK_ONE: the slices zero the tiles and apply the epilogue
      // (Y over no residual: the tail's whole program) themselves (gemm.cl split_start).
      b.used_split_k = true;
      Source split = split_source(t, b, tail.prelude + tail.xprogram_prelude);
      split.defines += " -DSPLITK_ONE";
      GemmParams p = gemm_params(g);
      p.splits = i32(v.splits), p.kslice = i32(v.kslice);
      launch_gemm_kernel(b, split, "gemm", r, A, B, C, Y, p);
      tail.append_args(b);
      tail.append_xprogram_args(b);
      b.more_args(b.semaphores(3 * size_t(r.global[0] / r.local[0]) * size_t(r.global[1] / r.local[1]) * size_t(nb)));
      return;
    }
    if (v.splits > 1) {
      Source split = split_source(t, b, tail.xprogram_prelude);
      launch_splitk_zero(b, split, Y, total, tail);
      GemmParams p = gemm_params(g);
      p.splits = i32(v.splits), p.kslice = i32(v.kslice);
      TensorArg c = C;
      const bool bias = splits_add_bias(b, tail, p, c);
      launch_gemm_kernel(b, split, "gemm", r, A, B, c, Y, p);
      tail.append_xprogram_args(b);
      if (!bias) launch_splitk_finish(b, Y, total, tail);
      return;
    }
    launch_gemm_kernel(b, gemm_source(t, tail, v.depth), "gemm", r, A, B, C, Y, gemm_params(g));
    tail.append_args(b);
    tail.append_xprogram_args(b);
    if (const auto& rn = tail.row_norm) {  // a semaphore per batch and row block (gemm.cl ROW_NORM)
      b.more_args(b.semaphores(size_t(nb) * size_t(r.global[1] / r.local[1])));
      b.more_args(b.semaphores(size_t(g.N)));  // RSCR: the scratch row of rows past M (floats, any values)
      b.more_args(rn->gamma);
      b.more_args(rn->has_beta ? rn->beta : rn->gamma);
      b.more_args(cl_int(rn->has_beta));
      b.more_args(rn->epsilon);
    }
  };
  if (tail.xdepthwise) {
    // Split with one pass at most (zeroing Y, or the epilogue after) where
    // that is all it takes; where it would take both, in one launch, which
    // then beats the unsplit tiles
    // (docs/kernel-choices.md#split-k-in-one-launch-tried-kept-for-depthwise-inputs).
    one_launch = splitk_takes_both_passes(b, tail);
    emit(depthwise_input_variant(b, g.M, g.N, g.K, nb, split_k_allowed(b, g.K, total, tail, one_launch)));
    return;
  }
  // K-groups pay where K is long against the output: at least two of its
  // 64-deep steps (docs/kernel-choices.md#k-groups).
  const bool can_kgroups = g.K >= 128 && !tail.row_norm;
  emit(pick_variant(b, shape_key(tail.row_norm ? "gemm_row_norm" : "gemm", {g.M, g.N, g.K, nb, g.a_sk == 1, g.b_sn == 1}),
                    g.M, g.N, g.K, nb, !tail.row_norm && split_k_allowed(b, g.K, total, tail), emit, nullptr,
                    can_kgroups, true, g.narrow_tiles));
}

}  // namespace

void FusedTail::append_args(NodeBuilder& b) const {
  for (const Input& in : inputs) {
    b.more_args(in.arg);
    if (in.strided) b.more_args(in.strides);
  }
  if (strided) b.more_args(dims);
  if (copy) {
    b.more_args(copy->to);
    b.more_args(copy->plane);
  }
  if (window) {
    b.more_args(ywin_dims);
    b.more_args(ywin_strides);
  }
  if (xwindow)
    for (const cl_int v : {xwin_plane, xwin_row, xwin_w}) b.more_args(v);
}

void FusedTail::append_xprogram_args(NodeBuilder& b) const {
  if (xdepthwise) {
    b.more_args(xdepthwise_weights);
    b.more_args(xdepthwise_dims);
  }
  for (const TensorArg& a : xprogram_args) b.more_args(a);
}

bool lower_conv(NodeBuilder& b) { return lower_conv(b, FusedTail{}); }

bool lower_conv(NodeBuilder& b, const FusedTail& fused) {
  FusedTail tail = fused;
  // A patch's windows: every variant below but split-K, tf32's tiles and
  // (for X) Winograd's GPU form writes Y through YI and reads X through XPLANE.
  window_output(b, tail);
  window_input(b, tail);
  if (b.device_type() == "cpu" && !b.gpu_kernels_forced() && !tail.xprogram() && lower_conv_cpu(b, tail))
    return true;  // PoCL: lower/opencl_cpu/conv_gemm.cpp
  if (channel_scaled(b.node)) return false;  // the GPU kernels do not scale X: the CPU runs it
  const Forced f = forced(b);
  ConvGeometry g;
  if (!conv_geometry(b, false, g)) return false;
  bool has_bias = b.has_in(2);
  // Without a bias, a dummy the kernels do not read: not the weights, which
  // Winograd reads from a packed copy and then never uploads.
  TensorArg bias = has_bias ? b.arg_in(2) : b.arg_in(0);
  int64_t ICg = g.C / g.groups, OCg = g.OC / g.groups;
  if (g.N * g.OC * g.OH * g.OW == 0) return true;
  const bool plain_1x1 = g.KH == 1 && g.KW == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0;
  // A channel program: the 1x1 GEMM's tiles only; elsewhere the CPU runs the node.
  if (tail.xprogram() && (!plain_1x1 || g.groups != 1 || tail.xwindow)) return false;

  if (g.groups == g.C && ICg == 1 && !tail.xprogram()) {  // depthwise
    Range r = group_range({size_t(ceil_div(ceil_div(g.OW, 4), 16)), size_t(ceil_div(g.OH, 4)), size_t(g.N * g.OC)},
                          {16, 4, 1});
    launch_conv_kernel(b, Source("conv.cl", "", tail.prelude), "conv2d_depthwise", r, b.arg_in(1), bias,
                       conv_params(g, has_bias));
    tail.append_args(b);
    return true;
  }
  if (plain_1x1) {  // 1x1: a plain GEMM
    // Y's pixels; X's plane stride (with a depthwise input, X is the
    // depthwise conv's input, its pixels not Y's).
    const int64_t HW = g.OH * g.OW, plane = tail.xwindow ? tail.xwin_plane : g.H * g.W;
    GemmArgs a{OCg, HW, ICg, ICg, 1, plane, 1};
    a.c_sm = 1, a.c_sn = 0, a.has_c = has_bias;
    a.batch = {g.N, g.groups};
    a.a_sb = {0, OCg * ICg};
    a.b_sb = {g.C * plane, ICg * plane};
    a.c_sb = {0, OCg};
    a.narrow_tiles = false;
    launch_gemm(b, b.arg_in(1), b.arg_in(0), bias, b.arg_out(0), a, tail);
    return true;
  }
  const int64_t K = ICg * g.KH * g.KW, total = g.N * g.OC * g.OH * g.OW;
  const std::optional<WinogradShape> wino = winograd_shape(b, g);
  if (wino && winograd_before_tf32(b, *wino, false)) {
    const bool can_split = split_k_allowed(b, K, total, tail);
    const int64_t cu = std::max(1, b.compute_units());
    launch_winograd(b, g, has_bias, bias, tail,
                    f.winograd ? forced_winograd(f, *wino, can_split, cu)
                                      : winograd_by_shape(*wino, can_split, cu, false));
    return true;
  }
  if (!tail.window && !tail.xwindow && launch_conv_mma(b, g, has_bias, bias, tail)) return true;  // --precision tf32
  auto emit = [&](const Variant& v) {
    if (!v.tiles) return launch_winograd(b, g, has_bias, bias, tail, v);
    const Tiles& t = *v.tiles;
    Range r = group_range({size_t(ceil_div(g.OH * g.OW, t.tn())), size_t(ceil_div(OCg, t.tm())),
                           size_t(g.N * g.groups * v.splits)},
                          {16, 16, 1});
    if (v.splits > 1) {
      Source split = split_source(t, b);
      launch_splitk_zero(b, split, b.arg_out(0), total, tail);
      ConvParams p = conv_params(g, has_bias);
      p.splits = i32(v.splits), p.kslice = i32(v.kslice);
      launch_conv_kernel(b, split, "conv2d_gemm", r, b.arg_in(1), bias, p);
      launch_splitk_finish(b, b.arg_out(0), total, tail);
      return;
    }
    launch_conv_kernel(b, gemm_source(t, tail, v.depth), f.taps ? "conv2d_gemm_taps" : "conv2d_gemm", r, b.arg_in(1),
                       bias, conv_params(g, has_bias));
    tail.append_args(b);
  };
  std::string key = shape_key("conv2d_gemm", {g.N, g.C, g.H, g.W, g.OC, g.OH, g.OW, g.KH, g.KW, g.sh, g.sw, g.ph,
                                              g.pw, g.dh, g.dw, g.groups});
  emit(pick_variant(b, key, OCg, g.OH * g.OW, K, g.N * g.groups, !f.taps && split_k_allowed(b, K, total, tail),
                    emit, wino ? &*wino : nullptr));
  return true;
}

// FusedConvMaxPool (docs/fused-ops.md): Y = MaxPool(program(conv + B)), the
// conv output never stored. 2x2 windows of stride 2 (VGG, U-Net): the
// implicit GEMM with N enumerating (pooled pixel, window position), so each
// work-item holds whole windows in its float4 column groups (VEC tiles) and
// stores their max. Other windows (overlapping stems): conv_maxpool.cl's
// tiles, the conv region under a tile of pooled outputs computed once from
// local memory (ResNet's stem: 1.2x the conv's work), else conv.cl's direct
// kernel, one work-item per pooled output recomputing the conv at each
// window position (2.25x for 3x3/2 windows).
bool lower_fused_conv_maxpool(NodeBuilder& b) {
  const Node& n = b.node;
  const Shape &x = b.in(0).shape, &w = b.in(1).shape, &y = b.out(0).shape;
  if (x.size() != 4 || w.size() != 4 || y.size() != 4 || b.inputs() > 3) return false;
  std::vector<int64_t> s = n.get_ints("strides", {1, 1}), d = n.get_ints("dilations", {1, 1});
  if (s.size() != 2 || d.size() != 2) return false;
  Shape conv_out = {x[0], y[1], conv_out_extent(n, 0, 2, x[2], w[2], s[0], d[0]),
                    conv_out_extent(n, 1, 2, x[3], w[3], s[1], d[1])};
  ConvGeometry g;
  if (!conv_geometry(b, false, g, &conv_out) || g.OH <= 0 || g.OW <= 0) return false;
  std::vector<int64_t> pk = n.get_ints("pool_kernel_shape"), ps = n.get_ints("pool_strides", {1, 1}),
                       pp = n.get_ints("pool_pads", {0, 0, 0, 0}), pd = n.get_ints("pool_dilations", {1, 1});
  if (pk.size() != 2 || ps.size() != 2 || pp.size() != 4 || pd.size() != 2) return false;
  if (n.get_string("pool_auto_pad", "NOTSET") != "NOTSET") return false;
  FusedTail tail;
  Epilogue e = fused_epilogue(b);
  if (e.inputs() > 1) throw Error("program reads x" + std::to_string(e.inputs() - 1) + " but the node has no epilogue inputs");
  tail.prelude = epilogue_cl(e, {EpilogueRead::Value});
  tail.transcendental = e.transcendental();
  window_output(b, tail);
  window_input(b, tail);
  const bool has_bias = b.has_in(2);
  const TensorArg bias = has_bias ? b.arg_in(2) : b.arg_in(0);  // a dummy (see lower_conv)
  const int64_t PH = y[2], PW = y[3], OCg = g.OC / g.groups;
  if (g.N * g.OC * PH * PW == 0) return true;
  const bool pairs = pk == std::vector<int64_t>{2, 2} && ps == std::vector<int64_t>{2, 2} &&
                     pp == std::vector<int64_t>{0, 0, 0, 0} && pd == std::vector<int64_t>{1, 1};
  const std::optional<WinogradShape> wino = pairs ? winograd_shape(b, g) : std::nullopt;
  if (wino && winograd_before_tf32(b, *wino, true)) {
    launch_winograd(b, g, has_bias, bias, tail, Variant{nullptr}, PH, PW);
    return true;
  }
  if (pairs && !tail.window && !tail.xwindow && launch_conv_mma(b, g, has_bias, bias, tail, PH, PW)) return true;  // --precision tf32
  if (pairs && (b.device_type() == "gpu" || b.gpu_kernels_forced())) {
    const Forced f = forced(b);
    const Tiles* t = f.tiles;
    if (!t || !t->vec) {  // the heuristic's tiles, in their float4 form
      const Tiles& c = choose_tiles(b, OCg, PH * PW * 4, g.N * g.groups);
      t = &tiles_named(c.wptm == 2 ? "64x64v" : (std::string(c.name) + (c.vec ? "" : "v")).c_str());
    }
    // Winograd's 2x2 output tiles are the pool's windows: forced, or in its
    // form by shape where that costs less than these tiles (never split: a
    // max of partial sums).
    if (const auto& w = wino) {
      const int64_t cu = std::max(1, b.compute_units());
      const Variant v = f.winograd ? Variant{nullptr} : winograd_by_shape(*w, false, cu, !b.tf32);
      if (f.winograd || ((w->OC >= 64 || w->groups() >= cu) &&
                         winograd_cost(v, *w, cu) < variant_cost(Variant{t}, OCg, PH * PW * 4, g.C * 9, g.N, cu))) {
        launch_winograd(b, g, has_bias, bias, tail, v, PH, PW);
        return true;
      }
    }
    Range r = group_range(
        {size_t(ceil_div(PH * PW * 4, t->tn())), size_t(ceil_div(OCg, t->tm())), size_t(g.N * g.groups)}, {16, 16, 1});
    Source src("gemm.cl", "-DWPTM=" + std::to_string(t->wptm) + " -DWPTN=" + std::to_string(t->wptn) + " -DVEC -DPOOL2",
               tail.prelude);
    ConvParams p = conv_params(g, has_bias);
    p.pool_h = i32(PH), p.pool_w = i32(PW);
    launch_conv_kernel(b, src, "conv2d_gemm", r, b.arg_in(1), bias, p);
    tail.append_args(b);
    return true;
  }
  // Other windows: the tiled kernel where a tile fits local memory (forced,
  // else the tuning cache's choice, else the tile of least cost:
  // docs/kernel-choices.md#conv--maxpool-tiles-on-gpus), the direct kernel
  // where none fits.
  const PoolGeometry pg{PH, PW, pk[0], pk[1], ps[0], ps[1], pp[0], pp[1], pd[0], pd[1]};
  std::vector<TiledConvMaxPool> fits;
  for (const PoolTile& t : kPoolTiles)
    if (auto f = fit_pool_tile(g, pg, t, b.local_mem_bytes()); f && !tail.xwindow) fits.push_back(*f);  // X a window: direct
  const int64_t images = g.N * g.groups, cu = std::max(1, b.compute_units());
  int fallback = -1;  // index into fits; -1: direct
  for (int i = 0; i < int(fits.size()); ++i)
    if (fallback < 0 || fits[size_t(i)].cost(images, cu) < fits[size_t(fallback)].cost(images, cu)) fallback = i;
  auto emit = [&](int i) {
    if (i < 0 || i >= int(fits.size())) {
      int64_t total = g.N * g.OC * PH * PW;
      b.launch(Source("conv.cl", "", tail.prelude), "conv2d_maxpool", linear_range(total), b.arg_in(0), b.arg_in(1),
               bias, b.arg_out(0), cl_int(has_bias), i32(g.C), i32(g.H), i32(g.W), i32(g.OC), i32(g.OH), i32(g.OW),
               i32(g.KH), i32(g.KW), i32(g.sh), i32(g.sw), i32(g.ph), i32(g.pw), i32(g.dh), i32(g.dw), i32(g.groups),
               i32(PH), i32(PW), i32(pk[0]), i32(pk[1]), i32(ps[0]), i32(ps[1]), i32(pp[0]), i32(pp[1]), i32(pd[0]),
               i32(pd[1]), i32(total));
      tail.append_args(b);
      return;
    }
    const TiledConvMaxPool& f = fits[size_t(i)];
    Range r = group_range({size_t(f.tiles_x), size_t(f.tiles_y), size_t(images * f.oc_blocks)},
                          {size_t(f.tile->wg), 1, 1});
    b.launch(Source("conv_maxpool.cl", f.defines, tail.prelude), "conv2d_maxpool_tiled", r, b.arg_in(0), b.arg_in(1), bias,
             b.arg_out(0), cl_int(has_bias), i32(g.C), i32(g.H), i32(g.W), i32(g.OC), i32(g.OH), i32(g.OW), i32(g.ph),
             i32(g.pw), i32(g.groups), i32(PH), i32(PW), i32(pp[0]), i32(pp[1]), i32(f.oc_blocks));
    tail.append_args(b);
  };
  int choice = fallback;
  if (const ForcedPool forced_pool = parse_pool_variant(b.kernel_choice.conv_maxpool); forced_pool.set) {
    choice = -1;
    for (int i = 0; i < int(fits.size()); ++i)
      if (fits[size_t(i)].tile == forced_pool.tile) choice = i;
  } else {
    std::vector<std::string> names;
    for (const TiledConvMaxPool& f : fits) names.push_back(std::string("tiled:") + f.tile->name);
    names.push_back("direct");
    std::string key = shape_key("conv2d_maxpool", {g.N, g.C, g.H, g.W, g.OC, g.OH, g.OW, g.KH, g.KW, g.sh, g.sw, g.ph,
                                                   g.pw, g.dh, g.dw, g.groups, PH, PW, pk[0], pk[1], ps[0], ps[1],
                                                   pp[0], pp[1], pd[0], pd[1]});
    choice = choose_variant(key, names, fallback < 0 ? int(fits.size()) : fallback,
                            [&](int i) { return time_candidate(b, [&] { return emit(i), true; }); });
  }
  emit(choice);
  return true;
}

bool lower_conv_transpose(NodeBuilder& b) {
  if (b.device_type() == "cpu" && !b.gpu_kernels_forced() && lower_conv_transpose_cpu(b)) return true;  // PoCL: lower/opencl_cpu/conv_gemm.cpp
  ConvGeometry g;
  if (!conv_geometry(b, true, g)) return false;
  bool has_bias = b.has_in(2);
  int64_t OCg = g.OC / g.groups, blocks = ceil_div(OCg, 4);
  if (g.N * g.OC * g.OH * g.OW == 0) return true;
  TensorArg bias = has_bias ? b.arg_in(2) : b.arg_in(1);
  // Taps that tile the output exactly (UNet's 2x2 stride 2): one GEMM.
  if (g.sh == g.KH && g.sw == g.KW && g.dh == 1 && g.dw == 1 && g.ph == 0 && g.pw == 0 && g.OH == g.H * g.KH &&
      g.OW == g.W * g.KW) {
    int64_t M = OCg * g.KH * g.KW, N = g.H * g.W;
    const Tiles& t = choose_tiles(b, M, N, g.N * g.groups);
    Range r = group_range({size_t(ceil_div(N, t.tn())), size_t(ceil_div(M, t.tm())), size_t(g.N * g.groups)}, {16, 16, 1});
    b.launch(gemm_source(t, FusedTail{}), "conv_transpose2d_gemm", r, b.arg_in(0), b.arg_in(1), bias, b.arg_out(0),
             cl_int(has_bias), i32(g.C), i32(g.H), i32(g.W), i32(g.OC), i32(g.KH), i32(g.KW), i32(g.groups));
    return true;
  }
  Range r = group_range({size_t(ceil_div(g.OW, 16)), size_t(ceil_div(g.OH, 4)), size_t(g.N * g.groups * blocks)},
                        {16, 4, 1});
  b.launch("conv.cl", "conv_transpose2d", r, b.arg_in(0), b.arg_in(1), bias, b.arg_out(0), cl_int(has_bias), i32(g.C), i32(g.H), i32(g.W), i32(g.OC), i32(g.OH), i32(g.OW), i32(g.KH),
           i32(g.KW), i32(g.sh), i32(g.sw), i32(g.ph), i32(g.pw), i32(g.dh), i32(g.dw), i32(g.groups));
  return true;
}

bool lower_gemm(NodeBuilder& b) {
  for (int i = 0; i < b.inputs(); ++i)
    if (b.has_in(i) && b.in(i).dtype != DataType::Float32) return false;
  const Shape &A = b.in(0).shape, &B = b.in(1).shape;
  if (A.size() != 2 || B.size() != 2) return false;
  bool ta = b.node.get_int("transA", 0) != 0, tb = b.node.get_int("transB", 0) != 0;
  int64_t M = ta ? A[1] : A[0], K = ta ? A[0] : A[1], N = tb ? B[0] : B[1];
  GemmArgs a{M, N, K, ta ? 1 : K, ta ? M : 1, tb ? 1 : N, tb ? K : 1};
  a.alpha = b.node.get_float("alpha", 1.0f);
  a.beta = b.node.get_float("beta", 1.0f);
  a.has_c = b.has_in(2);
  if (a.has_c) {
    std::vector<int64_t> cs = broadcast_strides(b.in(2).shape, {M, N});
    a.c_sm = cs[0], a.c_sn = cs[1];
  }
  launch_gemm(b, b.arg_in(0), b.arg_in(1), a.has_c ? b.arg_in(2) : b.arg_in(0), b.arg_out(0), a, FusedTail{});
  return true;
}

// A MatMul whose operands (one at least) are read through OperandViews
// (optimize/views.cpp; ranks 2 and more): the GEMM's row, column and batch
// strides are the views', numpy-broadcast over the batch dims.
static bool lower_strided_matmul(NodeBuilder& b, const std::optional<OperandView>& va, const std::optional<OperandView>& vb,
                          const FusedTail& tail) {
  const Shape A = va ? va->shape : b.in(0).shape, B = vb ? vb->shape : b.in(1).shape;
  if (A.size() < 2 || B.size() < 2) return false;
  const std::vector<int64_t> sa = va ? va->strides : contiguous_strides(A), sb = vb ? vb->strides : contiguous_strides(B);
  const int64_t M = A[A.size() - 2], K = A.back(), N = B.back();
  if (B[B.size() - 2] != K) return false;
  const size_t rank = std::max(A.size(), B.size()) - 2;
  Shape batch(rank, 1);
  std::vector<int64_t> as(rank, 0), bs(rank, 0);
  auto align = [&](const Shape& s, const std::vector<int64_t>& st, std::vector<int64_t>& out) {
    const size_t r = s.size() - 2, pad = rank - r;
    for (size_t d = 0; d < r; ++d) {
      if (s[d] != 1 && batch[pad + d] != 1 && batch[pad + d] != s[d]) return false;
      if (s[d] != 1) batch[pad + d] = s[d], out[pad + d] = st[d];
    }
    return true;
  };
  if (!align(A, sa, as) || !align(B, sb, bs)) return false;
  GemmArgs a{M, N, K, sa[A.size() - 2], sa.back(), sb[B.size() - 2], sb.back()};
  Strided s = collapse({batch, {contiguous_strides(batch), as, bs}});
  if (!s.dims.empty()) a.batch = s.dims, a.a_sb = s.strides[1], a.b_sb = s.strides[2];
  a.c_sb = std::vector<int64_t>(a.batch.size(), 0);
  TensorArg x = b.arg_in(0), w = b.arg_in(1);
  x.offset += cl_int(va ? va->offset : 0);
  w.offset += cl_int(vb ? vb->offset : 0);
  launch_gemm(b, x, w, b.arg_in(0), b.arg_out(0), a, tail);
  return true;
}

// Batched with numpy broadcasting of the batch dims; 1-D operands get the
// missing matrix dim (ONNX/numpy rules) which changes no memory layout.
bool lower_matmul(NodeBuilder& b) { return lower_matmul(b, false, FusedTail{}); }

// trans_b: B is 2-D [N, K] (FusedMatMul's transB).
bool lower_matmul(NodeBuilder& b, bool trans_b, const FusedTail& tail) {
  if (b.in(0).dtype != DataType::Float32 || b.in(1).dtype != DataType::Float32) return false;
  const std::optional<OperandView> va = operand_view(b.node, 0), vb = operand_view(b.node, 1);
  if (va || vb) return !trans_b && lower_strided_matmul(b, va, vb, tail);
  Shape A = b.in(0).shape, B = b.in(1).shape;
  if (A.empty() || B.empty()) return false;
  if (trans_b) {
    if (B.size() != 2) return false;
    std::swap(B[0], B[1]);  // the logical [K, N]
  }
  if (A.size() == 1) A.insert(A.begin(), 1);
  if (B.size() == 1) B.push_back(1);
  int64_t M = A[A.size() - 2], K = A.back(), N = B.back();
  Shape ab(A.begin(), A.end() - 2), bb(B.begin(), B.end() - 2);
  size_t rank = std::max(ab.size(), bb.size());
  ab.insert(ab.begin(), rank - ab.size(), 1);
  bb.insert(bb.begin(), rank - bb.size(), 1);
  Shape batch(rank);
  for (size_t k = 0; k < rank; ++k) batch[k] = std::max(ab[k], bb[k]);
  GemmArgs a{M, N, K, K, 1, trans_b ? 1 : N, trans_b ? K : 1};
  int64_t b_batch = element_count(bb);
  if (b_batch == 1) {  // B shared by every batch: one tall GEMM
    a.M = M * element_count(ab);
  } else {
    std::vector<int64_t> as = broadcast_strides(ab, batch), bs = broadcast_strides(bb, batch);
    for (auto& v : as) v *= M * K;
    for (auto& v : bs) v *= K * N;
    Strided s = collapse({batch, {contiguous_strides(batch), as, bs}});
    a.batch = s.dims.empty() ? std::vector<int64_t>{1} : s.dims;
    a.a_sb = s.dims.empty() ? std::vector<int64_t>{0} : s.strides[1];
    a.b_sb = s.dims.empty() ? std::vector<int64_t>{0} : s.strides[2];
    a.c_sb = std::vector<int64_t>(a.batch.size(), 0);
  }
  launch_gemm(b, b.arg_in(0), b.arg_in(1), b.arg_in(0), b.arg_out(0), a, tail);
  return true;
}

}  // namespace texplan::lower
