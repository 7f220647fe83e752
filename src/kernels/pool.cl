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
// no bounds checks, 16 (or 8) at a time where the stride is 1 or 2. One
// work-item per element, above, spends its time on index divisions and
// branches that PoCL cannot vectorize (docs/kernel-choices.md#cpu-maxpool-by-rows).
//
// MAX_POOL_VECTOR(N): N inside columns from `ow` as one floatN where the taps
// are consecutive (stride 1) or every other float (stride 2: two loads, the
// even lanes; the second load's last float is one past the last tap, so the
// block must end a column short of the input's end); then the next column.
#define MAX_POOL_VECTOR(N)                                                                            \
  if (vec && ow >= ow0 && ow + N - 1 < ow1 && (ow + N - 1) * sw - pw + KW - 1 + (sw == 2) < W) {      \
    float##N m = (float##N)(-INFINITY);                                                               \
    for (int kh = kh0; kh < kh1; ++kh) {                                                              \
      __global const real_t* row = x + (ih0 + kh * dh) * XROW(W) + ow * sw - pw;                      \
      for (int kw = 0; kw < KW; ++kw) {                                                               \
        const float##N v =                                                                            \
            sw == 1 ? LDV(N, row + kw) : (float##N)(LDV(N, row + kw).even, LDV(N, row + kw + N).even);         \
        m = select(m, v, v > m); /* as below: a NaN tap never wins */                                 \
      }                                                                                               \
    }                                                                                                 \
    STV(N, y + ow, m);                                                                                \
    ow += N - 1;                                                                                      \
    continue;                                                                                         \
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
  // Columns [ow0, ow1) have every tap inside [0, W).
  int ow0 = min(OW, (pw + sw - 1) / sw), ow1 = max(ow0, min(OW, (W - 1 - (KW - 1) * dw + pw) / sw + 1));
  if (W - 1 - (KW - 1) * dw + pw < 0) ow1 = ow0;
  const bool vec = dw == 1 && (sw == 1 || sw == 2);
  for (int ow = 0; ow < OW; ++ow) {
    MAX_POOL_VECTOR(16)
    MAX_POOL_VECTOR(8)  // narrow rows, and the rest of wide ones
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
