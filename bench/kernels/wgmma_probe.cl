// A GEMM on Hopper's warpgroup tensor-core instruction (wgmma.mma_async,
// tf32, both operands read from local memory through matrix descriptors),
// for bench/kernels/gemm_probe.cpp (--kernel, --tol 2e-3, --sm90a: built
// after src/kernels/mma_common.cl, its SHARED_BASE and to_tf32): whether
// NVIDIA's OpenCL driver runs the instruction, and which descriptor layout
// is right, before a texplan kernel is built on it. The driver's compiler
// targets sm_90, where ptxas refuses wgmma, so the kernel is built with
// -DSM90A_PATCH, its wgmma lines written as PTX comments that the harness
// uncomments in a PTX retargeted to sm_90a (P90 below).
//
// Y[M,N] = A[M,K] B, B [K,N] or [N,K] (-DBT). One work-group of 128
// work-items (one warpgroup) per 64 x TN tile of Y, K in steps of 8 staged
// synchronously (no pipeline: this is a correctness probe). Variants:
// 64x32_4x4_k1 (m64n32k8) and 64x64_4x8_k1 (m64n64k8); "_db" swaps the
// descriptor's two byte offsets (wrong on the H200: docs/kernel-choices.md#wgmma-through-ptx-retargeted-to-sm_90a).
//
// Local layout of both operands, K-major (the only form wgmma takes for
// tf32): core matrices of 8 rows x 4 words (128 contiguous bytes), the two
// of a row group (k 0-3, 4-7) adjacent, row groups 256 bytes apart.
#if TM != 64 || (TN != 32 && TN != 64)
#error "wgmma_probe: TM 64 and TN 32 or 64 (variants 64x32_4x4_k1, 64x64_4x8_k1)"
#endif
#define NT 128
#ifdef SM90A_PATCH
#define P90 "// @@"
#else
#define P90 ""
#endif
#define CORE(r, k) ((((r) >> 3) * 2 + ((k) >> 2)) * 32 + ((r) & 7) * 4 + ((k) & 3))
#ifdef DB
#define LBO 256ul
#define SBO 128ul
#else
#define LBO 128ul  // between the core matrices along K
#define SBO 256ul  // between row groups
#endif
#define DESC(a) ((((ulong)(a) & 0x3FFFFul) >> 4) | ((LBO >> 4) << 16) | ((SBO >> 4) << 32))
#if TN == 32
#define WGMMA(d, da, db)                                                                   \
  asm volatile(P90 "{ .reg .pred p; setp.ne.b32 p, %18, 0;\n\t"                              \
               P90 "wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, %16, %17, p, 1, 1; }" \
               : "+f"((d)[0]), "+f"((d)[1]), "+f"((d)[2]), "+f"((d)[3]), "+f"((d)[4]), "+f"((d)[5]), "+f"((d)[6]), "+f"((d)[7]), "+f"((d)[8]), "+f"((d)[9]), "+f"((d)[10]), "+f"((d)[11]), "+f"((d)[12]), "+f"((d)[13]), "+f"((d)[14]), "+f"((d)[15])                                                                \
               : "l"(da), "l"(db), "r"(1) : "memory")
#else
#define WGMMA(d, da, db)                                                                   \
  asm volatile(P90 "{ .reg .pred p; setp.ne.b32 p, %34, 0;\n\t"                              \
               P90 "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, p, 1, 1; }" \
               : "+f"((d)[0]), "+f"((d)[1]), "+f"((d)[2]), "+f"((d)[3]), "+f"((d)[4]), "+f"((d)[5]), "+f"((d)[6]), "+f"((d)[7]), "+f"((d)[8]), "+f"((d)[9]), "+f"((d)[10]), "+f"((d)[11]), "+f"((d)[12]), "+f"((d)[13]), "+f"((d)[14]), "+f"((d)[15]), "+f"((d)[16]), "+f"((d)[17]), "+f"((d)[18]), "+f"((d)[19]), "+f"((d)[20]), "+f"((d)[21]), "+f"((d)[22]), "+f"((d)[23]), "+f"((d)[24]), "+f"((d)[25]), "+f"((d)[26]), "+f"((d)[27]), "+f"((d)[28]), "+f"((d)[29]), "+f"((d)[30]), "+f"((d)[31])                                                                \
               : "l"(da), "l"(db), "r"(1) : "memory")
#endif

__kernel __attribute__((reqd_work_group_size(NT, 1, 1)))
void probe(__global const float* A, __global const float* B, __global float* Y, int M, int N, int K) {
  __local uint As[64 * 8] __attribute__((aligned(128)));
  __local uint Bs[TN * 8] __attribute__((aligned(128)));
  const int lid = get_local_id(0);
  const int n0 = get_group_id(0) * TN, m0 = get_group_id(1) * 64;
  float d[TN / 2];
#pragma unroll
  for (int i = 0; i < TN / 2; ++i) d[i] = 0.0f;
  SHARED_BASE(a_sh, As)
  SHARED_BASE(b_sh, Bs)
  const ulong da = DESC(a_sh), db = DESC(b_sh);
  for (int k0 = 0; k0 < K; k0 += 8) {
    for (int e = lid; e < 64 * 8; e += NT) {
      const int r = e >> 3, k = e & 7;
      const float v = m0 + r < M && k0 + k < K ? A[(m0 + r) * K + k0 + k] : 0.0f;
      As[CORE(r, k)] = to_tf32(v);
    }
    for (int e = lid; e < TN * 8; e += NT) {
      const int n = e >> 3, k = e & 7;
#ifdef BT
      const float v = n0 + n < N && k0 + k < K ? B[(n0 + n) * K + k0 + k] : 0.0f;
#else
      const float v = n0 + n < N && k0 + k < K ? B[(k0 + k) * N + n0 + n] : 0.0f;
#endif
      Bs[CORE(n, k)] = to_tf32(v);
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // the tensor cores read through the async proxy
    barrier(CLK_LOCAL_MEM_FENCE);
    asm volatile(P90 "wgmma.fence.sync.aligned;" ::: "memory");
    WGMMA(d, da, db);
    asm volatile(P90 "wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile(P90 "wgmma.wait_group.sync.aligned 0;" ::: "memory");
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  // Accumulators as mma.sync's m16n8 fragments: warp w rows 16w.., then N in 8s.
  const int warp = lid >> 5, lane = lid & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int j = 0; j < TN / 8; ++j)
#pragma unroll
    for (int o = 0; o < 4; ++o) {
      const int m = m0 + 16 * warp + g + 8 * (o >> 1), n = n0 + 8 * j + 2 * t + (o & 1);
      if (m < M && n < N) Y[m * N + n] = d[4 * j + o];
    }
}
