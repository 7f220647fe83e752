// Convolutions for CPU OpenCL devices (PoCL; matrix products and 1x1
// convolutions: cpu_gemm.cl): no local
// memory, no barriers. A work-item computes a register block of OCB output
// channels x PB output pixels (PB = 8 or 16, one float vector per channel),
// so the compiler keeps OCB vector accumulators in registers and each input
// vector loaded feeds OCB FMAs. Pixels are the flattened OH*OW index, so
// small images (7x7, 14x14) fill whole vectors too. The block is built with
// -DOCB=.. -DPB=.. (lower/opencl_cpu/conv_gemm.cpp, variants chosen by runtime/tuning).
// Fused epilogues (docs/fused-ops.md) arrive as EPI / EPI_PARAMS, and as
// EPI_VEC (on PB-wide vectors, built with -DEPI_VECTOR_WIDTH=PB) where the
// program has a vector form. Block macros: cpu_common.cl.

// 2D convolution, weights [OC, C/groups, KH, KW]. get_global_id(0): block of
// PB output pixels; (1): block of OCB output channels of one group; (2):
// image * groups + group. Per tap the PB input offsets are computed once;
// where they are consecutive and inside the image (most taps of most
// blocks) the channel loop reads one vector per channel, else it gathers
// with zeros for the padding.
__kernel void conv2d_cpu(__global const real_t* X, int xo, __global const real_t* Wt, int wo,
                         __global const real_t* Bias, int bo, __global real_t* Y, int yo, int has_bias, int C, int H,
                         int W, int OC, int OH, int OW, int KH, int KW, int sh, int sw, int ph, int pw, int dh, int dw,
                         int groups EPI_PARAMS YWIN_PARAMS XWIN_PARAMS) {
  const int P = OH * OW, OCg = OC / groups, ICg = C / groups;
  const int p0 = get_global_id(0) * PB, oc0 = get_global_id(1) * OCB, z = get_global_id(2);
  if (p0 >= P || oc0 >= OCg) return;
  const int img = z / groups, g = z - img * groups;
  const int HW = XPLANE(H, W), KHW = KH * KW, K = ICg * KHW;
  __global const real_t* x = X + xo + (img * C + g * ICg) * HW;
  __global const real_t* w = Wt + wo + (g * OCg) * K;
  int wrow[OCB];  // weight row of each channel of the block (the last one again past OCg)
#pragma unroll
  for (int o = 0; o < OCB; ++o) wrow[o] = min(oc0 + o, OCg - 1) * K;

  const VI p = min(p0 + LANES, P - 1);
  const VI oh = p / OW, ow = p - oh * OW;
  const VI ih0 = oh * sh - ph, iw0 = ow * sw - pw;
  VF acc[OCB];
#pragma unroll
  for (int o = 0; o < OCB; ++o) acc[o] = (VF)(0.0f);

  for (int kh = 0; kh < KH; ++kh) {
    const VI ih = ih0 + kh * dh;
    for (int kw = 0; kw < KW; ++kw) {
      const VI iw = iw0 + kw * dw;
      const VI valid = (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W);
      const VI off = ih * XROW(W) + iw;
      const int t = kh * KW + kw;
      if (!any(valid)) continue;
      const int first = off.s0;
      if (all(valid) && all(off == first + LANES)) {
        __global const real_t* xc = x + first;
        for (int c = 0; c < ICg; ++c) {
          const VF xv = LDV(PB, xc + c * HW);
          const int wc = c * KHW + t;
#pragma unroll
          for (int o = 0; o < OCB; ++o) acc[o] = fma((VF)(LD(w, wrow[o] + wc)), xv, acc[o]);
        }
      } else if (all(valid) && all(off == first + 2 * LANES)) {
        // Stride 2 inside one row (stems, downsampling): two vector loads
        // and their even lanes, not PB scalar loads.
        __global const real_t* xc = x + first;
        for (int c = 0; c < ICg; ++c) {
          const VF lo = LDV(PB, xc + c * HW), hi = LDV(PB, xc + c * HW + PB);
          const VF xv = (VF)(lo.even, hi.even);
          const int wc = c * KHW + t;
#pragma unroll
          for (int o = 0; o < OCB; ++o) acc[o] = fma((VF)(LD(w, wrow[o] + wc)), xv, acc[o]);
        }
      } else {
        int offs[PB];
        VSTORE(select((VI)(0), off, valid), 0, offs);
        for (int c = 0; c < ICg; ++c) {
          __global const real_t* xc = x + c * HW;
          float t8[PB];
#pragma unroll
          for (int j = 0; j < PB; ++j) t8[j] = LD(xc, offs[j]);
          const VF xv = select((VF)(0.0f), VLOAD(0, t8), valid);
          const int wc = c * KHW + t;
#pragma unroll
          for (int o = 0; o < OCB; ++o) acc[o] = fma((VF)(LD(w, wrow[o] + wc)), xv, acc[o]);
        }
      }
    }
  }
  const int n = P - p0;
#pragma unroll
  for (int o = 0; o < OCB; ++o) {
    const int oc = oc0 + o;
    if (oc >= OCg) break;
    const float b = has_bias ? LD(Bias, bo + g * OCg + oc) : 0.0f;
    STORE_BLOCK((img * OC + g * OCg + oc) * P + p0, acc[o] + (VF)(b), n);
  }
}

// Convolutions of few input channels (stems: C <= 4, one group). With 3
// channels conv2d_cpu's per-tap checks (lane-wise compares reduced across
// the vector, several dozen instructions) cost more than the channel loop they
// guard; here a work-item's PB pixels lie in one output row, so a tap's row
// is in or out and its columns inside or not by scalar compares, and the
// weights come packed [OC / OCB][C][KH][KW][OCB] (zeros past OC): a tap's
// OCB weights are one pointer plus constants. get_global_id(0): block of PB
// output columns; (1): output row; (2): image x OCB-channel block.
__kernel void conv2d_rows_cpu(__global const real_t* X, int xo, __global const real_t* Wp, __global const real_t* Bias,
                              int bo, __global real_t* Y, int yo, int has_bias, int C, int H, int W, int OC, int OH,
                              int OW, int KH, int KW, int sh, int sw, int ph, int pw, int dh, int dw EPI_PARAMS YWIN_PARAMS XWIN_PARAMS) {
#ifdef ROWS_KH  // the taps, stride and channels as constants: the loops unroll
  C = ROWS_C, KH = ROWS_KH, KW = ROWS_KW, sw = ROWS_SW;
#endif
  const int ow0 = get_global_id(0) * PB, oh = get_global_id(1), z = get_global_id(2);
  const int blocks = (OC + OCB - 1) / OCB, img = z / blocks, ob = z - img * blocks, oc0 = ob * OCB;
  if (ow0 >= OW || oh >= OH) return;
  const int HW = XPLANE(H, W), KHW = KH * KW;
  __global const real_t* x = X + xo + img * C * HW;
  __global const real_t* wb = Wp + ob * C * KHW * OCB;
  VF acc[OCB];
#pragma unroll
  for (int o = 0; o < OCB; ++o) acc[o] = (VF)(0.0f);
#pragma unroll
  for (int kh = 0; kh < KH; ++kh) {
    const int ih = oh * sh - ph + kh * dh;
    if (ih < 0 || ih >= H) continue;
    __global const real_t* xr = x + ih * XROW(W);
#pragma unroll
    for (int kw = 0; kw < KW; ++kw) {
      __global const real_t* wt = wb + (kh * KW + kw) * OCB;
      // Every lane's column inside the row (stride 2 reads 2 PB floats from
      // `first`): a loop of plain loads; else (the edges) the gathering loop,
      // whose offsets stay out of the fast one.
      const int first = ow0 * sw - pw + kw * dw;
      const bool inside = first >= 0 && first + (sw == 2 ? 2 * PB - 1 : (PB - 1) * sw) < W;
      if (inside && sw == 1) {
#pragma unroll
        for (int c = 0; c < C; ++c) {
          const VF xv = LDV(PB, xr + c * HW + first);
          __global const real_t* wc = wt + c * KHW * OCB;
#pragma unroll
          for (int o = 0; o < OCB; ++o) acc[o] = fma((VF)(LD(wc, o)), xv, acc[o]);
        }
      } else if (inside && sw == 2) {
#pragma unroll
        for (int c = 0; c < C; ++c) {
          __global const real_t* xc = xr + c * HW + first;
          const VF lo = LDV(PB, xc), hi = LDV(PB, xc + PB);
          const VF xv = (VF)(lo.even, hi.even);
          __global const real_t* wc = wt + c * KHW * OCB;
#pragma unroll
          for (int o = 0; o < OCB; ++o) acc[o] = fma((VF)(LD(wc, o)), xv, acc[o]);
        }
      } else {
        const VI iw = (ow0 + LANES) * sw - pw + kw * dw;
        const VI valid = (iw >= 0) & (iw < W);
        int offs[PB];
        VSTORE(select((VI)(0), iw, valid), 0, offs);
        for (int c = 0; c < C; ++c) {
          __global const real_t* xc = xr + c * HW;
          float g[PB];
#pragma unroll
          for (int j = 0; j < PB; ++j) g[j] = LD(xc, offs[j]);
          const VF xv = select((VF)(0.0f), VLOAD(0, g), valid);
          __global const real_t* wc = wt + c * KHW * OCB;
#pragma unroll
          for (int o = 0; o < OCB; ++o) acc[o] = fma((VF)(LD(wc, o)), xv, acc[o]);
        }
      }
    }
  }
  const int n = OW - ow0;
#pragma unroll
  for (int o = 0; o < OCB; ++o) {
    const int oc = oc0 + o;
    if (oc >= OC) break;
    const float b = has_bias ? LD(Bias, bo + oc) : 0.0f;
    STORE_BLOCK(((img * OC + oc) * OH + oh) * OW + ow0, acc[o] + (VF)(b), n);
  }
}

// Convolutions with the output channels along the vector lanes (the
// layout-free form of MLAS's NCHWc kernels), for any kernel shape, stride,
// dilation and group: a work-item computes PX pixels of one output row x
// OCV = NV * PB output channels of one group in PX * NV vector
// accumulators. Per input channel and tap it loads NV vectors of weights
// (packed [groups][OCg / OCV][ICg][KH * KW][OCV], zeros past OCg, then OCV
// zeros at `zeros`) and broadcasts PX inputs, each feeding NV FMAs: the
// GEMM's register block with the input as its broadcast operand, so taps,
// strides and padding cost no lane shuffles or masks. A work-item whose
// windows all lie inside the image walks channels outermost, so the taps of
// one channel read a few lines of one plane; one at an edge walks taps
// outermost: where a tap's PX columns lie inside the row the inputs are at
// constant offsets from one pointer, else each pixel has its own pointer,
// the ones outside the image at the zeros (advanced by nothing per channel).
// get_global_id(0): block of PX output columns (the last one moved back to
// end at OW; the columns it recomputes are not stored); (1): output row;
// (2): (image * groups + group) * blocks + block of OCV channels. Built with
// -DPX, -DPB, -DNV and -DOCV_SW (the column stride).
#ifdef OCV_SW
#define OCV (PB * NV)
// acc[j][v] += x(pixel j) * w[v] for the NV weight vectors at `wt`, pixel
// j's input at LD(xp_j, 0) (X_AT(j)).
#define OCV_STEP(wt, X_AT)                                                 \
  do {                                                                     \
    VF wv[NV];                                                             \
    _Pragma("unroll") for (int v = 0; v < NV; ++v) wv[v] = LDV(PB, (wt) + v * PB); \
    _Pragma("unroll") for (int j = 0; j < PX; ++j) {                       \
      const VF xv = (VF)(X_AT(j));                                         \
      _Pragma("unroll") for (int v = 0; v < NV; ++v) acc[j][v] = fma(xv, wv[v], acc[j][v]); \
    }                                                                      \
  } while (0)
__kernel void conv2d_ocvec_cpu(__global const real_t* X, int xo, __global const real_t* Wp, __global const real_t* Bias,
                               int bo, __global real_t* Y, int yo, int has_bias, int C, int H, int W, int OC, int OH,
                               int OW, int KH, int KW, int sh, int ph, int pw, int dh, int dw, int groups,
                               int zeros EPI_PARAMS YWIN_PARAMS XWIN_PARAMS) {
  const int OCg = OC / groups, ICg = C / groups, blocks = (OCg + OCV - 1) / OCV;
  const int ow0 = get_global_id(0) * PX, oh = get_global_id(1), z = get_global_id(2);
  if (ow0 >= OW || oh >= OH) return;
  const int ob = z % blocks, zg = z / blocks, g = zg % groups, img = zg / groups;
  const int owb = OW > PX ? min(ow0, OW - PX) : 0;  // first column computed
  const int HW = XPLANE(H, W), KHW = KH * KW, ih0 = oh * sh - ph, iw0 = owb * OCV_SW - pw;
  __global const real_t* x = X + xo + (img * C + g * ICg) * HW;
  __global const real_t* wb = Wp + (g * blocks + ob) * ICg * KHW * OCV;
  VF acc[PX][NV];
#pragma unroll
  for (int j = 0; j < PX; ++j)
#pragma unroll
    for (int v = 0; v < NV; ++v) acc[j][v] = (VF)(0.0f);
  if (ih0 >= 0 && ih0 + (KH - 1) * dh < H && iw0 >= 0 && iw0 + (PX - 1) * OCV_SW + (KW - 1) * dw < W) {
    __global const real_t* xc = x + ih0 * XROW(W) + iw0;
    __global const real_t* wt = wb;
    for (int c = 0; c < ICg; ++c, xc += HW)
      for (int kh = 0; kh < KH; ++kh) {
        __global const real_t* xr = xc + kh * dh * XROW(W);
        for (int kw = 0; kw < KW; ++kw, wt += OCV) {
          __global const real_t* xt = xr + kw * dw;
#define OCV_INSIDE(j) LD(xt, (j) * OCV_SW)
          OCV_STEP(wt, OCV_INSIDE);
#undef OCV_INSIDE
        }
      }
  } else {
    __global const real_t* zero = Wp + zeros;
    for (int kh = 0; kh < KH; ++kh) {
      const int ih = ih0 + kh * dh;
      if (ih < 0 || ih >= H) continue;
      __global const real_t* xr = x + ih * XROW(W);
      for (int kw = 0; kw < KW; ++kw) {
        __global const real_t* wt = wb + (kh * KW + kw) * OCV;
        const int iw = iw0 + kw * dw;
        if (iw >= 0 && iw + (PX - 1) * OCV_SW < W) {
          __global const real_t* xc = xr + iw;
          for (int c = 0; c < ICg; ++c, xc += HW, wt += KHW * OCV) {
#define OCV_ROW(j) LD(xc, (j) * OCV_SW)
            OCV_STEP(wt, OCV_ROW);
#undef OCV_ROW
          }
        } else {
          __global const real_t* xp[PX];
          int step[PX];
#pragma unroll
          for (int j = 0; j < PX; ++j) {
            const int i = iw + j * OCV_SW;
            const bool in = i >= 0 && i < W;
            xp[j] = in ? xr + i : zero;
            step[j] = in ? HW : 0;
          }
          for (int c = 0; c < ICg; ++c, wt += KHW * OCV) {
#define OCV_EDGE(j) LD(xp[j], 0)
            OCV_STEP(wt, OCV_EDGE);
#undef OCV_EDGE
#pragma unroll
            for (int j = 0; j < PX; ++j) xp[j] += step[j];
          }
        }
      }
    }
  }
  const int oc0 = ob * OCV, n = min(OCV, OCg - oc0);
  float bias[OCV];
#pragma unroll
  for (int o = 0; o < OCV; ++o) bias[o] = has_bias && o < n ? LD(Bias, bo + g * OCg + oc0 + o) : 0.0f;
  const int plane0 = (img * OC + g * OCg + oc0) * OH + oh;
#pragma unroll
  for (int j = 0; j < PX; ++j) {
    const int ow = owb + j;
    if (ow < ow0 || ow >= OW) continue;  // another work-item's column, or past the row
    float t[OCV];
#pragma unroll
    for (int v = 0; v < NV; ++v) VSTORE(acc[j][v], v, t);
    for (int o = 0; o < n; ++o) {
      const int i = (plane0 + o * OH) * OW + ow;
      ST(Y, yo + YI(i), EPI(t[o] + bias[o], i));
    }
  }
}
#endif

// ConvTranspose whose taps tile the output exactly (stride == kernel, no
// padding or dilation; weight [C, OC/groups, KH, KW]): every output pixel
// gets one tap, so per tap (kh, kw) it is a GEMM over the input pixels with
// a scattered store. get_global_id(0): PB input pixels; (1): OCB output
// channels of the group; (2): ((image * groups) + group) * KH*KW + tap.
__kernel void conv_transpose_tiled_cpu(__global const real_t* X, int xo, __global const real_t* Wt, int wo,
                                       __global const real_t* Bias, int bo, __global real_t* Y, int yo, int has_bias,
                                       int C, int H, int W, int OC, int KH, int KW, int groups EPI_PARAMS) {
  const int HW = H * W, KHW = KH * KW, OCg = OC / groups, ICg = C / groups;
  const int p0 = get_global_id(0) * PB, oc0 = get_global_id(1) * OCB, z = get_global_id(2);
  if (p0 >= HW || oc0 >= OCg) return;
  const int t = z % KHW, zg = z / KHW, img = zg / groups, g = zg - img * groups;
  const int kh = t / KW, kw = t - kh * KW;
  __global const real_t* x = X + xo + (img * C + g * ICg) * HW;
  __global const real_t* w = Wt + wo + g * ICg * OCg * KHW;
  int wcol[OCB];
#pragma unroll
  for (int o = 0; o < OCB; ++o) wcol[o] = min(oc0 + o, OCg - 1) * KHW + t;
  VF acc[OCB];
#pragma unroll
  for (int o = 0; o < OCB; ++o) acc[o] = (VF)(0.0f);
  const int n = HW - p0;
  if (n >= PB) {
    for (int c = 0; c < ICg; ++c) {
      const VF xv = LDV(PB, x + c * HW + p0);
      __global const real_t* wc = w + c * OCg * KHW;
#pragma unroll
      for (int o = 0; o < OCB; ++o) acc[o] = fma((VF)(LD(wc, wcol[o])), xv, acc[o]);
    }
  } else {
    int pix[PB];
    VSTORE(min(p0 + LANES, HW - 1), 0, pix);
    for (int c = 0; c < ICg; ++c) {
      float tx[PB];
#pragma unroll
      for (int j = 0; j < PB; ++j) tx[j] = LD(x, c * HW + pix[j]);
      const VF xv = VLOAD(0, tx);
      __global const real_t* wc = w + c * OCg * KHW;
#pragma unroll
      for (int o = 0; o < OCB; ++o) acc[o] = fma((VF)(LD(wc, wcol[o])), xv, acc[o]);
    }
  }
  const int OH = H * KH, OW = W * KW;
#pragma unroll
  for (int o = 0; o < OCB; ++o) {
    const int oc = oc0 + o;
    if (oc >= OCg) break;
    float r[PB];
    VSTORE(acc[o] + (VF)(has_bias ? LD(Bias, bo + g * OCg + oc) : 0.0f), 0, r);
    const int plane = (img * OC + g * OCg + oc) * OH;
    for (int j = 0; j < PB && j < n; ++j) {
      const int p = p0 + j, ih = p / W, iw = p - ih * W;
      const int i = (plane + ih * KH + kh) * OW + iw * KW + kw;
      ST(Y, yo + i, EPI(r[j], i));
    }
  }
}

// Y[r, c] = A[r, c] op S[r] (or S[r] op A[r, c] when scalar_first), rows x
// cols contiguous: a tensor and a per-channel factor ([N,C,H,W] x [N,C,1,1],
// squeeze-excitation). op: 0 Add, 1 Sub, 2 Mul, 3 Div. A work-item: PB
// columns of one row.
__kernel void channel_binary_cpu(__global const real_t* A, int ao, __global const real_t* S, int so,
                                 __global real_t* Y, int yo, int rows, int cols, int op, int scalar_first) {
  const int c0 = get_global_id(0) * PB, r = get_global_id(1);
  if (c0 >= cols || r >= rows) return;
  const int i = r * cols + c0, n = cols - c0;
  VF a;
  if (n >= PB) {
    a = LDV(PB, A + ao + i);
  } else {
    float t[PB];
    for (int j = 0; j < PB; ++j) t[j] = j < n ? LD(A, ao + i + j) : 0.0f;
    a = VLOAD(0, t);
  }
  const VF s = (VF)(LD(S, so + r));
  const VF u = scalar_first ? s : a, v = scalar_first ? a : s;
  const VF y = op == 0 ? u + v : op == 1 ? u - v : op == 2 ? u * v : u / v;
  if (n >= PB) {
    STV(PB, Y + yo + i, y);
  } else {
    float t[PB];
    VSTORE(y, 0, t);
    for (int j = 0; j < n; ++j) ST(Y, yo + i + j, t[j]);
  }
}

// GlobalAveragePool: the mean of each of `rows` contiguous rows of R
// elements, a work-item per row summing PB-wide vectors.
__kernel void global_avg_pool_cpu(__global const real_t* X, int xo, __global real_t* Y, int yo, int rows, int R) {
  const int r = get_global_id(0);
  if (r >= rows) return;
  __global const real_t* x = X + xo + r * R;
  VF s = (VF)(0.0f);
  int i = 0;
  for (; i + PB <= R; i += PB) s += LDV(PB, x + i);
  float t = 0.0f;
  for (; i < R; ++i) t += LD(x, i);
  float l[PB];
  VSTORE(s, 0, l);
  for (int j = 0; j < PB; ++j) t += l[j];
  ST(Y, yo + r, t / (float)R);
}
