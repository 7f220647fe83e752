// Shared machinery of the reference operators: the per-call context (inputs,
// attributes, errors that name the node), dtype dispatch, numpy broadcasting,
// axis normalization and the convolution/pooling window arithmetic. Every
// operator file includes this header; nothing here is repeated elsewhere.
#pragma once
#include <cstdint>
#include <cmath>
#include <cstring>
#include <limits>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "reference/reference_ops.h"

namespace texplan::reference {

// An error raised by an operator; it already names the node, so evaluate()
// passes it through unchanged (other exceptions get the node name added).
struct OpError : Error {
  using Error::Error;
};

// What an operator sees: its node, its inputs, and helpers that fail with
// "<node name> (<op>): <reason>".
class OpContext {
 public:
  OpContext(const Node& n, const std::vector<const HostTensor*>& in) : node(n), inputs_(in) {}

  const Node& node;

  OpError error(const std::string& reason) const;
  [[noreturn]] void fail(const std::string& reason) const { throw error(reason); }

  size_t input_count() const { return inputs_.size(); }
  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
  const HostTensor& input(size_t i) const;  // fails if the input is absent
  // Number of outputs the node declares (at least 1), and whether output i
  // is consumed (not an omitted optional output).
  size_t output_count() const { return node.outputs.empty() ? 1 : node.outputs.size(); }
  bool output_wanted(size_t i) const {
    return node.outputs.empty() ? i == 0 : (i < node.outputs.size() && node.outputs[i] >= 0);
  }

  // A string attribute that must be one of `allowed` (first one is the default).
  std::string choice(const std::string& attr, const std::vector<std::string>& allowed) const;
  // An integer list given as input `index` (newer opsets) or as attribute
  // `attr` (older opsets); nullopt when neither is present.
  std::optional<std::vector<int64_t>> ints_input_or_attr(size_t index, const std::string& attr) const;
  // Values of an integer input (int64/int32...).
  std::vector<int64_t> int_values(size_t index) const;
  // A one-element input read as a double (scalars like Clip's min).
  double scalar_value(size_t index) const;
  // Every value of a numeric tensor as double (small parameter tensors).
  std::vector<double> doubles(const HostTensor& t) const;

 private:
  const std::vector<const HostTensor*>& inputs_;
};

// ---- dtypes ----------------------------------------------------------------

template <class T> DataType dtype_of();
template <> inline DataType dtype_of<float>() { return DataType::Float32; }
template <> inline DataType dtype_of<double>() { return DataType::Float64; }
template <> inline DataType dtype_of<int64_t>() { return DataType::Int64; }
template <> inline DataType dtype_of<int32_t>() { return DataType::Int32; }
template <> inline DataType dtype_of<int8_t>() { return DataType::Int8; }
template <> inline DataType dtype_of<uint8_t>() { return DataType::UInt8; }

// Calls f(T{}) with T the C++ type of `t`, for the float types only.
template <class F> decltype(auto) dispatch_float(const OpContext& c, DataType t, F&& f) {
  switch (t) {
    case DataType::Float32: return f(float{});
    case DataType::Float64: return f(double{});
    default: c.fail(std::string("unsupported data type ") + to_string(t) + " (expects float32 or float64)");
  }
}

// Same for every numeric type (floats and integers; not bool, not float16).
template <class F> decltype(auto) dispatch_numeric(const OpContext& c, DataType t, F&& f) {
  switch (t) {
    case DataType::Float32: return f(float{});
    case DataType::Float64: return f(double{});
    case DataType::Int64: return f(int64_t{});
    case DataType::Int32: return f(int32_t{});
    case DataType::Int8: return f(int8_t{});
    case DataType::UInt8: return f(uint8_t{});
    default: c.fail(std::string("unsupported data type ") + to_string(t));
  }
}

// For data movement: calls f(U{}) with U an unsigned integer of the element's
// size, so one instantiation serves every dtype of that width.
template <class F> decltype(auto) dispatch_bytes(const OpContext& c, DataType t, F&& f) {
  switch (element_size(t)) {
    case 1: return f(uint8_t{});
    case 2: return f(uint16_t{});
    case 4: return f(uint32_t{});
    case 8: return f(uint64_t{});
    default: c.fail(std::string("unsupported data type ") + to_string(t));
  }
}

// ONNX TensorProto.DataType code -> DataType; fails on types texplan lacks.
DataType dtype_from_onnx(const OpContext& c, int64_t code);

// IEEE half <-> float (round to nearest even).
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
// The same over `n` values (--precision fp16's inputs, outputs and weights):
// F16C's conversions where the CPU has them, the scalar ones elsewhere; both
// round to nearest even.
void floats_to_halves(const float* f, uint16_t* h, size_t n);
void halves_to_floats(const uint16_t* h, float* f, size_t n);

void require_dtype(const OpContext& c, const HostTensor& t, DataType want, const char* what);
void require_same_dtype(const OpContext& c, const HostTensor& a, const HostTensor& b);

// ---- shapes, axes, broadcasting ---------------------------------------------

std::vector<int64_t> strides_of(const Shape& s);  // row-major element strides
int64_t product(const Shape& s, size_t begin, size_t end);

// Axis in [-rank, rank) -> [0, rank); fails otherwise.
int64_t normalize_axis(const OpContext& c, int64_t axis, int64_t rank);
// Normalizes a list of axes; fails on duplicates.
std::vector<int64_t> normalize_axes(const OpContext& c, const std::vector<int64_t>& axes, int64_t rank);

// numpy multidirectional broadcast of several shapes; fails when incompatible.
Shape broadcast_shapes(const OpContext& c, const std::vector<Shape>& shapes);
// Element strides of `in` read as `out` (0 along broadcast dimensions);
// `in` must broadcast to `out`.
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out);

// Visits every element of a tensor of shape `out` in row-major order, in runs
// along the innermost dimension. For each run it calls
//   f(out_offset, in_offsets, in_inner_strides, run_length)
// where in_offsets[k] is the element offset of operand k (described by
// strides[k], one per out dimension) at the run's start. Adjacent dimensions
// that are contiguous for every operand are merged first, so equal shapes give
// a single run over the whole tensor.
void broadcast_runs(const Shape& out, std::vector<std::vector<int64_t>> strides,
                    const std::function<void(int64_t, const int64_t*, const int64_t*, int64_t)>& f);

// out[i] = x[offset + sum_d i_d * strides[d]]: a strided view of x copied
// into a new tensor of `shape` (Slice, Tile, Expand, Transpose).
HostTensor strided_copy(const OpContext& c, const HostTensor& x, int64_t offset, const Shape& shape,
                        const std::vector<int64_t>& strides);
// Input i of a product (MatMul, FusedMatMul) as its OperandView (graph.h)
// reads it, copied into `held`; the input itself where it has none.
const HostTensor& product_operand(const OpContext& c, size_t i, HostTensor& held);
// Copies `x` broadcast to `shape` (Expand, and unidirectional broadcasts).
HostTensor broadcast_to(const OpContext& c, const HostTensor& x, const Shape& shape);
// Generic transpose: out.shape[i] = x.shape[perm[i]].
HostTensor transpose(const OpContext& c, const HostTensor& x, const std::vector<int64_t>& perm);
// The same bytes with a new shape (element counts must agree).
HostTensor reshaped(const OpContext& c, const HostTensor& x, Shape shape);
// ONNX Reshape's output shape for an input of shape `x` and the target
// `dims`: 0 copies x's dim (unless allowzero), one -1 takes what is left,
// and the element count stays. Sets `out` and returns "", or returns why it
// cannot (without the node's name). The reference Reshape and the
// validation stage both use it, so they agree on every target.
std::string reshape_target(const Shape& x, const std::vector<int64_t>& dims, bool allowzero, Shape& out);

// ---- sliding windows (Conv, ConvTranspose, pools) ---------------------------

// Spatial geometry of a windowed op, always 3-D: 1-D and 2-D ops are padded
// with leading size-1 dims (kernel 1, stride 1, no padding), so one loop nest
// serves every rank.
struct Window {
  int spatial_rank = 0;  // 1, 2 or 3 as given
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, kernel[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1}, dilation[3] = {1, 1, 1};
  int64_t pad_begin[3] = {0, 0, 0}, pad_end[3] = {0, 0, 0};
  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
  int64_t kernel_size() const { return kernel[0] * kernel[1] * kernel[2]; }
};

// A Resize or Upsample scale texplan takes: positive and at most 1e6. A NaN,
// infinite or absurd factor makes no size (its int64 cast is undefined);
// the reference, the validator and import's shape inference all ask this.
inline bool is_size_factor(double scale) { return scale > 0 && scale <= 1e6; }

// Reads kernel_shape (or `kernel` when given), strides, dilations, pads and
// auto_pad (NOTSET, SAME_UPPER, SAME_LOWER, VALID) and computes the output
// extent of a forward window op (Conv, pools). `ceil_mode` rounds the output
// size up, dropping a last window that would start in the end padding.
Window forward_window(const OpContext& c, const Shape& in_spatial, std::vector<int64_t> kernel,
                      bool ceil_mode);

// ---- sizes and indices from the model -----------------------------------------

// a + b, a - b, a * b of sizes, counts and indices a model gives; a result
// beyond int64 fails naming the node and `what` (never wraps silently).
inline int64_t checked_add(const OpContext& c, int64_t a, int64_t b, const std::string& what) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) c.fail(what + ": " + std::to_string(a) + " + " + std::to_string(b) + " overflows int64");
  return r;
}
inline int64_t checked_sub(const OpContext& c, int64_t a, int64_t b, const std::string& what) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) c.fail(what + ": " + std::to_string(a) + " - " + std::to_string(b) + " overflows int64");
  return r;
}
inline int64_t checked_mul(const OpContext& c, int64_t a, int64_t b, const std::string& what) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) c.fail(what + ": " + std::to_string(a) + " x " + std::to_string(b) + " overflows int64");
  return r;
}

// ---- integer arithmetic as ONNX means it ------------------------------------

// Signed integer + - * wrap around (two's complement), as in ONNX Runtime;
// in C++ overflow would be undefined. Floats pass through.
template <class T> inline T wrap_add(T x, T z) {
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T>)
    return T(std::make_unsigned_t<T>(x) + std::make_unsigned_t<T>(z));
  else
    return T(x + z);
}
template <class T> inline T wrap_sub(T x, T z) {
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T>)
    return T(std::make_unsigned_t<T>(x) - std::make_unsigned_t<T>(z));
  else
    return T(x - z);
}
template <class T> inline T wrap_mul(T x, T z) {
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T>)
    return T(std::make_unsigned_t<T>(x) * std::make_unsigned_t<T>(z));
  else
    return T(x * z);
}
// c + a * b, wrapping for signed integers (floats: the plain expression).
template <class T> inline T wrap_madd(T c, T a, T b) {
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T>)
    return wrap_add(c, wrap_mul(a, b));
  else
    return c + a * b;
}
// A value converted to element type R: floats into integers saturate (NaN
// gives 0) rather than being undefined when out of range.
template <class R, class V> inline R to_element(V v) {
  if constexpr (std::is_integral_v<R> && std::is_floating_point_v<V>) {
    if (std::isnan(v)) return R(0);
    if (v <= V(std::numeric_limits<R>::min())) return std::numeric_limits<R>::min();
    if (v >= V(std::numeric_limits<R>::max())) return std::numeric_limits<R>::max();
  }
  return static_cast<R>(v);
}

// ---- matrix product ---------------------------------------------------------

// C[M x N] += A[M x K] * B[K x N], all row-major with the given leading
// dimensions. Blocked so the innermost loop streams contiguous rows.
template <class T>
void gemm_accumulate(int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B, int64_t ldb,
                     T* C, int64_t ldc);

// ---- results ----------------------------------------------------------------

using Outputs = std::vector<HostTensor>;
inline Outputs single(HostTensor t) {
  Outputs o;
  o.push_back(std::move(t));
  return o;
}

}  // namespace texplan::reference
