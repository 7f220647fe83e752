// Normalizations.

// BatchNormalization (inference) over NCHW-like [N, C, inner].
__kernel void batch_norm(__global const float* x, int xo, __global const float* scale, int so,
                         __global const float* bias, int bo, __global const float* mean, int mo,
                         __global const float* var, int vo, __global float* y, int yo, int n, int C, int inner,
                         float eps) {
  int i = get_global_id(0);
  if (i >= n) return;
  int c = (i / inner) % C;
  y[yo + i] = (x[xo + i] - mean[mo + c]) / sqrt(var[vo + c] + eps) * scale[so + c] + bias[bo + c];
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

// LayerNormalization over contiguous rows of R: mean, then the variance of
// the centred values (two passes: no cancellation), then scale and bias.
// stats bit 1 / bit 2: also write each row's mean / inverse std deviation.
__kernel __attribute__((reqd_work_group_size(RG, 1, 1)))
void layer_norm(__global const float* x, int xo, __global const float* scale, int so, __global const float* bias,
                int bo, int has_bias, __global float* y, int yo, __global float* mean_out, int mno,
                __global float* inv_out, int ivo, int stats, int R, float eps) {
  __local float s[RG];
  int row = get_group_id(0), l = get_local_id(0);
  __global const float* xr = x + xo + row * R;
  __global float* yr = y + yo + row * R;
  float sum = 0.0f;
  for (int r = l; r < R; r += RG) sum += xr[r];
  float mean = group_sum(s, sum) / (float)R;
  float sq = 0.0f;
  for (int r = l; r < R; r += RG) {
    float d = xr[r] - mean;
    sq += d * d;
  }
  float inv = 1.0f / sqrt(group_sum(s, sq) / (float)R + eps);
  if (l == 0 && (stats & 1)) mean_out[mno + row] = mean;
  if (l == 0 && (stats & 2)) inv_out[ivo + row] = inv;
  for (int r = l; r < R; r += RG)
    yr[r] = (xr[r] - mean) * inv * scale[so + r] + (has_bias ? bias[bo + r] : 0.0f);
}
