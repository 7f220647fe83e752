// 3x3 stride-1 convolutions by Winograd F(4x4, 3x3), fused like
// conv_winograd.cl's F(2x2, 3x3) (no transformed tensor is stored): the
// output is cut into 4x4 tiles, each from the 6x6 input patch under it, 36
// products per tile and input channel where the direct conv has 144 (F(2x2)
// 64 for the same outputs). The transforms cost more adds than F(2x2)'s, and
// rounding grows with their coefficients (up to 8) but stays at fp32's
// (docs/kernel-choices.md#winograd-f4x4-3x3-tried-not-kept).
//
// A work-group of 288 work-items (9 warps) computes BM = 32 output channels
// x BT = 16 tiles (32 x 256 outputs), all 36 transform elements, over chunks
// of CK = 4 input channels: 36 x 4 x (32 + 16) floats of transforms fill
// 27 KB of local memory, two buffers would pass 48 KB. Per chunk the first
// 192 work-items each load five rows of one (channel, tile) patch and
// transform two of its six rows (warp-uniform: items 64 r .. 64 r + 63 take
// rows 2 r, 2 r + 1); every item stores its share of the chunk's weights,
// transformed at load ([OC / 32][CP][36][32], CP = C rounded up to 4,
// lower/conv.cpp winograd_weights). Work-item (e, tm, tt) then multiplies
// element e's 8 output channels x 8 tiles, as conv_winograd.cl does. At the
// end the products of 16 output channels at a time go through local memory
// and 256 items transform one (channel, tile) each back: 16 outputs, bias,
// epilogue EPI(v, index).
//
// POOL2: a tile's four 2x2 windows are pooled before the store (PH x PW
// pooled). SPLITK: as conv_winograd.cl's (grid z = image * splits + slice,
// partial sums added into Y, the host zeroes Y and applies the epilogue).
// W4_VEC (W and X's offset multiples of 4, pw % 4 == 1): a patch row's
// columns 1..4 are one aligned float4, wholly inside or outside the row.
#ifndef EPI
#define EPI(v, i) (v)
#define EPI_PARAMS
#endif
#define NE 36                          // transform elements, 6 x 6
#define BM 32                          // output channels per work-group
#define BT 16                          // 4x4 tiles per work-group
#define CK 4                           // input channels per chunk (the host packs the weights in blocks of 4)
#define NT (NE * (BM / 8) * (BT / 8))  // 288 work-items
#define TMN (BM / 8)
#define TTN (BT / 8)
#define NX (3 * CK * BT)               // items that load and transform input patches: 3 a patch
#define G_PER (NE * CK * BM / 4 / NT)  // float4s of the chunk's weights an item stores
#define W4_US (NE * CK * BM)
#define W4_VS (NE * CK * BT)
#define W4_MS (NE * 16 * BT)  // the products of 16 output channels
#define W4_LDS (W4_US + W4_VS > W4_MS ? W4_US + W4_VS : W4_MS)
#if W4_LDS > 12288
#error "more than 48 KB of local memory"
#endif
#if defined(SPLITK) && defined(POOL2)
#error "SPLITK and POOL2 do not combine"
#endif

__kernel __attribute__((reqd_work_group_size(NT, 1, 1)))
void conv2d_winograd4(__global const float* X, __global const float* Wt, __global const float* Bias, __global float* Y,
                      ConvParams cp EPI_PARAMS YWIN_PARAMS XWIN_PARAMS) {
  CONV_PARAMS(cp)  // Wt: packed at load, read from its start (wo unused)
  // Us[e][c][m], Vs[e][c][t]; after the loop Ms[e][m][t] over them.
  __local float4 lds4[W4_LDS / 4];
  __local float* Us = (__local float*)lds4;
  __local float* Vs = Us + W4_US;
  __local float* Ms = Us;
  const int tid = get_local_id(0);
  const int TW = (OW + 3) >> 2, T = ((OH + 3) >> 2) * TW;
  const int t0 = get_group_id(0) * BT, m0 = get_group_id(1) * BM;
#ifdef SPLITK
  const int img = get_group_id(2) / splits, slice = get_group_id(2) - img * splits;
  const int cbeg = slice * kslice, cend = min(C, cbeg + kslice);
#else
  const int img = get_group_id(2), cbeg = 0, cend = C;
#endif
  // Loader roles: rows pair lr (0..2, uniform in a warp), channel lc, tile lt.
  const int lr = tid / (CK * BT), lc = (tid / BT) % CK, lt = tid % BT;
  const bool loads_x = tid < NX;
  const int tg = t0 + lt, th = tg / TW, tw = tg - th * TW;
  const bool t_in = tg < T;
  // Rows pair 0 reads the patch's rows 0..4, the others rows 1..5.
  const int ih0 = 4 * th - ph + (lr ? 1 : 0), iw0 = 4 * tw - pw;
  __global const float* xi = X + xo + (size_t)img * C * H * W;
  const int CP = (C + CK - 1) / CK * CK;
  __global const float4* wg = (__global const float4*)Wt + (size_t)(m0 / BM) * CP * NE * BM / 4 + tid;
#ifdef W4_VEC
#define W4_ROW(D, i)                                                                                         \
  {                                                                                                          \
    const float4 q = rin && iw0 + 1 < W && iw0 + 1 >= 0 ? *(__global const float4*)(xr + iw0 + 1) : (float4)(0.0f); \
    D[6 * i + 0] = rin && iw0 >= 0 && iw0 < W ? xr[iw0] : 0.0f;                                              \
    D[6 * i + 1] = q.x, D[6 * i + 2] = q.y, D[6 * i + 3] = q.z, D[6 * i + 4] = q.w;                          \
    D[6 * i + 5] = rin && iw0 + 5 >= 0 && iw0 + 5 < W ? xr[iw0 + 5] : 0.0f;                                  \
  }
#else
#define W4_ROW(D, i)                                                                                         \
  for (int j = 0; j < 6; ++j) {                                                                              \
    const int iw = iw0 + j;                                                                                  \
    D[6 * i + j] = rin && iw >= 0 && iw < W ? xr[iw] : 0.0f;                                                 \
  }
#endif
#define W4_LOAD(c0, D, GR)                                                                                   \
  {                                                                                                          \
    const int c = (c0) + lc;                                                                                 \
    const bool cin = loads_x && c < cend;                                                                    \
    _Pragma("unroll") for (int i = 0; i < 5; ++i) {                                                          \
      const int ih = ih0 + i;                                                                                \
      const bool rin = cin && t_in && ih >= 0 && ih < H;                                                     \
      __global const float* xr = xi + (c * H + ih) * W;                                                      \
      W4_ROW(D, i)                                                                                           \
    }                                                                                                        \
    _Pragma("unroll") for (int r = 0; r < G_PER; ++r) GR[r] = wg[(size_t)(c0) * NE * BM / 4 + NT * r];     \
  }
  // B^T d's rows (B^T = [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0;
  // 0 -2 -1 2 1 0; 0 2 -1 -2 1 0; 0 4 0 -5 0 1]) 2 lr and 2 lr + 1 from the
  // item's five input rows D0..D4, then the same transform along each row:
  // element (i, j) of V at Vs[(6 i + j) CK + c][t].
#define W4_COLUMNS(R, row)                                                                                   \
  {                                                                                                          \
    __local float* v = Vs + ((6 * (row)) * CK + lc) * BT + lt;                                               \
    v[0 * CK * BT] = fma(4.0f, R[0], fma(-5.0f, R[2], R[4]));                                                \
    v[1 * CK * BT] = fma(-4.0f, R[1] + R[2], R[3] + R[4]);                                                   \
    v[2 * CK * BT] = fma(4.0f, R[1] - R[2], R[4] - R[3]);                                                    \
    v[3 * CK * BT] = fma(2.0f, R[3] - R[1], R[4] - R[2]);                                                    \
    v[4 * CK * BT] = fma(2.0f, R[1] - R[3], R[4] - R[2]);                                                    \
    v[5 * CK * BT] = fma(4.0f, R[1], fma(-5.0f, R[3], R[5]));                                                \
  }
#define W4_TRANSFORM(D, GR)                                                                                  \
  if (loads_x) {                                                                                             \
    float ra[6], rb[6];                                                                                      \
    if (lr == 0) {                                                                                           \
      _Pragma("unroll") for (int j = 0; j < 6; ++j) {                                                        \
        ra[j] = fma(4.0f, D[j], fma(-5.0f, D[12 + j], D[24 + j]));                                           \
        rb[j] = fma(-4.0f, D[6 + j] + D[12 + j], D[18 + j] + D[24 + j]);                                     \
      }                                                                                                      \
    } else if (lr == 1) {                                                                                    \
      _Pragma("unroll") for (int j = 0; j < 6; ++j) {                                                        \
        ra[j] = fma(4.0f, D[j] - D[6 + j], D[18 + j] - D[12 + j]);                                           \
        rb[j] = fma(2.0f, D[12 + j] - D[j], D[18 + j] - D[6 + j]);                                           \
      }                                                                                                      \
    } else {                                                                                                 \
      _Pragma("unroll") for (int j = 0; j < 6; ++j) {                                                        \
        ra[j] = fma(2.0f, D[j] - D[12 + j], D[18 + j] - D[6 + j]);                                           \
        rb[j] = fma(4.0f, D[j], fma(-5.0f, D[12 + j], D[24 + j]));                                           \
      }                                                                                                      \
    }                                                                                                        \
    W4_COLUMNS(ra, 2 * lr)                                                                                   \
    W4_COLUMNS(rb, 2 * lr + 1)                                                                               \
  }                                                                                                          \
  _Pragma("unroll") for (int r = 0; r < G_PER; ++r) {                                                        \
    const int f = tid + NT * r, c = f / (NE * BM / 4), e = (f / (BM / 4)) % NE;                              \
    *(__local float4*)(Us + (e * CK + c) * BM + 4 * (f % (BM / 4))) = GR[r];                                 \
  }
  float acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;
  const int e = tid / (NT / NE), tm = (tid % (NT / NE)) / TTN, tt = tid % TTN;
  float d[30];
  float4 gr[G_PER];
  W4_LOAD(cbeg, d, gr)
  for (int c0 = cbeg; c0 < cend; c0 += CK) {
    W4_TRANSFORM(d, gr)
    barrier(CLK_LOCAL_MEM_FENCE);
    if (c0 + CK < cend) W4_LOAD(c0 + CK, d, gr)
    __local const float4* ue = (__local const float4*)(Us + e * CK * BM);
    __local const float4* ve = (__local const float4*)(Vs + e * CK * BT);
#pragma unroll
    for (int c = 0; c < CK; ++c) {
      float a[8], b[8];
      vstore4(ue[c * BM / 4 + tm], 0, a);
      vstore4(ue[c * BM / 4 + TMN + tm], 1, a);
      vstore4(ve[c * BT / 4 + tt], 0, b);
      vstore4(ve[c * BT / 4 + TTN + tt], 1, b);
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = fma(a[i], b[j], acc[i][j]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  // acc[i][j]: element e of output channel m0 + 4 tm + 16 (i / 4) + i % 4,
  // tile t0 + 4 tt + 8 (j / 4) + j % 4.
#ifdef POOL2
  const int PHW = PH * PW;
#else
  const int OHW = OH * OW;
  __global float* yi = Y + yo + (size_t)img * OC * OHW;
#endif
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) {  // output channels 16 hf .. 16 hf + 15
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      __local float4* row = (__local float4*)(Ms + (e * 16 + 4 * tm + r) * BT);
      row[tt] = (float4)(acc[4 * hf + r][0], acc[4 * hf + r][1], acc[4 * hf + r][2], acc[4 * hf + r][3]);
      row[TTN + tt] = (float4)(acc[4 * hf + r][4], acc[4 * hf + r][5], acc[4 * hf + r][6], acc[4 * hf + r][7]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const int ml = tid / BT, t = tid % BT;
    const int oc = m0 + 16 * hf + ml, tile = t0 + t;
    if (tid < 16 * BT && oc < OC && tile < T) {
      // Y = A^T M A, A^T = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1]
      float s[4][6];
#pragma unroll
      for (int j = 0; j < 6; ++j) {
        float m[6];
#pragma unroll
        for (int i = 0; i < 6; ++i) m[i] = Ms[((6 * i + j) * 16 + ml) * BT + t];
        const float p12 = m[1] + m[2], m12 = m[1] - m[2], p34 = m[3] + m[4], m34 = m[3] - m[4];
        s[0][j] = m[0] + p12 + p34;
        s[1][j] = fma(2.0f, m34, m12);
        s[2][j] = fma(4.0f, p34, p12);
        s[3][j] = fma(8.0f, m34, m12) + m[5];
      }
      float y[4][4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float p12 = s[i][1] + s[i][2], m12 = s[i][1] - s[i][2], p34 = s[i][3] + s[i][4], m34 = s[i][3] - s[i][4];
        y[i][0] = s[i][0] + p12 + p34;
        y[i][1] = fma(2.0f, m34, m12);
        y[i][2] = fma(4.0f, p34, p12);
        y[i][3] = fma(8.0f, m34, m12) + s[i][5];
      }
      const int oth = tile / TW, otw = tile - oth * TW;
#ifdef SPLITK
      const float bias = has_bias && slice == 0 ? Bias[bo + oc] : 0.0f;
#else
      const float bias = has_bias ? Bias[bo + oc] : 0.0f;
#endif
#ifdef POOL2
      const int base = (img * OC + oc) * PHW;
#pragma unroll
      for (int a = 0; a < 2; ++a)
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          const int py = 2 * oth + a, px = 2 * otw + c;
          if (py < PH && px < PW) {
            float best = -INFINITY;  // positions past the conv output (ceil_mode) never win
#pragma unroll
            for (int k = 0; k < 4; ++k) {
              const int i = 2 * a + (k >> 1), j = 2 * c + (k & 1);
              if (4 * oth + i < OH && 4 * otw + j < OW) best = fmax(best, EPI(y[i][j] + bias, base + py * PW + px));
            }
            Y[yo + YI(base + py * PW + px)] = best;
          }
        }
#else
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const int oh = 4 * oth + i, ow = 4 * otw + j;
          if (oh < OH && ow < OW) {
            const int o = oc * OHW + oh * OW + ow;
#ifdef SPLITK
            split_add(yi + o, y[i][j] + bias);
#else
            Y[yo + YI(img * OC * OHW + o)] = EPI(y[i][j] + bias, img * OC * OHW + o);
#endif
          }
        }
#endif
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}
