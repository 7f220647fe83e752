// 2D pooling over NCHW, one work-item per output element.

// MaxPool: padding never wins (taps outside the input are skipped).
__kernel void max_pool2d(__global const real_t* X, int xo, __global real_t* Y, int yo, int n, int H, int W,
                         int OH, int OW, int KH, int KW, int sh, int sw, int ph, int pw, int dh, int dw YWIN_PARAMS XWIN_PARAMS) {
  int i = get_global_id(0);
  if (i >= n) return;
  int ow = i % OW, oh = (i / OW) % OH, plane = i / (OW * OH);
  __global const real_t* x = X + xo + plane * XPLANE(H, W);
  float m = -INFINITY;
  for (int kh = 0; kh < KH; ++kh) {
    int ih = oh * sh - ph + kh * dh;
    if (ih < 0 || ih >= H) continue;
    for (int kw = 0; kw < KW; ++kw) {
      int iw = ow * sw - pw + kw * dw;
      if (iw >= 0 && iw < W) m = fmax(m, LD(x, ih * XROW(W) + iw));
    }
  }
  ST(Y, yo + YI(i), m);
}

// MaxPool on CPU devices (PoCL): one work-item per output row, whose window
// rows are clamped once; the columns whose window lies inside the input take
// no bounds checks, 16 (or 8) at a time where the stride is 1 or 2, the last
// block moved back to end at the last such column: it recomputes a few
// outputs (the same values) instead of leaving a scalar remainder. One
// work-item per element, above, spends its time on index divisions and
// branches that PoCL cannot vectorize; per row, short rows spent theirs on
// the scalar remainder (docs/kernel-choices.md#cpu-maxpool-by-rows).
//
// max_taps##N(row, KW, sw): the max of KW taps for N outputs from `row`
// (the first output's first tap), where the taps are consecutive (stride
// 1) or every other float (stride 2: two loads, the even lanes; the second
// load's last float is one past the last tap, which the caller keeps inside
// the row). A NaN tap never wins.
#define MAX_TAPS(N)                                                                                       \
  inline float##N max_taps##N(__global const real_t* row, int KW, int sw) {                                \
    float##N m = (float##N)(-INFINITY);                                                                   \
    for (int kw = 0; kw < KW; ++kw) {                                                                     \
      const float##N v = sw == 1 ? LDV(N, row + kw) : (float##N)(LDV(N, row + kw).even, LDV(N, row + kw + N).even); \
      m = select(m, v, v > m);                                                                            \
    }                                                                                                     \
    return m;                                                                                             \
  }
MAX_TAPS(16)
MAX_TAPS(8)
// N inside columns from `o`, over the window's rows kh0..kh1.
#define MAX_POOL_BLOCK(N)                                                                    \
  {                                                                                          \
    float##N m = (float##N)(-INFINITY);                                                      \
    for (int kh = kh0; kh < kh1; ++kh) {                                                     \
      const float##N v = max_taps##N(x + (ih0 + kh * dh) * XROW(W) + o * sw - pw, KW, sw);   \
      m = select(m, v, v > m);                                                               \
    }                                                                                        \
    STV(N, y + o, m);                                                                        \
  }
__kernel void max_pool2d_rows(__global const real_t* X, int xo, __global real_t* Y, int yo, int rows, int H, int W,
                              int OH, int OW, int KH, int KW, int sh, int sw, int ph, int pw, int dh, int dw YWIN_PARAMS XWIN_PARAMS) {
  int r = get_global_id(0);
  if (r >= rows) return;
  int oh = r % OH, plane = r / OH;
  __global const real_t* x = X + xo + plane * XPLANE(H, W);
  __global real_t* y = Y + yo + YI(r * OW);  // a row: contiguous
  int ih0 = oh * sh - ph;
  int kh0 = ih0 >= 0 ? 0 : (-ih0 + dh - 1) / dh, kh1 = min(KH, (H - ih0 + dh - 1) / dh);
  // Columns [ow0, ow1) have every tap inside [0, W); [ow0, owv) also the
  // stride-2 blocks' float past their last tap.
  int ow0 = min(OW, (pw + sw - 1) / sw), ow1 = max(ow0, min(OW, (W - 1 - (KW - 1) * dw + pw) / sw + 1));
  if (W - 1 - (KW - 1) * dw + pw < 0) ow1 = ow0;
  int owv = ow1;
  if (sw == 2) owv = max(ow0, min(ow1, (W - 1 - KW + pw) / 2 + 1));
  if (W - 1 - KW + pw < 0 && sw == 2) owv = ow0;
  const bool vec = dw == 1 && (sw == 1 || sw == 2);
  const int blocks_end = vec && owv - ow0 >= 8 ? owv : ow0;  // inside columns done as vectors
  for (int ow = 0; ow < OW; ++ow) {
    if (ow == ow0 && blocks_end > ow0) {
      if (blocks_end - ow0 >= 16) {
        for (int b = ow0; b < blocks_end; b += 16) {
          const int o = min(b, blocks_end - 16);
          MAX_POOL_BLOCK(16)
        }
      } else {
        for (int b = ow0; b < blocks_end; b += 8) {
          const int o = min(b, blocks_end - 8);
          MAX_POOL_BLOCK(8)
        }
      }
      ow = blocks_end - 1;
      continue;
    }
    int iw0 = ow * sw - pw;
    float m = -INFINITY;
    if (ow >= ow0 && ow < ow1) {
      for (int kh = kh0; kh < kh1; ++kh) {
        __global const real_t* row = x + (ih0 + kh * dh) * XROW(W) + iw0;
        for (int kw = 0; kw < KW; ++kw) {
          float v = LD(row, kw * dw);
          m = v > m ? v : m;  // fmax's NaN rule: a NaN tap never wins
        }
      }
    } else {
      for (int kh = kh0; kh < kh1; ++kh) {
        __global const real_t* row = x + (ih0 + kh * dh) * XROW(W);
        for (int kw = 0; kw < KW; ++kw) {
          int iw = iw0 + kw * dw;
          if (iw >= 0 && iw < W && LD(row, iw) > m) m = LD(row, iw);
        }
      }
    }
    ST(y, ow, m);
  }
}

// MaxPool 3xK on CPU devices (PoCL), strides 1 or 2, no dilation: one
// work-item per plane, walking down each block of 16 (or 8) inside columns
// with the rows' horizontal maxima kept in registers, so each input row's
// taps are loaded once per block, not once per output row that reads it (a
// third of max_pool2d_rows' loads for the 3x3 windows of GoogLeNet and
// Inception). The window's width and strides are build constants (POOL_KW,
// POOL_SW, POOL_SH), so the tap loop unrolls. Blocks end at the last inside
// column as in max_pool2d_rows; the other columns are scalars.
#ifdef POOL_KW
float pool_hcol(__global const real_t* row, int iw0, int kw0, int kw1) {  // one column's taps in one row
  float m = -INFINITY;
  for (int kw = kw0; kw < kw1; ++kw) {
    const float v = LD(row, iw0 + kw);
    m = v > m ? v : m;
  }
  return m;
}
// Rows outside the input give -inf; the block's rows walk down the plane.
#define POOL_BLOCK(N)                                                                       \
  {                                                                                         \
    __global const real_t* col = x + o * POOL_SW - pw;                                      \
    const float##N none = (float##N)(-INFINITY);                                            \
    float##N h0 = -ph >= 0 && -ph < H ? max_taps##N(col + (-ph) * XROW(W), POOL_KW, POOL_SW) : none;         \
    float##N h1 = POOL_SH == 1 && 1 - ph >= 0 && 1 - ph < H ? max_taps##N(col + (1 - ph) * XROW(W), POOL_KW, POOL_SW) : none; \
    for (int oh = 0; oh < OH; ++oh) {                                                       \
      const int ih = oh * POOL_SH - ph;                                                     \
      if (POOL_SH == 2) h1 = ih + 1 >= 0 && ih + 1 < H ? max_taps##N(col + (ih + 1) * XROW(W), POOL_KW, POOL_SW) : none; \
      const float##N h2 = ih + 2 >= 0 && ih + 2 < H ? max_taps##N(col + (ih + 2) * XROW(W), POOL_KW, POOL_SW) : none; \
      float##N m = select(h0, h1, h1 > h0);                                                 \
      m = select(m, h2, h2 > m);                                                            \
      STV(N, Y + yo + YI((plane * OH + oh) * OW) + o, m);                                   \
      if (POOL_SH == 1) h0 = h1, h1 = h2;                                                   \
      else h0 = h2;                                                                         \
    }                                                                                       \
  }
__kernel void max_pool2d_planes(__global const real_t* X, int xo, __global real_t* Y, int yo, int planes, int H,
                                int W, int OH, int OW, int ph, int pw YWIN_PARAMS XWIN_PARAMS) {
  const int plane = get_global_id(0);
  if (plane >= planes) return;
  __global const real_t* x = X + xo + plane * XPLANE(H, W);
  // Columns [ow0, ow1) have every tap inside [0, W), with stride 2 also the
  // float past their last tap that the blocks' second load reads.
  const int ow0 = min(OW, (pw + POOL_SW - 1) / POOL_SW);
  int ow1 = W - POOL_KW + pw < 0 ? ow0 : max(ow0, min(OW, (W - POOL_KW + pw) / POOL_SW + 1));
  if (POOL_SW == 2) ow1 = W - 1 - POOL_KW + pw < 0 ? ow0 : max(ow0, min(ow1, (W - 1 - POOL_KW + pw) / 2 + 1));
  const int blocks_end = ow1 - ow0 >= 8 ? ow1 : ow0;
  if (blocks_end - ow0 >= 16) {
    for (int b = ow0; b < blocks_end; b += 16) {
      const int o = min(b, blocks_end - 16);
      POOL_BLOCK(16)
    }
  } else if (blocks_end > ow0) {
    for (int b = ow0; b < blocks_end; b += 8) {
      const int o = min(b, blocks_end - 8);
      POOL_BLOCK(8)
    }
  }
  // The other columns one at a time, down the plane as the blocks, their taps clamped to the row.
  for (int ow = 0; ow < OW; ++ow) {
    if (ow == ow0 && blocks_end > ow0) ow = blocks_end;
    if (ow >= OW) break;
    const int iw0 = ow * POOL_SW - pw, kw0 = max(0, -iw0), kw1 = min(POOL_KW, W - iw0);
#define POOL_HCOL(ih) ((ih) >= 0 && (ih) < H ? pool_hcol(x + (ih) * XROW(W), iw0, kw0, kw1) : -INFINITY)
    float h0 = POOL_HCOL(-ph), h1 = POOL_SH == 1 ? POOL_HCOL(1 - ph) : -INFINITY;
    for (int oh = 0; oh < OH; ++oh) {
      const int ih = oh * POOL_SH - ph;
      if (POOL_SH == 2) h1 = POOL_HCOL(ih + 1);
      const float h2 = POOL_HCOL(ih + 2);
      float m = h1 > h0 ? h1 : h0;
      m = h2 > m ? h2 : m;
      ST(Y + yo + YI((plane * OH + oh) * OW), ow, m);
      if (POOL_SH == 1) h0 = h1, h1 = h2;
      else h0 = h2;
    }
  }
}
#endif

// AveragePool: the divisor counts the taps inside the input, or with
// count_include_pad the taps inside the padded input (a ceil_mode window
// that runs past the end padding is cut there, as in PyTorch and ONNX).
__kernel void avg_pool2d(__global const real_t* X, int xo, __global real_t* Y, int yo, int n, int H, int W,
                         int OH, int OW, int KH, int KW, int sh, int sw, int ph, int pw, int ph_end,
                         int pw_end, int count_include_pad YWIN_PARAMS XWIN_PARAMS) {
  int i = get_global_id(0);
  if (i >= n) return;
  int ow = i % OW, oh = (i / OW) % OH, plane = i / (OW * OH);
  __global const real_t* x = X + xo + plane * XPLANE(H, W);
  int h0 = oh * sh - ph, w0 = ow * sw - pw;
  int h1 = min(h0 + KH, H + ph_end), w1 = min(w0 + KW, W + pw_end);
  int padded = (h1 - h0) * (w1 - w0);
  int hs = max(h0, 0), ws = max(w0, 0), he = min(h1, H), we = min(w1, W);
  float s = 0.0f;
  for (int ih = hs; ih < he; ++ih)
    for (int iw = ws; iw < we; ++iw) s += LD(x, ih * XROW(W) + iw);
  int count = count_include_pad ? padded : (he - hs) * (we - ws);
  ST(Y, yo + YI(i), s / (float)count);
}

// AveragePool on CPU devices (PoCL): one work-item per output row, as
// max_pool2d_rows; the columns whose window lies inside the input take 8 at
// a time as vectors where the stride is 1 or 2 (stride 2: two loads, the even
// lanes), summing the taps in avg_pool2d's order, so the results are its own.
__kernel void avg_pool2d_rows(__global const real_t* X, int xo, __global real_t* Y, int yo, int rows, int H, int W,
                              int OH, int OW, int KH, int KW, int sh, int sw, int ph, int pw, int ph_end, int pw_end,
                              int count_include_pad YWIN_PARAMS XWIN_PARAMS) {
  int r = get_global_id(0);
  if (r >= rows) return;
  int oh = r % OH, plane = r / OH;
  __global const real_t* x = X + xo + plane * XPLANE(H, W);
  __global real_t* y = Y + yo + YI(r * OW);  // a row: contiguous
  int h0 = oh * sh - ph, h1 = min(h0 + KH, H + ph_end), hs = max(h0, 0), he = min(h1, H);
  // Columns [ow0, ow1) have their whole window inside [0, W).
  int ow0 = min(OW, (pw + sw - 1) / sw), ow1 = W - KW + pw < 0 ? ow0 : max(ow0, min(OW, (W - KW + pw) / sw + 1));
  const bool vec = sw == 1 || sw == 2;
  const float inside = (float)((count_include_pad ? h1 - h0 : he - hs) * KW);
  for (int ow = 0; ow < OW; ++ow) {
    if (vec && ow >= ow0 && ow + 7 < ow1 && (ow + 7) * sw - pw + KW - 1 + (sw == 2) < W) {
      float8 s = (float8)(0.0f);
      for (int ih = hs; ih < he; ++ih) {
        __global const real_t* row = x + ih * XROW(W) + ow * sw - pw;
        for (int kw = 0; kw < KW; ++kw)
          s += sw == 1 ? LDV(8, row + kw) : (float8)(LDV(8, row + kw).even, LDV(8, row + kw + 8).even);
      }
      STV(8, y + ow, s / (float8)(inside));
      ow += 7;
      continue;
    }
    int w0 = ow * sw - pw, w1 = min(w0 + KW, W + pw_end);
    int ws = max(w0, 0), we = min(w1, W);
    float s = 0.0f;
    for (int ih = hs; ih < he; ++ih)
      for (int iw = ws; iw < we; ++iw) s += LD(x, ih * XROW(W) + iw);
    int count = count_include_pad ? (h1 - h0) * (w1 - w0) : (he - hs) * (we - ws);
    ST(y, ow, s / (float)count);
  }
}
