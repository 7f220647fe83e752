// Device ceilings for the profile (runtime/profile.cpp): what the device can
// stream and compute at best, to compare each kernel's achieved rate with.

// Streaming copy: each work-item moves one float4.
__kernel void stream_copy(__global const float4* a, __global float4* b) {
  size_t i = get_global_id(0);
  b[i] = a[i];
}

// 8 independent FMA chains per work-item (hides FMA latency; CPU devices
// vectorize across work-items), 16 FLOPs per iteration.
__kernel void fma_loop(__global float* out, int iters, float s) {
  float x = (float)get_global_id(0) * 1e-7f;
  float a0 = x, a1 = x + 0.1f, a2 = x + 0.2f, a3 = x + 0.3f, a4 = x + 0.4f, a5 = x + 0.5f, a6 = x + 0.6f,
        a7 = x + 0.7f;
  for (int i = 0; i < iters; ++i) {
    a0 = fma(a0, s, 0.5f);
    a1 = fma(a1, s, 0.5f);
    a2 = fma(a2, s, 0.5f);
    a3 = fma(a3, s, 0.5f);
    a4 = fma(a4, s, 0.5f);
    a5 = fma(a5, s, 0.5f);
    a6 = fma(a6, s, 0.5f);
    a7 = fma(a7, s, 0.5f);
  }
  out[get_global_id(0)] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}
