// Depthwise convolutions on CPU devices, onto src/kernels/cpu_depthwise.cl.
#include <algorithm>

#include "lower/opencl_cpu/lowerings.h"

namespace texplan::lower {

bool lower_depthwise_cpu(NodeBuilder &b, const FusedTail &tail,
                         const CpuConv &c) {
  if (!(c.groups == c.C && c.C == c.OC / std::max<int64_t>(1, c.OC / c.C)))
    return false;
  const std::string fused = tail.prelude.empty() ? "" : " fused";
  if ((c.sw == 1 || c.sw == 2) && c.KH <= 7 && c.KW <= 7 && c.dh <= 4 &&
      c.dw <= 4) {
    // The common shapes: OCB whole output rows per block, from a private
    // zero-padded tile of the input rows they need (cpu_depthwise.cl).
    auto tile_width = [&](const CpuVariant &v) {
      int64_t taps = ceil_div(c.OW, int64_t(v.pb)) * v.pb * c.sw + (c.KW - 1) * c.dw;
      return ceil_div(std::max(c.pw + c.W, taps), int64_t(16)) * 16;
    };
    auto tile_bytes = [&](const CpuVariant &v) {
      return ((v.ocb - 1) * c.sh + (c.KH - 1) * c.dh + 1) * (tile_width(v) + 16) * 4;
    };
    auto emit_tile = [&](const CpuVariant &v) {
      const int64_t items = ceil_div(c.OH, int64_t(v.ocb)) * c.N * c.OC;
      // Few work-items, each its own group and running `per` blocks: enough
      // to share out over a few threads, few enough that PoCL's per-group
      // cost stays small (and its private tile per work-item of a group).
      const int64_t per = ceil_div(items, 32);
      Range r;
      r.global[0] = size_t(ceil_div(items, per));
      r.has_local = true;
      b.launch(cpu_source("cpu_depthwise.cl", v, tail,
                          " -DDW_SH=" + std::to_string(c.sh) +
                              " -DDW_SW=" + std::to_string(c.sw) +
                              " -DDW_KH=" + std::to_string(c.KH) +
                              " -DDW_KW=" + std::to_string(c.KW) +
                              " -DDW_DH=" + std::to_string(c.dh) +
                              " -DDW_DW=" + std::to_string(c.dw) +
                              " -DDW_TW=" + std::to_string(tile_width(v))),
               "depthwise_tile_cpu", r, b.arg_in(0), b.arg_in(1), c.bias,
               b.arg_out(0), cl_int(c.has_bias), i32(c.C), i32(c.H), i32(c.W),
               i32(c.OC), i32(c.OH), i32(c.OW), i32(c.ph), i32(c.pw),
               i32(items), i32(per));
      tail.append_args(b);
    };
    // Rows per block: 2 at stride 2 onto 28 rows or more with 3x3 taps, 7 on
    // planes of 7, 14 and 28 rows, else 4
    // (docs/kernel-choices.md#cpu-depthwise-rows-per-block).
    const int pb = c.OW >= 12 ? 16 : 8;
    int rows = 4;
    if (c.sh == 2 && c.OH >= 28 && c.KH <= 3)
      rows = 2;
    else if (c.OH % 7 == 0 && c.OH <= 28)
      rows = 7;
    rows = int(std::min<int64_t>(rows, c.OH));
    std::vector<CpuVariant> vs;
    auto add = [&](int ocb) {
      const CpuVariant v{ocb, pb, 0};
      if (std::none_of(vs.begin(), vs.end(),
                       [&](const CpuVariant &x) { return x.ocb == ocb; }) &&
          tile_bytes(v) <= 48 * 1024) // private memory: the worker's stack
        vs.push_back(v);
    };
    add(rows); // the heuristic's choice first: used without a tuning cache
    for (int ocb : {2, 4, 7, 8})
      if (!vs.empty() && ocb / 2 < c.OH && (ocb != 7 || c.OH % 7 == 0))
        add(ocb);
    if (!vs.empty()) {
      std::string key = "depthwise_tile_cpu " +
                        dims_key({c.N, c.C, c.H, c.W, c.OC, c.OH, c.OW, c.KH,
                                  c.KW, c.sh, c.sw, c.ph, c.pw}) +
                        (c.dh * c.dw > 1 ? " dilated " + dims_key({c.dh, c.dw}) : "") + fused;
      emit_tile(vs[size_t(pick_cpu_variant(b, key, vs, emit_tile))]);
      return true;
    }
  }
  auto emit_dw = [&](const CpuVariant &v) {
    b.launch(cpu_source("cpu_depthwise.cl", v, tail), "depthwise_cpu",
             cpu_range(v, c.OW, c.OH, c.N * c.OC), b.arg_in(0), b.arg_in(1),
             c.bias, b.arg_out(0), cl_int(c.has_bias), i32(c.C), i32(c.H),
             i32(c.W), i32(c.OC), i32(c.OH), i32(c.OW), i32(c.KH), i32(c.KW),
             i32(c.sh), i32(c.sw), i32(c.ph), i32(c.pw), i32(c.dh), i32(c.dw));
    tail.append_args(b);
  };
  std::vector<CpuVariant> vs = {{1, c.OW >= 12 ? 16 : 8, 0},
                                {1, c.OW >= 12 ? 8 : 16, 0}};
  std::string key = "depthwise_cpu " +
                    dims_key({c.N, c.C, c.H, c.W, c.OC, c.OH, c.OW, c.KH, c.KW,
                              c.sh, c.sw, c.ph, c.pw, c.dh, c.dw}) +
                    fused;
  emit_dw(vs[size_t(pick_cpu_variant(b, key, vs, emit_dw))]);
  return true;
}

} // namespace texplan::lower
