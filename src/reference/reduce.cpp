// Reductions: ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare
// (axes as attribute before opset 13/18, as input after; keepdims; negative
// axes; noop_with_empty_axes) and ArgMax/ArgMin.
#include <cmath>
#include <limits>

#include "reference/ops.h"

namespace texplan::reference {
namespace {

enum class Kind { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

template <Kind K, class A> A initial() {
  if constexpr (K == Kind::Max) return std::numeric_limits<A>::has_infinity ? -std::numeric_limits<A>::infinity()
                                                                            : std::numeric_limits<A>::lowest();
  if constexpr (K == Kind::Min) return std::numeric_limits<A>::has_infinity ? std::numeric_limits<A>::infinity()
                                                                            : std::numeric_limits<A>::max();
  if constexpr (K == Kind::Prod) return A(1);
  return A(0);
}

template <Kind K, class A> A combine(A acc, A v) {
  if constexpr (K == Kind::Max) return v > acc || std::isnan(double(v)) ? v : acc;
  if constexpr (K == Kind::Min) return v < acc || std::isnan(double(v)) ? v : acc;
  // Integers wrap around (wrap_*: signed overflow would be undefined).
  if constexpr (K == Kind::Prod) return wrap_mul(acc, v);
  if constexpr (K == Kind::L1) return wrap_add(acc, v < 0 ? wrap_sub(A(0), v) : v);
  if constexpr (K == Kind::L2 || K == Kind::SumSquare) return wrap_madd(acc, v, v);
  if constexpr (K == Kind::LogSumExp) return acc + A(std::exp(double(v)));
  return wrap_add(acc, v);  // Sum, Mean, LogSum
}

template <Kind K, class A> A finish(A acc, int64_t count) {
  if constexpr (K == Kind::Mean) return count > 0 ? A(acc / A(count)) : acc;
  if constexpr (K == Kind::L2) return A(std::sqrt(double(acc)));
  if constexpr (K == Kind::LogSum || K == Kind::LogSumExp) return A(std::log(double(acc)));
  return acc;
}

template <Kind K> Outputs Reduce(const OpContext& c) {
  const HostTensor& x = c.input(0);
  const int64_t rank = int64_t(x.shape.size());
  const bool keepdims = c.node.get_int("keepdims", 1) != 0;
  const bool noop_if_empty = c.node.get_int("noop_with_empty_axes", 0) != 0;
  std::vector<int64_t> axes = c.ints_input_or_attr(1, "axes").value_or(std::vector<int64_t>{});
  if (axes.empty()) {
    if (noop_if_empty) return single(x);
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  }
  axes = normalize_axes(c, axes, rank);

  Shape kept = x.shape, out;
  int64_t count = 1;
  for (int64_t a : axes) {
    count *= x.shape[a];
    kept[a] = 1;
  }
  // Accumulator strides over X's dims: 0 along reduced axes.
  std::vector<int64_t> acc_strides = strides_of(kept);
  for (int64_t a = 0; a < rank; ++a) {
    bool reduced = false;
    for (int64_t r : axes) reduced |= r == a;
    if (reduced) acc_strides[a] = 0;
    else out.push_back(x.shape[a]);
  }
  if (keepdims) out = kept;

  HostTensor y(x.dtype, out);
  dispatch_numeric(c, x.dtype, [&](auto tag) {
    using T = decltype(tag);
    using A = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
    std::vector<A> acc(size_t(element_count(kept)), initial<K, A>());
    const T* px = x.data<T>();
    broadcast_runs(x.shape, {acc_strides}, [&](int64_t o, const int64_t* off, const int64_t* st, int64_t n) {
      A* a = acc.data() + off[0];
      for (int64_t i = 0; i < n; ++i) a[i * st[0]] = combine<K, A>(a[i * st[0]], A(px[o + i]));
    });
    T* py = y.data<T>();
    for (size_t i = 0; i < acc.size(); ++i) py[i] = T(finish<K, A>(acc[i], count));
  });
  return single(std::move(y));
}

template <bool IsMax> Outputs ArgExtreme(const OpContext& c) {
  const HostTensor& x = c.input(0);
  const int64_t rank = int64_t(x.shape.size());
  const int64_t axis = normalize_axis(c, c.node.get_int("axis", 0), rank);
  const bool keepdims = c.node.get_int("keepdims", 1) != 0, last = c.node.get_int("select_last_index", 0) != 0;
  const int64_t outer = product(x.shape, 0, axis), len = x.shape[axis], inner = product(x.shape, axis + 1, rank);
  if (len == 0) c.fail("cannot take the arg of an empty axis");
  Shape out = x.shape;
  if (keepdims) out[axis] = 1;
  else out.erase(out.begin() + axis);
  HostTensor y(DataType::Int64, out);
  dispatch_numeric(c, x.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    int64_t* py = y.data<int64_t>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const T* p = px + o * len * inner + i;
        int64_t best = 0;
        for (int64_t k = 1; k < len; ++k) {
          const T v = p[k * inner], b = p[best * inner];
          const bool better = IsMax ? (v > b || (last && v == b)) : (v < b || (last && v == b));
          if (better) best = k;
        }
        py[o * inner + i] = best;
      }
  });
  return single(std::move(y));
}

}  // namespace

void register_reduce(OpTable& t) {
  t["ReduceSum"] = {Reduce<Kind::Sum>, {"axes", "keepdims", "noop_with_empty_axes"}};
  t["ReduceMean"] = {Reduce<Kind::Mean>, {"axes", "keepdims", "noop_with_empty_axes"}};
  t["ReduceMax"] = {Reduce<Kind::Max>, {"axes", "keepdims", "noop_with_empty_axes"}};
  t["ReduceMin"] = {Reduce<Kind::Min>, {"axes", "keepdims", "noop_with_empty_axes"}};
  t["ReduceProd"] = {Reduce<Kind::Prod>, {"axes", "keepdims", "noop_with_empty_axes"}};
  t["ReduceL1"] = {Reduce<Kind::L1>, {"axes", "keepdims", "noop_with_empty_axes"}};
  t["ReduceL2"] = {Reduce<Kind::L2>, {"axes", "keepdims", "noop_with_empty_axes"}};
  t["ReduceLogSum"] = {Reduce<Kind::LogSum>, {"axes", "keepdims", "noop_with_empty_axes"}};
  t["ReduceLogSumExp"] = {Reduce<Kind::LogSumExp>, {"axes", "keepdims", "noop_with_empty_axes"}};
  t["ReduceSumSquare"] = {Reduce<Kind::SumSquare>, {"axes", "keepdims", "noop_with_empty_axes"}};
  t["ArgMax"] = {ArgExtreme<true>, {"axis", "keepdims", "select_last_index"}};
  t["ArgMin"] = {ArgExtreme<false>, {"axis", "keepdims", "select_last_index"}};
}

}  // namespace texplan::reference
