// CPU-device lowerings (lower/opencl_cpu/lowerings.h) onto cpu_conv.cl and cpu_gemm.cl (GEMMs,
// 1x1 convolutions, matrix-vector products): variants are register
// blocks "OCBxPB" (output channels or rows x pixels or columns per
// work-item) and a work-group size (lower/opencl_cpu/common.h); tuning.h picks among
// them per shape.
#include "lower/opencl_cpu/lowerings.h"

#include <algorithm>
#include <numeric>

namespace texplan::lower {

bool lower_conv_cpu(NodeBuilder &b, const FusedTail &tail) {
  const Shape &x = b.in(0).shape, &w = b.in(1).shape, &y = b.out(0).shape;
  if (x.size() != 3 && x.size() != 4)
    return false;
  if (b.in(0).dtype != DataType::Float32 || b.in(1).dtype != DataType::Float32)
    return false;
  if (b.has_in(2) && b.in(2).dtype != DataType::Float32)
    return false;
  const size_t rank = x.size() - 2;
  const Node &n = b.node;
  std::vector<int64_t> s = n.get_ints("strides", std::vector<int64_t>(rank, 1));
  std::vector<int64_t> d =
      n.get_ints("dilations", std::vector<int64_t>(rank, 1));
  if (s.size() != rank || d.size() != rank)
    return false;
  int64_t N = x[0], C = x[1], OC = y[1], groups = n.get_int("group", 1);
  if (groups <= 0 || C % groups != 0 || OC % groups != 0)
    return false;
  int64_t H = 1, W = x.back(), OH = 1, OW = y.back(), KH = 1, KW = w.back(),
          sh = 1, sw = s.back(), dh = 1, dw = d.back(), ph = 0;
  int64_t pw = spatial_pad(n, rank - 1, rank, W, OW, KW, sw, dw).begin;
  if (rank == 2) {
    H = x[2], OH = y[2], KH = w[2], sh = s[0], dh = d[0];
    ph = spatial_pad(n, 0, rank, H, OH, KH, sh, dh).begin;
  }
  if (N * OC * OH * OW == 0)
    return true;
  const bool has_bias = b.has_in(2);
  const TensorArg bias = has_bias ? b.arg_in(2) : b.arg_in(0);  // a dummy: Winograd may never upload the weights
  const CpuConv c{N,  C,  H,  W,  OC, OH, OW,     KH,       KW,
                  sh, sw, dh, dw, ph, pw, groups, has_bias, bias};
  if (channel_scaled(n)) {  // the 1x1 GEMM scales B's rows; nothing else
    CpuConv scaled = c;
    scaled.channel_scale = b.arg_in(b.inputs() - 1);
    return lower_conv1x1_cpu(b, tail, scaled);
  }
  if (lower_depthwise_cpu(b, tail, c))
    return true;
  if (lower_conv1x1_cpu(b, tail, c))
    return true;
  if (rank == 2 && lower_conv_winograd_cpu(b, tail, c))
    return true;
  lower_conv_direct_cpu(b, tail, c);
  return true;
}

namespace {

// conv2d_rows_cpu's weights: [OC / ocb][K][ocb] for K = C x KH x KW taps,
// zeros past OC, so a tap's block of output channels is contiguous.
std::vector<float> stem_weights(const HostTensor &w, int64_t OC, int64_t K,
                                int64_t ocb) {
  const std::vector<float> src = w.as_float();
  std::vector<float> p(size_t(ceil_div(OC, ocb) * ocb * K), 0.0f);
  for (int64_t oc = 0; oc < OC; ++oc)
    for (int64_t k = 0; k < K; ++k)
      p[size_t(((oc / ocb) * K + k) * ocb + oc % ocb)] =
          src[size_t(oc * K + k)];
  return p;
}

// conv2d_rows_cpu's blocks, the shape rule's first: OCB channels x PB
// pixels, 16 channels per input vector on 16-float SIMD for few channels or
// wide windows, else 8; with 8-float SIMD's 16 registers 16 channels spill
// (docs/kernel-choices.md#cpu-stem-convolutions-by-rows).
std::vector<CpuVariant> stem_candidates(int64_t OC, int64_t taps,
                                        int native_width) {
  const bool wide = native_width >= 16 && (OC <= 32 || taps >= 25);
  std::vector<CpuVariant> vs;
  for (int ocb : {wide ? 16 : 8, wide ? 8 : 16, 4})
    for (int pb : {16, 8})
      if (ocb / 2 < OC || ocb == 4)
        vs.push_back({ocb, pb, 0});
  for (size_t local : {1, 16})
    vs.push_back({vs[0].ocb, vs[0].pb, local}); // fixed groups, too
  return vs;
}

// conv2d_ocvec_cpu's weights: [groups][OCg / ocv][ICg][KH * KW][ocv] from
// [OC][ICg][KH][KW], zeros past OCg, then ocv zeros (the kernel's padding).
std::vector<float> ocvec_weights(const HostTensor &w, int64_t groups,
                                 int64_t OCg, int64_t ICg, int64_t taps,
                                 int64_t ocv) {
  const std::vector<float> src = w.as_float();
  const int64_t blocks = ceil_div(OCg, ocv);
  std::vector<float> p(size_t((groups * blocks * taps * ICg + 1) * ocv), 0.0f);
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t oc = 0; oc < OCg; ++oc)
      for (int64_t c = 0; c < ICg; ++c)
        for (int64_t t = 0; t < taps; ++t)
          p[size_t((((g * blocks + oc / ocv) * ICg + c) * taps + t) * ocv +
                   oc % ocv)] = src[size_t(((g * OCg + oc) * ICg + c) * taps + t)];
  return p;
}

} // namespace

// The shape rule: the work counts the pixels and channels a block computes
// for nothing (the moved last block of a row recomputes; channels up to a
// whole block) over the block's speed, which grows with its accumulators up
// to what the registers hold beside NV weight vectors and a broadcast (12 of
// AVX2's 16, 24 of AVX-512's 32) and falls where a step loads more than
// two thirds of what it multiplies (NV + PX loads, PX x NV FMAs)
// (docs/cpu-kernels.md#any-convolution-output-channels-as-vectors).
std::vector<CpuVariant> conv_ocvec_candidates(int64_t OCg, int64_t OW, int width) {
  const int pb = width >= 16 ? 16 : 8, limit = width >= 16 ? 24 : 12;
  struct Scored {
    CpuVariant v;
    double cost;
  };
  std::vector<Scored> all;
  for (int nv = 1; nv <= 4; ++nv) {
    if (nv > 1 && int64_t(nv - 1) * pb >= OCg)
      break; // a whole vector of channels idle
    // No wider than the row: pixels past it are computed for nothing, and
    // every tap takes the edge path (regnet g16 3x3 400 7 chose 24 pixels).
    for (int px = 2; px * nv <= limit && (px <= OW || px == 2); ++px) {
      const double pw = OW >= px ? double(ceil_div(OW, int64_t(px)) * px) / double(OW)
                                 : double(px) / double(OW);
      const int64_t ocv = int64_t(pb) * nv;
      const double cw = double(ceil_div(OCg, ocv) * ocv) / double(OCg);
      const double acc = px * nv, loads = std::max(1.0, 1.5 * (nv + px) / acc);
      // Groups of one work-item: PoCL compiles a group of several as one
      // loop body over them, which spills these accumulators.
      CpuVariant v{px, pb, 1, nv};
      v.channel_vectors = true;
      all.push_back({v, pw * cw * double(limit) / acc * loads});
    }
  }
  std::stable_sort(all.begin(), all.end(),
                   [](const Scored &a, const Scored &b) { return a.cost < b.cost; });
  std::vector<CpuVariant> vs;
  for (const Scored &s : all)
    if (vs.size() < 6)
      vs.push_back(s.v);
  CpuVariant driver = vs[0];
  driver.local = 0; // the driver's group size against the chosen one
  vs.push_back(driver);
  return vs;
}

void lower_conv_direct_cpu(NodeBuilder &b, const FusedTail &tail,
                           const CpuConv &c) {
  const int64_t N = c.N, C = c.C, H = c.H, W = c.W, OC = c.OC, OH = c.OH,
                OW = c.OW, KH = c.KH, KW = c.KW, sh = c.sh, sw = c.sw,
                dh = c.dh, dw = c.dw, ph = c.ph, pw = c.pw, groups = c.groups;
  const int64_t OCg = OC / groups, P = OH * OW;
  const bool has_bias = c.has_bias;
  const TensorArg bias = c.bias;
  // Stems (at most 4 input channels, one group, constant weights):
  // conv2d_rows_cpu, a block of one output row per work-item, the weights
  // packed by OCB-channel block: faster than the per-pixel conv2d_cpu
  // (docs/kernel-choices.md#cpu-stem-convolutions-by-rows).
  const HostTensor *weights = b.constant(1);
  const bool constant_w = weights && weights->dtype == DataType::Float32;
  const bool rows = groups == 1 && C <= 4 && OW >= 8 && constant_w;
  // Everything else with constant weights: conv2d_ocvec_cpu, unless a
  // register block of conv2d_cpu or conv2d_rows_cpu is named
  // (KernelChoice::cpu without the "v").
  const std::string &named = b.kernel_choice.cpu;
  const bool ocvec = constant_w && (named.empty() ? !rows : named[0] == 'v');
  const int64_t ICg = C / groups, taps = KH * KW;
  auto emit = [&](const CpuVariant &v) {
    if (ocvec) {
      const int64_t ocv = int64_t(v.pb) * v.nv, blocks = ceil_div(OCg, ocv);
      Range r;
      r.dims = 3;
      const size_t cols = size_t(ceil_div(OW, int64_t(v.ocb)));
      r.has_local = v.local > 0;
      r.local[0] = std::max<size_t>(1, v.local);
      r.global[0] = (cols + r.local[0] - 1) / r.local[0] * r.local[0];
      r.global[1] = size_t(OH);
      r.global[2] = size_t(N * groups * blocks);
      const MemArg packed = b.packed("conv2d_ocvec_cpu " + std::to_string(ocv), [&] {
        return ocvec_weights(*weights, groups, OCg, ICg, taps, ocv);
      });
      b.launch(cpu_source("cpu_conv.cl", v, tail,
                          " -DNV=" + std::to_string(v.nv) + " -DPX=" + std::to_string(v.ocb) +
                              " -DOCV_SW=" + std::to_string(sw)),
               "conv2d_ocvec_cpu", r, b.arg_in(0), packed, bias, b.arg_out(0), cl_int(has_bias), i32(C), i32(H),
               i32(W), i32(OC), i32(OH), i32(OW), i32(KH), i32(KW), i32(sh), i32(ph), i32(pw), i32(dh), i32(dw),
               i32(groups), i32(groups * blocks * taps * ICg * ocv));
    } else if (rows) {
      Range r = cpu_range(v, OW, 1, 1);
      r.global[1] = size_t(OH);
      r.global[2] = size_t(N * ceil_div(OC, int64_t(v.ocb)));
      const MemArg packed =
          b.packed("conv2d_rows_cpu " + std::to_string(v.ocb), [&] {
            return stem_weights(*weights, OC, C * KH * KW, v.ocb);
          });
      const std::string taps = " -DROWS_C=" + std::to_string(C) + " -DROWS_KH=" + std::to_string(KH) +
                               " -DROWS_KW=" + std::to_string(KW) + " -DROWS_SW=" + std::to_string(sw);
      b.launch(cpu_source("cpu_conv.cl", v, tail, taps), "conv2d_rows_cpu", r,
               b.arg_in(0), packed, bias, b.arg_out(0), cl_int(has_bias),
               i32(C), i32(H), i32(W), i32(OC), i32(OH), i32(OW), i32(KH),
               i32(KW), i32(sh), i32(sw), i32(ph), i32(pw), i32(dh), i32(dw));
    } else {
      b.launch(cpu_source("cpu_conv.cl", v, tail), "conv2d_cpu",
               cpu_range(v, P, OCg, N * groups), b.arg_in(0), b.arg_in(1),
               bias, b.arg_out(0), cl_int(has_bias), i32(C), i32(H), i32(W),
               i32(OC), i32(OH), i32(OW), i32(KH), i32(KW), i32(sh), i32(sw),
               i32(ph), i32(pw), i32(dh), i32(dw), i32(groups));
    }
    tail.append_args(b);
  };
  const int width = b.device().info().native_float_width;
  std::vector<CpuVariant> vs = ocvec ? conv_ocvec_candidates(OCg, OW, width)
                               : rows ? stem_candidates(OC, KH * KW, width)
                                      : cpu_candidates(OCg, P);
  std::string key = std::string(ocvec ? "conv2d_ocvec_cpu " : rows ? "conv2d_rows_cpu " : "conv2d_cpu ") +
                    dims_key({N, C, H, W, OC, OH, OW, KH, KW, sh, sw, ph, pw,
                              dh, dw, groups}) +
                    (tail.prelude.empty() ? "" : " fused");
  emit(vs[size_t(pick_cpu_variant(b, key, vs, emit))]);
}

bool lower_conv_transpose_cpu(NodeBuilder &b) {
  const Shape &x = b.in(0).shape, &w = b.in(1).shape, &y = b.out(0).shape;
  if (x.size() != 4 || w.size() != 4 || y.size() != 4)
    return false;
  for (int i = 0; i < 3; ++i)
    if (b.has_in(i) && b.in(i).dtype != DataType::Float32)
      return false;
  const Node &n = b.node;
  int64_t N = x[0], C = x[1], H = x[2], W = x[3], OC = y[1], KH = w[2],
          KW = w[3], groups = n.get_int("group", 1);
  if (groups <= 0 || C % groups != 0 || w[0] != C || w[1] * groups != OC)
    return false;
  std::vector<int64_t> s = n.get_ints("strides", {1, 1}),
                       d = n.get_ints("dilations", {1, 1});
  std::vector<int64_t> pads = n.get_ints("pads", {0, 0, 0, 0});
  if (s != std::vector<int64_t>{KH, KW} || d != std::vector<int64_t>{1, 1})
    return false;
  for (int64_t p : pads)
    if (p != 0)
      return false;
  if (y[2] != H * KH || y[3] != W * KW)
    return false; // output_padding, output_shape or auto_pad changed it
  if (N * OC * H * W == 0)
    return true;
  const int64_t OCg = OC / groups;
  const bool has_bias = b.has_in(2);
  const TensorArg bias = has_bias ? b.arg_in(2) : b.arg_in(1);
  const FusedTail tail;
  auto emit = [&](const CpuVariant &v) {
    b.launch(cpu_source("cpu_conv.cl", v, tail), "conv_transpose_tiled_cpu",
             cpu_range(v, H * W, OCg, N * groups * KH * KW), b.arg_in(0),
             b.arg_in(1), bias, b.arg_out(0), cl_int(has_bias), i32(C), i32(H),
             i32(W), i32(OC), i32(KH), i32(KW), i32(groups));
  };
  std::vector<CpuVariant> vs = cpu_candidates(OCg, H * W);
  std::string key =
      "conv_transpose_tiled_cpu " + dims_key({N, C, H, W, OC, KH, KW, groups});
  emit(vs[size_t(pick_cpu_variant(b, key, vs, emit))]);
  return true;
}

bool launch_channel_binary_cpu(NodeBuilder &b, const TensorArg &A,
                               const TensorArg &S, const TensorArg &Y,
                               int64_t rows, int64_t cols,
                               const std::string &op, bool scalar_first) {
  const cl_int code = op == "Add"   ? 0
                      : op == "Sub" ? 1
                      : op == "Mul" ? 2
                      : op == "Div" ? 3
                                    : -1;
  if (code < 0)
    return false;
  const CpuVariant v{1, cols >= 12 ? 16 : 8, 0};
  b.launch(cpu_source("cpu_conv.cl", v, FusedTail{}), "channel_binary_cpu",
           cpu_range(v, cols, rows, 1), A, S, Y, i32(rows), i32(cols), code,
           cl_int(scalar_first));
  return true;
}

bool lower_global_avg_pool_cpu(NodeBuilder &b, int64_t rows, int64_t R) {
  const CpuVariant v{1, 16, 0};
  b.launch(cpu_source("cpu_conv.cl", v, FusedTail{}), "global_avg_pool_cpu",
           linear_range(rows, 16), b.arg_in(0), b.arg_out(0), i32(rows),
           i32(R));
  return true;
}

namespace {

int64_t batch_count(const CpuGemm &g) {
  int64_t nb = 1;
  for (int64_t v : g.batch)
    nb *= v;
  return nb;
}

// Y[j] = alpha dot(row j of R, v) + beta C[j] per batch on gemv_rows_cpu:
// R's rows contiguous (r_sj apart), v strided by v_sk, C by c_sj, Y
// contiguous. Rows stream once, so the block is chosen for bandwidth: a few
// rows at a time (the loads of v shared) and enough work-groups.
void launch_gemv_rows(NodeBuilder &b, const TensorArg &R, const TensorArg &V,
                      const TensorArg &C, const TensorArg &Y, int64_t rows,
                      int64_t K, int64_t r_sj, int64_t v_sk, int64_t c_sj,
                      bool has_c, float alpha, float beta, const CpuGemm &g,
                      const std::vector<int64_t> &r_sb,
                      const std::vector<int64_t> &v_sb,
                      const FusedTail &tail) {
  const int64_t nb = batch_count(g);
  auto emit = [&](const CpuVariant &v) {
    Range r;
    r.dims = 2;
    r.has_local = true;
    r.local[0] = v.local;
    r.global[0] = size_t(ceil_div(ceil_div(rows, int64_t(v.ocb)),
                                  int64_t(v.local))) *
                  v.local;
    r.global[1] = size_t(nb);
    b.launch(cpu_source("cpu_gemm.cl", v, tail), "gemv_rows_cpu", r, R, V, C,
             Y, i32(rows), i32(K), i32(r_sj), i32(v_sk), i32(c_sj),
             cl_int(has_c), alpha, beta, to_dims(g.batch, 1), to_dims(r_sb, 0),
             to_dims(v_sb, 0), to_dims(g.c_sb, 0));
    tail.append_args(b);
  };
  std::vector<CpuVariant> vs;
  const int pb = K >= 16 ? 16 : 8;
  for (auto [ocb, nv] : {std::pair{4, 1}, {1, 4}, {2, 2}, {8, 1}, {4, 2}}) {
    if (ocb > 1 && ocb > rows)
      continue;
    const int64_t items = ceil_div(rows, int64_t(ocb)) * nb;
    size_t local = 8;
    while (local > 1 && items / int64_t(local) < 32)
      local /= 2;
    vs.push_back({ocb, pb, local, nv});
  }
  if (vs.empty())
    vs.push_back({1, pb, 1, 1});
  const std::string key =
      "gemv_rows_cpu " + dims_key({nb, rows, K, r_sj, v_sk, has_c}) +
      (tail.prelude.empty() ? "" : " fused");
  emit(vs[size_t(pick_cpu_variant(b, key, vs, emit))]);
}

// The GEMM on gemm_block_cpu, a block chosen by shape or tuning.
void launch_gemm_block(NodeBuilder &b, const TensorArg &A, const TensorArg &B,
                       const TensorArg &C, const TensorArg &Y,
                       const CpuGemm &g, const FusedTail &tail) {
  const int64_t nb = batch_count(g);
  const std::string layout = std::string(g.a_sk == 1 ? " -DASK1" : "") +
                             (g.a_sm == 1 ? " -DASM1" : "");
  auto emit = [&](const CpuVariant &v) {
    Range r;  // row blocks along dim 0 (column blocks: cols_first), grouped by v.local
    r.dims = 3;
    r.has_local = v.local > 0;
    r.local[0] = std::max<size_t>(1, v.local);
    const int64_t row_blocks = ceil_div(g.M, int64_t(v.ocb)), col_blocks = ceil_div(g.N, int64_t(v.pb * v.nv));
    const int64_t first = v.cols_first ? col_blocks : row_blocks;
    r.global[0] = size_t(ceil_div(first, int64_t(r.local[0]))) * r.local[0];
    r.global[1] = size_t(v.cols_first ? row_blocks : col_blocks);
    r.global[2] = size_t(nb);
    b.launch(cpu_source("cpu_gemm.cl", v, tail,
                        " -DNV=" + std::to_string(v.nv) + layout + (v.cols_first ? " -DCOLS_FIRST" : "") +
                            (g.k_scale ? " -DK_SCALE" : "")),
             "gemm_block_cpu", r, A, B, C, Y, i32(g.M), i32(g.N), i32(g.K),
             i32(g.a_sm), i32(g.a_sk), i32(g.b_sk), i32(g.b_sn), i32(g.c_sm),
             i32(g.c_sn), cl_int(g.has_c), g.alpha, g.beta, to_dims(g.batch, 1),
             to_dims(g.a_sb, 0), to_dims(g.b_sb, 0), to_dims(g.c_sb, 0));
    if (g.k_scale) b.more_args(*g.k_scale);
    tail.append_args(b);
  };
  std::vector<CpuVariant> vs =
      cpu_gemm_candidates(g.M, g.N, nb, b.device().info().native_float_width, tail.transcendental);
  const std::string key =
      "gemm_block_cpu " +
      dims_key({nb, g.M, g.N, g.K, g.a_sm, g.a_sk, g.b_sk, g.b_sn, g.has_c}) +
      (g.k_scale ? " scaled" : "") + (tail.prelude.empty() ? "" : " fused");
  emit(vs[size_t(pick_cpu_variant(b, key, vs, emit))]);
}

// A row stride for K rows of n elements: one cache line longer where more
// than 4 rows would share a set of a 1 MiB 16-way L2 (1024 sets of 64-byte
// lines; rows whose length in lines has a large power-of-two factor). A
// column block walks down the rows, and products over such rows ran at
// 45-65% of the speed of padded ones, e.g. 50x768x3072 at 133 GFLOP/s
// against 212 (docs/cpu-kernels.md#weight-rows-that-alias-in-the-caches).
int64_t cache_spread_stride(int64_t n, int64_t rows, int64_t elem) {
  const int64_t bytes = n * elem;
  if (bytes % 64 != 0)
    return n;  // rows start at varying offsets within their lines
  const int64_t rows_per_set = rows * std::gcd(bytes / 64, int64_t(1024)) / 1024;
  return rows_per_set > 4 ? n + 64 / elem : n;
}

// The constant input of the node that `t` locates, if it is one.
const HostTensor *constant_at(const NodeBuilder &b, const TensorArg &t) {
  for (int i = 0; i < b.inputs(); ++i) {
    const HostTensor *h = b.constant(i);
    if (h && h->dtype == DataType::Float32) {
      const TensorArg a = b.arg_in(i);
      if (a.mem == t.mem && a.offset == t.offset)
        return h;
    }
  }
  return nullptr;
}

} // namespace

bool launch_gemm_cpu(NodeBuilder &b, const TensorArg &A, const TensorArg &B,
                     const TensorArg &C, const TensorArg &Y, const CpuGemm &g,
                     const FusedTail &tail) {
  const int64_t nb = batch_count(g);
  if (g.M == 0 || g.N == 0 || nb == 0)
    return true;
  // One row or column: a matrix-vector product over the matrix's
  // contiguous rows (FC layers with transB, attention pooling).
  if (g.M == 1 && g.b_sk == 1 && g.K >= 16) {
    launch_gemv_rows(b, B, A, C, Y, g.N, g.K, g.b_sn, g.a_sk, g.c_sn, g.has_c,
                     g.alpha, g.beta, g, g.b_sb, g.a_sb, tail);
    return true;
  }
  if (g.N == 1 && g.a_sk == 1 && g.K >= 16) {
    launch_gemv_rows(b, A, B, C, Y, g.M, g.K, g.a_sm, g.b_sk, g.c_sm, g.has_c,
                     g.alpha, g.beta, g, g.a_sb, g.b_sb, tail);
    return true;
  }
  // Constant B read across its rows (Gemm's transB: weights [N, K]), or
  // with rows whose stride aliases in the caches: packed once as [K, N],
  // rows `ldb` apart, so B's rows are vector loads and a column block's rows
  // spread over the cache sets. The session releases the unpacked weights,
  // which no launch then reads.
  bool shared_b = true;
  for (int64_t s : g.b_sb)
    shared_b = shared_b && s == 0;
  const int64_t elem = int64_t(b.stored_size(DataType::Float32));
  const int64_t ldb = cache_spread_stride(g.N, g.K, elem);
  const bool repack = g.b_sn != 1 || cache_spread_stride(g.b_sk, g.K, elem) != g.b_sk;
  const HostTensor *wb = repack && g.M > 1 && (shared_b || nb == 1)
                             ? constant_at(b, B)
                             : nullptr;
  if (wb && wb->count() >= (g.K - 1) * g.b_sk + (g.N - 1) * g.b_sn + 1) {
    const float *w = wb->data<float>();  // constant_at's tensors are Float32
    std::vector<float> packed(size_t(g.K * ldb), 0.0f);
    for (int64_t k = 0; k < g.K; ++k)
      for (int64_t n = 0; n < g.N; ++n)
        packed[size_t(k * ldb + n)] = w[size_t(k * g.b_sk + n * g.b_sn)];
    const MemArg m = b.upload_floats(packed.data(), packed.size());
    CpuGemm p = g;
    p.b_sk = ldb, p.b_sn = 1;
    p.b_sb = std::vector<int64_t>(g.b_sb.size(), 0);
    launch_gemm_block(b, A, TensorArg{m.mem, 0}, C, Y, p, tail);
    return true;
  }
  launch_gemm_block(b, A, B, C, Y, g, tail);
  return true;
}

// A 1x1 convolution with stride 1 and no padding, per image and group the
// GEMM Y[OC, P] = W[OC, C] X[C, P] (bias as its C), or on one pixel a
// matrix-vector product over the weights' rows; false for other convs.
bool lower_conv1x1_cpu(NodeBuilder &b, const FusedTail &tail,
                       const CpuConv &c) {
  if (c.KH != 1 || c.KW != 1 || c.sh != 1 || c.sw != 1 || c.ph != 0 ||
      c.pw != 0 || c.OH != c.H || c.OW != c.W ||
      (c.channel_scale && c.groups != 1))
    return false;
  const int64_t P = c.H * c.W, OCg = c.OC / c.groups, ICg = c.C / c.groups;
  const int64_t plane = tail.xwindow ? tail.xwin_plane : P;  // X's plane stride (a window's: XCOL)
  CpuGemm g{OCg, P, ICg, ICg, 1, plane, 1, 1, 0, c.has_bias, 1.0f, 1.0f,
            {c.N, c.groups}, {0, OCg * ICg}, {c.C * plane, ICg * plane}, {0, OCg}, c.channel_scale};
  if (P == 1 && ICg >= 16 && !c.channel_scale) {
    launch_gemv_rows(b, b.arg_in(1), b.arg_in(0), c.bias, b.arg_out(0), OCg,
                     ICg, ICg, plane, 1, c.has_bias, 1.0f, 1.0f, g, g.a_sb, g.b_sb,
                     tail);
    return true;
  }
  launch_gemm_block(b, b.arg_in(1), b.arg_in(0), c.bias, b.arg_out(0), g, tail);
  return true;
}

} // namespace texplan::lower
