// Convolutions over 1-D, 2-D and 3-D inputs, lowered to matrix products:
//   Conv:          Y_g[M/g x P]   = W_g[M/g x (C/g)K] * im2col(X_g)[(C/g)K x P]
//   ConvTranspose: col[(M/g)K x Pin] = W_g^T * X_g, scattered back by col2im.
// Both use the blocked gemm_accumulate, so a 224x224x64 layer takes well
// under a second.
#include <algorithm>

#include "reference/conv_shapes.h"
#include "reference/ops.h"

namespace texplan::reference {
namespace {

int64_t div_floor(int64_t a, int64_t b) {  // b > 0
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

// Range [lo, hi) of positions o in [0, n_out) with 0 <= o * s + off < n_in.
void valid_range(int64_t n_out, int64_t s, int64_t off, int64_t n_in, int64_t& lo, int64_t& hi) {
  lo = std::max<int64_t>(0, -div_floor(off, s));
  hi = std::min<int64_t>(n_out, div_floor(n_in - 1 - off, s) + 1);
  if (hi < lo) hi = lo;
}

// col[(c, kd, kh, kw), (od, oh, ow)] = x[c, od*s - p + kd*d, ...], 0 in padding.
template <class T> void im2col(const T* x, int64_t channels, const Window& w, T* col) {
  const int64_t P = w.out_size(), in_plane = w.in_size();
  T* row = col;
  for (int64_t ch = 0; ch < channels; ++ch)
    for (int64_t kd = 0; kd < w.kernel[0]; ++kd)
      for (int64_t kh = 0; kh < w.kernel[1]; ++kh)
        for (int64_t kw = 0; kw < w.kernel[2]; ++kw, row += P) {
          const int64_t off_w = kw * w.dilation[2] - w.pad_begin[2];
          int64_t lo, hi;
          valid_range(w.out[2], w.stride[2], off_w, w.in[2], lo, hi);
          for (int64_t od = 0; od < w.out[0]; ++od) {
            const int64_t id = od * w.stride[0] - w.pad_begin[0] + kd * w.dilation[0];
            for (int64_t oh = 0; oh < w.out[1]; ++oh) {
              const int64_t ih = oh * w.stride[1] - w.pad_begin[1] + kh * w.dilation[1];
              T* dst = row + (od * w.out[1] + oh) * w.out[2];
              if (id < 0 || id >= w.in[0] || ih < 0 || ih >= w.in[1]) {
                std::fill(dst, dst + w.out[2], T(0));
                continue;
              }
              const T* src = x + ch * in_plane + (id * w.in[1] + ih) * w.in[2];
              std::fill(dst, dst + lo, T(0));
              if (w.stride[2] == 1)
                std::copy(src + lo + off_w, src + hi + off_w, dst + lo);
              else
                for (int64_t ow = lo; ow < hi; ++ow) dst[ow] = src[ow * w.stride[2] + off_w];
              std::fill(dst + hi, dst + w.out[2], T(0));
            }
          }
        }
}

// Inverse of im2col: y[m, o(i, k)] += col[(m, k), i] for every input position
// i and kernel offset k (o = i*s - p + k*d) that lands inside y.
template <class T> void col2im(const T* col, int64_t channels, const Window& w, T* y) {
  const int64_t Pin = w.in_size(), out_plane = w.out_size();
  const T* row = col;
  for (int64_t ch = 0; ch < channels; ++ch)
    for (int64_t kd = 0; kd < w.kernel[0]; ++kd)
      for (int64_t kh = 0; kh < w.kernel[1]; ++kh)
        for (int64_t kw = 0; kw < w.kernel[2]; ++kw, row += Pin) {
          const int64_t off_w = kw * w.dilation[2] - w.pad_begin[2];
          int64_t lo, hi;
          valid_range(w.in[2], w.stride[2], off_w, w.out[2], lo, hi);
          for (int64_t id = 0; id < w.in[0]; ++id) {
            const int64_t od = id * w.stride[0] - w.pad_begin[0] + kd * w.dilation[0];
            if (od < 0 || od >= w.out[0]) continue;
            for (int64_t ih = 0; ih < w.in[1]; ++ih) {
              const int64_t oh = ih * w.stride[1] - w.pad_begin[1] + kh * w.dilation[1];
              if (oh < 0 || oh >= w.out[1]) continue;
              const T* src = row + (id * w.in[1] + ih) * w.in[2];
              T* dst = y + ch * out_plane + (od * w.out[1] + oh) * w.out[2];
              for (int64_t iw = lo; iw < hi; ++iw) dst[iw * w.stride[2] + off_w] += src[iw];
            }
          }
        }
}

}  // namespace

// Common checks of X [N, C, ...] and W; `w_in_channels_dim` is 1 for Conv
// (W [M, C/g, k...]) and 0 for ConvTranspose (W [C, M/g, k...]).
ConvShapes conv_shapes(const OpContext& c, const HostTensor& x, const HostTensor& w, bool transposed) {
  require_same_dtype(c, x, w);
  const size_t r = x.shape.size();
  if (r < 3 || r > 5) c.fail("X must be N x C x (1 to 3 spatial dims), got " + to_string(x.shape));
  if (w.shape.size() != r) c.fail("W of shape " + to_string(w.shape) + " does not match X " + to_string(x.shape));
  ConvShapes s;
  s.N = x.shape[0];
  s.C = x.shape[1];
  s.group = c.node.get_int("group", 1);
  if (s.group < 1 || s.C % s.group != 0)
    c.fail("group " + std::to_string(s.group) + " does not divide the " + std::to_string(s.C) + " input channels");
  s.Cg = s.C / s.group;
  if (!transposed) {
    s.M = w.shape[0];
    if (s.M % s.group != 0) c.fail("group does not divide the " + std::to_string(s.M) + " output channels");
    s.Mg = s.M / s.group;
    if (w.shape[1] != s.Cg)
      c.fail("W has " + std::to_string(w.shape[1]) + " input channels per group, X gives " + std::to_string(s.Cg));
  } else {
    if (w.shape[0] != s.C) c.fail("W has " + std::to_string(w.shape[0]) + " input channels, X has " + std::to_string(s.C));
    s.Mg = w.shape[1];
    s.M = s.Mg * s.group;
  }
  if (c.node.has("kernel_shape") && c.node.get_ints("kernel_shape") != Shape(w.shape.begin() + 2, w.shape.end()))
    c.fail("kernel_shape does not match W's shape " + to_string(w.shape));
  return s;
}

namespace {

// Bias B [M] (optional) as a pointer, checked.
template <class T> const T* bias_of(const OpContext& c, const HostTensor& x, int64_t M) {
  if (!c.has_input(2)) return nullptr;
  const HostTensor& b = c.input(2);
  require_same_dtype(c, x, b);
  if (b.count() != M) c.fail("B must have " + std::to_string(M) + " values, got shape " + to_string(b.shape));
  return b.data<T>();
}

Outputs Conv(const OpContext& c) {
  const HostTensor &x = c.input(0), &w = c.input(1);
  const ConvShapes s = conv_shapes(c, x, w, false);
  const Window win = forward_window(c, Shape(x.shape.begin() + 2, x.shape.end()),
                                    Shape(w.shape.begin() + 2, w.shape.end()), false);
  Shape out_shape = {s.N, s.M};
  for (int i = 0; i < win.spatial_rank; ++i) out_shape.push_back(win.out[3 - win.spatial_rank + i]);
  HostTensor y(x.dtype, out_shape);

  dispatch_float(c, x.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* bias = bias_of<T>(c, x, s.M);
    const int64_t P = win.out_size(), K = s.Cg * win.kernel_size();
    // A 1x1 convolution with stride 1 and no padding reads X as it is.
    bool direct = win.kernel_size() == 1;
    for (int i = 0; i < 3; ++i) direct = direct && win.stride[i] == 1 && win.pad_begin[i] == 0 && win.pad_end[i] == 0;
    std::vector<T> col(direct ? 0 : size_t(K * P));
    for (int64_t n = 0; n < s.N; ++n)
      for (int64_t g = 0; g < s.group; ++g) {
        const T* xg = x.data<T>() + (n * s.C + g * s.Cg) * win.in_size();
        if (!direct) im2col(xg, s.Cg, win, col.data());
        T* yg = y.data<T>() + (n * s.M + g * s.Mg) * P;
        if (bias)
          for (int64_t m = 0; m < s.Mg; ++m) std::fill(yg + m * P, yg + (m + 1) * P, bias[g * s.Mg + m]);
        gemm_accumulate<T>(s.Mg, P, K, w.data<T>() + g * s.Mg * K, K, direct ? xg : col.data(), P, yg, P);
      }
  });
  return single(std::move(y));
}

}  // namespace

// Output extent and padding of ConvTranspose (ONNX spec): the full output is
// s*(in-1) + output_padding + (k-1)*d + 1; pads trim it. With output_shape or
// auto_pad SAME_* the trimming is derived: SAME_UPPER puts an odd extra unit
// at the end, SAME_LOWER and NOTSET at the beginning (halves rounded down, as
// the spec's Python does, so a negative total pads the end with zeros).
Window transposed_window(const OpContext& c, const HostTensor& x, const HostTensor& w) {
  const int r = int(x.shape.size()) - 2;
  auto strides = c.node.get_ints("strides", std::vector<int64_t>(r, 1));
  auto dilations = c.node.get_ints("dilations", std::vector<int64_t>(r, 1));
  auto pads = c.node.get_ints("pads", std::vector<int64_t>(2 * r, 0));
  auto out_pad = c.node.get_ints("output_padding", std::vector<int64_t>(r, 0));
  auto out_shape = c.node.get_ints("output_shape");
  const std::string auto_pad = c.choice("auto_pad", {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"});
  if (int(strides.size()) != r || int(dilations.size()) != r || int(pads.size()) != 2 * r ||
      int(out_pad.size()) != r)
    c.fail("strides/dilations/pads/output_padding do not match " + std::to_string(r) + " spatial dims");
  if (!out_shape.empty()) {
    if (int(out_shape.size()) < r) c.fail("output_shape has fewer entries than spatial dims");
    out_shape.erase(out_shape.begin(), out_shape.end() - r);  // accepts N x C x ... as well
  }
  Window win;
  win.spatial_rank = r;
  for (int i = 0; i < r; ++i) {
    const int j = 3 - r + i;
    const int64_t in = x.shape[2 + i], k = w.shape[2 + i], s = strides[i], d = dilations[i];
    if (s < 1 || d < 1) c.fail("strides and dilations must be positive");
    if (out_pad[i] < 0 || out_pad[i] >= std::max(s, d))
      c.fail("output_padding must be smaller than the stride or the dilation");
    const int64_t full = s * (in - 1) + out_pad[i] + (k - 1) * d + 1;
    int64_t pb = 0, pe = 0, out = 0;
    if (!out_shape.empty() || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      out = !out_shape.empty() ? out_shape[i] : in * s;
      const int64_t total = full - out;  // negative when output_shape asks for more than full
      if (auto_pad == "SAME_UPPER") {
        pb = div_floor(total, 2);
        pe = total - pb;
      } else {
        pe = div_floor(total, 2);
        pb = total - pe;
      }
    } else if (auto_pad == "VALID") {
      out = full;
    } else {
      pb = pads[i];
      pe = pads[i + r];
      out = full - pb - pe;
    }
    if (out < 1) c.fail("the output would be empty");
    win.in[j] = in;
    win.out[j] = out;
    win.kernel[j] = k;
    win.stride[j] = s;
    win.dilation[j] = d;
    win.pad_begin[j] = pb;
    win.pad_end[j] = pe;
  }
  return win;
}

namespace {

Outputs ConvTranspose(const OpContext& c) {
  const HostTensor &x = c.input(0), &w = c.input(1);
  const ConvShapes s = conv_shapes(c, x, w, true);
  const Window win = transposed_window(c, x, w);
  Shape out_shape = {s.N, s.M};
  for (int i = 0; i < win.spatial_rank; ++i) out_shape.push_back(win.out[3 - win.spatial_rank + i]);
  HostTensor y(x.dtype, out_shape);

  dispatch_float(c, x.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* bias = bias_of<T>(c, x, s.M);
    const int64_t Pin = win.in_size(), Pout = win.out_size(), MK = s.Mg * win.kernel_size();
    std::vector<T> col(size_t(MK * Pin)), wt(size_t(MK * s.Cg));
    for (int64_t g = 0; g < s.group; ++g) {
      // W_g is [C/g x (M/g)K]; the product needs its transpose.
      const T* wg = w.data<T>() + g * s.Cg * MK;
      for (int64_t ci = 0; ci < s.Cg; ++ci)
        for (int64_t r = 0; r < MK; ++r) wt[r * s.Cg + ci] = wg[ci * MK + r];
      for (int64_t n = 0; n < s.N; ++n) {
        std::fill(col.begin(), col.end(), T(0));
        gemm_accumulate<T>(MK, Pin, s.Cg, wt.data(), s.Cg, x.data<T>() + (n * s.C + g * s.Cg) * Pin, Pin, col.data(),
                           Pin);
        col2im(col.data(), s.Mg, win, y.data<T>() + (n * s.M + g * s.Mg) * Pout);
      }
    }
    if (bias)
      for (int64_t n = 0; n < s.N; ++n)
        for (int64_t m = 0; m < s.M; ++m) {
          T* p = y.data<T>() + (n * s.M + m) * Pout;
          for (int64_t i = 0; i < Pout; ++i) p[i] += bias[m];
        }
  });
  return single(std::move(y));
}

}  // namespace

void register_conv(OpTable& t) {
  t["Conv"] = {Conv, {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"}};
  t["ConvTranspose"] = {ConvTranspose, {"auto_pad", "dilations", "group", "kernel_shape", "output_padding", "output_shape", "pads", "strides"}};
}

}  // namespace texplan::reference
