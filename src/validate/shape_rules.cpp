// Shape and data movement (Reshape to Resize, Gather and Scatter), Shape,
// Size, and the operators that make values: Constant, ConstantOfShape,
// EyeLike, Trilu, CumSum, OneHot, TopK, Range, NonZero.
#include "validate/validate_internal.h"

#include <cmath>

namespace texplan::validation {
namespace {

void reshape(NodeCheck& c) {
  const Shape& x = c.shape(0);
  std::optional<std::vector<int64_t>> dims;
  if (c.has(1)) dims = c.ints(1);
  else if (c.node().has("shape")) dims = c.node().get_ints("shape");  // opset < 5
  else c.fail("the target shape is missing");
  const int64_t n = element_count(x);
  if (!dims) {  // planning without the values: the element count still holds
    if (const Tensor* y = c.out(0); y && element_count(y->shape) != n)
      c.fail("output 0 '" + y->name + "' is declared " + to_string(y->shape) + ", " + c.described(0) + " holds " +
             std::to_string(n) + " elements: a reshape must keep the element count");
    return;
  }
  Shape out;
  if (std::string why = reference::reshape_target(x, *dims, c.node().get_int("allowzero", 0) != 0, out); !why.empty())
    c.fail(why);
  c.expect(0, out, c.dtype(0));
}

void flatten(NodeCheck& c) {
  const Shape& x = c.shape(0);
  const int64_t r = int64_t(x.size());
  int64_t a = c.node().get_int("axis", 1);
  if (a < -r || a > r) c.fail("axis " + std::to_string(a) + " is out of range for rank " + std::to_string(r));
  if (a < 0) a += r;
  c.expect(0, {reference::product(x, 0, size_t(a)), reference::product(x, size_t(a), size_t(r))}, c.dtype(0));
}

std::optional<std::vector<int64_t>> ints_input_or_attr(NodeCheck& c, size_t i, const std::string& attr, bool& absent) {
  absent = false;
  if (c.has(i)) return c.ints(i);
  if (c.node().has(attr)) return c.node().get_ints(attr);
  absent = true;
  return std::nullopt;
}

void squeeze(NodeCheck& c) {
  const Shape& x = c.shape(0);
  const int64_t r = int64_t(x.size());
  bool absent;
  auto list = ints_input_or_attr(c, 1, "axes", absent);
  if (!list && !absent) return;
  Shape out;
  if (!list || list->empty()) {
    for (int64_t d : x)
      if (d != 1) out.push_back(d);
  } else {
    std::vector<bool> drop(size_t(r), false);
    for (int64_t a : c.axes(*list, r)) {
      if (x[a] != 1) c.fail("cannot squeeze axis " + std::to_string(a) + " of size " + std::to_string(x[a]) + " of " + c.described(0));
      drop[a] = true;
    }
    for (int64_t d = 0; d < r; ++d)
      if (!drop[d]) out.push_back(x[d]);
  }
  c.expect(0, out, c.dtype(0));
}

void unsqueeze(NodeCheck& c) {
  const Shape& x = c.shape(0);
  bool absent;
  auto list = ints_input_or_attr(c, 1, "axes", absent);
  if (absent) c.fail("axes are required");
  if (!list) return;
  const int64_t r = int64_t(x.size() + list->size());
  std::vector<bool> added(size_t(r), false);
  for (int64_t a : c.axes(*list, r)) added[a] = true;
  Shape out;
  size_t next = 0;
  for (int64_t a = 0; a < r; ++a) out.push_back(added[a] ? 1 : x[next++]);
  c.expect(0, out, c.dtype(0));
}

void transpose(NodeCheck& c) {
  const Shape& x = c.shape(0);
  const int64_t r = int64_t(x.size());
  const std::vector<int64_t> perm = transpose_perm(c.node(), x.size());
  if (int64_t(perm.size()) != r)
    c.fail("perm has " + std::to_string(perm.size()) + " entries for " + c.described(0));
  std::vector<bool> seen(size_t(r), false);
  Shape out;
  for (int64_t p : perm) {
    if (p < 0 || p >= r || seen[p]) c.fail("perm " + to_string(perm) + " is not a permutation of 0.." + std::to_string(r - 1));
    seen[p] = true;
    out.push_back(x[p]);
  }
  c.expect(0, out, c.dtype(0));
}

void concat(NodeCheck& c) {
  if (c.inputs() == 0) c.fail("needs at least one input");
  if (!c.node().has("axis")) c.fail("attribute axis is required");
  const Shape& first = c.shape(0);
  const int64_t r = int64_t(first.size()), a = c.axis(c.node().get_int("axis", 0), r);
  Shape out = first;
  out[a] = 0;
  for (size_t i = 0; i < c.inputs(); ++i) {
    c.require_same_dtype(i, 0);
    const Shape& s = c.shape(i);
    bool ok = int64_t(s.size()) == r;
    for (int64_t d = 0; ok && d < r; ++d) ok = d == a || s[d] == first[d];
    if (!ok) c.fail(c.described(i) + " differs from " + c.described(0) + " off the concatenation axis " + std::to_string(a));
    out[a] += s[a];
  }
  c.expect(0, out, c.dtype(0));
}

void split(NodeCheck& c) {
  const Shape& x = c.shape(0);
  const int64_t r = int64_t(x.size()), a = c.axis(c.node().get_int("axis", 0), r), dim = x[a];
  const int64_t n_out = int64_t(c.node().outputs.size());
  bool absent;
  auto given = ints_input_or_attr(c, 1, "split", absent);
  if (!given && !absent) return;
  std::vector<int64_t> sizes = given.value_or(std::vector<int64_t>{});
  if (sizes.empty()) {
    const int64_t n = c.node().get_int("num_outputs", n_out);
    if (n < 1) c.fail("num_outputs must be positive");
    const int64_t part = (dim + n - 1) / n;
    for (int64_t i = 0; i < n; ++i) sizes.push_back(std::clamp(dim - i * part, int64_t(0), part));
  }
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0 || s > dim) c.fail("split size " + std::to_string(s) + " is outside 0.." + std::to_string(dim));
    total += s;
  }
  if (total != dim)
    c.fail("split sizes " + to_string(sizes) + " sum to " + std::to_string(total) + ", axis " + std::to_string(a) +
           " of " + c.described(0) + " has " + std::to_string(dim));
  if (int64_t(sizes.size()) != n_out)
    c.fail("gives " + std::to_string(sizes.size()) + " parts for " + std::to_string(n_out) + " outputs");
  for (size_t o = 0; o < sizes.size(); ++o) {
    Shape s = x;
    s[a] = sizes[o];
    c.expect(o, s, c.dtype(0));
  }
}

void slice(NodeCheck& c) {
  const Shape& x = c.shape(0);
  const int64_t r = int64_t(x.size());
  std::vector<int64_t> starts, ends, axes_list, steps;
  if (c.inputs() > 1) {  // opset 10+
    auto s = c.ints(1), e = c.ints(2);
    std::optional<std::vector<int64_t>> a, st;
    if (c.has(3)) a = c.ints(3);
    if (c.has(4)) st = c.ints(4);
    if (!s || !e || (c.has(3) && !a) || (c.has(4) && !st)) return;
    starts = *s, ends = *e;
    if (a) axes_list = *a;
    if (st) steps = *st;
  } else {
    starts = c.node().get_ints("starts");
    ends = c.node().get_ints("ends");
    axes_list = c.node().get_ints("axes");
  }
  if (axes_list.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes_list.push_back(int64_t(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes_list.size() != starts.size() || steps.size() != starts.size())
    c.fail("starts, ends, axes and steps must have the same length");
  const std::vector<int64_t> ax = c.axes(axes_list, r);
  Shape out = x;
  for (size_t i = 0; i < ax.size(); ++i) {
    const int64_t dim = x[ax[i]], step = steps[i];
    if (step == 0) c.fail("slice step must not be 0");
    // Clamped first, so the arithmetic below cannot overflow on INT64 extremes.
    auto clamp = [&](int64_t v, int64_t lo, int64_t hi) {
      if (v < 0) v = v < -dim ? lo - 1 : v + dim;
      return std::clamp(v, lo, hi);
    };
    int64_t n;
    if (step > 0) {
      const int64_t s = clamp(starts[i], 0, dim), e = clamp(ends[i], 0, dim);
      n = e > s ? (e - s - 1) / step + 1 : 0;
    } else {
      const int64_t s = clamp(starts[i], 0, dim - 1), e = clamp(ends[i], -1, dim - 1);
      n = s > e ? (s - e - 1) / (step == INT64_MIN ? INT64_MAX : -step) + 1 : 0;
    }
    out[ax[i]] = n;
  }
  c.expect(0, out, c.dtype(0));
}

void expand(NodeCheck& c) {
  auto dims = c.ints(1);
  const Shape& x = c.shape(0);
  if (!dims) {  // the declared output must at least be what x broadcasts to
    if (const Tensor* y = c.out(0)) c.require_broadcasts_to(0, y->shape, "the declared output shape");
    return;
  }
  const Shape target(dims->begin(), dims->end());
  c.expect(0, c.reference([&](const OpContext& ctx) { return reference::broadcast_shapes(ctx, {x, target}); }),
           c.dtype(0));
}

void tile(NodeCheck& c) {
  auto reps = c.ints(1);
  if (!reps) return;
  const Shape& x = c.shape(0);
  if (reps->size() != x.size())
    c.fail(c.label(1) + " has " + count_text(int64_t(reps->size())) + ", expected one per dim of " + c.described(0));
  Shape out;
  for (size_t d = 0; d < x.size(); ++d) {
    if ((*reps)[d] < 0) c.fail("repeats must not be negative");
    out.push_back(element_count({(*reps)[d], x[d]}));
  }
  c.expect(0, out, c.dtype(0));
}

void pad(NodeCheck& c) {
  const Shape& x = c.shape(0);
  const int64_t r = int64_t(x.size());
  const std::string mode = c.node().get_string("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
    c.fail("unsupported mode '" + mode + "' (supported: constant, reflect, edge, wrap)");
  bool absent;
  auto given = ints_input_or_attr(c, 1, "pads", absent);
  if (absent) c.fail("pads are required");
  if (c.has(2) && c.count(2) > 0) {
    c.require_same_dtype(2, 0);
    c.require_scalar(2, "constant_value");
  }
  if (!given) return;
  std::vector<int64_t> pads(size_t(2 * r), 0);
  if (c.has(3)) {  // opset 18: pads for the listed axes only
    auto list = c.ints(3);
    if (!list) return;
    const std::vector<int64_t> ax = c.axes(*list, r);
    if (given->size() != 2 * ax.size())
      c.fail("pads has " + count_text(int64_t(given->size())) + ", expected 2 per listed axis (" +
             std::to_string(2 * ax.size()) + ")");
    for (size_t i = 0; i < ax.size(); ++i) {
      pads[ax[i]] = (*given)[i];
      pads[ax[i] + r] = (*given)[i + ax.size()];
    }
  } else {
    if (int64_t(given->size()) != 2 * r)
      c.fail("pads has " + count_text(int64_t(given->size())) + ", expected " + std::to_string(2 * r) +
             " (begin and end for each dim of " + c.described(0) + ")");
    pads = *given;
  }
  Shape out(static_cast<size_t>(r));
  for (int64_t d = 0; d < r; ++d) {
    const int64_t n = x[d], b = pads[d], e = pads[d + r];
    const int64_t limit = int64_t(1) << 40;  // keeps the sums below exact
    if (std::abs(b) > limit || std::abs(e) > limit) c.fail("pad " + std::to_string(b) + "/" + std::to_string(e) + " of axis " + std::to_string(d) + " is out of range");
    out[d] = n + b + e;
    if (out[d] < 0) c.fail("pads remove more than the whole of axis " + std::to_string(d) + " of " + c.described(0));
    if (mode != "constant" && n == 0 && out[d] > 0) c.fail("cannot pad an empty axis in " + mode + " mode");
    // ONNX defines reflection for pads shorter than the axis (numpy's
    // repeated reflection beyond that is not ONNX's): refused.
    if (mode == "reflect" && (b >= n || e >= n) && (b > 0 || e > 0))
      c.fail("reflect pads " + std::to_string(b) + " and " + std::to_string(e) + " of axis " + std::to_string(d) +
             " must be smaller than its size " + std::to_string(n) + " (" + c.described(0) + ")");
  }
  c.expect(0, out, c.dtype(0));
}

void check_indices_in_range(NodeCheck& c, size_t i, int64_t axis_len, const std::string& what) {
  const Tensor& t = c.in(i);
  if (!t.is_constant || !t.has_data) return;  // data: the kernels bound every index
  for (int64_t v : t.value.as_int64())
    if (v < -axis_len || v >= axis_len)
      c.fail(c.label(i) + " holds index " + std::to_string(v) + ", out of range for " + what + " of size " +
             std::to_string(axis_len) + " (expected " + std::to_string(-axis_len) + " to " +
             std::to_string(axis_len - 1) + ")");
}

void gather(NodeCheck& c) {
  c.require_int(1);
  const Shape &x = c.shape(0), &idx = c.shape(1);
  const int64_t a = c.axis(c.node().get_int("axis", 0), int64_t(x.size()));
  check_indices_in_range(c, 1, x[a], "axis " + std::to_string(a) + " of " + c.described(0));
  Shape out(x.begin(), x.begin() + a);
  out.insert(out.end(), idx.begin(), idx.end());
  out.insert(out.end(), x.begin() + a + 1, x.end());
  c.expect(0, out, c.dtype(0));
}

void gather_elements(NodeCheck& c) {
  c.require_int(1);
  const int64_t r = c.rank(0), a = c.axis(c.node().get_int("axis", 0), r);
  if (c.rank(1) != r) c.fail(c.described(1) + " must have the rank of " + c.described(0));
  check_indices_in_range(c, 1, c.shape(0)[a], "axis " + std::to_string(a) + " of " + c.described(0));
  c.expect(0, c.shape(1), c.dtype(0));
}

void gather_nd(NodeCheck& c) {
  c.require_int(1);
  const Shape &x = c.shape(0), &idx = c.shape(1);
  const int64_t b = c.node().get_int("batch_dims", 0);
  if (idx.empty()) c.fail(c.described(1) + " must have rank 1 or more");
  const int64_t last = idx.back(), r = int64_t(x.size());
  if (b < 0 || b >= std::min<int64_t>(r, int64_t(idx.size())) || last < 1 || last > r - b)
    c.fail("batch_dims " + std::to_string(b) + " and index tuples of " + std::to_string(last) + " do not fit " +
           c.described(0) + " and " + c.described(1));
  for (int64_t d = 0; d < b; ++d)
    if (x[d] != idx[d]) c.fail("batch dim " + std::to_string(d) + " differs between data and indices");
  Shape out(idx.begin(), idx.end() - 1);
  out.insert(out.end(), x.begin() + b + last, x.end());
  c.expect(0, out, c.dtype(0));
}

void scatter(NodeCheck& c) {  // Scatter, ScatterElements, ScatterND
  c.require_int(1);
  c.require_same_dtype(2, 0);
  if (c.node().op_type != "ScatterND") {
    const int64_t r = c.rank(0), a = c.axis(c.node().get_int("axis", 0), r);
    if (c.rank(1) != r || c.shape(2) != c.shape(1))
      c.fail(c.described(1) + " and " + c.described(2) + " must have one shape, of the rank of " + c.described(0));
    check_indices_in_range(c, 1, c.shape(0)[a], "axis " + std::to_string(a) + " of " + c.described(0));
  } else {
    const Shape &x = c.shape(0), &idx = c.shape(1);
    if (idx.empty() || idx.back() < 1 || idx.back() > int64_t(x.size()))
      c.fail(c.described(1) + " does not index " + c.described(0));
    Shape upd(idx.begin(), idx.end() - 1);
    upd.insert(upd.end(), x.begin() + idx.back(), x.end());
    if (c.shape(2) != upd) c.fail(c.described(2) + " must have shape " + to_string(upd));
  }
  c.expect_like_input(0, 0);
}

void grid_sample(NodeCheck& c) {
  c.require_rank(0, 4, 4);
  c.require_rank(1, 4, 4);
  const Shape& x = c.shape(0);
  const Shape& g = c.shape(1);
  if (g[3] != 2 || g[0] != x[0])
    c.fail("grid " + c.described(1) + " must be [N, Ho, Wo, 2] with the N of " + c.described(0));
  c.expect(0, {x[0], x[1], g[1], g[2]}, c.dtype(0));
}

void depth_to_space(NodeCheck& c) {
  c.require_rank(0, 4, 4);
  const Shape& x = c.shape(0);
  const int64_t b = c.node().get_int("blocksize", 0);
  if (b < 1) c.fail("blocksize must be positive");
  if (c.node().op_type == "DepthToSpace") {
    if (x[1] % (b * b) != 0) c.fail("blocksize^2 " + std::to_string(b * b) + " does not divide the channels of " + c.described(0));
    c.expect(0, {x[0], x[1] / (b * b), x[2] * b, x[3] * b}, c.dtype(0));
  } else {
    if (x[2] % b != 0 || x[3] % b != 0) c.fail("blocksize " + std::to_string(b) + " does not divide the height and width of " + c.described(0));
    c.expect(0, {x[0], x[1] * b * b, x[2] / b, x[3] / b}, c.dtype(0));
  }
}

void resize(NodeCheck& c) {
  const Shape& x = c.shape(0);
  const int64_t r = int64_t(x.size());
  std::vector<double> scales;
  std::vector<int64_t> sizes;
  if (c.node().op_type == "Upsample" || c.inputs() == 2) {  // Upsample, or Resize opset 10: (X, scales)
    if (c.has(1)) {
      auto v = c.floats(1);
      if (!v) return;
      scales = *v;
    } else {
      for (float f : c.node().get_floats("scales")) scales.push_back(f);
    }
  } else {
    if (c.has(2) && c.count(2) > 0) {
      auto v = c.floats(2);
      if (!v) return;
      scales = *v;
    }
    if (c.has(3) && c.count(3) > 0) {
      auto v = c.ints(3);
      if (!v) return;
      sizes = *v;
    }
  }
  if (scales.empty() == sizes.empty()) c.fail("exactly one of scales and sizes must be given");
  std::vector<int64_t> ax;
  if (c.node().has("axes")) ax = c.axes(c.node().get_ints("axes"), r);
  else
    for (int64_t d = 0; d < r; ++d) ax.push_back(d);
  const size_t n = scales.empty() ? sizes.size() : scales.size();
  if (n != ax.size())
    c.fail((scales.empty() ? "sizes" : "scales") + std::string(" has ") + count_text(int64_t(n)) + ", expected " +
           std::to_string(ax.size()) + " (one per resized axis of " + c.described(0) + ")");
  if (c.node().get_string("keep_aspect_ratio_policy", "stretch") != "stretch") return;  // output rule not checked
  Shape out = x;
  for (size_t i = 0; i < ax.size(); ++i) {
    if (!scales.empty()) {
      if (!reference::is_size_factor(scales[i])) c.fail("scale " + std::to_string(scales[i]) + " is not a positive size factor");
      out[ax[i]] = int64_t(std::floor(double(x[ax[i]]) * scales[i]));
    } else {
      if (sizes[i] < 0) c.fail("sizes must not be negative");
      out[ax[i]] = sizes[i];
    }
  }
  c.expect(0, out, c.dtype(0));
}

void shape_op(NodeCheck& c) {
  const int64_t r = c.rank(0);
  int64_t s = c.node().get_int("start", 0), e = c.node().get_int("end", r);
  if (s < 0) s += r;
  if (e < 0) e += r;
  s = std::clamp<int64_t>(s, 0, r);
  e = std::clamp<int64_t>(e, s, r);
  c.expect(0, {e - s}, DataType::Int64);
}

void size_op(NodeCheck& c) { c.expect(0, {}, DataType::Int64); }

void constant(NodeCheck& c) {
  const Node& n = c.node();
  if (n.has("value") && n.attrs.at("value").tensor) c.expect(0, n.attrs.at("value").tensor->shape, n.attrs.at("value").tensor->dtype);
  else if (n.has("value_float")) c.expect(0, {}, DataType::Float32);
  else if (n.has("value_floats")) c.expect(0, {int64_t(n.get_floats("value_floats").size())}, DataType::Float32);
  else if (n.has("value_int")) c.expect(0, {}, DataType::Int64);
  else if (n.has("value_ints")) c.expect(0, {int64_t(n.get_ints("value_ints").size())}, DataType::Int64);
}

void constant_of_shape(NodeCheck& c) {
  auto dims = c.ints(0);
  DataType t = DataType::Float32;
  if (c.node().has("value") && c.node().attrs.at("value").tensor) {
    const auto& v = *c.node().attrs.at("value").tensor;
    if (element_count(v.shape) != 1) c.fail("attribute value must hold one value");
    t = v.dtype;
  }
  if (!dims) return;
  for (int64_t d : *dims)
    if (d < 0) c.fail("shape entries must not be negative, got " + to_string(*dims));
  c.expect(0, Shape(dims->begin(), dims->end()), t);
}

void eye_like(NodeCheck& c) {
  c.require_rank(0, 2, 2);
  DataType t = c.dtype(0);
  if (c.node().has("dtype")) {
    const int64_t code = c.node().get_int("dtype", 1);
    t = c.reference([&](const OpContext& ctx) { return reference::dtype_from_onnx(ctx, code); });
  }
  c.expect(0, c.shape(0), t);
}

void trilu(NodeCheck& c) {
  c.require_rank(0, 2, 8);
  c.require_scalar(1, "k");
  c.expect_like_input(0, 0);
}

void cumsum(NodeCheck& c) {
  c.require_scalar(1, "axis");
  if (c.has(1) && c.in(1).has_data) c.axis(c.in(1).value.as_int64()[0], c.rank(0));
  c.expect_like_input(0, 0);
}

void one_hot(NodeCheck& c) {
  c.require_scalar(1, "depth");
  if (c.count(2) != 2) c.fail(c.label(2) + " (values) must hold 2 values, got shape " + to_string(c.shape(2)));
  const Shape& idx = c.shape(0);
  const int64_t r = int64_t(idx.size()) + 1, a = c.axis(c.node().get_int("axis", -1), r);
  auto depth = c.floats(1);
  if (!depth) return;
  Shape out = idx;
  out.insert(out.begin() + a, int64_t((*depth)[0]));
  c.expect(0, out, c.dtype(2));
}

void top_k(NodeCheck& c) {
  const Shape& x = c.shape(0);
  const int64_t a = c.axis(c.node().get_int("axis", -1), int64_t(x.size()));
  int64_t k = c.node().get_int("k", -1);
  if (c.has(1)) {
    c.require_scalar(1, "K");
    auto v = c.ints(1);
    if (!v) return;
    k = (*v)[0];
  }
  if (k < 0 || k > x[a]) c.fail("K " + std::to_string(k) + " is outside 0.." + std::to_string(x[a]) + " (axis " + std::to_string(a) + " of " + c.described(0) + ")");
  Shape out = x;
  out[a] = k;
  c.expect(0, out, c.dtype(0));
  c.expect(1, out, DataType::Int64);
}

void range(NodeCheck& c) {
  for (size_t i = 0; i < 3; ++i) c.require_scalar(i, i == 0 ? "start" : i == 1 ? "limit" : "delta");
  for (size_t i = 1; i < 3; ++i) c.require_same_dtype(i, 0);
  auto s = c.floats(0), l = c.floats(1), d = c.floats(2);
  if (!s || !l || !d) return;
  if ((*d)[0] == 0) c.fail("delta must not be 0");
  const double n = std::ceil(((*l)[0] - (*s)[0]) / (*d)[0]);
  if (!(n < 1e15)) c.fail("the range is too long");
  c.expect(0, {std::max<int64_t>(int64_t(n), 0)}, c.dtype(0));
}

void non_zero(NodeCheck& c) {  // the length is data: only dtype and the first dim
  const Tensor* y = c.out(0);
  if (y && (y->dtype != DataType::Int64 || y->shape.size() != 2 || y->shape[0] != c.rank(0)))
    c.fail("output 0 '" + y->name + "' is declared " + to_string(y->shape) + " " + to_string(y->dtype) +
           ", expected int64 of shape " + std::to_string(c.rank(0)) + "xN");
}

}  // namespace

void add_shape_rules(RuleTable& t) {
  t["Reshape"] = reshape;
  t["Flatten"] = flatten;
  t["Squeeze"] = squeeze;
  t["Unsqueeze"] = unsqueeze;
  t["Transpose"] = transpose;
  t["Concat"] = concat;
  t["Split"] = split;
  t["Slice"] = slice;
  t["Expand"] = expand;
  t["Tile"] = tile;
  t["Pad"] = pad;
  t["Gather"] = gather;
  t["GatherElements"] = gather_elements;
  t["GatherND"] = gather_nd;
  t["Scatter"] = scatter;
  t["ScatterElements"] = scatter;
  t["ScatterND"] = scatter;
  t["DepthToSpace"] = depth_to_space;
  t["SpaceToDepth"] = depth_to_space;
  t["Resize"] = resize;
  t["Upsample"] = resize;
  t["GridSample"] = grid_sample;
  t["Shape"] = shape_op;
  t["Size"] = size_op;
  t["Constant"] = constant;
  t["ConstantOfShape"] = constant_of_shape;
  t["EyeLike"] = eye_like;
  t["Trilu"] = trilu;
  t["CumSum"] = cumsum;
  t["OneHot"] = one_hot;
  t["TopK"] = top_k;
  t["Range"] = range;
  t["NonZero"] = non_zero;
}

}  // namespace texplan::validation
