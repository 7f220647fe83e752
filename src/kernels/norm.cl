// Normalizations.

// BatchNormalization (inference) over NCHW-like [N, C, inner].
__kernel void batch_norm(__global const real_t* x, int xo, __global const real_t* scale, int so,
                         __global const real_t* bias, int bo, __global const real_t* mean, int mo,
                         __global const real_t* var, int vo, __global real_t* y, int yo, int n, int C, int inner,
                         float eps) {
  int i = get_global_id(0);
  if (i >= n) return;
  int c = (i / inner) % C;
  ST(y, yo + i, (LD(x, xo + i) - LD(mean, mo + c)) / sqrt(LD(var, vo + c) + eps) * LD(scale, so + c) + LD(bias, bo + c));
}

#define RG 64
inline float group_sum(__local float* s, float v) {
  int l = get_local_id(0);
  s[l] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int h = RG / 2; h > 0; h >>= 1) {
    if (l < h) s[l] += s[l + h];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  float r = s[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
}

// The mean and inverse standard deviation of a row of R, by the work-group:
// the mean, then the variance of the centred values (two passes: no
// cancellation).
inline float2 row_moments(__local float* s, __global const real_t* xr, int R, float eps) {
  int l = get_local_id(0);
  float sum = 0.0f;
  for (int r = l; r < R; r += RG) sum += LD(xr, r);
  float mean = group_sum(s, sum) / (float)R;
  float sq = 0.0f;
  for (int r = l; r < R; r += RG) {
    float d = LD(xr, r) - mean;
    sq += d * d;
  }
  return (float2)(mean, 1.0f / sqrt(group_sum(s, sq) / (float)R + eps));
}

// LayerNormalization over contiguous rows of R, then scale and bias.
// stats bit 1 / bit 2: also write each row's mean / inverse std deviation.
__kernel __attribute__((reqd_work_group_size(RG, 1, 1)))
void layer_norm(__global const real_t* x, int xo, __global const real_t* scale, int so, __global const real_t* bias,
                int bo, int has_bias, __global real_t* y, int yo, __global real_t* mean_out, int mno,
                __global real_t* inv_out, int ivo, int stats, int R, float eps) {
  __local float s[RG];
  int row = get_group_id(0), l = get_local_id(0);
  __global const real_t* xr = x + xo + row * R;
  __global real_t* yr = y + yo + row * R;
  float2 m = row_moments(s, xr, R, eps);
  float mean = m.x, inv = m.y;
  if (l == 0 && (stats & 1)) ST(mean_out, mno + row, mean);
  if (l == 0 && (stats & 2)) ST(inv_out, ivo + row, inv);
  for (int r = l; r < R; r += RG)
    ST(yr, r, (LD(xr, r) - mean) * inv * LD(scale, so + r) + (has_bias ? LD(bias, bo + r) : 0.0f));
}

// InstanceNormalization: layer_norm's two passes over each (n, c) row of R
// spatial values, scaled and shifted per channel (row % C). GroupNormalization
// arrives as one over N x G x rest (import/newer_schemas.cpp, and PyTorch's
// exporters write it so).
__kernel __attribute__((reqd_work_group_size(RG, 1, 1)))
void instance_norm(__global const real_t* x, int xo, __global const real_t* scale, int so, __global const real_t* bias,
                   int bo, __global real_t* y, int yo, int C, int R, float eps) {
  __local float s[RG];
  int row = get_group_id(0), l = get_local_id(0);
  __global const real_t* xr = x + xo + (long)row * R;
  __global real_t* yr = y + yo + (long)row * R;
  float2 m = row_moments(s, xr, R, eps);
  float g = LD(scale, so + row % C) * m.y, b = LD(bias, bo + row % C);
  for (int r = l; r < R; r += RG) ST(yr, r, (LD(xr, r) - m.x) * g + b);
}

// LayerNormalization on CPU devices (PoCL): one work-item per row of R, the
// same two passes as layer_norm over 16-wide vectors (a tail of R % 16 in
// scalars), no local memory or barriers. y may be x.
__kernel void layer_norm_cpu(__global const real_t* x, int xo, __global const real_t* scale, int so,
                             __global const real_t* bias, int bo, int has_bias, __global real_t* y, int yo,
                             __global real_t* mean_out, int mno, __global real_t* inv_out, int ivo, int stats,
                             int rows, int R, float eps) {
  int row = get_global_id(0);
  if (row >= rows) return;
  __global const real_t* xr = x + xo + (long)row * R;
  __global real_t* yr = y + yo + (long)row * R;
  __global const real_t* g = scale + so;
  __global const real_t* bb = bias + bo;
  int V = R & ~15;
  float16 s16 = (float16)(0.0f);
  float sum = 0.0f;
  for (int r = 0; r < V; r += 16) s16 += LDV(16, xr + r);
  for (int r = V; r < R; ++r) sum += LD(xr, r);
  float mean = (sum + hsum16(s16)) / (float)R;
  float16 q16 = (float16)(0.0f);
  float sq = 0.0f;
  for (int r = 0; r < V; r += 16) {
    float16 d = LDV(16, xr + r) - mean;
    q16 = fma(d, d, q16);
  }
  for (int r = V; r < R; ++r) {
    float d = LD(xr, r) - mean;
    sq += d * d;
  }
  float inv = 1.0f / sqrt((sq + hsum16(q16)) / (float)R + eps);
  if (stats & 1) ST(mean_out, mno + row, mean);
  if (stats & 2) ST(inv_out, ivo + row, inv);
  for (int r = 0; r < V; r += 16) {
    float16 v = (LDV(16, xr + r) - mean) * inv * LDV(16, g + r);
    if (has_bias) v += LDV(16, bb + r);
    STV(16, yr + r, v);
  }
  for (int r = V; r < R; ++r) ST(yr, r, (LD(xr, r) - mean) * inv * LD(g, r) + (has_bias ? LD(bb, r) : 0.0f));
}
