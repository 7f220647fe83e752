// Depthwise convolutions on CPU devices, onto src/kernels/cpu_depthwise.cl.
#include "runtime/ops_cpu.h"

namespace texplan::runtime {

bool lower_depthwise_cpu(NodeBuilder &b, const FusedTail &tail,
                         const CpuConv &c) {
  if (!(c.groups == c.C && c.C == c.OC / std::max<int64_t>(1, c.OC / c.C)))
    return false;
  const std::string fused = tail.prelude.empty() ? "" : " fused";
  if (c.dh == 1 && c.dw == 1 && (c.sw == 1 || c.sw == 2) && c.KW <= 9) {
    // The common shapes: OCB output rows per work-item.
    auto emit_rows = [&](const CpuVariant &v) {
      b.launch(cpu_source("cpu_depthwise.cl", v, tail,
                          " -DDW_SW=" + std::to_string(c.sw)),
               "depthwise_rows_cpu", cpu_range(v, c.OW, c.OH, c.N * c.OC),
               b.arg_in(0), b.arg_in(1), c.bias, b.arg_out(0),
               cl_int(c.has_bias), i32(c.C), i32(c.H), i32(c.W), i32(c.OC),
               i32(c.OH), i32(c.OW), i32(c.KH), i32(c.KW), i32(c.sh), i32(c.ph),
               i32(c.pw));
      tail.append_args(b);
    };
    const int rows = c.OH % 4 == 0   ? 4
                     : c.OH % 7 == 0 ? 7
                                     : 4,
              pb = c.OW >= 12 ? 16 : 8;
    std::vector<CpuVariant> vs = {
        {rows, pb, 0}, {rows, 24 - pb, 0}, {2, pb, 0}, {1, pb, 0}};
    std::string key = "depthwise_rows_cpu " +
                      dims_key({c.N, c.C, c.H, c.W, c.OC, c.OH, c.OW, c.KH,
                                c.KW, c.sh, c.sw, c.ph, c.pw}) +
                      fused;
    emit_rows(vs[size_t(pick_cpu_variant(b, key, vs, emit_rows))]);
    return true;
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

} // namespace texplan::runtime
