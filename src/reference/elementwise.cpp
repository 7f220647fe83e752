// Elementwise operators: unary math and activations, binary arithmetic with
// numpy broadcasting (also on int64, for folding shape computations),
// comparisons and logic to bool, Where, variadic Sum/Mean/Max/Min, Clip, Cast.
#include <algorithm>
#include <cmath>
#include <limits>

#include "reference/ops.h"

namespace texplan::reference {
namespace {

// ---- unary --------------------------------------------------------------------

template <class T, class Op> void map_values(const HostTensor& x, HostTensor& y, Op op) {
  const T* px = x.data<T>();
  T* py = y.data<T>();
  const int64_t n = x.count();
  for (int64_t i = 0; i < n; ++i) py[i] = static_cast<T>(op(px[i]));
}

// y = op(x) for float32/float64 x.
template <class Op> Outputs map_float(const OpContext& c, Op op) {
  const HostTensor& x = c.input(0);
  HostTensor y(x.dtype, x.shape);
  dispatch_float(c, x.dtype, [&](auto tag) { map_values<decltype(tag)>(x, y, op); });
  return single(std::move(y));
}

// y = op(x) for any numeric x.
template <class Op> Outputs map_numeric(const OpContext& c, Op op) {
  const HostTensor& x = c.input(0);
  HostTensor y(x.dtype, x.shape);
  dispatch_numeric(c, x.dtype, [&](auto tag) { map_values<decltype(tag)>(x, y, op); });
  return single(std::move(y));
}

template <class T> T sigmoid(T x) {
  if (x >= 0) return T(1) / (T(1) + std::exp(-x));
  T e = std::exp(x);
  return e / (T(1) + e);
}

Outputs Relu(const OpContext& c) {
  return map_numeric(c, [](auto x) { return x > 0 ? x : decltype(x)(0); });
}
Outputs LeakyRelu(const OpContext& c) {
  const double alpha = c.node.get_float("alpha", 0.01f);
  return map_float(c, [=](auto x) { return x < 0 ? decltype(x)(alpha) * x : x; });
}
Outputs ThresholdedRelu(const OpContext& c) {
  const double alpha = c.node.get_float("alpha", 1.0f);
  return map_float(c, [=](auto x) { return x > decltype(x)(alpha) ? x : decltype(x)(0); });
}
Outputs Sigmoid(const OpContext& c) {
  return map_float(c, [](auto x) { return sigmoid(x); });
}
Outputs HardSigmoid(const OpContext& c) {
  const double alpha = c.node.get_float("alpha", 0.2f), beta = c.node.get_float("beta", 0.5f);
  return map_float(c, [=](auto x) {
    using T = decltype(x);
    return std::max(T(0), std::min(T(1), T(alpha) * x + T(beta)));
  });
}
Outputs HardSwish(const OpContext& c) {
  return map_float(c, [](auto x) {
    using T = decltype(x);
    return x * std::max(T(0), std::min(T(1), x / T(6) + T(0.5)));
  });
}
Outputs Tanh(const OpContext& c) {
  return map_float(c, [](auto x) { return std::tanh(x); });
}
Outputs Erf(const OpContext& c) {
  return map_float(c, [](auto x) { return std::erf(x); });
}
Outputs Gelu(const OpContext& c) {
  const std::string approx = c.choice("approximate", {"none", "tanh"});
  if (approx == "tanh")
    return map_float(c, [](auto x) {
      using T = decltype(x);
      const T k = T(0.7978845608028654);  // sqrt(2 / pi)
      return T(0.5) * x * (T(1) + std::tanh(k * (x + T(0.044715) * x * x * x)));
    });
  return map_float(c, [](auto x) {
    using T = decltype(x);
    return T(0.5) * x * (T(1) + std::erf(x * T(0.7071067811865476)));
  });
}
Outputs Exp(const OpContext& c) {
  return map_float(c, [](auto x) { return std::exp(x); });
}
Outputs Log(const OpContext& c) {
  return map_float(c, [](auto x) { return std::log(x); });
}
Outputs Sqrt(const OpContext& c) {
  return map_float(c, [](auto x) { return std::sqrt(x); });
}
Outputs Reciprocal(const OpContext& c) {
  return map_float(c, [](auto x) { return decltype(x)(1) / x; });
}
Outputs Floor(const OpContext& c) {
  return map_float(c, [](auto x) { return std::floor(x); });
}
Outputs Ceil(const OpContext& c) {
  return map_float(c, [](auto x) { return std::ceil(x); });
}
Outputs Round(const OpContext& c) {  // halves to even, like numpy
  return map_float(c, [](auto x) { return std::nearbyint(x); });
}
Outputs Neg(const OpContext& c) {
  return map_numeric(c, [](auto x) { return -x; });
}
Outputs Abs(const OpContext& c) {
  return map_numeric(c, [](auto x) {
    if constexpr (std::is_signed_v<decltype(x)>) return x < 0 ? -x : x;
    else return x;
  });
}
Outputs Sign(const OpContext& c) {
  return map_numeric(c, [](auto x) {
    using T = decltype(x);
    return T((x > T(0)) - (x < T(0)));
  });
}
Outputs Softplus(const OpContext& c) {
  return map_float(c, [](auto x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); });
}
Outputs Softsign(const OpContext& c) {
  return map_float(c, [](auto x) { return x / (decltype(x)(1) + std::abs(x)); });
}
Outputs Elu(const OpContext& c) {
  const double alpha = c.node.get_float("alpha", 1.0f);
  return map_float(c, [=](auto x) {
    using T = decltype(x);
    return x >= 0 ? x : T(alpha) * (std::exp(x) - T(1));
  });
}
Outputs Selu(const OpContext& c) {
  const double alpha = c.node.get_float("alpha", 1.67326319217681884765625f),
               gamma = c.node.get_float("gamma", 1.05070102214813232421875f);
  return map_float(c, [=](auto x) {
    using T = decltype(x);
    return x > 0 ? T(gamma) * x : T(gamma) * (T(alpha) * std::exp(x) - T(alpha));
  });
}
Outputs Celu(const OpContext& c) {
  const double alpha = c.node.get_float("alpha", 1.0f);
  return map_float(c, [=](auto x) {
    using T = decltype(x);
    return std::max(T(0), x) + std::min(T(0), T(alpha) * (std::exp(x / T(alpha)) - T(1)));
  });
}
Outputs Shrink(const OpContext& c) {
  const double bias = c.node.get_float("bias", 0.0f), lambd = c.node.get_float("lambd", 0.5f);
  return map_numeric(c, [=](auto x) {
    using T = decltype(x);
    const double v = double(x);
    return T(v < -lambd ? v + bias : v > lambd ? v - bias : 0.0);
  });
}

#define TEXPLAN_FLOAT_FN(NAME, FN) \
  Outputs NAME(const OpContext& c) { return map_float(c, [](auto x) { return std::FN(x); }); }
TEXPLAN_FLOAT_FN(Sin, sin)
TEXPLAN_FLOAT_FN(Cos, cos)
TEXPLAN_FLOAT_FN(Tan, tan)
TEXPLAN_FLOAT_FN(Asin, asin)
TEXPLAN_FLOAT_FN(Acos, acos)
TEXPLAN_FLOAT_FN(Atan, atan)
TEXPLAN_FLOAT_FN(Sinh, sinh)
TEXPLAN_FLOAT_FN(Cosh, cosh)
TEXPLAN_FLOAT_FN(Asinh, asinh)
TEXPLAN_FLOAT_FN(Acosh, acosh)
TEXPLAN_FLOAT_FN(Atanh, atanh)
#undef TEXPLAN_FLOAT_FN

Outputs Not(const OpContext& c) {
  const HostTensor& x = c.input(0);
  require_dtype(c, x, DataType::Bool, "input");
  HostTensor y(DataType::Bool, x.shape);
  for (int64_t i = 0; i < x.count(); ++i) y.data<uint8_t>()[i] = !x.data<uint8_t>()[i];
  return single(std::move(y));
}

template <class Pred> Outputs float_predicate(const OpContext& c, Pred pred) {
  const HostTensor& x = c.input(0);
  HostTensor y(DataType::Bool, x.shape);
  dispatch_float(c, x.dtype, [&](auto tag) {
    using T = decltype(tag);
    for (int64_t i = 0; i < x.count(); ++i) y.data<uint8_t>()[i] = pred(x.data<T>()[i]) ? 1 : 0;
  });
  return single(std::move(y));
}
Outputs IsNaN(const OpContext& c) {
  return float_predicate(c, [](auto x) { return std::isnan(x); });
}
Outputs IsInf(const OpContext& c) {
  const bool neg = c.node.get_int("detect_negative", 1) != 0, pos = c.node.get_int("detect_positive", 1) != 0;
  return float_predicate(c, [=](auto x) { return std::isinf(x) && (x > 0 ? pos : neg); });
}

// ---- binary with broadcasting -------------------------------------------------

// y[i] = op(a[i], b[i]) over the broadcast shape; A, B, R are element types.
template <class A, class B, class R, class Op>
void binary_loop(const HostTensor& a, const HostTensor& b, HostTensor& y, Op op) {
  const A* pa = a.data<A>();
  const B* pb = b.data<B>();
  R* py = y.data<R>();
  broadcast_runs(y.shape, {broadcast_strides(a.shape, y.shape), broadcast_strides(b.shape, y.shape)},
                 [&](int64_t o, const int64_t* off, const int64_t* st, int64_t n) {
                   const A* x = pa + off[0];
                   const B* z = pb + off[1];
                   R* out = py + o;
                   if (st[0] == 1 && st[1] == 1) {
                     for (int64_t i = 0; i < n; ++i) out[i] = to_element<R>(op(x[i], z[i]));
                   } else if (st[0] == 1 && st[1] == 0) {
                     const B zv = *z;
                     for (int64_t i = 0; i < n; ++i) out[i] = to_element<R>(op(x[i], zv));
                   } else if (st[0] == 0 && st[1] == 1) {
                     const A xv = *x;
                     for (int64_t i = 0; i < n; ++i) out[i] = to_element<R>(op(xv, z[i]));
                   } else {
                     for (int64_t i = 0; i < n; ++i) out[i] = to_element<R>(op(x[i * st[0]], z[i * st[1]]));
                   }
                 });
}

// Before opset 7, binary ops broadcast B onto A only when broadcast=1, from
// dimension `axis` on. Without axis (or with axis aligning B's dims to A's
// last ones) that is numpy broadcasting; any other axis is refused.
void check_legacy_broadcast(const OpContext& c, const HostTensor& a, const HostTensor& b) {
  if (!c.node.has("axis")) return;
  const int64_t ra = int64_t(a.shape.size()), rb = int64_t(b.shape.size());
  const int64_t axis = c.node.get_int("axis", 0);
  if ((axis < 0 ? axis + ra : axis) != ra - rb)
    c.fail("legacy broadcast with axis=" + std::to_string(axis) + " (opset < 7) is not supported");
}

// Same-typed numeric operands, result of the same type.
template <class Op> HostTensor arithmetic(const OpContext& c, const HostTensor& a, const HostTensor& b, Op op) {
  require_same_dtype(c, a, b);
  HostTensor y(a.dtype, broadcast_shapes(c, {a.shape, b.shape}));
  dispatch_numeric(c, a.dtype, [&](auto tag) {
    using T = decltype(tag);
    binary_loop<T, T, T>(a, b, y, [&](T x, T z) { return op(x, z); });
  });
  return y;
}
template <class Op> Outputs arithmetic(const OpContext& c, Op op) {
  check_legacy_broadcast(c, c.input(0), c.input(1));
  return single(arithmetic(c, c.input(0), c.input(1), op));
}

Outputs Add(const OpContext& c) {
  return arithmetic(c, [](auto x, auto z) { return wrap_add(x, z); });
}
Outputs Sub(const OpContext& c) {
  return arithmetic(c, [](auto x, auto z) { return wrap_sub(x, z); });
}
Outputs Mul(const OpContext& c) {
  return arithmetic(c, [](auto x, auto z) { return wrap_mul(x, z); });
}
Outputs Div(const OpContext& c) {
  // Integer division truncates toward zero (C, ONNX Runtime).
  return arithmetic(c, [&](auto x, auto z) {
    using T = decltype(x);
    if constexpr (std::is_integral_v<T>) {
      if (z == 0) c.fail("integer division by zero");
      if constexpr (std::is_signed_v<T>)
        if (z == T(-1)) return T(0 - std::make_unsigned_t<T>(x));  // INT_MIN / -1 would trap; wraps
    }
    return T(x / z);
  });
}
Outputs Mod(const OpContext& c) {
  const bool fmod = c.node.get_int("fmod", 0) != 0;
  const HostTensor& a = c.input(0);
  if (!fmod && (a.dtype == DataType::Float32 || a.dtype == DataType::Float64))
    c.fail("fmod=0 is defined for integer inputs only; float inputs need fmod=1");
  return arithmetic(c, [&](auto x, auto z) {
    using T = decltype(x);
    if constexpr (std::is_floating_point_v<T>) {
      return std::fmod(x, z);
    } else {
      if (z == 0) c.fail("integer modulo by zero");
      if constexpr (std::is_signed_v<T>)
        if (z == T(-1)) return T(0);  // INT_MIN % -1 would trap
      T r = T(x % z);
      if (!fmod && r != 0 && ((r < 0) != (z < 0))) r = T(r + z);  // result takes the divisor's sign
      return r;
    }
  });
}
Outputs Pow(const OpContext& c) {
  // The exponent may have another numeric type; the result has the base's.
  const HostTensor &a = c.input(0), &b = c.input(1);
  check_legacy_broadcast(c, a, b);
  HostTensor y(a.dtype, broadcast_shapes(c, {a.shape, b.shape}));
  dispatch_numeric(c, a.dtype, [&](auto ta) {
    using A = decltype(ta);
    dispatch_numeric(c, b.dtype, [&](auto tb) {
      using B = decltype(tb);
      binary_loop<A, B, A>(a, b, y, [](A x, B z) {
        if constexpr (std::is_same_v<A, float> && std::is_same_v<B, float>) return std::pow(x, z);
        else return std::pow(double(x), double(z));
      });
    });
  });
  return single(std::move(y));
}
Outputs PRelu(const OpContext& c) {
  const HostTensor& x = c.input(0);
  HostTensor y = arithmetic(c, x, c.input(1), [](auto v, auto slope) { return v < 0 ? v * slope : v; });
  if (y.shape != x.shape) c.fail("slope of shape " + to_string(c.input(1).shape) + " does not broadcast to X");
  return single(std::move(y));
}

// Comparisons: numeric (or bool for Equal) operands, bool result.
template <class Op> Outputs compare(const OpContext& c, Op op) {
  const HostTensor &a = c.input(0), &b = c.input(1);
  require_same_dtype(c, a, b);
  check_legacy_broadcast(c, a, b);
  HostTensor y(DataType::Bool, broadcast_shapes(c, {a.shape, b.shape}));
  const DataType t = a.dtype == DataType::Bool ? DataType::UInt8 : a.dtype;
  dispatch_numeric(c, t, [&](auto tag) {
    using T = decltype(tag);
    binary_loop<T, T, uint8_t>(a, b, y, [&](T x, T z) { return op(x, z) ? 1 : 0; });
  });
  return single(std::move(y));
}
Outputs Equal(const OpContext& c) {
  return compare(c, [](auto x, auto z) { return x == z; });
}
Outputs Greater(const OpContext& c) {
  return compare(c, [](auto x, auto z) { return x > z; });
}
Outputs Less(const OpContext& c) {
  return compare(c, [](auto x, auto z) { return x < z; });
}
Outputs GreaterOrEqual(const OpContext& c) {
  return compare(c, [](auto x, auto z) { return x >= z; });
}
Outputs LessOrEqual(const OpContext& c) {
  return compare(c, [](auto x, auto z) { return x <= z; });
}

template <class Op> Outputs logic(const OpContext& c, Op op) {
  const HostTensor &a = c.input(0), &b = c.input(1);
  require_dtype(c, a, DataType::Bool, "input A");
  require_dtype(c, b, DataType::Bool, "input B");
  check_legacy_broadcast(c, a, b);
  HostTensor y(DataType::Bool, broadcast_shapes(c, {a.shape, b.shape}));
  binary_loop<uint8_t, uint8_t, uint8_t>(a, b, y, [&](uint8_t x, uint8_t z) { return op(x != 0, z != 0) ? 1 : 0; });
  return single(std::move(y));
}
Outputs And(const OpContext& c) {
  return logic(c, [](bool x, bool z) { return x && z; });
}
Outputs Or(const OpContext& c) {
  return logic(c, [](bool x, bool z) { return x || z; });
}
Outputs Xor(const OpContext& c) {
  return logic(c, [](bool x, bool z) { return x != z; });
}

Outputs Where(const OpContext& c) {
  const HostTensor &cond = c.input(0), &x = c.input(1), &z = c.input(2);
  require_dtype(c, cond, DataType::Bool, "condition");
  require_same_dtype(c, x, z);
  Shape shape = broadcast_shapes(c, {cond.shape, x.shape, z.shape});
  HostTensor y(x.dtype, shape);
  dispatch_bytes(c, x.dtype, [&](auto tag) {
    using U = decltype(tag);
    const uint8_t* pc = cond.data<uint8_t>();
    const U *px = x.data<U>(), *pz = z.data<U>();
    U* py = y.data<U>();
    broadcast_runs(shape,
                   {broadcast_strides(cond.shape, shape), broadcast_strides(x.shape, shape),
                    broadcast_strides(z.shape, shape)},
                   [&](int64_t o, const int64_t* off, const int64_t* st, int64_t n) {
                     for (int64_t i = 0; i < n; ++i)
                       py[o + i] = pc[off[0] + i * st[0]] ? px[off[1] + i * st[1]] : pz[off[2] + i * st[2]];
                   });
  });
  return single(std::move(y));
}

// Variadic ops fold their inputs pairwise, broadcasting as they go.
template <class Op> HostTensor fold_inputs(const OpContext& c, Op op) {
  if (c.input_count() == 0) c.fail("needs at least one input");
  HostTensor acc = c.input(0);
  dispatch_numeric(c, acc.dtype, [](auto) {});  // rejects bool/float16 even for one input
  for (size_t i = 1; i < c.input_count(); ++i) acc = arithmetic(c, acc, c.input(i), op);
  return acc;
}
Outputs Sum(const OpContext& c) {
  return single(fold_inputs(c, [](auto x, auto z) { return x + z; }));
}
Outputs Max(const OpContext& c) {
  return single(fold_inputs(c, [](auto x, auto z) { return std::isnan(double(x)) || x > z ? x : z; }));
}
Outputs Min(const OpContext& c) {
  return single(fold_inputs(c, [](auto x, auto z) { return std::isnan(double(x)) || x < z ? x : z; }));
}
Outputs Mean(const OpContext& c) {
  HostTensor y = fold_inputs(c, [](auto x, auto z) { return x + z; });
  const double n = double(c.input_count());
  dispatch_float(c, y.dtype, [&](auto tag) {
    using T = decltype(tag);
    for (int64_t i = 0; i < y.count(); ++i) y.data<T>()[i] = T(y.data<T>()[i] / n);
  });
  return single(std::move(y));
}

Outputs Clip(const OpContext& c) {
  // Bounds are inputs 1 and 2 since opset 11, attributes before.
  const HostTensor& x = c.input(0);
  HostTensor y(x.dtype, x.shape);
  dispatch_numeric(c, x.dtype, [&](auto tag) {
    using T = decltype(tag);
    T lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
    if (c.has_input(1)) {
      require_same_dtype(c, x, c.input(1));
      if (c.input(1).count() != 1) c.fail("min must be a scalar");
      lo = c.input(1).data<T>()[0];
    } else if (c.node.has("min")) {
      lo = T(c.node.get_float("min", 0));
    }
    if (c.has_input(2)) {
      require_same_dtype(c, x, c.input(2));
      if (c.input(2).count() != 1) c.fail("max must be a scalar");
      hi = c.input(2).data<T>()[0];
    } else if (c.node.has("max")) {
      hi = T(c.node.get_float("max", 0));
    }
    map_values<T>(x, y, [&](T v) { return std::min(std::max(v, lo), hi); });
  });
  return single(std::move(y));
}

// ---- Cast ---------------------------------------------------------------------

template <class D> D from_double(double v) {
  if constexpr (std::is_floating_point_v<D>) {
    return D(v);
  } else {
    if (std::isnan(v)) return D(0);
    v = std::max(-9.2e18, std::min(9.2e18, v));
    return D(int64_t(v));  // truncation toward zero, then wrap to the width
  }
}

HostTensor cast_to(const OpContext& c, const HostTensor& x, DataType to) {
  if (x.dtype == to) return x;
  HostTensor y(to, x.shape);
  const int64_t n = x.count();
  if (is_float(x.dtype)) {
    std::vector<double> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      v[i] = x.dtype == DataType::Float16 ? double(half_to_float(x.data<uint16_t>()[i]))
             : x.dtype == DataType::Float32 ? double(x.data<float>()[i])
                                            : x.data<double>()[i];
    if (to == DataType::Float16)
      for (int64_t i = 0; i < n; ++i) y.data<uint16_t>()[i] = float_to_half(float(v[i]));
    else if (to == DataType::Bool)
      for (int64_t i = 0; i < n; ++i) y.data<uint8_t>()[i] = v[i] != 0;
    else
      dispatch_numeric(c, to, [&](auto tag) {
        using D = decltype(tag);
        for (int64_t i = 0; i < n; ++i) y.data<D>()[i] = from_double<D>(v[i]);
      });
  } else {
    std::vector<int64_t> v = x.as_int64();  // integers and bool
    if (to == DataType::Float16)
      for (int64_t i = 0; i < n; ++i) y.data<uint16_t>()[i] = float_to_half(float(v[i]));
    else if (to == DataType::Bool)
      for (int64_t i = 0; i < n; ++i) y.data<uint8_t>()[i] = v[i] != 0;
    else
      dispatch_numeric(c, to, [&](auto tag) {
        using D = decltype(tag);
        for (int64_t i = 0; i < n; ++i) y.data<D>()[i] = static_cast<D>(v[i]);
      });
  }
  return y;
}

Outputs Cast(const OpContext& c) {
  if (!c.node.has("to")) c.fail("attribute 'to' is required");
  if (c.node.has("saturate") && c.node.get_int("saturate", 1) != 1) c.fail("saturate=0 is not supported");
  return single(cast_to(c, c.input(0), dtype_from_onnx(c, c.node.get_int("to", 1))));
}
Outputs CastLike(const OpContext& c) {
  return single(cast_to(c, c.input(0), c.input(1).dtype));
}

}  // namespace

void register_elementwise(OpTable& t) {
  t["Relu"] = {Relu, {"consumed_inputs"}};
  t["LeakyRelu"] = {LeakyRelu, {"alpha", "consumed_inputs"}};
  t["PRelu"] = {PRelu, {"consumed_inputs"}};
  t["ThresholdedRelu"] = {ThresholdedRelu, {"alpha"}};
  t["Sigmoid"] = {Sigmoid, {"consumed_inputs"}};
  t["HardSigmoid"] = {HardSigmoid, {"alpha", "beta", "consumed_inputs"}};
  t["HardSwish"] = {HardSwish, {}};
  t["Tanh"] = {Tanh, {"consumed_inputs"}};
  t["Erf"] = {Erf, {}};
  t["Gelu"] = {Gelu, {"approximate"}};
  t["Exp"] = {Exp, {"consumed_inputs"}};
  t["Log"] = {Log, {"consumed_inputs"}};
  t["Sqrt"] = {Sqrt, {"consumed_inputs"}};
  t["Reciprocal"] = {Reciprocal, {"consumed_inputs"}};
  t["Floor"] = {Floor, {"consumed_inputs"}};
  t["Ceil"] = {Ceil, {"consumed_inputs"}};
  t["Round"] = {Round, {}};
  t["Neg"] = {Neg, {"consumed_inputs"}};
  t["Abs"] = {Abs, {"consumed_inputs"}};
  t["Sign"] = {Sign, {}};
  t["Softplus"] = {Softplus, {}};
  t["Softsign"] = {Softsign, {}};
  t["Elu"] = {Elu, {"alpha", "consumed_inputs"}};
  t["Selu"] = {Selu, {"alpha", "gamma", "consumed_inputs"}};
  t["Celu"] = {Celu, {"alpha"}};
  t["Shrink"] = {Shrink, {"bias", "lambd"}};
  t["Sin"] = {Sin, {}};
  t["Cos"] = {Cos, {}};
  t["Tan"] = {Tan, {}};
  t["Asin"] = {Asin, {}};
  t["Acos"] = {Acos, {}};
  t["Atan"] = {Atan, {}};
  t["Sinh"] = {Sinh, {}};
  t["Cosh"] = {Cosh, {}};
  t["Asinh"] = {Asinh, {}};
  t["Acosh"] = {Acosh, {}};
  t["Atanh"] = {Atanh, {}};
  t["Not"] = {Not, {}};
  t["IsNaN"] = {IsNaN, {}};
  t["IsInf"] = {IsInf, {"detect_negative", "detect_positive"}};
  t["Add"] = {Add, {"broadcast", "axis", "consumed_inputs"}};
  t["Sub"] = {Sub, {"broadcast", "axis", "consumed_inputs"}};
  t["Mul"] = {Mul, {"broadcast", "axis", "consumed_inputs"}};
  t["Div"] = {Div, {"broadcast", "axis", "consumed_inputs"}};
  t["Mod"] = {Mod, {"fmod"}};
  t["Pow"] = {Pow, {"broadcast", "axis"}};
  t["Equal"] = {Equal, {"broadcast", "axis"}};
  t["Greater"] = {Greater, {"broadcast", "axis"}};
  t["Less"] = {Less, {"broadcast", "axis"}};
  t["GreaterOrEqual"] = {GreaterOrEqual, {}};
  t["LessOrEqual"] = {LessOrEqual, {}};
  t["And"] = {And, {"broadcast", "axis"}};
  t["Or"] = {Or, {"broadcast", "axis"}};
  t["Xor"] = {Xor, {"broadcast", "axis"}};
  t["Where"] = {Where, {}};
  t["Sum"] = {Sum, {"consumed_inputs"}};
  t["Mean"] = {Mean, {"consumed_inputs"}};
  t["Max"] = {Max, {"consumed_inputs"}};
  t["Min"] = {Min, {"consumed_inputs"}};
  t["Clip"] = {Clip, {"min", "max", "consumed_inputs"}};
  t["Cast"] = {Cast, {"to", "saturate"}};
  t["CastLike"] = {CastLike, {"saturate"}};
}

}  // namespace texplan::reference
