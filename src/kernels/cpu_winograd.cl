// Winograd convolution F(WM x WM, 3x3) for CPU OpenCL devices (PoCL): 3x3,
// stride 1, dilation 1, one group; lower/opencl_cpu/winograd.cpp lowers onto
// it where it pays. Built with -DWM=2|4 (output tile), -DPB=8|16 (tiles of
// one tile row per work-group, one per vector lane), -DOCB=4|8|16 (output
// channels per register block), -DOCW (output channels per work-group, a
// multiple of 16) and -DCC (input channels per chunk).
//
// One work-group of one work-item computes PB tiles x OCW output channels,
// all in __local memory (ordinary cached memory on PoCL), so no tensor
// beyond Y is written: per chunk of CC input channels it transforms the
// input (V = B^T d B, vectorized over the PB tiles) into V, then per
// transform point xi adds the chunk's products U[xi] V[xi] into M (OCB x
// PB register blocks, the weight a broadcast operand, like cpu_conv.cl's
// direct kernel but with (WM+2)^2 / (9 WM^2) of its multiplications); last
// the output transform A^T M A, bias and fused epilogue, stored as whole
// vectors of output rows (STORE_BLOCK).
//
// U is the weight transform G g G^T, done once when the node is prepared:
// U[((xi * OCP/16 + oc/16) * C + c) * 16 + oc % 16], OCP = OC rounded up to
// 16 (zeros beyond OC).
#ifndef WM
#define WM 4
#endif
#ifndef OCW
#define OCW 64
#endif
#ifndef CC
#define CC 32
#endif
#define ALPHA (WM + 2)
#define XI (ALPHA * ALPHA)
#define SPAN (PB * WM + 2)          // input columns under a tile block's row
#define NQ ((SPAN + PB - 1) / PB)   // ... in PB-wide vectors
#define SPANP ((NQ + WM) * PB)      // room for the strided reads' vector loads

// A whole vector into local memory at a multiple of PB floats: one aligned
// store (vstoreN may be split into pieces).
#define LSTORE(v, p) (*(__local VF*)(p) = (v))

// Vector lane shuffles (clang's builtin, which PoCL's compiler is; others
// build the vectors element by element).
#if defined(__clang__)
#define SHUF(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#if PB == 16
#define ZIP_LO(a, b) SHUF(a, b, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23)
#define ZIP_HI(a, b) SHUF(a, b, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31)
#else
#define ZIP_LO(a, b) SHUF(a, b, 0, 8, 1, 9, 2, 10, 3, 11)
#define ZIP_HI(a, b) SHUF(a, b, 4, 12, 5, 13, 6, 14, 7, 15)
#endif
#endif

// Lane j = p[WM * j] (tile j's column in a transformed row).
inline VF lanes_strided(__local const float* p) {
#if defined(__clang__)
  const float16 a = vload16(0, p), b = vload16(0, p + 16);
#if PB == 16 && WM == 2
  return SHUF(a, b, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
#elif PB == 16 && WM == 4
  const float16 c = vload16(0, p + 32), d = vload16(0, p + 48);
  const float8 lo = SHUF(a, b, 0, 4, 8, 12, 16, 20, 24, 28), hi = SHUF(c, d, 0, 4, 8, 12, 16, 20, 24, 28);
  return SHUF(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
#elif PB == 8 && WM == 2
  return SHUF(a, b, 0, 2, 4, 6, 8, 10, 12, 14);
#else
  return SHUF(a, b, 0, 4, 8, 12, 16, 20, 24, 28);
#endif
#else
  float t[PB];
  for (int j = 0; j < PB; ++j) t[j] = p[WM * j];
  return VLOAD(0, t);
#endif
}

// Output columns: lane l of vector q is o[l % WM] at lane (q PB + l) / WM.
inline void interleave(const VF* o, VF* out) {
#if defined(__clang__)
#if WM == 2
  out[0] = ZIP_LO(o[0], o[1]), out[1] = ZIP_HI(o[0], o[1]);
#else
  const VF ac_lo = ZIP_LO(o[0], o[2]), ac_hi = ZIP_HI(o[0], o[2]);
  const VF bd_lo = ZIP_LO(o[1], o[3]), bd_hi = ZIP_HI(o[1], o[3]);
  out[0] = ZIP_LO(ac_lo, bd_lo), out[1] = ZIP_HI(ac_lo, bd_lo);
  out[2] = ZIP_LO(ac_hi, bd_hi), out[3] = ZIP_HI(ac_hi, bd_hi);
#endif
#else
  float s[WM][PB], t[WM * PB];
  for (int x = 0; x < WM; ++x) VSTORE(o[x], 0, s[x]);
  for (int e = 0; e < WM * PB; ++e) t[e] = s[e % WM][e / WM];
  for (int q = 0; q < WM; ++q) out[q] = VLOAD(q, t);
#endif
}

// The 1-D transforms: B^T d (ALPHA -> ALPHA) and A^T m (ALPHA -> WM), on
// vectors; written out so no multiplication by 0 or 1 is left.
inline void input_1d(const VF* d, VF* v) {
#if WM == 2
  v[0] = d[0] - d[2];
  v[1] = d[1] + d[2];
  v[2] = d[2] - d[1];
  v[3] = d[1] - d[3];
#else
  v[0] = fma((VF)(4.0f), d[0], fma((VF)(-5.0f), d[2], d[4]));
  v[1] = fma((VF)(-4.0f), d[1] + d[2], d[3] + d[4]);
  v[2] = fma((VF)(4.0f), d[1] - d[2], d[4] - d[3]);
  v[3] = fma((VF)(2.0f), d[3] - d[1], d[4] - d[2]);
  v[4] = fma((VF)(2.0f), d[1] - d[3], d[4] - d[2]);
  v[5] = fma((VF)(4.0f), d[1], fma((VF)(-5.0f), d[3], d[5]));
#endif
}

inline void output_1d(const VF* m, VF* y) {
#if WM == 2
  y[0] = m[0] + m[1] + m[2];
  y[1] = m[1] - m[2] - m[3];
#else
  const VF p12 = m[1] + m[2], m12 = m[1] - m[2], p34 = m[3] + m[4], m34 = m[3] - m[4];
  y[0] = m[0] + p12 + p34;
  y[1] = fma((VF)(2.0f), m34, m12);
  y[2] = fma((VF)(4.0f), p34, p12);
  y[3] = fma((VF)(8.0f), m34, m12) + m[5];
#endif
}

// Elements [w0, w0 + PB) of input row ih of channel plane xc, zero outside
// the image (padding).
inline VF input_vector(__global const real_t* xc, int H, int W, int row, int ih, int w0) {
  if (ih < 0 || ih >= H) return (VF)(0.0f);
  __global const real_t* r = xc + ih * row;
  if (w0 >= 0 && w0 + PB <= W) return LDV(PB, r + w0);
  float t[PB];
  for (int j = 0; j < PB; ++j) t[j] = w0 + j >= 0 && w0 + j < W ? LD(r, w0 + j) : 0.0f;
  return VLOAD(0, t);
}

// get_global_id(0): tile row * blocks per row + block of PB tiles in it;
// (1): group of OCW output channels; (2): image.
__kernel __attribute__((reqd_work_group_size(1, 1, 1))) void winograd_cpu(
    __global const real_t* X, int xo, __global const real_t* U, __global const real_t* Bias, int bo, __global real_t* Y,
    int yo, int has_bias, int C, int H, int W, int OC, int OH, int OW, int ph, int pw EPI_PARAMS YWIN_PARAMS XWIN_PARAMS) {
  __local float V[XI * CC * PB] __attribute__((aligned(64)));   // [xi][c][tile]: the chunk's transformed input
  __local float M[XI * OCW * PB] __attribute__((aligned(64)));  // [xi][oc][tile]: products summed over channels
  __local float T[ALPHA * SPANP] __attribute__((aligned(64)));  // [row][column]: one channel's B^T d over the tile row
  const int TH = (OH + WM - 1) / WM, TW = (OW + WM - 1) / WM, NB = (TW + PB - 1) / PB;
  const int th = get_global_id(0) / NB, tb = get_global_id(0) - th * NB;
  const int oc0 = get_global_id(1) * OCW, img = get_global_id(2);
  if (th >= TH || oc0 >= OC) return;
  const int OCP = (OC + 15) & ~15, ocn = min(OCW, OCP - oc0);
  const int ih0 = th * WM - ph, iw0 = tb * PB * WM - pw;
  __global const real_t* x = X + xo + img * C * XPLANE(H, W);

  for (int c0 = 0; c0 < C; c0 += CC) {
    const int cn = min(CC, C - c0);
    for (int c = 0; c < cn; ++c) {
      __global const real_t* xc = x + (c0 + c) * XPLANE(H, W);
      // Columns first: T = B^T d on whole vectors of the rows' span.
      for (int q = 0; q < NQ; ++q) {
        VF d[ALPHA], t[ALPHA];
#pragma unroll
        for (int k = 0; k < ALPHA; ++k) d[k] = input_vector(xc, H, W, XROW(W), ih0 + k, iw0 + q * PB);
        input_1d(d, t);
#pragma unroll
        for (int i = 0; i < ALPHA; ++i) LSTORE(t[i], T + i * SPANP + q * PB);
      }
      // Then rows: V = T B, each tile's ALPHA columns gathered into lanes.
      for (int i = 0; i < ALPHA; ++i) {
        VF g[ALPHA], v[ALPHA];
#pragma unroll
        for (int k = 0; k < ALPHA; ++k) g[k] = lanes_strided(T + i * SPANP + k);
        input_1d(g, v);
#pragma unroll
        for (int j = 0; j < ALPHA; ++j) LSTORE(v[j], V + ((i * ALPHA + j) * CC + c) * PB);
      }
    }
    // M[xi] += U[xi] V[xi] over the chunk.
    for (int xi = 0; xi < XI; ++xi) {
      __local const float* vx = V + xi * CC * PB;
      for (int ob = 0; ob < ocn; ob += OCB) {
        const int oc = oc0 + ob;
        __global const real_t* u = U + ((xi * (OCP / 16) + oc / 16) * C + c0) * 16 + (oc & 15);
        __local float* mx = M + (xi * OCW + ob) * PB;
        VF acc[OCB];
#pragma unroll
        for (int o = 0; o < OCB; ++o) acc[o] = c0 == 0 ? (VF)(0.0f) : VLOAD(o, mx);
        for (int c = 0; c < cn; ++c) {
          const VF v = VLOAD(c, vx);
#pragma unroll
          for (int o = 0; o < OCB; ++o) acc[o] = fma((VF)(LD(u, c * 16 + o)), v, acc[o]);
        }
#pragma unroll
        for (int o = 0; o < OCB; ++o) LSTORE(acc[o], mx + o * PB);
      }
    }
  }

  // Y = A^T M A per output channel, stored row by row.
  const int ow0 = tb * PB * WM;
  for (int o = 0; o < OCW && oc0 + o < OC; ++o) {
    const int oc = oc0 + o;
    VF s[WM][ALPHA];  // A^T M: rows of the tiles' output, columns still transformed
    for (int j = 0; j < ALPHA; ++j) {
      VF m[ALPHA], y[WM];
#pragma unroll
      for (int i = 0; i < ALPHA; ++i) m[i] = VLOAD(0, M + ((i * ALPHA + j) * OCW + o) * PB);
      output_1d(m, y);
#pragma unroll
      for (int r = 0; r < WM; ++r) s[r][j] = y[r];
    }
    const VF bias = (VF)(has_bias ? LD(Bias, bo + oc) : 0.0f);
    for (int r = 0; r < WM; ++r) {
      const int oh = th * WM + r;
      if (oh >= OH) break;
      VF y[WM], out[WM];
      output_1d(s[r], y);
      interleave(y, out);
      const int row = ((img * OC + oc) * OH + oh) * OW;
#pragma unroll
      for (int q = 0; q < WM; ++q) {
        const int col = ow0 + q * PB;
        if (col < OW) STORE_BLOCK(row + col, out[q] + bias, OW - col);
      }
    }
  }
}
