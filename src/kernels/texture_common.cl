// Prelude of every texture_*.cl kernel file (ops_texture.cpp passes it as the
// program prelude). A 4D NCHW fp32 tensor as a texture: C4 = ceil(C/4) slices
// of RGBA pixels, pixel (x, y) = (w, (n * C4 + c4) * H + h), lane k holds
// channel 4*c4 + k; lanes beyond C are 0 (see optimize/storage.h).
//
// Two kinds of image, one source: image2d_t (dedicated image pools, or 2D
// views over the arena with image2d_from_buffer) read through a sampler, and
// image1d_buffer_t views (-DTEX1D) over the arena, read at pixel base +
// y * width + x. Kernels only use RD/WR with the tensor's own width.
// A texture argument is the image and the pixel where the tensor starts in
// it: TEXR(X) declares `X, X_base`. The base is 0 except for 1D views,
// which all share one image over the whole arena (PoCL cannot make images
// over sub-buffers).
#ifdef TEX1D
#define TEX_R read_only image1d_buffer_t
#define TEX_W write_only image1d_buffer_t
#define RD(img, x, y, w) read_imagef(img, img##_base + (y) * (w) + (x))
#define WR(img, x, y, w, v) write_imagef(img, img##_base + (y) * (w) + (x), v)
#else
#define TEX_R read_only image2d_t
#define TEX_W write_only image2d_t
__constant sampler_t tex_smp = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP | CLK_FILTER_NEAREST;
#define RD(img, x, y, w) read_imagef(img, tex_smp, (int2)(x, y))
#define WR(img, x, y, w, v) write_imagef(img, (int2)(x, y), v)
#endif
#define TEXR(name) TEX_R name, int name##_base
#define TEXW(name) TEX_W name, int name##_base

// Lanes of slice c4 at or beyond channel C set to 0.
inline float4 mask_lanes(float4 v, int c4, int C) {
  const int left = C - c4 * 4;
  if (left < 4) v.w = 0.0f;
  if (left < 3) v.z = 0.0f;
  if (left < 2) v.y = 0.0f;
  return v;
}

inline float lane_of(float4 v, int k) { return k == 0 ? v.x : k == 1 ? v.y : k == 2 ? v.z : v.w; }
