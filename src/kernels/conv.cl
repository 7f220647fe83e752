// Direct convolutions the GEMM form (gemm.cl) does poorly: depthwise (one
// input channel per group) and transposed convolution. Fused epilogues: see
// gemm.cl (EPI at the output's linear index).
#ifndef EPI
#define EPI(v, i) (v)
#define EPI_PARAMS
#endif

// Depthwise: groups == C, OC = C * mult. A work-item computes 4 neighbouring
// output pixels of one row of one channel, so each weight is read once for 4.
__kernel void conv2d_depthwise(__global const real_t* X, __global const real_t* Wt, __global const real_t* Bias,
                               __global real_t* Y, ConvParams cp EPI_PARAMS YWIN_PARAMS XWIN_PARAMS) {
  CONV_PARAMS(cp)
  const int ow0 = get_global_id(0) * 4, oh = get_global_id(1), z = get_global_id(2);
  if (ow0 >= OW || oh >= OH) return;
  const int img = z / OC, oc = z % OC, c = oc / (OC / C);
  __global const real_t* x = X + xo + (img * C + c) * XPLANE(H, W);
  __global const real_t* w = Wt + wo + oc * KH * KW;
  const float b = has_bias ? LD(Bias, bo + oc) : 0.0f;
  float acc[4] = {b, b, b, b};
  for (int kh = 0; kh < KH; ++kh) {
    int ih = oh * sh - ph + kh * dh;
    if (ih < 0 || ih >= H) continue;
    for (int kw = 0; kw < KW; ++kw) {
      float wv = LD(w, kh * KW + kw);
      for (int j = 0; j < 4; ++j) {
        int iw = (ow0 + j) * sw - pw + kw * dw;
        if (iw >= 0 && iw < W) acc[j] += wv * LD(x, ih * XROW(W) + iw);
      }
    }
  }
  const int y0 = ((img * OC + oc) * OH + oh) * OW + ow0;
  for (int j = 0; j < 4 && ow0 + j < OW; ++j) ST(Y, yo + YI(y0 + j), EPI(acc[j], y0 + j));
}

// Transposed convolution (weight [C, OC/groups, KH, KW]) as a gather: output
// pixel (oh, ow) sums input pixels ih with ih*sh - ph + kh*dh == oh. A
// work-item computes 4 output channels of one group at one pixel, reading
// each input value once for all 4.
__kernel void conv_transpose2d(__global const real_t* X, int xo, __global const real_t* Wt, int wo,
                               __global const real_t* Bias, int bo, __global real_t* Y, int yo, int has_bias,
                               int C, int H, int W, int OC, int OH, int OW, int KH, int KW, int sh, int sw,
                               int ph, int pw, int dh, int dw, int groups) {
  const int ow = get_global_id(0), oh = get_global_id(1), z = get_global_id(2);
  const int OCg = OC / groups, ICg = C / groups, blocks = (OCg + 3) / 4;
  if (ow >= OW || oh >= OH) return;  // z covers exactly N * groups * blocks
  const int img = z / (groups * blocks), g = (z / blocks) % groups, oc0 = (z % blocks) * 4;
  const int nb = min(4, OCg - oc0);
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int kh = 0; kh < KH; ++kh) {
    int th = oh + ph - kh * dh;
    if (th < 0 || th % sh != 0 || th / sh >= H) continue;
    int ih = th / sh;
    for (int kw = 0; kw < KW; ++kw) {
      int tw = ow + pw - kw * dw;
      if (tw < 0 || tw % sw != 0 || tw / sw >= W) continue;
      int iw = tw / sw;
      for (int ic = 0; ic < ICg; ++ic) {
        int c = g * ICg + ic;
        float xv = LD(X, xo + ((img * C + c) * H + ih) * W + iw);
        __global const real_t* w = Wt + wo + ((c * OCg + oc0) * KH + kh) * KW + kw;
        for (int j = 0; j < 4; ++j)
          if (j < nb) acc[j] += xv * LD(w, j * KH * KW);
      }
    }
  }
  for (int j = 0; j < nb; ++j) {
    int oc = g * OCg + oc0 + j;
    float b = has_bias ? LD(Bias, bo + oc) : 0.0f;
    ST(Y, yo + ((img * OC + oc) * OH + oh) * OW + ow, acc[j] + b);
  }
}

// FusedConvMaxPool with any pool window: one work-item per pooled output
// computes the convolution at each window position (recomputing where
// windows overlap) and keeps the max of the epilogue's values; positions
// outside the conv output (pool padding) never win.
__kernel void conv2d_maxpool(__global const real_t* X, int xo, __global const real_t* Wt, int wo,
                             __global const real_t* Bias, int bo, __global real_t* Y, int yo, int has_bias, int C,
                             int H, int W, int OC, int OH, int OW, int KH, int KW, int sh, int sw, int ph, int pw,
                             int dh, int dw, int groups, int PH, int PW, int PKH, int PKW, int psh, int psw,
                             int pph, int ppw, int pdh, int pdw, int total EPI_PARAMS YWIN_PARAMS XWIN_PARAMS) {
  const int i = get_global_id(0);
  if (i >= total) return;
  const int px = i % PW, py = (i / PW) % PH, oc = (i / (PW * PH)) % OC, img = i / (PW * PH * OC);
  const int ICg = C / groups, OCg = OC / groups, g = oc / OCg;
  __global const real_t* x = X + xo + (img * C + g * ICg) * XPLANE(H, W);
  __global const real_t* w = Wt + wo + oc * ICg * KH * KW;
  const float b = has_bias ? LD(Bias, bo + oc) : 0.0f;
  float best = -INFINITY;
  for (int pkh = 0; pkh < PKH; ++pkh) {
    const int oh = py * psh - pph + pkh * pdh;
    if (oh < 0 || oh >= OH) continue;
    for (int pkw = 0; pkw < PKW; ++pkw) {
      const int ow = px * psw - ppw + pkw * pdw;
      if (ow < 0 || ow >= OW) continue;
      float acc = b;
      for (int ic = 0; ic < ICg; ++ic)
        for (int kh = 0; kh < KH; ++kh) {
          const int ih = oh * sh - ph + kh * dh;
          if (ih < 0 || ih >= H) continue;
          for (int kw = 0; kw < KW; ++kw) {
            const int iw = ow * sw - pw + kw * dw;
            if (iw >= 0 && iw < W) acc += LD(w, (ic * KH + kh) * KW + kw) * LD(x, ic * XPLANE(H, W) + ih * XROW(W) + iw);
          }
        }
      best = fmax(best, EPI(acc, i));
    }
  }
  ST(Y, yo + YI(i), best);
}
