// Data movement: strided copy (Transpose, Slice, Concat, Split, Expand,
// Tile, copies; on CPU devices by runs and tiles), Gather, Pad, Resize. Copies move bit patterns, so one
// kernel per element size serves every dtype.

// y[walk(i, sy)] = x[walk(i, sx)] for i over the space `dims`.
#define COPY(NAME, T)                                                                       \
  __kernel void NAME(__global const T* x, int xo, __global T* y, int yo, int n, Dims dims, \
                     Dims sy, Dims sx) {                                                    \
    int i = get_global_id(0);                                                               \
    if (i >= n) return;                                                                     \
    int oy, ox;                                                                             \
    strided_offset2(i, dims, sy, sx, &oy, &ox);                                             \
    y[yo + oy] = x[xo + ox];                                                                \
  }
COPY(copy_b1, uchar)
COPY(copy_b2, ushort)
COPY(copy_b4, uint)
COPY(copy_b8, ulong)

// CPU devices (PoCL): one work-item per chunk of a run that is contiguous in
// both operands (innermost dim of length L, chunks of CH elements), copied
// with 16-wide vector loads and stores; the outer dims `dims` are walked once
// per chunk, not per element. A flat copy is one run.
#define COPY_RUNS(NAME, T, T16)                                                              \
  __kernel void NAME(__global const T* x, int xo, __global T* y, int yo, int items, int chunks, \
                     int L, int CH, Dims dims, Dims sy, Dims sx) {                            \
    int i = get_global_id(0);                                                                 \
    if (i >= items) return;                                                                   \
    int run = i / chunks, c = (i - run * chunks) * CH, end = min(L, c + CH);                   \
    int oy, ox;                                                                               \
    strided_offset2(run, dims, sy, sx, &oy, &ox);                                             \
    __global const T* src = x + xo + ox;                                                      \
    __global T* dst = y + yo + oy;                                                            \
    for (; c + 16 <= end; c += 16) vstore16(vload16(0, src + c), 0, dst + c);                 \
    for (; c < end; ++c) dst[c] = src[c];                                                     \
  }
COPY_RUNS(copy_runs_b1, uchar, uchar16)
COPY_RUNS(copy_runs_b2, ushort, ushort16)
COPY_RUNS(copy_runs_b4, uint, uint16)
COPY_RUNS(copy_runs_b8, ulong, ulong16)

// CPU devices: a transpose of two dims, A (contiguous in y, stride sxa in x)
// and B (contiguous in x, stride syb in y), in 16x16 tiles, one per
// work-item: each of a tile's 16 source rows is one cache line read, each
// output row one 16-wide store. Outer dims `dims` as in COPY_RUNS.
#define TRANSPOSE_TILES(NAME, T, T16)                                                        \
  __kernel void NAME(__global const T* x, int xo, __global T* y, int yo, int items, int A,   \
                     int B, int sxa, int syb, int tiles_a, int tiles_b, Dims dims, Dims sy,  \
                     Dims sx) {                                                              \
    int i = get_global_id(0);                                                                \
    if (i >= items) return;                                                                  \
    int per = tiles_a * tiles_b, outer = i / per, t = i - outer * per;                       \
    int a0 = (t % tiles_a) * 16, b0 = (t / tiles_a) * 16;                                    \
    int oy, ox;                                                                              \
    strided_offset2(outer, dims, sy, sx, &oy, &ox);                                          \
    __global const T* src = x + xo + ox + a0 * sxa + b0;                                     \
    __global T* dst = y + yo + oy + b0 * syb + a0;                                           \
    int na = min(16, A - a0), nb = min(16, B - b0);                                          \
    if (na == 16) {                                                                          \
      for (int b = 0; b < nb; ++b) {                                                         \
        T v[16];                                                                             \
        for (int a = 0; a < 16; ++a) v[a] = src[a * sxa + b];                                \
        vstore16(vload16(0, v), 0, dst + b * syb);                                           \
      }                                                                                      \
    } else {                                                                                 \
      for (int b = 0; b < nb; ++b)                                                           \
        for (int a = 0; a < na; ++a) dst[b * syb + a] = src[a * sxa + b];                    \
    }                                                                                        \
  }
TRANSPOSE_TILES(transpose_tiles_b1, uchar, uchar16)
TRANSPOSE_TILES(transpose_tiles_b2, ushort, ushort16)
TRANSPOSE_TILES(transpose_tiles_b4, uint, uint16)
TRANSPOSE_TILES(transpose_tiles_b8, ulong, ulong16)

// x viewed as [outer, axis_len, inner], indices flattened to [nidx]:
// y[o, j, r] = x[o, idx[j], r]. Negative indices count from the end; an out
// of range one gives 0 and is reported in `fault` (never read past x).
#define GATHER(NAME, T, I)                                                                  \
  __kernel void NAME(__global const T* x, int xo, __global const I* idx, int io,           \
                     __global T* y, int yo, int n, int axis_len, int nidx, int inner,       \
                     __global int* fault, int node) {                                       \
    int i = get_global_id(0);                                                               \
    if (i >= n) return;                                                                     \
    int r = i % inner, t = i / inner;                                                       \
    int j = t % nidx, o = t / nidx;                                                         \
    long k = idx[io + j];                                                                   \
    if (k < 0) k += axis_len;                                                               \
    if (k >= 0 && k < axis_len) {                                                           \
      y[yo + i] = x[xo + (o * axis_len + (int)k) * inner + r];                              \
    } else {                                                                                \
      y[yo + i] = 0;                                                                        \
      index_fault(fault, node, idx[io + j]);                                                \
    }                                                                                       \
  }
GATHER(gather_b2_i64, ushort, long)
GATHER(gather_b2_i32, ushort, int)
GATHER(gather_b4_i64, uint, long)
GATHER(gather_b4_i32, uint, int)
GATHER(gather_b8_i64, ulong, long)
GATHER(gather_b8_i32, ulong, int)

// CPU devices: one work-item per gathered row of `inner` elements (an
// embedding lookup), copied with 16-wide vectors; the index is read once.
#define GATHER_ROWS(NAME, T, I)                                                             \
  __kernel void NAME(__global const T* x, int xo, __global const I* idx, int io,           \
                     __global T* y, int yo, int rows, int axis_len, int nidx, int inner,    \
                     __global int* fault, int node) {                                       \
    int i = get_global_id(0);                                                               \
    if (i >= rows) return;                                                                  \
    int j = i % nidx, o = i / nidx;                                                         \
    long k = idx[io + j];                                                                   \
    if (k < 0) k += axis_len;                                                               \
    __global T* dst = y + yo + (long)i * inner;                                             \
    int r = 0;                                                                              \
    if (k >= 0 && k < axis_len) {                                                           \
      __global const T* src = x + xo + ((long)o * axis_len + k) * inner;                    \
      for (; r + 16 <= inner; r += 16) vstore16(vload16(0, src + r), 0, dst + r);           \
      for (; r < inner; ++r) dst[r] = src[r];                                               \
    } else {                                                                                \
      for (; r < inner; ++r) dst[r] = 0;                                                    \
      index_fault(fault, node, idx[io + j]);                                                \
    }                                                                                       \
  }
GATHER_ROWS(gather_rows_b2_i64, ushort, long)
GATHER_ROWS(gather_rows_b2_i32, ushort, int)
GATHER_ROWS(gather_rows_b4_i64, uint, long)
GATHER_ROWS(gather_rows_b4_i32, uint, int)
GATHER_ROWS(gather_rows_b8_i64, ulong, long)
GATHER_ROWS(gather_rows_b8_i32, ulong, int)

// mode: 0 constant, 1 reflect, 2 edge. ydims/xdims/xst/pad_begin per dim.
// Coordinate c outside [0, len) mapped into it (reflect without repeating
// the edge: pads < len, the validator's rule).
inline int pad_inside(int c, int len, int mode) {
  return mode == 1 ? (c < 0 ? -c : 2 * (len - 1) - c) : (c < 0 ? 0 : len - 1);
}

// The input element offset of output element `i` over dims 0..last, or -1
// where a constant pad covers it.
inline int pad_source(int i, int last, Dims ydims, Dims xdims, Dims xst, Dims pad_begin, int mode) {
  int off = 0;
  for (int k = last; k >= 0; --k) {
    int c = i % ydims.d[k] - pad_begin.d[k];
    i /= ydims.d[k];
    if (c < 0 || c >= xdims.d[k]) {
      if (mode == 0) return -1;
      c = pad_inside(c, xdims.d[k], mode);
    }
    off += c * xst.d[k];
  }
  return off;
}

__kernel void pad_f32(__global const real_t* x, int xo, __global real_t* y, int yo, int n, Dims ydims,
                      Dims xdims, Dims xst, Dims pad_begin, int mode, float value) {
  int i = get_global_id(0);
  if (i >= n) return;
  const int off = pad_source(i, MAXR - 1, ydims, xdims, xst, pad_begin, mode);
  ST(y, yo + i, off < 0 ? value : LD(x, xo + off));
}

// Constant pads on one axis with only 1s before it (a clip padded with
// frames, import/volume_ops.cpp): Y is `pre` values, X, then values to the
// end. A work-item moves 16 elements, as one vector where they are all X.
__kernel void pad_flat_f32(__global const real_t* x, int xo, __global real_t* y, int yo, int n, int pre, int len,
                           float value) {
  const int i0 = get_global_id(0) * 16;
  if (i0 >= n) return;
  if (i0 >= pre && i0 + 16 <= pre + len) {
    STV(16, y + yo + i0, LDV(16, x + xo + i0 - pre));
    return;
  }
  for (int i = i0; i < min(i0 + 16, n); ++i) ST(y, yo + i, i >= pre && i < pre + len ? LD(x, xo + i - pre) : value);
}

// CPU devices: one work-item a row of the last dim. The outer coordinates
// are resolved once per row (pad_f32 divides every dim for every element);
// the row is its left border, a run of the input row, its right border.
inline float pad_border(__global const real_t* x, int xb, int xs, int c, int len, int mode, float value) {
  return mode == 0 ? value : LD(x, xb + pad_inside(c, len, mode) * xs);
}

__kernel void pad_rows_f32(__global const real_t* x, int xo, __global real_t* y, int yo, int rows, Dims ydims,
                           Dims xdims, Dims xst, Dims pad_begin, int mode, float value) {
  int r = get_global_id(0);
  if (r >= rows) return;
  const int wy = ydims.d[MAXR - 1], wx = xdims.d[MAXR - 1], b = pad_begin.d[MAXR - 1], xs = xst.d[MAXR - 1];
  const int yb = yo + r * wy;
  const int off = pad_source(r, MAXR - 2, ydims, xdims, xst, pad_begin, mode);
  if (off < 0) {  // the whole row is padding
    for (int w = 0; w < wy; ++w) ST(y, yb + w, value);
    return;
  }
  const int xb = xo + off, lo = min(b, wy), hi = min(b + wx, wy);
  for (int w = 0; w < lo; ++w) ST(y, yb + w, pad_border(x, xb, xs, w - b, wx, mode, value));
  for (int w = lo; w < hi; ++w) ST(y, yb + w, LD(x, xb + (w - b) * xs));
  for (int w = hi; w < wy; ++w) ST(y, yb + w, pad_border(x, xb, xs, w - b, wx, mode, value));
}

// ONNX coordinate_transformation_mode / nearest_mode codes (lower/shape.cpp).
inline float resize_coord(int o, int in_len, int out_len, float scale, int mode) {
  switch (mode) {
    case 0: return ((float)o + 0.5f) / scale - 0.5f;                            // half_pixel
    case 1: return out_len > 1 ? ((float)o + 0.5f) / scale - 0.5f : 0.0f;       // pytorch_half_pixel
    case 2: return out_len > 1 ? (float)o * (float)(in_len - 1) / (float)(out_len - 1) : 0.0f;  // align_corners
    case 3: return (float)o / scale;                                            // asymmetric
    default: return ((float)o + 0.5f) / scale;                                  // tf_half_pixel_for_nearest
  }
}

inline int resize_nearest(float x, int in_len, int mode) {
  int k;
  switch (mode) {
    case 0: k = (x == floor(x) + 0.5f) ? (int)floor(x) : (int)round(x); break;  // round_prefer_floor
    case 1: k = (int)round(x); break;                                           // round_prefer_ceil
    case 2: k = (int)floor(x); break;
    default: k = (int)ceil(x); break;
  }
  return clamp(k, 0, in_len - 1);
}

// 4D NCHW resize over H and W; one work-item per output element.
__kernel void resize_f32(__global const real_t* x, int xo, __global real_t* y, int yo, int n, int IH,
                         int IW, int OH, int OW, float scale_h, float scale_w, int coord_mode,
                         int nearest_mode, int linear) {
  int i = get_global_id(0);
  if (i >= n) return;
  int ow = i % OW, oh = (i / OW) % OH, plane = i / (OW * OH);
  __global const real_t* src = x + xo + plane * IH * IW;
  float fy = resize_coord(oh, IH, OH, scale_h, coord_mode);
  float fx = resize_coord(ow, IW, OW, scale_w, coord_mode);
  if (!linear) {
    ST(y, yo + i, LD(src, resize_nearest(fy, IH, nearest_mode) * IW + resize_nearest(fx, IW, nearest_mode)));
    return;
  }
  fy = clamp(fy, 0.0f, (float)(IH - 1));
  fx = clamp(fx, 0.0f, (float)(IW - 1));
  int y0 = (int)floor(fy), x0 = (int)floor(fx);
  int y1 = min(y0 + 1, IH - 1), x1 = min(x0 + 1, IW - 1);
  float wy = fy - (float)y0, wx = fx - (float)x0;
  float top = LD(src, y0 * IW + x0) * (1.0f - wx) + LD(src, y0 * IW + x1) * wx;
  float bot = LD(src, y1 * IW + x0) * (1.0f - wx) + LD(src, y1 * IW + x1) * wx;
  ST(y, yo + i, top * (1.0f - wy) + bot * wy);
}

// GridSample of 4-D X [N, C, H, W] at grid [N, Ho, Wo, 2] (reference/resize.cpp
// GridSample's arithmetic): one work-item per output pixel, all C channels,
// so the grid point and the taps' weights are worked out once.
// padding: reference::GridSampleForm's codes (0 zeros, 1 border, 2 reflection).
inline float grid_source(float v, int len, int align, int padding) {
  float x = align ? (v + 1.0f) * 0.5f * (float)(len - 1) : ((v + 1.0f) * (float)len - 1.0f) * 0.5f;
  if (padding == 2) {
    const float lo = align ? 0.0f : -0.5f, span = align ? (float)(len - 1) : (float)len;
    if (span <= 0.0f) return 0.0f;
    const float d = fabs(x - lo), flips = floor(d / span), extra = d - flips * span;
    x = fmod(flips, 2.0f) == 0.0f ? lo + extra : lo + span - extra;
  }
  if (padding != 0) x = clamp(x, 0.0f, (float)(len - 1));
  return x;
}
__kernel void grid_sample_f32(__global const real_t* x, int xo, __global const real_t* grid, int go,
                              __global real_t* y, int yo, int N, int C, int H, int W, int HWo, int linear,
                              int align, int padding) {
  const int p = get_global_id(0), n = get_global_id(1);
  if (p >= HWo || n >= N) return;
  const float sx = grid_source(LD(grid, go + (n * HWo + p) * 2), W, align, padding);
  const float sy = grid_source(LD(grid, go + (n * HWo + p) * 2 + 1), H, align, padding);
  int idx[4];
  float w[4];
  if (linear) {
    const float fx = floor(sx), fy = floor(sy), wx = sx - fx, wy = sy - fy;
    const int x0 = (int)fx, y0 = (int)fy;
    const int xs[4] = {x0, x0 + 1, x0, x0 + 1}, ys[4] = {y0, y0, y0 + 1, y0 + 1};
    const float ws[4] = {(1.0f - wx) * (1.0f - wy), wx * (1.0f - wy), (1.0f - wx) * wy, wx * wy};
    for (int t = 0; t < 4; ++t) {
      const bool in = xs[t] >= 0 && xs[t] < W && ys[t] >= 0 && ys[t] < H;
      idx[t] = in ? ys[t] * W + xs[t] : 0;
      w[t] = in ? ws[t] : 0.0f;
    }
  } else {
    const int ix = (int)rint(sx), iy = (int)rint(sy);
    const bool in = ix >= 0 && ix < W && iy >= 0 && iy < H;
    idx[0] = in ? iy * W + ix : 0, w[0] = in ? 1.0f : 0.0f;
    for (int t = 1; t < 4; ++t) idx[t] = 0, w[t] = 0.0f;
  }
  const int HW = H * W;
  for (int c = 0; c < C; ++c) {
    __global const real_t* plane = x + xo + (n * C + c) * HW;
    const float v = w[0] * LD(plane, idx[0]) + w[1] * LD(plane, idx[1]) + w[2] * LD(plane, idx[2]) +
                    w[3] * LD(plane, idx[3]);
    ST(y, yo + (n * C + c) * HWo + p, v);
  }
}

// Resize on CPU devices: a work-item per block of `per_block` output rows of a
// plane. Each column's source columns and weight are the same for every
// row, so they are found once per chunk of RZ_COLS columns (private
// tables) and used by all the block's rows; resize_f32's arithmetic, so both
// give the same values. resize_f32's item per element ran at 0.3 GB/s on
// PoCL: LR-ASPP's final upsample took 13 ms
// (docs/cpu-kernels.md#resize-by-rows).
#define RZ_COLS 64
__kernel void resize_rows_cpu(__global const real_t* x, int xo, __global real_t* y, int yo, int blocks,
                              int per_block, int IH, int IW, int OH, int OW, float scale_h, float scale_w,
                              int coord_mode, int nearest_mode, int linear) {
  const int item = get_global_id(0);
  if (item >= blocks) return;
  const int per_plane = (OH + per_block - 1) / per_block;
  const int plane = item / per_plane, oh0 = (item % per_plane) * per_block, oh1 = min(OH, oh0 + per_block);
  __global const real_t* src = x + xo + (long)plane * IH * IW;
  const long yp = yo + (long)plane * OH * OW;
  int c0[RZ_COLS], c1[RZ_COLS];
  float cw[RZ_COLS];
  for (int ow0 = 0; ow0 < OW; ow0 += RZ_COLS) {
    const int n = min(RZ_COLS, OW - ow0);
    for (int j = 0; j < n; ++j) {
      const float fx = resize_coord(ow0 + j, IW, OW, scale_w, coord_mode);
      if (linear) {
        const float cx = clamp(fx, 0.0f, (float)(IW - 1));
        c0[j] = (int)floor(cx), c1[j] = min(c0[j] + 1, IW - 1), cw[j] = cx - (float)c0[j];
      } else {
        c0[j] = resize_nearest(fx, IW, nearest_mode);
      }
    }
    for (int oh = oh0; oh < oh1; ++oh) {
      const long d = yp + (long)oh * OW + ow0;
      float fy = resize_coord(oh, IH, OH, scale_h, coord_mode);
      if (!linear) {
        __global const real_t* s = src + resize_nearest(fy, IH, nearest_mode) * IW;
        for (int j = 0; j < n; ++j) ST(y, d + j, LD(s, c0[j]));
        continue;
      }
      fy = clamp(fy, 0.0f, (float)(IH - 1));
      const int y0 = (int)floor(fy), y1 = min(y0 + 1, IH - 1);
      const float wy = fy - (float)y0;
      __global const real_t* s0 = src + y0 * IW;
      __global const real_t* s1 = src + y1 * IW;
      for (int j = 0; j < n; ++j) {
        const float wx = cw[j];
        const float top = LD(s0, c0[j]) * (1.0f - wx) + LD(s0, c1[j]) * wx;
        const float bot = LD(s1, c0[j]) * (1.0f - wx) + LD(s1, c1[j]) * wx;
        ST(y, d + j, top * (1.0f - wy) + bot * wy);
      }
    }
  }
}
