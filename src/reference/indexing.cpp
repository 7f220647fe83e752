// Index-driven data movement: Gather, GatherElements, GatherND,
// ScatterElements (and the older Scatter), ScatterND, OneHot, NonZero, TopK.
// Negative indices count from the end; an index out of range is an Error.
#include <algorithm>
#include <numeric>

#include "reference/ops.h"

namespace texplan::reference {
namespace {

int64_t checked_index(const OpContext& c, int64_t k, int64_t len, int64_t axis) {
  if (k < -len || k >= len)
    c.fail("index " + std::to_string(k) + " is out of range for axis " + std::to_string(axis) + " of size " +
           std::to_string(len));
  return k < 0 ? k + len : k;
}

// Calls f(flat_position, coords) for every element of `shape`, row-major.
template <class F> void for_each_coord(const Shape& shape, F&& f) {
  const int64_t n = element_count(shape);
  std::vector<int64_t> coord(shape.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    f(i, coord);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++coord[d] < shape[d]) break;
      coord[d] = 0;
    }
  }
}

Outputs Gather(const OpContext& c) {
  const HostTensor& x = c.input(0);
  const std::vector<int64_t> idx = c.int_values(1);
  const Shape& idx_shape = c.input(1).shape;
  const int64_t r = int64_t(x.shape.size());
  if (r == 0) c.fail("data must not be a scalar");
  const int64_t axis = normalize_axis(c, c.node.get_int("axis", 0), r), len = x.shape[axis];
  Shape out(x.shape.begin(), x.shape.begin() + axis);
  out.insert(out.end(), idx_shape.begin(), idx_shape.end());
  out.insert(out.end(), x.shape.begin() + axis + 1, x.shape.end());
  HostTensor y(x.dtype, out);
  const int64_t outer = product(x.shape, 0, axis);
  const int64_t inner_bytes = product(x.shape, axis + 1, r) * int64_t(element_size(x.dtype));
  uint8_t* dst = y.bytes.data();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k : idx) {
      const int64_t from = (o * len + checked_index(c, k, len, axis)) * inner_bytes;
      if (inner_bytes > 0) std::memcpy(dst, x.bytes.data() + from, size_t(inner_bytes));  // empty: no pointer
      dst += inner_bytes;
    }
  return single(std::move(y));
}

// Element offset in `x` of indices position `coord` whose value along `axis`
// is `k` (GatherElements, ScatterElements).
int64_t element_offset(const OpContext& c, const Shape& x_shape, const std::vector<int64_t>& x_strides,
                       const std::vector<int64_t>& coord, int64_t axis, int64_t k) {
  int64_t off = 0;
  for (size_t d = 0; d < coord.size(); ++d) {
    const int64_t i = int64_t(d) == axis ? checked_index(c, k, x_shape[d], int64_t(d)) : coord[d];
    if (i >= x_shape[d]) c.fail("indices are larger than data along axis " + std::to_string(d));
    off += i * x_strides[d];
  }
  return off;
}

Outputs GatherElements(const OpContext& c) {
  const HostTensor& x = c.input(0);
  const std::vector<int64_t> idx = c.int_values(1);
  const Shape& shape = c.input(1).shape;
  const int64_t r = int64_t(x.shape.size());
  if (int64_t(shape.size()) != r) c.fail("indices must have the rank of data");
  const int64_t axis = normalize_axis(c, c.node.get_int("axis", 0), r);
  const std::vector<int64_t> xs = strides_of(x.shape);
  HostTensor y(x.dtype, shape);
  const size_t es = element_size(x.dtype);
  for_each_coord(shape, [&](int64_t i, const std::vector<int64_t>& coord) {
    std::memcpy(y.bytes.data() + i * es, x.bytes.data() + element_offset(c, x.shape, xs, coord, axis, idx[i]) * es, es);
  });
  return single(std::move(y));
}

Outputs GatherND(const OpContext& c) {
  const HostTensor& x = c.input(0);
  const std::vector<int64_t> idx = c.int_values(1);
  const Shape& is = c.input(1).shape;
  const int64_t r = int64_t(x.shape.size()), q = int64_t(is.size()), b = c.node.get_int("batch_dims", 0);
  if (q < 1 || b < 0 || b >= std::min(q, r)) c.fail("batch_dims must be smaller than both ranks");
  const int64_t k = is.back();
  if (k < 1 || k > r - b) c.fail("the last indices dim must be in [1, data rank - batch_dims]");
  for (int64_t d = 0; d < b; ++d)
    if (is[d] != x.shape[d]) c.fail("the batch dims of data and indices differ");
  Shape out(is.begin(), is.end() - 1);
  out.insert(out.end(), x.shape.begin() + b + k, x.shape.end());
  HostTensor y(x.dtype, out);
  const std::vector<int64_t> xs = strides_of(x.shape);
  const int64_t batches = product(x.shape, 0, b), per_batch = product(is, b, q - 1),
                batch_elems = product(x.shape, b, r);
  const size_t es = element_size(x.dtype), slice = size_t(product(x.shape, b + k, r)) * es;
  uint8_t* dst = y.bytes.data();
  for (int64_t bi = 0; bi < batches; ++bi)
    for (int64_t t = 0; t < per_batch; ++t, dst += slice) {
      const int64_t* tuple = idx.data() + (bi * per_batch + t) * k;
      int64_t off = bi * batch_elems;
      for (int64_t d = 0; d < k; ++d) off += checked_index(c, tuple[d], x.shape[b + d], b + d) * xs[b + d];
      if (slice > 0) std::memcpy(dst, x.bytes.data() + off * es, slice);  // empty: no pointer
    }
  return single(std::move(y));
}

// Runs body(tag, combine) with the element type of `t` and the update rule of
// the `reduction` attribute (none, add, mul, max, min).
template <class Body> void with_reduction(const OpContext& c, DataType t, Body&& body) {
  const std::string red = c.choice("reduction", {"none", "add", "mul", "max", "min"});
  if (red == "none") {
    dispatch_bytes(c, t, [&](auto tag) { body(tag, [](auto, auto v) { return v; }); });
    return;
  }
  dispatch_numeric(c, t, [&](auto tag) {
    using T = decltype(tag);
    body(tag, [&](T a, T v) -> T {
      if (red == "add") return T(a + v);
      if (red == "mul") return T(a * v);
      return red == "max" ? std::max(a, v) : std::min(a, v);
    });
  });
}

Outputs ScatterElements(const OpContext& c) {
  const HostTensor &x = c.input(0), &updates = c.input(2);
  const std::vector<int64_t> idx = c.int_values(1);
  const Shape& shape = c.input(1).shape;
  const int64_t r = int64_t(x.shape.size());
  require_same_dtype(c, x, updates);
  if (int64_t(shape.size()) != r || updates.shape != shape) c.fail("indices and updates must have one shape, of data's rank");
  const int64_t axis = normalize_axis(c, c.node.get_int("axis", 0), r);
  const std::vector<int64_t> xs = strides_of(x.shape);
  HostTensor y = x;
  with_reduction(c, x.dtype, [&](auto tag, auto combine) {
    using T = decltype(tag);
    T* dst = y.data<T>();
    const T* upd = updates.data<T>();
    for_each_coord(shape, [&](int64_t i, const std::vector<int64_t>& coord) {
      T& d = dst[element_offset(c, x.shape, xs, coord, axis, idx[i])];
      d = combine(d, upd[i]);
    });
  });
  return single(std::move(y));
}

Outputs ScatterND(const OpContext& c) {
  const HostTensor &x = c.input(0), &updates = c.input(2);
  const std::vector<int64_t> idx = c.int_values(1);
  const Shape& is = c.input(1).shape;
  require_same_dtype(c, x, updates);
  const int64_t r = int64_t(x.shape.size()), q = int64_t(is.size());
  const int64_t k = q ? is.back() : 0;
  if (q < 1 || k < 1 || k > r) c.fail("the last indices dim must be in [1, data rank]");
  Shape want(is.begin(), is.end() - 1);
  want.insert(want.end(), x.shape.begin() + k, x.shape.end());
  if (updates.shape != want) c.fail("updates must have shape " + to_string(want) + ", got " + to_string(updates.shape));
  const std::vector<int64_t> xs = strides_of(x.shape);
  const int64_t tuples = product(is, 0, q - 1), slice = product(x.shape, k, r);
  HostTensor y = x;
  with_reduction(c, x.dtype, [&](auto tag, auto combine) {
    using T = decltype(tag);
    T* dst = y.data<T>();
    const T* upd = updates.data<T>();
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t off = 0;
      for (int64_t d = 0; d < k; ++d) off += checked_index(c, idx[t * k + d], x.shape[d], d) * xs[d];
      for (int64_t i = 0; i < slice; ++i) dst[off + i] = combine(dst[off + i], upd[t * slice + i]);
    }
  });
  return single(std::move(y));
}

Outputs OneHot(const OpContext& c) {
  const HostTensor &ind = c.input(0), &values = c.input(2);
  const double depth_v = c.scalar_value(1);
  if (depth_v < 1) c.fail("depth must be positive");
  const int64_t depth = int64_t(depth_v), r = int64_t(ind.shape.size());
  if (values.count() != 2) c.fail("values must hold [off, on]");
  const int64_t axis = normalize_axis(c, c.node.get_int("axis", -1), r + 1);
  Shape out = ind.shape;
  out.insert(out.begin() + axis, depth);
  HostTensor y(values.dtype, out);
  const size_t es = element_size(values.dtype);
  for (int64_t i = 0; i < y.count(); ++i) std::memcpy(y.bytes.data() + i * es, values.bytes.data(), es);
  const std::vector<double> id = c.doubles(ind);
  const int64_t inner = product(ind.shape, axis, r);
  for (int64_t i = 0; i < ind.count(); ++i) {
    int64_t k = int64_t(id[i]);
    if (k < 0) k += depth;
    if (k < 0 || k >= depth) continue;  // out of range: all "off"
    const int64_t o = i / inner, j = i % inner;
    std::memcpy(y.bytes.data() + ((o * depth + k) * inner + j) * es, values.bytes.data() + es, es);
  }
  return single(std::move(y));
}

Outputs NonZero(const OpContext& c) {
  const HostTensor& x = c.input(0);
  std::vector<int64_t> flat;
  if (x.dtype == DataType::Bool) {
    for (int64_t i = 0; i < x.count(); ++i)
      if (x.data<uint8_t>()[i]) flat.push_back(i);
  } else {
    const std::vector<double> v = c.doubles(x);
    for (int64_t i = 0; i < x.count(); ++i)
      if (v[i] != 0) flat.push_back(i);
  }
  const int64_t r = int64_t(x.shape.size()), n = int64_t(flat.size());
  HostTensor y(DataType::Int64, {r, n});
  const std::vector<int64_t> st = strides_of(x.shape);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t d = 0; d < r; ++d) y.data<int64_t>()[d * n + j] = (flat[j] / st[d]) % x.shape[d];
  return single(std::move(y));
}

Outputs TopK(const OpContext& c) {
  const HostTensor& x = c.input(0);
  const std::vector<int64_t> kv = c.has_input(1) ? c.int_values(1) : std::vector<int64_t>{c.node.get_int("k", -1)};
  const int64_t r = int64_t(x.shape.size());
  const int64_t axis = normalize_axis(c, c.node.get_int("axis", -1), r), len = x.shape[axis];
  if (kv.size() != 1 || kv[0] < 0 || kv[0] > len) c.fail("K must be one value in [0, " + std::to_string(len) + "]");
  const int64_t k = kv[0];
  const bool largest = c.node.get_int("largest", 1) != 0;
  Shape out = x.shape;
  out[axis] = k;
  HostTensor values(x.dtype, out), indices(DataType::Int64, out);
  const int64_t outer = product(x.shape, 0, axis), inner = product(x.shape, axis + 1, r);
  dispatch_numeric(c, x.dtype, [&](auto tag) {
    using T = decltype(tag);
    std::vector<int64_t> order(static_cast<size_t>(len));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const T* p = x.data<T>() + o * len * inner + i;
        std::iota(order.begin(), order.end(), int64_t(0));
        // Equal values keep the lower index first, as the spec asks.
        std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t a, int64_t b) {
          const T va = p[a * inner], vb = p[b * inner];
          if (va != vb) return largest ? va > vb : va < vb;
          return a < b;
        });
        for (int64_t j = 0; j < k; ++j) {
          const int64_t at = (o * k + j) * inner + i;
          values.data<T>()[at] = p[order[j] * inner];
          indices.data<int64_t>()[at] = order[j];
        }
      }
  });
  Outputs res;
  res.push_back(std::move(values));
  res.push_back(std::move(indices));
  return res;
}

}  // namespace

void register_indexing(OpTable& t) {
  t["Gather"] = {Gather, {"axis"}};
  t["GatherElements"] = {GatherElements, {"axis"}};
  t["GatherND"] = {GatherND, {"batch_dims"}};
  t["ScatterElements"] = {ScatterElements, {"axis", "reduction"}};
  t["Scatter"] = {ScatterElements, {"axis"}};
  t["ScatterND"] = {ScatterND, {"reduction"}};
  t["OneHot"] = {OneHot, {"axis"}};
  t["NonZero"] = {NonZero, {}};
  t["TopK"] = {TopK, {"axis", "largest", "sorted", "k"}};
}

}  // namespace texplan::reference
