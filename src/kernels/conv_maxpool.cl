// FusedConvMaxPool, tiled, for any pool window (lower_fused_conv_maxpool
// takes it where a tile fits local memory, else conv.cl's conv2d_maxpool):
// a work-group computes TPH x TPW pooled outputs of OCB output channels. It
// stages the input patch under them (ICC input channels at a time, zero
// outside the image) and the weights in local memory, each work-item
// accumulates ROC channels at RPX conv pixels of the CRH x CRW conv region
// under the tile (so overlapping windows recompute only the region's edges,
// not every window position), then the region goes through the epilogue
// into local memory and is max-pooled from there. Built with the
// geometry as defines (lower_fused_conv_maxpool: TiledConvMaxPool):
//   KH KW SH SW DH DW     conv taps, strides, dilations
//   PKH PKW PSH PSW PDH PDW  pool window, strides, dilations
//   TPH TPW OCB ROC WG ICC RPX  the tile, work-items, channels staged at once
//   CRH CRW IRH IRW       conv region and the input rows/columns under it
//   IPW ICS WP WOFF LOCAL_FLOATS  local layout, below
// The staged input keeps each row's stride phases apart (column lx at
// (lx % SW) * IPW + lx / SW; a channel is ICS floats), so neighbouring conv
// pixels read neighbouring words: no bank conflicts at stride 2. Weights are
// [input channel][tap][oc] with row pitch WP = OCB + 4 (float4 reads of ROC
// channels, conflict-free staging), from WOFF.
#ifndef EPI
#define EPI(v, i) (v)
#define EPI_PARAMS
#endif
#define NPX (CRH * CRW)
#define SLICE_ITEMS (WG / (OCB / ROC))
#define TAPS (KH * KW)

__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void conv2d_maxpool_tiled(
    __global const real_t* X, int xo, __global const real_t* Wt, int wo, __global const real_t* Bias, int bo,
    __global real_t* Y, int yo, int has_bias, int C, int H, int W, int OC, int OH, int OW, int ph, int pw, int groups,
    int PH, int PW, int pph, int ppw, int oc_blocks EPI_PARAMS YWIN_PARAMS XWIN_PARAMS) {
  __local float4 lm4[LOCAL_FLOATS / 4];
  __local float* lm = (__local float*)lm4;
  __local float* xl = lm;
  __local float* wl = lm + WOFF;
  const int lid = get_local_id(0), z = get_group_id(2);
  const int blk = z % oc_blocks, g = (z / oc_blocks) % groups, img = z / (oc_blocks * groups);
  const int ICg = C / groups, OCg = OC / groups;
  const int oc_base = g * OCg + blk * OCB, oc_n = min(OCB, OCg - blk * OCB);
  const int py0 = get_group_id(1) * TPH, px0 = get_group_id(0) * TPW;
  const int cy0 = py0 * PSH - pph, cx0 = px0 * PSW - ppw;  // conv pixel at region (0, 0)
  const int iy0 = cy0 * SH - ph, ix0 = cx0 * SW - pw;      // input pixel at patch (0, 0)
  __global const real_t* x = X + xo + (img * C + g * ICg) * H * W;
  __global const real_t* w = Wt + wo + oc_base * ICg * TAPS;

  const int oc0 = (lid / SLICE_ITEMS) * ROC, t = lid % SLICE_ITEMS;
  int base[RPX];  // each conv pixel's word in the staged channel (phase 0, tap 0)
#pragma unroll
  for (int j = 0; j < RPX; ++j) {
    const int p = min(t + j * SLICE_ITEMS, NPX - 1);
    base[j] = (p / CRW) * SH * (SW * IPW) + p % CRW;
  }
  float acc[RPX][ROC];
#pragma unroll
  for (int j = 0; j < RPX; ++j)
#pragma unroll
    for (int r = 0; r < ROC; ++r) acc[j][r] = 0.0f;

  for (int c0 = 0; c0 < ICg; c0 += ICC) {
    const int cn = min(ICC, ICg - c0);
    barrier(CLK_LOCAL_MEM_FENCE);  // the previous chunk is read
    for (int e = lid; e < cn * IRH * IRW; e += WG) {
      const int lx = e % IRW, ly = (e / IRW) % IRH, c = e / (IRW * IRH);
      const int iy = iy0 + ly, ix = ix0 + lx;
      float v = 0.0f;
      if (iy >= 0 && iy < H && ix >= 0 && ix < W) v = LD(x, ((c0 + c) * H + iy) * W + ix);
      xl[c * ICS + ly * (SW * IPW) + (lx % SW) * IPW + lx / SW] = v;
    }
    // Weights: groups of 32 items take 4 taps x 8 channels (reads of 16
    // bytes, writes to 32 distinct banks with WP = OCB + 4).
    const int kblocks = (cn * TAPS + 3) / 4;
    for (int e = lid; e < kblocks * 4 * OCB; e += WG) {
      const int b32 = e / 32, k = (b32 % kblocks) * 4 + e % 4, o = (b32 / kblocks) * 8 + (e / 4) % 8;
      if (k >= cn * TAPS) continue;
      wl[k * WP + o] = o < oc_n ? LD(w, (o * ICg + c0) * TAPS + k) : 0.0f;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int c = 0; c < cn; ++c) {
      __local const float* xc = xl + c * ICS;
      __local const float* wc = wl + c * TAPS * WP + oc0;
#pragma unroll
      for (int kh = 0; kh < KH; ++kh)
#pragma unroll
        for (int kw = 0; kw < KW; ++kw) {
          const int off = kh * DH * (SW * IPW) + ((kw * DW) % SW) * IPW + (kw * DW) / SW;
          float wv[ROC];
#pragma unroll
          for (int r = 0; r < ROC; r += 4) {
            const float4 q = *(__local const float4*)(wc + (kh * KW + kw) * WP + r);
            wv[r] = q.x, wv[r + 1] = q.y, wv[r + 2] = q.z, wv[r + 3] = q.w;
          }
#pragma unroll
          for (int j = 0; j < RPX; ++j) {
            const float xv = xc[base[j] + off];
#pragma unroll
            for (int r = 0; r < ROC; ++r) acc[j][r] = fma(xv, wv[r], acc[j][r]);
          }
        }
    }
  }

  // The conv region [oc][pixel] over the staged data: the epilogue's values,
  // -inf outside the conv output (pool padding, ceil_mode) so they never win.
  barrier(CLK_LOCAL_MEM_FENCE);
  float bias[ROC];
#pragma unroll
  for (int r = 0; r < ROC; ++r) bias[r] = has_bias && oc0 + r < oc_n ? LD(Bias, bo + oc_base + oc0 + r) : 0.0f;
#pragma unroll
  for (int j = 0; j < RPX; ++j) {
    const int p = t + j * SLICE_ITEMS;
    const int cy = cy0 + p / CRW, cx = cx0 + p % CRW;
    const bool inside = cy >= 0 && cy < OH && cx >= 0 && cx < OW;
#pragma unroll
    for (int r = 0; r < ROC; ++r) {
      const int i = ((img * OC + oc_base + oc0 + r) * OH + cy) * OW + cx;  // in the (unstored) conv output
      if (p < NPX) lm[(oc0 + r) * NPX + p] = inside ? EPI(acc[j][r] + bias[r], i) : -INFINITY;
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int e = lid; e < OCB * TPH * TPW; e += WG) {
    const int ox = e % TPW, oy = (e / TPW) % TPH, o = e / (TPW * TPH);
    const int py = py0 + oy, px = px0 + ox;
    if (o >= oc_n || py >= PH || px >= PW) continue;
    __local const float* v = lm + o * NPX + oy * PSH * CRW + ox * PSW;
    float best = -INFINITY;
#pragma unroll
    for (int pkh = 0; pkh < PKH; ++pkh)
#pragma unroll
      for (int pkw = 0; pkw < PKW; ++pkw) best = fmax(best, v[pkh * PDH * CRW + pkw * PDW]);
    ST(Y, yo + YI(((img * OC + oc_base + o) * PH + py) * PW + px), best);
  }
}
