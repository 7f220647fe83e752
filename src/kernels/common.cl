// Prepended to every kernel file (Device::program). Tensors are passed as a
// buffer plus an element offset; shapes and strides as Dims by value.
#define MAXR 8
typedef struct { int d[MAXR]; } Dims;  // right-aligned, see lower/lower.h

// The scalars of the convolution and GEMM kernels (gemm.cl, gemm_mma.cl,
// conv_winograd.cl, conv.cl) as one argument each, unpacked into locals of
// the old parameters' names: each kernel argument costs time at every launch
// (docs/kernel-choices.md#kernel-scalars-in-one-struct). Mirrors lower/lower.h.
// Lowercase fields: other kernel files are built with -DKH=... and the like.
// Tensors' element offsets: xo, wo, bo, yo (GEMM: ao, bo, co, yo).
typedef struct {
  int xo, wo, bo, yo, has_bias, c, h, w, oc, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw, groups;
  int pool_h, pool_w;  // POOL2: the pooled output
  int splits, kslice;  // SPLITK
} ConvParams;
#define CONV_PARAMS(p)                                                                                           \
  int xo = p.xo, wo = p.wo, bo = p.bo, yo = p.yo, has_bias = p.has_bias, C = p.c, H = p.h, W = p.w, OC = p.oc, \
      OH = p.oh, OW = p.ow, KH = p.kh, KW = p.kw, sh = p.sh, sw = p.sw, ph = p.ph, pw = p.pw, dh = p.dh,       \
      dw = p.dw, groups = p.groups, PH = p.pool_h, PW = p.pool_w, splits = p.splits, kslice = p.kslice;
typedef struct {
  int ao, bo, co, yo, m, n, k, a_sm, a_sk, b_sk, b_sn, c_sm, c_sn, has_c;
  int splits, kslice;  // SPLITK
  float alpha, beta;
  Dims batch, a_sb, b_sb, c_sb;
} GemmParams;
#define GEMM_PARAMS(p)                                                                                            \
  int ao = p.ao, bo = p.bo, co = p.co, yo = p.yo, M = p.m, N = p.n, K = p.k, a_sm = p.a_sm, a_sk = p.a_sk,       \
      b_sk = p.b_sk, b_sn = p.b_sn, c_sm = p.c_sm, c_sn = p.c_sn, has_c = p.has_c, splits = p.splits,             \
      kslice = p.kslice;                                                                                          \
  const float alpha = p.alpha, beta = p.beta;                                                                     \
  const Dims batch = p.batch, a_sb = p.a_sb, b_sb = p.b_sb, c_sb = p.c_sb;

// FusedAttention's scalars (attention.cl, cpu_attention.cl; lower/attention.cpp).
// Q, K, V and the mask are read through element strides over (batch,
// head, row, column): batch b of the flat b0 * heads + h is at b0 * s_sb +
// h * s_sh; K's rows are keys and its columns the head dim, whichever way
// it is stored. Y's rows are at y_sb, y_sh, y_si, each contiguous (dv
// long): AttentionForm::output_perm's transposes. `scale` includes log2(e):
// the kernels take powers of two. masked_rows_zero: AttentionForm's (graph.h).
typedef struct {
  int qo, ko, vo, mo, yo;
  int heads, sq, sk, dh, dv, has_mask, masked_rows_zero;
  int q_sb, q_sh, q_si, q_sd;
  int k_sb, k_sh, k_sj, k_sd;
  int v_sb, v_sh, v_sj, v_sd;
  int m_sb, m_sh, m_si, m_sj;
  int y_sb, y_sh, y_si;
  float scale;
} AttentionParams;
#define ATT_BATCH(p, s, b) ((b) / (p).heads * (p).s##_sb + (b) % (p).heads * (p).s##_sh)

// RecurrentSteps' scalars (recurrent.cl; lower/recurrent.cpp): element
// offsets of XW, R, Rb_h, h0, c0, P, Y and C; the sizes; which optional
// inputs there are; the cell's flags; the node's index for the fault flags.
typedef struct {
  int xwo, ro, rbo, h0o, c0o, po, yo, co;
  int steps, batch, hidden, upg;
  int reverse, has_rb, has_h0, has_c0, has_p, input_forget, node;
  float clip;
} RecurrentParams;

// Offset in a strided operand of element i of the contiguous space `dims`.
inline int strided_offset(int i, Dims dims, Dims st) {
  int off = 0;
#pragma unroll
  for (int k = MAXR - 1; k >= 0; --k) {
    int n = dims.d[k];
    if (n > 1) {
      off += (i % n) * st.d[k];
      i /= n;
    }
  }
  return off;
}

// Where a kernel stores element i (its linear index) of its output Y:
// Y + yo + YI(i); YRUN(i, n): elements [i, i+n) lie one after another
// there. Y's own contiguous storage here; a window of a larger tensor
// (patch-based execution, runtime window_prelude) redefines both and adds
// YWIN_PARAMS, which kernels that write windows take after EPI_PARAMS.
#define YI(i) (i)
#define YRUN(i, n) 1
#define YWIN_PARAMS
// Where a kernel reads its input X (NCHW): channel plane p (n * C + c) at
// X + xo + p * XPLANE(H, W), row h of a plane h * XROW(W) in; a GEMM over a
// plane's pixels (1x1 convolutions) pixel n at XCOL(n), pixels [n, n+len)
// one after another where XCOLRUN(n, len). X's own contiguous storage
// here; a window (runtime window_input) redefines them and adds
// XWIN_PARAMS, which kernels that read windows take after YWIN_PARAMS.
#define XPLANE(H, W) ((H) * (W))
#define XROW(W) (W)
#define XCOL(n) (n)
#define XCOLRUN(n, len) 1
#define XWIN_PARAMS

// Same walk for two operands at once.
inline void strided_offset2(int i, Dims dims, Dims sa, Dims sb, int* oa, int* ob) {
  int a = 0, b = 0;
#pragma unroll
  for (int k = MAXR - 1; k >= 0; --k) {
    int n = dims.d[k];
    if (n > 1) {
      int c = i % n;
      a += c * sa.d[k];
      b += c * sb.d[k];
      i /= n;
    }
  }
  *oa = a;
  *ob = b;
}

#ifdef SPLITK
// Split-K's partial sums added into Y (gemm.cl, gemm_mma.cl). TEXPLAN_PTX
// (NVIDIA's own driver only, which offers no float atomics): inline PTX, a
// fire-and-forget reduction at L2; elsewhere OpenCL 1.1's global int32
// compare-and-swap on the float's bits.
#ifdef TEXPLAN_PTX
inline void split_add(__global float* p, float v) {
  asm volatile("red.global.add.f32 [%0], %1;" ::"l"(p), "f"(v) : "memory");
}
#else
inline void split_add(__global float* p, float v) {
  volatile __global int* q = (volatile __global int*)p;
  int old = *q;
  for (;;) {
    int seen = atomic_cmpxchg(q, old, as_int(as_float(old) + v));
    if (seen == old) break;
    old = seen;
  }
}
#endif
#endif

// Storage of float tensors (activations, weights, packed weights): fp32, or
// IEEE half under -DTEXPLAN_HALF (--precision fp16, runtime NodeBuilder::half).
// Arithmetic is fp32 either way: LD widens an element to float, ST rounds a
// float to the storage (nearest even). vload_half / vstore_half are core
// OpenCL, so half storage needs no cl_khr_fp16. Kernel files that use these
// for every float tensor are listed in lower/catalog.cpp (KernelCatalog::half_kernel_files).
//   LD(p, i)      element i of p, as float
//   ST(p, i, v)   element i of p = v
//   LDV(n, p)     n floats from p (n = 2, 4, 8, 16), as floatn; STV(n, p, v)
#ifdef TEXPLAN_HALF
typedef half real_t;
#define LD(p, i) vload_half((i), (p))
#define ST(p, i, v) vstore_half((v), (i), (p))
// Built from vload_half2/vstore_half2 because PoCL 3.1's vload_half4..16 and
// vstore_half4..16 assume the pointer is aligned to the vector's size (the
// spec asks for a half's): rows at odd offsets fault on AVX2.
inline float4 ldv_half4(__global const half* p) { return (float4)(vload_half2(0, p), vload_half2(0, p + 2)); }
inline float8 ldv_half8(__global const half* p) { return (float8)(ldv_half4(p), ldv_half4(p + 4)); }
inline float16 ldv_half16(__global const half* p) { return (float16)(ldv_half8(p), ldv_half8(p + 8)); }
inline void stv_half4(float4 v, __global half* p) { vstore_half2(v.lo, 0, p), vstore_half2(v.hi, 0, p + 2); }
inline void stv_half8(float8 v, __global half* p) { stv_half4(v.lo, p), stv_half4(v.hi, p + 4); }
inline void stv_half16(float16 v, __global half* p) { stv_half8(v.lo, p), stv_half8(v.hi, p + 8); }
#define ldv_half2(p) vload_half2(0, (p))
#define stv_half2(v, p) vstore_half2((v), 0, (p))
#define LDV_(n, p) ldv_half##n(p)
#define STV_(n, p, v) stv_half##n((v), (p))
#else
typedef float real_t;
#define LD(p, i) ((p)[i])
#define ST(p, i, v) ((p)[i] = (v))
#define LDV_(n, p) vload##n(0, (p))
#define STV_(n, p, v) vstore##n((v), 0, (p))
#endif
#define LDV(n, p) LDV_(n, p)
#define STV(n, p, v) STV_(n, p, v)

// The largest and the sum of a vector's 16 lanes (the CPU kernels' row reductions).
inline float hmax16(float16 v) {
  float8 a = fmax(v.lo, v.hi);
  float4 b = fmax(a.lo, a.hi);
  float2 c = fmax(b.lo, b.hi);
  return fmax(c.x, c.y);
}
inline float hsum16(float16 v) {
  float8 a = v.lo + v.hi;
  float4 b = a.lo + a.hi;
  float2 c = b.lo + b.hi;
  return c.x + c.y;
}

// Kernels whose indices are data report the first index out of range of a
// run (kernels run in order) in the session's fault flags: fault[0] = node
// + 1, fault[1], fault[2] = the index's low and high words; the session
// reads them with the outputs and raises. Null `fault`: constant indices,
// checked on the host.
inline void index_fault(__global int* fault, int node, long k) {
  if (fault && atomic_cmpxchg(fault, 0, node + 1) == 0) {
    fault[1] = (int)k;
    fault[2] = (int)(k >> 32);
  }
}
