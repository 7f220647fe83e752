// Data movement lowerings. Most are one strided copy: the host works out
// the strides once (transposed, sliced, broadcast, tiled) and the kernel
// only walks them.
#include <algorithm>
#include <string>

#include "lower/ops.h"
#include "reference/reference_ops.h"

namespace texplan::lower {

Range cpu_item_range(int64_t n) {
  size_t group = 1;
  while (group < 64 && n / int64_t(group * 2) >= 16) group *= 2;
  return linear_range(n, group);
}

namespace {
std::string sized(const char* base, size_t element_bytes) { return std::string(base) + "_b" + std::to_string(element_bytes); }

// CPU devices (PoCL): copies by contiguous runs or 16x16 tiles (shape.cl's
// copy_runs_* and transpose_tiles_*) where the collapsed walk has them;
// false leaves the copy to the per-element kernel. Per element, the index
// divisions of 4-5 dims cost more than the move
// (docs/kernel-choices.md#cpu-copies-by-runs-and-tiles).
bool launch_copy_cpu(NodeBuilder& b, const TensorArg& src, const TensorArg& dst, DataType t, const Strided& c,
                     int64_t n) {
  const size_t r = c.dims.size();
  const std::vector<int64_t>&sy = c.strides[0], &sx = c.strides[1];
  if (r == 0 || sy[r - 1] != 1) return false;
  if (sx[r - 1] == 1) {  // runs of L, in chunks of CH (about 64 items at least; chunks of 1 KiB at least)
    const int64_t L = c.dims[r - 1];
    if (L < 8) return false;
    const int64_t CH = std::min(L, std::max<int64_t>(1024 / int64_t(b.stored_size(t)), (ceil_div(n, 64) + 15) / 16 * 16));
    const int64_t chunks = ceil_div(L, CH), items = n / L * chunks;
    std::vector<int64_t> dims(c.dims.begin(), c.dims.end() - 1), oy(sy.begin(), sy.end() - 1),
        ox(sx.begin(), sx.end() - 1);
    b.launch("shape.cl", sized("copy_runs", b.stored_size(t)).c_str(), cpu_item_range(items), src, dst, i32(items), i32(chunks), i32(L), i32(CH),
             to_dims(dims, 1), to_dims(oy, 0), to_dims(ox, 0));
    return true;
  }
  // A transpose: the dim contiguous in the source, p, against the last one.
  size_t p = r;
  for (size_t k = 0; k + 1 < r; ++k)
    if (sx[k] == 1) p = k;
  if (p == r) return false;
  const int64_t A = c.dims[r - 1], B = c.dims[p];
  if (A < 4 || B < 4) return false;
  std::vector<int64_t> dims, oy, ox;
  for (size_t k = 0; k + 1 < r; ++k)
    if (k != p) dims.push_back(c.dims[k]), oy.push_back(sy[k]), ox.push_back(sx[k]);
  const int64_t tiles_a = ceil_div(A, 16), tiles_b = ceil_div(B, 16), items = n / (A * B) * tiles_a * tiles_b;
  b.launch("shape.cl", sized("transpose_tiles", b.stored_size(t)).c_str(), cpu_item_range(items), src, dst, i32(items), i32(A), i32(B),
           i32(sx[r - 1]), i32(sy[p]), i32(tiles_a), i32(tiles_b), to_dims(dims, 1), to_dims(oy, 0), to_dims(ox, 0));
  return true;
}
}  // namespace

void launch_copy(NodeBuilder& b, const TensorArg& src, const TensorArg& dst, DataType t, const Strided& s) {
  Strided c = collapse(s);
  int64_t n = 1;
  for (int64_t d : c.dims) n *= d;
  if (n == 0) return;
  const size_t es = b.stored_size(t);
  if (es != 1 && es != 2 && es != 4 && es != 8) throw Error(std::string("no copy kernel for ") + to_string(t));
  if (b.device_type() == "cpu" && !b.gpu_kernels_forced() && launch_copy_cpu(b, src, dst, t, c, n)) return;
  b.launch("shape.cl", sized("copy", b.stored_size(t)).c_str(), linear_range(n), src, dst, i32(n), to_dims(c.dims, 1), to_dims(c.strides[0], 0),
           to_dims(c.strides[1], 0));
}

namespace {
int64_t norm_axis(int64_t axis, size_t rank) { return axis < 0 ? axis + int64_t(rank) : axis; }

// Copy of a whole tensor of `shape` between contiguous locations.
void flat_copy(NodeBuilder& b, const TensorArg& src, const TensorArg& dst, DataType t, int64_t n) {
  launch_copy(b, src, dst, t, {{n}, {{1}, {1}}});
}
}  // namespace

// A shape-deciding input computed at run time (Reshape's shape, Expand's,
// Split's sizes, Slice's ends, Resize's sizes) is not trusted to agree with
// the planned shapes: such a node runs on the CPU reference, which checks
// its result against the plan before writing it.
static bool runtime_shape_input(const NodeBuilder& b, int i) { return b.has_in(i) && !b.constant(i); }

bool lower_copy(NodeBuilder& b) {
  if (b.node.op_type != "Identity" && runtime_shape_input(b, 1)) return false;
  flat_copy(b, b.arg_in(0), b.arg_out(0), b.out(0).dtype, element_count(b.out(0).shape));
  return true;
}

// Each input is copied into its slab of the output: the output viewed as
// [outer, axis, inner] with the input's axis extent at an axis offset.
bool lower_concat(NodeBuilder& b) {
  const Shape& out = b.out(0).shape;
  int64_t axis = norm_axis(b.node.get_int("axis", 0), out.size());
  // Each tensor through its storage's strides: a window (a patch's part of
  // a larger tensor) is read or written where it lies.
  const std::vector<int64_t> ost = b.take_out_window(0);
  int64_t at = 0;
  for (int i = 0; i < b.inputs(); ++i) {
    const Shape& in = b.in(i).shape;
    TensorArg dst = b.arg_out(0);
    dst.offset = i32(dst.offset + at * ost[axis]);
    launch_copy(b, b.arg_in(i), dst, b.out(0).dtype, {in, {ost, b.take_in_window(i)}});
    at += in[axis];
  }
  return true;
}

bool lower_split(NodeBuilder& b) {
  if (runtime_shape_input(b, 1)) return false;
  const Shape& in = b.in(0).shape;
  int64_t axis = norm_axis(b.node.get_int("axis", 0), in.size());
  std::vector<int64_t> ist = contiguous_strides(in);
  int64_t at = 0;
  for (size_t o = 0; o < b.node.outputs.size(); ++o) {
    if (b.node.outputs[o] < 0) continue;
    const Shape& out = b.out(int(o)).shape;
    TensorArg src = b.arg_in(0);
    src.offset = i32(src.offset + at * ist[axis]);
    launch_copy(b, src, b.arg_out(int(o)), b.in(0).dtype, {out, {contiguous_strides(out), ist}});
    at += out[axis];
  }
  return true;
}

bool lower_transpose(NodeBuilder& b) {
  const Shape& in = b.in(0).shape;
  const std::vector<int64_t> perm = transpose_perm(b.node, in.size());
  std::vector<int64_t> ist = contiguous_strides(in), src(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) src[k] = ist[perm[k]];
  const Shape& out = b.out(0).shape;
  launch_copy(b, b.arg_in(0), b.arg_out(0), b.in(0).dtype, {out, {contiguous_strides(out), src}});
  return true;
}

// starts/ends/axes/steps come from attributes (opset < 10) or constant inputs.
bool lower_slice(NodeBuilder& b) {
  const Shape& in = b.in(0).shape;
  const Shape& out = b.out(0).shape;
  std::vector<int64_t> starts, axes, steps;
  if (b.node.has("starts")) {
    starts = b.node.get_ints("starts");
    axes = b.node.get_ints("axes");
  } else {
    const HostTensor* s = b.constant(1);
    if (!s || runtime_shape_input(b, 2)) return false;
    starts = s->as_int64();
    if (b.has_in(3)) {
      if (!b.constant(3)) return false;
      axes = b.constant(3)->as_int64();
    }
    if (b.has_in(4)) {
      if (!b.constant(4)) return false;
      steps = b.constant(4)->as_int64();
    }
  }
  if (axes.empty())
    for (size_t k = 0; k < starts.size(); ++k) axes.push_back(int64_t(k));
  if (steps.empty()) steps.assign(starts.size(), 1);

  std::vector<int64_t> ist = contiguous_strides(in), src = ist;
  int64_t base = 0;
  for (size_t k = 0; k < axes.size(); ++k) {
    int64_t a = norm_axis(axes[k], in.size()), dim = in[a], st = steps[k];
    int64_t s = starts[k] < 0 ? starts[k] + dim : starts[k];
    s = st > 0 ? std::clamp<int64_t>(s, 0, dim) : std::clamp<int64_t>(s, 0, dim - 1);
    base += s * ist[a];
    src[a] = ist[a] * st;
  }
  TensorArg from = b.arg_in(0);
  from.offset = i32(from.offset + base);
  launch_copy(b, from, b.arg_out(0), b.in(0).dtype, {out, {contiguous_strides(out), src}});
  return true;
}

bool lower_expand(NodeBuilder& b) {
  if (runtime_shape_input(b, 1)) return false;
  const Shape& out = b.out(0).shape;
  launch_copy(b, b.arg_in(0), b.arg_out(0), b.in(0).dtype,
              {out, {contiguous_strides(out), broadcast_strides(b.in(0).shape, out)}});
  return true;
}

// Output dim k (= repeats[k] * in[k]) walked as two dims [repeat, in]:
// the repeat dim reads with stride 0.
bool lower_tile(NodeBuilder& b) {
  const Shape& in = b.in(0).shape;
  const HostTensor* r = b.constant(1);
  if (!r) return false;
  std::vector<int64_t> reps = r->as_int64(), ist = contiguous_strides(in), ost = contiguous_strides(b.out(0).shape);
  Strided s;
  s.strides.resize(2);
  for (size_t k = 0; k < in.size(); ++k) {
    s.dims.insert(s.dims.end(), {reps[k], in[k]});
    s.strides[0].insert(s.strides[0].end(), {in[k] * ost[k], ost[k]});
    s.strides[1].insert(s.strides[1].end(), {0, ist[k]});
  }
  launch_copy(b, b.arg_in(0), b.arg_out(0), b.in(0).dtype, s);
  return true;
}

std::optional<GatherGeometry> gather_geometry(NodeBuilder& b) {
  const Shape& data = b.in(0).shape;
  const int64_t axis = norm_axis(b.node.get_int("axis", 0), data.size());
  const DataType it = b.in(1).dtype;
  if (it != DataType::Int64 && it != DataType::Int32) return std::nullopt;
  GatherGeometry g;
  g.int64_indices = it == DataType::Int64;
  g.axis_len = data[axis];
  for (int64_t k = 0; k < axis; ++k) g.outer *= data[k];
  for (size_t k = axis + 1; k < data.size(); ++k) g.inner *= data[k];
  g.nidx = element_count(b.in(1).shape);
  g.by_rows = g.inner >= 16 && b.device_type() == "cpu" && !b.gpu_kernels_forced();  // PoCL
  if (g.count() == 0) return g;
  // Constant indices are checked here (folding may have made them so after
  // import's validation); data indices by the kernel, into the fault flags.
  if (const HostTensor* c = b.constant(1)) {
    for (int64_t k : c->as_int64())
      if (k < -data[axis] || k >= data[axis])
        throw Error("index " + std::to_string(k) + " is out of range for axis " + std::to_string(axis) + " of size " +
                    std::to_string(data[axis]));
  } else {
    if (!b.index_faults) return std::nullopt;
    g.faults = b.index_faults();
  }
  return g;
}

bool lower_gather(NodeBuilder& b) {
  const size_t es = b.stored_size(b.in(0).dtype);
  if (es != 2 && es != 4 && es != 8) return false;
  const std::optional<GatherGeometry> g = gather_geometry(b);
  if (!g) return false;
  const int64_t n = g->count();
  if (n == 0) return true;
  const MemArg faults{g->faults.mem};
  std::string suffix = std::to_string(es) + (g->int64_indices ? "_i64" : "_i32");
  if (g->by_rows) {
    const int64_t rows = g->outer * g->nidx;
    b.launch("shape.cl", ("gather_rows_b" + suffix).c_str(), cpu_item_range(rows), b.arg_in(0), b.arg_in(1),
             b.arg_out(0), i32(rows), i32(g->axis_len), i32(g->nidx), i32(g->inner), faults, g->faults.node);
    return true;
  }
  std::string k = "gather_b" + suffix;
  b.launch("shape.cl", k.c_str(), linear_range(n), b.arg_in(0), b.arg_in(1), b.arg_out(0), i32(n),
           i32(g->axis_len), i32(g->nidx), i32(g->inner), faults, g->faults.node);
  return true;
}

bool lower_pad(NodeBuilder& b) {
  if (b.in(0).dtype != DataType::Float32) return false;
  const Shape& in = b.in(0).shape;
  std::vector<int64_t> pads;
  float value = 0;
  if (b.node.has("pads")) {
    pads = b.node.get_ints("pads");
    value = b.node.get_float("value", 0.0f);
  } else {
    if (!b.constant(1)) return false;
    pads = b.constant(1)->as_int64();
    if (b.has_in(2)) {
      if (!b.constant(2)) return false;
      // An empty constant_value is no value (0), as in the reference.
      if (b.constant(2)->count() > 0) value = b.constant(2)->as_float()[0];
    }
    if (b.has_in(3)) return false;  // axes input (opset 18)
  }
  if (pads.size() != 2 * in.size()) return false;
  std::string mode = b.node.get_string("mode", "constant");
  int m = mode == "constant" ? 0 : mode == "reflect" ? 1 : mode == "edge" ? 2 : -1;
  if (m < 0) return false;
  std::vector<int64_t> begin(pads.begin(), pads.begin() + in.size());
  for (int64_t p : pads)
    if (p < 0) return false;  // negative pads crop: CPU
  const Shape& out = b.out(0).shape;
  int64_t n = element_count(out);
  // Constant pads on one axis with only 1s before it: X is one run of Y.
  int64_t axis = -1;
  for (size_t a = 0; a < in.size(); ++a)
    if (pads[a] != 0 || pads[a + in.size()] != 0) axis = axis < 0 ? int64_t(a) : int64_t(in.size());
  if (m == 0 && axis >= 0 && axis < int64_t(in.size()) &&
      std::all_of(in.begin(), in.begin() + axis, [](int64_t d) { return d == 1; })) {
    const int64_t inner = element_count(in) / std::max<int64_t>(1, in[size_t(axis)]);
    b.launch("shape.cl", "pad_flat_f32", linear_range(ceil_div(n, int64_t(16))), b.arg_in(0), b.arg_out(0), i32(n),
             i32(pads[size_t(axis)] * inner), i32(element_count(in)), value);
    return true;
  }
  // CPU devices: a row per work-item (pad_rows_f32); GPUs: an element each, coalesced.
  if (b.device_type() == "cpu" && !b.gpu_kernels_forced() && !out.empty() && out.back() >= 8) {
    const int64_t rows = n / out.back();
    b.launch("shape.cl", "pad_rows_f32", linear_range(rows), b.arg_in(0), b.arg_out(0), i32(rows), to_dims(out, 1),
             to_dims(in, 1), to_dims(contiguous_strides(in), 0), to_dims(begin, 0), cl_int(m), value);
    return true;
  }
  b.launch("shape.cl", "pad_f32", linear_range(n), b.arg_in(0), b.arg_out(0), i32(n), to_dims(out, 1),
           to_dims(in, 1), to_dims(contiguous_strides(in), 0), to_dims(begin, 0), cl_int(m), value);
  return true;
}

// 4D NCHW, nearest or linear over H and W. Scales come from the `scales`
// input when given (ONNX maps coordinates with them), else out/in.
bool lower_resize(NodeBuilder& b) {
  const Shape& in = b.in(0).shape;
  const Shape& out = b.out(0).shape;
  if (b.in(0).dtype != DataType::Float32 || in.size() != 4 || in[0] != out[0] || in[1] != out[1]) return false;
  std::string mode = b.node.get_string("mode", "nearest");
  if (mode != "nearest" && mode != "linear") return false;
  static const std::vector<std::string> coords = {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                                                  "tf_half_pixel_for_nearest"};
  static const std::vector<std::string> nearests = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  auto cm = std::find(coords.begin(), coords.end(), b.node.get_string("coordinate_transformation_mode", "half_pixel"));
  auto nm = std::find(nearests.begin(), nearests.end(), b.node.get_string("nearest_mode", "round_prefer_floor"));
  if (cm == coords.end() || nm == nearests.end()) return false;
  if (b.node.get_int("antialias", 0) != 0 || b.node.has("axes") || runtime_shape_input(b, 3)) return false;
  float sh = float(out[2]) / float(in[2]), sw = float(out[3]) / float(in[3]);
  // Opset 11+: inputs X, roi, scales, sizes; opset 10: X, scales.
  int scales_input = b.inputs() == 2 ? 1 : 2;
  if (b.has_in(scales_input) && element_count(b.in(scales_input).shape) > 0) {
    const HostTensor* s = b.constant(scales_input);
    if (!s) return false;
    std::vector<float> v = s->as_float();
    if (v.size() != 4) return false;
    sh = v[2], sw = v[3];
  }
  int64_t n = element_count(out);
  if (b.device_type() == "cpu" && !b.gpu_kernels_forced()) {  // PoCL: blocks of rows (docs/cpu-kernels.md#resize-by-rows)
    constexpr int64_t per_block = 16;
    const int64_t blocks = out[0] * out[1] * ceil_div(out[2], per_block);
    b.launch("shape.cl", "resize_rows_cpu", cpu_item_range(blocks), b.arg_in(0), b.arg_out(0), i32(blocks),
             i32(per_block), i32(in[2]), i32(in[3]), i32(out[2]), i32(out[3]), sh, sw, cl_int(cm - coords.begin()),
             cl_int(nm - nearests.begin()), cl_int(mode == "linear"));
    return true;
  }
  b.launch("shape.cl", "resize_f32", linear_range(n), b.arg_in(0), b.arg_out(0), i32(n), i32(in[2]), i32(in[3]),
           i32(out[2]), i32(out[3]), sh, sw, cl_int(cm - coords.begin()), cl_int(nm - nearests.begin()),
           cl_int(mode == "linear"));
  return true;
}

// GridSample: 4-D, bilinear or nearest, any padding (the reference's forms;
// others stay on the CPU reference, which names what it refuses).
bool lower_grid_sample(NodeBuilder& b) {
  const Shape& x = b.in(0).shape;
  const Shape& g = b.in(1).shape;
  if (b.in(0).dtype != DataType::Float32 || b.in(1).dtype != DataType::Float32 || x.size() != 4 || g.size() != 4 ||
      g[3] != 2 || g[0] != x[0])
    return false;
  const std::optional<reference::GridSampleForm> f = reference::grid_sample_form(b.node);
  if (!f) return false;
  const int64_t hwo = g[1] * g[2];
  if (element_count(b.out(0).shape) == 0) return true;
  Range r;
  r.dims = 2;
  r.global[0] = size_t(hwo), r.global[1] = size_t(x[0]);
  b.launch("shape.cl", "grid_sample_f32", r, b.arg_in(0), b.arg_in(1), b.arg_out(0), i32(x[0]), i32(x[1]), i32(x[2]),
           i32(x[3]), i32(hwo), cl_int(f->linear), cl_int(f->align_corners), cl_int(f->padding));
  return true;
}

}  // namespace texplan::lower
