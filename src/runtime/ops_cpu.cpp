// CPU-device lowerings (ops_cpu.h): variants of cpu_conv.cl are register
// blocks "OCBxPB" (output channels or rows x pixels or columns per
// work-item) and a work-group size; tuning.h picks among them per shape.
#include "runtime/ops_cpu.h"

#include <algorithm>

#include "runtime/tuning.h"

namespace texplan::runtime {

namespace {

struct Variant {
  int ocb, pb;
  size_t local;  // work-items per group along dim 0; 0: the driver chooses
  std::string name() const {
    return std::to_string(ocb) + "x" + std::to_string(pb) + (local ? "/l" + std::to_string(local) : "");
  }
};

// Candidates for `rows` output channels (or GEMM rows) and `cols` pixels
// (columns); `first` is the heuristic's choice, tried first and used
// without a tuning cache.
std::vector<Variant> candidates(int64_t rows, int64_t cols) {
  std::vector<Variant> v;
  int ocb0 = rows >= 8 ? 8 : rows >= 4 ? 4 : 1, pb0 = cols >= 16 ? 16 : 8;
  v.push_back({ocb0, pb0, 0});
  for (int ocb : {1, 4, 8, 16})
    for (int pb : {8, 16}) {
      if (ocb > 1 && ocb / 2 >= rows) continue;  // most of the block idle
      if (pb == 16 && cols < 9) continue;
      if (ocb != ocb0 || pb != pb0) v.push_back({ocb, pb, 0});
    }
  for (size_t local : {1, 4}) v.push_back({ocb0, pb0, local});  // the driver's group size against fixed ones
  return v;
}

std::vector<std::string> names(const std::vector<Variant>& v) {
  std::vector<std::string> n;
  for (const Variant& x : v) n.push_back(x.name());
  return n;
}

Source variant_source(const Variant& v, const FusedTail& tail, const std::string& defines = "") {
  const std::string pb = std::to_string(v.pb);
  return Source("cpu_conv.cl",
                "-DOCB=" + std::to_string(v.ocb) + " -DPB=" + pb + " -DEPI_VECTOR_WIDTH=" + pb + defines,
                tail.prelude);
}

// Range of `pixel_blocks` x `row_blocks` x `batches` work-items, grouped by
// v.local along dim 0 (global rounded up: kernels bound-check).
Range variant_range(const Variant& v, int64_t cols, int64_t rows, int64_t batches) {
  Range r;
  r.dims = 3;
  size_t x = size_t(ceil_div(cols, v.pb));
  if (v.local) {
    r.has_local = true;
    r.local[0] = v.local;
    x = size_t(ceil_div(int64_t(x), int64_t(v.local))) * v.local;
  }
  r.global[0] = x;
  r.global[1] = size_t(ceil_div(rows, v.ocb));
  r.global[2] = size_t(std::max<int64_t>(1, batches));
  return r;
}

// Picks a variant for `key`, measuring each with `emit` (which prepares the
// launch as the last of b.launches) when the tuning scope searches.
int pick(NodeBuilder& b, const std::string& key, const std::vector<Variant>& vs,
         const std::function<void(const Variant&)>& emit) {
  return choose_variant(key, names(vs), 0,
                        [&](int i) { return time_candidate(b, [&] { return emit(vs[size_t(i)]), true; }); });
}

std::string dims_key(std::initializer_list<int64_t> v) {
  std::string s;
  for (int64_t x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

}  // namespace

bool lower_conv_cpu(NodeBuilder& b, const FusedTail& tail) {
  const Shape &x = b.in(0).shape, &w = b.in(1).shape, &y = b.out(0).shape;
  if (x.size() != 3 && x.size() != 4) return false;
  if (b.in(0).dtype != DataType::Float32 || b.in(1).dtype != DataType::Float32) return false;
  if (b.has_in(2) && b.in(2).dtype != DataType::Float32) return false;
  const size_t rank = x.size() - 2;
  const Node& n = b.node;
  std::vector<int64_t> s = n.get_ints("strides", std::vector<int64_t>(rank, 1));
  std::vector<int64_t> d = n.get_ints("dilations", std::vector<int64_t>(rank, 1));
  if (s.size() != rank || d.size() != rank) return false;
  int64_t N = x[0], C = x[1], OC = y[1], groups = n.get_int("group", 1);
  if (groups <= 0 || C % groups != 0 || OC % groups != 0) return false;
  int64_t H = 1, W = x.back(), OH = 1, OW = y.back(), KH = 1, KW = w.back(), sh = 1, sw = s.back(), dh = 1,
          dw = d.back(), ph = 0;
  int64_t pw = spatial_pad(n, rank - 1, rank, W, OW, KW, sw, dw).begin;
  if (rank == 2) {
    H = x[2], OH = y[2], KH = w[2], sh = s[0], dh = d[0];
    ph = spatial_pad(n, 0, rank, H, OH, KH, sh, dh).begin;
  }
  if (N * OC * OH * OW == 0) return true;
  const int64_t OCg = OC / groups, P = OH * OW;
  const bool has_bias = b.has_in(2);
  const TensorArg bias = has_bias ? b.arg_in(2) : b.arg_in(1);
  if (groups == C && C == OC / std::max<int64_t>(1, OC / C) && C / groups == 1 && rank == 2 && dh == 1 &&
      dw == 1 && (sw == 1 || sw == 2) && KW <= 9) {  // depthwise, the common shapes: OCB output rows per work-item
    auto emit_rows = [&](const Variant& v) {
      b.launch(variant_source(v, tail, " -DDW_SW=" + std::to_string(sw)), "depthwise_rows_cpu",
               variant_range(v, OW, OH, N * OC), b.arg_in(0), b.arg_in(1), bias, b.arg_out(0), cl_int(has_bias),
               i32(C), i32(H), i32(W), i32(OC), i32(OH), i32(OW), i32(KH), i32(KW), i32(sh), i32(ph), i32(pw));
      tail.append_args(b);
    };
    const int rows = OH % 4 == 0 ? 4 : OH % 7 == 0 ? 7 : 4, pb = OW >= 12 ? 16 : 8;
    std::vector<Variant> vs = {{rows, pb, 0}, {rows, 24 - pb, 0}, {2, pb, 0}, {1, pb, 0}};
    std::string key = "depthwise_rows_cpu " + dims_key({N, C, H, W, OC, OH, OW, KH, KW, sh, sw, ph, pw}) +
                      (tail.prelude.empty() ? "" : " fused");
    emit_rows(vs[size_t(pick(b, key, vs, emit_rows))]);
    return true;
  }
  if (groups == C && C == OC / std::max<int64_t>(1, OC / C) && C / groups == 1) {  // depthwise, other shapes
    auto emit_dw = [&](const Variant& v) {
      b.launch(variant_source(v, tail), "depthwise_cpu", variant_range(v, OW, OH, N * OC), b.arg_in(0), b.arg_in(1),
               bias, b.arg_out(0), cl_int(has_bias), i32(C), i32(H), i32(W), i32(OC), i32(OH), i32(OW), i32(KH),
               i32(KW), i32(sh), i32(sw), i32(ph), i32(pw), i32(dh), i32(dw));
      tail.append_args(b);
    };
    std::vector<Variant> vs = {{1, OW >= 12 ? 16 : 8, 0}, {1, OW >= 12 ? 8 : 16, 0}};
    std::string key = "depthwise_cpu " + dims_key({N, C, H, W, OC, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw}) +
                      (tail.prelude.empty() ? "" : " fused");
    emit_dw(vs[size_t(pick(b, key, vs, emit_dw))]);
    return true;
  }
  auto emit = [&](const Variant& v) {
    b.launch(variant_source(v, tail), "conv2d_cpu", variant_range(v, P, OCg, N * groups), b.arg_in(0), b.arg_in(1),
             bias, b.arg_out(0), cl_int(has_bias), i32(C), i32(H), i32(W), i32(OC), i32(OH), i32(OW), i32(KH),
             i32(KW), i32(sh), i32(sw), i32(ph), i32(pw), i32(dh), i32(dw), i32(groups));
    tail.append_args(b);
  };
  std::vector<Variant> vs = candidates(OCg, P);
  std::string key = "conv2d_cpu " + dims_key({N, C, H, W, OC, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw, groups}) +
                    (tail.prelude.empty() ? "" : " fused");
  emit(vs[size_t(pick(b, key, vs, emit))]);
  return true;
}

bool lower_conv_transpose_cpu(NodeBuilder& b) {
  const Shape &x = b.in(0).shape, &w = b.in(1).shape, &y = b.out(0).shape;
  if (x.size() != 4 || w.size() != 4 || y.size() != 4) return false;
  for (int i = 0; i < 3; ++i)
    if (b.has_in(i) && b.in(i).dtype != DataType::Float32) return false;
  const Node& n = b.node;
  int64_t N = x[0], C = x[1], H = x[2], W = x[3], OC = y[1], KH = w[2], KW = w[3], groups = n.get_int("group", 1);
  if (groups <= 0 || C % groups != 0 || w[0] != C || w[1] * groups != OC) return false;
  std::vector<int64_t> s = n.get_ints("strides", {1, 1}), d = n.get_ints("dilations", {1, 1});
  std::vector<int64_t> pads = n.get_ints("pads", {0, 0, 0, 0});
  if (s != std::vector<int64_t>{KH, KW} || d != std::vector<int64_t>{1, 1}) return false;
  for (int64_t p : pads)
    if (p != 0) return false;
  if (y[2] != H * KH || y[3] != W * KW) return false;  // output_padding, output_shape or auto_pad changed it
  if (N * OC * H * W == 0) return true;
  const int64_t OCg = OC / groups;
  const bool has_bias = b.has_in(2);
  const TensorArg bias = has_bias ? b.arg_in(2) : b.arg_in(1);
  const FusedTail tail;
  auto emit = [&](const Variant& v) {
    b.launch(variant_source(v, tail), "conv_transpose_tiled_cpu", variant_range(v, H * W, OCg, N * groups * KH * KW),
             b.arg_in(0), b.arg_in(1), bias, b.arg_out(0), cl_int(has_bias), i32(C), i32(H), i32(W), i32(OC),
             i32(KH), i32(KW), i32(groups));
  };
  std::vector<Variant> vs = candidates(OCg, H * W);
  std::string key = "conv_transpose_tiled_cpu " + dims_key({N, C, H, W, OC, KH, KW, groups});
  emit(vs[size_t(pick(b, key, vs, emit))]);
  return true;
}

bool launch_channel_binary_cpu(NodeBuilder& b, const TensorArg& A, const TensorArg& S, const TensorArg& Y,
                               int64_t rows, int64_t cols, const std::string& op, bool scalar_first) {
  const cl_int code = op == "Add" ? 0 : op == "Sub" ? 1 : op == "Mul" ? 2 : op == "Div" ? 3 : -1;
  if (code < 0) return false;
  const Variant v{1, cols >= 12 ? 16 : 8, 0};
  b.launch(variant_source(v, FusedTail{}), "channel_binary_cpu", variant_range(v, cols, rows, 1), A, S, Y,
           i32(rows), i32(cols), code, cl_int(scalar_first));
  return true;
}

bool lower_global_avg_pool_cpu(NodeBuilder& b, int64_t rows, int64_t R) {
  const Variant v{1, 16, 0};
  b.launch(variant_source(v, FusedTail{}), "global_avg_pool_cpu", linear_range(rows, 16), b.arg_in(0),
           b.arg_out(0), i32(rows), i32(R));
  return true;
}

bool launch_gemm_cpu(NodeBuilder& b, const TensorArg& A, const TensorArg& B, const TensorArg& C, const TensorArg& Y,
                     const CpuGemm& g, const FusedTail& tail) {
  int64_t nb = 1;
  for (int64_t v : g.batch) nb *= v;
  if (g.M == 0 || g.N == 0 || nb == 0) return true;
  auto emit = [&](const Variant& v) {
    b.launch(variant_source(v, tail), "gemm_cpu", variant_range(v, g.N, g.M, nb), A, B, C, Y, i32(g.M), i32(g.N),
             i32(g.K), i32(g.a_sm), i32(g.a_sk), i32(g.b_sk), i32(g.b_sn), i32(g.c_sm), i32(g.c_sn),
             cl_int(g.has_c), g.alpha, g.beta, to_dims(g.batch, 1), to_dims(g.a_sb, 0), to_dims(g.b_sb, 0),
             to_dims(g.c_sb, 0));
    tail.append_args(b);
  };
  std::vector<Variant> vs = candidates(g.M, g.N);
  std::string key = "gemm_cpu " + dims_key({nb, g.M, g.N, g.K, g.a_sm, g.a_sk, g.b_sk, g.b_sn, g.has_c}) +
                    (tail.prelude.empty() ? "" : " fused");
  emit(vs[size_t(pick(b, key, vs, emit))]);
  return true;
}

}  // namespace texplan::runtime
