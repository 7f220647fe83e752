// Normalizations (BatchNormalization for inference, InstanceNormalization,
// LayerNormalization, MeanVarianceNormalization, LRN) and the softmax family
// along one axis (opset 13 semantics: Softmax, LogSoftmax, Hardmax).
#include <algorithm>
#include <cmath>

#include "reference/ops.h"

namespace texplan::reference {
namespace {

// A per-channel parameter (scale, bias, mean, var) with exactly C values.
std::vector<double> channel_param(const OpContext& c, size_t index, int64_t C, const char* name) {
  const HostTensor& t = c.input(index);
  if (t.count() != C)
    c.fail(std::string(name) + " must have " + std::to_string(C) + " values, got shape " + to_string(t.shape));
  return c.doubles(t);
}

Outputs BatchNormalization(const OpContext& c) {
  if (c.node.get_int("training_mode", 0) != 0) c.fail("training_mode=1 is not supported (inference only)");
  if (c.node.get_int("spatial", 1) != 1) c.fail("spatial=0 is not supported");
  for (size_t i = 1; i < c.output_count(); ++i)
    if (c.output_wanted(i)) c.fail("the training outputs (running mean/var, saved mean/var) are not supported");
  const HostTensor& x = c.input(0);
  if (x.shape.size() < 2) c.fail("X must be N x C x ..., got " + to_string(x.shape));
  const int64_t C = x.shape[1], plane = product(x.shape, 2, x.shape.size()), N = x.shape[0];
  const double eps = c.node.get_float("epsilon", 1e-5f);
  const auto scale = channel_param(c, 1, C, "scale"), bias = channel_param(c, 2, C, "B"),
             mean = channel_param(c, 3, C, "mean"), var = channel_param(c, 4, C, "var");
  HostTensor y(x.dtype, x.shape);
  dispatch_float(c, x.dtype, [&](auto tag) {
    using T = decltype(tag);
    for (int64_t ch = 0; ch < C; ++ch) {
      // y = (x - mean) / sqrt(var + eps) * scale + B = x * a + b
      const double a = scale[ch] / std::sqrt(var[ch] + eps), b = bias[ch] - mean[ch] * a;
      for (int64_t n = 0; n < N; ++n) {
        const T* px = x.data<T>() + (n * C + ch) * plane;
        T* py = y.data<T>() + (n * C + ch) * plane;
        for (int64_t i = 0; i < plane; ++i) py[i] = T(px[i] * a + b);
      }
    }
  });
  Outputs out;
  out.push_back(std::move(y));
  out.resize(c.output_count());  // omitted optional outputs
  return out;
}

// Normalizes each of `rows` contiguous runs of `len` values to zero mean and
// unit variance; returns the means and 1/sqrt(var + eps) per row.
template <class T>
void normalize_rows(const T* x, T* y, int64_t rows, int64_t len, double eps, std::vector<double>& mean,
                    std::vector<double>& inv_std) {
  mean.resize(size_t(rows));
  inv_std.resize(size_t(rows));
  for (int64_t r = 0; r < rows; ++r) {
    const T* px = x + r * len;
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < len; ++i) sum += px[i];
    const double m = len > 0 ? sum / double(len) : 0;
    for (int64_t i = 0; i < len; ++i) sq += (px[i] - m) * (px[i] - m);
    const double inv = 1.0 / std::sqrt((len > 0 ? sq / double(len) : 0) + eps);
    for (int64_t i = 0; i < len; ++i) y[r * len + i] = T((px[i] - m) * inv);
    mean[r] = m;
    inv_std[r] = inv;
  }
}

Outputs InstanceNormalization(const OpContext& c) {
  const HostTensor& x = c.input(0);
  if (x.shape.size() < 3) c.fail("X must be N x C x spatial dims, got " + to_string(x.shape));
  const int64_t N = x.shape[0], C = x.shape[1], plane = product(x.shape, 2, x.shape.size());
  const double eps = c.node.get_float("epsilon", 1e-5f);
  const auto scale = channel_param(c, 1, C, "scale"), bias = channel_param(c, 2, C, "B");
  HostTensor y(x.dtype, x.shape);
  dispatch_float(c, x.dtype, [&](auto tag) {
    using T = decltype(tag);
    std::vector<double> mean, inv;
    normalize_rows(x.data<T>(), y.data<T>(), N * C, plane, eps, mean, inv);
    for (int64_t r = 0; r < N * C; ++r) {
      T* py = y.data<T>() + r * plane;
      const double s = scale[r % C], b = bias[r % C];
      for (int64_t i = 0; i < plane; ++i) py[i] = T(py[i] * s + b);
    }
  });
  return single(std::move(y));
}

Outputs LayerNormalization(const OpContext& c) {
  const HostTensor& x = c.input(0);
  const int64_t rank = int64_t(x.shape.size());
  const int64_t axis = normalize_axis(c, c.node.get_int("axis", -1), rank);
  if (c.node.get_int("stash_type", 1) != 1) c.fail("stash_type other than 1 (float) is not supported");
  const double eps = c.node.get_float("epsilon", 1e-5f);
  const Shape norm_shape(x.shape.begin() + axis, x.shape.end());
  const int64_t rows = product(x.shape, 0, axis), len = element_count(norm_shape);
  const HostTensor scale = broadcast_to(c, c.input(1), norm_shape);
  const bool has_bias = c.has_input(2);
  const HostTensor bias = has_bias ? broadcast_to(c, c.input(2), norm_shape) : HostTensor();
  require_same_dtype(c, x, scale);
  if (has_bias) require_same_dtype(c, x, bias);

  Shape stat_shape = x.shape;
  std::fill(stat_shape.begin() + axis, stat_shape.end(), 1);
  HostTensor y(x.dtype, x.shape), mean_t(DataType::Float32, stat_shape), inv_t(DataType::Float32, stat_shape);
  dispatch_float(c, x.dtype, [&](auto tag) {
    using T = decltype(tag);
    std::vector<double> mean, inv;
    normalize_rows(x.data<T>(), y.data<T>(), rows, len, eps, mean, inv);
    const T *s = scale.data<T>(), *b = has_bias ? bias.data<T>() : nullptr;
    for (int64_t r = 0; r < rows; ++r) {
      T* py = y.data<T>() + r * len;
      for (int64_t i = 0; i < len; ++i) py[i] = T(py[i] * s[i] + (b ? b[i] : T(0)));
      mean_t.data<float>()[r] = float(mean[r]);
      inv_t.data<float>()[r] = float(inv[r]);
    }
  });
  Outputs out;
  out.push_back(std::move(y));
  if (c.output_count() > 1) out.push_back(std::move(mean_t));
  if (c.output_count() > 2) out.push_back(std::move(inv_t));
  return out;
}

// y = (x - mean) / (sqrt(var) + 1e-9) over `axes` (default N, H, W), with
// var = E[x^2] - E[x]^2 as in the ONNX function body.
Outputs MeanVarianceNormalization(const OpContext& c) {
  const HostTensor& x = c.input(0);
  const int64_t r = int64_t(x.shape.size());
  const std::vector<int64_t> axes = normalize_axes(c, c.node.get_ints("axes", {0, 2, 3}), r);
  // Statistics have X's shape with the reduced axes set to 1; read along X's
  // dims their strides are 0 on those axes.
  Shape kept = x.shape;
  for (int64_t a : axes) kept[a] = 1;
  std::vector<int64_t> st = strides_of(kept);
  for (int64_t a : axes) st[a] = 0;
  const double n = double(x.count()) / double(std::max<int64_t>(1, element_count(kept)));
  HostTensor y(x.dtype, x.shape);
  dispatch_float(c, x.dtype, [&](auto tag) {
    using T = decltype(tag);
    std::vector<double> sum(size_t(element_count(kept)), 0.0), sq(sum.size(), 0.0);
    const T* px = x.data<T>();
    broadcast_runs(x.shape, {st}, [&](int64_t o, const int64_t* off, const int64_t* s, int64_t len) {
      for (int64_t i = 0; i < len; ++i) {
        sum[off[0] + i * s[0]] += px[o + i];
        sq[off[0] + i * s[0]] += double(px[o + i]) * px[o + i];
      }
    });
    for (size_t i = 0; i < sum.size(); ++i) {
      sum[i] /= n;
      sq[i] = std::sqrt(std::max(0.0, sq[i] / n - sum[i] * sum[i])) + 1e-9;
    }
    broadcast_runs(x.shape, {st}, [&](int64_t o, const int64_t* off, const int64_t* s, int64_t len) {
      for (int64_t i = 0; i < len; ++i)
        y.data<T>()[o + i] = T((px[o + i] - sum[off[0] + i * s[0]]) / sq[off[0] + i * s[0]]);
    });
  });
  return single(std::move(y));
}

Outputs LRN(const OpContext& c) {
  const HostTensor& x = c.input(0);
  if (x.shape.size() < 3) c.fail("X must be N x C x spatial dims, got " + to_string(x.shape));
  if (!c.node.has("size")) c.fail("attribute size is required");
  const int64_t size = c.node.get_int("size", 1);
  if (size < 1) c.fail("size must be positive");
  const double alpha = c.node.get_float("alpha", 1e-4f), beta = c.node.get_float("beta", 0.75f),
               bias = c.node.get_float("bias", 1.0f);
  const int64_t N = x.shape[0], C = x.shape[1], plane = product(x.shape, 2, x.shape.size());
  const int64_t before = (size - 1) / 2, after = size - 1 - before;
  HostTensor y(x.dtype, x.shape);
  dispatch_float(c, x.dtype, [&](auto tag) {
    using T = decltype(tag);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t ch = 0; ch < C; ++ch)
        for (int64_t i = 0; i < plane; ++i) {
          double sq = 0;
          for (int64_t k = std::max<int64_t>(0, ch - before); k <= std::min(C - 1, ch + after); ++k) {
            const double v = x.data<T>()[(n * C + k) * plane + i];
            sq += v * v;
          }
          const int64_t at = (n * C + ch) * plane + i;
          y.data<T>()[at] = T(x.data<T>()[at] / std::pow(bias + alpha / double(size) * sq, beta));
        }
  });
  return single(std::move(y));
}

enum class SoftKind { Softmax, LogSoftmax, Hardmax };

template <SoftKind K> Outputs SoftmaxFamily(const OpContext& c) {
  const HostTensor& x = c.input(0);
  const int64_t rank = int64_t(x.shape.size());
  const int64_t axis = normalize_axis(c, c.node.get_int("axis", -1), std::max<int64_t>(rank, 1));
  const int64_t outer = product(x.shape, 0, axis), len = rank ? x.shape[axis] : 1,
                inner = product(x.shape, axis + 1, rank);
  HostTensor y(x.dtype, x.shape);
  if (y.bytes.empty()) return single(std::move(y));  // an empty axis: no max to take
  dispatch_float(c, x.dtype, [&](auto tag) {
    using T = decltype(tag);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const T* px = x.data<T>() + o * len * inner + i;
        T* py = y.data<T>() + o * len * inner + i;
        int64_t arg = 0;
        for (int64_t k = 1; k < len; ++k)
          if (px[k * inner] > px[arg * inner]) arg = k;
        if constexpr (K == SoftKind::Hardmax) {
          for (int64_t k = 0; k < len; ++k) py[k * inner] = T(k == arg ? 1 : 0);
        } else {
          const double mx = px[arg * inner];
          double sum = 0;
          for (int64_t k = 0; k < len; ++k) sum += std::exp(double(px[k * inner]) - mx);
          for (int64_t k = 0; k < len; ++k) {
            const double d = double(px[k * inner]) - mx;
            py[k * inner] = K == SoftKind::Softmax ? T(std::exp(d) / sum) : T(d - std::log(sum));
          }
        }
      }
  });
  return single(std::move(y));
}

}  // namespace

void register_normalization(OpTable& t) {
  t["BatchNormalization"] = {BatchNormalization, {"epsilon", "momentum", "training_mode", "spatial", "is_test", "consumed_inputs"}};
  t["InstanceNormalization"] = {InstanceNormalization, {"epsilon"}};
  t["LayerNormalization"] = {LayerNormalization, {"axis", "epsilon", "stash_type"}};
  t["MeanVarianceNormalization"] = {MeanVarianceNormalization, {"axes"}};
  t["LRN"] = {LRN, {"alpha", "beta", "bias", "size"}};
  t["Softmax"] = {SoftmaxFamily<SoftKind::Softmax>, {"axis"}};
  t["LogSoftmax"] = {SoftmaxFamily<SoftKind::LogSoftmax>, {"axis"}};
  t["Hardmax"] = {SoftmaxFamily<SoftKind::Hardmax>, {"axis"}};
}

}  // namespace texplan::reference
