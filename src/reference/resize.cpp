// Resize (opsets 10 to 18) and the older Upsample; GridSample at the end. Every supported mode is
// separable, so the tensor is resampled one axis at a time: each output
// index along an axis reads a few input indices (1 for nearest, 2 for linear,
// 4 for cubic) with weights, indices clamped to the edge as the ONNX
// reference does.
#include <algorithm>
#include <cmath>

#include "reference/ops.h"

namespace texplan::reference {
namespace {

struct ResizeSpec {
  std::string mode = "nearest";  // nearest, linear, cubic
  std::string transform = "half_pixel";
  std::string nearest_mode = "round_prefer_floor";
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0;
};

// Source coordinate of output index x along an axis (ONNX Resize spec).
double source_coordinate(const ResizeSpec& s, int64_t x, int64_t in_len, int64_t out_len, double scale,
                         double roi_start, double roi_end) {
  // The ONNX reference sizes the resized axis as scale * in (not rounded);
  // with `sizes` given, scale = out / in and that is exactly out_len.
  const double resized = scale * double(in_len);
  const std::string& t = s.transform;
  if (t == "asymmetric") return double(x) / scale;
  if (t == "align_corners") return resized <= 1 ? 0.0 : double(x) * double(in_len - 1) / (resized - 1);
  if (t == "pytorch_half_pixel") return out_len > 1 ? (double(x) + 0.5) / scale - 0.5 : 0.0;
  if (t == "tf_half_pixel_for_nn") return (double(x) + 0.5) / scale;
  if (t == "tf_crop_and_resize") {
    const double span = (roi_end - roi_start) * double(in_len - 1);
    return resized <= 1 ? roi_start * double(in_len - 1) + span / 2
                        : roi_start * double(in_len - 1) + double(x) * span / (resized - 1);
  }
  return (double(x) + 0.5) / scale - 0.5;  // half_pixel
}

std::vector<double> cubic_coefficients(double r, double A) {
  auto near = [&](double d) { return ((A + 2) * d - (A + 3)) * d * d + 1; };        // |d| <= 1
  auto far = [&](double d) { return ((A * d - 5 * A) * d + 8 * A) * d - 4 * A; };  // 1 < |d| < 2
  return {far(r + 1), near(r), near(1 - r), far(2 - r)};
}

// Input taps (indices into [0, in_len)) and weights of one output index;
// empty when the output takes the extrapolation value.
void taps_of(const ResizeSpec& s, double x, int64_t in_len, std::vector<int64_t>& idx, std::vector<double>& w) {
  idx.clear();
  w.clear();
  if (s.transform == "tf_crop_and_resize" && (x < 0 || x > double(in_len - 1))) return;
  const double fl = std::floor(x);
  const bool integral = fl == x;
  // base and r in (0, 1] with x = base + r, as in the ONNX reference.
  const int64_t base = integral ? int64_t(fl) - 1 : int64_t(fl);
  const double r = integral ? 1.0 : x - fl;
  auto clamp = [&](int64_t i) { return std::clamp<int64_t>(i, 0, in_len - 1); };
  if (s.mode == "nearest") {
    bool lower;
    if (integral) lower = false;
    else if (s.nearest_mode == "round_prefer_floor") lower = r <= 0.5;
    else if (s.nearest_mode == "round_prefer_ceil") lower = r < 0.5;
    else lower = s.nearest_mode == "floor";
    idx.push_back(clamp(lower ? base : base + 1));
    w.push_back(1.0);
  } else if (s.mode == "linear") {
    idx = {clamp(base), clamp(base + 1)};
    w = {1 - r, r};
  } else {
    std::vector<double> coeff = cubic_coefficients(r, s.cubic_a);
    double total = 0;
    for (int k = 0; k < 4; ++k) {
      const int64_t i = base - 1 + k;
      if (s.exclude_outside && (i < 0 || i >= in_len)) coeff[k] = 0;
      total += coeff[k];
      idx.push_back(clamp(i));
    }
    for (double& c : coeff) w.push_back(s.exclude_outside ? c / total : c);
  }
}

HostTensor resize_axis(const OpContext& c, const HostTensor& x, size_t axis, int64_t out_len, double scale,
                       double roi_start, double roi_end, const ResizeSpec& s) {
  const int64_t in_len = x.shape[axis], outer = product(x.shape, 0, axis),
                inner = product(x.shape, axis + 1, x.shape.size());
  Shape shape = x.shape;
  shape[axis] = out_len;
  HostTensor y(x.dtype, shape);
  if (y.count() == 0) return y;
  if (in_len == 0) c.fail("cannot resize an empty axis");
  dispatch_float(c, x.dtype, [&](auto tag) {
    using T = decltype(tag);
    std::vector<int64_t> idx;
    std::vector<double> w;
    for (int64_t j = 0; j < out_len; ++j) {
      taps_of(s, source_coordinate(s, j, in_len, out_len, scale, roi_start, roi_end), in_len, idx, w);
      for (int64_t o = 0; o < outer; ++o) {
        T* dst = y.data<T>() + (o * out_len + j) * inner;
        const T* src = x.data<T>() + o * in_len * inner;
        for (int64_t i = 0; i < inner; ++i) {
          double v = idx.empty() ? s.extrapolation : 0.0;
          for (size_t k = 0; k < idx.size(); ++k) v += w[k] * double(src[idx[k] * inner + i]);
          dst[i] = T(v);
        }
      }
    }
  });
  return y;
}

// Resamples every axis whose size or scale changes (or every axis, for
// tf_crop_and_resize, whose roi may crop).
HostTensor resize(const OpContext& c, const HostTensor& x, const Shape& out, const std::vector<double>& scales,
                  const std::vector<double>& roi, const ResizeSpec& s) {
  HostTensor y = x;
  const size_t r = x.shape.size();
  for (size_t d = 0; d < r; ++d) {
    if (out[d] == x.shape[d] && scales[d] == 1.0 && s.transform != "tf_crop_and_resize") continue;
    const double rs = roi.empty() ? 0.0 : roi[d], re = roi.empty() ? 1.0 : roi[d + r];
    y = resize_axis(c, y, d, out[d], scales[d], rs, re, s);
  }
  return y;
}

std::vector<double> float_values(const OpContext& c, size_t index) {
  const HostTensor& t = c.input(index);
  if (t.dtype != DataType::Float32 && t.dtype != DataType::Float64)
    c.fail("input " + std::to_string(index) + " must be float, got " + to_string(t.dtype));
  return c.doubles(t);
}

Outputs Resize(const OpContext& c) {
  const HostTensor& x = c.input(0);
  const size_t r = x.shape.size();
  ResizeSpec s;
  s.mode = c.choice("mode", {"nearest", "linear", "cubic"});
  s.transform = c.choice("coordinate_transformation_mode", {"half_pixel", "asymmetric", "align_corners",
                                                             "pytorch_half_pixel", "tf_half_pixel_for_nn",
                                                             "tf_crop_and_resize"});
  s.nearest_mode = c.choice("nearest_mode", {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"});
  s.cubic_a = c.node.get_float("cubic_coeff_a", -0.75f);
  s.exclude_outside = c.node.get_int("exclude_outside", 0) != 0;
  s.extrapolation = c.node.get_float("extrapolation_value", 0.0f);
  if (c.node.get_int("antialias", 0) != 0) c.fail("antialias=1 is not supported");
  c.choice("keep_aspect_ratio_policy", {"stretch"});

  // Opset 10: (X, scales). Opset 11+: (X, roi, scales, sizes); opset 18 may
  // name the axes that roi/scales/sizes cover.
  std::vector<double> scales, roi;
  std::vector<int64_t> sizes;
  if (c.input_count() == 2) {
    // Opset 10 had no transformation attributes: it resized like Upsample.
    scales = float_values(c, 1);
    if (!c.node.has("coordinate_transformation_mode")) s.transform = "asymmetric";
    if (!c.node.has("nearest_mode")) s.nearest_mode = "floor";
  } else {
    if (c.has_input(1) && c.input(1).count() > 0) roi = float_values(c, 1);
    if (c.has_input(2) && c.input(2).count() > 0) scales = float_values(c, 2);
    if (c.has_input(3) && c.input(3).count() > 0) sizes = c.int_values(3);
  }
  if (scales.empty() == sizes.empty()) c.fail("exactly one of scales and sizes must be given");
  std::vector<int64_t> axes;
  for (size_t d = 0; d < r; ++d) axes.push_back(int64_t(d));
  if (c.node.has("axes")) axes = normalize_axes(c, c.node.get_ints("axes"), int64_t(r));
  const size_t n = scales.empty() ? sizes.size() : scales.size();
  if (n != axes.size()) c.fail("scales/sizes must have one entry per resized axis");

  std::vector<double> full_scales(r, 1.0), full_roi;
  Shape out = x.shape;
  for (size_t i = 0; i < n; ++i) {
    const int64_t d = axes[i];
    if (!scales.empty()) {
      if (!is_size_factor(scales[i])) c.fail("scale " + std::to_string(scales[i]) + " is not a positive size factor");
      full_scales[d] = scales[i];
      out[d] = int64_t(std::floor(double(x.shape[d]) * scales[i]));
    } else {
      if (sizes[i] < 0) c.fail("sizes must not be negative");
      out[d] = sizes[i];
      full_scales[d] = x.shape[d] > 0 ? double(sizes[i]) / double(x.shape[d]) : 1.0;
    }
  }
  if (s.transform == "tf_crop_and_resize") {
    if (roi.size() != 2 * n) c.fail("tf_crop_and_resize needs roi with " + std::to_string(2 * n) + " values");
    full_roi.assign(2 * r, 0.0);
    for (size_t d = 0; d < r; ++d) full_roi[d + r] = 1.0;
    for (size_t i = 0; i < n; ++i) {
      full_roi[axes[i]] = roi[i];
      full_roi[axes[i] + r] = roi[i + n];
    }
  }
  return single(resize(c, x, out, full_scales, full_roi, s));
}

Outputs Upsample(const OpContext& c) {
  const HostTensor& x = c.input(0);
  ResizeSpec s;
  s.mode = c.choice("mode", {"nearest", "linear", "bilinear"});
  if (s.mode == "bilinear") s.mode = "linear";
  s.transform = "asymmetric";
  s.nearest_mode = "floor";
  std::vector<double> scales;
  if (c.has_input(1)) {
    scales = float_values(c, 1);
  } else {
    for (float f : c.node.get_floats("scales")) scales.push_back(f);
  }
  if (scales.size() != x.shape.size()) c.fail("scales must have one entry per input dim");
  Shape out = x.shape;
  for (size_t d = 0; d < out.size(); ++d) {
    if (!(scales[d] >= 1) || !is_size_factor(scales[d])) c.fail("Upsample scale " + std::to_string(scales[d]) + " is not a size factor from 1 to 1e6");
    out[d] = int64_t(std::floor(double(x.shape[d]) * scales[d]));
  }
  return single(resize(c, x, out, scales, {}, s));
}

// GridSample (opsets 16 and 20) of 4-D X [N, C, H, W] at grid [N, Ho, Wo, 2]
// (x then y, -1 and 1 the edges): PyTorch's grid_sample, whose exporters
// write it. Bilinear or nearest (half to even, as torch rounds); cubic is
// refused by name. Padding: zeros, border (coordinates clamped) or
// reflection (reflected about the edges, then clamped): grid_sample_form.

// The source coordinate of normalized v along an axis of `len`, with the
// border and reflection paddings applied (zeros leaves it as it is).
double grid_source(double v, int64_t len, const GridSampleForm& g) {
  double x = g.align_corners ? (v + 1) / 2 * double(len - 1) : ((v + 1) * double(len) - 1) / 2;
  if (g.padding == 2) {
    const double lo = g.align_corners ? 0 : -0.5, span = g.align_corners ? double(len - 1) : double(len);
    if (span <= 0) return 0;
    const double d = std::fabs(x - lo), flips = std::floor(d / span), extra = d - flips * span;
    x = std::fmod(flips, 2.0) == 0 ? lo + extra : lo + span - extra;
  }
  if (g.padding != 0) x = std::clamp(x, 0.0, double(len - 1));
  return x;
}

Outputs GridSample(const OpContext& c) {
  const HostTensor& x = c.input(0);
  const HostTensor& grid = c.input(1);
  if (x.shape.size() != 4) c.fail("X must be 4-D [N, C, H, W], got " + to_string(x.shape));
  if (grid.shape.size() != 4 || grid.shape[3] != 2 || grid.shape[0] != x.shape[0])
    c.fail("grid must be [N, Ho, Wo, 2] with X's N, got " + to_string(grid.shape) + " for X " + to_string(x.shape));
  if (x.dtype != DataType::Float32 || grid.dtype != DataType::Float32) c.fail("X and grid must be float");
  std::string why;
  const std::optional<GridSampleForm> form = grid_sample_form(c.node, &why);
  if (!form) c.fail(why);
  const GridSampleForm& g = *form;
  const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3], Ho = grid.shape[1], Wo = grid.shape[2];
  HostTensor y(DataType::Float32, {N, C, Ho, Wo});
  const float* X = x.data<float>();
  const float* G = grid.data<float>();
  float* Y = y.data<float>();
  auto at = [&](const float* plane, int64_t iy, int64_t ix) {
    return iy < 0 || iy >= H || ix < 0 || ix >= W ? 0.0 : double(plane[iy * W + ix]);
  };
  for (int64_t n = 0; n < N; ++n)
    for (int64_t p = 0; p < Ho * Wo; ++p) {
      const float* gp = G + (n * Ho * Wo + p) * 2;
      const double sx = grid_source(gp[0], W, g), sy = grid_source(gp[1], H, g);
      for (int64_t ch = 0; ch < C; ++ch) {
        const float* plane = X + (n * C + ch) * H * W;
        double v;
        if (!g.linear) {
          v = at(plane, int64_t(std::nearbyint(sy)), int64_t(std::nearbyint(sx)));
        } else {
          const double fx = std::floor(sx), fy = std::floor(sy), wx = sx - fx, wy = sy - fy;
          const int64_t x0 = int64_t(fx), y0 = int64_t(fy);
          v = (at(plane, y0, x0) * (1 - wx) + at(plane, y0, x0 + 1) * wx) * (1 - wy) +
              (at(plane, y0 + 1, x0) * (1 - wx) + at(plane, y0 + 1, x0 + 1) * wx) * wy;
        }
        Y[(n * C + ch) * Ho * Wo + p] = float(v);
      }
    }
  return single(std::move(y));
}

}  // namespace

std::optional<GridSampleForm> grid_sample_form(const Node& node, std::string* why) {
  auto refuse = [&](const std::string& reason) -> std::optional<GridSampleForm> {
    if (why) *why = reason;
    return std::nullopt;
  };
  GridSampleForm g;
  const std::string mode = node.get_string("mode", "bilinear"), pad = node.get_string("padding_mode", "zeros");
  if (mode == "bilinear" || mode == "linear") g.linear = true;
  else if (mode == "nearest") g.linear = false;
  else return refuse("mode '" + mode + "' is not supported (bilinear and nearest are)");
  if (pad == "zeros") g.padding = 0;
  else if (pad == "border") g.padding = 1;
  else if (pad == "reflection") g.padding = 2;
  else return refuse("unsupported padding_mode '" + pad + "' (supported: zeros, border, reflection)");
  g.align_corners = node.get_int("align_corners", 0) != 0;
  return g;
}

void register_resize(OpTable& t) {
  t["Resize"] = {Resize, {"mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a", "exclude_outside", "extrapolation_value", "antialias", "keep_aspect_ratio_policy", "axes"}};
  t["GridSample"] = {GridSample, {"mode", "padding_mode", "align_corners"}};
  t["Upsample"] = {Upsample, {"mode", "scales"}};
}

}  // namespace texplan::reference
