// Prepended to every kernel file (Device::program). Tensors are passed as a
// buffer plus an element offset; shapes and strides as Dims by value.
#define MAXR 8
typedef struct { int d[MAXR]; } Dims;  // right-aligned, see runtime/ops.h

// The scalars of the convolution and GEMM kernels (gemm.cl, gemm_mma.cl,
// conv_winograd.cl, conv.cl) as one argument each, unpacked into locals of
// the old parameters' names: NVIDIA's driver spends about 0.05 us per kernel
// argument at every launch (texplan_enqueue_bench). Mirrors runtime/ops.h.
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

// Split-K's kernels take the per-block state after their parameters.
#ifdef SPLITK
#define SPLIT_PARAMS , __global int* State
#else
#define SPLIT_PARAMS
#endif
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

// Split-K in one launch (conv_winograd.cl, gemm.cl, gemm_mma.cl): no zeroing pass before the
// slices and no epilogue pass after them. The slices of one output block
// meet through two ints of a state buffer the host creates zeroed, and
// which every launch leaves zero: [0] slices arrived, [1] slices done (plus
// one once the block is zeroed). The first slice to arrive zeroes the block
// (split_first, split_zeroed); every slice waits for that before adding
// (split_wait_zeroed: it finished long before, the products lie between);
// the last to be done applies the epilogue and resets the state
// (split_last, split_reset). Only a work-group that has started can hold
// the first ticket, so a wait never depends on one not yet scheduled.
// Saves VGG-16's 14x14 convs two launches each (H100: docs/precision.md).
// The work-group's first item (gemm.cl's groups are 16 x 16).
inline bool split_leader(void) { return get_local_id(0) == 0 && get_local_id(1) == 0 && get_local_id(2) == 0; }
inline void split_fence(void) {
#ifdef TEXPLAN_PTX
  asm volatile("fence.acq_rel.gpu;" ::: "memory");  // device scope: other SMs see the stores
#else
  mem_fence(CLK_GLOBAL_MEM_FENCE);
#endif
}
// Whether this work-group is the block's first slice to arrive; `flag`:
// local scratch the caller lends (free before and after).
inline bool split_first(__global int* state, __local int* flag) {
  if (split_leader()) *flag = atomic_inc(state);
  barrier(CLK_LOCAL_MEM_FENCE);
  const bool first = *flag == 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  return first;
}
// Every slice, after the first's zeroing stores (no barrier in a branch:
// PoCL then ran the first item's increment in every item).
inline void split_zeroed(__global int* state, bool first) {
  if (first) split_fence();
  barrier(CLK_GLOBAL_MEM_FENCE);
  if (first && split_leader()) atomic_inc(state + 1);
}
// Every slice, before its adds.
inline void split_wait_zeroed(__global int* state) {
  if (split_leader())
    while (*(volatile __global int*)(state + 1) == 0) {  // a load, not an atomic: no queue behind the slices' counts
    }
  barrier(CLK_GLOBAL_MEM_FENCE);
  split_fence();
}
// After the slice's adds: whether it is the block's last (`last`: the
// count the last one sees, splits, or splits - 1 where nothing zeroed).
inline bool split_last(__global int* state, __local int* flag, int last) {
  split_fence();
  barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
  if (split_leader()) *flag = atomic_inc(state + 1);
  barrier(CLK_LOCAL_MEM_FENCE);
  const bool is_last = *flag == last;
  if (is_last) split_fence();
  return is_last;
}
inline void split_reset(__global int* state) {
  if (split_leader()) {
    atomic_xchg(state, 0);
    atomic_xchg(state + 1, 0);
  }
}
// This work-group's block's two ints: grid z = batch * splits + slice, one
// block per (batch, group x, group y).
inline __global int* split_state(__global int* State, int splits) {
  const int z = (int)get_group_id(2) / splits;
  return State + 2 * ((z * (int)get_num_groups(1) + (int)get_group_id(1)) * (int)get_num_groups(0) + (int)get_group_id(0));
}
// Before a slice's adds: the block zeroed.
#ifdef SPLIT_ONTO_Y
#define SPLIT_WAIT(st)
#else
#define SPLIT_WAIT(st) split_wait_zeroed(st);
#endif
// The count the block's last slice sees in split_last.
#ifdef SPLIT_ONTO_Y
#define SPLIT_LAST (splits - 1)
#else
#define SPLIT_LAST splits  // the zeroing counted one
#endif
// gemm.cl and gemm_mma.cl: the block is rows [m0, m0 + BR) x columns
// [n0, n0 + BC) of the M x N matrix at Yb, EPI's index y0 + m N + n; item
// `it` of `nt`. At the start (zeroes it where this slice is the first), and
// after the adds (the last slice applies the epilogue, reading the sums
// past its SM's L1, and resets the state).
#ifdef SPLIT_ONTO_Y
#define SPLIT_RECT_BEGIN(st, flag, Yb, m0, n0, BR, BC, M, N, it, nt)
#else
#define SPLIT_RECT_BEGIN(st, flag, Yb, m0, n0, BR, BC, M, N, it, nt)                    \
  {                                                                                     \
    const bool first_ = split_first(st, flag);                                          \
    if (first_)                                                                         \
      for (int p_ = (it); p_ < (BR) * (BC); p_ += (nt)) {                               \
        const int m_ = (m0) + p_ / (BC), n_ = (n0) + p_ % (BC);                         \
        if (m_ < (M) && n_ < (N)) (Yb)[m_ * (N) + n_] = 0.0f;                           \
      }                                                                                 \
    split_zeroed(st, first_);                                                           \
  }
#endif
// The last slice's epilogue over outputs p_ = 0 .. count - 1 of its block,
// item `it` of `nt` (both constants): OFFSET, an expression of p_, is output
// p_'s offset from Yb (negative: none), EPI's index y0 + that. An item
// reads all its sums before it stores any: one trip to L2 at the end of
// the launch, not one per value (read one by one, ResNet-50's split convs
// ran 5-7% slower on the H100 than with the epilogue pass); plain loads see
// the other slices' adds after split_last's acquire fence.
#ifdef SPLIT_FINISH
#define SPLIT_EPILOGUE(Yb, y0, count, it, nt, OFFSET)                                   \
  {                                                                                     \
    int o_[((count) + (nt) - 1) / (nt)];                                                \
    float v_[((count) + (nt) - 1) / (nt)];                                              \
    _Pragma("unroll") for (int u_ = 0; u_ < ((count) + (nt) - 1) / (nt); ++u_) {        \
      const int p_ = (it) + u_ * (nt);                                                  \
      o_[u_] = p_ < (count) ? (OFFSET) : -1;                                            \
      v_[u_] = o_[u_] >= 0 ? (Yb)[o_[u_]] : 0.0f;                                       \
    }                                                                                   \
    _Pragma("unroll") for (int u_ = 0; u_ < ((count) + (nt) - 1) / (nt); ++u_)          \
      if (o_[u_] >= 0) (Yb)[o_[u_]] = EPI(v_[u_], (y0) + o_[u_]);                       \
  }
#else
#define SPLIT_EPILOGUE(Yb, y0, count, it, nt, OFFSET)
#endif
inline int split_rect_offset(int p, int m0, int n0, int BC, int M, int N) {
  const int m = m0 + p / BC, n = n0 + p % BC;
  return m < M && n < N ? m * N + n : -1;
}
#define SPLIT_RECT_END(st, flag, Yb, y0, m0, n0, BR, BC, M, N, it, nt)                  \
  if (split_last(st, flag, SPLIT_LAST)) {                                               \
    SPLIT_EPILOGUE(Yb, y0, (BR) * (BC), it, nt, split_rect_offset(p_, m0, n0, BC, M, N)) \
    split_reset(st);                                                                    \
  }
#endif
