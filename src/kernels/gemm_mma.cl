// TF32 tensor-core variants of gemm.cl's `gemm` and `conv2d_gemm` (same
// arguments, same epilogue hook, same -DPOOL2 form): opt-in through
// --precision tf32 (docs/precision.md), NVIDIA GPUs only. Inputs are rounded
// to tf32 (10-bit mantissa, cvt.rna) where they are staged in local memory;
// products accumulate in fp32 on the tensor cores (mma.sync m16n8k8).
//
// A work-group of NT = (BM/WM) x (BN/WN) warps x 32 work-items (dimension 0;
// a warp is 32 consecutive work-items, as NVIDIA's OpenCL runs them) computes
// a BM x BN block of Y; each warp a WM x WN sub-block as (WM/16) x (WN/8)
// m16n8k8 fragments. K advances in slices of BK = 32 staged in local memory
// (the next slice's global values are loaded into registers while the
// current one is multiplied, as in gemm.cl).
//
// Local layouts (fragment loads conflict-free): As[m][k'] with a row stride
// of BK + 8 words and k permuted inside each group of 8 so that the taps t
// and t+4 a lane needs are neighbours (one 64-bit load for a0/a2 and one for
// a1/a3); Bs[k][n] with a row stride of BN + 8.
//
// -DMMA_TAPS builds conv2d_mma_taps instead (a convolution over weights
// packed at load, its slices copied asynchronously: below).
//
// The mma and the tf32 rounding: mma_common.cl (prepended).
#ifndef EPI
#define EPI(v, i) (v)
#define EPI_PARAMS
#endif
#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 32
#endif
#ifdef MMA_TAPS  // conv2d_mma_taps (below): shallower slices, several in flight
#ifdef TAPS_BK  // conv2d_wgmma_taps: deeper slices, fewer barriers
#define BK TAPS_BK
#else
#define BK 16
#endif
#if BK != 16 && !defined(MMA_WGMMA)
#error "conv2d_mma_taps packs slices of 16 channels"
#endif
#define SA BK
#else
#define BK 32
#define SA (BK + 8)
#endif
#define NT ((BM / WM) * (BN / WN) * 32)
#define FM (WM / 16)
#define FN (WN / 8)
#define SB (BN + 8)
#define A_PER (BM * BK / NT)  // A elements each work-item stages per slice
#define B_PER (BK * BN / NT)

// Split-K (-DSPLITK, not with POOL2), gemm.cl's protocol: grid z enumerates
// (batch, slice) as batch * splits + slice; a work-group multiplies K range
// [slice * kslice, +kslice) (kslice a multiple of BK) and adds its partial
// tile into Y, which splitk_zero (gemm.cl) zeroed; slice 0 adds beta*C (a
// conv's bias) too; splitk_finish applies the epilogue after.
#ifdef SPLITK
#define SPLIT_Z                                                        \
  const int z = get_group_id(2) / splits, slice = get_group_id(2) - z * splits; \
  const int kbeg = slice * kslice, kend = min(K, kbeg + kslice);
#else
#define SPLIT_Z                  \
  const int z = get_group_id(2); \
  const int kbeg = 0, kend = K;
#endif

// Position of tap k of a slice inside its As row.
#define KPOS(k) (((k) & ~7) | (((k) & 3) << 1) | (((k) >> 2) & 1))

#define MMA_LOCALS        \
  __local uint As[BM * SA]; \
  __local uint Bs[BK * SB]; \
  MMA_WARP_TILE
// The work-item's place in the tile and its accumulators.
#define MMA_WARP_TILE                                                \
  MMA_SCRATCH                                                        \
  const int lid = get_local_id(0);                                   \
  const int lane = lid & 31, warp = lid >> 5;                        \
  const int fg = lane >> 2, ft = lane & 3; /* fragment group, tid */ \
  const int wm0 = (warp / (BN / WN)) * WM, wn0 = (warp % (BN / WN)) * WN;  \
  const int n0 = get_group_id(0) * BN, m0 = get_group_id(1) * BM;   \
  float acc[FM][FN][4];                                              \
  UNROLL for (int i = 0; i < FM; ++i)                                       \
    UNROLL for (int j = 0; j < FN; ++j)                                     \
      UNROLL for (int o = 0; o < 4; ++o) acc[i][j][o] = 0.0f;

// Multiplies the slice in As/Bs into acc. MMA_DIAG_NO_MMA (a diagnostic
// build, wrong results): nothing, to time the staging alone.
#ifdef MMA_DIAG_NO_MMA
#define MMA_MULTIPLY_SLICE
#else
#define MMA_MULTIPLY_SLICE                                                        \
  UNROLL for (int kk = 0; kk < BK; kk += 8) {                                            \
    uint af[FM][4], bf[FN][2];                                                    \
    UNROLL for (int i = 0; i < FM; ++i) {                                                \
      const int row = wm0 + 16 * i + fg;                                          \
      uint2 lo = vload2(0, As + row * SA + kk + 2 * ft);                          \
      uint2 hi = vload2(0, As + (row + 8) * SA + kk + 2 * ft);                    \
      af[i][0] = lo.x, af[i][1] = hi.x, af[i][2] = lo.y, af[i][3] = hi.y;         \
    }                                                                             \
    UNROLL for (int j = 0; j < FN; ++j) {                                                \
      const int col = wn0 + 8 * j + fg;                                           \
      bf[j][0] = Bs[(kk + ft) * SB + col];                                        \
      bf[j][1] = Bs[(kk + ft + 4) * SB + col];                                    \
    }                                                                             \
    UNROLL for (int i = 0; i < FM; ++i)                                                  \
      UNROLL for (int j = 0; j < FN; ++j) MMA(acc[i][j], af[i], bf[j]);                  \
  }
#endif

// Staging coordinates of element r of this work-item's share of a slice.
// k-fast A (rows of K contiguous): a warp reads one row's 32 taps. m-fast A:
// 8 neighbouring rows per tap (one 32-byte sector each), so stores into As
// collide at most 2-way. B likewise (n-fast: a warp reads 32 columns).
#define MMA_A_COORD(r, m, k, kfast)                                    \
  const int e##m = lid + (r) * NT;                                     \
  const int m = (kfast) ? e##m / BK : ((e##m) & 7) + 8 * ((e##m >> 3) / BK); \
  const int k = (kfast) ? e##m % BK : (e##m >> 3) % BK;
#define MMA_B_COORD(r, kb, nb, nfast)                                   \
  const int e##kb = lid + (r) * NT;                                     \
  const int kb = (nfast) ? e##kb / BN : ((e##kb) & 7) + 8 * ((e##kb >> 3) / BN); \
  const int nb = (nfast) ? e##kb % BN : (e##kb >> 3) % BN;

#ifndef MMA_TAPS
__kernel __attribute__((reqd_work_group_size(NT, 1, 1)))
void gemm(__global const float* A, __global const float* B, __global const float* C, __global float* Y,
          GemmParams gp EPI_PARAMS) {
  GEMM_PARAMS(gp)
  MMA_LOCALS
  SPLIT_Z
  A += ao + strided_offset(z, batch, a_sb);
  B += bo + strided_offset(z, batch, b_sb);
  C += co + strided_offset(z, batch, c_sb);
  const bool a_kfast = a_sk == 1, b_nfast = b_sn == 1;
  float ra[A_PER], rb[B_PER];
#define MMA_GEMM_LOAD(k0)                                                                  \
  UNROLL for (int r = 0; r < A_PER; ++r) {                                                        \
    MMA_A_COORD(r, m, k, a_kfast)                                                          \
    ra[r] = (m0 + m < M && (k0) + k < kend) ? A[(m0 + m) * a_sm + ((k0) + k) * a_sk] : 0.0f; \
  }                                                                                        \
  UNROLL for (int r = 0; r < B_PER; ++r) {                                                        \
    MMA_B_COORD(r, kb, nb, b_nfast)                                                        \
    rb[r] = ((k0) + kb < kend && n0 + nb < N) ? B[((k0) + kb) * b_sk + (n0 + nb) * b_sn] : 0.0f; \
  }
  MMA_GEMM_LOAD(kbeg)
  for (int k0 = kbeg; k0 < kend; k0 += BK) {
    UNROLL for (int r = 0; r < A_PER; ++r) {
      MMA_A_COORD(r, m, k, a_kfast)
      As[m * SA + KPOS(k)] = to_tf32(ra[r]);
    }
    UNROLL for (int r = 0; r < B_PER; ++r) {
      MMA_B_COORD(r, kb, nb, b_nfast)
      Bs[kb * SB + nb] = to_tf32(rb[r]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (k0 + BK < kend) {
      MMA_GEMM_LOAD(k0 + BK)
    }
    MMA_MULTIPLY_SLICE
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const int y0 = z * M * N;
  UNROLL for (int i = 0; i < FM; ++i)
    UNROLL for (int j = 0; j < FN; ++j)
      UNROLL for (int o = 0; o < 4; ++o) {
        const int m = m0 + wm0 + 16 * i + fg + 8 * (o >> 1), n = n0 + wn0 + 8 * j + 2 * ft + (o & 1);
        if (m >= M || n >= N) continue;
        float v = alpha * acc[i][j][o];
#ifdef SPLITK
        if (has_c && kbeg == 0) v += beta * C[m * c_sm + n * c_sn];
        split_add(Y + yo + y0 + m * N + n, v);
#else
        if (has_c) v += beta * C[m * c_sm + n * c_sn];
        Y[yo + y0 + m * N + n] = EPI(v, y0 + m * N + n);
#endif
      }
}

#endif  // !MMA_TAPS

// Tile column p of a conv (and its input window's corner ih0, iw0): an
// output pixel, or with POOL2 (FusedConvMaxPool, 2x2 stride-2 windows)
// window position (wy, wx) = ((p >> 3) & 1, p & 1) of pooled pixel
// 4 (p >> 4) + ((p >> 1) & 3), so the lane holding d0/d1 of fragments 2j
// and 2j+1 holds one whole window (rows g and g+8: d2/d3) and stores its
// max with no exchange between lanes. Returns whether it is one (ceil_mode
// windows may run past the conv output).
inline bool mma_conv_column(int p, int OH, int OW, int PH, int PW, int sh, int sw, int ph, int pw, int* ih0,
                            int* iw0) {
#ifdef POOL2
  const int pooled = (p >> 4) * 4 + ((p >> 1) & 3);
  const int oh = (pooled / PW) * 2 + ((p >> 3) & 1), ow = (pooled % PW) * 2 + (p & 1);
  *ih0 = oh * sh - ph, *iw0 = ow * sw - pw;
  return pooled < PH * PW && oh < OH && ow < OW;
#else
  const int oh = p / OW, ow = p - oh * OW;
  *ih0 = oh * sh - ph, *iw0 = ow * sw - pw;
  return p < OH * OW;
#endif
}
// N, the tile columns of the image, and the column nb = lid % BN a
// work-item stages (p in the image).
#ifdef POOL2
#define MMA_CONV_COLUMNS (((PH * PW + 3) / 4) * 16)
#else
#define MMA_CONV_COLUMNS (OH * OW)
#endif
#define MMA_CONV_PIXEL                                                                \
  const int N = MMA_CONV_COLUMNS;                                                     \
  const int nb = lid % BN, p = n0 + nb;                                               \
  int ih0, iw0;                                                                       \
  const bool p_in = mma_conv_column(p, OH, OW, PH, PW, sh, sw, ph, pw, &ih0, &iw0);

// Stores acc (+ bias on K's first slice) for output channels m0 + ... of
// group g of image img: pooled maxima with POOL2, split-K's adds with SPLITK.
#ifdef POOL2
#define MMA_CONV_STORE                                                                                   \
  const int PHW = PH * PW, y0 = (img * OC + g * OCg) * PHW;                                              \
  UNROLL for (int i = 0; i < FM; ++i)                                                                    \
    UNROLL for (int h = 0; h < 2; ++h) { /* rows fg, fg + 8 */                                           \
      const int m = m0 + wm0 + 16 * i + fg + 8 * h;                                                      \
      if (m >= M) continue;                                                                              \
      const float bias = has_bias ? Bias[bo + g * OCg + m] : 0.0f;                                       \
      UNROLL for (int j = 0; j < FN; j += 2) {                                                           \
        const int q = n0 + wn0 + 8 * j; /* a multiple of 16: 4 windows */                               \
        const int pp = (q >> 4) * 4 + ft;                                                                \
        if (pp >= PHW) continue;                                                                         \
        const int py = pp / PW, px = pp - py * PW;                                                       \
        float best = -INFINITY; /* padding never wins */                                                 \
        /* (wy, wx) = (c >> 1, c & 1): fragment j + wy, register 2h + wx */                              \
        UNROLL for (int c = 0; c < 4; ++c)                                                               \
          if (py * 2 + (c >> 1) < OH && px * 2 + (c & 1) < OW)                                           \
            best = fmax(best, EPI(acc[i][j + (c >> 1)][2 * h + (c & 1)] + bias, y0 + m * PHW + pp));     \
        Y[yo + y0 + m * PHW + pp] = best;                                                                \
      }                                                                                                  \
    }
#else
#ifdef SPLITK
#define MMA_CONV_PUT(q, v) split_add(Y + yo + y0 + m * N + (q), v)
#else
#define MMA_CONV_PUT(q, v) Y[yo + y0 + m * N + (q)] = EPI(v, y0 + m * N + (q))
#endif
#define MMA_CONV_STORE                                                              \
  const int y0 = (img * OC + g * OCg) * N;                                          \
  UNROLL for (int i = 0; i < FM; ++i)                                               \
    UNROLL for (int o = 0; o < 4; ++o) {                                            \
      const int m = m0 + wm0 + 16 * i + fg + 8 * (o >> 1);                          \
      if (m >= M) continue;                                                         \
      const float bias = has_bias && kbeg == 0 ? Bias[bo + g * OCg + m] : 0.0f;     \
      UNROLL for (int j = 0; j < FN; ++j) {                                         \
        const int q = n0 + wn0 + 8 * j + 2 * ft + (o & 1);                          \
        if (q < N) MMA_CONV_PUT(q, acc[i][j][o] + bias);                            \
      }                                                                             \
    }
#endif

#ifndef MMA_TAPS
// 2D convolution as an implicit GEMM per (image, group), as gemm.cl's
// conv2d_gemm: M = output channels of the group, N = output pixels, K =
// input channels of the group x KH x KW; each work-item stages B for one
// fixed pixel, its taps advanced by BK with mixed-radix carries.
__kernel __attribute__((reqd_work_group_size(NT, 1, 1)))
void conv2d_gemm(__global const float* X, __global const float* Wt, __global const float* Bias, __global float* Y,
                 ConvParams cp EPI_PARAMS) {
  CONV_PARAMS(cp)
  MMA_LOCALS
  const int ICg = C / groups, OCg = OC / groups, K = ICg * KH * KW;
  SPLIT_Z
  const int img = z / groups, g = z % groups;
  const int M = OCg, KHW = KH * KW;
  __global const float* wg = Wt + wo + g * OCg * K;
  __global const float* xg = X + xo + (img * C + g * ICg) * H * W;
  // B staging: pixel nb, rows kb_r = lid / BN + r * (NT / BN).
  MMA_CONV_PIXEL
  const int pix0 = ih0 * W + iw0;
  // The taps of the slice being loaded, decoded once per slice by BK
  // work-items: (kh * dh, kw * dw, offset in the group's input); past K a
  // row offset beyond any image, so the tap reads nothing. A warp's lanes
  // read one entry (broadcast). Two buffers, by slice parity: a slice's
  // taps are written while the previous slice's may still be read.
  __local int4 taps[2 * BK];
#define MMA_DECODE_TAPS(k0)                                                    \
  if (lid < BK) {                                                              \
    const int k = (k0) + lid, ic = k / KHW, rem = k - ic * KHW, kh = rem / KW;  \
    const int kw = rem - kh * KW;                                              \
    taps[(((k0) / BK) & 1) * BK + lid] =                                       \
        k < kend ? (int4)(kh * dh, kw * dw, (ic * H + kh * dh) * W + kw * dw, 0) : (int4)(1 << 24, 0, 0, 0); \
  }
  float ra[A_PER], rb[B_PER];
#ifdef MMA_DIAG_NO_GLOBAL  // a diagnostic build (wrong results): no global reads, to time the rest
#define MMA_CONV_LOAD(k0)                                                                  \
  UNROLL for (int r = 0; r < A_PER; ++r) ra[r] = (float)(r + (k0));                        \
  UNROLL for (int r = 0; r < B_PER; ++r) rb[r] = (float)(r - (k0) + lid);
#else
#define MMA_CONV_LOAD(k0)                                                                  \
  UNROLL for (int r = 0; r < A_PER; ++r) {                                                 \
    MMA_A_COORD(r, m, k, 1)                                                                \
    ra[r] = (m0 + m < M && (k0) + k < kend) ? wg[(m0 + m) * K + (k0) + k] : 0.0f;          \
  }                                                                                        \
  UNROLL for (int r = 0; r < B_PER; ++r) {                                                 \
    const int4 tap = taps[(((k0) / BK) & 1) * BK + lid / BN + r * (NT / BN)];             \
    const int ih = ih0 + tap.x, iw = iw0 + tap.y;                                          \
    const bool in = p_in && (uint)ih < (uint)H && (uint)iw < (uint)W;                     \
    rb[r] = in ? xg[pix0 + tap.z] : 0.0f;                                                  \
  }
#endif
  MMA_DECODE_TAPS(kbeg)
  barrier(CLK_LOCAL_MEM_FENCE);
  MMA_CONV_LOAD(kbeg)
  for (int k0 = kbeg; k0 < kend; k0 += BK) {
    UNROLL for (int r = 0; r < A_PER; ++r) {
      MMA_A_COORD(r, m, k, 1)
      As[m * SA + KPOS(k)] = to_tf32(ra[r]);
    }
    UNROLL for (int r = 0; r < B_PER; ++r) Bs[(lid / BN + r * (NT / BN)) * SB + nb] = to_tf32(rb[r]);
    MMA_DECODE_TAPS(k0 + BK)  // the other buffer: slice k0's may still be read
    barrier(CLK_LOCAL_MEM_FENCE);
    if (k0 + BK < kend) {
      MMA_CONV_LOAD(k0 + BK)
    }
    MMA_MULTIPLY_SLICE
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  MMA_CONV_STORE
}

#else  // MMA_TAPS

// The same convolution with K tap-major over weights packed at load
// (lower/mma.cpp's tap_weights: [OC][KH x KW][CP], CP = C per group rounded
// up to BK, zeros past C, values already rounded to tf32), so that a slice
// of BK taps is one filter tap over BK input channels: a work-item's pixel
// is in or out of the image for the whole slice, and its BK rows are one
// plane apart. Slices are copied into local memory asynchronously
// (cp.async, sm_80+), STAGES of them in flight: the copies of slice s +
// STAGES - 1 run while slice s is multiplied, with no registers held for
// them and one barrier per slice. Weights go in 16-byte copies, input
// pixels in 4-byte ones, zero-filled where the pixel is padding or past C.
//
// Local layouts: As[m][k'] unpadded, each slice's 16 channels packed in
// the order 0 4 8 12 1 5 9 13 ... (tap_weights), so that the four values
// a lane's fragments take from a row over the slice's two mma steps (k = t,
// t + 4, t + 8, t + 12) are one 16-byte load, and a quarter warp's loads
// (two rows, 16 words apart) hit 32 distinct banks; Bs[k][n] as in
// conv2d_gemm, rounded to tf32 as its fragments are loaded. Per slice a
// work-item issues few instructions besides its mma: the tap advances by
// carries, not divisions, and the copies address local memory from one
// base (docs/kernel-choices.md#tap-major-tiles-with-asynchronous-copies).
#ifndef STAGES
#define STAGES 3
#endif
#define A_CHUNKS (BM * BK / 4 / NT)  // 16-byte weight copies per work-item per slice
// Diagnostic builds (wrong results), to time one kind of copy alone:
// MMA_DIAG_NO_WEIGHTS copies no weights, MMA_DIAG_NO_INPUT no input.
#ifdef MMA_DIAG_NO_WEIGHTS
#define TAPS_A_CHUNKS 0
#else
#define TAPS_A_CHUNKS A_CHUNKS
#endif
#ifdef MMA_DIAG_NO_INPUT
#define TAPS_B_PER 0
#else
#define TAPS_B_PER B_PER
#endif

// The copies address local memory as a .shared base (SHARED_BASE,
// mma_common.cl) plus a byte offset.
#if defined(TEXPLAN_PTX) && !defined(MMA_DIAG_SYNC_COPY)  // the diagnostic: plain copies, to time what cp.async buys
#define COPY16(lp, sa, src, in) \
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(sa), "l"((ulong)(size_t)(src)), "r"((in) ? 16 : 0) : "memory")
#define COPY4(lp, sa, src, in) \
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(sa), "l"((ulong)(size_t)(src)), "r"((in) ? 4 : 0) : "memory")
#define COPY_COMMIT() asm volatile("cp.async.commit_group;" ::: "memory")
#define COPY_WAIT(n) asm volatile("cp.async.wait_group %0;" ::"n"(n) : "memory")
#else  // plain copies, complete when issued
#define COPY16(lp, sa, src, in) vstore4((in) ? as_uint4(vload4(0, (src))) : (uint4)(0), 0, (lp))
#define COPY4(lp, sa, src, in) (*(lp) = (in) ? as_uint(*(src)) : 0u)
#define COPY_COMMIT()
#define COPY_WAIT(n)
#endif

// The next slice to copy (shared by both tap-major kernels): tap (kh, kw),
// channels c0.., its stage; advanced by carries (one division at the start
// of a split's range); the first `ahead` copied before the loop.
#define TAPS_CURSOR                                                                                     \
  const int kt0 = kbeg / BK, kt1 = (kend + BK - 1) / BK;                                                \
  int ld_kt = kt0, ld_st = 0;                                                                           \
  int ld_tap = kt0 / CS, ld_c0 = (kt0 - ld_tap * CS) * BK, ld_kh = ld_tap / KW, ld_kw = ld_tap - ld_kh * KW;
#define TAPS_ADVANCE()                                  \
  ++ld_kt, ld_st = ld_st == STAGES - 1 ? 0 : ld_st + 1; \
  if ((ld_c0 += BK) == CP) {                            \
    ld_c0 = 0;                                          \
    if (++ld_kw == KW) ld_kw = 0, ++ld_kh;              \
  }
#define TAPS_PROLOGUE(LOAD, ahead)            \
  UNROLL for (int s = 0; s < (ahead); ++s) { \
    if (ld_kt < kt1) LOAD()                   \
    COPY_COMMIT();                            \
  }

// An input word as tf32: rounded, unless X is stored rounded (INPUT_TF32,
// Tensor::stored_tf32).
#ifdef INPUT_TF32
#define TAPS_X_TF32(u) (u)
#else
#define TAPS_X_TF32(u) to_tf32(as_float(u))
#endif
// Multiplies the slice at as/bs into acc (A already tf32, B rounded here);
// with MMA_DIAG_NO_MMA (wrong results) nothing, to time the copies alone.
#ifdef MMA_DIAG_NO_MMA
#define MMA_MULTIPLY_TAPS(as, bs)
#else
#define MMA_MULTIPLY_TAPS(as, bs)                                                                \
  {                                                                                              \
    uint af[2][FM][4];                                                                           \
    UNROLL for (int i = 0; i < FM; ++i) {                                                        \
      const uint4 lo = vload4(0, (as) + (wm0 + 16 * i + fg) * SA + 4 * ft);                      \
      const uint4 hi = vload4(0, (as) + (wm0 + 16 * i + fg + 8) * SA + 4 * ft);                  \
      af[0][i][0] = lo.x, af[0][i][1] = hi.x, af[0][i][2] = lo.y, af[0][i][3] = hi.y;            \
      af[1][i][0] = lo.z, af[1][i][1] = hi.z, af[1][i][2] = lo.w, af[1][i][3] = hi.w;            \
    }                                                                                            \
    UNROLL for (int s = 0; s < 2; ++s) {                                                         \
      uint bf[FN][2];                                                                            \
      UNROLL for (int j = 0; j < FN; ++j) {                                                      \
        __local const uint* q = (bs) + (8 * s + ft) * SB + wn0 + 8 * j + fg;                     \
        bf[j][0] = TAPS_X_TF32(q[0]), bf[j][1] = TAPS_X_TF32(q[4 * SB]);                         \
      }                                                                                          \
      UNROLL for (int i = 0; i < FM; ++i)                                                        \
        UNROLL for (int j = 0; j < FN; ++j) MMA(acc[i][j], af[s][i], bf[j]);                     \
    }                                                                                            \
  }
#endif

#ifndef MMA_WGMMA
__kernel __attribute__((reqd_work_group_size(NT, 1, 1)))
void conv2d_mma_taps(__global const float* X, __global const float* Wt, __global const float* Bias, __global float* Y,
                     ConvParams cp EPI_PARAMS) {
  CONV_PARAMS(cp)
  __local uint As[STAGES * BM * SA] __attribute__((aligned(16)));  // cp.async's 16-byte copies, 16-byte loads
  __local uint Bs[STAGES * BK * SB] __attribute__((aligned(16)));
  MMA_WARP_TILE
  const int ICg = C / groups, OCg = OC / groups, CP = (ICg + BK - 1) / BK * BK, K = KH * KW * CP;
  SPLIT_Z
  const int img = z / groups, g = z % groups;
  const int M = OCg, HW = H * W, CS = CP / BK;  // CS: slices per tap
  __global const float* wg = Wt + wo + g * OCg * K;
  __global const float* xg = X + xo + (img * C + g * ICg) * HW;
  MMA_CONV_PIXEL
  SHARED_BASE(as_sh, As)
  SHARED_BASE(bs_sh, Bs)
  // This work-item's copies: weight chunk (am + r * NT / 4 rows, aq) and
  // input rows kb0 + r * (NT / BN) of pixel nb, at stage offsets.
  const int am = lid / (BK / 4), aq = lid % (BK / 4), kb0 = lid / BN;
  __global const float* wrow = wg + (m0 + am) * K + 4 * aq;
  TAPS_CURSOR
#define TAPS_LOAD()                                                                                 \
  {                                                                                                 \
    const int ih = ih0 + ld_kh * dh, iw = iw0 + ld_kw * dw;                                        \
    const bool pin = p_in && (uint)ih < (uint)H && (uint)iw < (uint)W;                             \
    __global const float* xp = xg + (pin ? ih * W + iw : 0) + (ld_c0 + kb0) * HW;                   \
    const int wk = ld_kt * BK;                                                                      \
    __local uint* as = As + ld_st * (BM * SA);                                                      \
    __local uint* bs = Bs + ld_st * (BK * SB);                                                      \
    const uint as_s = as_sh + 4u * (uint)(ld_st * (BM * SA) + am * SA + 4 * aq);                   \
    const uint bs_s = bs_sh + 4u * (uint)(ld_st * (BK * SB) + kb0 * SB + nb);                      \
    UNROLL for (int r = 0; r < TAPS_A_CHUNKS; ++r) {                                                \
      const bool in = m0 + am + r * (NT * 4 / BK) < M;                                     \
      COPY16(as + (am + r * (NT * 4 / BK)) * SA + 4 * aq, as_s + 4u * (uint)(r * (NT * 4 / BK) * SA), \
             in ? wrow + r * (NT * 4 / BK) * K + wk : wg, in);                                      \
    }                                                                                               \
    UNROLL for (int r = 0; r < TAPS_B_PER; ++r) {                                                   \
      const bool in = pin && ld_c0 + kb0 + r * (NT / BN) < ICg;                                     \
      COPY4(bs + (kb0 + r * (NT / BN)) * SB + nb, bs_s + 4u * (uint)(r * (NT / BN) * SB),           \
            in ? xp + r * (NT / BN) * HW : xg, in);                                                 \
    }                                                                                               \
    TAPS_ADVANCE()                                                                                  \
  }
  TAPS_PROLOGUE(TAPS_LOAD, STAGES - 1)
  int st = 0;  // the stage of slice kt
  for (int kt = kt0; kt < kt1; ++kt) {
    COPY_WAIT(STAGES - 2);  // this work-item's copies of slice kt are done
    barrier(CLK_LOCAL_MEM_FENCE);  // everyone's are, and slice kt - 1's stage is free
    if (ld_kt < kt1) TAPS_LOAD()
    COPY_COMMIT();
    MMA_MULTIPLY_TAPS(As + st * (BM * SA), Bs + st * (BK * SB))
    st = st == STAGES - 1 ? 0 : st + 1;
  }
  MMA_CONV_STORE
}
#else  // MMA_WGMMA

// conv2d_wgmma_taps: the tap-major convolution on Hopper's warpgroup
// instruction, wgmma.mma_async (tf32, m64nBNk8), which reads both operands
// from local memory itself: no fragment loads, and one warpgroup keeps the
// tensor cores busy. A work-group is BM / 64 warpgroups (128 items each)
// computing BM output channels x BN pixels (WM 16, WN BN: warp w holds rows
// 16w.. of every column, the fragments of mma.sync's m16n8 in order, so the
// stores are conv2d_gemm's); warpgroup i multiplies rows 64i.. by the
// slice's input, which they share. Slices as conv2d_mma_taps (BK = TAPS_BK
// channels of one tap, 16 or 32, STAGES in flight by cp.async), both
// operands in wgmma's canonical K-major layout without swizzle (WG_CORE):
// core matrices of 8 rows x 4 words, the two of an 8-deep step 128 bytes
// apart (the descriptor's leading offset), 8-row groups 256 bytes apart
// (its stride offset), each step after the one before. The weights are
// packed at load in that layout per 64-row block and slice (lower/mma.cpp
// wgmma_weights), so a slice's A is one copy of 64 x BK words per block;
// input pixels are copied element-wise into it, and each work-item rounds
// the values it copied to tf32 once they land (unless X is stored rounded,
// INPUT_TF32), while the slice before is multiplied. A slice's products are
// issued before the next copies, so that the tensor cores start right after
// the barrier. NVIDIA's compiler targets sm_90, where ptxas refuses wgmma:
// the instructions are written behind P90, which SM90A_PATCH makes PTX
// comments that Device::program uncomments in the PTX it retargets to
// sm_90a (docs/kernel-choices.md#wgmma-through-ptx-retargeted-to-sm_90a).
// Without TEXPLAN_PTX each work-item computes its accumulators from local
// memory (tests check the layouts on PoCL with it).
#define WG_CORE(r, k, R) ((((k) >> 3) * (R) * 8) + (((r) >> 3) * 64) + ((((k) >> 2) & 1) * 32) + (((r) & 7) * 4) + ((k) & 3))
#define WG_A(r, k) (((r) >> 6) * (64 * BK) + WG_CORE((r) & 63, k, 64))  // A: 64-row blocks, one after the other
#ifdef SM90A_PATCH
#define P90 "// @@"
#else
#define P90 ""
#endif
#ifdef TEXPLAN_PTX
// Matrix descriptor: start address / 16, leading byte offset 128 / 16,
// stride byte offset 256 / 16, no swizzle.
#define WG_DESC(a) ((((ulong)(a) & 0x3FFFFul) >> 4) | (8ul << 16) | (16ul << 32))
#if BN == 64
#define WGMMA_STEP(d, da, db)                                                                  \
  asm volatile(P90 "{ .reg .pred p; setp.ne.b32 p, %34, 0;\n\t"                                 \
               P90 "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, p, 1, 1; }" \
               : "+f"((d)[0][0]), "+f"((d)[0][1]), "+f"((d)[0][2]), "+f"((d)[0][3]), "+f"((d)[1][0]), "+f"((d)[1][1]), "+f"((d)[1][2]), "+f"((d)[1][3]), "+f"((d)[2][0]), "+f"((d)[2][1]), "+f"((d)[2][2]), "+f"((d)[2][3]), "+f"((d)[3][0]), "+f"((d)[3][1]), "+f"((d)[3][2]), "+f"((d)[3][3]), "+f"((d)[4][0]), "+f"((d)[4][1]), "+f"((d)[4][2]), "+f"((d)[4][3]), "+f"((d)[5][0]), "+f"((d)[5][1]), "+f"((d)[5][2]), "+f"((d)[5][3]), "+f"((d)[6][0]), "+f"((d)[6][1]), "+f"((d)[6][2]), "+f"((d)[6][3]), "+f"((d)[7][0]), "+f"((d)[7][1]), "+f"((d)[7][2]), "+f"((d)[7][3]) \
               : "l"(da), "l"(db), "r"(1) : "memory")
#elif BN == 128
#define WGMMA_STEP(d, da, db)                                                                  \
  asm volatile(P90 "{ .reg .pred p; setp.ne.b32 p, %66, 0;\n\t"                                 \
               P90 "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, p, 1, 1; }" \
               : "+f"((d)[0][0]), "+f"((d)[0][1]), "+f"((d)[0][2]), "+f"((d)[0][3]), "+f"((d)[1][0]), "+f"((d)[1][1]), "+f"((d)[1][2]), "+f"((d)[1][3]), "+f"((d)[2][0]), "+f"((d)[2][1]), "+f"((d)[2][2]), "+f"((d)[2][3]), "+f"((d)[3][0]), "+f"((d)[3][1]), "+f"((d)[3][2]), "+f"((d)[3][3]), "+f"((d)[4][0]), "+f"((d)[4][1]), "+f"((d)[4][2]), "+f"((d)[4][3]), "+f"((d)[5][0]), "+f"((d)[5][1]), "+f"((d)[5][2]), "+f"((d)[5][3]), "+f"((d)[6][0]), "+f"((d)[6][1]), "+f"((d)[6][2]), "+f"((d)[6][3]), "+f"((d)[7][0]), "+f"((d)[7][1]), "+f"((d)[7][2]), "+f"((d)[7][3]), "+f"((d)[8][0]), "+f"((d)[8][1]), "+f"((d)[8][2]), "+f"((d)[8][3]), "+f"((d)[9][0]), "+f"((d)[9][1]), "+f"((d)[9][2]), "+f"((d)[9][3]), "+f"((d)[10][0]), "+f"((d)[10][1]), "+f"((d)[10][2]), "+f"((d)[10][3]), "+f"((d)[11][0]), "+f"((d)[11][1]), "+f"((d)[11][2]), "+f"((d)[11][3]), "+f"((d)[12][0]), "+f"((d)[12][1]), "+f"((d)[12][2]), "+f"((d)[12][3]), "+f"((d)[13][0]), "+f"((d)[13][1]), "+f"((d)[13][2]), "+f"((d)[13][3]), "+f"((d)[14][0]), "+f"((d)[14][1]), "+f"((d)[14][2]), "+f"((d)[14][3]), "+f"((d)[15][0]), "+f"((d)[15][1]), "+f"((d)[15][2]), "+f"((d)[15][3]) \
               : "l"(da), "l"(db), "r"(1) : "memory")
#else
#error "conv2d_wgmma_taps: BN 64 or 128"
#endif
#ifdef MMA_DIAG_NO_MMA  // the diagnostic build: copies alone
#define WGMMA_SLICE(as_s, bs_s)
#else
#define WGMMA_SLICE(as_s, bs_s)                                                                      \
  asm volatile(P90 "wgmma.fence.sync.aligned;" ::: "memory");                                        \
  UNROLL for (int s_ = 0; s_ < BK / 8; ++s_)                                                         \
    WGMMA_STEP(acc[0], WG_DESC((as_s) + (uint)s_ * (64 * 32u)), WG_DESC((bs_s) + (uint)s_ * (BN * 32u))); \
  asm volatile(P90 "wgmma.commit_group.sync.aligned;" ::: "memory")
#endif
#define WGMMA_WAIT() asm volatile(P90 "wgmma.wait_group.sync.aligned 0;" ::: "memory")
#define WGMMA_WAIT1() asm volatile(P90 "wgmma.wait_group.sync.aligned 1;" ::: "memory")
#define WG_FENCE() asm volatile("fence.proxy.async.shared::cta;" ::: "memory")  // the tensor cores read through the async proxy
#else
#define WGMMA_SLICE(as_s, bs_s)                                                                       \
  UNROLL for (int j = 0; j < FN; ++j)                                                                 \
    UNROLL for (int o = 0; o < 4; ++o) {                                                              \
      const int r = wm0 + fg + 8 * (o >> 1), c = 8 * j + 2 * ft + (o & 1);                            \
      float s = acc[0][j][o];                                                                         \
      for (int k = 0; k < BK; ++k)                                                                    \
        s += as_float(as[WG_A(r, k)]) * as_float(bs[WG_CORE(c, k, BN)]);                                \
      acc[0][j][o] = s;                                                                               \
    }
#define WGMMA_WAIT()
#define WGMMA_WAIT1()
#define WG_FENCE()
#endif

__kernel __attribute__((reqd_work_group_size(NT, 1, 1)))
void conv2d_wgmma_taps(__global const float* X, __global const float* Wt, __global const float* Bias, __global float* Y,
                       ConvParams cp EPI_PARAMS) {
  CONV_PARAMS(cp)
  __local uint As[STAGES * BM * BK] __attribute__((aligned(128)));
  __local uint Bs[STAGES * BN * BK] __attribute__((aligned(128)));
  MMA_WARP_TILE
  const int ICg = C / groups, OCg = OC / groups, CP = (ICg + BK - 1) / BK * BK, K = KH * KW * CP;
  SPLIT_Z
  const int img = z / groups, g = z % groups;
  const int M = OCg, HW = H * W, CS = CP / BK, KT = K / BK;  // CS: slices per tap, KT: slices
  // The group's packed weights: [OCg / 64 blocks][KT slices][64 x BK words];
  // this work-group's start at block m0 / 64, of which `blocks` exist.
  const int blocks = (OCg + 63) / 64 - m0 / 64;
  __global const float* wblock = Wt + wo + (g * ((OCg + 63) / 64) + m0 / 64) * KT * (64 * BK);
  __global const float* xg = X + xo + (img * C + g * ICg) * HW;
  const int N = MMA_CONV_COLUMNS;
  SHARED_BASE(as_sh, As)
  SHARED_BASE(bs_sh, Bs)
  // The input copies: a work-item copies channels kq, kq + 4, ... (kq =
  // lane / 8) of tile columns (lane & 7) + 8 (warp + NW i), so that the 32
  // copies of one instruction are 8 columns x 4 channels of one core
  // matrix, in 32 distinct banks (columns 32 apart, as lid % BN gave them,
  // share banks: 4-way conflicts on every copy and rounding, which doubled
  // the kernel's time).
#define WG_NW (NT / 32)
#define WG_PP (BN / (8 * WG_NW))  // columns per work-item
#define WG_KQ (BK / 4)            // channels per column per work-item
#define WG_PP_COPIED (TAPS_B_PER ? WG_PP : 0)  // none in the diagnostic build MMA_DIAG_NO_INPUT
  const int kq = lane >> 3;
  int wg_col[WG_PP], wg_ih0[WG_PP], wg_iw0[WG_PP];
  bool wg_in[WG_PP];
  UNROLL for (int i = 0; i < WG_PP; ++i) {
    wg_col[i] = (lane & 7) + 8 * (warp + WG_NW * i);
    wg_in[i] = mma_conv_column(n0 + wg_col[i], OH, OW, PH, PW, sh, sw, ph, pw, &wg_ih0[i], &wg_iw0[i]);
  }
  TAPS_CURSOR
#define WG_LOAD()                                                                                  \
  {                                                                                                \
    __local uint* as = As + ld_st * (BM * BK);                                                     \
    __local uint* bs = Bs + ld_st * (BN * BK);                                                     \
    UNROLL for (int r = 0; r < TAPS_A_CHUNKS; ++r) {                                               \
      const int q = lid + r * NT;                                                                  \
      const int qb = q / (16 * BK), qi = q - qb * (16 * BK); /* 64-row block, 16-byte chunk in it */ \
      COPY16(as + 4 * q, as_sh + 4u * (uint)(ld_st * (BM * BK) + 4 * q),                         \
             qb < blocks ? wblock + (qb * KT + ld_kt) * (64 * BK) + 4 * qi : wblock, qb < blocks);        \
    }                                                                                              \
    UNROLL for (int i = 0; i < WG_PP_COPIED; ++i) {                                                \
      const int ih = wg_ih0[i] + ld_kh * dh, iw = wg_iw0[i] + ld_kw * dw;                          \
      const bool pin = wg_in[i] && (uint)ih < (uint)H && (uint)iw < (uint)W;                       \
      __global const float* xp = xg + (pin ? ih * W + iw : 0) + (ld_c0 + kq) * HW;                 \
      UNROLL for (int j = 0; j < WG_KQ; ++j) {                                                     \
        const bool in = pin && ld_c0 + kq + 4 * j < ICg;                                           \
        const int at = WG_CORE(wg_col[i], kq + 4 * j, BN);                                         \
        COPY4(bs + at, bs_sh + 4u * (uint)(ld_st * (BN * BK) + at), in ? xp + 4 * j * HW : xg, in); \
      }                                                                                            \
    }                                                                                              \
    TAPS_ADVANCE()                                                                                 \
  }
  // WG_PIPE: two slices' products in flight (wgmma.wait_group 1), so the
  // copies run one slice less ahead: slice kt + STAGES - 2 goes into slice
  // kt - 2's stage, whose products every warp had waited for before the
  // barrier. Without it, slice kt - 1's products end before the barrier.
#ifdef WG_PIPE
#define WG_AHEAD (STAGES - 2)
#else
#define WG_AHEAD (STAGES - 1)
#endif
  TAPS_PROLOGUE(WG_LOAD, WG_AHEAD)
  int st = 0;  // the stage of slice kt
  for (int kt = kt0; kt < kt1; ++kt) {
    COPY_WAIT(WG_AHEAD - 1);  // this work-item's copies of slice kt are done
    // Its input values rounded to tf32 in place (the tensor cores would
    // drop their low bits: errors 4-9x cvt.rna's in VGG-16 and ResNet-50),
    // while slice kt - 1's products run; with INPUT_TF32 (X stored rounded,
    // Tensor::stored_tf32) they are already.
#ifndef INPUT_TF32
    UNROLL for (int i = 0; i < WG_PP_COPIED; ++i)
      UNROLL for (int j = 0; j < WG_KQ; ++j) {
        __local uint* q = Bs + st * (BN * BK) + WG_CORE(wg_col[i], kq + 4 * j, BN);
        *q = to_tf32(as_float(*q));
      }
#endif
    WG_FENCE();
#ifndef WG_PIPE
    WGMMA_WAIT();                  // slice kt - 1's products have read their stage
#endif
    barrier(CLK_LOCAL_MEM_FENCE);  // everyone's slice kt is rounded, and the stage copied next is free
    {
      __local const uint* as = As + st * (BM * BK);
      __local const uint* bs = Bs + st * (BN * BK);
      WGMMA_SLICE(as_sh + 4u * (uint)(st * (BM * BK) + (warp >> 2) * (64 * BK)), bs_sh + 4u * (uint)(st * (BN * BK)));
    }
    // The copies of slice kt + WG_AHEAD into slice kt - 1's stage (kt - 2's
    // with WG_PIPE), issued behind the products.
    if (ld_kt < kt1) WG_LOAD()
    COPY_COMMIT();
#ifdef WG_PIPE
    WGMMA_WAIT1();  // slice kt - 1's products are done: its stage is free after the next barrier
#endif
    st = st == STAGES - 1 ? 0 : st + 1;
  }
  WGMMA_WAIT();
  MMA_CONV_STORE
}
#endif  // MMA_WGMMA
#endif  // MMA_TAPS
