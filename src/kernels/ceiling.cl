// Device ceilings for the profile (runtime/profile.cpp): what the device can
// stream and compute at best, to compare each kernel's achieved rate with.

// Streaming copy: each work-item moves one float4.
__kernel void stream_copy(__global const float4* a, __global float4* b) {
  size_t i = get_global_id(0);
  b[i] = a[i];
}

// Streaming read: each work-item reads one float4, kept live by a store that
// never happens on a buffer of zeros. texplan_conv_bench --cold empties the
// caches with it without leaving dirty lines behind.
__kernel void stream_read(__global const float4* a, __global float* out) {
  const float4 v = a[get_global_id(0)];
  if (v.x == 1.0f) out[0] = v.y;
}

// 8 independent FMA chains of FMA_W-wide vectors per work-item (CPU
// compilers vectorize explicit vectors, not loops across work-items),
// 16 * FMA_W FLOPs per iteration.
#ifndef FMA_W
#define FMA_W 4
#endif
#define FCAT_(a, b) a##b
#define FCAT(a, b) FCAT_(a, b)
#define FV FCAT(float, FMA_W)
__kernel void fma_loop(__global float* out, int iters, float s) {
  const FV x = (FV)((float)get_global_id(0) * 1e-7f);
  FV a0 = x, a1 = x + 0.1f, a2 = x + 0.2f, a3 = x + 0.3f, a4 = x + 0.4f, a5 = x + 0.5f, a6 = x + 0.6f, a7 = x + 0.7f;
  const FV sv = (FV)(s), h = (FV)(0.5f);
  for (int i = 0; i < iters; ++i) {
    a0 = fma(a0, sv, h);
    a1 = fma(a1, sv, h);
    a2 = fma(a2, sv, h);
    a3 = fma(a3, sv, h);
    a4 = fma(a4, sv, h);
    a5 = fma(a5, sv, h);
    a6 = fma(a6, sv, h);
    a7 = fma(a7, sv, h);
  }
  FV r = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
  float t[FMA_W];
  FCAT(vstore, FMA_W)(r, 0, t);
  float sum = 0.0f;
  for (int j = 0; j < FMA_W; ++j) sum += t[j];
  out[get_global_id(0)] = sum;
}
