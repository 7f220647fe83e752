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
