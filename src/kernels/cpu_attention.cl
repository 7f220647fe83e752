// FusedAttention on CPU devices (lower/opencl_cpu/attention.cpp,
// docs/fused-ops.md#fusedattention): Y = softmax(scale Q K^T + M) V with the
// scores never stored. A work-item takes ATT_R query rows of one batch and
// walks the keys 16 at a time: a float16 of scores per row (K^T stored with
// keys contiguous: one vector load per head-dim element, shared by the
// rows; K stored by rows: a 16-wide dot product per key), an online softmax
// with the running maximum and sum (rescaling once per 16 keys), and the
// 16 rows of V added into the rows' outputs, 16 columns at a time (their
// ATT_R accumulators in registers). No local memory, no
// barriers: PoCL runs a group's items as a loop and compiles the float16s
// to the CPU's vectors. fp32 arithmetic; tensors stored as real_t.
//
// Built with ATT_R (rows per work-item), ATT_DH and ATT_DV (the head dims
// of Q/K and V): loops over them have known trip counts, a last part of
// fewer than 16 elements read element by element.
#define ATT_DHC ((ATT_DH + 15) / 16)
#define ATT_DVC ((ATT_DV + 15) / 16)
#define ATT_LANES ((int16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15))

// Lane k: the sum of a<k>'s lanes. Three rounds of pairwise sums over
// shuffled halves: 7 additions for 8 dot products, not 8 reductions.
#define ATT_PAIRS(a, b) ((float8)((a).even, (b).even) + (float8)((a).odd, (b).odd))
inline float8 att_sums8(float8 a0, float8 a1, float8 a2, float8 a3, float8 a4, float8 a5, float8 a6, float8 a7) {
  const float8 t0 = ATT_PAIRS(a0, a1), t1 = ATT_PAIRS(a2, a3), t2 = ATT_PAIRS(a4, a5), t3 = ATT_PAIRS(a6, a7);
  return ATT_PAIRS(ATT_PAIRS(t0, t1), ATT_PAIRS(t2, t3));
}

// ATT_CHUNK(out, x, base, st, len, c): elements [16c, 16c + 16) of the row
// of `len` elements at `base` (element stride st), zeros past len. A macro:
// PoCL leaves such a function a call in the innermost loops.
#define ATT_CHUNK(out, x, base, st, len, c)                                     \
  do {                                                                          \
    const int d0_ = 16 * (c);                                                   \
    if ((st) == 1 && d0_ + 16 <= (len)) {                                       \
      out = LDV(16, (x) + (base) + d0_);                                        \
    } else {                                                                    \
      float t_[16];                                                             \
      for (int e_ = 0; e_ < 16; ++e_)                                           \
        t_[e_] = d0_ + e_ < (len) ? LD(x, (base) + (d0_ + e_) * (st)) : 0.0f;   \
      out = vload16(0, t_);                                                     \
    }                                                                           \
  } while (0)

__kernel void attention_cpu(__global const real_t* Q, __global const real_t* K, __global const real_t* V,
                            __global const real_t* M, __global real_t* Y, AttentionParams p, int blocks, int items) {
  const int id = get_global_id(0);
  if (id >= items) return;
  const int b = id / blocks, i0 = (id % blocks) * ATT_R;
  int rows[ATT_R];
#pragma unroll
  for (int r = 0; r < ATT_R; ++r) rows[r] = min(i0 + r, p.sq - 1);

  float q[ATT_R][ATT_DHC * 16];
  float16 acc[ATT_R][ATT_DVC];
  float m[ATT_R], l[ATT_R];
  const int qb = p.qo + ATT_BATCH(p, q, b);
#pragma unroll
  for (int r = 0; r < ATT_R; ++r) {
    for (int c = 0; c < ATT_DHC; ++c) {
      float16 x;
      ATT_CHUNK(x, Q, qb + rows[r] * p.q_si, p.q_sd, ATT_DH, c);
      vstore16(x * p.scale, c, q[r]);
    }
#pragma unroll
    for (int c = 0; c < ATT_DVC; ++c) acc[r][c] = (float16)(0.0f);
    m[r] = -INFINITY;
    l[r] = 0.0f;
  }

  const int kb = p.ko + ATT_BATCH(p, k, b), vb = p.vo + ATT_BATCH(p, v, b), mb = p.mo + ATT_BATCH(p, m, b);
  const bool v_rows = p.v_sd == 1;  // V's rows contiguous: vector loads
  for (int j0 = 0; j0 < p.sk; j0 += 16) {
    const int n = min(16, p.sk - j0);
    float16 s[ATT_R];
    if (p.k_sj == 1 && n == 16) {  // K^T: 16 keys of one head-dim element in a row
#pragma unroll
      for (int r = 0; r < ATT_R; ++r) s[r] = (float16)(0.0f);
      __global const real_t* kp = K + kb + j0;
      for (int d = 0; d < ATT_DH; ++d, kp += p.k_sd) {
        const float16 kv = LDV(16, kp);
#pragma unroll
        for (int r = 0; r < ATT_R; ++r) s[r] = fma((float16)(q[r][d]), kv, s[r]);
      }
    } else {  // K by rows (or the last keys): a dot product per key, 8 partial sums each
      float8 part[ATT_R][16];
      for (int jj = 0; jj < 16; ++jj) {
        float16 dot[ATT_R];
#pragma unroll
        for (int r = 0; r < ATT_R; ++r) dot[r] = (float16)(0.0f);
        if (jj < n) {
          const int kr = kb + (j0 + jj) * p.k_sj;
#pragma unroll
          for (int c = 0; c < ATT_DHC; ++c) {
            float16 kv;
            ATT_CHUNK(kv, K, kr, p.k_sd, ATT_DH, c);
#pragma unroll
            for (int r = 0; r < ATT_R; ++r) dot[r] = fma(vload16(c, q[r]), kv, dot[r]);
          }
        }
#pragma unroll
        for (int r = 0; r < ATT_R; ++r) part[r][jj] = dot[r].lo + dot[r].hi;
      }
#pragma unroll
      for (int r = 0; r < ATT_R; ++r)
        s[r] = (float16)(att_sums8(part[r][0], part[r][1], part[r][2], part[r][3], part[r][4], part[r][5],
                                   part[r][6], part[r][7]),
                         att_sums8(part[r][8], part[r][9], part[r][10], part[r][11], part[r][12], part[r][13],
                                   part[r][14], part[r][15]));
    }

    float e[ATT_R][16];
#pragma unroll
    for (int r = 0; r < ATT_R; ++r) {
      float16 x = s[r];
      if (p.has_mask) {
        float16 mv;
        ATT_CHUNK(mv, M, mb + rows[r] * p.m_si + j0 * p.m_sj, p.m_sj, n, 0);
        x += mv * M_LOG2E_F;
      }
      if (n < 16) x = select(x, (float16)(-INFINITY), ATT_LANES >= (int16)(n));
      const float mn = fmax(m[r], hmax16(x));
      if (mn == -INFINITY) {  // every key so far masked out: nothing to add
        vstore16((float16)(0.0f), 0, e[r]);
        continue;
      }
      const float corr = exp2(m[r] - mn);
      const float16 ex = exp2(x - mn);
      l[r] = l[r] * corr + hsum16(ex);
#pragma unroll
      for (int c = 0; c < ATT_DVC; ++c) acc[r][c] *= corr;
      m[r] = mn;
      vstore16(ex, 0, e[r]);
    }
    // One chunk of 16 output columns at a time over the tile's keys: ATT_R
    // accumulators stay in registers (all ATT_R x ATT_DVC of them would not).
    __global const real_t* v0 = V + vb + j0 * p.v_sj;
#pragma unroll
    for (int c = 0; c < ATT_DVC; ++c) {
      float16 a[ATT_R];
#pragma unroll
      for (int r = 0; r < ATT_R; ++r) a[r] = acc[r][c];
      __global const real_t* vp = v0 + 16 * c * p.v_sd;
      if (v_rows && 16 * c + 16 <= ATT_DV) {
        for (int jj = 0; jj < n; ++jj, vp += p.v_sj) {
          const float16 vv = LDV(16, vp);
#pragma unroll
          for (int r = 0; r < ATT_R; ++r) a[r] = fma((float16)(e[r][jj]), vv, a[r]);
        }
      } else {
        for (int jj = 0; jj < n; ++jj, vp += p.v_sj) {
          float t_[16];
#pragma unroll
          for (int e_ = 0; e_ < 16; ++e_) t_[e_] = 16 * c + e_ < ATT_DV ? LD(vp, e_ * p.v_sd) : 0.0f;
          const float16 vv = vload16(0, t_);
#pragma unroll
          for (int r = 0; r < ATT_R; ++r) a[r] = fma((float16)(e[r][jj]), vv, a[r]);
        }
      }
#pragma unroll
      for (int r = 0; r < ATT_R; ++r) acc[r][c] = a[r];
    }
  }

#pragma unroll
  for (int r = 0; r < ATT_R; ++r) {
    if (i0 + r >= p.sq) break;
    // A fully masked row: 0 * inf, NaN, as the unfused Softmax gives, or zeros.
    const float inv = p.masked_rows_zero && m[r] == -INFINITY ? 0.0f : 1.0f / l[r];
    __global real_t* yp = Y + p.yo + ATT_BATCH(p, y, b) + (i0 + r) * p.y_si;
#pragma unroll
    for (int c = 0; c < ATT_DVC; ++c) {
      const float16 y = acc[r][c] * inv;
      if (16 * c + 16 <= ATT_DV) {
        STV(16, yp + 16 * c, y);
      } else {
        float t[16];
        vstore16(y, 0, t);
        for (int d = 16 * c; d < ATT_DV; ++d) ST(yp, d, t[d - 16 * c]);
      }
    }
  }
}
