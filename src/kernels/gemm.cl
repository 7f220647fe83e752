// Local-memory tiled matrix products: Y = alpha * A(MxK) B(KxN) + beta * C.
// A work-group of 16x16 work-items computes a TILE_M x TILE_N block of Y,
// each work-item a WPTM x WPTN block (rows ly+16i, columns lx+16j: coalesced
// stores, conflict-free local reads). K advances in slices of TK staged in
// local memory; the next slice's global values are loaded into registers
// while the current one is multiplied (the loads' latency hides behind the
// arithmetic). Variants are build options: WPTM, WPTN (default WPT=4: 64x64
// tiles; 2: 32x32 for small problems; 8: 128-wide tiles for large ones). The
// loaders are macros so convolutions read their operands straight from the
// image (implicit im2col).
//
// Fused epilogues (lower/epilogue_cl.h): a generated prelude defines
// EPI(v, i) and EPI_PARAMS; every store goes through EPI at the output's
// linear index, reading extra inputs at that index before writing it (safe
// when Y aliases one of them).
#ifndef EPI
#define EPI(v, i) (v)
#define EPI_PARAMS
#endif
// A 1x1 conv's channel program (lower/epilogue_cl.h channel_program_cl):
// XPRO(v, c) is element v of X's input channel c through it; gemm (and
// gemm_kgroups.cl) apply it to B (that X) as they store a slice in local
// memory, its operands passed last (XPRO_PARAMS). With a depthwise input
// the prelude defines XLOAD, XLOAD_TAPS, xdw_fetch and xdw_sum too: gemm's
// B element (k, n) is then the depthwise sum of channel k at output pixel n.
#ifndef XPRO
#define XPRO(v, c) (v)
#define XPRO_PARAMS
#endif
#ifndef XPRO_SETUP  // a channel gate's values, computed before any XPRO (epilogue_cl.h)
#define XPRO_SETUP
#endif

#ifndef WPT
#define WPT 4
#endif
#ifndef WPTM
#define WPTM WPT
#endif
#ifndef WPTN
#define WPTN WPT
#endif
#define TILE_M (16 * WPTM)
#define TILE_N (16 * WPTN)
// The depth of a slice of K (lower/conv_select.h Variant::depth): 16; 32
// and 64 only as forced variants, for measurements (they saved 3-8% where
// one work-group walks a long K: docs/kernel-choices.md#the-depth-of-a-slice).
// Split-K builds keep 16.
#ifndef TK
#define TK 16
#endif
#define LOADS_A (WPTM * TK / 16)  // a work-item's elements of each slice of A
#define LOADS_B (WPTN * TK / 16)

// This item's global writes visible to every compute unit before its later
// ones (NVIDIA's mem_fence is the work-group's: membar.cta): split-K in one
// launch and ROW_NORM, whose work-groups meet at semaphores.
inline void global_fence(void) {
#ifdef TEXPLAN_PTX
  asm volatile("membar.gl;" ::: "memory");
#else
  mem_fence(CLK_GLOBAL_MEM_FENCE);
#endif
}

// Rows layer-normalized after the product (-DROW_NORM, gemm only: a
// FusedMatMul's RowNorm, graph.h; docs/fused-ops.md#row-norm). Y's rows are
// N long. Each work-group stores its tile, then counts it at its row
// block's semaphore (an int of RSEM per batch and row block, left at 0); the
// last of the block's column tiles normalizes the block's rows in place,
// reading the other tiles' stores past its cache, 256 / TILE_M work-items a
// row, neighbours in a row reading neighbouring elements (two passes: the
// mean, then the variance of the centred values, as norm.cl's layer_norm).
// A block's rows past M go to a scratch row of N floats (RSCR): their
// stores, guarded instead, still reached past Y's end on PoCL (cause not
// found), and a work-item a row (no barriers) read 32 rows a load on GPUs.
#ifdef ROW_NORM
#if defined(TEXPLAN_HALF) || defined(SPLITK)
#error "ROW_NORM reads and writes Y as fp32, once the tile is whole"
#endif
#define ROW_NORM_PARAMS                                                                                 \
  , __global volatile int *RSEM, __global float *RSCR, __global const real_t *RNG, int rngo, __global const real_t *RNB, \
      int rnbo, int rn_has_bias, float rn_eps
#define RN_ITEMS (256 / TILE_M)
// The sum of v over the RN_ITEMS items of this item's row (red: 256 floats).
inline float row_norm_sum(__local float* red, int tid, float v) {
  red[tid] = v;
  for (int h = RN_ITEMS / 2; h > 0; h >>= 1) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (tid % RN_ITEMS < h) red[tid] += red[tid + h];
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  const float s = red[tid - tid % RN_ITEMS];
  barrier(CLK_LOCAL_MEM_FENCE);
  return s;
}
#else
#define ROW_NORM_PARAMS
#endif

// 8x8 blocks a work-item (128x128 tiles; the k-groups do the same): NVIDIA's
// compiler left their 64 accumulators on the stack (256 bytes,
// -cl-nv-verbose) and they ran at half the 4x4 blocks' speed. clang's NVPTX
// output keeps them in registers only with every loop over them unrolled
// and the private rows filled component by component, not by vstore4; so
// does NVIDIA's, though their times did not move (scripts/ptx_local_memory.sh;
// docs/kernel-choices.md#k-groups). The 4x4 blocks, which had no stack,
// build as before.
#if WPTM * WPTN >= 64
#define ACC_UNROLL _Pragma("unroll")
#define ROW4(v, q, p) ((p)[4 * (q)] = (v).x, (p)[4 * (q) + 1] = (v).y, (p)[4 * (q) + 2] = (v).z, (p)[4 * (q) + 3] = (v).w)
#else
#define ACC_UNROLL
#define ROW4(v, q, p) vstore4((v), (q), (p))
#endif

// Split-K (-DSPLITK; gemm and conv2d_gemm): grid z enumerates (batch, slice)
// as batch * splits + slice, a work-group multiplies K range [slice * kslice,
// +kslice) (kslice a multiple of TK) and adds its partial tile into Y, which
// the host zeroed first (splitk_zero); slice 0 adds beta*C (a conv's bias)
// too, and the epilogue comes after, in place (splitk_finish). For small
// grids (deep layers at 7x7, 14x14) that would leave most compute units idle.
// split_add (common.cl) adds into Y. With SPLITK_ONE (gemm only) the tile's
// first slice zeroes it and its last applies the epilogue, in the one launch
// (split_start below).
#if defined(SPLITK) && defined(POOL2)
#error "SPLITK and POOL2 do not combine: a max of partial sums is not their sum's"
#endif

// Split-K in one launch (SPLITK_ONE, gemm only;
// docs/kernel-choices.md#split-k-in-one-launch-tried-kept-for-depthwise-inputs):
// the slices of one output tile meet at its semaphore, three ints of SEM (the
// slices that started, whether the tile is zeroed, the slices done) that
// start at 0 and are left at 0 for the next run. The first slice to start
// zeroes the tile while the others run their part of K, so Y needs no
// zeroing pass; every slice adds its sums once the zeros are out (a wait
// only where a slice finished K before the first one zeroed); the last one
// done applies the epilogue to the tile, so no pass follows. Nothing waits
// for a work-group that has not started: a slice waits only for the first
// one, which started, and that one waits for nobody. lower/conv.cpp builds
// it for depthwise inputs whose split would need both passes (no residual in
// Y, an epilogue to apply); without SPLITK_ONE these are no-ops around
// split_add.
#ifdef SPLITK_ONE
#define SPLIT_PARAMS , __global volatile int* SEM
#define SPLIT_SEM(splits) split_semaphore(SEM, splits)
inline bool split_lead(void) { return get_local_id(0) == 0 && get_local_id(1) == 0 && get_local_id(2) == 0; }
// Y's sum as the other slices left it (past this compute unit's cache).
inline float split_get(__global float* p) { return *(volatile __global float*)p; }
// The semaphore of this work-group's tile: grid z is batch * splits + slice.
inline __global volatile int* split_semaphore(__global volatile int* sem, int splits) {
  const int z = get_group_id(2) / splits;
  return sem + 3 * (get_group_id(0) + get_num_groups(0) * (get_group_id(1) + get_num_groups(1) * z));
}
// At the start: whether this work-group zeroes the tile (it started first);
// it then calls split_zeroed after its stores of 0.
inline bool split_start(__global volatile int* s, __local int* flag) {
  if (split_lead()) *flag = atomic_inc(&s[0]) == 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  return *flag != 0;
}
inline void split_zeroed(__global volatile int* s) {
  global_fence();
  barrier(CLK_GLOBAL_MEM_FENCE);
  if (split_lead()) atomic_xchg(&s[1], 1);
}
// Before the adds: the tile's zeros are out.
inline void split_wait_zeroed(__global volatile int* s) {
  if (split_lead())
    while (atomic_or(&s[1], 0) == 0) {
    }
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
}
// After the adds: whether this work-group is the tile's last (it then
// applies the epilogue, SPLIT_FINISH).
inline bool split_leave(__global volatile int* s, __local int* flag, int splits) {
  global_fence();  // the adds performed before the count says so
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  if (split_lead()) {
    const int last = atomic_inc(&s[2]) == splits - 1;
    if (last) {
      atomic_xchg(&s[0], 0);
      atomic_xchg(&s[1], 0);
      atomic_xchg(&s[2], 0);
    }
    *flag = last;
  }
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  global_fence();
  return *flag != 0;
}
#define SPLIT_FINISH(p, i) (*(p) = EPI(split_get(p), (i)))
#else
#define SPLIT_PARAMS
#define SPLIT_SEM(splits) ((__global volatile int*)0)
inline bool split_start(__global volatile int* s, __local int* flag) { return false; }
inline void split_zeroed(__global volatile int* s) {}
inline void split_wait_zeroed(__global volatile int* s) {}
inline bool split_leave(__global volatile int* s, __local int* flag, int splits) { return false; }
#define SPLIT_FINISH(p, i)
#endif
// STMT for each output (m, n) of this work-item in the tile (acc[i][j]).
#define TILE_EACH(STMT)                         \
  ACC_UNROLL for (int i = 0; i < WPTM; ++i) {   \
    const int m = m0 + ROW(i);                  \
    if (m >= M) continue;                       \
    ACC_UNROLL for (int j = 0; j < WPTN; ++j) { \
      const int n = n0 + COL(j);                \
      if (n < N) {                              \
        STMT;                                   \
      }                                         \
    }                                           \
  }

// Two layouts of the tiles in local memory and of a work-item's outputs:
// - scalar (default): rows ly+16i, columns lx+16j; +1 column of padding so
//   stores into the tiles hit different banks;
// - VEC (WPTM, WPTN multiples of 4): rows 4(ly+16i')+r, columns
//   4(lx+16j')+c, read from local memory as float4 (a quarter of the local
//   reads per FMA); +4 columns of padding keep rows 16-byte aligned.
// AS(k, m) / BS(k, n) address one element; ROW(i) / COL(j) are the tile
// row / column of acc[i][j].
#ifdef VEC
#define PAD 4
#define ROW(i) (4 * (ly + 16 * ((i) / 4)) + (i) % 4)
#define COL(j) (4 * (lx + 16 * ((j) / 4)) + (j) % 4)
#else
#define PAD 1
#define ROW(i) (ly + 16 * (i))
#define COL(j) (lx + 16 * (j))
#endif
#define AS(k, m) As[(k) * (TILE_M + PAD) + (m)]
#define BS(k, n) Bs[(k) * (TILE_N + PAD) + (n)]

#define GEMM_LOCALS                                                       \
  __local float4 As4[TK * (TILE_M + PAD) / 4 + 1];                        \
  __local float4 Bs4[TK * (TILE_N + PAD) / 4 + 1];                        \
  __local float* As = (__local float*)As4;                                \
  __local float* Bs = (__local float*)Bs4;                                \
  const int lx = get_local_id(0), ly = get_local_id(1);                   \
  const int tid = ly * 16 + lx;                                           \
  const int n0 = get_group_id(0) * TILE_N, m0 = get_group_id(1) * TILE_M; \
  float acc[WPTM][WPTN];                                                  \
  ACC_UNROLL for (int i = 0; i < WPTM; ++i)                               \
    ACC_UNROLL for (int j = 0; j < WPTN; ++j) acc[i][j] = 0.0f;

// Element r of this work-item's share of a slice: A tile coordinates (m, k)
// and B tile coordinates (kb, nb). a_kfast / b_nfast pick which coordinate
// neighbouring work-items load (the one contiguous in memory).
#define GEMM_A_COORD(r, m, k, a_kfast)                 \
  const int e##m = tid + (r) * 256;                    \
  const int m = (a_kfast) ? e##m / TK : e##m % TILE_M; \
  const int k = (a_kfast) ? e##m % TK : e##m / TILE_M;
#define GEMM_B_COORD(r, kb, nb, b_nfast)                  \
  const int e##kb = tid + (r) * 256;                      \
  const int kb = (b_nfast) ? e##kb / TILE_N : e##kb % TK; \
  const int nb = (b_nfast) ? e##kb % TILE_N : e##kb / TK;

// Multiplies the slice in As/Bs into acc.
#ifdef VEC
#define GEMM_MULTIPLY_SLICE                                                          \
  for (int k = 0; k < TK; ++k) {                                                     \
    float a[WPTM], bv[WPTN];                                                         \
    __local const float4* ak = As4 + k * (TILE_M + PAD) / 4;                         \
    __local const float4* bk = Bs4 + k * (TILE_N + PAD) / 4;                         \
    ACC_UNROLL for (int i = 0; i < WPTM / 4; ++i) ROW4(ak[ly + 16 * i], i, a);       \
    ACC_UNROLL for (int j = 0; j < WPTN / 4; ++j) ROW4(bk[lx + 16 * j], j, bv);      \
    ACC_UNROLL for (int i = 0; i < WPTM; ++i)                                        \
      ACC_UNROLL for (int j = 0; j < WPTN; ++j) acc[i][j] += a[i] * bv[j];           \
  }
#else
#define GEMM_MULTIPLY_SLICE                                    \
  for (int k = 0; k < TK; ++k) {                               \
    float a[WPTM], bv[WPTN];                                   \
    ACC_UNROLL for (int i = 0; i < WPTM; ++i) a[i] = AS(k, ROW(i));  \
    ACC_UNROLL for (int j = 0; j < WPTN; ++j) bv[j] = BS(k, COL(j)); \
    ACC_UNROLL for (int i = 0; i < WPTM; ++i)                        \
      ACC_UNROLL for (int j = 0; j < WPTN; ++j) acc[i][j] += a[i] * bv[j]; \
  }
#endif

// LOAD_A(gm, gk) and LOAD_B(gk, gn) read one element (in range);
// STORE_B(v, gk) is what B's element v of row gk puts in local memory (after
// the loads of the next slice have been issued: a function of v at load time
// would wait for them there).
// B_SUMS(k1) finishes B's values of the slice at k1 after the slice before
// it is multiplied (a depthwise input's sums over taps loaded before it:
// their loads' latency hides behind the arithmetic); GEMM_NO_SUMS: none.
#define GEMM_AS_LOADED(v, gk) (v)
#define GEMM_NO_SUMS(k1)
#ifdef XLOAD
#define B_FETCH_UNROLL _Pragma("unroll")
#else
#define B_FETCH_UNROLL
#endif
#define GEMM_MAIN_LOOP(LOAD_A, LOAD_B, a_kfast, b_nfast, STORE_B, B_SUMS)         \
  {                                                                               \
    float ra[LOADS_A], rb[LOADS_B];                                               \
    for (int r = 0; r < LOADS_A; ++r) {                                           \
      GEMM_A_COORD(r, m, k, a_kfast)                                              \
      ra[r] = (m0 + m < M && k < K) ? (LOAD_A(m0 + m, k)) : 0.0f;                 \
    }                                                                             \
    B_FETCH_UNROLL for (int r = 0; r < LOADS_B; ++r) {                            \
      GEMM_B_COORD(r, kb, nb, b_nfast)                                            \
      rb[r] = (kb < K && n0 + nb < N) ? (LOAD_B(kb, n0 + nb)) : 0.0f;             \
    }                                                                             \
    B_SUMS(0)                                                                     \
    for (int k0 = 0; k0 < K; k0 += TK) {                                          \
      for (int r = 0; r < LOADS_A; ++r) {                                         \
        GEMM_A_COORD(r, m, k, a_kfast)                                            \
        AS(k, m) = ra[r];                                                         \
      }                                                                           \
      for (int r = 0; r < LOADS_B; ++r) {                                         \
        GEMM_B_COORD(r, kb, nb, b_nfast)                                          \
        BS(kb, nb) = STORE_B(rb[r], k0 + kb);                                     \
      }                                                                           \
      barrier(CLK_LOCAL_MEM_FENCE);                                               \
      const int k1 = k0 + TK;                                                     \
      if (k1 < K) {                                                               \
        for (int r = 0; r < LOADS_A; ++r) {                                       \
          GEMM_A_COORD(r, m, k, a_kfast)                                          \
          ra[r] = (m0 + m < M && k1 + k < K) ? (LOAD_A(m0 + m, k1 + k)) : 0.0f;   \
        }                                                                         \
        B_FETCH_UNROLL for (int r = 0; r < LOADS_B; ++r) {                        \
          GEMM_B_COORD(r, kb, nb, b_nfast)                                        \
          rb[r] = (k1 + kb < K && n0 + nb < N) ? (LOAD_B(k1 + kb, n0 + nb)) : 0.0f; \
        }                                                                         \
      }                                                                           \
      GEMM_MULTIPLY_SLICE                                                         \
      if (k1 < K) {                                                               \
        B_SUMS(k1)                                                                \
      }                                                                           \
      barrier(CLK_LOCAL_MEM_FENCE);                                               \
    }                                                                             \
  }

// Batched over get_group_id(2), decomposed by `batch` into per-operand batch
// strides (0 where an operand is broadcast). Element (m,k) of A is at
// A[ao + batch offset + m*a_sm + k*a_sk]; likewise B and C. Y is contiguous
// MxN per batch. has_c = 0 ignores C.
__kernel __attribute__((reqd_work_group_size(16, 16, 1)))
void gemm(__global const real_t* A, __global const real_t* B, __global const real_t* C, __global real_t* Y,
          GemmParams gp EPI_PARAMS YWIN_PARAMS XWIN_PARAMS XPRO_PARAMS SPLIT_PARAMS ROW_NORM_PARAMS) {
  GEMM_PARAMS(gp)
  GEMM_LOCALS
  XPRO_SETUP
#ifdef SPLITK
  __local int split_flag;
  const int z = get_group_id(2) / splits, kbeg = (get_group_id(2) - z * splits) * kslice;
  K = min(K - kbeg, kslice);
  A += kbeg * a_sk;
  B += kbeg * b_sk;
  const int xk0 = kbeg;  // B's row 0: channel kbeg for XPRO
#else
  const int z = get_group_id(2), xk0 = 0;
#endif
  A += ao + strided_offset(z, batch, a_sb);
  B += bo + strided_offset(z, batch, b_sb);
  C += co + strided_offset(z, batch, c_sb);
  const int y0 = z * M * N;
#ifdef SPLITK
  __global volatile int* sem = SPLIT_SEM(splits);
  if (split_start(sem, &split_flag)) {
    TILE_EACH(Y[yo + YI(y0 + m * N + n)] = 0.0f)
    split_zeroed(sem);
  }
#endif
#define GEMM_A(m, k) LD(A, (m) * a_sm + (k) * a_sk)
#define GEMM_B_STORE(v, k) ((k) < K ? XPRO((v), xk0 + (k)) : (v))  // rows past K stay 0
#ifdef XLOAD
  // A depthwise input: B's element (k, n) is the depthwise sum of channel k
  // at pixel n. The prefetch loads its taps into xt (GEMM_B's value is 0),
  // GEMM_XDW_SUMS sums them after the multiply.
  float xt[LOADS_B][XLOAD_TAPS];
#define GEMM_B(k, n) xdw_fetch(xt[r], B + (k) * b_sk, (n), xdw)
#define GEMM_XDW_SUMS(k1)                                                                     \
  _Pragma("unroll") for (int r = 0; r < LOADS_B; ++r) {                                       \
    GEMM_B_COORD(r, kb, nb, b_sn == 1)                                                        \
    rb[r] = ((k1) + kb < K && n0 + nb < N) ? xdw_sum(xt[r], DW + DWo + (xk0 + (k1) + kb) * XLOAD_TAPS) \
                                           : 0.0f;                                            \
  }
  GEMM_MAIN_LOOP(GEMM_A, GEMM_B, a_sk == 1, b_sn == 1, GEMM_B_STORE, GEMM_XDW_SUMS)
#else
#define GEMM_B(k, n) LD(B, (k) * b_sk + XCOL(n) * b_sn)
  GEMM_MAIN_LOOP(GEMM_A, GEMM_B, a_sk == 1, b_sn == 1, GEMM_B_STORE, GEMM_NO_SUMS)
#endif
#ifdef SPLITK
  split_wait_zeroed(sem);
  TILE_EACH(split_add(Y + yo + YI(y0 + m * N + n),
                      alpha * acc[i][j] + (has_c && kbeg == 0 ? beta * LD(C, m * c_sm + n * c_sn) : 0.0f)))
  if (split_leave(sem, &split_flag, splits)) TILE_EACH(SPLIT_FINISH(Y + yo + YI(y0 + m * N + n), y0 + m * N + n))
#else
  TILE_EACH(ST(Y, yo + YI(y0 + m * N + n),
               EPI(alpha * acc[i][j] + (has_c ? beta * LD(C, m * c_sm + n * c_sn) : 0.0f), y0 + m * N + n)))
#endif
#ifdef ROW_NORM
  __local int rn_last;
  __local float rn_red[256];
  global_fence();
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  if (tid == 0) {
    __global volatile int* s = RSEM + z * get_num_groups(1) + get_group_id(1);
    rn_last = atomic_inc(s) == (int)get_num_groups(0) - 1;
    if (rn_last) atomic_xchg(s, 0);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (rn_last) {  // the whole group: its barriers are all the group's
    global_fence();
    // A row past M reads and writes the scratch row RSCR instead.
    const int m = m0 + tid / RN_ITEMS, part = tid % RN_ITEMS;
    __global volatile float* yr =
        m < M ? (__global volatile float*)(Y + yo + y0 + m * N) : (__global volatile float*)RSCR;
#ifdef RN_PER
    // The row read once, into registers: its loads all in flight together.
    float v[RN_PER];
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < RN_PER; ++i) {
      const int n = part + i * RN_ITEMS;
      v[i] = n < N ? yr[n] : 0.0f;
      s += v[i];
    }
    const float mean = row_norm_sum(rn_red, tid, s) / (float)N;
    float q = 0.0f;
#pragma unroll
    for (int i = 0; i < RN_PER; ++i)
      if (part + i * RN_ITEMS < N) q += (v[i] - mean) * (v[i] - mean);
    const float inv = 1.0f / sqrt(row_norm_sum(rn_red, tid, q) / (float)N + rn_eps);
#pragma unroll
    for (int i = 0; i < RN_PER; ++i) {
      const int n = part + i * RN_ITEMS;
      if (n < N) yr[n] = (v[i] - mean) * inv * LD(RNG, rngo + n) + (rn_has_bias ? LD(RNB, rnbo + n) : 0.0f);
    }
#else
    float s = 0.0f;
    for (int n = part; n < N; n += RN_ITEMS) s += yr[n];
    const float mean = row_norm_sum(rn_red, tid, s) / (float)N;
    float q = 0.0f;
    for (int n = part; n < N; n += RN_ITEMS) {
      const float d = yr[n] - mean;
      q += d * d;
    }
    const float inv = 1.0f / sqrt(row_norm_sum(rn_red, tid, q) / (float)N + rn_eps);
    for (int n = part; n < N; n += RN_ITEMS)
      yr[n] = (yr[n] - mean) * inv * LD(RNG, rngo + n) + (rn_has_bias ? LD(RNB, rnbo + n) : 0.0f);
#endif
  }
#endif
}

// 2D convolution as an implicit GEMM per (image, group): M = output channels
// of the group, N = output pixels, K = input channels of the group x KH x KW.
// A is the weight [OC, C/groups, KH, KW] read as rows; B(k, p) is the input
// pixel under tap k of output pixel p (0 in the padding), never stored.
// Each work-item loads B for one fixed pixel (decoded once) and a fixed set
// of rows of every slice, so the taps (ic, kh, kw) advance by a constant TK
// with mixed-radix carries instead of divisions per element.
//
// POOL2 (with VEC; FusedConvMaxPool): Y is the 2x2 stride-2 max pool of the
// convolution (PH x PW pooled pixels). N enumerates (pooled pixel, window
// position): n = 4 * pooled + 2 * wy + wx, so the four columns of a float4
// group are one window, which its work-item reduces at the store.
__kernel __attribute__((reqd_work_group_size(16, 16, 1)))
void conv2d_gemm(__global const real_t* X, __global const real_t* Wt, __global const real_t* Bias, __global real_t* Y,
                 ConvParams cp EPI_PARAMS YWIN_PARAMS XWIN_PARAMS) {
  CONV_PARAMS(cp)
  GEMM_LOCALS
#ifdef SPLITK
  const int z = get_group_id(2) / splits, slice = get_group_id(2) - z * splits;
#else
  const int z = get_group_id(2);
#endif
  const int img = z / groups, g = z % groups;
  const int ICg = C / groups, OCg = OC / groups;
#ifdef POOL2
  const int N = PH * PW * 4;
#else
  const int N = OH * OW;
#endif
  const int M = OCg, K = ICg * KH * KW, KHW = KH * KW;
#ifdef SPLITK
  const int kbeg = slice * kslice, kend = min(K, kbeg + kslice);  // this work-group's K range
#else
  const int kbeg = 0, kend = K;
#endif
  __global const real_t* wg = Wt + wo + g * OCg * K;
  __global const real_t* xg = X + xo + (img * C + g * ICg) * XPLANE(H, W);
  // B loader state: pixel nb = tid % TILE_N, rows kb_r = tid / TILE_N + r * (256 / TILE_N).
  const int nb = tid % TILE_N, p = n0 + nb;
#ifdef POOL2
  const int pooled = p >> 2, oh = (pooled / PW) * 2 + ((p >> 1) & 1), ow = (pooled % PW) * 2 + (p & 1);
  const bool p_in = p < N && oh < OH && ow < OW;  // ceil_mode windows may run past the conv output
#else
  const int oh = p / OW, ow = p - oh * OW;
  const bool p_in = p < N;
#endif
  const int ih0 = oh * sh - ph, iw0 = ow * sw - pw;
  int t_ic[LOADS_B], t_kh[LOADS_B], t_kw[LOADS_B];
  for (int r = 0; r < LOADS_B; ++r) {
    int k = kbeg + tid / TILE_N + r * (256 / TILE_N);
    t_ic[r] = k / KHW;
    int rem = k - t_ic[r] * KHW;
    t_kh[r] = rem / KW;
    t_kw[r] = rem - t_kh[r] * KW;
  }
  // TK as a mixed-radix step (ic, kh, kw).
  const int s_ic = TK / KHW, s_kh = (TK - s_ic * KHW) / KW, s_kw = TK - s_ic * KHW - s_kh * KW;
  float ra[LOADS_A], rb[LOADS_B];
#define CONV_LOAD_A(k0)                                                  \
  for (int r = 0; r < LOADS_A; ++r) {                                    \
    GEMM_A_COORD(r, m, k, 1)                                             \
    ra[r] = (m0 + m < M && (k0) + k < kend) ? LD(wg, (m0 + m) * K + (k0) + k) : 0.0f; \
  }
#define CONV_LOAD_B(k0)                                                                   \
  for (int r = 0; r < LOADS_B; ++r) {                                                     \
    int ih = ih0 + t_kh[r] * dh, iw = iw0 + t_kw[r] * dw;                                 \
    bool in = p_in && (k0) + tid / TILE_N + r * (256 / TILE_N) < kend && ih >= 0 && ih < H && \
              iw >= 0 && iw < W;                                                          \
    rb[r] = in ? LD(xg, t_ic[r] * XPLANE(H, W) + ih * XROW(W) + iw) : 0.0f;                   \
    t_kw[r] += s_kw;                                                                      \
    if (t_kw[r] >= KW) t_kw[r] -= KW, ++t_kh[r];                                          \
    t_kh[r] += s_kh;                                                                      \
    if (t_kh[r] >= KH) t_kh[r] -= KH, ++t_ic[r];                                          \
    t_ic[r] += s_ic;                                                                      \
  }
  CONV_LOAD_A(kbeg)
  CONV_LOAD_B(kbeg)
  for (int k0 = kbeg; k0 < kend; k0 += TK) {
    for (int r = 0; r < LOADS_A; ++r) {
      GEMM_A_COORD(r, m, k, 1)
      AS(k, m) = ra[r];
    }
    for (int r = 0; r < LOADS_B; ++r) BS(tid / TILE_N + r * (256 / TILE_N), nb) = rb[r];
    barrier(CLK_LOCAL_MEM_FENCE);
    if (k0 + TK < kend) {
      CONV_LOAD_A(k0 + TK)
      CONV_LOAD_B(k0 + TK)
    }
    GEMM_MULTIPLY_SLICE
    barrier(CLK_LOCAL_MEM_FENCE);
  }
#ifdef POOL2
  const int y0 = (img * OC + g * OCg) * PH * PW;
  ACC_UNROLL for (int i = 0; i < WPTM; ++i) {
    int m = m0 + ROW(i);
    if (m >= M) continue;
    float bias = has_bias ? LD(Bias, bo + g * OCg + m) : 0.0f;
    ACC_UNROLL for (int j4 = 0; j4 < WPTN / 4; ++j4) {
      int q = n0 + COL(4 * j4);  // a multiple of 4: one window
      if (q >= N) continue;
      int pooled = q >> 2, py = pooled / PW, px = pooled - py * PW;
      float best = -INFINITY;  // padding never wins
      for (int c = 0; c < 4; ++c)
        if (py * 2 + (c >> 1) < OH && px * 2 + (c & 1) < OW)
          best = fmax(best, EPI(acc[i][4 * j4 + c] + bias, y0 + m * PH * PW + pooled));
      ST(Y, yo + YI(y0 + m * PH * PW + pooled), best);
    }
  }
#elif defined(SPLITK)
  const int y0 = (img * OC + g * OCg) * N;
  ACC_UNROLL for (int i = 0; i < WPTM; ++i) {
    int m = m0 + ROW(i);
    if (m >= M) continue;
    float bias = has_bias && kbeg == 0 ? LD(Bias, bo + g * OCg + m) : 0.0f;
    ACC_UNROLL for (int j = 0; j < WPTN; ++j) {
      int q = n0 + COL(j);
      if (q < N) split_add(Y + yo + y0 + m * N + q, acc[i][j] + bias);
    }
  }
#else
  const int y0 = (img * OC + g * OCg) * N;
  ACC_UNROLL for (int i = 0; i < WPTM; ++i) {
    int m = m0 + ROW(i);
    if (m >= M) continue;
    float bias = has_bias ? LD(Bias, bo + g * OCg + m) : 0.0f;
    ACC_UNROLL for (int j = 0; j < WPTN; ++j) {
      int q = n0 + COL(j);
      if (q < N) ST(Y, yo + YI(y0 + m * N + q), EPI(acc[i][j] + bias, y0 + m * N + q));
    }
  }
#endif
}

// Split-K's passes around the slices over Y's `total` elements: zeroed
// before them, the epilogue applied in place after. The finish pass zeroes
// Z's `ztotal` elements too: the next split product's zeroing pass, where
// it comes right after (lower::absorb_zeroing; 0 where there is none).
__kernel void splitk_zero(__global real_t* Y, int yo, int total) {
  const int i = get_global_id(0);
  if (i < total) ST(Y, yo + i, 0.0f);
}

__kernel void splitk_finish(__global real_t* Y, int yo, int total, __global real_t* Z, int zo, int ztotal EPI_PARAMS) {
  const int i = get_global_id(0);
  if (i < ztotal) ST(Z, zo + i, 0.0f);
  if (i < total) ST(Y, yo + i, EPI(LD(Y, yo + i), i));
}

// Input pixel under tap k = (ic, kh, kw) of output pixel p = (oh, ow).
inline float conv_tap(__global const real_t* x, int k, int p, int H, int W, int OW, int KW, int KHW, int sh,
                      int sw, int ph, int pw, int dh, int dw, int plane, int row) {
  int ic = k / KHW, r = k - ic * KHW, kh = r / KW, kw = r - kh * KW;
  int oh = p / OW, ow = p - oh * OW;
  int ih = oh * sh - ph + kh * dh, iw = ow * sw - pw + kw * dw;
  return (ih >= 0 && ih < H && iw >= 0 && iw < W) ? LD(x, ic * plane + ih * row + iw) : 0.0f;
}

// conv2d_gemm with every tap decoded by divisions where it is loaded: the
// previous session's kernel, kept as the baseline of bench/kernels.
__kernel __attribute__((reqd_work_group_size(16, 16, 1)))
void conv2d_gemm_taps(__global const real_t* X, __global const real_t* Wt, __global const real_t* Bias,
                      __global real_t* Y, ConvParams cp EPI_PARAMS YWIN_PARAMS XWIN_PARAMS) {
  CONV_PARAMS(cp)
  GEMM_LOCALS
  const int z = get_group_id(2), img = z / groups, g = z % groups;
  const int ICg = C / groups, OCg = OC / groups;
  const int M = OCg, N = OH * OW, K = ICg * KH * KW, KHW = KH * KW;
  __global const real_t* wg = Wt + wo + g * OCg * K;
  __global const real_t* xg = X + xo + (img * C + g * ICg) * XPLANE(H, W);
#define CONV_A(m, k) LD(wg, (m) * K + (k))
#define CONV_B(k, p) conv_tap(xg, k, p, H, W, OW, KW, KHW, sh, sw, ph, pw, dh, dw, XPLANE(H, W), XROW(W))
  GEMM_MAIN_LOOP(CONV_A, CONV_B, 1, 1, GEMM_AS_LOADED, GEMM_NO_SUMS)
  const int y0 = (img * OC + g * OCg) * N;
  ACC_UNROLL for (int i = 0; i < WPTM; ++i) {
    int m = m0 + ROW(i);
    if (m >= M) continue;
    float bias = has_bias ? LD(Bias, bo + g * OCg + m) : 0.0f;
    ACC_UNROLL for (int j = 0; j < WPTN; ++j) {
      int q = n0 + COL(j);
      if (q < N) ST(Y, yo + YI(y0 + m * N + q), EPI(acc[i][j] + bias, y0 + m * N + q));
    }
  }
}

// Transposed convolution whose taps tile the output exactly (stride ==
// kernel, no padding or dilation): every output pixel gets one tap, so it is
// a GEMM per (image, group) with M = (oc, kh, kw), N = input pixels, K =
// input channels of the group, and a scattering store.
__kernel __attribute__((reqd_work_group_size(16, 16, 1)))
void conv_transpose2d_gemm(__global const real_t* X, int xo, __global const real_t* Wt, int wo,
                           __global const real_t* Bias, int bo, __global real_t* Y, int yo, int has_bias, int C,
                           int H, int W, int OC, int KH, int KW, int groups) {
  GEMM_LOCALS
  const int z = get_group_id(2), img = z / groups, g = z % groups;
  const int ICg = C / groups, OCg = OC / groups, KHW = KH * KW;
  const int M = OCg * KHW, N = H * W, K = ICg, OW = W * KW, OHW = H * KH * OW;
  __global const real_t* wg = Wt + wo + g * ICg * M;  // weight [C, OCg, KH, KW]: row k is (oc, kh, kw)
  __global const real_t* xg = X + xo + (img * C + g * ICg) * N;
#define CT_A(m, k) LD(wg, (k) * M + (m))
#define CT_B(k, n) LD(xg, (k) * N + (n))
  GEMM_MAIN_LOOP(CT_A, CT_B, 0, 1, GEMM_AS_LOADED, GEMM_NO_SUMS)
  __global real_t* yg = Y + yo + (img * OC + g * OCg) * OHW;
  ACC_UNROLL for (int i = 0; i < WPTM; ++i) {
    int m = m0 + ROW(i);
    if (m >= M) continue;
    int oc = m / KHW, r = m - oc * KHW, kh = r / KW, kw = r - kh * KW;
    float bias = has_bias ? LD(Bias, bo + g * OCg + oc) : 0.0f;
    ACC_UNROLL for (int j = 0; j < WPTN; ++j) {
      int n = n0 + COL(j);
      if (n >= N) continue;
      int ih = n / W, iw = n - ih * W;
      ST(yg, oc * OHW + (ih * KH + kh) * OW + iw * KW + kw, acc[i][j] + bias);
    }
  }
}

// Matrix-vector products (GEMMs with M or N = 1, which one tile would leave
// mostly idle): a work-group of 64 reduces each output's dot product of
// length K. Output o = sum_k Mat[o*m_so + k*m_sk] * Vec[k*v_sk]; batched like
// gemm; Y contiguous, O outputs per batch.
#define GV 64
__kernel __attribute__((reqd_work_group_size(GV, 1, 1)))
void gemv(__global const real_t* Mat, int mo, __global const real_t* Vec, int vo, __global const real_t* C, int co,
          __global real_t* Y, int yo, int O, int K, int m_so, int m_sk, int v_sk, int c_so, int has_c, float alpha,
          float beta, Dims batch, Dims m_sb, Dims v_sb, Dims c_sb EPI_PARAMS YWIN_PARAMS XWIN_PARAMS) {
  __local float s[GV];
  const int o = get_group_id(0), z = get_group_id(1), l = get_local_id(0);
  __global const real_t* row = Mat + mo + strided_offset(z, batch, m_sb) + o * m_so;
  __global const real_t* v = Vec + vo + strided_offset(z, batch, v_sb);
  float a = 0.0f;
#ifdef GV_VEC4  // unit strides, K % 4 == 0, every row and the vector 16-byte aligned (lower/conv.cpp)
  // Four times the bytes in flight per load: a few hundred outputs (a
  // classifier's) fill the GPU's memory pipe only so.
#pragma unroll 4
  for (int k = 4 * l; k < K; k += 4 * GV) a += dot(*(__global const float4*)(row + k), *(__global const float4*)(v + k));
#else
  for (int k = l; k < K; k += GV) a += LD(row, k * m_sk) * LD(v, k * v_sk);
#endif
  s[l] = a;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int h = GV / 2; h > 0; h >>= 1) {
    if (l < h) s[l] += s[l + h];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (l == 0) {
    float y = alpha * s[0];
    if (has_c) y += beta * LD(C, co + strided_offset(z, batch, c_sb) + o * c_so);
    ST(Y, yo + YI(z * O + o), EPI(y, z * O + o));
  }
}
