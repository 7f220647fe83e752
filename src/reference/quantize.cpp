// QuantizeLinear and DequantizeLinear (int8/uint8, per tensor or per axis):
// what quantized ("QDQ") models carry around each quantized operator. The
// importer folds them on constant weights and turns Quantize-Dequantize
// pairs on activations into float arithmetic (import/quantize_pairs.cpp).
#include <cmath>

#include "reference/ops.h"
#include "reference/quantize.h"

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

bool holds_values(const HostTensor& t) { return t.bytes.size() == size_t(t.count()) * element_size(t.dtype); }

// The per-axis case's axis, or -1 per tensor.
int64_t scale_axis(const OpContext& c, const Shape& x) {
  const HostTensor& s = c.input(1);
  if (s.count() == 1) return -1;
  const int64_t rank = int64_t(x.size());
  const int64_t axis = normalize_axis(c, c.node.get_int("axis", 1), rank);
  if (s.shape.size() != 1 || s.shape[0] != x[size_t(axis)])
    c.fail("a per-axis scale must have " + std::to_string(x[size_t(axis)]) + " values (axis " + std::to_string(axis) +
           "), got shape " + to_string(s.shape));
  return axis;
}

// After quantize_output_type's checks.
Affine affine(const OpContext& c, const Shape& x) {
  const HostTensor& s = c.input(1);
  Affine a;
  a.scale = s.as_float();
  if (c.has_input(2)) {
    const HostTensor& z = c.input(2);
    for (int64_t i = 0; i < z.count(); ++i) {
      if (z.dtype == DataType::Int8) a.zero.push_back(z.data<int8_t>()[i]);
      else if (z.dtype == DataType::UInt8) a.zero.push_back(z.data<uint8_t>()[i]);
      else a.zero.push_back(z.data<int32_t>()[i]);
    }
  } else {
    a.zero.assign(1, 0);
  }
  if (const int64_t axis = scale_axis(c, x); axis >= 0) {
    a.extent = x[size_t(axis)];
    for (int64_t d = axis + 1; d < int64_t(x.size()); ++d) a.inner *= x[size_t(d)];
  }
  return a;
}

}  // namespace

DataType quantize_output_type(const OpContext& c, bool dequantize) {
  const HostTensor& x = c.input(0);
  if (dequantize && x.dtype != DataType::Int8 && x.dtype != DataType::UInt8 && x.dtype != DataType::Int32)
    c.fail("input of type " + std::string(to_string(x.dtype)) + " is not supported (int8, uint8, int32)");
  if (!dequantize && x.dtype != DataType::Float32)
    c.fail("input of type " + std::string(to_string(x.dtype)) + " is not supported (float32)");
  const HostTensor& s = c.input(1);
  if (s.dtype != DataType::Float32) c.fail("the scale must be float32 (got " + std::string(to_string(s.dtype)) + ")");
  if (s.count() == 0) c.fail("the scale is empty");
  scale_axis(c, x.shape);
  if (holds_values(s))
    for (float v : s.as_float())
      if (!(v > 0.0f) || !std::isfinite(v)) c.fail("the scale must be positive and finite (got " + std::to_string(v) + ")");
  if (c.has_input(2)) {
    const HostTensor& z = c.input(2);
    if (z.shape != s.shape) c.fail("the zero point's shape " + to_string(z.shape) + " differs from the scale's " + to_string(s.shape));
    if (z.dtype != DataType::Int8 && z.dtype != DataType::UInt8 && z.dtype != DataType::Int32)
      c.fail("zero points of type " + std::string(to_string(z.dtype)) + " are not supported (int8, uint8, int32)");
    if (dequantize && z.dtype != x.dtype) c.fail("the zero point's type differs from the input's");
    if (!dequantize && z.dtype == DataType::Int32) c.fail("only int8 and uint8 outputs are supported");
  }
  if (dequantize) return DataType::Float32;
  return c.has_input(2) ? c.input(2).dtype : DataType::UInt8;
}

namespace {

Outputs DequantizeLinear(const OpContext& c) {
  const HostTensor& x = c.input(0);
  quantize_output_type(c, true);
  const Affine a = affine(c, x.shape);
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
  const DataType out_type = quantize_output_type(c, false);
  const Affine a = affine(c, x.shape);
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
