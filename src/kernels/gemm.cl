// Local-memory tiled matrix products: Y = alpha * A(MxK) B(KxN) + beta * C.
// A work-group of 16x16 work-items computes a TILE x TILE block of Y, each
// work-item a WPT x WPT block (rows ly+16i, columns lx+16j: coalesced
// stores). K advances in slices of TK staged in local memory. The program
// is built with WPT=4 (64x64 tiles) and, for problems too small to fill the
// device with those, WPT=2 (32x32). The loaders are macros so convolutions
// read their operands straight from the image (implicit im2col).
#ifndef WPT
#define WPT 4
#endif
#define TILE (16 * WPT)
#define TK 16

// +1 column: stores into the tiles hit different banks.
#define GEMM_LOCALS                                                   \
  __local float As[TK][TILE + 1];                                     \
  __local float Bs[TK][TILE + 1];                                     \
  const int lx = get_local_id(0), ly = get_local_id(1);               \
  const int tid = ly * 16 + lx;                                       \
  const int n0 = get_group_id(0) * TILE, m0 = get_group_id(1) * TILE; \
  float acc[WPT][WPT];                                                \
  for (int i = 0; i < WPT; ++i)                                       \
    for (int j = 0; j < WPT; ++j) acc[i][j] = 0.0f;

// a_kfast / b_nfast pick which tile coordinate neighbouring work-items load
// (the one contiguous in memory).
#define GEMM_MAIN_LOOP(LOAD_A, LOAD_B, a_kfast, b_nfast)                         \
  for (int k0 = 0; k0 < K; k0 += TK) {                                           \
    for (int r = 0; r < WPT; ++r) {                                              \
      int e = tid + r * 256;                                                     \
      int m = (a_kfast) ? e / TK : e % TILE, k = (a_kfast) ? e % TK : e / TILE;  \
      int gm = m0 + m, gk = k0 + k;                                              \
      As[k][m] = (gm < M && gk < K) ? (LOAD_A(gm, gk)) : 0.0f;                   \
      int kb = (b_nfast) ? e / TILE : e % TK, nb = (b_nfast) ? e % TILE : e / TK; \
      int gkb = k0 + kb, gn = n0 + nb;                                           \
      Bs[kb][nb] = (gkb < K && gn < N) ? (LOAD_B(gkb, gn)) : 0.0f;               \
    }                                                                            \
    barrier(CLK_LOCAL_MEM_FENCE);                                                \
    for (int k = 0; k < TK; ++k) {                                               \
      float a[WPT], bv[WPT];                                                     \
      for (int i = 0; i < WPT; ++i) a[i] = As[k][ly + 16 * i];                   \
      for (int j = 0; j < WPT; ++j) bv[j] = Bs[k][lx + 16 * j];                  \
      for (int i = 0; i < WPT; ++i)                                              \
        for (int j = 0; j < WPT; ++j) acc[i][j] += a[i] * bv[j];                 \
    }                                                                            \
    barrier(CLK_LOCAL_MEM_FENCE);                                                \
  }

// Batched over get_group_id(2), decomposed by `batch` into per-operand batch
// strides (0 where an operand is broadcast). Element (m,k) of A is at
// A[ao + batch offset + m*a_sm + k*a_sk]; likewise B and C. Y is contiguous
// MxN per batch. has_c = 0 ignores C.
__kernel __attribute__((reqd_work_group_size(16, 16, 1)))
void gemm(__global const float* A, int ao, __global const float* B, int bo, __global const float* C, int co,
          __global float* Y, int yo, int M, int N, int K, int a_sm, int a_sk, int b_sk, int b_sn, int c_sm,
          int c_sn, int has_c, float alpha, float beta, Dims batch, Dims a_sb, Dims b_sb, Dims c_sb) {
  GEMM_LOCALS
  const int z = get_group_id(2);
  A += ao + strided_offset(z, batch, a_sb);
  B += bo + strided_offset(z, batch, b_sb);
  C += co + strided_offset(z, batch, c_sb);
  Y += yo + z * M * N;
#define GEMM_A(m, k) A[(m) * a_sm + (k) * a_sk]
#define GEMM_B(k, n) B[(k) * b_sk + (n) * b_sn]
  GEMM_MAIN_LOOP(GEMM_A, GEMM_B, a_sk == 1, b_sn == 1)
  for (int i = 0; i < WPT; ++i) {
    int m = m0 + ly + 16 * i;
    if (m >= M) continue;
    for (int j = 0; j < WPT; ++j) {
      int n = n0 + lx + 16 * j;
      if (n >= N) continue;
      float v = alpha * acc[i][j];
      if (has_c) v += beta * C[m * c_sm + n * c_sn];
      Y[m * N + n] = v;
    }
  }
}

// Input pixel under tap k = (ic, kh, kw) of output pixel p = (oh, ow).
inline float conv_tap(__global const float* x, int k, int p, int H, int W, int OW, int KW, int KHW, int sh,
                      int sw, int ph, int pw, int dh, int dw) {
  int ic = k / KHW, r = k - ic * KHW, kh = r / KW, kw = r - kh * KW;
  int oh = p / OW, ow = p - oh * OW;
  int ih = oh * sh - ph + kh * dh, iw = ow * sw - pw + kw * dw;
  return (ih >= 0 && ih < H && iw >= 0 && iw < W) ? x[(ic * H + ih) * W + iw] : 0.0f;
}

// 2D convolution as an implicit GEMM per (image, group): M = output channels
// of the group, N = output pixels, K = input channels of the group x KH x KW.
// A is the weight [OC, C/groups, KH, KW] read as rows; B(k, p) is the input
// pixel under tap k of output pixel p (0 in the padding), never stored.
__kernel __attribute__((reqd_work_group_size(16, 16, 1)))
void conv2d_gemm(__global const float* X, int xo, __global const float* Wt, int wo, __global const float* Bias,
                 int bo, __global float* Y, int yo, int has_bias, int C, int H, int W, int OC, int OH, int OW,
                 int KH, int KW, int sh, int sw, int ph, int pw, int dh, int dw, int groups) {
  GEMM_LOCALS
  const int z = get_group_id(2), img = z / groups, g = z % groups;
  const int ICg = C / groups, OCg = OC / groups;
  const int M = OCg, N = OH * OW, K = ICg * KH * KW, KHW = KH * KW;
  __global const float* wg = Wt + wo + g * OCg * K;
  __global const float* xg = X + xo + (img * C + g * ICg) * H * W;
#define CONV_A(m, k) wg[(m) * K + (k)]
#define CONV_B(k, p) conv_tap(xg, k, p, H, W, OW, KW, KHW, sh, sw, ph, pw, dh, dw)
  GEMM_MAIN_LOOP(CONV_A, CONV_B, 1, 1)
  __global float* yg = Y + yo + (img * OC + g * OCg) * N;
  for (int i = 0; i < WPT; ++i) {
    int m = m0 + ly + 16 * i;
    if (m >= M) continue;
    float bias = has_bias ? Bias[bo + g * OCg + m] : 0.0f;
    for (int j = 0; j < WPT; ++j) {
      int p = n0 + lx + 16 * j;
      if (p < N) yg[m * N + p] = acc[i][j] + bias;
    }
  }
}

// Transposed convolution whose taps tile the output exactly (stride ==
// kernel, no padding or dilation): every output pixel gets one tap, so it is
// a GEMM per (image, group) with M = (oc, kh, kw), N = input pixels, K =
// input channels of the group, and a scattering store.
__kernel __attribute__((reqd_work_group_size(16, 16, 1)))
void conv_transpose2d_gemm(__global const float* X, int xo, __global const float* Wt, int wo,
                           __global const float* Bias, int bo, __global float* Y, int yo, int has_bias, int C,
                           int H, int W, int OC, int KH, int KW, int groups) {
  GEMM_LOCALS
  const int z = get_group_id(2), img = z / groups, g = z % groups;
  const int ICg = C / groups, OCg = OC / groups, KHW = KH * KW;
  const int M = OCg * KHW, N = H * W, K = ICg, OW = W * KW, OHW = H * KH * OW;
  __global const float* wg = Wt + wo + g * ICg * M;  // weight [C, OCg, KH, KW]: row k is (oc, kh, kw)
  __global const float* xg = X + xo + (img * C + g * ICg) * N;
#define CT_A(m, k) wg[(k) * M + (m)]
#define CT_B(k, n) xg[(k) * N + (n)]
  GEMM_MAIN_LOOP(CT_A, CT_B, 0, 1)
  __global float* yg = Y + yo + (img * OC + g * OCg) * OHW;
  for (int i = 0; i < WPT; ++i) {
    int m = m0 + ly + 16 * i;
    if (m >= M) continue;
    int oc = m / KHW, r = m - oc * KHW, kh = r / KW, kw = r - kh * KW;
    float bias = has_bias ? Bias[bo + g * OCg + oc] : 0.0f;
    for (int j = 0; j < WPT; ++j) {
      int n = n0 + lx + 16 * j;
      if (n >= N) continue;
      int ih = n / W, iw = n - ih * W;
      yg[oc * OHW + (ih * KH + kh) * OW + iw * KW + kw] = acc[i][j] + bias;
    }
  }
}

// Matrix-vector products (GEMMs with M or N = 1, which one tile would leave
// mostly idle): a work-group of 64 reduces each output's dot product of
// length K. Output o = sum_k Mat[o*m_so + k*m_sk] * Vec[k*v_sk]; batched like
// gemm; Y contiguous, O outputs per batch.
#define GV 64
__kernel __attribute__((reqd_work_group_size(GV, 1, 1)))
void gemv(__global const float* Mat, int mo, __global const float* Vec, int vo, __global const float* C, int co,
          __global float* Y, int yo, int O, int K, int m_so, int m_sk, int v_sk, int c_so, int has_c, float alpha,
          float beta, Dims batch, Dims m_sb, Dims v_sb, Dims c_sb) {
  __local float s[GV];
  const int o = get_group_id(0), z = get_group_id(1), l = get_local_id(0);
  __global const float* row = Mat + mo + strided_offset(z, batch, m_sb) + o * m_so;
  __global const float* v = Vec + vo + strided_offset(z, batch, v_sb);
  float a = 0.0f;
  for (int k = l; k < K; k += GV) a += row[k * m_sk] * v[k * v_sk];
  s[l] = a;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int h = GV / 2; h > 0; h >>= 1) {
    if (l < h) s[l] += s[l + h];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (l == 0) {
    float y = alpha * s[0];
    if (has_c) y += beta * C[co + strided_offset(z, batch, c_sb) + o * c_so];
    Y[yo + z * O + o] = y;
  }
}
