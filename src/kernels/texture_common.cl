// Prelude of every texture_*.cl kernel file (lower/texture.cpp passes it as the
// program prelude). A 4D NCHW fp32 tensor as a texture: C4 = ceil(C/4) slices
// of RGBA pixels, lane k holds channel 4*c4 + k; lanes beyond C are 0, in
// one of two layouts, chosen per tensor (see optimize/storage.h):
//   rows:      pixel (w, (n * C4 + c4) * H + h)
//   wide rows: pixel ((h % k * W + w) * C4 + c4, n * ceil(H/k) + h / k)
// with k rows of H side by side in one image row (the fold). Kernels
// address every texture as if in rows, (x, y) = (w, (n * C4 + c4) * H + h),
// and RD/WR map that to the tensor's layout: a texture argument carries its
// H, C4 and k when in wide rows (`_lh` = H, `_lc4` = C4, `_lk` = k), `_lh` =
// 0 in rows. So a kernel reads and writes tensors of any layout, and the
// layouts of its inputs and output need not agree.
//
// Two kinds of image, one source: image2d_t (dedicated image pools, or 2D
// views over the arena with image2d_from_buffer) read through a sampler, and
// image1d_buffer_t views (-DTEX1D) over the arena, read at pixel base +
// y * width + x. Kernels only use RD/WR with the tensor's own width.
// A texture argument is the image, the pixel where the tensor starts in it,
// and its layout: TEXR(X) declares `X, X_base, X_lh, X_lc4, X_lk`; TEXP(X)
// passes them on to a helper. The base is 0 except for 1D views, which all share
// one image over the whole arena (PoCL cannot make images over sub-buffers).

// The pixel of rows-coordinates (x, y) in a texture `w` pixels wide (W) of
// layout (lh, lc4, lk).
inline int2 tex_pixel(int x, int y, int w, int lh, int lc4, int lk) {
  if (lh == 0) return (int2)(x, y);
  const int q = y / lh, h = y - q * lh;  // q = n * C4 + c4
  const int n = q / lc4, c4 = q - n * lc4;
  const int hr = h / lk;
  return (int2)(((h - hr * lk) * w + x) * lc4 + c4, n * ((lh + lk - 1) / lk) + hr);
}
// Its index in a 1D view.
inline int tex_index(int x, int y, int w, int lh, int lc4, int lk) {
  const int2 p = tex_pixel(x, y, w, lh, lc4, lk);
  return p.y * (lh == 0 ? w : w * lc4 * lk) + p.x;
}
#ifdef TEX1D
#define TEX_R read_only image1d_buffer_t
#define TEX_W write_only image1d_buffer_t
#define RD(img, x, y, w) read_imagef(img, img##_base + tex_index(x, y, w, img##_lh, img##_lc4, img##_lk))
#define WR(img, x, y, w, v) write_imagef(img, img##_base + tex_index(x, y, w, img##_lh, img##_lc4, img##_lk), v)
#else
#define TEX_R read_only image2d_t
#define TEX_W write_only image2d_t
__constant sampler_t tex_smp = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP | CLK_FILTER_NEAREST;
#define RD(img, x, y, w) read_imagef(img, tex_smp, tex_pixel(x, y, w, img##_lh, img##_lc4, img##_lk))
#define WR(img, x, y, w, v) write_imagef(img, tex_pixel(x, y, w, img##_lh, img##_lc4, img##_lk), v)
#endif
#define TEXR(name) TEX_R name, int name##_base, int name##_lh, int name##_lc4, int name##_lk
#define TEXW(name) TEX_W name, int name##_base, int name##_lh, int name##_lc4, int name##_lk
#define TEXP(name) name, name##_base, name##_lh, name##_lc4, name##_lk

// Lanes of slice c4 at or beyond channel C set to 0.
inline float4 mask_lanes(float4 v, int c4, int C) {
  const int left = C - c4 * 4;
  if (left < 4) v.w = 0.0f;
  if (left < 3) v.z = 0.0f;
  if (left < 2) v.y = 0.0f;
  return v;
}

inline float lane_of(float4 v, int k) { return k == 0 ? v.x : k == 1 ? v.y : k == 2 ? v.z : v.w; }
