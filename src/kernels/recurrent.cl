// RecurrentSteps (graph.h RecurrentCell; lower/recurrent.cpp): one direction
// of an RNN, GRU or LSTM, its input products given. Work-group g owns hidden
// units [g * UPG, (g + 1) * UPG) of every sequence: each step it reads the
// state before (h of every unit, from Y at the step before's index, or h0)
// into local memory, dots its units' columns of R^T with it, runs their cell and
// writes their h into Y and LSTM's c into C. A launch runs steps [s0, s1):
// one (the launch is the barrier between steps) or, under RS_PERSISTENT,
// all of them, one group per compute unit, every group waiting at a grid
// barrier after each step.
//
// Built with RS_CELL (0 RNN, 1 GRU, 2 LSTM), RS_F, RS_G, RS_H (the cell's
// activations: 0 sigmoid, 1 tanh, 2 relu), RS_WG (items a group), RS_TPR
// (items summing one row of R), RS_ROWS (rows of a group: gates x UPG x B),
// RS_STATE (B x H floats), and where set RS_RSTRIDE (R^T's row stride, when
// not G x H), RS_RLOCAL (the floats of the
// group's columns of R^T, kept in local memory across steps), RS_VEC (CPU
// devices: units summed, and their cells run, in vectors of this width),
// RS_PERSISTENT and RS_PTX_FENCE (the grid barrier and its fence).

#if RS_CELL == 0
#define RS_NG 1
#elif RS_CELL == 1
#define RS_NG 3
#else
#define RS_NG 4
#endif

#ifdef RS_VEC
#define RS_CAT_(a, b) a##b
#define RS_CAT(a, b) RS_CAT_(a, b)
#define RS_VTYPE RS_CAT(float, RS_VEC)
#ifdef TEXPLAN_HALF
#define RS_VLOAD(p, i) RS_CAT(vload_half, RS_VEC)(0, (p) + (i))
#else
#define RS_VLOAD(p, i) RS_CAT(vload, RS_VEC)(0, (p) + (i))
#endif
#define RS_VSTORE(v, a) RS_CAT(vstore, RS_VEC)((v), 0, (a))
#ifdef TEXPLAN_HALF
#define RS_VSTG(p, i, v) RS_CAT(vstore_half, RS_VEC)((v), 0, (p) + (i))
#else
#define RS_VSTG(p, i, v) RS_CAT(vstore, RS_VEC)((v), 0, (p) + (i))
#endif
// The state's products: gate q of unit u of sequence b at gates[RS_GI(q, u,
// b)], units side by side on CPU devices (the cell's vectors), sequences
// on others.
#define RS_GI(q, u, b) (((q) * B + (b)) * UPG + (u))
#else
#define RS_GI(q, u, b) (((q) * UPG + (u)) * B + (b))
#endif

// The cell of one unit and sequence (T float), or on CPU devices of RS_VEC
// neighbouring units at once (T RS_VTYPE: PoCL vectorizes exp and tanh only
// when written on vectors). LDG, LDL and STG load and store T at global
// element i, at a local pointer and store T. g: the state's product for gate
// 0 of the first unit, gate q at g + q * gq; x: xw's index of gate 0; j:
// the first unit; ci: its cell state's index in C; yi: its h's in Y.
#define RS_CELL_FUNCTIONS(S, T, LDG, LDL, STG)                                                                \
  inline T rs_act##S(int a, T v) { return a == 0 ? 1.0f / (1.0f + exp(-v)) : a == 1 ? tanh(v) : fmax(v, 0.0f); } \
  inline T rs_clip##S(T v, float c) { return c > 0.0f ? clamp(v, -c, c) : v; }                               \
  inline void rs_cell##S(__global const real_t* xw, int x, __local const float* g, int gq, T hp,              \
                         __global const real_t* rbh, __global const real_t* c0, __global const real_t* peep,  \
                         __global real_t* cst, __global real_t* y, RecurrentParams p, int j, int b, int s,     \
                         int ci, int yi) {                                                                    \
    const int H = p.hidden;                                                                                   \
    T h;                                                                                                      \
    if (RS_CELL == 0) {                                                                                       \
      h = rs_act##S(RS_F, rs_clip##S(LDL(g) + LDG(xw, x), p.clip));                                           \
    } else if (RS_CELL == 1) {                                                                                \
      /* z r h; r multiplies the state's product and Rb_h (linear_before_reset). */                          \
      const T z = rs_act##S(RS_F, rs_clip##S(LDL(g) + LDG(xw, x), p.clip));                                   \
      const T rg = rs_act##S(RS_F, rs_clip##S(LDL(g + gq) + LDG(xw, x + H), p.clip));                         \
      const T rb = p.has_rb ? LDG(rbh, p.rbo + j) : (T)0.0f;                                                  \
      const T n = rs_act##S(RS_G, rs_clip##S(LDG(xw, x + 2 * H) + rg * (LDL(g + 2 * gq) + rb), p.clip));      \
      h = (1.0f - z) * n + z * hp;                                                                            \
    } else {                                                                                                  \
      /* i o f c; peepholes i, o, f. */                                                                       \
      const T cp = s == 0 ? (p.has_c0 ? LDG(c0, p.c0o + b * H + j) : (T)0.0f) : LDG(cst, ci);                 \
      const T pi = p.has_p ? LDG(peep, p.po + j) : (T)0.0f, po = p.has_p ? LDG(peep, p.po + H + j) : (T)0.0f, \
              pf = p.has_p ? LDG(peep, p.po + 2 * H + j) : (T)0.0f;                                           \
      const T i = rs_act##S(RS_F, rs_clip##S(LDL(g) + LDG(xw, x) + pi * cp, p.clip));                         \
      const T f = p.input_forget ? 1.0f - i                                                                   \
                                 : rs_act##S(RS_F, rs_clip##S(LDL(g + 2 * gq) + LDG(xw, x + 2 * H) + pf * cp, p.clip)); \
      const T c = f * cp + i * rs_act##S(RS_G, rs_clip##S(LDL(g + 3 * gq) + LDG(xw, x + 3 * H), p.clip));     \
      const T o = rs_act##S(RS_F, rs_clip##S(LDL(g + gq) + LDG(xw, x + H) + po * c, p.clip));                 \
      STG(cst, ci, c);                                                                                        \
      h = o * rs_act##S(RS_H, c);                                                                             \
    }                                                                                                         \
    STG(y, yi, h);                                                                                            \
  }

#define RS_LDL1(p) (*(p))
RS_CELL_FUNCTIONS(, float, LD, RS_LDL1, ST)
#ifdef RS_VEC
#define RS_LDLV(p) RS_CAT(vload, RS_VEC)(0, (p))
RS_CELL_FUNCTIONS(v, RS_VTYPE, RS_VLOAD, RS_LDLV, RS_VSTG)
#endif

#ifdef RS_PERSISTENT
// A device-wide fence: OpenCL C 3.0's (lower/recurrent.cpp builds this form
// with -cl-std=CL3.0), or on NVIDIA's driver, where the device may not list
// it, PTX's membar.gl (RS_PTX_FENCE). OpenCL 1.2's mem_fence orders a
// group's own accesses alone (NVIDIA's membar.cta), and a step would read h
// that other groups have not yet made visible
// (docs/performance.md#a-persistent-kernel-measured-before-it-is-built-2026-12-05).
#ifdef RS_PTX_FENCE
#define RS_DEVICE_FENCE() asm volatile("membar.gl;" ::: "memory")
#else
#define RS_DEVICE_FENCE() atomic_work_item_fence(CLK_GLOBAL_MEM_FENCE, memory_order_seq_cst, memory_scope_device)
#endif

// Every group waits until all have arrived. sync[0] counts arrivals,
// sync[1] the barriers passed (words 4 and 5 of the session's fault flags,
// left at 0 and n after each launch). A group that waits longer than any
// step takes (2^26 reads of the counter, seconds: the driver did not run
// all groups at once) flags the node in fault[0] and fault[3] = 1 and goes
// on, rather than hang; the session then raises the error.
bool rs_grid_barrier(__global int* fault, int node, __local int* gave_up) {
  volatile __global int* sync = fault + 4;
  barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
  if (get_local_id(0) == 0) {
    *gave_up = 0;
    const int passed = atomic_add(&sync[1], 0);
    RS_DEVICE_FENCE();
    if (atomic_inc(&sync[0]) == (int)get_num_groups(0) - 1) {
      atomic_xchg(&sync[0], 0);
      RS_DEVICE_FENCE();
      atomic_inc(&sync[1]);
    } else {
      for (long spins = 0; atomic_add(&sync[1], 0) == passed; ++spins) {
        if (spins == (1L << 26) || atomic_add(&fault[0], 0) != 0) {
          if (atomic_cmpxchg(&fault[0], 0, node + 1) == 0) atomic_xchg(&fault[3], 1);
          *gave_up = 1;
          break;
        }
      }
    }
    RS_DEVICE_FENCE();
  }
  barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
  return *gave_up != 0;
}
#endif

__kernel __attribute__((reqd_work_group_size(RS_WG, 1, 1))) void recurrent_steps(
    __global const real_t* xw, __global const real_t* r, __global const real_t* rbh, __global const real_t* h0,
    __global const real_t* c0, __global const real_t* peep, __global real_t* y, __global real_t* cst,
    RecurrentParams p, int s0, int s1, __global int* fault) {
  __local float hloc[RS_STATE];
  __local float gates[RS_ROWS];
  __local float red[RS_WG];
#ifdef RS_RLOCAL
  __local float rloc[RS_RLOCAL];
#endif
#ifdef RS_PERSISTENT
  __local int gave_up;
#endif
  const int H = p.hidden, B = p.batch, T = p.steps, UPG = p.upg, G = RS_NG * H;
#ifdef RS_RSTRIDE
  const int RS_ROW = RS_RSTRIDE;  // R^T's rows padded (lower/recurrent.cpp)
#else
  const int RS_ROW = G;
#endif
  const int lid = get_local_id(0), j0 = get_group_id(0) * UPG;
  // Row q * UPG * B + u * B + b: gate q of unit j0 + u, sequence b. Each
  // pass sums RS_WG / RS_TPR rows, RS_TPR items a row over slices of k;
  // neighbouring items take neighbouring rows, which are neighbouring
  // columns of R^T [H, G] (one load for a warp, a vector for PoCL).
  const int per_pass = RS_WG / RS_TPR, lane = lid / per_pass, slot = lid % per_pass;
#ifdef RS_RLOCAL
  // The group's columns of R^T, k-major: rloc[k * NG * UPG + q * UPG + u].
  for (int e = lid; e < RS_NG * UPG * H; e += RS_WG) {
    const int k = e / (RS_NG * UPG), q = e / UPG % RS_NG, u = e % UPG;
    rloc[e] = j0 + u < H ? LD(r, p.ro + k * RS_ROW + q * H + j0 + u) : 0.0f;
  }
#endif
  for (int s = s0; s < s1; ++s) {
    const int t = p.reverse ? T - 1 - s : s;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (s == 0) {
      for (int e = lid; e < B * H; e += RS_WG) hloc[e] = p.has_h0 ? LD(h0, p.h0o + e) : 0.0f;
    } else {
      const int before = p.reverse ? t + 1 : t - 1;
      for (int e = lid; e < B * H; e += RS_WG) hloc[e] = LD(y, p.yo + before * B * H + e);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
#ifdef RS_VEC
    // CPU devices: an item sums RS_VEC neighbouring units of one gate and
    // sequence in a vector (R^T's row k holds them side by side), which
    // PoCL's vectorizer would not make of the loop over k.
    for (int e = lid; e < RS_NG * B * ((UPG + RS_VEC - 1) / RS_VEC); e += RS_WG) {
      const int per_gate = B * ((UPG + RS_VEC - 1) / RS_VEC);
      const int q = e / per_gate, b = e % per_gate % B, u0 = e % per_gate / B * RS_VEC;
      __local const float* hb = hloc + b * H;
      if (j0 + u0 + RS_VEC <= H && u0 + RS_VEC <= UPG) {
        // Four sums over k in turn: independent chains of adds.
        RS_VTYPE acc0 = 0.0f, acc1 = 0.0f, acc2 = 0.0f, acc3 = 0.0f;
        const int w = p.ro + q * H + j0 + u0;
        int k = 0;
        for (; k + 4 <= H; k += 4) {
          acc0 += RS_VLOAD(r, w + k * RS_ROW) * hb[k];
          acc1 += RS_VLOAD(r, w + (k + 1) * RS_ROW) * hb[k + 1];
          acc2 += RS_VLOAD(r, w + (k + 2) * RS_ROW) * hb[k + 2];
          acc3 += RS_VLOAD(r, w + (k + 3) * RS_ROW) * hb[k + 3];
        }
        for (; k < H; ++k) acc0 += RS_VLOAD(r, w + k * RS_ROW) * hb[k];
        RS_VSTORE((acc0 + acc1) + (acc2 + acc3), gates + RS_GI(q, u0, b));
      } else {
        for (int u = u0; u < min(u0 + RS_VEC, UPG); ++u) {
          float sum = 0.0f;
          if (j0 + u < H)
            for (int k = 0; k < H; ++k) sum += LD(r, p.ro + k * RS_ROW + q * H + j0 + u) * hb[k];
          gates[RS_GI(q, u, b)] = sum;
        }
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
#else
    for (int base = 0; base < RS_ROWS; base += per_pass) {
      const int row = base + slot;
      float sum = 0.0f;
      if (row < RS_ROWS) {
        const int q = row / (UPG * B), u = row / B % UPG, b = row % B;
        if (j0 + u < H) {
          __local const float* hb = hloc + b * H;
#ifdef RS_RLOCAL
          __local const float* w = rloc + q * UPG + u;
          for (int k = lane; k < H; k += RS_TPR) sum += w[k * RS_NG * UPG] * hb[k];
#else
          const int w = p.ro + q * H + j0 + u;
          for (int k = lane; k < H; k += RS_TPR) sum += LD(r, w + k * RS_ROW) * hb[k];
#endif
        }
      }
      red[lid] = sum;
      barrier(CLK_LOCAL_MEM_FENCE);
      for (int half_tpr = RS_TPR / 2; half_tpr > 0; half_tpr /= 2) {
        if (lane < half_tpr) red[lid] += red[lid + half_tpr * per_pass];
        barrier(CLK_LOCAL_MEM_FENCE);
      }
      if (lane == 0 && row < RS_ROWS) gates[row] = red[lid];
      barrier(CLK_LOCAL_MEM_FENCE);
    }
#endif
#ifdef RS_VEC
    // CPU devices: an item the cells of RS_VEC units of one sequence.
    const int per_b = (UPG + RS_VEC - 1) / RS_VEC;
    for (int e = lid; e < B * per_b; e += RS_WG) {
      const int b = e / per_b, u0 = e % per_b * RS_VEC;
      if (j0 + u0 + RS_VEC <= H && u0 + RS_VEC <= UPG) {
        const int j = j0 + u0;
        rs_cellv(xw, p.xwo + (t * B + b) * G + j, gates + RS_GI(0, u0, b), B * UPG, RS_LDLV(hloc + b * H + j), rbh,
                 c0, peep, cst, y, p, j, b, s, p.co + b * H + j, p.yo + (t * B + b) * H + j);
      } else {
        for (int u = u0, j = j0 + u0; u < min(u0 + RS_VEC, UPG) && j < H; ++u, ++j)
          rs_cell(xw, p.xwo + (t * B + b) * G + j, gates + RS_GI(0, u, b), B * UPG, hloc[b * H + j], rbh, c0, peep,
                  cst, y, p, j, b, s, p.co + b * H + j, p.yo + (t * B + b) * H + j);
      }
    }
#else
    for (int e = lid; e < UPG * B; e += RS_WG) {
      const int u = e / B, b = e % B, j = j0 + u;
      if (j < H)
        rs_cell(xw, p.xwo + (t * B + b) * G + j, gates + RS_GI(0, u, b), UPG * B, hloc[b * H + j], rbh, c0, peep, cst,
                y, p, j, b, s, p.co + b * H + j, p.yo + (t * B + b) * H + j);
    }
#endif
#ifdef RS_PERSISTENT
    if (s + 1 < s1 && rs_grid_barrier(fault, p.node, &gave_up)) return;
#endif
  }
}
