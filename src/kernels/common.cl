// Prepended to every kernel file (Device::program). Tensors are passed as a
// buffer plus an element offset; shapes and strides as Dims by value.
#define MAXR 8
typedef struct { int d[MAXR]; } Dims;  // right-aligned, see runtime/ops.h

// Offset in a strided operand of element i of the contiguous space `dims`.
inline int strided_offset(int i, Dims dims, Dims st) {
  int off = 0;
#pragma unroll
  for (int k = MAXR - 1; k >= 0; --k) {
    int n = dims.d[k];
    if (n > 1) {
      off += (i % n) * st.d[k];
      i /= n;
    }
  }
  return off;
}

// Same walk for two operands at once.
inline void strided_offset2(int i, Dims dims, Dims sa, Dims sb, int* oa, int* ob) {
  int a = 0, b = 0;
#pragma unroll
  for (int k = MAXR - 1; k >= 0; --k) {
    int n = dims.d[k];
    if (n > 1) {
      int c = i % n;
      a += c * sa.d[k];
      b += c * sb.d[k];
      i /= n;
    }
  }
  *oa = a;
  *ob = b;
}

#ifdef SPLITK
// Split-K's partial sums added into Y (gemm.cl, gemm_mma.cl). TEXPLAN_PTX
// (NVIDIA's own driver only, which offers no float atomics): inline PTX, a
// fire-and-forget reduction at L2; elsewhere OpenCL 1.1's global int32
// compare-and-swap on the float's bits.
#ifdef TEXPLAN_PTX
inline void split_add(__global float* p, float v) {
  asm volatile("red.global.add.f32 [%0], %1;" ::"l"(p), "f"(v) : "memory");
}
#else
inline void split_add(__global float* p, float v) {
  volatile __global int* q = (volatile __global int*)p;
  int old = *q;
  for (;;) {
    int seen = atomic_cmpxchg(q, old, as_int(as_float(old) + v));
    if (seen == old) break;
    old = seen;
  }
}
#endif
#endif
