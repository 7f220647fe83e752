// 3x3 stride-1 convolutions by Winograd F(4x4, 3x3), exact fp32, in one
// kernel as conv_winograd.cl's F(2x2): nothing transformed is stored in
// global memory. The output is cut into 4x4 tiles (T = ceil(OH/4) x
// ceil(OW/4)); tile t of channel oc is A^T [sum_c U(oc, c) .* V(c, t)] A with
// U = G g G^T the 6x6 transform of the 3x3 weights (at load, packed
// [OC/32][C rounded to 4][36][32]: ops_conv.cpp winograd_weights) and
// V = B^T d B that of the 6x6 input patch d under the tile: 36 products per
// tile and input channel for 16 outputs, 2.25 per output against F(2x2)'s 4
// and the direct conv's 9. The transforms' larger coefficients (4, 5, 8)
// round a little more than F(2x2)'s: relative differences ~1e-6..1e-5.
//
// A work-group of 288 work-items (9 warps) computes BM = 32 output channels x
// BT tiles (32, or 16 for grids that would leave compute units idle), all 36
// elements, over chunks of CK = 4 input channels (local memory: 36 x 4 x
// (32 + BT) floats, 37 KiB at BT = 32). Per chunk the first CK x BT items
// transform one (channel, tile) patch each into Vs; every item stores 4
// float4 of the chunk's U into Us; then item (e, tm, tt) multiplies element
// e's 8 output channels x BT/2 tiles (float4 local reads; each element's row
// padded by 4 floats so that a warp's 4 elements read distinct banks). The
// next chunk's raw values are loaded while this one's are multiplied. At the
// end the products go through local memory 8 output channels at a time and
// each item transforms one (channel, tile) back: 16 outputs, bias, epilogue
// EPI(v, index).
//
// POOL2 (FusedConvMaxPool, 2x2 windows of stride 2): a tile holds 2x2 whole
// windows, the store is their maxima (PH x PW pooled).
// SPLITK: as conv_winograd.cl's (grid z = image * splits + slice, slices
// of cslice input channels, a multiple of CK, added into Y by split_add).
#ifndef EPI
#define EPI(v, i) (v)
#define EPI_PARAMS
#endif
#ifndef BT
#define BT 32
#endif
#define BM 32
#define CK 4
#define NE 36                     // transform elements, 6 x 6
#define NT (NE * 8)               // work-items: 36 elements x (4 channel blocks x 2 tile blocks)
#define TB (BT / 2)               // tiles per work-item
#define US (CK * BM + 4)          // an element's row in Us, padded (bank spread)
#define VS (CK * BT + 4)          // in Vs
#define GPER (CK * NE * BM / 4 / NT)  // float4 of U per work-item and chunk
#if GPER * NT * 4 != CK * NE * BM || (BT != 32 && BT != 16)
#error "conv_winograd4: chunk shape"
#endif

#ifdef SPLITK
#ifdef POOL2
#error "SPLITK and POOL2 do not combine"
#endif
#define WG4_SPLIT_PARAMS , int splits, int cslice
#else
#define WG4_SPLIT_PARAMS
#endif
#ifdef POOL2
#define WG4_POOL_PARAMS , int PH, int PW
#else
#define WG4_POOL_PARAMS
#endif

// B^T of F(4x4, 3x3) on one line of 6: rows of
// [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0; 0 -2 -1 2 1 0; 0 2 -1 -2 1 0; 0 4 0 -5 0 1].
#define WG4_BT(s, i0, st, o, j0, ot)                                   \
  {                                                                     \
    const float d0 = s[i0], d1 = s[i0 + st], d2 = s[i0 + 2 * st];       \
    const float d3 = s[i0 + 3 * st], d4 = s[i0 + 4 * st], d5 = s[i0 + 5 * st]; \
    const float p = d4 - d2, q = d1 - d3;                               \
    o[j0] = fma(4.0f, d0, fma(-5.0f, d2, d4));                          \
    o[j0 + ot] = fma(-4.0f, d1 + d2, d3 + d4);                          \
    o[j0 + 2 * ot] = fma(4.0f, d1 - d2, d4 - d3);                       \
    o[j0 + 3 * ot] = fma(-2.0f, q, p);                                  \
    o[j0 + 4 * ot] = fma(2.0f, q, p);                                   \
    o[j0 + 5 * ot] = fma(4.0f, d1, fma(-5.0f, d3, d5));                 \
  }
// A^T = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1] on one line of 6.
#define WG4_AT(s, i0, st, o, j0, ot)                                   \
  {                                                                     \
    const float m1 = s[i0 + st], m2 = s[i0 + 2 * st], m3 = s[i0 + 3 * st], m4 = s[i0 + 4 * st]; \
    const float a = m1 + m2, b = m1 - m2, c = m3 + m4, d = m3 - m4;     \
    o[j0] = s[i0] + a + c;                                              \
    o[j0 + ot] = fma(2.0f, d, b);                                       \
    o[j0 + 2 * ot] = fma(4.0f, c, a);                                   \
    o[j0 + 3 * ot] = fma(8.0f, d, b) + s[i0 + 5 * st];                  \
  }

__kernel __attribute__((reqd_work_group_size(NT, 1, 1)))
void conv2d_winograd4(__global const float* X, int xo, __global const float* Wt, __global const float* Bias,
                      int bo, __global float* Y, int yo, int has_bias, int C, int H, int W, int OC, int OH, int OW,
                      int ph, int pw WG4_POOL_PARAMS WG4_SPLIT_PARAMS EPI_PARAMS) {
  // Us[e][c][m], Vs[e][c][t]; after the loop the products of 8 output
  // channels at a time, Ms[e][m][t] (36 x 8 x BT), in the same memory.
  __local float4 lds4[NE * (US + VS) / 4];
  __local float* Us = (__local float*)lds4;
  __local float* Vs = Us + NE * US;
  __local float* Ms = Us;
  const int tid = get_local_id(0);
  const int TW = (OW + 3) >> 2, T = ((OH + 3) >> 2) * TW;
  const int t0 = get_group_id(0) * BT, m0 = get_group_id(1) * BM;
#ifdef SPLITK
  const int img = get_group_id(2) / splits, slice = get_group_id(2) - img * splits;
  const int cbeg = slice * cslice, cend = min(C, cbeg + cslice);
#else
  const int img = get_group_id(2), cbeg = 0, cend = C;
#endif
  // Loader role: channel lc of the chunk, tile lt (the first CK x BT items).
  const int lc = tid / BT, lt = tid % BT;
  const bool loads_x = tid < CK * BT;
  const int tg = t0 + lt, th = tg / TW, tw = tg - th * TW;
  const bool t_in = tg < T;
  const int ih0 = 4 * th - ph, iw0 = 4 * tw - pw;
  __global const float* xi = X + xo + (size_t)img * C * H * W;
  const int CP = (C + CK - 1) / CK * CK;
  // A chunk's U: CK x 36 x 32 contiguous floats; float4 r of item tid is
  // channel r, element tid / 8, output channels 4 (tid % 8) .. + 3.
  __global const float4* wg = (__global const float4*)Wt + (size_t)(m0 / BM) * CP * NE * BM / 4 + tid;
  __local float* us = Us + (tid >> 3) * US + 4 * (tid & 7);
  // Product role: element e, output channels 8 tm .. + 7, tiles TB tt .. + TB - 1.
  const int e = tid >> 3, tm = (tid >> 1) & 3, tt = tid & 1;
  __local const float* ue = Us + e * US + 8 * tm;
  __local const float* ve = Vs + e * VS + TB * tt;

  float d[36];
  float4 gr[GPER];
#define WG4_LOAD(c0)                                                    \
  {                                                                     \
    const int c = (c0) + lc;                                            \
    const bool cin = loads_x && t_in && c < cend;                       \
    __global const float* xc = xi + (size_t)c * H * W;                  \
    _Pragma("unroll") for (int i = 0; i < 6; ++i) {                     \
      const int ih = ih0 + i;                                           \
      const bool rin = cin && ih >= 0 && ih < H;                        \
      _Pragma("unroll") for (int j = 0; j < 6; ++j) {                   \
        const int iw = iw0 + j;                                         \
        d[6 * i + j] = rin && iw >= 0 && iw < W ? xc[ih * W + iw] : 0.0f; \
      }                                                                 \
    }                                                                   \
    _Pragma("unroll") for (int r = 0; r < GPER; ++r) gr[r] = wg[(size_t)(c0) * NE * BM / 4 + NT * r]; \
  }
  float acc[8][TB];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < TB; ++j) acc[i][j] = 0.0f;

  WG4_LOAD(cbeg)
  for (int c0 = cbeg; c0 < cend; c0 += CK) {
    if (loads_x) {  // V = B^T d B: columns, then rows
      float t[36], v[36];
#pragma unroll
      for (int j = 0; j < 6; ++j) WG4_BT(d, j, 6, t, j, 6)
#pragma unroll
      for (int k = 0; k < 6; ++k) WG4_BT(t, 6 * k, 1, v, 6 * k, 1)
      __local float* vs = Vs + lc * BT + lt;
#pragma unroll
      for (int k = 0; k < 36; ++k) vs[k * VS] = v[k];
    }
#pragma unroll
    for (int r = 0; r < GPER; ++r) *(__local float4*)(us + r * BM) = gr[r];
    barrier(CLK_LOCAL_MEM_FENCE);
    if (c0 + CK < cend) WG4_LOAD(c0 + CK)
#pragma unroll
    for (int c = 0; c < CK; ++c) {
      const float4 a0 = *(__local const float4*)(ue + c * BM), a1 = *(__local const float4*)(ue + c * BM + 4);
      const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
      float b[TB];
#pragma unroll
      for (int q = 0; q < TB / 4; ++q) vstore4(*(__local const float4*)(ve + c * BT + 4 * q), q, b);
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < TB; ++j) acc[i][j] = fma(a[i], b[j], acc[i][j]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }

#ifdef POOL2
  const int PHW = PH * PW;
  __global float* yi = Y + yo + (size_t)img * OC * PHW;
#else
  const int OHW = OH * OW;
  __global float* yi = Y + yo + (size_t)img * OC * OHW;
#endif
  for (int rd = 0; rd < 4; ++rd) {  // output channels 8 rd .. 8 rd + 7
    if (tm == rd) {
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int q = 0; q < TB / 4; ++q)
          *(__local float4*)(Ms + (e * 8 + i) * BT + TB * tt + 4 * q) =
              (float4)(acc[i][4 * q], acc[i][4 * q + 1], acc[i][4 * q + 2], acc[i][4 * q + 3]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int p = tid; p < 8 * BT; p += NT) {
      const int ml = p / BT, t = p % BT;
      const int oc = m0 + 8 * rd + ml, tile = t0 + t;
      if (oc < OC && tile < T) {
        float mv[36], s[24], y[16];
#pragma unroll
        for (int k = 0; k < 36; ++k) mv[k] = Ms[(k * 8 + ml) * BT + t];
#pragma unroll
        for (int j = 0; j < 6; ++j) WG4_AT(mv, j, 6, s, j, 6)   // s[4][6]
#pragma unroll
        for (int k = 0; k < 4; ++k) WG4_AT(s, 6 * k, 1, y, 4 * k, 1)  // y[4][4]
        const int oth = tile / TW, otw = tile - oth * TW;
#ifdef SPLITK
        const float bias = has_bias && slice == 0 ? Bias[bo + oc] : 0.0f;
#else
        const float bias = has_bias ? Bias[bo + oc] : 0.0f;
#endif
#ifdef POOL2
#pragma unroll
        for (int pa = 0; pa < 2; ++pa)
#pragma unroll
          for (int pb = 0; pb < 2; ++pb) {
            const int py = 2 * oth + pa, px = 2 * otw + pb;
            if (py < PH && px < PW) {
              const int pi = oc * PHW + py * PW + px;
              float best = -INFINITY;  // positions past the conv output (ceil_mode) never win
#pragma unroll
              for (int k = 0; k < 4; ++k) {
                const int r = 2 * pa + (k >> 1), q = 2 * pb + (k & 1);
                if (4 * oth + r < OH && 4 * otw + q < OW)
                  best = fmax(best, EPI(y[4 * r + q] + bias, img * OC * PHW + pi));
              }
              yi[pi] = best;
            }
          }
#else
#pragma unroll
        for (int k = 0; k < 16; ++k) {
          const int oh = 4 * oth + (k >> 2), ow = 4 * otw + (k & 3);
          if (oh < OH && ow < OW) {
            const int o = oc * OHW + oh * OW + ow;
#ifdef SPLITK
            split_add(yi + o, y[k] + bias);
#else
            yi[o] = EPI(y[k] + bias, img * OC * OHW + o);
#endif
          }
        }
#endif
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}
