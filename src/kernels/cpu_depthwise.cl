// Depthwise convolutions for CPU devices (runtime/ops_cpu_depthwise.cpp);
// block macros and epilogue stores from cpu_common.cl.

// Depthwise (groups == C, OC = C * multiplier): a work-item computes PB
// neighbouring output pixels of one row of one channel. Stride-1 taps inside
// the row are one vector load; the others (edges, strides) gather.
__kernel void depthwise_cpu(__global const float* X, int xo, __global const float* Wt, int wo,
                            __global const float* Bias, int bo, __global float* Y, int yo, int has_bias, int C,
                            int H, int W, int OC, int OH, int OW, int KH, int KW, int sh, int sw, int ph, int pw,
                            int dh, int dw EPI_PARAMS) {
  const int ow0 = get_global_id(0) * PB, oh = get_global_id(1), z = get_global_id(2);
  if (ow0 >= OW || oh >= OH) return;
  const int img = z / OC, oc = z - img * OC, c = oc / (OC / C);
  __global const float* x = X + xo + (img * C + c) * H * W;
  __global const float* w = Wt + wo + oc * KH * KW;
  VF acc = (VF)(has_bias ? Bias[bo + oc] : 0.0f);
  const VI iw_lane = (ow0 + LANES) * sw - pw;  // input column of each lane at kw = 0
  for (int kh = 0; kh < KH; ++kh) {
    const int ih = oh * sh - ph + kh * dh;
    if (ih < 0 || ih >= H) continue;
    __global const float* xr = x + ih * W;
    for (int kw = 0; kw < KW; ++kw) {
      const int iw0 = ow0 * sw - pw + kw * dw;
      const float wv = w[kh * KW + kw];
      VF xv;
      if (sw == 1 && iw0 >= 0 && iw0 + PB <= W) {
        xv = VLOAD(0, xr + iw0);
      } else {
        const VI iw = iw_lane + kw * dw;
        const VI valid = (iw >= 0) & (iw < W);
        int offs[PB];
        VSTORE(select((VI)(0), iw, valid), 0, offs);
        float t[PB];
#pragma unroll
        for (int j = 0; j < PB; ++j) t[j] = xr[offs[j]];
        xv = select((VF)(0.0f), VLOAD(0, t), valid);
      }
      acc = fma((VF)(wv), xv, acc);
    }
  }
  STORE_BLOCK((img * OC + oc) * OH * OW + oh * OW + ow0, acc, OW - ow0);
}

// Depthwise with stride DW_SW (1 or 2), no dilation, KW <= 9: a work-item
// computes OCB output rows x PB output columns of one channel. Each input
// row the block needs is read once (zero-padded into a private row where
// the block touches the image's edge) and feeds every output row and tap
// that uses it: a tap is one vector load (stride 2: the even lanes of two).
#ifndef DW_SW
#define DW_SW 1
#endif
#if DW_SW == 1
#define DW_TAP(p) VLOAD(0, (p))
#elif PB == 8
#define DW_TAP(p) vload16(0, (p)).even
#else
#define DW_TAP(p) (float16)(vload16(0, (p)).even, vload16(0, (p) + 16).even)
#endif
__kernel void depthwise_rows_cpu(__global const float* X, int xo, __global const float* Wt, int wo,
                                 __global const float* Bias, int bo, __global float* Y, int yo, int has_bias, int C,
                                 int H, int W, int OC, int OH, int OW, int KH, int KW, int sh, int ph,
                                 int pw EPI_PARAMS) {
  const int ow0 = get_global_id(0) * PB, oh0 = get_global_id(1) * OCB, z = get_global_id(2);
  if (ow0 >= OW || oh0 >= OH) return;
  const int img = z / OC, oc = z - img * OC, c = oc / (OC / C);
  __global const float* x = X + xo + (img * C + c) * H * W;
  __global const float* w = Wt + wo + oc * KH * KW;
  const float b = has_bias ? Bias[bo + oc] : 0.0f;
  VF acc[OCB];
#pragma unroll
  for (int q = 0; q < OCB; ++q) acc[q] = (VF)(b);
  const int iwb = ow0 * DW_SW - pw;      // input column of lane 0 at kw = 0
  const int span = PB * DW_SW + KW - 1;  // columns the taps load (stride 2: one past the last)
  const bool inside = iwb >= 0 && iwb + span <= W;
  const int rows_in = (OCB - 1) * sh + KH;
  float r[2 * PB + 8];
  for (int t = 0; t < rows_in; ++t) {
    const int ih = oh0 * sh - ph + t;
    if (ih < 0 || ih >= H) continue;
    __global const float* xr = x + ih * W;
    if (!inside)
      for (int j = 0; j < span; ++j) {
        const int iw = iwb + j;
        const float v = xr[clamp(iw, 0, W - 1)];
        r[j] = iw >= 0 && iw < W ? v : 0.0f;
      }
#pragma unroll
    for (int q = 0; q < OCB; ++q) {
      const int kh = t - q * sh;
      if (kh < 0 || kh >= KH) continue;
      __global const float* wr = w + kh * KW;
      if (inside)
        for (int kw = 0; kw < KW; ++kw) acc[q] = fma((VF)(wr[kw]), DW_TAP(xr + iwb + kw), acc[q]);
      else
        for (int kw = 0; kw < KW; ++kw) acc[q] = fma((VF)(wr[kw]), DW_TAP(r + kw), acc[q]);
    }
  }
#pragma unroll
  for (int q = 0; q < OCB; ++q) {
    const int oh = oh0 + q;
    if (oh >= OH) break;
    STORE_BLOCK((img * OC + oc) * OH * OW + oh * OW + ow0, acc[q], OW - ow0);
  }
}

