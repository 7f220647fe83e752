// Pooling, reductions, Softmax and normalizations.
#include <map>
#include <set>

#include "lower/opencl_cpu/lowerings.h"
#include "lower/ops.h"

namespace texplan::lower {

namespace {
bool float_io(const NodeBuilder& b) {
  return b.in(0).dtype == DataType::Float32 && b.out(0).dtype == DataType::Float32;
}
bool extra_outputs(const NodeBuilder& b) {
  for (size_t k = 1; k < b.node.outputs.size(); ++k)
    if (b.node.outputs[k] >= 0) return true;
  return false;
}
int64_t product(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t k = from; k < to; ++k) p *= s[k];
  return p;
}
// reduce.cl's reduce_rows over `rows` contiguous rows of R: a work-group a
// row, of 64 items, or for long rows as many (to 1024 and the device's
// limit) as give each item 8-16 elements: in groups of 64 each item's loads
// are a long chain (docs/kernel-choices.md#reductions-of-long-rows-on-gpus).
void launch_reduce_rows(NodeBuilder& b, int64_t rows, int64_t R, cl_int op) {
  size_t group = 64;
  while (group < 1024 && int64_t(group) * 2 <= b.device().info().max_group_items && int64_t(group) * 16 <= R)
    group *= 2;
  const Source src("reduce.cl", group == 64 ? "" : "-DRG=" + std::to_string(group));
  b.launch(src, "reduce_rows", group_range({size_t(rows)}, {group}), b.arg_in(0), b.arg_out(0), i32(R), op);
}

}  // namespace

bool lower_pool(NodeBuilder& b) {
  const Shape &x = b.in(0).shape, &y = b.out(0).shape;
  if (!float_io(b) || extra_outputs(b) || (x.size() != 3 && x.size() != 4)) return false;
  const Node& n = b.node;
  size_t rank = x.size() - 2;
  std::vector<int64_t> k = n.get_ints("kernel_shape"), s = n.get_ints("strides", std::vector<int64_t>(rank, 1)),
                       d = n.get_ints("dilations", std::vector<int64_t>(rank, 1));
  if (k.size() != rank || s.size() != rank || d.size() != rank) return false;
  // Spatial dims as [H, W], H = 1 for 1D.
  int64_t H = 1, W = x.back(), OH = 1, OW = y.back(), KH = 1, KW = k.back(), sh = 1, sw = s.back(), dh = 1,
          dw = d.back();
  SpatialPad ph, pw = spatial_pad(n, rank - 1, rank, W, OW, KW, sw, dw);
  if (rank == 2) {
    H = x[2], OH = y[2], KH = k[0], sh = s[0], dh = d[0];
    ph = spatial_pad(n, 0, rank, H, OH, KH, sh, dh);
  }
  int64_t total = element_count(y);
  if (total == 0) return true;
  FusedTail window;  // no epilogue: Y's and X's windows, where they are a patch's
  window_output(b, window);
  window_input(b, window);
  const Source pool("pool.cl", "", window.prelude);
  if (n.op_type == "MaxPool") {
    const bool cpu = b.device_type() == "cpu" && !b.gpu_kernels_forced();
    if (cpu && KH == 3 && dh == 1 && dw == 1 && (sh == 1 || sh == 2) && (sw == 1 || sw == 2)) {
      // PoCL, 3-row windows: a plane per work-item, each input row's taps loaded once (pool.cl).
      const Source planes("pool.cl", "-DPOOL_KW=" + std::to_string(KW) + " -DPOOL_SW=" + std::to_string(sw) +
                                         " -DPOOL_SH=" + std::to_string(sh), window.prelude);
      const int64_t items = total / (OH * OW);
      b.launch(planes, "max_pool2d_planes", cpu_item_range(items), b.arg_in(0), b.arg_out(0), i32(items), i32(H),
               i32(W), i32(OH), i32(OW), i32(ph.begin), i32(pw.begin));
      window.append_args(b);
      return true;
    }
    const int64_t items = cpu ? total / OW : total;  // PoCL: a row per work-item
    b.launch(pool, cpu ? "max_pool2d_rows" : "max_pool2d", cpu ? cpu_item_range(items) : linear_range(items),
             b.arg_in(0), b.arg_out(0), i32(items), i32(H), i32(W), i32(OH), i32(OW), i32(KH), i32(KW), i32(sh),
             i32(sw), i32(ph.begin), i32(pw.begin), i32(dh), i32(dw));
    window.append_args(b);
    return true;
  }
  if (dh != 1 || dw != 1) return false;
  const bool rows = b.device_type() == "cpu" && !b.gpu_kernels_forced();  // PoCL: a row per work-item
  const int64_t items = rows ? total / OW : total;
  b.launch(pool, rows ? "avg_pool2d_rows" : "avg_pool2d", linear_range(items), b.arg_in(0), b.arg_out(0),
           i32(items), i32(H), i32(W), i32(OH), i32(OW), i32(KH), i32(KW), i32(sh), i32(sw), i32(ph.begin), i32(pw.begin), i32(ph.end),
           i32(pw.end), cl_int(n.get_int("count_include_pad", 0) != 0));
  window.append_args(b);
  return true;
}

bool lower_global_pool(NodeBuilder& b) {
  const Shape& x = b.in(0).shape;
  if (!float_io(b) || x.size() < 3) return false;
  int64_t rows = x[0] * x[1], R = product(x, 2, x.size());
  if (rows == 0) return true;
  cl_int op = b.node.op_type == "GlobalAveragePool" ? 1 : 2;
  if (op == 1 && b.device_type() == "cpu" && !b.gpu_kernels_forced()) return lower_global_avg_pool_cpu(b, rows, R);  // PoCL: lower/opencl_cpu/conv_gemm.cpp
  if (b.device_type() == "cpu" && !b.gpu_kernels_forced()) {  // PoCL: GlobalMaxPool, a row per work-item
    b.launch("reduce.cl", "reduce_rows_cpu", cpu_item_range(rows), b.arg_in(0), b.arg_out(0), i32(rows), i32(R), op);
    return true;
  }
  launch_reduce_rows(b, rows, R, op);
  return true;
}

bool lower_reduce(NodeBuilder& b) {
  if (!float_io(b)) return false;
  const Node& n = b.node;
  const Shape& x = b.in(0).shape;
  std::vector<int64_t> axes;
  if (n.has("axes")) {
    axes = n.get_ints("axes");
  } else if (b.has_in(1)) {
    if (!b.constant(1)) return false;
    axes = b.constant(1)->as_int64();
  }
  if (axes.empty() && n.get_int("noop_with_empty_axes", 0)) return lower_copy(b);
  std::set<int64_t> reduced;
  for (int64_t a : axes) reduced.insert(a < 0 ? a + int64_t(x.size()) : a);
  if (axes.empty())
    for (size_t k = 0; k < x.size(); ++k) reduced.insert(int64_t(k));
  static const std::map<std::string, int> ops = {{"ReduceSum", 0}, {"ReduceMean", 1}, {"ReduceMax", 2}, {"ReduceMin", 3}};
  cl_int op = ops.at(n.op_type);

  std::vector<int64_t> st = contiguous_strides(x);
  Strided kept, red;
  kept.strides.resize(1);
  red.strides.resize(1);
  for (size_t k = 0; k < x.size(); ++k) {
    Strided& s = reduced.count(int64_t(k)) ? red : kept;
    s.dims.push_back(x[k]);
    s.strides[0].push_back(st[k]);
  }
  kept = collapse(kept);
  red = collapse(red);
  int64_t outputs = product(kept.dims, 0, kept.dims.size()), R = product(red.dims, 0, red.dims.size());
  if (outputs == 0) return true;
  if (R == 0) return false;  // empty reduction: identity values, CPU
  // Reduced dims form the contiguous tail: each output is one row.
  if (red.dims.size() == 1 && red.strides[0][0] == 1 && b.device_type() == "cpu" && !b.gpu_kernels_forced()) {
    b.launch("reduce.cl", "reduce_rows_cpu", cpu_item_range(outputs), b.arg_in(0), b.arg_out(0), i32(outputs), i32(R),
             op);  // PoCL: a row per work-item, vectors
    return true;
  }
  if (red.dims.size() == 1 && red.strides[0][0] == 1) {
    launch_reduce_rows(b, outputs, R, op);
    return true;
  }
  b.launch("reduce.cl", "reduce_strided", linear_range(outputs), b.arg_in(0), b.arg_out(0), i32(outputs), i32(R),
           to_dims(kept.dims, 1), to_dims(kept.strides[0], 0), to_dims(red.dims, 1), to_dims(red.strides[0], 0), op);
  return true;
}

// Opset 13: softmax along `axis` (default -1). Before: over the flattened
// dims from `axis` (default 1) on.
bool lower_softmax(NodeBuilder& b) {
  if (!float_io(b)) return false;
  const Shape& x = b.in(0).shape;
  bool v13 = b.opset() == 0 || b.opset() >= 13;
  int64_t axis = b.node.get_int("axis", v13 ? -1 : 1);
  if (axis < 0) axis += int64_t(x.size());
  if (x.empty()) return false;
  int64_t outer = product(x, 0, axis), R = v13 ? x[axis] : product(x, axis, x.size()),
          inner = v13 ? product(x, axis + 1, x.size()) : 1;
  if (outer * R * inner == 0) return true;
  cl_int log = b.node.op_type == "LogSoftmax";
  if (inner == 1 && b.device_type() == "cpu" && !b.gpu_kernels_forced()) {  // PoCL: a row per work-item, vectors
    b.launch("reduce.cl", "softmax_rows_cpu", cpu_item_range(outer), b.arg_in(0), b.arg_out(0), i32(outer), i32(R), log);
    return true;
  }
  if (inner == 1)
    b.launch("reduce.cl", "softmax_rows", group_range({size_t(outer)}, {64}), b.arg_in(0), b.arg_out(0), i32(R), log);
  else
    b.launch("reduce.cl", "softmax_strided", linear_range(outer * inner), b.arg_in(0), b.arg_out(0),
             i32(outer * inner), i32(R), i32(inner), log);
  return true;
}

bool lower_batch_norm(NodeBuilder& b) {
  if (!float_io(b) || extra_outputs(b) || b.node.get_int("training_mode", 0) || b.inputs() != 5) return false;
  for (int i = 1; i < 5; ++i)
    if (b.in(i).dtype != DataType::Float32) return false;
  const Shape& x = b.in(0).shape;
  if (x.size() < 2) return false;
  int64_t n = element_count(x), C = x[1], inner = product(x, 2, x.size());
  if (n == 0) return true;
  b.launch("norm.cl", "batch_norm", linear_range(n), b.arg_in(0), b.arg_in(1), b.arg_in(2), b.arg_in(3), b.arg_in(4),
           b.arg_out(0), i32(n), i32(C), i32(inner), b.node.get_float("epsilon", 1e-5f));
  return true;
}

bool lower_layer_norm(NodeBuilder& b) {
  if (!float_io(b) || b.node.get_int("stash_type", 1) != 1) return false;
  const Shape& x = b.in(0).shape;
  int64_t axis = b.node.get_int("axis", -1);
  if (axis < 0) axis += int64_t(x.size());
  int64_t rows = product(x, 0, axis), R = product(x, axis, x.size());
  // Scale and bias must cover the whole normalized shape (no broadcasting).
  if (element_count(b.in(1).shape) != R || (b.has_in(2) && element_count(b.in(2).shape) != R)) return false;
  if (rows * R == 0) return true;
  bool has_bias = b.has_in(2);
  // Optional outputs Mean and InvStdDev, one value per row.
  auto wanted = [&](size_t k) { return b.node.outputs.size() > k && b.node.outputs[k] >= 0; };
  cl_int stats = (wanted(1) ? 1 : 0) | (wanted(2) ? 2 : 0);
  if (b.device_type() == "cpu" && !b.gpu_kernels_forced()) {  // PoCL: a row per work-item, vectors
    b.launch("norm.cl", "layer_norm_cpu", cpu_item_range(rows), b.arg_in(0), b.arg_in(1), has_bias ? b.arg_in(2) : b.arg_in(1),
             cl_int(has_bias), b.arg_out(0), wanted(1) ? b.arg_out(1) : b.arg_out(0),
             wanted(2) ? b.arg_out(2) : b.arg_out(0), stats, i32(rows), i32(R), b.node.get_float("epsilon", 1e-5f));
    return true;
  }
  b.launch("norm.cl", "layer_norm", group_range({size_t(rows)}, {64}), b.arg_in(0), b.arg_in(1),
           has_bias ? b.arg_in(2) : b.arg_in(1), cl_int(has_bias), b.arg_out(0),
           wanted(1) ? b.arg_out(1) : b.arg_out(0), wanted(2) ? b.arg_out(2) : b.arg_out(0), stats, i32(R),
           b.node.get_float("epsilon", 1e-5f));
  return true;
}

// InstanceNormalization over N x C x spatial: a work-group per (n, c) row,
// scale and bias of C values (the same kernel on CPU devices: few rows).
bool lower_instance_norm(NodeBuilder& b) {
  if (!float_io(b) || b.node.inputs.size() != 3) return false;
  const Shape& x = b.in(0).shape;
  if (x.size() < 3) return false;
  const int64_t C = x[1], rows = x[0] * C, R = product(x, 2, x.size());
  if (element_count(b.in(1).shape) != C || element_count(b.in(2).shape) != C) return false;
  if (rows * R == 0) return true;
  b.launch("norm.cl", "instance_norm", group_range({size_t(rows)}, {64}), b.arg_in(0), b.arg_in(1), b.arg_in(2),
           b.arg_out(0), i32(C), i32(R), b.node.get_float("epsilon", 1e-5f));
  return true;
}

}  // namespace texplan::lower
