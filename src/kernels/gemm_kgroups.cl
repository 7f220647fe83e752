// gemm_kgroups: matrix products whose few output tiles each walk a long K,
// built by lower/conv.cpp with KGROUPS, KG_TM, KG_TN, KG_WM, KG_WN and the
// float4 reads' KG_A4, KG_B4N, KG_B4K (conv_select.cpp kgroups_defines).
// A file of its own, so that a build of it compiles this kernel alone.
//
// Fused epilogues and a 1x1 conv's channel program as in gemm.cl: EPI(v, i)
// at every store, XPRO(v, c) on B as it is stored in local memory.
#ifndef EPI
#define EPI(v, i) (v)
#define EPI_PARAMS
#endif
#ifndef XPRO
#define XPRO(v, c) (v)
#define XPRO_PARAMS
#endif
#ifndef XPRO_SETUP
#define XPRO_SETUP
#endif

// Products with few output tiles and a long K (transformers' projections
// and MLPs at a few hundred tokens, 1x1 convs of small maps): KGROUPS
// groups of 64 work-items share one KG_TM x KG_TN output tile and walk
// interleaved slices of K (group g: slices g, g + KGROUPS, ...), each
// work-item a KG_WM x KG_WN block of the tile read from local memory as
// float4s, so a work-group has KGROUPS times the warps of one tile's walk;
// the groups' partial tiles are summed in local memory, halving the groups
// each round, and every group's work-items apply the epilogue to the sum.
// One launch, where split-K takes three (docs/kernel-choices.md#k-groups).
//
// The lowering (lower/conv.cpp) says which operands run four elements
// contiguous along the slice's fast coordinate: KG_A4 (A along K), KG_B4N
// (B along N), KG_B4K (B along K). Those are read as float4s from offsets
// computed once, their rows and columns clamped into the operand (values
// past M or N are read, never stored): a quarter of the loads and no bounds
// checks but K's. 32x64 tiles of 8x4 blocks (16 work-items a row, each
// reading one float4 of B a step) ran ViT-B/16's products in 0.7-0.8 of the
// 32x32 tiles' time on an H200 (docs/kernel-choices.md#k-groups).
// KG_DB keeps two slices a group (one barrier a slice).
#define KG_GX (KG_TN / KG_WN)  // work-items along a row of the tile
#define KG_GY (KG_TM / KG_WM)
#if KG_GX * KG_GY != 64 || KG_WM % 4 || KG_WN % 4
#error "a k-group is 64 work-items of blocks whole float4s wide"
#endif
#define KG_TK 16
#ifdef KG_DB
#define KG_NBUF 2
#else
#define KG_NBUF 1
#endif
#define KG_LDA (KG_TM + 4)  // +4: rows stay 16-byte aligned, stores spread over banks
#define KG_LDB (KG_TN + 4)
#define KG_SLICE (KG_TK * (KG_LDA + KG_LDB))  // floats of both operands' slices
#define KG_TILES (KGROUPS * KG_NBUF * KG_SLICE)
#define KG_PARTS ((KGROUPS / 2) * KG_TM * KG_TN)  // the first round's partial tiles
// Row (column) of the tile a work-item's i-th value sits in: float4s
// 4 * (t + KG_GY * q) + r, so neighbouring work-items read neighbouring float4s.
#define KG_POSM(i) (4 * (ty + KG_GY * ((i) / 4)) + (i) % 4)
#define KG_POSN(j) (4 * (tx + KG_GX * ((j) / 4)) + (j) % 4)
#ifdef KG_A4
#define KG_NA (KG_TM * KG_TK / 256)  // float4s of A's slice a work-item
#else
#define KG_NA (KG_TM * KG_TK / 64)   // elements
#endif
#if defined(KG_B4N) || defined(KG_B4K)
#define KG_NB (KG_TN * KG_TK / 256)
#else
#define KG_NB (KG_TN * KG_TK / 64)
#endif
#define KG_XPRO(v, gk) ((gk) < K ? XPRO((v), (gk)) : (v))  // rows past K stay 0, as gemm.cl's STORE_B
__kernel __attribute__((reqd_work_group_size(64, KGROUPS, 1)))
void gemm_kgroups(__global const real_t* A, __global const real_t* B, __global const real_t* C, __global real_t* Y,
                  GemmParams gp EPI_PARAMS YWIN_PARAMS XWIN_PARAMS XPRO_PARAMS) {
  GEMM_PARAMS(gp)
  // Per group: A's slice [k][m] and B's [k][n] (two of each under KG_DB);
  // after the loop the same memory holds the reduction's partial tiles.
  __local float4 lm4[(KG_TILES > KG_PARTS ? KG_TILES : KG_PARTS) / 4];
  __local float* lm = (__local float*)lm4;
  XPRO_SETUP
  const int l = get_local_id(0), g = get_local_id(1);
  const int tx = l % KG_GX, ty = l / KG_GX;
  const int n0 = get_group_id(0) * KG_TN, m0 = get_group_id(1) * KG_TM, z = get_group_id(2);
  __local float* mine = lm + g * KG_NBUF * KG_SLICE;
  A += ao + strided_offset(z, batch, a_sb);
  B += bo + strided_offset(z, batch, b_sb);
  C += co + strided_offset(z, batch, c_sb);
  // This work-item's share of a slice: element (or float4) r is e = l + 64 r
  // of the slice, in the order its operand runs in memory. Its coordinates
  // in the slice (am, ak; bk, bn) and, for float4s, its offset at K = 0.
  int am[KG_NA], ak[KG_NA], bk[KG_NB], bn[KG_NB];
#ifdef KG_A4
  int a_at[KG_NA];
  float4 ra[KG_NA];
#else
  float ra[KG_NA];
  const bool a_kfast = a_sk == 1;
#endif
#pragma unroll
  for (int r = 0; r < KG_NA; ++r) {
    const int e = l + r * 64;
#ifdef KG_A4
    am[r] = e / (KG_TK / 4), ak[r] = 4 * (e % (KG_TK / 4)) + g * KG_TK;
    a_at[r] = min(m0 + am[r], M - 1) * a_sm + ak[r];
#else
    am[r] = a_kfast ? e / KG_TK : e % KG_TM;
    ak[r] = (a_kfast ? e % KG_TK : e / KG_TM) + g * KG_TK;
#endif
  }
#if defined(KG_B4N) || defined(KG_B4K)
  int b_at[KG_NB];
  float4 rb[KG_NB];
#else
  float rb[KG_NB];
  const bool b_nfast = b_sn == 1;
#endif
#pragma unroll
  for (int r = 0; r < KG_NB; ++r) {
    const int e = l + r * 64;
#if defined(KG_B4N)  // N a multiple of 4: a quad is wholly in or past N
    bk[r] = e / (KG_TN / 4) + g * KG_TK, bn[r] = 4 * (e % (KG_TN / 4));
    b_at[r] = bk[r] * b_sk + min(n0 + bn[r], N - 4);
#elif defined(KG_B4K)
    bn[r] = e / (KG_TK / 4), bk[r] = 4 * (e % (KG_TK / 4)) + g * KG_TK;
    b_at[r] = min(n0 + bn[r], N - 1) * b_sn + bk[r];
#else
    bn[r] = b_nfast ? e % KG_TN : e / KG_TK;
    bk[r] = (b_nfast ? e / KG_TN : e % KG_TK) + g * KG_TK;
#endif
  }
  // Slice `kb` on from this group's first (K a multiple of 4 under the
  // float4 forms: a quad is wholly in or past K).
#ifdef KG_A4
#define KG_LOAD_A(kb) ra[r] = ak[r] + (kb) < K ? LDV(4, A + a_at[r] + (kb)) : (float4)(0.0f);
#else
#define KG_LOAD_A(kb) \
  ra[r] = m0 + am[r] < M && ak[r] + (kb) < K ? LD(A, (m0 + am[r]) * a_sm + (ak[r] + (kb)) * a_sk) : 0.0f;
#endif
#if defined(KG_B4N)
#define KG_LOAD_B(kb) rb[r] = bk[r] + (kb) < K ? LDV(4, B + b_at[r] + (kb) * b_sk) : (float4)(0.0f);
#elif defined(KG_B4K)
#define KG_LOAD_B(kb) rb[r] = bk[r] + (kb) < K ? LDV(4, B + b_at[r] + (kb)) : (float4)(0.0f);
#else
#define KG_LOAD_B(kb) \
  rb[r] = bk[r] + (kb) < K && n0 + bn[r] < N ? LD(B, (bk[r] + (kb)) * b_sk + XCOL(n0 + bn[r]) * b_sn) : 0.0f;
#endif
#define KG_LOAD(kb)                                  \
  _Pragma("unroll") for (int r = 0; r < KG_NA; ++r) { \
    KG_LOAD_A(kb)                                    \
  }                                                  \
  _Pragma("unroll") for (int r = 0; r < KG_NB; ++r) { \
    KG_LOAD_B(kb)                                    \
  }
  float acc[KG_WM][KG_WN];
#pragma unroll
  for (int i = 0; i < KG_WM; ++i)
#pragma unroll
    for (int j = 0; j < KG_WN; ++j) acc[i][j] = 0.0f;
  const int step = KGROUPS * KG_TK;
  // The same count in every group, so the barriers below match.
  const int iters = (K + step - 1) / step;
  KG_LOAD(0)
  for (int it = 0; it < iters; ++it) {
    __local float* As = mine + (KG_NBUF == 2 ? (it & 1) * KG_SLICE : 0);
    __local float* Bs = As + KG_TK * KG_LDA;
    const int kb = it * step;  // this slice's offset from the group's first
#pragma unroll
    for (int r = 0; r < KG_NA; ++r) {
      const int k = ak[r] - g * KG_TK;
#ifdef KG_A4
      As[k * KG_LDA + am[r]] = ra[r].x, As[(k + 1) * KG_LDA + am[r]] = ra[r].y;
      As[(k + 2) * KG_LDA + am[r]] = ra[r].z, As[(k + 3) * KG_LDA + am[r]] = ra[r].w;
#else
      As[k * KG_LDA + am[r]] = ra[r];
#endif
    }
#pragma unroll
    for (int r = 0; r < KG_NB; ++r) {
      const int k = bk[r] - g * KG_TK, gk = bk[r] + kb;
#if defined(KG_B4N)
      vstore4((float4)(KG_XPRO(rb[r].x, gk), KG_XPRO(rb[r].y, gk), KG_XPRO(rb[r].z, gk), KG_XPRO(rb[r].w, gk)), 0,
              Bs + k * KG_LDB + bn[r]);
#elif defined(KG_B4K)
      Bs[k * KG_LDB + bn[r]] = KG_XPRO(rb[r].x, gk), Bs[(k + 1) * KG_LDB + bn[r]] = KG_XPRO(rb[r].y, gk + 1);
      Bs[(k + 2) * KG_LDB + bn[r]] = KG_XPRO(rb[r].z, gk + 2), Bs[(k + 3) * KG_LDB + bn[r]] = KG_XPRO(rb[r].w, gk + 3);
#else
      Bs[k * KG_LDB + bn[r]] = KG_XPRO(rb[r], gk);
#endif
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (it + 1 < iters) {
      KG_LOAD(kb + step)
    }
#pragma unroll
    for (int k = 0; k < KG_TK; ++k) {
      float a[KG_WM], b[KG_WN];
      __local const float4* ak4 = (__local const float4*)(As + k * KG_LDA);
      __local const float4* bk4 = (__local const float4*)(Bs + k * KG_LDB);
      // Component by component: NVIDIA's compiler put 8x8 blocks filled by
      // vstore4 on the stack (docs/kernel-choices.md#k-groups).
#pragma unroll
      for (int q = 0; q < KG_WM / 4; ++q) {
        const float4 v = ak4[ty + KG_GY * q];
        a[4 * q] = v.x, a[4 * q + 1] = v.y, a[4 * q + 2] = v.z, a[4 * q + 3] = v.w;
      }
#pragma unroll
      for (int q = 0; q < KG_WN / 4; ++q) {
        const float4 v = bk4[tx + KG_GX * q];
        b[4 * q] = v.x, b[4 * q + 1] = v.y, b[4 * q + 2] = v.z, b[4 * q + 3] = v.w;
      }
#pragma unroll
      for (int i = 0; i < KG_WM; ++i)
#pragma unroll
        for (int j = 0; j < KG_WN; ++j) acc[i][j] = fma(a[i], b[j], acc[i][j]);
    }
#ifndef KG_DB
    barrier(CLK_LOCAL_MEM_FENCE);
#endif
  }
#ifdef KG_DB
  barrier(CLK_LOCAL_MEM_FENCE);  // the slices become the partial tiles
#endif
  // Groups [h, 2h) hand their tiles to groups [0, h), h halving to 1; in
  // the last round group 0 leaves the sum in local memory (lm's first tile).
  for (int h = KGROUPS / 2; h >= 1; h /= 2) {
    __local float* part = lm + (g % h) * KG_TM * KG_TN;
    if (g >= h && g < 2 * h) {
#pragma unroll
      for (int i = 0; i < KG_WM; ++i)
#pragma unroll
        for (int j = 0; j < KG_WN; ++j) part[KG_POSM(i) * KG_TN + KG_POSN(j)] = acc[i][j];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (g < h) {
#pragma unroll
      for (int i = 0; i < KG_WM; ++i)
#pragma unroll
        for (int j = 0; j < KG_WN; ++j) {
          __local float* p = part + KG_POSM(i) * KG_TN + KG_POSN(j);
          if (h == 1) *p = acc[i][j] + *p;
          else acc[i][j] += *p;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  // Every work-item applies the epilogue to its share of the sum,
  // neighbours to neighbouring columns (coalesced). Group 0 alone, 32
  // values a work-item, had made the 32x64 tiles' GELU and bias cost more
  // than their product in ViT-B/16's fc1 (117 us against 52 alone;
  // docs/kernel-choices.md#k-groups).
  const int y0 = z * M * N;
  for (int e = g * 64 + l; e < KG_TM * KG_TN; e += KGROUPS * 64) {
    const int m = m0 + e / KG_TN, n = n0 + e % KG_TN;
    if (m >= M || n >= N) continue;
    float v = alpha * lm[e];
    if (has_c) v += beta * LD(C, m * c_sm + n * c_sn);
    ST(Y, yo + YI(y0 + m * N + n), EPI(v, y0 + m * N + n));
  }
}
