// Pooling over 1-D, 2-D and 3-D windows: MaxPool (with the optional Indices
// output), AveragePool, GlobalAveragePool, GlobalMaxPool.
#include <algorithm>
#include <cmath>
#include <limits>

#include "reference/ops.h"

namespace texplan::reference {
namespace {

Window pool_window(const OpContext& c, const HostTensor& x) {
  if (x.shape.size() < 3 || x.shape.size() > 5)
    c.fail("X must be N x C x (1 to 3 spatial dims), got " + to_string(x.shape));
  if (!c.node.has("kernel_shape")) c.fail("attribute kernel_shape is required");
  return forward_window(c, Shape(x.shape.begin() + 2, x.shape.end()), {}, c.node.get_int("ceil_mode", 0) != 0);
}

Shape pooled_shape(const HostTensor& x, const Window& w) {
  Shape s = {x.shape[0], x.shape[1]};
  for (int i = 0; i < w.spatial_rank; ++i) s.push_back(w.out[3 - w.spatial_rank + i]);
  return s;
}

// Calls f(out_index, window) for every output position of one N x C plane,
// where window lists the in-plane offsets of the input positions the window
// covers (padding excluded), and `padded` counts the positions inside the
// padded extent [-pad_begin, in + pad_end) (the count_include_pad divisor).
template <class F> void for_each_window(const Window& w, F&& f) {
  std::vector<int64_t> taps;
  taps.reserve(size_t(w.kernel_size()));
  int64_t o = 0;
  for (int64_t od = 0; od < w.out[0]; ++od)
    for (int64_t oh = 0; oh < w.out[1]; ++oh)
      for (int64_t ow = 0; ow < w.out[2]; ++ow, ++o) {
        taps.clear();
        int64_t padded = 1;
        const int64_t start[3] = {od * w.stride[0] - w.pad_begin[0], oh * w.stride[1] - w.pad_begin[1],
                                  ow * w.stride[2] - w.pad_begin[2]};
        for (int a = 0; a < 3; ++a) {
          int64_t n = 0;
          for (int64_t k = 0; k < w.kernel[a]; ++k) {
            const int64_t p = start[a] + k * w.dilation[a];
            n += p < w.in[a] + w.pad_end[a];
          }
          padded *= n;
        }
        for (int64_t kd = 0; kd < w.kernel[0]; ++kd) {
          const int64_t id = start[0] + kd * w.dilation[0];
          if (id < 0 || id >= w.in[0]) continue;
          for (int64_t kh = 0; kh < w.kernel[1]; ++kh) {
            const int64_t ih = start[1] + kh * w.dilation[1];
            if (ih < 0 || ih >= w.in[1]) continue;
            for (int64_t kw = 0; kw < w.kernel[2]; ++kw) {
              const int64_t iw = start[2] + kw * w.dilation[2];
              if (iw < 0 || iw >= w.in[2]) continue;
              taps.push_back((id * w.in[1] + ih) * w.in[2] + iw);
            }
          }
        }
        f(o, taps, padded);
      }
}

Outputs MaxPool(const OpContext& c) {
  const HostTensor& x = c.input(0);
  const Window w = pool_window(c, x);
  const int64_t storage_order = c.node.get_int("storage_order", 0);
  if (storage_order != 0 && storage_order != 1) c.fail("storage_order must be 0 or 1");
  const bool want_indices = c.output_wanted(1);
  const Shape shape = pooled_shape(x, w);
  HostTensor y(x.dtype, shape), indices(DataType::Int64, want_indices ? shape : Shape{0});
  const int64_t planes = x.shape[0] * x.shape[1], in_plane = w.in_size(), out_plane = w.out_size();
  dispatch_numeric(c, x.dtype, [&](auto tag) {
    using T = decltype(tag);
    for (int64_t p = 0; p < planes; ++p) {
      const T* src = x.data<T>() + p * in_plane;
      T* dst = y.data<T>() + p * out_plane;
      for_each_window(w, [&](int64_t o, const std::vector<int64_t>& taps, int64_t) {
        T best = std::numeric_limits<T>::lowest();
        int64_t arg = taps.empty() ? 0 : taps[0];
        for (int64_t t : taps)
          if (src[t] > best) {
            best = src[t];
            arg = t;
          }
        dst[o] = best;
        if (want_indices) {
          if (storage_order == 1) {  // column-major position within the plane
            const int64_t iw = arg % w.in[2], ih = (arg / w.in[2]) % w.in[1], id = arg / (w.in[2] * w.in[1]);
            arg = id + ih * w.in[0] + iw * w.in[0] * w.in[1];
          }
          indices.data<int64_t>()[p * out_plane + o] = p * in_plane + arg;
        }
      });
    }
  });
  Outputs out;
  out.push_back(std::move(y));
  if (c.output_count() > 1) out.push_back(std::move(indices));
  return out;
}

Outputs AveragePool(const OpContext& c) {
  const HostTensor& x = c.input(0);
  const Window w = pool_window(c, x);
  const bool include_pad = c.node.get_int("count_include_pad", 0) != 0;
  HostTensor y(x.dtype, pooled_shape(x, w));
  const int64_t planes = x.shape[0] * x.shape[1], in_plane = w.in_size(), out_plane = w.out_size();
  dispatch_float(c, x.dtype, [&](auto tag) {
    using T = decltype(tag);
    for (int64_t p = 0; p < planes; ++p) {
      const T* src = x.data<T>() + p * in_plane;
      T* dst = y.data<T>() + p * out_plane;
      for_each_window(w, [&](int64_t o, const std::vector<int64_t>& taps, int64_t padded) {
        double sum = 0;
        for (int64_t t : taps) sum += src[t];
        const int64_t n = include_pad ? padded : int64_t(taps.size());
        dst[o] = n > 0 ? T(sum / double(n)) : T(0);
      });
    }
  });
  return single(std::move(y));
}

template <bool IsMax> Outputs global_pool(const OpContext& c) {
  const HostTensor& x = c.input(0);
  if (x.shape.size() < 3) c.fail("X must be N x C x spatial dims, got " + to_string(x.shape));
  Shape shape = x.shape;
  std::fill(shape.begin() + 2, shape.end(), 1);
  HostTensor y(x.dtype, shape);
  const int64_t planes = x.shape[0] * x.shape[1], plane = product(x.shape, 2, x.shape.size());
  dispatch_float(c, x.dtype, [&](auto tag) {
    using T = decltype(tag);
    for (int64_t p = 0; p < planes; ++p) {
      const T* src = x.data<T>() + p * plane;
      if constexpr (IsMax) {
        T best = -std::numeric_limits<T>::infinity();
        for (int64_t i = 0; i < plane; ++i) best = std::max(best, src[i]);
        y.data<T>()[p] = best;
      } else {
        double sum = 0;
        for (int64_t i = 0; i < plane; ++i) sum += src[i];
        y.data<T>()[p] = T(sum / double(plane));
      }
    }
  });
  return single(std::move(y));
}

}  // namespace

void register_pool(OpTable& t) {
  t["MaxPool"] = {MaxPool, {"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"}};
  t["AveragePool"] = {AveragePool, {"auto_pad", "ceil_mode", "count_include_pad", "dilations", "kernel_shape", "pads", "strides"}};
  t["GlobalAveragePool"] = {global_pool<false>, {}};
  t["GlobalMaxPool"] = {global_pool<true>, {}};
}

}  // namespace texplan::reference
