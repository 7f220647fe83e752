// gemm_layer_norm: FusedMatMulLayerNorm (docs/fused-ops.md), the rows of
// LayerNormalization(EPI(A B)) over the last axis, scaled by G and shifted
// by Bn, in one launch. A post-norm transformer's output projection and
// second MLP product (x + W a + b, then LayerNorm) run here instead of a
// product and a LayerNorm kernel (docs/kernel-choices.md#products-with-their-layernorm).
//
// A work-group of 256 work-items owns GN_ROWS whole rows of Y, so that a
// row's statistics are the group's: GN_KS slices of 64 work-items walk
// interleaved quads of K (4 columns of A, 4 rows of B), each work-item
// GN_NQ quads of columns (4q .. 4q + 3, q = c + 64 t), A's rows staged in
// local memory GN_KC columns at a time (zeros past M and K). B is read
// straight from memory: a quad step is 4 float4s of B for 64 FMAs, and a
// chunk's 8 steps unrolled keep 32 of them in flight (one float per step
// and work-item had left the loads' latency uncovered: BERT-mini's pairs
// 48-58 us against 15-30 for the product and LayerNorm apart, H200). The
// slices' sums meet in local memory; every work-item then applies the
// epilogue to its columns, and the row's mean, then the variance of the
// centred values (norm.cl's two passes), are sums over the group. Every
// read of an epilogue operand comes before the group's first store, and a
// group reads and writes its own rows only, so Y may share storage with a
// residual input.
//
// How B is read (lower/fused.cpp): GN_B4N (rows of B contiguous, N % 4 ==
// 0), GN_B4K (transB: B's rows are Y's columns, K % 4 == 0), else element
// by element. Rows of B past K and columns past N are read clamped into B
// (A's zeros and the stores leave them out).
#ifndef EPI
#define EPI(v, i) (v)
#define EPI_PARAMS
#endif
#define GN_WI 256
#define GN_KS 4            // slices of K
#define GN_KC 128          // A's columns staged at a time
#define GN_NP (256 * GN_NQ)  // columns a group holds (N <= GN_NP)
#if GN_ROWS * GN_KC % GN_WI
#error "A's staged rows are whole loads of the work-group"
#endif

// The four rows k .. k + 3 of B at columns 4q .. 4q + 3, as b0 .. b3
// (bi: row k + i).
#if defined(GN_B4N)
#define GN_LOAD_B(q, k, b0, b1, b2, b3)                                                        \
  {                                                                                            \
    const int col = 4 * (q) < N ? 4 * (q) : 0;                                                 \
    b0 = LDV(4, B + min((k), K - 1) * b_sk + col);                                             \
    b1 = LDV(4, B + min((k) + 1, K - 1) * b_sk + col);                                         \
    b2 = LDV(4, B + min((k) + 2, K - 1) * b_sk + col);                                         \
    b3 = LDV(4, B + min((k) + 3, K - 1) * b_sk + col);                                         \
  }
#elif defined(GN_B4K)
#define GN_LOAD_B(q, k, b0, b1, b2, b3)                                                        \
  {                                                                                            \
    const float4 c0 = LDV(4, B + min(4 * (q), N - 1) * b_sn + (k));                            \
    const float4 c1 = LDV(4, B + min(4 * (q) + 1, N - 1) * b_sn + (k));                        \
    const float4 c2 = LDV(4, B + min(4 * (q) + 2, N - 1) * b_sn + (k));                        \
    const float4 c3 = LDV(4, B + min(4 * (q) + 3, N - 1) * b_sn + (k));                        \
    b0 = (float4)(c0.x, c1.x, c2.x, c3.x);                                                     \
    b1 = (float4)(c0.y, c1.y, c2.y, c3.y);                                                     \
    b2 = (float4)(c0.z, c1.z, c2.z, c3.z);                                                     \
    b3 = (float4)(c0.w, c1.w, c2.w, c3.w);                                                     \
  }
#else
inline float gn_b(__global const real_t* B, int k, int n, int K, int N, int b_sk, int b_sn) {
  return LD(B, min(k, K - 1) * b_sk + min(n, N - 1) * b_sn);
}
#define GN_LOAD_B(q, k, b0, b1, b2, b3)                                                        \
  {                                                                                            \
    const int n0 = 4 * (q);                                                                    \
    b0 = (float4)(gn_b(B, (k), n0, K, N, b_sk, b_sn), gn_b(B, (k), n0 + 1, K, N, b_sk, b_sn),  \
                  gn_b(B, (k), n0 + 2, K, N, b_sk, b_sn), gn_b(B, (k), n0 + 3, K, N, b_sk, b_sn)); \
    b1 = (float4)(gn_b(B, (k) + 1, n0, K, N, b_sk, b_sn), gn_b(B, (k) + 1, n0 + 1, K, N, b_sk, b_sn), \
                  gn_b(B, (k) + 1, n0 + 2, K, N, b_sk, b_sn), gn_b(B, (k) + 1, n0 + 3, K, N, b_sk, b_sn)); \
    b2 = (float4)(gn_b(B, (k) + 2, n0, K, N, b_sk, b_sn), gn_b(B, (k) + 2, n0 + 1, K, N, b_sk, b_sn), \
                  gn_b(B, (k) + 2, n0 + 2, K, N, b_sk, b_sn), gn_b(B, (k) + 2, n0 + 3, K, N, b_sk, b_sn)); \
    b3 = (float4)(gn_b(B, (k) + 3, n0, K, N, b_sk, b_sn), gn_b(B, (k) + 3, n0 + 1, K, N, b_sk, b_sn), \
                  gn_b(B, (k) + 3, n0 + 2, K, N, b_sk, b_sn), gn_b(B, (k) + 3, n0 + 3, K, N, b_sk, b_sn)); \
  }
#endif

// Quad kq of the staged chunk (columns 4kq .. 4kq + 3 of A's rows, rows
// k0 + 4kq .. of B) into acc.
#define GN_QUAD(kq)                                                                            \
  {                                                                                            \
    float4 a[GN_ROWS];                                                                         \
    for (int r = 0; r < GN_ROWS; ++r) a[r] = vload4(0, la + r * GN_KC + 4 * (kq));            \
    for (int t = 0; t < GN_NQ; ++t) {                                                          \
      float4 b0, b1, b2, b3;                                                                   \
      GN_LOAD_B(c + 64 * t, k0 + 4 * (kq), b0, b1, b2, b3)                                     \
      for (int r = 0; r < GN_ROWS; ++r)                                                        \
        acc[r][t] = fma(a[r].x, b0, fma(a[r].y, b1, fma(a[r].z, b2, fma(a[r].w, b3, acc[r][t])))); \
    }                                                                                          \
  }

// The sums over the work-group of each row's v[r] (GN_ROWS rows at once).
inline void gn_row_sums(__local float* s, float* v) {
  const int l = get_local_id(0);
  for (int r = 0; r < GN_ROWS; ++r) s[r * GN_WI + l] = v[r];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int h = GN_WI / 2; h > 0; h >>= 1) {
    if (l < h)
      for (int r = 0; r < GN_ROWS; ++r) s[r * GN_WI + l] += s[r * GN_WI + l + h];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  for (int r = 0; r < GN_ROWS; ++r) v[r] = s[r * GN_WI];
  barrier(CLK_LOCAL_MEM_FENCE);
}

__kernel __attribute__((reqd_work_group_size(GN_WI, 1, 1)))
void gemm_layer_norm(__global const real_t* A, __global const real_t* B, __global const real_t* C, __global real_t* Y,
                     GemmParams gp, __global const real_t* G, int go, __global const real_t* Bn, int bno, int has_bn,
                     float eps EPI_PARAMS) {
  GEMM_PARAMS(gp)
  __local float la[GN_ROWS * GN_KC];
  __local float parts[GN_KS * GN_ROWS * GN_NP];  // each slice's sums; then the row sums' tree
  const int l = get_local_id(0), s = l / 64, c = l % 64, m0 = get_group_id(0) * GN_ROWS;
  A += ao;
  B += bo;
  C += co;
  float4 acc[GN_ROWS][GN_NQ];
  for (int r = 0; r < GN_ROWS; ++r)
    for (int t = 0; t < GN_NQ; ++t) acc[r][t] = (float4)(0.0f);
  for (int k0 = 0; k0 < K; k0 += GN_KC) {
    for (int e = l; e < GN_ROWS * GN_KC; e += GN_WI) {
      const int r = e / GN_KC, k = k0 + e % GN_KC;
      la[e] = m0 + r < M && k < K ? LD(A, (m0 + r) * a_sm + k * a_sk) : 0.0f;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (k0 + GN_KC <= K) {
#pragma unroll
      for (int i = 0; i < GN_KC / 4 / GN_KS; ++i) GN_QUAD(s + GN_KS * i);
    } else {
      for (int kq = s; 4 * kq < K - k0; kq += GN_KS) GN_QUAD(kq);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  for (int r = 0; r < GN_ROWS; ++r)
    for (int t = 0; t < GN_NQ; ++t) vstore4(acc[r][t], 0, parts + (s * GN_ROWS + r) * GN_NP + 4 * (c + 64 * t));
  barrier(CLK_LOCAL_MEM_FENCE);
  // Work-item l: columns l + 256 j of each row, the slices' sums added.
  float v[GN_ROWS][GN_NQ], part[GN_ROWS];
  for (int r = 0; r < GN_ROWS; ++r) {
    const int m = m0 + r;
    part[r] = 0.0f;
    for (int j = 0; j < GN_NQ; ++j) {
      const int n = l + 256 * j;
      float x = 0.0f;
      for (int q = 0; q < GN_KS; ++q) x += parts[(q * GN_ROWS + r) * GN_NP + n];
      v[r][j] = 0.0f;
      if (m >= M || n >= N) continue;
      x *= alpha;
      if (has_c) x += beta * LD(C, m * c_sm + n * c_sn);
      v[r][j] = EPI(x, m * N + n);
      part[r] += v[r][j];
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);  // parts is the sums' tree from here
  gn_row_sums(parts, part);
  float mean[GN_ROWS];
  for (int r = 0; r < GN_ROWS; ++r) {
    mean[r] = part[r] / (float)N;
    part[r] = 0.0f;
    for (int j = 0; j < GN_NQ; ++j) {
      const float d = v[r][j] - mean[r];
      if (m0 + r < M && l + 256 * j < N) part[r] += d * d;
    }
  }
  gn_row_sums(parts, part);
  for (int r = 0; r < GN_ROWS; ++r) {
    const int m = m0 + r;
    if (m >= M) continue;
    const float inv = 1.0f / sqrt(part[r] / (float)N + eps);
    for (int j = 0; j < GN_NQ; ++j) {
      const int n = l + 256 * j;
      if (n >= N) continue;
      ST(Y, yo + m * N + n, (v[r][j] - mean[r]) * inv * LD(G, go + n) + (has_bn ? LD(Bn, bno + n) : 0.0f));
    }
  }
}
