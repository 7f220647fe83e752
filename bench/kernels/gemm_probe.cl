// A standalone GEMM for measurements (bench/kernels/gemm_probe.cpp), not
// texplan's kernel: Y[M,N] = A[M,K] B, B [K,N] or [N,K] (-DBT), no bias,
// no batch, N and K multiples of 4. KS groups of (TM/WM) x (TN/WN) = G
// work-items share a TM x TN tile over interleaved slices of K (TK deep,
// float4 global reads, rows and columns clamped into the operands); -DDB
// keeps two slices in local memory (one barrier a slice). gemm_kgroups.cl
// took its structure; it stays the bar their general kernel
// (strides, batches, epilogue hooks) is measured against, 5-30% slower on
// one H200 (docs/kernel-choices.md#a-standalone-gemm-faster-than-the-k-groups).
#ifndef TK
#define TK 16
#endif
#ifdef DB
#define NBUF 2
#else
#define NBUF 1
#endif
#define GX (TN / WN)
#define GY (TM / WM)
#define G (GX * GY)
#define LDA (TM + 4)
#define LDB (TN + 4)
#define SLICE (TK * (LDA + LDB))
#define LA (TM * TK / 4 / G)
#define LB (TN * TK / 4 / G)
#define PARTS ((KS / 2) * TM * TN)
#define TILES (KS * NBUF * SLICE)
#define LMEM (TILES > PARTS ? TILES : PARTS)
#define POSM(i) (4 * (ty + GY * ((i) / 4)) + (i) % 4)
#define POSN(j) (4 * (tx + GX * ((j) / 4)) + (j) % 4)
__kernel __attribute__((reqd_work_group_size(G, KS, 1)))
void probe(__global const float* A, __global const float* B, __global float* Y, int M, int N, int K) {
  __local float4 lm4[LMEM / 4];
  __local float* lm = (__local float*)lm4;
  const int l = get_local_id(0), g = get_local_id(1);
  const int tx = l % GX, ty = l / GX;
  const int n0 = get_group_id(0) * TN, m0 = get_group_id(1) * TM;
  __local float* mine = lm + g * NBUF * SLICE;
  // This item's float4s of slice 0 of group g: their K index and offset.
  int aoff[LA], ak[LA];
  for (int r = 0; r < LA; ++r) {
    int e = l + r * G, row = e / (TK / 4), k4 = e % (TK / 4);
    ak[r] = 4 * k4 + g * TK;
    aoff[r] = min(m0 + row, M - 1) * K + ak[r];
  }
  int boff[LB], bk[LB];
  for (int r = 0; r < LB; ++r) {
    int e = l + r * G;
#ifdef BT
    int col = e / (TK / 4), k4 = e % (TK / 4);
    bk[r] = 4 * k4 + g * TK;
    boff[r] = min(n0 + col, N - 1) * K + bk[r];
#else
    int kk = e / (TN / 4), n4 = e % (TN / 4);
    bk[r] = kk + g * TK;
    boff[r] = bk[r] * N + min(n0 + 4 * n4, N - 4);
#endif
  }
  float4 ra[LA], rb[LB];
#define LOAD(kb)                                                                               \
  for (int r = 0; r < LA; ++r) ra[r] = ak[r] + (kb) < K ? vload4(0, A + aoff[r] + (kb)) : (float4)(0.0f); \
  for (int r = 0; r < LB; ++r) {                                                                 \
    BLOAD(r, kb)                                                                                 \
  }
#ifdef BT
#define BLOAD(r, kb) rb[r] = bk[r] + (kb) < K ? vload4(0, B + boff[r] + (kb)) : (float4)(0.0f);
#else
#define BLOAD(r, kb) rb[r] = bk[r] + (kb) < K ? vload4(0, B + boff[r] + (kb) * N) : (float4)(0.0f);
#endif
  float acc[WM][WN];
#pragma unroll
  for (int i = 0; i < WM; ++i)
#pragma unroll
    for (int j = 0; j < WN; ++j) acc[i][j] = 0.0f;
  const int step = KS * TK;
  const int iters = (K + step - 1) / step;
  LOAD(0)
  for (int it = 0; it < iters; ++it) {
    __local float* As = mine + (NBUF == 2 ? (it & 1) * SLICE : 0);
    __local float* Bs = As + TK * LDA;
    for (int r = 0; r < LA; ++r) {
      int e = l + r * G, row = e / (TK / 4), k4 = e % (TK / 4);
      As[(4 * k4 + 0) * LDA + row] = ra[r].x;
      As[(4 * k4 + 1) * LDA + row] = ra[r].y;
      As[(4 * k4 + 2) * LDA + row] = ra[r].z;
      As[(4 * k4 + 3) * LDA + row] = ra[r].w;
    }
    for (int r = 0; r < LB; ++r) {
      int e = l + r * G;
#ifdef BT
      int col = e / (TK / 4), k4 = e % (TK / 4);
      Bs[(4 * k4 + 0) * LDB + col] = rb[r].x;
      Bs[(4 * k4 + 1) * LDB + col] = rb[r].y;
      Bs[(4 * k4 + 2) * LDB + col] = rb[r].z;
      Bs[(4 * k4 + 3) * LDB + col] = rb[r].w;
#else
      int kk = e / (TN / 4), n4 = e % (TN / 4);
      vstore4(rb[r], 0, Bs + kk * LDB + 4 * n4);
#endif
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (it + 1 < iters) { LOAD((it + 1) * step) }
#pragma unroll
    for (int k = 0; k < TK; ++k) {
      float a[WM], b[WN];
      __local const float4* ak4 = (__local const float4*)(As + k * LDA);
      __local const float4* bk4 = (__local const float4*)(Bs + k * LDB);
#pragma unroll
      for (int q = 0; q < WM / 4; ++q) { float4 v = ak4[ty + GY * q]; a[4*q] = v.x; a[4*q+1] = v.y; a[4*q+2] = v.z; a[4*q+3] = v.w; }
#pragma unroll
      for (int q = 0; q < WN / 4; ++q) { float4 v = bk4[tx + GX * q]; b[4*q] = v.x; b[4*q+1] = v.y; b[4*q+2] = v.z; b[4*q+3] = v.w; }
#pragma unroll
      for (int i = 0; i < WM; ++i)
#pragma unroll
        for (int j = 0; j < WN; ++j) acc[i][j] = fma(a[i], b[j], acc[i][j]);
    }
#ifndef DB
    barrier(CLK_LOCAL_MEM_FENCE);
#endif
  }
#if KS > 1
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int h = KS / 2; h >= 1; h /= 2) {
    __local float* part = lm + (g % h) * TM * TN;
    if (g >= h && g < 2 * h) {
#pragma unroll
      for (int i = 0; i < WM; ++i)
#pragma unroll
        for (int j = 0; j < WN; ++j) part[POSM(i) * TN + POSN(j)] = acc[i][j];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (g < h) {
#pragma unroll
      for (int i = 0; i < WM; ++i)
#pragma unroll
        for (int j = 0; j < WN; ++j) acc[i][j] += part[POSM(i) * TN + POSN(j)];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (g != 0) return;
#endif
#pragma unroll
  for (int i = 0; i < WM; ++i) {
    int m = m0 + POSM(i);
    if (m >= M) continue;
#pragma unroll
    for (int j = 0; j < WN; ++j) {
      int n = n0 + POSN(j);
      if (n < N) Y[m * N + n] = acc[i][j];
    }
  }
}
