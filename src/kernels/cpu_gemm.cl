// Matrix products for CPU OpenCL devices (PoCL): GEMM, MatMul, 1x1
// convolutions (a GEMM per image and group: Y[OC, P] = W[OC, C] X[C, P]) and
// matrix-vector products. No local memory, no barriers: a work-item keeps a
// register block of OCB rows x NV vectors of PB columns (OCB * NV vector
// accumulators); per step of K it loads NV vectors of a B row and
// broadcasts OCB values of A, each feeding NV FMAs. Built with -DOCB, -DPB,
// -DNV (lower/opencl_cpu/conv_gemm.cpp); fused epilogues as in cpu_conv.cl. Block
// macros: cpu_common.cl.
#ifndef NV
#define NV 1
#endif
#define BW (PB * NV)  // columns per work-item

// Y (M x N per batch, contiguous) = alpha * A B + beta * C, A(m,k) at
// A[m*a_sm + k*a_sk], B(k,n) at B[k*b_sk + n*b_sn], C broadcast through
// c_sm/c_sn; batched over get_global_id(2) (batch dims and strides as
// gemm.cl). M >= OCB (the lowering's choice): the last block of rows is
// moved up to end at M, and the rows before m0 it recomputes are not
// stored, so no row is clamped. -DASK1 / -DASM1: a_sk / a_sm is 1 (row- or
// column-major A), which the compiler turns into plain addressing.
// get_global_id(0): block of OCB rows; (1): of BW columns (consecutive
// work-items share a K x BW panel of B, which stays in cache, rather than
// streaming all of B once per row block; -DCOLS_FIRST swaps the two, for
// an A too large to stay in cache). Where B rows are
// contiguous (b_sn == 1) and N >= BW, B is read as vectors, the last block
// of columns moved left likewise; otherwise B is gathered (columns past N
// clamped).
// -DK_SCALE: B's row k is scaled by S[so + k] (a 1x1 conv's input channel
// scale, lower/opencl_cpu/conv_gemm.cpp), one multiply per B vector.
#ifdef K_SCALE
#define K_SCALE_PARAMS , __global const real_t *S, int so
#define K_SCALED(v, k) ((v) * (VF)(LD(S, so + (k))))
#else
#define K_SCALE_PARAMS
#define K_SCALED(v, k) (v)
#endif
#ifdef ASK1
#define A_SK 1
#else
#define A_SK a_sk
#endif
#ifdef ASM1
#define A_SM 1
#else
#define A_SM a_sm
#endif
__kernel void gemm_block_cpu(__global const real_t* A, int ao, __global const real_t* B, int bo,
                             __global const real_t* C, int co, __global real_t* Y, int yo, int M, int N, int K,
                             int a_sm, int a_sk, int b_sk, int b_sn, int c_sm, int c_sn, int has_c, float alpha,
                             float beta, Dims batch, Dims a_sb, Dims b_sb, Dims c_sb K_SCALE_PARAMS EPI_PARAMS YWIN_PARAMS XWIN_PARAMS) {
#ifdef COLS_FIRST
  const int n0 = get_global_id(0) * BW, m0 = get_global_id(1) * OCB, z = get_global_id(2);
#else
  const int m0 = get_global_id(0) * OCB, n0 = get_global_id(1) * BW, z = get_global_id(2);
#endif
  if (n0 >= N || m0 >= M) return;
  const int mb = min(m0, M - OCB);  // first row computed
  __global const real_t* a = A + ao + strided_offset(z, batch, a_sb) + mb * A_SM;
  B += bo + strided_offset(z, batch, b_sb);
  C += co + strided_offset(z, batch, c_sb);
  VF acc[OCB][NV];
#pragma unroll
  for (int o = 0; o < OCB; ++o)
#pragma unroll
    for (int j = 0; j < NV; ++j) acc[o][j] = (VF)(0.0f);

  // Columns of B contiguous (vector loads): B's own rows, or a window's
  // where the block lies in one row of it (XCOLRUN).
  const bool vec = b_sn == 1 && N >= BW && XCOLRUN(min(n0, N - BW), BW);
  const int nb = vec ? min(n0, N - BW) : n0;  // first column computed
  if (vec) {
    __global const real_t* b = B + XCOL(nb);
    for (int k = 0; k < K; ++k, b += b_sk) {
      VF bv[NV];
#pragma unroll
      for (int j = 0; j < NV; ++j) bv[j] = K_SCALED(LDV(PB, b + j * PB), k);
#pragma unroll
      for (int o = 0; o < OCB; ++o) {
        const VF av = (VF)(LD(a, k * A_SK + o * A_SM));
#pragma unroll
        for (int j = 0; j < NV; ++j) acc[o][j] = fma(av, bv[j], acc[o][j]);
      }
    }
  } else {
    int cols[BW];
#pragma unroll
    for (int j = 0; j < NV; ++j) VSTORE(XCOL(min(n0 + j * PB + LANES, N - 1)) * b_sn, 0, cols + j * PB);
    for (int k = 0; k < K; ++k) {
      __global const real_t* bk = B + k * b_sk;
      VF bv[NV];
#pragma unroll
      for (int j = 0; j < NV; ++j) {
        float t[PB];
#pragma unroll
        for (int l = 0; l < PB; ++l) t[l] = LD(bk, cols[j * PB + l]);
        bv[j] = K_SCALED(VLOAD(0, t), k);
      }
#pragma unroll
      for (int o = 0; o < OCB; ++o) {
        const VF av = (VF)(LD(a, k * A_SK + o * A_SM));
#pragma unroll
        for (int j = 0; j < NV; ++j) acc[o][j] = fma(av, bv[j], acc[o][j]);
      }
    }
  }

#pragma unroll
  for (int o = 0; o < OCB; ++o) {
    const int m = mb + o;
    if (m < m0) continue;  // a moved block: another work-item's row
    const int row = z * M * N + m * N;
#pragma unroll
    for (int j = 0; j < NV; ++j) {
      const int c0 = nb + j * PB;  // first column of this vector
      VF v = alpha == 1.0f ? acc[o][j] : (VF)(alpha) * acc[o][j];
      if (has_c) {
        VF c;
        if (c_sn == 0) {  // one value per row (a bias)
          c = (VF)(LD(C, m * c_sm));
        } else if (c_sn == 1 && c0 + PB <= N) {
          c = LDV(PB, C + m * c_sm + c0);
        } else {
          float t[PB];
#pragma unroll
          for (int l = 0; l < PB; ++l) t[l] = LD(C, m * c_sm + min(c0 + l, N - 1) * c_sn);
          c = VLOAD(0, t);
        }
        v += beta == 1.0f ? c : (VF)(beta) * c;
      }
      if (c0 >= n0) {
        STORE_BLOCK(row + c0, v, N - c0);
      } else if (c0 + PB > n0) {  // a moved block: only the columns from n0
        float t[PB];
        VSTORE(v, 0, t);
        for (int l = n0 - c0; l < PB; ++l) ST(Y, yo + YI(row + c0 + l), EPI(t[l], row + c0 + l));
      }
    }
  }
}

// Y[j] = alpha * dot(row j of R, v) + beta * C[j], j < rows, per batch
// (get_global_id(1)): R(j, k) at R[j*r_sj + k] (rows contiguous, the
// weights of an FC layer with transB, or of a 1x1 convolution on one
// pixel), v(k) at V[k*v_sk], C(j) at C[j*c_sj]; Y contiguous (rows per
// batch). A work-item: OCB rows, PB-wide partial sums along K (NV vectors
// at a time), so weight rows stream at memory speed.
__kernel void gemv_rows_cpu(__global const real_t* R, int ro, __global const real_t* V, int vo,
                            __global const real_t* C, int co, __global real_t* Y, int yo, int rows, int K, int r_sj,
                            int v_sk, int c_sj, int has_c, float alpha, float beta, Dims batch, Dims r_sb, Dims v_sb,
                            Dims c_sb EPI_PARAMS YWIN_PARAMS XWIN_PARAMS) {
  const int j0 = get_global_id(0) * OCB, z = get_global_id(1);
  if (j0 >= rows) return;
  R += ro + strided_offset(z, batch, r_sb);
  V += vo + strided_offset(z, batch, v_sb);
  C += co + strided_offset(z, batch, c_sb);
  __global const real_t* r[OCB];
#pragma unroll
  for (int o = 0; o < OCB; ++o) r[o] = R + min(j0 + o, rows - 1) * r_sj;
  VF acc[OCB][NV];
#pragma unroll
  for (int o = 0; o < OCB; ++o)
#pragma unroll
    for (int u = 0; u < NV; ++u) acc[o][u] = (VF)(0.0f);
  int k = 0;
  if (v_sk == 1) {
    for (; k + BW <= K; k += BW) {
#pragma unroll
      for (int u = 0; u < NV; ++u) {
        const VF x = LDV(PB, V + k + u * PB);
#pragma unroll
        for (int o = 0; o < OCB; ++o) acc[o][u] = fma(LDV(PB, r[o] + k + u * PB), x, acc[o][u]);
      }
    }
  }
  float s[OCB];
#pragma unroll
  for (int o = 0; o < OCB; ++o) {
    VF t = acc[o][0];
#pragma unroll
    for (int u = 1; u < NV; ++u) t += acc[o][u];
    float l[PB];
    VSTORE(t, 0, l);
    float h = 0.0f;
#pragma unroll
    for (int i = 0; i < PB; ++i) h += l[i];
    s[o] = h;
  }
  for (; k < K; ++k) {  // the tail of K (all of it when V is strided)
    const float x = LD(V, k * v_sk);
#pragma unroll
    for (int o = 0; o < OCB; ++o) s[o] = fma(LD(r[o], k), x, s[o]);
  }
  const int yb = z * rows;
#pragma unroll
  for (int o = 0; o < OCB; ++o) {
    const int j = j0 + o;
    if (j >= rows) break;
    float y = alpha * s[o];
    if (has_c) y += beta * LD(C, j * c_sj);
    ST(Y, yo + YI(yb + j), EPI(y, yb + j));
  }
}
