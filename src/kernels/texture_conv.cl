// Convolutions over textures (layout: texture_common.cl). Work-item
// (x, y, z) = 4 output pixels along the width at (ow0..ow0+3, oh), slice z =
// n * OC4 + oc4 (4 output channels), so each weight read serves 4 pixels and
// each input pixel 4 output channels.
// Weights packed by 4 output channels (lower/texture.cpp pack_conv_weights):
//   dense:     Wp[((oc4 * C4*4 + ic) * KH + kh) * KW + kw]  float4, lane k = output 4*oc4+k
//   depthwise: Wp[(c4 * KH + kh) * KW + kw]                  float4, lane k = channel 4*c4+k
// zero beyond OC and C, so padded lanes contribute 0. Bias: float4 per slice.
// FusedConv: the epilogue program (epilogue_cl.h, -DTEX_EPILOGUE) per lane,
// over the convolution's value and (-DTEX_RESIDUAL) the same pixel of E1.

#ifdef TEX_RESIDUAL
#define RES_PARAMS , TEXR(E1)
#define RES_READ(x, y) RD(E1, x, y, OW)
#else
#define RES_PARAMS
#define RES_READ(x, y) ((float4)(0.0f))
#endif
#if defined(TEX_EPILOGUE) && defined(TEX_RESIDUAL)
#define APPLY(r, e) \
  ((float4)(epi_program(r.x, e.x), epi_program(r.y, e.y), epi_program(r.z, e.z), epi_program(r.w, e.w)))
#elif defined(TEX_EPILOGUE)
#define APPLY(r, e) ((float4)(epi_program(r.x), epi_program(r.y), epi_program(r.z), epi_program(r.w)))
#else
#define APPLY(r, e) (r)
#endif

#define OUT_PIXEL(j, v)                                                                   \
  if (ow0 + (j) < OW) {                                                                   \
    const int yy = (n * OC4 + oc4) * OH + oh;                                             \
    WR(Y, ow0 + (j), yy, OW, mask_lanes(APPLY((v), RES_READ(ow0 + (j), yy)), oc4, OC));   \
  }

// groups == 1: 1x1, 3x3 and general kernels, any stride, padding, dilation.
// A float4 of packed weights (lane k = 4 * i + k of p).
#define LD4(p, i) LDV(4, (p) + 4 * (i))

__kernel void tex_conv2d(TEXR(X), __global const real_t* Wp, __global const real_t* Bp, TEXW(Y), int has_bias,
                         int C, int H, int W, int OC, int OH, int OW, int KH, int KW, int sh, int sw, int ph, int pw,
                         int dh, int dw RES_PARAMS) {
  const int ow0 = get_global_id(0) * 4, oh = get_global_id(1), z = get_global_id(2);
  const int C4 = (C + 3) / 4, OC4 = (OC + 3) / 4;
  if (ow0 >= OW || oh >= OH) return;
  const int n = z / OC4, oc4 = z % OC4;
  const float4 b = has_bias ? LD4(Bp, oc4) : (float4)(0.0f);
  float4 a0 = b, a1 = b, a2 = b, a3 = b;
  for (int ic4 = 0; ic4 < C4; ++ic4) {
    const int row0 = (n * C4 + ic4) * H;
    __global const real_t* w4 = Wp + 4 * (oc4 * C4 * 4 + ic4 * 4) * KH * KW;
    for (int kh = 0; kh < KH; ++kh) {
      const int ih = oh * sh - ph + kh * dh;
      if (ih < 0 || ih >= H) continue;
      for (int kw = 0; kw < KW; ++kw) {
        const int k = kh * KW + kw;
        const float4 w0 = LD4(w4, k), w1 = LD4(w4, KH * KW + k), w2 = LD4(w4, 2 * KH * KW + k),
                     w3 = LD4(w4, 3 * KH * KW + k);
        const int iw0 = ow0 * sw - pw + kw * dw;
#define ACC(j, acc)                                                 \
  {                                                                 \
    const int iw = iw0 + (j) * sw;                                  \
    if (iw >= 0 && iw < W) {                                        \
      const float4 v = RD(X, iw, row0 + ih, W);                     \
      acc += v.x * w0 + v.y * w1 + v.z * w2 + v.w * w3;             \
    }                                                               \
  }
        ACC(0, a0) ACC(1, a1) ACC(2, a2) ACC(3, a3)
#undef ACC
      }
    }
  }
  OUT_PIXEL(0, a0) OUT_PIXEL(1, a1) OUT_PIXEL(2, a2) OUT_PIXEL(3, a3)
}

// Depthwise, groups == C == OC: one slice of 4 channels, lane by lane.
__kernel void tex_conv2d_depthwise(TEXR(X), __global const real_t* Wp, __global const real_t* Bp, TEXW(Y),
                                   int has_bias, int C, int H, int W, int OC, int OH, int OW, int KH, int KW, int sh,
                                   int sw, int ph, int pw, int dh, int dw RES_PARAMS) {
  const int ow0 = get_global_id(0) * 4, oh = get_global_id(1), z = get_global_id(2);
  const int C4 = (C + 3) / 4, OC4 = C4;
  if (ow0 >= OW || oh >= OH) return;
  const int n = z / C4, oc4 = z % C4;
  const int row0 = (n * C4 + oc4) * H;
  const float4 b = has_bias ? LD4(Bp, oc4) : (float4)(0.0f);
  float4 a0 = b, a1 = b, a2 = b, a3 = b;
  __global const real_t* w4 = Wp + 4 * oc4 * KH * KW;
  for (int kh = 0; kh < KH; ++kh) {
    const int ih = oh * sh - ph + kh * dh;
    if (ih < 0 || ih >= H) continue;
    for (int kw = 0; kw < KW; ++kw) {
      const float4 w = LD4(w4, kh * KW + kw);
      const int iw0 = ow0 * sw - pw + kw * dw;
#define ACC(j, acc)                                        \
  {                                                        \
    const int iw = iw0 + (j) * sw;                         \
    if (iw >= 0 && iw < W) acc += RD(X, iw, row0 + ih, W) * w; \
  }
      ACC(0, a0) ACC(1, a1) ACC(2, a2) ACC(3, a3)
#undef ACC
    }
  }
  OUT_PIXEL(0, a0) OUT_PIXEL(1, a1) OUT_PIXEL(2, a2) OUT_PIXEL(3, a3)
}

// Any other group count: each output lane sums its own group's input
// channels, read lane by lane; weights in ONNX order [OC][C/groups][KH][KW].
__kernel void tex_conv2d_grouped(TEXR(X), __global const real_t* Wt, int wo, __global const real_t* Bias, int bo,
                                 TEXW(Y), int has_bias, int C, int H, int W, int OC, int OH, int OW, int KH, int KW,
                                 int sh, int sw, int ph, int pw, int dh, int dw, int groups RES_PARAMS) {
  const int ow = get_global_id(0), oh = get_global_id(1), z = get_global_id(2);
  const int C4 = (C + 3) / 4, OC4 = (OC + 3) / 4, ICg = C / groups, OCg = OC / groups;
  if (ow >= OW || oh >= OH) return;
  const int n = z / OC4, oc4 = z % OC4;
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int k = 0; k < 4; ++k) {
    const int oc = oc4 * 4 + k;
    if (oc >= OC) break;
    const int g = oc / OCg;
    float s = has_bias ? LD(Bias, bo + oc) : 0.0f;
    for (int icg = 0; icg < ICg; ++icg) {
      const int ic = g * ICg + icg;
      const int row0 = (n * C4 + ic / 4) * H;
      __global const real_t* w = Wt + wo + (oc * ICg + icg) * KH * KW;
      for (int kh = 0; kh < KH; ++kh) {
        const int ih = oh * sh - ph + kh * dh;
        if (ih < 0 || ih >= H) continue;
        for (int kw = 0; kw < KW; ++kw) {
          const int iw = ow * sw - pw + kw * dw;
          if (iw >= 0 && iw < W) s += LD(w, kh * KW + kw) * lane_of(RD(X, iw, row0 + ih, W), ic % 4);
        }
      }
    }
    acc[k] = s;
  }
  const int ow0 = ow;
  OUT_PIXEL(0, ((float4)(acc[0], acc[1], acc[2], acc[3])))
}
