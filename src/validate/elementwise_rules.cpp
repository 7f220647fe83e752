// The elementwise family: unary math and activations, Clip, binary
// arithmetic, comparisons, logic, variadic Max/Min/Sum/Mean, PRelu, Where,
// Cast, CastLike, Dropout, QuantizeLinear, DequantizeLinear.
#include "validate/validate_internal.h"

#include "reference/quantize.h"

namespace texplan::validation {
namespace {

void same_as_input(NodeCheck& c) { c.expect_like_input(0, 0); }

void float_unary(NodeCheck& c) {
  c.require_float(0);
  c.expect_like_input(0, 0);
}

void clip(NodeCheck& c) {
  for (size_t i = 1; i < 3; ++i)
    if (c.has(i)) {
      c.require_same_dtype(i, 0);
      c.require_scalar(i, i == 1 ? "min" : "max");
    }
  c.expect_like_input(0, 0);
}

void is_nan_inf(NodeCheck& c) {
  c.require_float(0);
  c.expect(0, c.shape(0), DataType::Bool);
}

void not_op(NodeCheck& c) {
  c.require_dtype(0, DataType::Bool);
  c.expect_like_input(0, 0);
}

Shape broadcast_all(NodeCheck& c) {
  std::vector<Shape> shapes;
  for (size_t i = 0; i < c.inputs(); ++i) shapes.push_back(c.shape(i));
  return c.reference([&](const OpContext& ctx) { return reference::broadcast_shapes(ctx, shapes); });
}

void arithmetic(NodeCheck& c) {  // Add Sub Mul Div Mod Max Min Sum Mean (same dtype)
  if (c.inputs() == 0) c.fail("needs at least one input");
  for (size_t i = 1; i < c.inputs(); ++i) c.require_same_dtype(i, 0);
  c.expect(0, broadcast_all(c), c.dtype(0));
}

void pow_op(NodeCheck& c) {
  c.in(1);
  c.expect(0, broadcast_all(c), c.dtype(0));
}

void comparison(NodeCheck& c) {
  c.in(1);
  c.require_same_dtype(1, 0);
  c.expect(0, broadcast_all(c), DataType::Bool);
}

void logic(NodeCheck& c) {
  c.require_dtype(0, DataType::Bool);
  c.require_dtype(1, DataType::Bool);
  c.expect(0, broadcast_all(c), DataType::Bool);
}

void prelu(NodeCheck& c) {
  c.require_float(0);
  c.require_same_dtype(1, 0);
  c.require_broadcasts_to(1, c.shape(0), "the input's shape");
  c.expect_like_input(0, 0);
}

void where(NodeCheck& c) {
  c.require_dtype(0, DataType::Bool);
  c.require_same_dtype(2, 1);
  c.expect(0, broadcast_all(c), c.dtype(1));
}

void cast(NodeCheck& c) {
  const int64_t to = c.node().get_int("to", 0);
  const DataType t = c.reference([&](const OpContext& ctx) { return reference::dtype_from_onnx(ctx, to); });
  c.expect(0, c.shape(0), t);
}

void cast_like(NodeCheck& c) { c.expect(0, c.shape(0), c.dtype(1)); }

void dropout(NodeCheck& c) {
  c.expect_like_input(0, 0);
  c.expect(1, c.shape(0), DataType::Bool);
}

template <bool Dequantize> void quantize(NodeCheck& c) {
  const DataType t = c.reference([&](const OpContext& ctx) { return reference::quantize_output_type(ctx, Dequantize); });
  c.expect(0, c.shape(0), t);
}

}  // namespace

void add_elementwise_rules(RuleTable& t) {
  for (const char* op : {"Abs", "Neg", "Sign", "Relu", "Identity", "Ceil", "Floor", "Round", "Shrink"})
    t[op] = same_as_input;
  for (const char* op : {"Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "Cos", "Cosh", "Sin", "Sinh", "Tan",
                         "Tanh", "Erf", "Exp", "Log", "Reciprocal", "Sqrt", "Sigmoid", "HardSigmoid",
                         "HardSwish", "LeakyRelu", "Elu", "Selu", "Celu", "Softplus", "Softsign", "Gelu",
                         "ThresholdedRelu"})
    t[op] = float_unary;
  t["Clip"] = clip;
  t["IsNaN"] = is_nan_inf;
  t["IsInf"] = is_nan_inf;
  t["Not"] = not_op;
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Mod", "Max", "Min", "Sum", "Mean"}) t[op] = arithmetic;
  t["Pow"] = pow_op;
  for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"}) t[op] = comparison;
  for (const char* op : {"And", "Or", "Xor"}) t[op] = logic;
  t["PRelu"] = prelu;
  t["Where"] = where;
  t["Cast"] = cast;
  t["CastLike"] = cast_like;
  t["Dropout"] = dropout;
  t["QuantizeLinear"] = quantize<false>;
  t["DequantizeLinear"] = quantize<true>;
}

}  // namespace texplan::validation
