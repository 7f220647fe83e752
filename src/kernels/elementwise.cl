// Elementwise operators, fp32 unless the name says otherwise. One work-item
// per element; `_bc` variants broadcast through strides (0 on broadcast dims).

#define UNARY(NAME, EXPR)                                                           \
  __kernel void NAME(__global const real_t* x, int xo, __global real_t* y, int yo, \
                     int n, float p0, float p1) {                                   \
    int i = get_global_id(0);                                                       \
    if (i >= n) return;                                                             \
    float v = LD(x, xo + i);                                                        \
    ST(y, yo + i, (EXPR));                                                          \
  }

UNARY(relu, v > 0.0f ? v : 0.0f)
UNARY(leaky_relu, v >= 0.0f ? v : v * p0)
UNARY(clip, fmin(fmax(v, p0), p1))
UNARY(sigmoid, 1.0f / (1.0f + exp(-v)))
UNARY(tanh_f, tanh(v))
UNARY(hard_sigmoid, fmax(0.0f, fmin(1.0f, p0 * v + p1)))
UNARY(hard_swish, v * fmax(0.0f, fmin(1.0f, v / 6.0f + 0.5f)))
UNARY(erf_f, erf(v))
UNARY(gelu, 0.5f * v * (1.0f + erf(v * 0.70710678118654752f)))
UNARY(gelu_tanh, 0.5f * v * (1.0f + tanh(0.79788456080286536f * (v + 0.044715f * v * v * v))))
UNARY(exp_f, exp(v))
UNARY(log_f, log(v))
UNARY(neg, -v)
UNARY(abs_f, fabs(v))
UNARY(reciprocal, 1.0f / v)
UNARY(sqrt_f, sqrt(v))
UNARY(floor_f, floor(v))
UNARY(round_f, rint(v))  // halves to even
UNARY(ceil_f, ceil(v))
UNARY(elu, v >= 0.0f ? v : p0 * (exp(v) - 1.0f))
UNARY(softplus, log(exp(v) + 1.0f))
UNARY(sin_f, sin(v))
UNARY(cos_f, cos(v))

// Per element type T: its type in memory (floats: real_t, common.cl) and
// its load and store.
#define MEM_float real_t
#define MEM_long long
#define MEM_int int
#define MEM_uchar uchar
#define LD_float(p, i) LD(p, i)
#define ST_float(p, i, v) ST(p, i, v)
#define LD_PLAIN(p, i) ((p)[i])
#define ST_PLAIN(p, i, v) ((p)[i] = (v))
#define LD_long LD_PLAIN
#define LD_int LD_PLAIN
#define LD_uchar LD_PLAIN
#define ST_long ST_PLAIN
#define ST_int ST_PLAIN
#define ST_uchar ST_PLAIN

// Binary op on T inputs producing R: NAME (same shapes) and NAME_bc (broadcast).
#define BINARY(NAME, T, R, EXPR)                                                             \
  __kernel void NAME(__global const MEM_##T* a, int ao, __global const MEM_##T* b, int bo,  \
                     __global MEM_##R* y, int yo, int n) {                                  \
    int i = get_global_id(0);                                                               \
    if (i >= n) return;                                                                     \
    T u = LD_##T(a, ao + i), v = LD_##T(b, bo + i);                                         \
    ST_##R(y, yo + i, (R)(EXPR));                                                           \
  }                                                                                         \
  __kernel void NAME##_bc(__global const MEM_##T* a, int ao, __global const MEM_##T* b,     \
                          int bo, __global MEM_##R* y, int yo, int n, Dims dims, Dims sa,   \
                          Dims sb) {                                                        \
    int i = get_global_id(0);                                                               \
    if (i >= n) return;                                                                     \
    int oa, ob;                                                                             \
    strided_offset2(i, dims, sa, sb, &oa, &ob);                                             \
    T u = LD_##T(a, ao + oa), v = LD_##T(b, bo + ob);                                       \
    ST_##R(y, yo + i, (R)(EXPR));                                                           \
  }

BINARY(add_f32, float, float, u + v)
BINARY(sub_f32, float, float, u - v)
BINARY(mul_f32, float, float, u * v)
BINARY(div_f32, float, float, u / v)
BINARY(max_f32, float, float, fmax(u, v))
BINARY(min_f32, float, float, fmin(u, v))
// pow is only accurate to a few ulp; squares (LayerNorm patterns) are exact.
BINARY(pow_f32, float, float, v == 2.0f ? u * u : pow(u, v))
BINARY(equal_f32, float, uchar, u == v)
BINARY(less_f32, float, uchar, u < v)
BINARY(greater_f32, float, uchar, u > v)
BINARY(add_i64, long, long, u + v)
BINARY(sub_i64, long, long, u - v)
BINARY(mul_i64, long, long, u * v)
BINARY(div_i64, long, long, v != 0 ? u / v : 0)
BINARY(max_i64, long, long, max(u, v))
BINARY(min_i64, long, long, min(u, v))
BINARY(equal_i64, long, uchar, u == v)
BINARY(less_i64, long, uchar, u < v)
BINARY(greater_i64, long, uchar, u > v)

// y = cond ? a : b, all three broadcast to y; T is the element's bit pattern.
#define WHERE(NAME, T)                                                                       \
  __kernel void NAME(__global const uchar* c, int co, __global const T* a, int ao,          \
                     __global const T* b, int bo, __global T* y, int yo, int n, Dims dims,  \
                     Dims sc, Dims sa, Dims sb) {                                           \
    int i = get_global_id(0);                                                               \
    if (i >= n) return;                                                                     \
    int oa, ob;                                                                             \
    strided_offset2(i, dims, sa, sb, &oa, &ob);                                             \
    y[yo + i] = c[co + strided_offset(i, dims, sc)] ? a[ao + oa] : b[bo + ob];              \
  }
WHERE(where_b2, ushort)
WHERE(where_b4, uint)
WHERE(where_b8, ulong)

#define CAST(NAME, S, D, EXPR)                                                              \
  __kernel void NAME(__global const MEM_##S* x, int xo, __global MEM_##D* y, int yo, int n) { \
    int i = get_global_id(0);                                                               \
    if (i >= n) return;                                                                     \
    S v = LD_##S(x, xo + i);                                                                \
    ST_##D(y, yo + i, (D)(EXPR));                                                           \
  }
CAST(cast_f32_i64, float, long, (long)v)
CAST(cast_i64_f32, long, float, (float)v)
CAST(cast_f32_i32, float, int, (int)v)
CAST(cast_i32_f32, int, float, (float)v)
CAST(cast_i64_i32, long, int, (int)v)
CAST(cast_i32_i64, int, long, (long)v)
CAST(cast_f32_bool, float, uchar, v != 0.0f)
CAST(cast_i64_bool, long, uchar, v != 0)
CAST(cast_bool_f32, uchar, float, v ? 1.0f : 0.0f)
CAST(cast_bool_i64, uchar, long, v ? 1 : 0)

// --precision fp16 at a run's boundary (runtime/session.cpp): the caller's
// fp32 device tensors to half storage and back (round to nearest even).
// `scale`: a power of two (Tensor::storage_exponent's), exact both ways.
__kernel void f32_to_half(__global const float* x, int xo, __global half* y, int yo, int n, float scale) {
  int i = get_global_id(0);
  if (i < n) vstore_half(x[xo + i] * scale, yo + i, y);
}
__kernel void half_to_f32(__global const half* x, int xo, __global float* y, int yo, int n, float scale) {
  int i = get_global_id(0);
  if (i < n) y[yo + i] = vload_half(xo + i, x) * scale;
}
