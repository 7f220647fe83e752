// FusedAttention (lower/attention.cpp, docs/fused-ops.md#fusedattention):
// Y = softmax(scale Q K^T + M) V, flash style: the scores never leave the
// work-group. A group takes ATT_BM query rows of one batch (b0, head);
// ATT_SPLIT work-items share each row, every one taking its ATT_KPT keys
// of each tile. Per tile of ATT_BN keys the group stages K, V (and the
// mask's block) in local memory; each work-item keeps its row of Q (scaled)
// and its share of the output in registers, with the running maximum and
// sum of an online softmax, rescaling once per tile. At the end the
// ATT_SPLIT partial rows of a query are merged through local memory and the
// block written row by row. fp32 arithmetic; tensors stored as real_t
// (half under TEXPLAN_HALF). Rows past sq compute a copy of the last row and
// store nothing; keys past sk score -infinity.
//
// Built with ATT_DH4 and ATT_DV4 (the head dims of Q/K and V in float4s,
// rounded up), ATT_BM, ATT_SPLIT and ATT_BN (a multiple of ATT_SPLIT, at
// least ATT_BM).
#ifdef ATT_SHORT
// Short key sequences (Sk <= 128 * ATT_KPT, head dims up to 128: BERT's 128
// tokens, Swin's windows), docs/kernel-choices.md#fusedattention-on-gpus-with-every-score-in-local-memory: a
// work-group of 128 items takes AS_BM query rows of one (batch, head) and
// holds all their scores in local memory, so the softmax needs no running
// rescale and no partial rows to merge. Item j scores keys j, j + 128, ...
// against every row (its key read straight from memory, Q's block
// broadcast from local memory); 16 items a row take its maximum and sum;
// then each item sums the probabilities times V for (row, 4 columns) pairs.
// Three barriers in all, where the tiled kernel above walks key tiles in
// turn and merges ATT_SPLIT partial rows one after another.
// Built with ATT_DH4, ATT_DV4, ATT_KPT (keys per item: 1 or 2), AS_WG (128
// items) and AS_BM (8 rows; AS_BM * 16 == AS_WG: 16 items a row's sums).
// AS_VLOCAL (V of up to 128 keys x 64 columns, 32 KB): the group first
// copies V's block into local memory, so the last step's sums over the keys
// read it there instead of waiting on global memory once per few keys
// (BERT-mini: docs/kernel-choices.md#fusedattention-on-gpus-with-every-score-in-local-memory).
#define AS_KEYS (AS_WG * ATT_KPT)
__kernel __attribute__((reqd_work_group_size(AS_WG, 1, 1))) void attention_short(
    __global const real_t* Q, __global const real_t* K, __global const real_t* V, __global const real_t* M,
    __global real_t* Y, AttentionParams p) {
  __local float4 qs[AS_BM * ATT_DH4];  // the block's rows of Q, times scale
  __local float ps[AS_BM * AS_KEYS];   // scores, then their powers, [row][key]
  __local float red[2 * AS_BM * 16];   // each row's 16 partial maxima, then sums
  const int lid = get_local_id(0), b = get_group_id(1), i0 = get_group_id(0) * AS_BM;
  const int qb = p.qo + ATT_BATCH(p, q, b), kb = p.ko + ATT_BATCH(p, k, b), vb = p.vo + ATT_BATCH(p, v, b);
  const int mb = p.mo + ATT_BATCH(p, m, b);
#ifdef AS_VLOCAL
  __local float4 vs[AS_KEYS * ATT_DV4];  // V's block [key][columns], zeros past sk and dv
#pragma unroll 16
  for (int e = lid; e < AS_KEYS * ATT_DV4 * 4; e += AS_WG) {
    const int j = e / (ATT_DV4 * 4), c = e % (ATT_DV4 * 4);
    ((__local float*)vs)[e] = j < p.sk && c < p.dv ? LD(V, vb + j * p.v_sj + c * p.v_sd) : 0.0f;
  }
#endif
  for (int e = lid; e < AS_BM * ATT_DH4 * 4; e += AS_WG) {
    const int r = e / (ATT_DH4 * 4), c = e % (ATT_DH4 * 4);
    const int i = min(i0 + r, p.sq - 1);  // rows past sq: a copy of the last, not stored
    ((__local float*)qs)[e] = c < p.dh ? LD(Q, qb + i * p.q_si + c * p.q_sd) * p.scale : 0.0f;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
  for (int t = 0; t < ATT_KPT; ++t) {
    const int j = lid + t * AS_WG;
    float4 d[AS_BM];
#pragma unroll
    for (int r = 0; r < AS_BM; ++r) d[r] = (float4)(0.0f);
    if (j < p.sk) {
      const int kj = kb + j * p.k_sj;
#pragma unroll 4
      for (int c = 0; c < ATT_DH4; ++c) {
        float x[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) x[e] = 4 * c + e < p.dh ? LD(K, kj + (4 * c + e) * p.k_sd) : 0.0f;
        const float4 k4 = (float4)(x[0], x[1], x[2], x[3]);
#pragma unroll
        for (int r = 0; r < AS_BM; ++r) d[r] = fma(qs[r * ATT_DH4 + c], k4, d[r]);
      }
    }
#pragma unroll
    for (int r = 0; r < AS_BM; ++r) {
      float x = -INFINITY;  // keys past sk
      if (j < p.sk) {
        x = (d[r].x + d[r].y) + (d[r].z + d[r].w);
        if (p.has_mask) x += LD(M, mb + min(i0 + r, p.sq - 1) * p.m_si + j * p.m_sj) * M_LOG2E_F;
      }
      ps[r * AS_KEYS + j] = x;
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  {
    const int r = lid / 16, u = lid % 16;  // AS_BM * 16 == AS_WG
    float mx = -INFINITY;
    for (int j = u; j < AS_KEYS; j += 16) mx = fmax(mx, ps[r * AS_KEYS + j]);
    red[r * 16 + u] = mx;
    barrier(CLK_LOCAL_MEM_FENCE);
    float top = -INFINITY;
#pragma unroll
    for (int v = 0; v < 16; ++v) top = fmax(top, red[r * 16 + v]);
    // A fully masked row: exp2(-inf - -inf) is NaN, as the unfused Softmax gives.
    float sum = 0.0f;
    for (int j = u; j < AS_KEYS; j += 16) {
      const float e = j < p.sk ? exp2(ps[r * AS_KEYS + j] - top) : 0.0f;
      ps[r * AS_KEYS + j] = e;
      sum += e;
    }
    red[AS_BM * 16 + r * 16 + u] = sum;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  const int yb = p.yo + ATT_BATCH(p, y, b);
  for (int o = lid; o < AS_BM * ATT_DV4; o += AS_WG) {
    const int r = o / ATT_DV4, c = o % ATT_DV4;
    if (i0 + r >= p.sq) continue;
    float top = -INFINITY, sum = 0.0f;
#pragma unroll
    for (int v = 0; v < 16; ++v) top = fmax(top, red[r * 16 + v]), sum += red[AS_BM * 16 + r * 16 + v];
    float4 acc = (float4)(0.0f);
    if (!(p.masked_rows_zero && top == -INFINITY)) {  // else zeros
#ifdef AS_VLOCAL
#pragma unroll 8
      for (int j = 0; j < p.sk; ++j) acc = fma((float4)(ps[r * AS_KEYS + j]), vs[j * ATT_DV4 + c], acc);
#else
      // Columns past dv read column dv - 1 (in range) and are not stored.
      const int4 vc = vb + min((int4)(4 * c) + (int4)(0, 1, 2, 3), (int4)(p.dv - 1)) * p.v_sd;
#pragma unroll 8
      for (int j = 0; j < p.sk; ++j) {
        const int4 vj = vc + j * p.v_sj;
        const float4 v4 = (float4)(LD(V, vj.x), LD(V, vj.y), LD(V, vj.z), LD(V, vj.w));
        acc = fma((float4)(ps[r * AS_KEYS + j]), v4, acc);
      }
#endif
      acc /= sum;
    }
    const int yr = yb + (i0 + r) * p.y_si + 4 * c;
    const float out[4] = {acc.x, acc.y, acc.z, acc.w};
#pragma unroll
    for (int e = 0; e < 4; ++e)
      if (4 * c + e < p.dv) ST(Y, yr + e, out[e]);
  }
}
#else
#define ATT_WG (ATT_BM * ATT_SPLIT)
#define ATT_KPT (ATT_BN / ATT_SPLIT)
// Local floats: the K and V tiles and the mask's block; the merge reuses them.
#define ATT_TILES (ATT_BN * (ATT_DH4 + ATT_DV4) * 4 + ATT_BM * ATT_BN)
#define ATT_MERGE (ATT_BM * ATT_DV4 * 4)

// Rows [0, n) of a [rows, cols] operand at `base` (element strides sr, sc)
// into a local tile of ATT_BN rows of c4 float4s, zeros elsewhere. Work-items
// walk the tile along the operand's contiguous dim, so the loads coalesce,
// ATT_LOADS of them into registers before any store, so that the reads
// overlap rather than each waiting out the one before (on the H200 bert_mini's
// attention took 29 us a layer whatever the work-group's share of the scores,
// 22 us in batches of 8; batches of 32, a whole 64-key tile of K or V in two
// for a 128-item group, ran it 1.01x faster: docs/performance.md#narrow-tiles-for-products-and-attention-writing-its-transpose-h200-2026-12-02).
#define ATT_LOADS 32
inline void attention_tile(__local float* dst, int c4, __global const real_t* src, int base, int sr, int sc, int n,
                           int cols, int lid) {
  const int width = c4 * 4, total = ATT_BN * width;
  const bool by_rows = sc != 1 && sr == 1;  // K^T: keys contiguous
  for (int e0 = lid; e0 < total; e0 += ATT_LOADS * ATT_WG) {
    float v[ATT_LOADS];
    int at[ATT_LOADS];  // where each value goes in the tile; -1: past it
#pragma unroll
    for (int u = 0; u < ATT_LOADS; ++u) {
      const int e = e0 + u * ATT_WG;
      const int r = by_rows ? e % ATT_BN : e / width, c = by_rows ? e / ATT_BN : e % width;
      at[u] = e < total ? r * width + c : -1;
      v[u] = e < total && r < n && c < cols ? LD(src, base + r * sr + c * sc) : 0.0f;
    }
#pragma unroll
    for (int u = 0; u < ATT_LOADS; ++u)
      if (at[u] >= 0) dst[at[u]] = v[u];
  }
}

__kernel __attribute__((reqd_work_group_size(ATT_WG, 1, 1))) void attention(
    __global const real_t* Q, __global const real_t* K, __global const real_t* V, __global const real_t* M,
    __global real_t* Y, AttentionParams p) {
  // float4s: the tiles are read as float4s, which must be 16-byte aligned.
  __local float4 tiles[((ATT_TILES > ATT_MERGE ? ATT_TILES : ATT_MERGE) + 3) / 4];
  __local float merge[2 * ATT_WG];
  __local float* kt = (__local float*)tiles;
  __local float* vt = kt + ATT_BN * ATT_DH4 * 4;
  __local float* mt = vt + ATT_BN * ATT_DV4 * 4;
  const int lid = get_local_id(0), r = lid % ATT_BM, s = lid / ATT_BM;
  const int b = get_group_id(1), i0 = get_group_id(0) * ATT_BM;
  const int i = min(i0 + r, p.sq - 1);

  float4 q[ATT_DH4], acc[ATT_DV4];
  const int qb = p.qo + ATT_BATCH(p, q, b) + i * p.q_si;
#pragma unroll
  for (int c = 0; c < ATT_DH4; ++c) {
    float x[4];
    for (int e = 0; e < 4; ++e) x[e] = 4 * c + e < p.dh ? LD(Q, qb + (4 * c + e) * p.q_sd) : 0.0f;
    q[c] = (float4)(x[0], x[1], x[2], x[3]) * p.scale;
  }
#pragma unroll
  for (int c = 0; c < ATT_DV4; ++c) acc[c] = (float4)(0.0f);
  float m = -INFINITY, l = 0.0f;

  const int kb = p.ko + ATT_BATCH(p, k, b), vb = p.vo + ATT_BATCH(p, v, b), mb = p.mo + ATT_BATCH(p, m, b);
  for (int j0 = 0; j0 < p.sk; j0 += ATT_BN) {
    const int n = min(ATT_BN, p.sk - j0);
    barrier(CLK_LOCAL_MEM_FENCE);  // the last tile's readers are done
    attention_tile(kt, ATT_DH4, K, kb + j0 * p.k_sj, p.k_sj, p.k_sd, n, p.dh, lid);
    attention_tile(vt, ATT_DV4, V, vb + j0 * p.v_sj, p.v_sj, p.v_sd, n, p.dv, lid);
    if (p.has_mask)
      for (int e = lid; e < ATT_BM * ATT_BN; e += ATT_WG) {
        const int rr = e / ATT_BN, jj = e % ATT_BN;
        const int ii = min(i0 + rr, p.sq - 1);
        mt[e] = jj < n ? LD(M, mb + ii * p.m_si + (j0 + jj) * p.m_sj) * M_LOG2E_F : 0.0f;
      }
    barrier(CLK_LOCAL_MEM_FENCE);

    float sc[ATT_KPT];
    float tmax = -INFINITY;
#pragma unroll
    for (int t = 0; t < ATT_KPT; ++t) {
      const int jj = s * ATT_KPT + t;
      float x = -INFINITY;
      if (jj < n) {
        __local const float4* k4 = (__local const float4*)(kt + jj * ATT_DH4 * 4);
        float4 d = (float4)(0.0f);
#pragma unroll
        for (int c = 0; c < ATT_DH4; ++c) d = fma(q[c], k4[c], d);
        x = (d.x + d.y) + (d.z + d.w);
        if (p.has_mask) x += mt[r * ATT_BN + jj];
      }
      sc[t] = x;
      tmax = fmax(tmax, x);
    }
    const float mn = fmax(m, tmax);
    if (mn != -INFINITY) {  // else every key so far is masked out: nothing to add
      const float corr = exp2(m - mn);
      l *= corr;
#pragma unroll
      for (int c = 0; c < ATT_DV4; ++c) acc[c] *= corr;
#pragma unroll
      for (int t = 0; t < ATT_KPT; ++t) {
        const int jj = s * ATT_KPT + t;
        if (jj >= n) break;
        const float e = exp2(sc[t] - mn);
        l += e;
        __local const float4* v4 = (__local const float4*)(vt + jj * ATT_DV4 * 4);
#pragma unroll
        for (int c = 0; c < ATT_DV4; ++c) acc[c] = fma((float4)(e), v4[c], acc[c]);
      }
      m = mn;
    }
  }

  // Merge the ATT_SPLIT partial rows of each query: the largest maximum,
  // each part's sum and values brought to it.
  merge[lid] = m;
  merge[ATT_WG + lid] = l;
  barrier(CLK_LOCAL_MEM_FENCE);
  float top = -INFINITY;
  for (int t = 0; t < ATT_SPLIT; ++t) top = fmax(top, merge[t * ATT_BM + r]);
  float sum = 0.0f;
  for (int t = 0; t < ATT_SPLIT; ++t) sum += merge[ATT_WG + t * ATT_BM + r] * exp2(merge[t * ATT_BM + r] - top);
  // A fully masked row: 0/0, NaN, as the unfused Softmax gives, or zeros.
  const float f = p.masked_rows_zero && top == -INFINITY ? 0.0f : exp2(m - top) / sum;
  __local float4* o = tiles;  // [ATT_BM][ATT_DV4]: the tiles are read no more
  for (int t = 0; t < ATT_SPLIT; ++t) {
    if (s == t) {
#pragma unroll
      for (int c = 0; c < ATT_DV4; ++c) o[r * ATT_DV4 + c] = (t == 0 ? (float4)(0.0f) : o[r * ATT_DV4 + c]) + acc[c] * f;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const int rows = min(ATT_BM, p.sq - i0);
  __local const float* of = (__local const float*)o;
  for (int e = lid; e < rows * p.dv; e += ATT_WG) {
    const int rr = e / p.dv, d = e % p.dv;
    ST(Y, p.yo + ATT_BATCH(p, y, b) + (i0 + rr) * p.y_si + d, of[rr * ATT_DV4 * 4 + d]);
  }
}
#endif
