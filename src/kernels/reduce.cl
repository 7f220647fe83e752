// Reductions and Softmax. `_rows` kernels give each contiguous row to one
// work-group of RG (tree reduction in local memory); the strided kernels
// give each output to one work-item. RG is 64 but for reduce_rows of long
// rows (lower/reduce.cpp launch_reduce_rows).

#ifndef RG
#define RG 64
#endif
// op: 0 sum, 1 mean, 2 max, 3 min
inline float reduce_init(int op) { return op == 2 ? -INFINITY : op == 3 ? INFINITY : 0.0f; }
inline float reduce_step(int op, float a, float v) { return op == 2 ? fmax(a, v) : op == 3 ? fmin(a, v) : a + v; }

// Reduces `v` over the work-group; every work-item gets the result.
inline float group_reduce(__local float* s, float v, int op) {
  int l = get_local_id(0);
  s[l] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int h = RG / 2; h > 0; h >>= 1) {
    if (l < h) s[l] = reduce_step(op, s[l], s[l + h]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  float r = s[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
}

// y[row] = reduce(x[row, 0..R)).
__kernel __attribute__((reqd_work_group_size(RG, 1, 1)))
void reduce_rows(__global const real_t* x, int xo, __global real_t* y, int yo, int R, int op) {
  __local float s[RG];
  int row = get_group_id(0), l = get_local_id(0);
  __global const real_t* xr = x + xo + row * R;
  // Four loads in flight per item before their adds.
  float a0 = reduce_init(op), a1 = a0, a2 = a0, a3 = a0;
  int r = l;
  for (; r + 3 * RG < R; r += 4 * RG) {
    a0 = reduce_step(op, a0, LD(xr, r));
    a1 = reduce_step(op, a1, LD(xr, r + RG));
    a2 = reduce_step(op, a2, LD(xr, r + 2 * RG));
    a3 = reduce_step(op, a3, LD(xr, r + 3 * RG));
  }
  for (; r < R; r += RG) a0 = reduce_step(op, a0, LD(xr, r));
  float a = group_reduce(s, reduce_step(op, reduce_step(op, a0, a1), reduce_step(op, a2, a3)), op);
  if (l == 0) ST(y, yo + row, op == 1 ? a / (float)R : a);
}

// Output i (kept dims `odims`, input strides `ost`) reduces the R elements
// of the reduced dims `rdims` (input strides `rst`).
__kernel void reduce_strided(__global const real_t* x, int xo, __global real_t* y, int yo, int n, int R,
                             Dims odims, Dims ost, Dims rdims, Dims rst, int op) {
  int i = get_global_id(0);
  if (i >= n) return;
  __global const real_t* xb = x + xo + strided_offset(i, odims, ost);
  float a = reduce_init(op);
  for (int r = 0; r < R; ++r) a = reduce_step(op, a, LD(xb, strided_offset(r, rdims, rst)));
  ST(y, yo + i, op == 1 ? a / (float)R : a);
}

// Softmax over contiguous rows of R; log_ != 0 gives LogSoftmax.
__kernel __attribute__((reqd_work_group_size(RG, 1, 1)))
void softmax_rows(__global const real_t* x, int xo, __global real_t* y, int yo, int R, int log_) {
  __local float s[RG];
  int row = get_group_id(0), l = get_local_id(0);
  __global const real_t* xr = x + xo + row * R;
  __global real_t* yr = y + yo + row * R;
  float m = -INFINITY;
  for (int r = l; r < R; r += RG) m = fmax(m, LD(xr, r));
  m = group_reduce(s, m, 2);
  float sum = 0.0f;
  for (int r = l; r < R; r += RG) sum += exp(LD(xr, r) - m);
  sum = group_reduce(s, sum, 0);
  if (log_) {
    float ls = log(sum);
    for (int r = l; r < R; r += RG) ST(yr, r, LD(xr, r) - m - ls);
  } else {
    for (int r = l; r < R; r += RG) ST(yr, r, exp(LD(xr, r) - m) / sum);
  }
}

// Softmax over the middle dim of [outer, R, inner]; one work-item per (outer, inner).
__kernel void softmax_strided(__global const real_t* x, int xo, __global real_t* y, int yo, int n, int R,
                              int inner, int log_) {
  int i = get_global_id(0);
  if (i >= n) return;
  int base = (i / inner) * R * inner + i % inner;
  __global const real_t* xr = x + xo + base;
  __global real_t* yr = y + yo + base;
  float m = -INFINITY;
  for (int r = 0; r < R; ++r) m = fmax(m, LD(xr, r * inner));
  float sum = 0.0f;
  for (int r = 0; r < R; ++r) sum += exp(LD(xr, r * inner) - m);
  float ls = log(sum);
  for (int r = 0; r < R; ++r) ST(yr, r * inner, log_ ? LD(xr, r * inner) - m - ls : exp(LD(xr, r * inner) - m) / sum);
}

// CPU devices (PoCL): one work-item per contiguous row of R, no local memory
// or barriers. Max, sum and the stores run over 16-wide vectors (a tail of
// R % 16 in scalars); y may be x (each element is read before it is written).
// y[row] = reduce(x[row, 0..R)), one row per work-item.
__kernel void reduce_rows_cpu(__global const real_t* x, int xo, __global real_t* y, int yo, int rows, int R, int op) {
  int row = get_global_id(0);
  if (row >= rows) return;
  __global const real_t* xr = x + xo + (long)row * R;
  int V = R & ~15;
  float16 a16 = (float16)(reduce_init(op));
  float a = reduce_init(op);
  if (op <= 1) {
    for (int r = 0; r < V; r += 16) a16 += LDV(16, xr + r);
    for (int r = V; r < R; ++r) a += LD(xr, r);
    a += hsum16(a16);
  } else {
    for (int r = 0; r < V; r += 16) a16 = op == 2 ? fmax(a16, LDV(16, xr + r)) : fmin(a16, LDV(16, xr + r));
    for (int r = V; r < R; ++r) a = reduce_step(op, a, LD(xr, r));
    a = reduce_step(op, a, op == 2 ? hmax16(a16) : -hmax16(-a16));
  }
  ST(y, yo + row, op == 1 ? a / (float)R : a);
}

__kernel void softmax_rows_cpu(__global const real_t* x, int xo, __global real_t* y, int yo, int rows, int R,
                               int log_) {
  int row = get_global_id(0);
  if (row >= rows) return;
  __global const real_t* xr = x + xo + (long)row * R;
  __global real_t* yr = y + yo + (long)row * R;
  int V = R & ~15;
  float16 m16 = (float16)(-INFINITY);
  for (int r = 0; r < V; r += 16) m16 = fmax(m16, LDV(16, xr + r));
  float m = hmax16(m16);
  for (int r = V; r < R; ++r) m = fmax(m, LD(xr, r));
  float16 s16 = (float16)(0.0f);
  float sum = 0.0f;
  if (log_) {
    for (int r = 0; r < V; r += 16) s16 += exp(LDV(16, xr + r) - m);
    for (int r = V; r < R; ++r) sum += exp(LD(xr, r) - m);
    float shift = m + log(sum + hsum16(s16));
    for (int r = 0; r < V; r += 16) STV(16, yr + r, LDV(16, xr + r) - shift);
    for (int r = V; r < R; ++r) ST(yr, r, LD(xr, r) - shift);
    return;
  }
  for (int r = 0; r < V; r += 16) {
    float16 e = exp(LDV(16, xr + r) - m);
    STV(16, yr + r, e);
    s16 += e;
  }
  for (int r = V; r < R; ++r) {
    float e = exp(LD(xr, r) - m);
    ST(yr, r, e);
    sum += e;
  }
  float inv = 1.0f / (sum + hsum16(s16));
  for (int r = 0; r < V; r += 16) STV(16, yr + r, LDV(16, yr + r) * inv);
  for (int r = V; r < R; ++r) ST(yr, r, LD(yr, r) * (inv));
}
