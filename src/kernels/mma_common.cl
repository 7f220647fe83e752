// The tf32 tensor-core primitives gemm_mma.cl and conv_winograd.cl's WG_MMA
// build share (prepended to them, after common.cl: lower/mma.cpp's
// mma_build): to_tf32 (round to nearest, ties away, 10 mantissa bits) and
// MMA(d, a, b), one warp's mma.sync m16n8k8 (row A, col B, fp32 sums) on the
// fragments its 32 lanes hold, PTX ISA layout:
//   a0 a1 a2 a3 = A(g, t) A(g+8, t) A(g, t+4) A(g+8, t+4)
//   b0 b1       = B(t, g) B(t+4, g)
//   d0 d1 d2 d3 = D(g, 2t) D(g, 2t+1) D(g+8, 2t) D(g+8, 2t+1)
// with g = lane / 4, t = lane % 4. The kernel file defines NT (work-items per
// work-group), a local `lid`, and MMA_SCRATCH among its __local arrays.
//
// TEXPLAN_PTX (set for NVIDIA devices only) selects the inline PTX. Without
// it the same kernels run on any OpenCL device with the mma emulated through
// local memory (slow; tests check the fragment layouts on PoCL with it).
#ifdef TEXPLAN_PTX
#define UNROLL _Pragma("unroll")  // register arrays stay registers only when their loops unroll
#else
#define UNROLL  // the emulation's barriers in fully unrolled loops overwhelm PoCL
#endif

#ifdef TEXPLAN_PTX
inline uint to_tf32(float x) {
  uint u;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(u) : "f"(x));
  return u;
}
#define MMA_SCRATCH
// `uint var`: __local array p's address in PTX's .shared window, for
// cp.async and wgmma's descriptors. A __local pointer's integer value is
// one, unless the compiler made it a generic address (isspacep tells),
// which cvta converts.
#define SHARED_BASE(var, p)                                                    \
  uint var;                                                                    \
  {                                                                            \
    ulong s_;                                                                  \
    asm("{ .reg .pred g;\n\t"                                                 \
        "isspacep.shared g, %1;\n\t"                                           \
        "@g cvta.to.shared.u64 %0, %1;\n\t"                                    \
        "@!g mov.b64 %0, %1; }" : "=l"(s_) : "l"((ulong)(size_t)(p)));         \
    var = (uint)s_;                                                            \
  }
// volatile: without it the times did not change
// (docs/kernel-choices.md#the-mma-instruction-stays-volatile).
#define MMA(d, a, b)                                                                                         \
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, " \
               "{%0,%1,%2,%3};"                                                                              \
               : "+f"((d)[0]), "+f"((d)[1]), "+f"((d)[2]), "+f"((d)[3])                                     \
               : "r"((a)[0]), "r"((a)[1]), "r"((a)[2]), "r"((a)[3]), "r"((b)[0]), "r"((b)[1]))
#else
// Round to nearest, ties away from zero, keeping 10 mantissa bits (cvt.rna).
inline uint to_tf32(float x) {
  uint u = as_uint(x);
  return isfinite(x) ? (u + 0x1000u) & 0xffffe000u : u;
}
// One warp's m16n8k8 from the fragments its 32 lanes hold (PTX ISA layout):
// every lane publishes its registers, then computes its four outputs. Called
// in uniform control flow only (it has barriers).
#define MMA_SCRATCH __local uint mma_scratch[NT * 6];
#define SHARED_BASE(var, p) const uint var = 0u;  // no .shared window: the emulation addresses local memory by pointer
inline void mma_emulated(float* d, const uint* a, const uint* b, __local uint* scratch, int lid) {
  __local uint* warp = scratch + (lid & ~31) * 6;
  const int lane = lid & 31, g = lane >> 2, t = lane & 3;
  for (int r = 0; r < 4; ++r) warp[lane * 6 + r] = a[r];
  warp[lane * 6 + 4] = b[0];
  warp[lane * 6 + 5] = b[1];
  barrier(CLK_LOCAL_MEM_FENCE);
  UNROLL for (int o = 0; o < 4; ++o) {
    const int row = g + 8 * (o >> 1), col = 2 * t + (o & 1);
    float s = d[o];
    for (int k = 0; k < 8; ++k) {
      // A(row, k): lane (row % 8) * 4 + k % 4, register a0 a1 a2 a3 = (g,t) (g+8,t) (g,t+4) (g+8,t+4).
      float av = as_float(warp[((row & 7) * 4 + (k & 3)) * 6 + (row >> 3) + 2 * (k >> 2)]);
      // B(k, col): lane col * 4 + k % 4, register b0 b1 = (t, g) (t+4, g).
      float bv = as_float(warp[(col * 4 + (k & 3)) * 6 + 4 + (k >> 2)]);
      s += av * bv;
    }
    d[o] = s;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
}
#define MMA(d, a, b) mma_emulated(d, a, b, mma_scratch, lid)
#endif
