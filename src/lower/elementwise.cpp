// Unary, binary (numpy broadcasting), Where and Cast lowerings.
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "lower/opencl_cpu/lowerings.h"
#include "lower/ops.h"

namespace texplan::lower {

namespace {
bool all_float(const NodeBuilder& b) {
  for (int i = 0; i < b.inputs(); ++i)
    if (b.has_in(i) && b.in(i).dtype != DataType::Float32) return false;
  return b.out(0).dtype == DataType::Float32;
}

// Clip bound: attribute (opset < 11), constant input (opset >= 11), or none.
bool clip_bound(const NodeBuilder& b, const char* attr, int input, float& v) {
  if (b.node.has(attr)) {
    v = b.node.get_float(attr, v);
    return true;
  }
  if (!b.has_in(input)) return true;
  const HostTensor* c = b.constant(input);
  if (!c || c->count() != 1) return false;  // runtime bound: CPU
  v = c->as_float()[0];
  return true;
}
}  // namespace

bool lower_unary(NodeBuilder& b) {
  if (!all_float(b) || b.inputs() < 1) return false;
  const std::string& op = b.node.op_type;
  float p0 = 0, p1 = 0;
  const char* k = nullptr;
  if (op == "Relu") k = "relu";
  else if (op == "LeakyRelu") k = "leaky_relu", p0 = b.node.get_float("alpha", 0.01f);
  else if (op == "Clip") {
    k = "clip";
    p0 = -std::numeric_limits<float>::infinity();
    p1 = std::numeric_limits<float>::infinity();
    if (!clip_bound(b, "min", 1, p0) || !clip_bound(b, "max", 2, p1)) return false;
  } else if (op == "Sigmoid") k = "sigmoid";
  else if (op == "Tanh") k = "tanh_f";
  else if (op == "HardSigmoid") k = "hard_sigmoid", p0 = b.node.get_float("alpha", 0.2f), p1 = b.node.get_float("beta", 0.5f);
  else if (op == "HardSwish") k = "hard_swish";
  else if (op == "Erf") k = "erf_f";
  else if (op == "Gelu") {
    std::string a = b.node.get_string("approximate", "none");
    if (a != "none" && a != "tanh") return false;
    k = a == "none" ? "gelu" : "gelu_tanh";
  } else if (op == "Exp") k = "exp_f";
  else if (op == "Log") k = "log_f";
  else if (op == "Neg") k = "neg";
  else if (op == "Abs") k = "abs_f";
  else if (op == "Reciprocal") k = "reciprocal";
  else if (op == "Sqrt") k = "sqrt_f";
  else if (op == "Floor") k = "floor_f";
  else if (op == "Round") k = "round_f";
  else if (op == "Ceil") k = "ceil_f";
  else if (op == "Elu") k = "elu", p0 = b.node.get_float("alpha", 1.0f);
  else if (op == "Softplus") k = "softplus";
  else if (op == "Sin") k = "sin_f";
  else if (op == "Cos") k = "cos_f";
  else return false;
  int64_t n = b.out(0).shape.empty() ? 1 : element_count(b.out(0).shape);
  b.launch("elementwise.cl", k, linear_range(n), b.arg_in(0), b.arg_out(0), i32(n), p0, p1);
  return true;
}

bool lower_binary(NodeBuilder& b) {
  if (b.inputs() != 2 || !b.has_in(0) || !b.has_in(1)) return false;
  const std::string& op = b.node.op_type;
  DataType t = b.in(0).dtype;
  if (b.in(1).dtype != t || (t != DataType::Float32 && t != DataType::Int64)) return false;
  static const std::map<std::string, std::string> names = {
      {"Add", "add"}, {"Sub", "sub"}, {"Mul", "mul"}, {"Div", "div"}, {"Pow", "pow"},
      {"Max", "max"}, {"Min", "min"}, {"Equal", "equal"}, {"Less", "less"}, {"Greater", "greater"}};
  auto it = names.find(op);
  if (it == names.end() || (op == "Pow" && t != DataType::Float32)) return false;
  std::string k = it->second + (t == DataType::Float32 ? "_f32" : "_i64");

  const Shape& out = b.out(0).shape;
  int64_t n = element_count(out);
  if (b.in(0).shape == out && b.in(1).shape == out) {
    b.launch("elementwise.cl", k.c_str(), linear_range(n), b.arg_in(0), b.arg_in(1), b.arg_out(0), i32(n));
    return true;
  }
  Strided s = collapse({out, {contiguous_strides(out), broadcast_strides(b.in(0).shape, out),
                              broadcast_strides(b.in(1).shape, out)}});
  if (s.dims.size() == 2 && n > 0 && t == DataType::Float32 && b.device_type() == "cpu" && !b.gpu_kernels_forced()) {
    // PoCL: a tensor and one value per row (per-channel factors, squeeze-excitation)
    const std::vector<int64_t> rows_of = {s.dims[1], 1}, per_row = {1, 0};
    if (s.strides[1] == rows_of && s.strides[2] == per_row &&
        launch_channel_binary_cpu(b, b.arg_in(0), b.arg_in(1), b.arg_out(0), s.dims[0], s.dims[1], op, false))
      return true;
    if (s.strides[2] == rows_of && s.strides[1] == per_row &&
        launch_channel_binary_cpu(b, b.arg_in(1), b.arg_in(0), b.arg_out(0), s.dims[0], s.dims[1], op, true))
      return true;
  }
  if (s.dims.size() == 1 && n > 0 && t == DataType::Float32 && b.device_type() == "cpu" && !b.gpu_kernels_forced()) {
    // PoCL: a tensor and a scalar (attention's scaling), as one row of the per-row kernel
    const std::vector<int64_t> all = {1}, scalar = {0};
    if (s.strides[1] == all && s.strides[2] == scalar &&
        launch_channel_binary_cpu(b, b.arg_in(0), b.arg_in(1), b.arg_out(0), 1, n, op, false))
      return true;
    if (s.strides[2] == all && s.strides[1] == scalar &&
        launch_channel_binary_cpu(b, b.arg_in(1), b.arg_in(0), b.arg_out(0), 1, n, op, true))
      return true;
  }
  k += "_bc";
  b.launch("elementwise.cl", k.c_str(), linear_range(n), b.arg_in(0), b.arg_in(1), b.arg_out(0), i32(n),
           to_dims(s.dims, 1), to_dims(s.strides[1], 0), to_dims(s.strides[2], 0));
  return true;
}

bool lower_where(NodeBuilder& b) {
  if (b.inputs() != 3 || b.in(0).dtype != DataType::Bool || b.in(1).dtype != b.in(2).dtype) return false;
  size_t es = b.stored_size(b.in(1).dtype);
  if (es != 2 && es != 4 && es != 8) return false;
  const Shape& out = b.out(0).shape;
  int64_t n = element_count(out);
  Strided s = collapse({out,
                        {contiguous_strides(out), broadcast_strides(b.in(0).shape, out),
                         broadcast_strides(b.in(1).shape, out), broadcast_strides(b.in(2).shape, out)}});
  b.launch("elementwise.cl", es == 2 ? "where_b2" : es == 4 ? "where_b4" : "where_b8", linear_range(n), b.arg_in(0), b.arg_in(1),
           b.arg_in(2), b.arg_out(0), i32(n), to_dims(s.dims, 1), to_dims(s.strides[1], 0),
           to_dims(s.strides[2], 0), to_dims(s.strides[3], 0));
  return true;
}

bool lower_cast(NodeBuilder& b) {
  DataType from = b.in(0).dtype, to = b.out(0).dtype;
  int64_t n = element_count(b.out(0).shape);
  if (from == to) {
    launch_copy(b, b.arg_in(0), b.arg_out(0), from, {{n}, {{1}, {1}}});
    return true;
  }
  auto code = [](DataType t) -> const char* {
    switch (t) {
      case DataType::Float32: return "f32";
      case DataType::Int64: return "i64";
      case DataType::Int32: return "i32";
      case DataType::Bool: return "bool";
      default: return nullptr;
    }
  };
  if (!code(from) || !code(to)) return false;
  std::string k = std::string("cast_") + code(from) + "_" + code(to);
  static const std::set<std::string> kernels = {"cast_f32_i64", "cast_i64_f32", "cast_f32_i32", "cast_i32_f32",
                                                "cast_i64_i32", "cast_i32_i64", "cast_f32_bool", "cast_i64_bool",
                                                "cast_bool_f32", "cast_bool_i64"};
  if (!kernels.count(k)) return false;
  b.launch("elementwise.cl", k.c_str(), linear_range(n), b.arg_in(0), b.arg_out(0), i32(n));
  return true;
}

}  // namespace texplan::lower
