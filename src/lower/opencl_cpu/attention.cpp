// FusedAttention on CPU devices (cpu_attention.cl): four query rows of one
// batch per work-item, 16 keys at a time, the scores in vector registers
// only (docs/fused-ops.md#fusedattention).
#include "lower/opencl_cpu/lowerings.h"

namespace texplan::lower {

bool lower_attention_cpu(NodeBuilder& b, const AttentionLaunch& a) {
  // Four rows share each load of K and V; the output is accumulated 16
  // columns at a time, so their accumulators fit AVX2's registers
  // (docs/kernel-choices.md#fusedattention-on-cpu-devices). Groups of 8
  // items: PoCL shares them out over its threads.
  constexpr int kRows = 4;
  const int64_t blocks = ceil_div(a.p.sq, kRows), items = blocks * a.batches;
  const std::string defines = "-DATT_R=" + std::to_string(kRows) + " -DATT_DH=" + std::to_string(a.p.dh) +
                              " -DATT_DV=" + std::to_string(a.p.dv);
  b.launch(Source("cpu_attention.cl", defines), "attention_cpu", linear_range(items, 8), a.q, a.k, a.v, a.mask, a.y,
           a.p, i32(blocks), i32(items));
  return true;
}

}  // namespace texplan::lower
