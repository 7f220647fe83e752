// QuantizeLinear and DequantizeLinear (int8/uint8, per tensor or per axis):
// what quantized ("QDQ") models carry around each quantized operator. The
// importer folds them on constant weights and turns Quantize-Dequantize
// pairs on activations into float arithmetic (import/quantize_pairs.cpp).
#include <cmath>

#include "reference/ops.h"

namespace texplan::reference {
namespace {

// Scale (and zero point) per element of x: one value, or one per index of
// `axis` (opset 13). Returns the axis' stride and extent for the per-axis
// case (1 and 1 per tensor).
struct Affine {
  std::vector<float> scale;
  std::vector<int32_t> zero;
  int64_t inner = 1, extent = 1;
  int32_t at(const std::vector<int32_t>& v, int64_t i) const { return v.size() == 1 ? v[0] : v[size_t(i / inner % extent)]; }
  float scale_at(int64_t i) const { return scale.size() == 1 ? scale[0] : scale[size_t(i / inner % extent)]; }
};

Affine affine(const OpContext& c, const Shape& x) {
  const HostTensor& s = c.input(1);
  if (s.dtype != DataType::Float32) c.fail("the scale must be float32 (got " + std::string(to_string(s.dtype)) + ")");
  Affine a;
  a.scale = s.as_float();
  if (a.scale.empty()) c.fail("the scale is empty");
  for (float v : a.scale)
    if (!(v > 0.0f) || !std::isfinite(v)) c.fail("the scale must be positive and finite");
  if (c.has_input(2)) {
    const HostTensor& z = c.input(2);
    if (z.shape != s.shape) c.fail("the zero point's shape " + to_string(z.shape) + " differs from the scale's " + to_string(s.shape));
    for (int64_t i = 0; i < z.count(); ++i) {
      if (z.dtype == DataType::Int8) a.zero.push_back(z.data<int8_t>()[i]);
      else if (z.dtype == DataType::UInt8) a.zero.push_back(z.data<uint8_t>()[i]);
      else if (z.dtype == DataType::Int32) a.zero.push_back(z.data<int32_t>()[i]);
      else c.fail("zero points of type " + std::string(to_string(z.dtype)) + " are not supported (int8, uint8, int32)");
    }
  } else {
    a.zero.assign(1, 0);
  }
  if (a.scale.size() > 1 || (s.shape.size() == 1 && s.shape[0] != 1)) {
    const int64_t rank = int64_t(x.size());
    const int64_t axis = normalize_axis(c, c.node.get_int("axis", 1), rank);
    if (s.shape.size() != 1 || s.shape[0] != x[size_t(axis)])
      c.fail("a per-axis scale must have " + std::to_string(x[size_t(axis)]) + " values (axis " + std::to_string(axis) +
             "), got shape " + to_string(s.shape));
    a.extent = x[size_t(axis)];
    for (int64_t d = axis + 1; d < rank; ++d) a.inner *= x[size_t(d)];
  } else if (s.count() != 1) {
    c.fail("the scale must be one value or one per index of the axis");
  }
  return a;
}

Outputs DequantizeLinear(const OpContext& c) {
  const HostTensor& x = c.input(0);
  if (x.dtype != DataType::Int8 && x.dtype != DataType::UInt8 && x.dtype != DataType::Int32)
    c.fail("input of type " + std::string(to_string(x.dtype)) + " is not supported (int8, uint8, int32)");
  const Affine a = affine(c, x.shape);
  if (c.has_input(2) && c.input(2).dtype != x.dtype) c.fail("the zero point's type differs from the input's");
  HostTensor y(DataType::Float32, x.shape);
  float* out = y.data<float>();
  for (int64_t i = 0; i < x.count(); ++i) {
    const int32_t q = x.dtype == DataType::Int8    ? x.data<int8_t>()[i]
                      : x.dtype == DataType::UInt8 ? x.data<uint8_t>()[i]
                                                   : x.data<int32_t>()[i];
    out[i] = float(int64_t(q) - a.at(a.zero, i)) * a.scale_at(i);
  }
  return single(std::move(y));
}

Outputs QuantizeLinear(const OpContext& c) {
  const HostTensor& x = c.input(0);
  if (x.dtype != DataType::Float32) c.fail("input of type " + std::string(to_string(x.dtype)) + " is not supported (float32)");
  const Affine a = affine(c, x.shape);
  const DataType out_type = c.has_input(2) ? c.input(2).dtype : DataType::UInt8;
  if (out_type != DataType::Int8 && out_type != DataType::UInt8) c.fail("only int8 and uint8 outputs are supported");
  const int32_t lo = out_type == DataType::Int8 ? -128 : 0, hi = out_type == DataType::Int8 ? 127 : 255;
  HostTensor y(out_type, x.shape);
  const float* in = x.data<float>();
  for (int64_t i = 0; i < x.count(); ++i) {
    // Rounded half to even (the default rounding mode), then saturated.
    const double r = double(std::nearbyint(in[i] / a.scale_at(i))) + a.at(a.zero, i);
    const int32_t q = std::isnan(r) ? 0 : int32_t(std::min<double>(std::max<double>(r, lo), hi));
    if (out_type == DataType::Int8) y.data<int8_t>()[i] = int8_t(q);
    else y.data<uint8_t>()[i] = uint8_t(q);
  }
  return single(std::move(y));
}

}  // namespace

void register_quantize(OpTable& t) {
  t["QuantizeLinear"] = {QuantizeLinear, {"axis"}};
  t["DequantizeLinear"] = {DequantizeLinear, {"axis"}};
}

}  // namespace texplan::reference
