// Layout conversions, elementwise ops, pooling, BatchNormalization and
// Concat over textures (layout: texture_common.cl). Unless said otherwise a
// work-item is one output pixel: x = w, y = h, z = n * C4 + c4.

#define PIXEL_IDS(Wd, Hd)                                                  \
  const int x = get_global_id(0), y = get_global_id(1), z = get_global_id(2); \
  if (x >= (Wd) || y >= (Hd)) return;

// NCHW buffer -> texture; lanes beyond C are 0.
__kernel void tex_from_buffer(__global const real_t* X, int xo, TEXW(Y), int C, int H, int W) {
  PIXEL_IDS(W, H)
  const int C4 = (C + 3) / 4, n = z / C4, c4 = z % C4;
  __global const real_t* p = X + xo + ((n * C + c4 * 4) * H + y) * W + x;
  const int left = C - c4 * 4, hw = H * W;
  float4 v = (float4)(LD(p, 0), left > 1 ? LD(p, hw) : 0.0f, left > 2 ? LD(p, 2 * hw) : 0.0f, left > 3 ? LD(p, 3 * hw) : 0.0f);
  WR(Y, x, z * H + y, W, v);
}

// Texture -> NCHW buffer.
__kernel void tex_to_buffer(TEXR(X), __global real_t* Y, int yo, int C, int H, int W) {
  PIXEL_IDS(W, H)
  const int C4 = (C + 3) / 4, n = z / C4, c4 = z % C4;
  const float4 v = RD(X, x, z * H + y, W);
  __global real_t* p = Y + yo + ((n * C + c4 * 4) * H + y) * W + x;
  const int left = C - c4 * 4, hw = H * W;
  ST(p, 0, v.x);
  if (left > 1) ST(p, hw, v.y);
  if (left > 2) ST(p, 2 * hw, v.z);
  if (left > 3) ST(p, 3 * hw, v.w);
}

// Activations, with the formulas of the buffer kernels (elementwise.cl).
inline float4 tex_sigmoid(float4 v) { return 1.0f / (1.0f + exp(-v)); }
__kernel void tex_unary(TEXR(X), TEXW(Y), int op, float a, float b, int C, int H, int W) {
  PIXEL_IDS(W, H)
  const int C4 = (C + 3) / 4, c4 = z % C4;
  float4 v = RD(X, x, z * H + y, W);
  switch (op) {
    case 0: v = select((float4)(0.0f), v, v > 0.0f); break;                          // Relu
    case 1: v = fmin(fmax(v, a), b); break;                                          // Clip
    case 2: v = tex_sigmoid(v); break;                                               // Sigmoid
    case 3: v = v * clamp(v / 6.0f + 0.5f, 0.0f, 1.0f); break;                       // HardSwish
    case 4: v = clamp(a * v + b, 0.0f, 1.0f); break;                                 // HardSigmoid
    case 5: v = select(a * v, v, v >= 0.0f); break;                                  // LeakyRelu
    case 6: v = tanh(v); break;                                                      // Tanh
  }
  WR(Y, x, z * H + y, W, mask_lanes(v, c4, C));
}

inline float4 tex_binop(int op, float4 p, float4 q) {
  switch (op) {
    case 0: return p + q;
    case 1: return p - q;
    case 2: return p * q;
    default: return p / q;
  }
}

// One operand of a broadcast binary op, its dims (N, C, H, W) each 1 or the
// output's: a texture, or a constant buffer (any broadcastable shape padded
// to 4D).
inline float4 tex_operand_texture(TEXR(A), int an, int ac, int ah, int aw, int n, int c4, int h, int w) {
  const int ac4 = (ac + 3) / 4;
  const int nn = an == 1 ? 0 : n, hh = ah == 1 ? 0 : h, ww = aw == 1 ? 0 : w;
  if (ac == 1) return (float4)(RD(A, ww, (nn * ac4) * ah + hh, aw).x);
  return RD(A, ww, (nn * ac4 + c4) * ah + hh, aw);
}
inline float4 tex_operand_buffer(__global const real_t* A, int ao, int an, int ac, int ah, int aw, int n, int c4,
                                 int h, int w, int C) {
  const int nn = an == 1 ? 0 : n, hh = ah == 1 ? 0 : h, ww = aw == 1 ? 0 : w;
  float v[4];
  for (int k = 0; k < 4; ++k) {
    const int c = min(c4 * 4 + k, C - 1), cc = ac == 1 ? 0 : c;
    v[k] = LD(A, ao + ((nn * ac + cc) * ah + hh) * aw + ww);
  }
  return (float4)(v[0], v[1], v[2], v[3]);
}

// Both operands textures.
__kernel void tex_binary(TEXR(A), int an, int ac, int ah, int aw, TEXR(B), int bn, int bc, int bh, int bw, TEXW(Y),
                         int op, int C, int H, int W) {
  PIXEL_IDS(W, H)
  const int C4 = (C + 3) / 4, n = z / C4, c4 = z % C4;
  const float4 p = tex_operand_texture(TEXP(A), an, ac, ah, aw, n, c4, y, x);
  const float4 q = tex_operand_texture(TEXP(B), bn, bc, bh, bw, n, c4, y, x);
  WR(Y, x, z * H + y, W, mask_lanes(tex_binop(op, p, q), c4, C));
}

// A texture and a constant buffer; `swap` puts the constant first (Sub, Div).
__kernel void tex_binary_const(TEXR(A), int an, int ac, int ah, int aw, __global const real_t* B, int bo, int bn,
                               int bc, int bh, int bw, TEXW(Y), int op, int swap, int C, int H, int W) {
  PIXEL_IDS(W, H)
  const int C4 = (C + 3) / 4, n = z / C4, c4 = z % C4;
  const float4 p = tex_operand_texture(TEXP(A), an, ac, ah, aw, n, c4, y, x);
  const float4 q = tex_operand_buffer(B, bo, bn, bc, bh, bw, n, c4, y, x, C);
  WR(Y, x, z * H + y, W, mask_lanes(swap ? tex_binop(op, q, p) : tex_binop(op, p, q), c4, C));
}

// Inference BatchNormalization: (x - mean) / sqrt(var + eps) * scale + bias.
__kernel void tex_batch_norm(TEXR(X), __global const real_t* S, int so, __global const real_t* Bi, int bio,
                             __global const real_t* M, int mo, __global const real_t* V, int vo, TEXW(Y), float eps,
                             int C, int H, int W) {
  PIXEL_IDS(W, H)
  const int C4 = (C + 3) / 4, c4 = z % C4;
  float4 v = RD(X, x, z * H + y, W);
  float r[4] = {v.x, v.y, v.z, v.w};
  for (int k = 0; k < 4; ++k) {
    const int c = min(c4 * 4 + k, C - 1);
    r[k] = (r[k] - LD(M, mo + c)) / sqrt(LD(V, vo + c) + eps) * LD(S, so + c) + LD(Bi, bio + c);
  }
  WR(Y, x, z * H + y, W, mask_lanes((float4)(r[0], r[1], r[2], r[3]), c4, C));
}

// MaxPool / AveragePool, 2D windows. Average divides by the window's valid
// pixels, or (count_include_pad) by those inside the padded extent
// [-ph, H + ph_end) x [-pw, W + pw_end), as the reference does.
__kernel void tex_pool(TEXR(X), TEXW(Y), int is_max, int count_pad, int C, int H, int W, int OH, int OW, int KH,
                       int KW, int sh, int sw, int ph, int pw, int ph_end, int pw_end) {
  PIXEL_IDS(OW, OH)
  const int C4 = (C + 3) / 4, c4 = z % C4;
  float4 acc = is_max ? (float4)(-INFINITY) : (float4)(0.0f);
  int valid = 0, padded = 0;
  for (int kh = 0; kh < KH; ++kh) {
    const int ih = y * sh - ph + kh;
    for (int kw = 0; kw < KW; ++kw) {
      const int iw = x * sw - pw + kw;
      if (ih >= -ph && ih < H + ph_end && iw >= -pw && iw < W + pw_end) ++padded;
      if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
      const float4 v = RD(X, iw, z * H + ih, W);
      acc = is_max ? fmax(acc, v) : acc + v;
      ++valid;
    }
  }
  if (!is_max) acc /= (float)max(1, count_pad ? padded : valid);
  WR(Y, x, z * OH + y, OW, mask_lanes(acc, c4, C));
}

// GlobalAveragePool / GlobalMaxPool: output [N, C, 1, 1], one pixel per slice.
__kernel void tex_global_pool(TEXR(X), TEXW(Y), int is_max, int C, int H, int W) {
  const int z = get_global_id(0);
  const int C4 = (C + 3) / 4;
  float4 acc = is_max ? (float4)(-INFINITY) : (float4)(0.0f);
  for (int h = 0; h < H; ++h)
    for (int w = 0; w < W; ++w) {
      const float4 v = RD(X, w, z * H + h, W);
      acc = is_max ? fmax(acc, v) : acc + v;
    }
  if (!is_max) acc /= (float)(H * W);
  WR(Y, 0, z, 1, mask_lanes(acc, z % C4, C));
}

// Concat along channels, the input's slices landing on whole output slices
// (its channel offset is a multiple of 4): a pixel copy.
__kernel void tex_concat_slices(TEXR(X), int XC, TEXW(Y), int C, int offset4, int H, int W) {
  PIXEL_IDS(W, H)
  const int XC4 = (XC + 3) / 4, C4 = (C + 3) / 4, n = z / XC4, c4 = z % XC4;
  WR(Y, x, ((n * C4 + offset4 + c4) * H) + y, W, RD(X, x, z * H + y, W));
}

// Concat along channels of up to 4 inputs at any channel offsets: every
// output lane gathered from its input (X1..X3 unused past `inputs`).
__kernel void tex_concat_lanes(TEXR(X0), int C0, TEXR(X1), int C1, TEXR(X2), int C2, TEXR(X3), int C3, TEXW(Y),
                               int inputs, int C, int H, int W) {
  PIXEL_IDS(W, H)
  const int C4 = (C + 3) / 4, n = z / C4, c4 = z % C4;
  float r[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int k = 0; k < 4; ++k) {
    int c = c4 * 4 + k;
    if (c >= C) break;
    float4 v;
    int cc = c;
    if (cc < C0) {
      v = RD(X0, x, (n * ((C0 + 3) / 4) + cc / 4) * H + y, W);
    } else if ((cc -= C0) < C1 || inputs < 3) {
      v = RD(X1, x, (n * ((C1 + 3) / 4) + cc / 4) * H + y, W);
    } else if ((cc -= C1) < C2 || inputs < 4) {
      v = RD(X2, x, (n * ((C2 + 3) / 4) + cc / 4) * H + y, W);
    } else {
      cc -= C2;
      v = RD(X3, x, (n * ((C3 + 3) / 4) + cc / 4) * H + y, W);
    }
    r[k] = lane_of(v, cc % 4);
  }
  WR(Y, x, z * H + y, W, (float4)(r[0], r[1], r[2], r[3]));
}
