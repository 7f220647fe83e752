// FusedElementwise: y[i] = program(x0[i], x1[i], ...), the operands and the
// program generated into the prelude as EPI and EPI_PARAMS
// (lower/epilogue_cl.h). Each work-item reads its operands before writing
// y[i]: y may share storage with an input. A file of its own, so each
// program builds only this kernel.
__kernel void fused_elementwise(__global real_t* y, int yo, int n EPI_PARAMS YWIN_PARAMS XWIN_PARAMS) {
  int i = get_global_id(0);
  if (i >= n) return;
  ST(y, yo + YI(i), EPI(0.0f, i));
}

#ifdef GATHER_INDEX
// FusedGather (lower/fused.cpp): shape.cl's gather of floats (x viewed as
// [outer, axis_len, inner], indices of type GATHER_INDEX flattened to
// [nidx]), then the program. An index out of range gathers 0 and is
// reported in `fault` (common.cl index_fault).
// GATHER_ROW(t): row t = (o, j) of the output; `row` is where its data
// start in x (the first row when the index is out of range: `in` false).
#define GATHER_ROW(t)                                               \
  const int j = (t) % nidx, o = (t) / nidx;                         \
  long k = idx[io + j];                                             \
  if (k < 0) k += axis_len;                                         \
  const bool in = k >= 0 && k < axis_len;                           \
  if (!in) index_fault(fault, node, idx[io + j]);                   \
  const int row = xo + (o * axis_len + (in ? (int)k : 0)) * inner;
__kernel void fused_gather(__global const real_t* x, int xo, __global const GATHER_INDEX* idx, int io,
                           __global real_t* y, int yo, int n, int axis_len, int nidx, int inner,
                           __global int* fault, int node EPI_PARAMS YWIN_PARAMS XWIN_PARAMS) {
  int i = get_global_id(0);
  if (i >= n) return;
  GATHER_ROW(i / inner)
  ST(y, yo + YI(i), EPI(in ? LD(x, row + i % inner) : 0.0f, i));
}

// CPU devices: one work-item per gathered row of `inner` elements, the index
// read once (shape.cl's gather_rows).
__kernel void fused_gather_rows(__global const real_t* x, int xo, __global const GATHER_INDEX* idx, int io,
                                __global real_t* y, int yo, int rows, int axis_len, int nidx, int inner,
                                __global int* fault, int node EPI_PARAMS YWIN_PARAMS XWIN_PARAMS) {
  int q = get_global_id(0);
  if (q >= rows) return;
  GATHER_ROW(q)
  for (int r = 0, i = q * inner; r < inner; ++r, ++i) ST(y, yo + YI(i), EPI(in ? LD(x, row + r) : 0.0f, i));
}
#endif

#ifdef EPI_ROW_SETUP
// CPU devices, operands read through broadcast strides (a BatchNormalization's
// per-channel scale): a work-item a row of the innermost dim, each strided
// operand's place found once a row, not by dividing every dim per element.
// Every operand is read at the element written, so the row has no
// dependence between elements even in place (Y over an operand): without
// the pragma LLVM checked Y against the operands at run time and, in
// place, ran the scalar loop, 7-19x slower on PoCL (docs/cpu-kernels.md#fused-elementwise-rows-in-place).
__kernel void fused_elementwise_rows(__global real_t* y, int yo, int rows, int L EPI_PARAMS YWIN_PARAMS XWIN_PARAMS) {
  int r = get_global_id(0);
  if (r >= rows) return;
  EPI_ROW_SETUP(r, L)
#pragma clang loop vectorize(assume_safety)
  for (int j = 0, i = r * L; j < L; ++j, ++i) ST(y, yo + YI(i), EPI_R(0.0f, i, j));
}
#endif

// FusedMlp (lower/fused.cpp): per image (work-group), two fully
// connected layers of a vector: h = mlp_hidden(W1 x + b1) (HID values, in
// local memory), then Y = EPI(W2 h + b2). Each layer's rows are dealt round
// the work-items, a row's dot product along its contiguous weights four at
// a time: one item on CPU devices (PoCL runs a group on one thread and
// vectorizes the float4s), 256 elsewhere (where the kernel catalog keeps
// the fusion off: docs/kernel-choices.md#fusedmlp-on-gpus).
//
// A row's dot product with x in one address space (OpenCL 1.2 has no
// generic one): the same function for global and local x.
#define MLP_DOT(name, space)                                                                         \
  inline float name(__global const real_t* w, space const XT* x, int n) {                            \
    float4 s = (float4)(0.0f);                                                                       \
    int k = 0;                                                                                       \
    for (; k + 4 <= n; k += 4) s = fma(LDV(4, w + k), XV(x + k), s);                                 \
    float r = (s.x + s.y) + (s.z + s.w);                                                             \
    for (; k < n; ++k) r = fma(LD(w, k), XL(x, k), r);                                               \
    return r;                                                                                        \
  }
// x in global memory is stored as the tensors are; in local memory it is float.
#define XT real_t
#define XV(p) LDV(4, p)
#define XL(p, k) LD(p, k)
MLP_DOT(mlp_dot, __global)
#undef XT
#undef XV
#undef XL
#define XT float
#define XV(p) vload4(0, p)
#define XL(p, k) ((p)[k])
MLP_DOT(mlp_dot_local, __local)
#ifdef MLP_HID
__kernel void mlp2(__global const real_t* X, int xo, __global const real_t* W1, int w1o, __global const real_t* B1,
                   int b1o, __global const real_t* W2, int w2o, __global const real_t* B2, int b2o, __global real_t* Y,
                   int yo, int C, int O, int has_b1, int has_b2 EPI_PARAMS) {
  __local float h[MLP_HID];
  const int img = get_group_id(0), lid = get_local_id(0), n = get_local_size(0);
  __global const real_t* x = X + xo + img * C;
  for (int j = lid; j < MLP_HID; j += n) {
    const float s = mlp_dot(W1 + w1o + j * C, x, C) + (has_b1 ? LD(B1, b1o + j) : 0.0f);
    h[j] = mlp_hidden(s);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int o = lid; o < O; o += n) {
    const float s = mlp_dot_local(W2 + w2o + o * MLP_HID, h, MLP_HID) + (has_b2 ? LD(B2, b2o + o) : 0.0f);
    ST(Y, yo + img * O + o, EPI(s, img * O + o));
  }
}
#endif
