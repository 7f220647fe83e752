// Depthwise convolutions for CPU devices (lower/opencl_cpu/depthwise.cpp);
// block macros and epilogue stores from cpu_common.cl.

// Depthwise (groups == C, OC = C * multiplier): a work-item computes PB
// neighbouring output pixels of one row of one channel. Stride-1 taps inside
// the row are one vector load; the others (edges, strides) gather.
__kernel void depthwise_cpu(__global const real_t* X, int xo, __global const real_t* Wt, int wo,
                            __global const real_t* Bias, int bo, __global real_t* Y, int yo, int has_bias, int C,
                            int H, int W, int OC, int OH, int OW, int KH, int KW, int sh, int sw, int ph, int pw,
                            int dh, int dw EPI_PARAMS YWIN_PARAMS XWIN_PARAMS) {
  const int ow0 = get_global_id(0) * PB, oh = get_global_id(1), z = get_global_id(2);
  if (ow0 >= OW || oh >= OH) return;
  const int img = z / OC, oc = z - img * OC, c = oc / (OC / C);
  __global const real_t* x = X + xo + (img * C + c) * XPLANE(H, W);
  __global const real_t* w = Wt + wo + oc * KH * KW;
  VF acc = (VF)(has_bias ? LD(Bias, bo + oc) : 0.0f);
  const VI iw_lane = (ow0 + LANES) * sw - pw;  // input column of each lane at kw = 0
  for (int kh = 0; kh < KH; ++kh) {
    const int ih = oh * sh - ph + kh * dh;
    if (ih < 0 || ih >= H) continue;
    __global const real_t* xr = x + ih * XROW(W);
    for (int kw = 0; kw < KW; ++kw) {
      const int iw0 = ow0 * sw - pw + kw * dw;
      const float wv = LD(w, kh * KW + kw);
      VF xv;
      if (sw == 1 && iw0 >= 0 && iw0 + PB <= W) {
        xv = LDV(PB, xr + iw0);
      } else {
        const VI iw = iw_lane + kw * dw;
        const VI valid = (iw >= 0) & (iw < W);
        int offs[PB];
        VSTORE(select((VI)(0), iw, valid), 0, offs);
        float t[PB];
#pragma unroll
        for (int j = 0; j < PB; ++j) t[j] = LD(xr, offs[j]);
        xv = select((VF)(0.0f), VLOAD(0, t), valid);
      }
      acc = fma((VF)(wv), xv, acc);
    }
  }
  STORE_BLOCK((img * OC + oc) * OH * OW + oh * OW + ow0, acc, OW - ow0);
}

// Depthwise with KH x KW taps (DW_KH, DW_KW), strides DW_SH and DW_SW (1 or
// 2), dilations DW_DH and DW_DW: a work-item computes OCB whole output rows
// of one channel. It first copies the (OCB - 1) * DW_SH + (DW_KH - 1) *
// DW_DH + 1 input rows the block needs into a private tile, zero-padded (DW_TW floats a row, DW_TW >= the
// padded row and every column block's widest tap), so that every tap of
// every column block is one unchecked vector load (stride 2: the even lanes
// of two) and the weights stay in registers; one tile row is filled by
// vector copies. Fewer, longer work-items: PoCL pays per work-group.
#ifndef DW_SH
#define DW_SH 1
#endif
#ifndef DW_SW
#define DW_SW 1
#endif
#ifndef DW_KH
#define DW_KH 3
#endif
#ifndef DW_KW
#define DW_KW 3
#endif
#ifndef DW_TW
#define DW_TW 32
#endif
#ifndef DW_DH
#define DW_DH 1
#endif
#ifndef DW_DW
#define DW_DW 1
#endif
#if DW_SW == 1
#define DW_TAP(p) VLOAD(0, (p))
#elif PB == 8
#define DW_TAP(p) vload16(0, (p)).even
#else
#define DW_TAP(p) (float16)(vload16(0, (p)).even, vload16(0, (p) + 16).even)
#endif
#define DW_ROWS ((OCB - 1) * DW_SH + (DW_KH - 1) * DW_DH + 1)

// n floats from x to r by 16, 8, 4, 2 and 1 (n: a row, rarely a multiple of 16).
inline void dw_copy_row(float* r, __global const real_t* x, int n) {
  int j = 0;
  for (; j + 16 <= n; j += 16) vstore16(LDV(16, x + j), 0, r + j);
  if (n - j >= 8) vstore8(LDV(8, x + j), 0, r + j), j += 8;
  if (n - j >= 4) vstore4(LDV(4, x + j), 0, r + j), j += 4;
  if (n - j >= 2) vstore2(LDV(2, x + j), 0, r + j), j += 2;
  if (n - j >= 1) r[j] = LD(x, j);
}

// STORE_BLOCK, but a cut block with a vector epilogue (or none) is stored
// by 8, 4, 2 and 1 rather than element by element (small planes: 14, 7).
#if defined(EPI_NONE) || defined(EPI_VEC)
#ifdef EPI_NONE
#define DW_EPI(v, i, n) (v)
#else
#define DW_EPI(v, i, n) EPI_VEC((v), (i), (n))
#endif
#define DW_STORE(i, v, n)                                          \
  do {                                                             \
    const VF e_ = DW_EPI((v), (i), (n));                           \
    if ((n) >= PB) {                                               \
      STV(PB, Y + yo + YI(i), e_);                                 \
    } else {                                                       \
      float t_[PB];                                                \
      VSTORE(e_, 0, t_);                                           \
      __global real_t* y_ = Y + yo + YI(i); /* a row: contiguous */ \
      int j_ = 0;                                                  \
      if ((n) - j_ >= 8) STV(8, y_ + j_, vload8(0, t_ + j_)), j_ += 8; \
      if ((n) - j_ >= 4) STV(4, y_ + j_, vload4(0, t_ + j_)), j_ += 4; \
      if ((n) - j_ >= 2) STV(2, y_ + j_, vload2(0, t_ + j_)), j_ += 2; \
      if ((n) - j_ >= 1) ST(y_, j_, t_[j_]);                       \
    }                                                              \
  } while (0)
#else
#define DW_STORE(i, v, n) STORE_BLOCK(i, v, n)
#endif

// A work-item runs `per` consecutive blocks (row blocks of a channel, then
// channels) one after the other: one private tile per work-item, reused hot
// in L1 (PoCL keeps a private array per work-item of a group, so groups are
// of one work-item and few).
__kernel void depthwise_tile_cpu(__global const real_t* X, int xo, __global const real_t* Wt, int wo,
                                 __global const real_t* Bias, int bo, __global real_t* Y, int yo, int has_bias, int C,
                                 int H, int W, int OC, int OH, int OW, int ph, int pw, int items,
                                 int per EPI_PARAMS YWIN_PARAMS XWIN_PARAMS) {
  const int row_blocks = (OH + OCB - 1) / OCB;
  const int first = get_global_id(0) * per, last = min(items, first + per);
  // 16 floats of slack: the zero fill's last vector store may pass DW_TW.
  float tile[DW_ROWS][DW_TW + 16];
  for (int id = first; id < last; ++id) {
    const int z = id / row_blocks, oh0 = (id - z * row_blocks) * OCB;
    const int img = z / OC, oc = z - img * OC, c = oc / (OC / C);
    __global const real_t* x = X + xo + (img * C + c) * XPLANE(H, W);
    float wk[DW_KH * DW_KW];
#pragma unroll
    for (int k = 0; k < DW_KH * DW_KW; ++k) wk[k] = LD(Wt, wo + oc * DW_KH * DW_KW + k);
    const float b = has_bias ? LD(Bias, bo + oc) : 0.0f;

    for (int t = 0; t < DW_ROWS; ++t) {
      float* r = tile[t];
      const int ih = oh0 * DW_SH - ph + t;
      int j = 0;
      if (ih >= 0 && ih < H) {
        for (int k = 0; k < pw; ++k) r[k] = 0.0f;
        dw_copy_row(r + pw, x + ih * XROW(W), W);
        j = pw + W;
      }
      for (; j < DW_TW; j += 16) vstore16((float16)(0.0f), 0, r + j);
    }

    const int base = (img * OC + oc) * OH * OW + oh0 * OW;
    for (int ow0 = 0; ow0 < OW; ow0 += PB) {
      VF acc[OCB];
#pragma unroll
      for (int q = 0; q < OCB; ++q) acc[q] = (VF)(b);
#if DW_KH * DW_KW > 25 || (DW_KH * DW_KW > 16 && PB == 16)
      // 7x7, and 5x5 on 16-wide blocks: the weights, broadcast, do not fit
      // in the registers beside the accumulators (LLVM spilled them and the
      // taps inside the loop), so one kernel row's weights at a time, each
      // tap loaded for one FMA; the row loop stays a loop, lest its weights
      // be hoisted (docs/cpu-kernels.md#depthwise-weights-one-kernel-row-at-a-time).
#pragma unroll 1
      for (int kh = 0; kh < DW_KH; ++kh) {
        VF w[DW_KW];
#pragma unroll
        for (int kw = 0; kw < DW_KW; ++kw) w[kw] = (VF)(wk[kh * DW_KW + kw]);
#pragma unroll
        for (int q = 0; q < OCB; ++q) {
          const float* r = tile[q * DW_SH + kh * DW_DH] + ow0 * DW_SW;
#pragma unroll
          for (int kw = 0; kw < DW_KW; ++kw) acc[q] = fma(w[kw], DW_TAP(r + kw * DW_DW), acc[q]);
        }
      }
#else
      // Input row by input row, so that each tap vector is loaded once and
      // dies at once (the other order keeps them all live: spills).
#pragma unroll
      for (int t = 0; t < DW_ROWS; ++t)
#pragma unroll
        for (int kw = 0; kw < DW_KW; ++kw) {
          const VF tap = DW_TAP(tile[t] + ow0 * DW_SW + kw * DW_DW);
#pragma unroll
          for (int q = 0; q < OCB; ++q) {
            const int d = t - q * DW_SH, kh = d / DW_DH;  // tile row t is tap kh of output row q
            if (d >= 0 && d % DW_DH == 0 && kh < DW_KH) acc[q] = fma((VF)(wk[kh * DW_KW + kw]), tap, acc[q]);
          }
        }
#endif
#pragma unroll
      for (int q = 0; q < OCB; ++q)
        if (oh0 + q < OH) DW_STORE(base + q * OW + ow0, acc[q], OW - ow0);
    }
  }
}
