// 3x3 stride-1 convolutions by Winograd F(2x2, 3x3), fused into one kernel:
// no transformed tensors are stored, so the plan needs no scratch. The output
// is cut into 2x2 tiles (T = ceil(OH/2) x ceil(OW/2)); tile t of channel oc
// is A^T [sum_c U(oc, c) .* V(c, t)] A with U = G g G^T the 4x4 transform
// of the 3x3 weights g and V = B^T d B that of the 4x4 input patch d under
// the tile: 16 products per tile and input channel instead of 36 (2.25x fewer
// FMAs than the direct conv; fp32 throughout, rounding differs from the
// direct sum only by the transforms' few adds).
//
// A work-group of 256 work-items computes BM = 32 output channels x BT = 32
// tiles, all 16 transform elements: for each chunk of CK = 8 input channels
// each work-item transforms one (channel, tile) patch into local memory and
// stores its share of the chunk's weights, transformed once at load (WG_PRE;
// below); the next chunk's values are loaded while the current one is
// multiplied. Then work-item (e, tm, tt)
// multiplies element e's 8 output channels x 8 tiles (float4 local reads,
// the gemm.cl VEC layout). At the end the products go through local memory
// (half the channels at a time) so that each work-item transforms whole
// tiles back: two 2x2 outputs, bias, epilogue EPI(v, index).
//
// POOL2 (FusedConvMaxPool, 2x2 windows of stride 2): output tile t is pool
// window t, so the store is the max of its four values (PH x PW pooled).
// SPLITK: grid z = image * splits + slice, slice s sums channels
// [s * kslice, +kslice) and adds its partial outputs into Y (split_add,
// common.cl; slice 0 with the bias); the host zeroes Y before and applies the
// epilogue after (gemm.cl's splitk_zero / splitk_finish).
//
// WG_BT=16 with WG_DB, the fp32 build's 16-tile form (lower/conv.cpp takes it
// where 32-tile groups leave the last wave half empty and 16-tile ones fill
// theirs): 128-item work-groups, several per SM, so one group's barrier waits
// overlap another's products. WG_DB: chunks of 4 channels in two buffers of
// Us and Vs, one barrier per chunk, two items per input patch (each
// transforming two of its rows); WG_CK=8 with WG_BT=16 fills 48 KB. Figures:
// docs/kernel-choices.md#winograd-split-or-in-16-tile-groups.
//
// WG_MMA (--precision tf32; mma_common.cl prepended): the transforms are
// rounded to tf32 as they are stored and each element's 32 x 32 x CK product
// runs on the tensor cores, warp w multiplying elements 2w and 2w + 1 (8
// m16n8k8 each per chunk) instead of 512 FMAs per work-item. Us and Vs rows
// (one channel each) are stored with their columns XOR-swizzled by the
// channel's (c % 4) x 8, so a fragment's 32 reads (channels t, t + 4 and
// rows g, g + 8 of lane (g, t)) fall on 32 banks. With so little work
// between a chunk's loads and their use, WG_MMA keeps two chunks' raw values
// in flight. One 256-item work-group per SM cannot hide the loads' latency;
// what that costs and the forms tried against it:
// docs/kernel-choices.md#winograd-on-the-tensor-cores.
#ifndef EPI
#define EPI(v, i) (v)
#define EPI_PARAMS
#endif
#define BM 32
#ifdef WG_BT
#define BT WG_BT  // 16: 128-item work-groups, two or more per SM
#else
#define BT 32
#endif
#ifdef WG_DB
#ifdef WG_CK
#define CK WG_CK  // 8: with 16 tiles, two buffers fill the 48 KB of local memory
#else
#define CK 4      // two buffers of Us and Vs: one barrier per chunk
#endif
#define NBUF 2
#else
#define CK 8
#define NBUF 1
#endif
#define PACK_CK 8                       // the host packs the input channels in blocks of 8 (kWinogradCK)
#define NT (16 * (BM / 8) * (BT / 8))  // work-items: 16 elements x (BM/8 x BT/8) blocks of 8x8 (WG_MMA: 8 warps x 2 elements)
#define TMN (BM / 8)                    // blocks along the output channels
#define TTN (BT / 8)                    // blocks along the tiles
#define HP (NT / (CK * BT))             // items per input patch: 1, or 2 (each transforms two of its rows)
#define WG_STAGE (16 * CK * (BM + BT))  // one buffer's Us and Vs, floats
#define WG_LDS (NBUF * WG_STAGE > 16 * 16 * BT ? NBUF * WG_STAGE : 16 * 16 * BT)
#if WG_LDS > 12288
#error "more than 48 KB of local memory"
#endif
#if HP != 1 && HP != 2
#error "one or two work-items per input patch"
#endif
#if (defined(WG_DB) || BT != 32) && !defined(WG_PRE)
#error "the raw weights' loader takes 256 items of 8 channels"
#endif
#ifdef WG_MMA
#if CK != 8 || BM != 32 || BT != 32
#error "WG_MMA: one k8 step per chunk, swizzles within 32 columns"
#endif
#define WG_VAL(x) as_float(to_tf32(x))  // stored as the bits the mma reads
#define WG_SWZ(c) (((c) & 3) << 3)
#else
#define WG_VAL(x) (x)
#define WG_SWZ(c) 0
#endif

#if defined(SPLITK) && defined(POOL2)
#error "SPLITK and POOL2 do not combine"
#endif

__kernel __attribute__((reqd_work_group_size(NT, 1, 1)))
void conv2d_winograd(__global const float* X, __global const float* Wt, __global const float* Bias, __global float* Y,
                     ConvParams cp EPI_PARAMS YWIN_PARAMS XWIN_PARAMS) {
  CONV_PARAMS(cp)  // Wt: packed at load, read from its start (wo unused); slices of kslice channels
  // Us[e][c][m], Vs[e][c][t]; after the loop, the products of 16 output
  // channels at a time, Ms[e][m][t] (16 x 16 x BT), in the same memory.
  __local float4 lds4[WG_LDS / 4];
  __local float* Us = (__local float*)lds4;
  __local float* Vs = Us + 16 * CK * BM;
  __local float* Ms = Us;
  // The chunk being stored (Uw, Vw) and the one multiplied (Ur, Vr): the
  // same buffer, or the two alternating (WG_DB).
  __local float *Uw = Us, *Vw = Vs, *Ur = Us, *Vr = Vs;
  const int tid = get_local_id(0);
#ifdef WG_MMA
  MMA_SCRATCH
  const int lid = tid;  // MMA's
  const int lane = tid & 31, warp = tid >> 5, fg = lane >> 2, ft = lane & 3;
#endif
  const int TW = (OW + 1) >> 1, T = ((OH + 1) >> 1) * TW;
  const int t0 = get_group_id(0) * BT, m0 = get_group_id(1) * BM;
#ifdef SPLITK
  const int img = get_group_id(2) / splits, slice = get_group_id(2) - img * splits;
  const int cbeg = slice * kslice, cend = min(C, cbeg + kslice);
#else
  const int img = get_group_id(2), cbeg = 0, cend = C;
#endif
  // Loader roles: channel lc of the chunk and tile lt (the first CK x BT
  // items), channel lcw and output channel lm (CK x BM items).
  // HP == 2: items (lc, lh, lt), half lh transforming rows 2 lh, 2 lh + 1 of
  // the patch from its input rows lh .. lh + 2.
  const int lc = tid / (HP * BT), lh = (tid / BT) % HP, lt = tid % BT, lcw = tid / BM, lm = tid % BM;
  const bool loads_x = tid < HP * CK * BT;
  const int tg = t0 + lt, th = tg / TW, tw = tg - th * TW;
  const bool t_in = tg < T;
  const int ih0 = 2 * th - ph, iw0 = 2 * tw - pw;
  __global const float* xi = X + xo + (size_t)img * C * H * W;
  // The weights come packed at load (lower/conv.cpp winograd_weights), zeros
  // past OC and C (CP = C rounded up to CK), so a chunk's are one
  // contiguous block. WG_PRE: transformed, [OC / BM][CP][16][BM]: a
  // chunk's CK x 16 x BM values are read as float4 (G_PER of them per item)
  // and stored straight into Us. Else raw, [OC / BM][CP][9][BM]: item
  // (lcw, lm) reads its 9 taps (a warp: 9 reads of 32 consecutive floats)
  // and transforms them in registers.
  const int CP = (C + PACK_CK - 1) / PACK_CK * PACK_CK;
#ifdef WG_PRE
#define G_PER (16 * CK * BM / 4 / NT)
#define WG_GREG float4
  __global const float4* wg = (__global const float4*)Wt + (size_t)(m0 / BM) * CP * 16 * BM / 4 + tid;
#define WG_WEIGHT_LOAD(c0, GR) \
  for (int r = 0; r < G_PER; ++r) GR[r] = wg[(size_t)(c0) * 16 * BM / 4 + NT * r];
#else
#define G_PER 9
#define WG_GREG float
  __global const float* wg = Wt + (size_t)(m0 / BM) * CP * 9 * BM + lcw * 9 * BM + lm;
#define WG_WEIGHT_LOAD(c0, GR) \
  for (int k = 0; k < 9; ++k) GR[k] = wg[(size_t)(c0) * 9 * BM + k * BM];
#endif
#define WG_ROWS (HP == 2 ? 3 : 4)  // input rows an item loads
#ifdef WG_DIAG_NO_GLOBAL  // a diagnostic build (wrong results): no global reads, to time the rest
#define WG_LOAD(c0, D, GR)                                                            \
  {                                                                                   \
    for (int k = 0; k < 4 * WG_ROWS; ++k) D[k] = (float)(k + (c0) + lc);             \
    for (int r = 0; r < G_PER; ++r) GR[r] = (WG_GREG)(r - (c0) + tid);                \
  }
#else
// Row i of an item's patch (input row ih, in it or not: rin) into D[4 i ..]:
// a float at a time, or WG_PAIRS (W and X's offset even, so that every even
// column starts an aligned float2 that lies wholly inside or outside the
// row): 3 float2 loads from the even column before an odd first column
// (WG_PAIRS=1), 2 from an even one (WG_PAIRS=2). A warp's loads then touch
// only the bytes it uses. Keep the spelling: other spellings of these stores
// or the local indices cost the 16-tile form registers and a work-group per
// SM (docs/kernel-choices.md#winograds-input-rows-as-float2s).
#if WG_PAIRS == 1
#define WG_ROW(D, i)                                                                  \
  {                                                                                   \
    float2 q[3];                                                                      \
    for (int k = 0; k < 3; ++k) {                                                     \
      const int a = iw0 - 1 + 2 * k;                                                  \
      q[k] = rin && a >= 0 && a < W ? *(__global const float2*)(xc + ih * W + a) : (float2)(0.0f); \
    }                                                                                 \
    (D + 4 * i)[0] = q[0].y, (D + 4 * i)[1] = q[1].x, (D + 4 * i)[2] = q[1].y, (D + 4 * i)[3] = q[2].x; \
  }
#elif WG_PAIRS == 2
#define WG_ROW(D, i)                                                                  \
  {                                                                                   \
    float2 q[2];                                                                      \
    for (int k = 0; k < 2; ++k) {                                                     \
      const int a = iw0 + 2 * k;                                                      \
      q[k] = rin && a >= 0 && a < W ? *(__global const float2*)(xc + ih * W + a) : (float2)(0.0f); \
    }                                                                                 \
    (D + 4 * i)[0] = q[0].x, (D + 4 * i)[1] = q[0].y, (D + 4 * i)[2] = q[1].x, (D + 4 * i)[3] = q[1].y; \
  }
#else
#define WG_ROW(D, i)                                                                  \
  for (int j = 0; j < 4; ++j) {                                                       \
    const int iw = iw0 + j;                                                           \
    D[4 * i + j] = rin && iw >= 0 && iw < W ? xc[ih * W + iw] : 0.0f;                 \
  }
#endif
#define WG_LOAD(c0, D, GR)                                                            \
  {                                                                                   \
    const int c = (c0) + lc;                                                          \
    const bool cin = loads_x && c < cend;                                             \
    __global const float* xc = xi + (size_t)c * H * W;                               \
    for (int i = 0; i < WG_ROWS; ++i) {                                               \
      const int ih = ih0 + (HP == 2 ? lh : 0) + i;                                    \
      const bool rin = cin && t_in && ih >= 0 && ih < H;                              \
      WG_ROW(D, i)                                                                    \
    }                                                                                 \
    WG_WEIGHT_LOAD(c0, GR)                                                            \
  }
#endif
  // A chunk's transforms into Us and Vs: V = B^T d B of the patch D,
  // B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]; U = G g G^T of the raw
  // weights GR, G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1] (WG_PRE: U as read).
#ifdef WG_PRE
#define WG_TRANSFORM_WEIGHTS(GR)                                                      \
  _Pragma("unroll") for (int r = 0; r < G_PER; ++r) {                                \
    const int f = tid + NT * r, c = f / (4 * BM), e = (f / (BM / 4)) % 16;            \
    const float4 v = GR[r];                                                           \
    *(__local float4*)(Uw + (e * CK + c) * BM + ((4 * (f % (BM / 4))) ^ WG_SWZ(c))) = \
        (float4)(WG_VAL(v.x), WG_VAL(v.y), WG_VAL(v.z), WG_VAL(v.w));                 \
  }
#else
#define WG_TRANSFORM_WEIGHTS(GR)                                                      \
  {                                                                                   \
    float s[12];                                                                      \
    _Pragma("unroll") for (int j = 0; j < 3; ++j) {                                   \
      s[0 + j] = GR[j];                                                               \
      s[3 + j] = 0.5f * (GR[j] + GR[3 + j] + GR[6 + j]);                              \
      s[6 + j] = 0.5f * (GR[j] - GR[3 + j] + GR[6 + j]);                              \
      s[9 + j] = GR[6 + j];                                                           \
    }                                                                                 \
    __local float* u = Uw + lcw * BM + (lm ^ WG_SWZ(lcw));                            \
    _Pragma("unroll") for (int i = 0; i < 4; ++i) {                                   \
      u[(4 * i + 0) * CK * BM] = WG_VAL(s[3 * i]);                                    \
      u[(4 * i + 1) * CK * BM] = WG_VAL(0.5f * (s[3 * i] + s[3 * i + 1] + s[3 * i + 2])); \
      u[(4 * i + 2) * CK * BM] = WG_VAL(0.5f * (s[3 * i] - s[3 * i + 1] + s[3 * i + 2])); \
      u[(4 * i + 3) * CK * BM] = WG_VAL(s[3 * i + 2]);                                \
    }                                                                                 \
  }
#endif
#if HP == 2
// B^T's rows 0, 1 (lh 0: d0 - d2, d1 + d2) or 2, 3 (lh 1: d2 - d1, d1 - d3)
// from the item's input rows D (d0..d2, or d1..d3), then B along the columns.
#define WG_TRANSFORM(D, GR)                                                           \
  {                                                                                   \
    float ra[4], rb[4];                                                               \
    _Pragma("unroll") for (int j = 0; j < 4; ++j) {                                   \
      ra[j] = lh ? D[4 + j] - D[j] : D[j] - D[8 + j];                                 \
      rb[j] = lh ? D[j] - D[8 + j] : D[4 + j] + D[8 + j];                             \
    }                                                                                 \
    __local float* v = Vw + lc * BT + lt + 8 * lh * CK * BT;                          \
    v[0 * CK * BT] = ra[0] - ra[2];                                                   \
    v[1 * CK * BT] = ra[1] + ra[2];                                                   \
    v[2 * CK * BT] = ra[2] - ra[1];                                                   \
    v[3 * CK * BT] = ra[1] - ra[3];                                                   \
    v[4 * CK * BT] = rb[0] - rb[2];                                                   \
    v[5 * CK * BT] = rb[1] + rb[2];                                                   \
    v[6 * CK * BT] = rb[2] - rb[1];                                                   \
    v[7 * CK * BT] = rb[1] - rb[3];                                                   \
  }                                                                                   \
  WG_TRANSFORM_WEIGHTS(GR)
#else
#define WG_TRANSFORM(D, GR)                                                           \
  if (loads_x) {                                                                      \
    float r[16];                                                                      \
    _Pragma("unroll") for (int j = 0; j < 4; ++j) {                                   \
      r[0 + j] = D[0 + j] - D[8 + j];                                                 \
      r[4 + j] = D[4 + j] + D[8 + j];                                                 \
      r[8 + j] = D[8 + j] - D[4 + j];                                                 \
      r[12 + j] = D[4 + j] - D[12 + j];                                               \
    }                                                                                 \
    __local float* v = Vw + lc * BT + (lt ^ WG_SWZ(lc));                              \
    _Pragma("unroll") for (int i = 0; i < 4; ++i) {                                   \
      v[(4 * i + 0) * CK * BT] = WG_VAL(r[4 * i + 0] - r[4 * i + 2]);                 \
      v[(4 * i + 1) * CK * BT] = WG_VAL(r[4 * i + 1] + r[4 * i + 2]);                 \
      v[(4 * i + 2) * CK * BT] = WG_VAL(r[4 * i + 2] - r[4 * i + 1]);                 \
      v[(4 * i + 3) * CK * BT] = WG_VAL(r[4 * i + 1] - r[4 * i + 3]);                 \
    }                                                                                 \
  }                                                                                   \
  WG_TRANSFORM_WEIGHTS(GR)
#endif
  // The chunk's 16 products from Us and Vs into acc. WG_DIAG_NO_GEMM (a
  // diagnostic build, wrong results): none, to time the rest.
#if defined(WG_DIAG_NO_GEMM)
#define WG_PRODUCTS
#elif defined(WG_MMA)
#define WG_PRODUCTS                                                                   \
  UNROLL for (int s = 0; s < 2; ++s) {  /* A(m, c) = U[e][c][m], B(c, t) = V[e][c][t] */ \
    __local const float* ue = Ur + (2 * warp + s) * CK * BM;                          \
    __local const float* ve = Vr + (2 * warp + s) * CK * BT;                          \
    const int sw = WG_SWZ(ft); /* channels ft and ft + 4 alike */                     \
    uint af[BM / 16][4], bf[BT / 8][2];                                               \
    UNROLL for (int i = 0; i < BM / 16; ++i) {                                        \
      const int r0 = (16 * i + fg) ^ sw, r1 = (16 * i + fg + 8) ^ sw;                 \
      af[i][0] = as_uint(ue[ft * BM + r0]);                                           \
      af[i][1] = as_uint(ue[ft * BM + r1]);                                           \
      af[i][2] = as_uint(ue[(ft + 4) * BM + r0]);                                     \
      af[i][3] = as_uint(ue[(ft + 4) * BM + r1]);                                     \
    }                                                                                 \
    UNROLL for (int j = 0; j < BT / 8; ++j) {                                         \
      const int col = (8 * j + fg) ^ sw;                                              \
      bf[j][0] = as_uint(ve[ft * BT + col]);                                          \
      bf[j][1] = as_uint(ve[(ft + 4) * BT + col]);                                    \
    }                                                                                 \
    UNROLL for (int i = 0; i < BM / 16; ++i)                                          \
      UNROLL for (int j = 0; j < BT / 8; ++j) MMA(acc[s][i][j], af[i], bf[j]);        \
  }
#else
#define WG_PRODUCTS                                                                   \
  {                                                                                   \
    __local const float4* ue = (__local const float4*)(Ur + e * CK * BM);            \
    __local const float4* ve = (__local const float4*)(Vr + e * CK * BT);            \
    _Pragma("unroll") for (int c = 0; c < CK; ++c) {                                  \
      float a[8], b[8];                                                               \
      vstore4(ue[c * BM / 4 + tm], 0, a);                                             \
      vstore4(ue[c * BM / 4 + TMN + tm], 1, a);                                       \
      vstore4(ve[c * BT / 4 + tt], 0, b);                                             \
      vstore4(ve[c * BT / 4 + TTN + tt], 1, b);                                       \
      _Pragma("unroll") for (int i = 0; i < 8; ++i)                                   \
        _Pragma("unroll") for (int j = 0; j < 8; ++j) acc[i][j] = fma(a[i], b[j], acc[i][j]); \
    }                                                                                 \
  }
#endif
#ifdef WG_MMA
  float acc[2][BM / 16][BT / 8][4];  // [element 2 warp + s][m16 block][n8 block][fragment register]
  UNROLL for (int s = 0; s < 2; ++s)
    UNROLL for (int i = 0; i < BM / 16; ++i)
      UNROLL for (int j = 0; j < BT / 8; ++j)
        UNROLL for (int o = 0; o < 4; ++o) acc[s][i][j][o] = 0.0f;
#else
  float acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;
  const int e = tid / (NT / 16), tm = (tid % (NT / 16)) / TTN, tt = tid % TTN;
#endif
  float d[4 * WG_ROWS];
  WG_GREG gr[G_PER];
#if defined(WG_MMA) || defined(WG_PREFETCH2)
  // Two chunks' raw values in flight (sets d/gr and d2/gr2, alternating):
  // the tensor cores leave too little work between a load and its use to
  // hide one chunk ahead (docs/kernel-choices.md#winograd-on-the-tensor-cores).
  // WG_PREFETCH2: the same in the fp32 build (a measurement).
  float d2[4 * WG_ROWS];
  WG_GREG gr2[G_PER];
#define WG_CHUNK(c0, D, GR)                                   \
  barrier(CLK_LOCAL_MEM_FENCE);                               \
  WG_TRANSFORM(D, GR)                                         \
  if ((c0) + 2 * CK < cend) WG_LOAD((c0) + 2 * CK, D, GR)     \
  barrier(CLK_LOCAL_MEM_FENCE);                               \
  WG_PRODUCTS
  WG_LOAD(cbeg, d, gr)
  if (cbeg + CK < cend) WG_LOAD(cbeg + CK, d2, gr2)  // the packed weights end at the last chunk
  for (int c0 = cbeg; c0 < cend; c0 += 2 * CK) {
    WG_CHUNK(c0, d, gr)
    if (c0 + CK < cend) {
      WG_CHUNK(c0 + CK, d2, gr2)
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);  // the last products read Us and Vs, which Ms reuses
#elif defined(WG_DB)
  // Two buffers: chunk k + 1 is transformed into one while chunk k is
  // multiplied from the other, with one barrier between chunks (the stores
  // and loads interleave with the products); chunk k + 2's loads are issued
  // right after.
  WG_LOAD(cbeg, d, gr)
  WG_TRANSFORM(d, gr)
  if (cbeg + CK < cend) WG_LOAD(cbeg + CK, d, gr)
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int c0 = cbeg, buf = 0; c0 < cend; c0 += CK, buf ^= 1) {
    Ur = Us + buf * WG_STAGE, Vr = Ur + 16 * CK * BM;
    Uw = Us + (buf ^ 1) * WG_STAGE, Vw = Uw + 16 * CK * BM;
    WG_PRODUCTS
    if (c0 + CK < cend) {
      WG_TRANSFORM(d, gr)
      if (c0 + 2 * CK < cend) WG_LOAD(c0 + 2 * CK, d, gr)
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
#else
  // One chunk in flight: its loads are issued before this chunk's products.
  // Diagnostic builds (wrong results, to time the rest): WG_DIAG_NO_TRANSFORM
  // stores nothing in local memory (the loaded values summed into one
  // register, so the loads stay), WG_DIAG_NO_BARRIER has no barriers in the loop.
#ifdef WG_DIAG_NO_TRANSFORM
#ifndef WG_PRE
#error "WG_DIAG_NO_TRANSFORM reads the transformed weights' float4s"
#endif
  float sink = 0.0f;
#undef WG_TRANSFORM
#define WG_TRANSFORM(D, GR) sink += D[0] + D[4 * WG_ROWS - 1] + GR[0].x + GR[G_PER - 1].w;
#endif
#ifdef WG_DIAG_NO_BARRIER
#define WG_LOOP_BARRIER
#else
#define WG_LOOP_BARRIER barrier(CLK_LOCAL_MEM_FENCE);
#endif
  WG_LOAD(cbeg, d, gr)
  for (int c0 = cbeg; c0 < cend; c0 += CK) {
    WG_TRANSFORM(d, gr)
    WG_LOOP_BARRIER
    if (c0 + CK < cend) WG_LOAD(c0 + CK, d, gr)
    WG_PRODUCTS
    WG_LOOP_BARRIER
  }
#ifdef WG_DIAG_NO_TRANSFORM
  acc[0][0] += sink;
#endif
#ifdef WG_DIAG_NO_BARRIER
  barrier(CLK_LOCAL_MEM_FENCE);  // the last products read Us and Vs, which Ms reuses
#endif
#endif
  // acc[i][j]: element e of output channel m0 + 4 tm + 4 TMN (i / 4) + i % 4,
  // tile t0 + 4 tt + 4 TTN (j / 4) + j % 4.
#ifdef POOL2
  const int PHW = PH * PW;
  __global float* yi = Y + yo + (size_t)img * OC * PHW;
#else
  const int OHW = OH * OW;
  __global float* yi = Y + yo + (size_t)img * OC * OHW;
#endif
#ifdef WG_MMA
#pragma unroll  // else acc[s][hf] is indexed at run time, and acc lives on the stack
#endif
  for (int hf = 0; hf < BM / 16; ++hf) {  // output channels 16 hf .. 16 hf + 15
#ifdef WG_MMA
    // Fragment register o of (i, j): channel 16 i + fg + 8 (o / 2), tile 8 j + 2 ft + o % 2.
#pragma unroll
    for (int i = 0; i < BM / 16; ++i) {
      if (i != hf) continue;
#pragma unroll
      for (int s = 0; s < 2; ++s)
#pragma unroll
        for (int j = 0; j < BT / 8; ++j)
#pragma unroll
          for (int o = 0; o < 4; ++o)
            Ms[((2 * warp + s) * 16 + fg + 8 * (o >> 1)) * BT + 8 * j + 2 * ft + (o & 1)] = acc[s][i][j][o];
    }
#else
#pragma unroll
    for (int ig = 0; ig < 2; ++ig) {
      const int row0 = 4 * tm + 4 * TMN * ig;
      if ((row0 >> 4) != hf) continue;
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        __local float4* row = (__local float4*)(Ms + (e * 16 + (row0 & 15) + r) * BT);
        row[tt] = (float4)(acc[4 * ig + r][0], acc[4 * ig + r][1], acc[4 * ig + r][2], acc[4 * ig + r][3]);
        row[TTN + tt] = (float4)(acc[4 * ig + r][4], acc[4 * ig + r][5], acc[4 * ig + r][6], acc[4 * ig + r][7]);
      }
    }
#endif
    barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
    for (int q = 0; q < 16 * BT / NT; ++q) {
      const int p = tid + NT * q, ml = p / BT, t = p % BT;
      const int oc = m0 + 16 * hf + ml, tile = t0 + t;
      if (oc < OC && tile < T) {
        float mv[16];
#pragma unroll
        for (int k = 0; k < 16; ++k) mv[k] = Ms[(k * 16 + ml) * BT + t];
        // Y = A^T M A, A^T = [1 1 1 0; 0 1 -1 -1]
        float r0[4], r1[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          r0[j] = mv[j] + mv[4 + j] + mv[8 + j];
          r1[j] = mv[4 + j] - mv[8 + j] - mv[12 + j];
        }
        float y[4] = {r0[0] + r0[1] + r0[2], r0[1] - r0[2] - r0[3], r1[0] + r1[1] + r1[2], r1[1] - r1[2] - r1[3]};
        const int oth = tile / TW, otw = tile - oth * TW;
#ifdef SPLITK
        const float bias = has_bias && slice == 0 ? Bias[bo + oc] : 0.0f;
#else
        const float bias = has_bias ? Bias[bo + oc] : 0.0f;
#endif
#ifdef POOL2
        if (oth < PH && otw < PW) {
          const int pi = oc * PHW + oth * PW + otw;
          float best = -INFINITY;  // positions past the conv output (ceil_mode) never win
#pragma unroll
          for (int k = 0; k < 4; ++k)
            if (2 * oth + (k >> 1) < OH && 2 * otw + (k & 1) < OW) best = fmax(best, EPI(y[k] + bias, img * OC * PHW + pi));
          Y[yo + YI(img * OC * PHW + pi)] = best;
        }
#else
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          const int oh = 2 * oth + (k >> 1), ow = 2 * otw + (k & 1);
          if (oh < OH && ow < OW) {
            const int o = oc * OHW + oh * OW + ow;
#ifdef SPLITK
            split_add(yi + o, y[k] + bias);
#else
            Y[yo + YI(img * OC * OHW + o)] = EPI(y[k] + bias, img * OC * OHW + o);
#endif
          }
        }
#endif
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}
