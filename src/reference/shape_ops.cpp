// Data movement and shape computation. These ops work on any dtype (they move
// bytes) and are what the importer folds for shape-computing subgraphs:
// Shape, Size, Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat, Split,
// Slice, Expand, Tile, Pad, Identity, Dropout, Constant, ConstantOfShape,
// EyeLike, Range, DepthToSpace, SpaceToDepth, Trilu, CumSum. (Gather and the
// other index-driven ops are in indexing.cpp.)
#include <algorithm>
#include <cmath>

#include "reference/ops.h"

namespace texplan::reference {
namespace {

HostTensor int64_vector(const std::vector<int64_t>& v) {
  HostTensor t(DataType::Int64, {int64_t(v.size())});
  std::copy(v.begin(), v.end(), t.data<int64_t>());
  return t;
}

Outputs ShapeOp(const OpContext& c) {
  const HostTensor& x = c.input(0);
  const int64_t r = int64_t(x.shape.size());
  auto clamp = [&](int64_t v) { return std::clamp(v < 0 ? v + r : v, int64_t(0), r); };
  const int64_t start = clamp(c.node.get_int("start", 0)), end = clamp(c.node.get_int("end", r));
  return single(int64_vector(start < end ? std::vector<int64_t>(x.shape.begin() + start, x.shape.begin() + end)
                                         : std::vector<int64_t>{}));
}

Outputs Size(const OpContext& c) {
  HostTensor y(DataType::Int64, {});
  y.data<int64_t>()[0] = c.input(0).count();
  return single(std::move(y));
}

Outputs Identity(const OpContext& c) {
  return single(c.input(0));
}

Outputs Reshape(const OpContext& c) {
  const HostTensor& x = c.input(0);
  const auto dims = c.ints_input_or_attr(1, "shape");
  if (!dims) c.fail("the target shape is missing");
  Shape out;
  if (std::string why = reshape_target(x.shape, *dims, c.node.get_int("allowzero", 0) != 0, out); !why.empty())
    c.fail(why);
  return single(reshaped(c, x, out));
}

Outputs Flatten(const OpContext& c) {
  const HostTensor& x = c.input(0);
  const int64_t r = int64_t(x.shape.size());
  int64_t axis = c.node.get_int("axis", 1);
  if (axis < -r || axis > r) c.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(r));
  if (axis < 0) axis += r;
  return single(reshaped(c, x, {product(x.shape, 0, axis), product(x.shape, axis, r)}));
}

Outputs Squeeze(const OpContext& c) {
  const HostTensor& x = c.input(0);
  const int64_t r = int64_t(x.shape.size());
  const auto axes_in = c.ints_input_or_attr(1, "axes");
  std::vector<bool> drop(r, false);
  if (!axes_in || axes_in->empty()) {
    for (int64_t a = 0; a < r; ++a) drop[a] = x.shape[a] == 1;
  } else {
    for (int64_t a : normalize_axes(c, *axes_in, r)) {
      if (x.shape[a] != 1) c.fail("cannot squeeze axis " + std::to_string(a) + " of size " + std::to_string(x.shape[a]));
      drop[a] = true;
    }
  }
  Shape out;
  for (int64_t a = 0; a < r; ++a)
    if (!drop[a]) out.push_back(x.shape[a]);
  return single(reshaped(c, x, out));
}

Outputs Unsqueeze(const OpContext& c) {
  const HostTensor& x = c.input(0);
  const auto axes_in = c.ints_input_or_attr(1, "axes");
  if (!axes_in) c.fail("axes are required");
  const int64_t r = int64_t(x.shape.size() + axes_in->size());
  std::vector<bool> added(r, false);
  for (int64_t a : normalize_axes(c, *axes_in, r)) added[a] = true;
  Shape out;
  size_t next = 0;
  for (int64_t a = 0; a < r; ++a) out.push_back(added[a] ? 1 : x.shape[next++]);
  return single(reshaped(c, x, out));
}

Outputs Transpose(const OpContext& c) {
  const HostTensor& x = c.input(0);
  return single(transpose(c, x, transpose_perm(c.node, x.shape.size())));
}

Outputs Concat(const OpContext& c) {
  if (c.input_count() == 0) c.fail("needs at least one input");
  if (!c.node.has("axis")) c.fail("attribute axis is required");
  const HostTensor& first = c.input(0);
  const int64_t r = int64_t(first.shape.size());
  const int64_t axis = normalize_axis(c, c.node.get_int("axis", 0), r);
  Shape out = first.shape;
  out[axis] = 0;
  for (size_t i = 0; i < c.input_count(); ++i) {
    const HostTensor& t = c.input(i);
    require_same_dtype(c, first, t);
    bool ok = int64_t(t.shape.size()) == r;
    for (int64_t d = 0; ok && d < r; ++d) ok = d == axis || t.shape[d] == first.shape[d];
    if (!ok) c.fail("input shapes " + to_string(first.shape) + " and " + to_string(t.shape) + " differ off the axis");
    out[axis] = checked_add(c, out[axis], t.shape[axis], "the concatenated axis");
  }
  HostTensor y(first.dtype, out);
  const int64_t outer = product(out, 0, axis), esize = int64_t(element_size(first.dtype));
  const int64_t inner_bytes = product(out, axis + 1, r) * esize, out_row = out[axis] * inner_bytes;
  int64_t at = 0;
  for (size_t i = 0; i < c.input_count(); ++i) {
    const HostTensor& t = c.input(i);
    const int64_t row = t.shape[axis] * inner_bytes;
    for (int64_t o = 0; o < outer && row > 0; ++o)
      std::memcpy(y.bytes.data() + o * out_row + at, t.bytes.data() + o * row, size_t(row));
    at += row;
  }
  return single(std::move(y));
}

Outputs Split(const OpContext& c) {
  const HostTensor& x = c.input(0);
  const int64_t r = int64_t(x.shape.size());
  const int64_t axis = normalize_axis(c, c.node.get_int("axis", 0), r), dim = x.shape[axis];
  const int64_t n_out = int64_t(c.output_count());
  std::vector<int64_t> sizes = c.ints_input_or_attr(1, "split").value_or(std::vector<int64_t>{});
  if (sizes.empty()) {
    // Equal parts; when the axis does not divide, the last part is smaller (opset 18).
    const int64_t n = c.node.get_int("num_outputs", n_out);
    if (n != n_out) c.fail("num_outputs is " + std::to_string(n) + " for " + std::to_string(n_out) + " outputs");
    const int64_t part = (dim + n - 1) / n;
    for (int64_t i = 0; i < n; ++i) sizes.push_back(std::clamp(dim - i * part, int64_t(0), part));
  }
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) c.fail("split sizes must not be negative");
    total = checked_add(c, total, s, "the split sizes");
  }
  if (total != dim) c.fail("split sizes sum to " + std::to_string(total) + ", the axis has " + std::to_string(dim));
  if (int64_t(sizes.size()) != n_out)
    c.fail("gives " + std::to_string(sizes.size()) + " parts for " + std::to_string(n_out) + " outputs");
  const std::vector<int64_t> strides = strides_of(x.shape);
  Outputs out;
  int64_t start = 0;
  for (int64_t s : sizes) {
    Shape shape = x.shape;
    shape[axis] = s;
    out.push_back(strided_copy(c, x, start * strides[axis], shape, strides));
    start += s;
  }
  return out;
}

Outputs Slice(const OpContext& c) {
  const HostTensor& x = c.input(0);
  const int64_t r = int64_t(x.shape.size());
  std::vector<int64_t> starts, ends, axes, steps;
  if (c.input_count() > 1) {  // opset 10+
    starts = c.int_values(1);
    ends = c.int_values(2);
    if (c.has_input(3)) axes = c.int_values(3);
    if (c.has_input(4)) steps = c.int_values(4);
  } else {
    starts = c.node.get_ints("starts");
    ends = c.node.get_ints("ends");
    axes = c.node.get_ints("axes");
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(int64_t(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    c.fail("starts, ends, axes and steps must have the same length");
  axes = normalize_axes(c, axes, r);

  const std::vector<int64_t> own = strides_of(x.shape);
  Shape shape = x.shape;
  std::vector<int64_t> strides = own;
  int64_t offset = 0;
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t a = axes[i], dim = x.shape[a], step = steps[i];
    if (step == 0) c.fail("slice step must not be 0");
    if (dim == 0) {
      shape[a] = 0;
      continue;
    }
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    // Clamp as the ONNX spec says: [0, dim] going forward, [-1, dim-1] backward.
    if (step > 0) {
      s = std::clamp(s, int64_t(0), dim);
      e = std::clamp(e, int64_t(0), dim);
    } else {
      s = std::clamp(s, int64_t(0), dim - 1);
      e = std::clamp(e, int64_t(-1), dim - 1);
    }
    // Elements s, s + step, ... before e; in unsigned arithmetic, so a step
    // of INT64_MIN or INT64_MAX cannot overflow (its count is 0 or 1).
    const int64_t span = step > 0 ? e - s : s - e;  // within [-dim - 1, dim + 1]
    const uint64_t stride = step > 0 ? uint64_t(step) : uint64_t(0) - uint64_t(step);
    const int64_t n = span <= 0 ? 0 : int64_t(1 + (uint64_t(span) - 1) / stride);
    shape[a] = n;
    // With 2 or more elements |step| < dim, so the product fits.
    strides[a] = n > 1 ? own[a] * step : own[a];
    if (shape[a] > 0) offset += s * own[a];
  }
  return single(strided_copy(c, x, offset, shape, strides));
}

Outputs Expand(const OpContext& c) {
  const HostTensor& x = c.input(0);
  const std::vector<int64_t> shape = c.int_values(1);
  return single(broadcast_to(c, x, broadcast_shapes(c, {x.shape, shape})));
}

Outputs Tile(const OpContext& c) {
  // Tiling dim d by n is reading x as [n, x_d] with stride 0 on the repeat.
  const HostTensor& x = c.input(0);
  const std::vector<int64_t> reps = c.int_values(1);
  if (reps.size() != x.shape.size()) c.fail("repeats must have one entry per input dim");
  const std::vector<int64_t> own = strides_of(x.shape);
  Shape view, out;
  std::vector<int64_t> strides;
  for (size_t d = 0; d < reps.size(); ++d) {
    if (reps[d] < 0) c.fail("repeats must not be negative");
    view.insert(view.end(), {reps[d], x.shape[d]});
    strides.insert(strides.end(), {0, own[d]});
    out.push_back(checked_mul(c, reps[d], x.shape[d], "repeats x dim " + std::to_string(d)));
  }
  return single(reshaped(c, strided_copy(c, x, 0, view, strides), out));
}

// A one-element tensor of dtype `t` holding `v`.
HostTensor scalar_of(const OpContext& c, DataType t, double v) {
  HostTensor s(t, {});
  if (t == DataType::Bool) s.data<uint8_t>()[0] = v != 0;
  else if (t == DataType::Float16) s.data<uint16_t>()[0] = float_to_half(float(v));
  else dispatch_numeric(c, t, [&](auto tag) { s.data<decltype(tag)>()[0] = decltype(tag)(v); });
  return s;
}

Outputs Pad(const OpContext& c) {
  const HostTensor& x = c.input(0);
  const int64_t r = int64_t(x.shape.size());
  const std::string mode = c.choice("mode", {"constant", "reflect", "edge", "wrap"});
  const auto given = c.ints_input_or_attr(1, "pads");
  if (!given) c.fail("pads are required");
  std::vector<int64_t> pads(2 * r, 0);
  if (c.has_input(3)) {  // opset 18: pads for the listed axes only
    const std::vector<int64_t> axes = normalize_axes(c, c.int_values(3), r);
    if (given->size() != 2 * axes.size()) c.fail("pads must have two entries per axis");
    for (size_t i = 0; i < axes.size(); ++i) {
      pads[axes[i]] = (*given)[i];
      pads[axes[i] + r] = (*given)[i + axes.size()];
    }
  } else {
    if (int64_t(given->size()) != 2 * r) c.fail("pads must have " + std::to_string(2 * r) + " entries");
    pads = *given;
  }
  HostTensor value;
  if (c.has_input(2) && c.input(2).count() > 0) {
    value = c.input(2);
    require_same_dtype(c, x, value);
  } else {
    value = scalar_of(c, x.dtype, c.node.get_float("value", 0.0f));
  }

  Shape out(r);
  for (int64_t d = 0; d < r; ++d) {
    const int64_t n = x.shape[d];
    const std::string axis = "pads of axis " + std::to_string(d);
    out[d] = checked_add(c, checked_add(c, n, pads[d], axis), pads[d + r], axis);
    if (out[d] < 0) c.fail("pads remove more than the whole of axis " + std::to_string(d));
    if (mode != "constant" && n == 0 && out[d] > 0) c.fail("cannot pad an empty axis in " + mode + " mode");
    // Every output index o maps to o - pads[d]: both ends must fit int64.
    checked_sub(c, 0, pads[d], axis);
    checked_sub(c, out[d], pads[d], axis);
  }
  // Allocated (or refused) before the index tables, whose length is the
  // output's: an output with a 0 dim needs none.
  HostTensor y(x.dtype, out);
  if (y.count() == 0) return single(std::move(y));
  // For each dim, the source index of every output index (-1: the constant).
  std::vector<std::vector<int64_t>> src(r);
  for (int64_t d = 0; d < r; ++d) {
    const int64_t n = x.shape[d];
    for (int64_t o = 0; o < out[d]; ++o) {
      int64_t i = o - pads[d];
      if (i < 0 || i >= n) {
        if (mode == "constant") {
          i = -1;
        } else if (mode == "edge") {
          i = std::clamp(i, int64_t(0), n - 1);
        } else if (mode == "wrap") {
          i = ((i % n) + n) % n;
        } else {  // reflect, repeating like numpy when pads exceed the axis
          const int64_t period = 2 * (n - 1);
          i = period == 0 ? 0 : ((i % period) + period) % period;
          if (i >= n) i = period - i;
        }
      }
      src[d].push_back(i);
    }
  }
  const std::vector<int64_t> xs = strides_of(x.shape);
  dispatch_bytes(c, x.dtype, [&](auto tag) {
    using U = decltype(tag);
    const U fill = value.data<U>()[0];
    const U* px = x.data<U>();
    U* py = y.data<U>();
    if (r == 0) {
      py[0] = px[0];
      return;
    }
    const int64_t inner = out[r - 1], rows = y.count() / inner;
    const std::vector<int64_t>& last = src[r - 1];
    std::vector<int64_t> coord(r, 0);
    for (int64_t row = 0; row < rows; ++row) {
      int64_t base = 0;
      bool inside = true;
      for (int64_t d = 0; d + 1 < r; ++d) {
        const int64_t i = src[d][coord[d]];
        inside = inside && i >= 0;
        base += i * xs[d];
      }
      U* dst = py + row * inner;
      for (int64_t o = 0; o < inner; ++o) dst[o] = inside && last[o] >= 0 ? px[base + last[o]] : fill;
      for (int64_t d = r - 1; d-- > 0;) {
        if (++coord[d] < out[d]) break;
        coord[d] = 0;
      }
    }
  });
  return single(std::move(y));
}

Outputs Dropout(const OpContext& c) {
  // Inference: the identity. Training with a nonzero ratio is random.
  const bool training = c.has_input(2) && c.scalar_value(2) != 0;
  const double ratio = c.has_input(1) ? c.scalar_value(1) : c.node.get_float("ratio", 0.5f);
  if (training && ratio != 0) c.fail("training_mode=true with a nonzero ratio is not supported (random)");
  const HostTensor& x = c.input(0);
  Outputs out;
  out.push_back(x);
  if (c.output_count() > 1) {
    HostTensor mask(DataType::Bool, x.shape);
    std::fill(mask.bytes.begin(), mask.bytes.end(), uint8_t(1));
    out.push_back(std::move(mask));
  }
  return out;
}

Outputs Constant(const OpContext& c) {
  const Node& n = c.node;
  if (n.has("value")) {
    const auto& t = n.attrs.at("value").tensor;
    if (!t) c.fail("attribute value holds no tensor");
    return single(*t);
  }
  if (n.has("value_float")) {
    HostTensor y(DataType::Float32, {});
    y.data<float>()[0] = n.get_float("value_float", 0);
    return single(std::move(y));
  }
  if (n.has("value_floats")) {
    const auto v = n.get_floats("value_floats");
    HostTensor y(DataType::Float32, {int64_t(v.size())});
    std::copy(v.begin(), v.end(), y.data<float>());
    return single(std::move(y));
  }
  if (n.has("value_int")) {
    HostTensor y(DataType::Int64, {});
    y.data<int64_t>()[0] = n.get_int("value_int", 0);
    return single(std::move(y));
  }
  if (n.has("value_ints")) return single(int64_vector(n.get_ints("value_ints")));
  for (const char* a : {"sparse_value", "value_string", "value_strings"})
    if (n.has(a)) c.fail(std::string("attribute ") + a + " is not supported");
  c.fail("has no value attribute");
}

Outputs ConstantOfShape(const OpContext& c) {
  const std::vector<int64_t> shape = c.int_values(0);
  for (int64_t d : shape)
    if (d < 0) c.fail("shape entries must not be negative");
  HostTensor value(DataType::Float32, {1});
  if (c.node.has("value")) {
    const auto& t = c.node.attrs.at("value").tensor;
    if (!t || t->count() != 1) c.fail("attribute value must be a one-element tensor");
    value = *t;
  }
  HostTensor y(value.dtype, shape);
  const size_t es = element_size(value.dtype);
  for (int64_t i = 0; i < y.count(); ++i) std::memcpy(y.bytes.data() + i * es, value.bytes.data(), es);
  return single(std::move(y));
}

Outputs EyeLike(const OpContext& c) {
  const HostTensor& x = c.input(0);
  if (x.shape.size() != 2) c.fail("input must be 2-D, got " + to_string(x.shape));
  const DataType t = c.node.has("dtype") ? dtype_from_onnx(c, c.node.get_int("dtype", 1)) : x.dtype;
  const int64_t rows = x.shape[0], cols = x.shape[1];
  // Beyond the matrix a diagonal is empty; clamped, i + k cannot overflow.
  const int64_t k = std::clamp(c.node.get_int("k", 0), -rows, cols);
  HostTensor y(t, x.shape);
  const HostTensor one = scalar_of(c, t, 1.0);
  const size_t es = element_size(t);
  for (int64_t i = 0; i < rows; ++i)
    if (i + k >= 0 && i + k < cols) std::memcpy(y.bytes.data() + (i * cols + i + k) * es, one.bytes.data(), es);
  return single(std::move(y));
}

Outputs Range(const OpContext& c) {
  const HostTensor &start = c.input(0), &limit = c.input(1), &delta = c.input(2);
  require_same_dtype(c, start, limit);
  require_same_dtype(c, start, delta);
  if (start.count() != 1 || limit.count() != 1 || delta.count() != 1) c.fail("start, limit and delta must be scalars");
  HostTensor y;
  dispatch_numeric(c, start.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T s = start.data<T>()[0], l = limit.data<T>()[0], d = delta.data<T>()[0];
    if (d == 0) c.fail("delta must not be 0");
    int64_t n;
    if constexpr (std::is_floating_point_v<T>) {
      // NaN or infinite bounds have no element count; huge ones are clamped
      // here and refused by the allocation limits (a cast would be UB).
      const double steps = std::ceil((double(l) - double(s)) / double(d));
      if (std::isnan(steps)) c.fail("start, limit and delta give no element count (NaN)");
      n = steps <= 0 ? 0 : steps >= 9.0e18 ? int64_t(9.0e18) : int64_t(steps);
    } else {
      // In 128 bits: limit - start of int64 values can need 64.
      const __int128 diff = __int128(l) - __int128(s), step = __int128(d);
      const __int128 count = diff / step + ((diff % step != 0 && (diff > 0) == (step > 0)) ? 1 : 0);
      if (count > __int128(std::numeric_limits<int64_t>::max() / 16))
        c.fail("from " + std::to_string(int64_t(s)) + " to " + std::to_string(int64_t(l)) + " by " +
               std::to_string(int64_t(d)) + " has more elements than a tensor can hold");
      n = int64_t(count);
    }
    n = std::max<int64_t>(n, 0);
    y = HostTensor(start.dtype, {n});
    if constexpr (std::is_integral_v<T>) {
      // start + i * delta lies between start and limit, so it fits T; the
      // product alone may not, and wraps (mod 2^64) to the same sum.
      for (int64_t i = 0; i < n; ++i)
        y.data<T>()[i] = T(int64_t(uint64_t(int64_t(s)) + uint64_t(i) * uint64_t(int64_t(d))));
    } else {
      for (int64_t i = 0; i < n; ++i) y.data<T>()[i] = T(s + T(i) * d);
    }
  });
  return single(std::move(y));
}

Outputs DepthToSpace(const OpContext& c) {
  const HostTensor& x = c.input(0);
  const int64_t b = c.node.get_int("blocksize", 0);
  const std::string mode = c.choice("mode", {"DCR", "CRD"});
  if (x.shape.size() != 4) c.fail("X must be 4-D, got " + to_string(x.shape));
  const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  if (b < 1) c.fail("blocksize must be positive");
  const int64_t bb = checked_mul(c, b, b, "blocksize^2");
  if (C % bb != 0) c.fail("blocksize^2 must divide the channels");
  const int64_t Co = C / bb;
  HostTensor t = mode == "DCR" ? transpose(c, reshaped(c, x, {N, b, b, Co, H, W}), {0, 3, 4, 1, 5, 2})
                               : transpose(c, reshaped(c, x, {N, Co, b, b, H, W}), {0, 1, 4, 2, 5, 3});
  return single(reshaped(c, t, {N, Co, checked_mul(c, H, b, "height x blocksize"), checked_mul(c, W, b, "width x blocksize")}));
}

Outputs SpaceToDepth(const OpContext& c) {
  const HostTensor& x = c.input(0);
  const int64_t b = c.node.get_int("blocksize", 0);
  if (x.shape.size() != 4) c.fail("X must be 4-D, got " + to_string(x.shape));
  const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  if (b < 1 || H % b != 0 || W % b != 0) c.fail("blocksize must divide the height and width");
  HostTensor t = transpose(c, reshaped(c, x, {N, C, H / b, b, W / b, b}), {0, 3, 5, 1, 2, 4});
  return single(reshaped(c, t, {N, checked_mul(c, C, checked_mul(c, b, b, "blocksize^2"), "channels x blocksize^2"), H / b, W / b}));
}

Outputs Trilu(const OpContext& c) {
  const HostTensor& x = c.input(0);
  if (x.shape.size() < 2) c.fail("input must have at least 2 dims");
  const bool upper = c.node.get_int("upper", 1) != 0;
  const int64_t k = c.has_input(1) ? c.int_values(1).at(0) : 0;
  if (x.count() == 0) return single(x);  // its dims' products may overflow
  const int64_t rows = x.shape[x.shape.size() - 2], cols = x.shape.back(), mats = x.count() / std::max<int64_t>(1, rows * cols);
  HostTensor y = x;
  const size_t es = element_size(x.dtype);
  for (int64_t m = 0; m < mats; ++m)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        const bool keep = upper ? j - i >= k : j - i <= k;  // |j - i| < both dims: no overflow
        if (!keep) std::memset(y.bytes.data() + ((m * rows + i) * cols + j) * es, 0, es);
      }
  return single(std::move(y));
}

Outputs CumSum(const OpContext& c) {
  const HostTensor& x = c.input(0);
  const int64_t r = int64_t(x.shape.size());
  const std::vector<int64_t> axis_v = c.int_values(1);
  if (axis_v.size() != 1) c.fail("axis must be a scalar");
  const int64_t axis = normalize_axis(c, axis_v[0], r);
  const bool exclusive = c.node.get_int("exclusive", 0) != 0, reverse = c.node.get_int("reverse", 0) != 0;
  const int64_t outer = product(x.shape, 0, axis), len = x.shape[axis], inner = product(x.shape, axis + 1, r);
  HostTensor y(x.dtype, x.shape);
  dispatch_numeric(c, x.dtype, [&](auto tag) {
    using T = decltype(tag);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        T acc = 0;
        for (int64_t s = 0; s < len; ++s) {
          const int64_t k = reverse ? len - 1 - s : s, at = (o * len + k) * inner + i;
          const T v = x.data<T>()[at];
          if (!exclusive) acc = wrap_add(acc, v);
          y.data<T>()[at] = acc;
          if (exclusive) acc = wrap_add(acc, v);
        }
      }
  });
  return single(std::move(y));
}

}  // namespace

void register_shape_ops(OpTable& t) {
  t["Shape"] = {ShapeOp, {"start", "end"}};
  t["Size"] = {Size, {}};
  t["Identity"] = {Identity, {}};
  t["Reshape"] = {Reshape, {"allowzero", "shape", "consumed_inputs"}};
  t["Flatten"] = {Flatten, {"axis"}};
  t["Squeeze"] = {Squeeze, {"axes"}};
  t["Unsqueeze"] = {Unsqueeze, {"axes"}};
  t["Transpose"] = {Transpose, {"perm"}};
  t["Concat"] = {Concat, {"axis"}};
  t["Split"] = {Split, {"axis", "split", "num_outputs"}};
  t["Slice"] = {Slice, {"starts", "ends", "axes"}};
  t["Expand"] = {Expand, {}};
  t["Tile"] = {Tile, {}};
  t["Pad"] = {Pad, {"mode", "pads", "value"}};
  t["Dropout"] = {Dropout, {"ratio", "seed", "is_test", "consumed_inputs"}};
  t["Constant"] = {Constant, {"value", "value_float", "value_floats", "value_int", "value_ints", "sparse_value", "value_string", "value_strings"}};
  t["ConstantOfShape"] = {ConstantOfShape, {"value"}};
  t["EyeLike"] = {EyeLike, {"dtype", "k"}};
  t["Range"] = {Range, {}};
  t["DepthToSpace"] = {DepthToSpace, {"blocksize", "mode"}};
  t["SpaceToDepth"] = {SpaceToDepth, {"blocksize"}};
  t["Trilu"] = {Trilu, {"upper"}};
  t["CumSum"] = {CumSum, {"exclusive", "reverse"}};
}

}  // namespace texplan::reference
