// Shared by the CPU-device kernel files (cpu_conv.cl, cpu_depthwise.cl, ...):
// the register block OCB x PB, PB-wide vector types and the block store
// that applies a fused epilogue (EPI, EPI_VEC). lower/opencl_cpu/common.cpp
// puts this text after the epilogue's prelude and before the kernel file.
#ifndef OCB
#define OCB 8
#endif
#ifndef PB
#define PB 16
#endif
#ifndef EPI
#define EPI(v, i) (v)
#define EPI_PARAMS
#define EPI_NONE
#endif

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define VF CAT(float, PB)
#define VI CAT(int, PB)
#define VLOAD CAT(vload, PB)
#define VSTORE CAT(vstore, PB)
#if PB == 16
#define LANES (VI)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)
#elif PB == 8
#define LANES (VI)(0, 1, 2, 3, 4, 5, 6, 7)
#else
#error PB must be 8 or 16
#endif

// Stores the vector v of results at elements [i, i+PB) of Y, only the first
// n when the block is cut by the end; a macro so EPI sees the kernel's
// parameters.
#ifdef EPI_NONE
#define STORE_BLOCK(i, v, n)                                                   \
  do {                                                                         \
    if ((n) >= PB && YRUN((i), PB)) {                                          \
      STV(PB, Y + yo + YI(i), (v));                                            \
    } else {                                                                   \
      float t_[PB];                                                            \
      VSTORE((v), 0, t_);                                                      \
      for (int j_ = 0; j_ < PB && j_ < (n); ++j_) ST(Y, yo + YI((i) + j_), t_[j_]); \
    }                                                                          \
  } while (0)
#elif defined(EPI_VEC)
// The epilogue runs on the vector (EPI_VECTOR_WIDTH == PB), cut blocks too.
#define STORE_BLOCK(i, v, n)                                                   \
  do {                                                                         \
    const VF e_ = EPI_VEC((v), (i), (n));                                      \
    if ((n) >= PB && YRUN((i), PB)) {                                          \
      STV(PB, Y + yo + YI(i), e_);                                             \
    } else {                                                                   \
      float t_[PB];                                                            \
      VSTORE(e_, 0, t_);                                                       \
      for (int j_ = 0; j_ < PB && j_ < (n); ++j_) ST(Y, yo + YI((i) + j_), t_[j_]); \
    }                                                                          \
  } while (0)
#else
#define STORE_BLOCK(i, v, n)                                                   \
  do {                                                                         \
    float t_[PB];                                                              \
    VSTORE((v), 0, t_);                                                        \
    for (int j_ = 0; j_ < PB && j_ < (n); ++j_) ST(Y, yo + YI((i) + j_), EPI(t_[j_], (i) + j_)); \
  } while (0)
#endif

