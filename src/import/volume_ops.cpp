// Conv, MaxPool and AveragePool over three spatial dims lowered to their
// 2-D forms over frames (rewrites.h).
//
// Output frame od reads input frames od * sd - pd + kd * dd for each depth
// tap kd. With X frames-major ([N, D, C, H, W], padded in depth), tap kd's
// frames for every od are one Slice (start kd * dd, step sd), which
// reshaped to [N * OD, C, H, W] is a batch of images for the 2-D op; the
// taps' results are combined: summed for Conv (each later tap's conv adds
// the sum so far as its residual), Max for MaxPool, summed and scaled for
// AveragePool. Every device has the 2-D kernels, none has 3-D ones, and the
// CPU reference ran r3d_18 15x slower than onnxruntime.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "import/rewrites.h"
#include "reference/common.h"

namespace texplan {
namespace {

// A window over [D, H, W]: kernel k, strides s, dilations d, pads (begins,
// then ends, auto_pad resolved), and the output dims.
struct Window3 {
  int64_t N, C, D, H, W, OD, OH, OW;
  std::vector<int64_t> k, s, d, pads;
};

// The window of n over x (kernel `k`) with explicit pads, as the reference
// computes it (auto_pad resolved, ceil_mode's rule), or nothing where an
// attribute is out of range or y's dims are not the window's (the reference
// then says why when it runs the node). `ceil`: the output rounds up
// (MaxPool's ceil_mode; its depth is padded further at the end).
std::optional<Window3> window3(const Node& n, const Shape& x, const Shape& y, std::vector<int64_t> k, bool ceil) {
  if (x.size() != 5 || y.size() != 5 || k.size() != 3 || y[0] != x[0]) return std::nullopt;
  // An empty volume stays with the reference: the rewrite's Reshapes to a 0
  // dim would copy the input's dim there instead (ONNX's Reshape rule).
  if (std::count(x.begin(), x.end(), 0) || std::count(y.begin(), y.end(), 0)) return std::nullopt;
  const std::vector<const HostTensor*> no_values;  // forward_window reads attributes only
  reference::Window w;
  try {
    w = reference::forward_window(reference::OpContext(n, no_values), {x[2], x[3], x[4]}, std::move(k), ceil);
  } catch (const Error&) {
    return std::nullopt;
  }
  if (y[2] != w.out[0] || y[3] != w.out[1] || y[4] != w.out[2]) return std::nullopt;
  Window3 v;
  v.N = x[0], v.C = x[1], v.D = x[2], v.H = x[3], v.W = x[4];
  v.OD = w.out[0], v.OH = w.out[1], v.OW = w.out[2];
  v.k = {w.kernel[0], w.kernel[1], w.kernel[2]};
  v.s = {w.stride[0], w.stride[1], w.stride[2]};
  v.d = {w.dilation[0], w.dilation[1], w.dilation[2]};
  v.pads = {w.pad_begin[0], w.pad_begin[1], w.pad_begin[2], w.pad_end[0], w.pad_end[1], w.pad_end[2]};
  return v;
}

// The 2-D form's window attributes (height and width of v).
void set_window_attrs(Node& m, const Window3& v, bool dilations) {
  m.attrs["kernel_shape"] = Attribute::of_ints({v.k[1], v.k[2]});
  m.attrs["strides"] = Attribute::of_ints({v.s[1], v.s[2]});
  m.attrs["pads"] = Attribute::of_ints({v.pads[1], v.pads[2], v.pads[4], v.pads[5]});
  if (dilations) m.attrs["dilations"] = Attribute::of_ints({v.d[1], v.d[2]});
}

// The input made frames-major and padded in depth with `pad_value` (to
// cover every tap of every output frame), then per depth tap the batch of
// N * OD images it reads.
class FrameTaps {
 public:
  FrameTaps(const Node& n, const Window3& v, DataType dt, float pad_value, RewriteNodes& r) : v_(v), dt_(dt), r_(r) {
    frames_ = r.tensor({v.N, v.D, v.C, v.H, v.W}, dt);
    r.add("Transpose", {n.inputs[0]}, {frames_}).attrs["perm"] = Attribute::of_ints(kFramesMajor);
    const int64_t pd0 = v.pads[0], reach = (v.OD - 1) * v.s[0] + (v.k[0] - 1) * v.d[0] + 1;
    const int64_t pd1 = std::max<int64_t>(v.pads[3], reach - v.D - pd0);
    depth_ = v.D + pd0 + pd1;
    if (pd0 > 0 || pd1 > 0) {
      const int padded = r.tensor({v.N, depth_, v.C, v.H, v.W}, dt);
      HostTensor value(dt, {});
      if (dt == DataType::Float16) value.data<uint16_t>()[0] = reference::float_to_half(pad_value);
      else value.data<float>()[0] = pad_value;
      const int fill = r.constant(std::move(value));
      if (v.N == 1) {
        // One image: the padding frames as Expands of the value beside the
        // frames in a Concat, which the optimizer elides, so the frames'
        // producer writes them into the padded clip: a Pad would copy them
        // into it, both copies live at once.
        std::vector<int> parts;
        auto padding = [&](int64_t count) {
          const int t = r.tensor({1, count, v.C, v.H, v.W}, dt);
          r.add("Expand", {fill, r.int64_constant({1, count, v.C, v.H, v.W})}, {t});
          parts.push_back(t);
        };
        if (pd0 > 0) padding(pd0);
        parts.push_back(frames_);
        if (pd1 > 0) padding(pd1);
        r.add("Concat", parts, {padded}).attrs["axis"] = Attribute::of_int(1);
      } else {
        r.add("Pad", {frames_, r.int64_constant({0, pd0, 0, 0, 0, 0, pd1, 0, 0, 0}), fill}, {padded});
      }
      frames_ = padded;
    }
  }
  int images(int64_t kd) {
    int taps = frames_;
    const int64_t start = kd * v_.d[0];
    if (!(start == 0 && v_.s[0] == 1 && v_.OD == depth_)) {
      taps = r_.tensor({v_.N, v_.OD, v_.C, v_.H, v_.W}, dt_);
      r_.add("Slice",
             {frames_, r_.int64_constant({start}), r_.int64_constant({start + (v_.OD - 1) * v_.s[0] + 1}),
              r_.int64_constant({1}), r_.int64_constant({v_.s[0]})},
             {taps});
    }
    return r_.reshape(taps, {v_.N * v_.OD, v_.C, v_.H, v_.W});
  }
  // The images [N * OD, channels, OH, OW] back as the node's output.
  void finish(int images, int64_t channels, int output) {
    const int volume = r_.reshape(images, {v_.N, v_.OD, channels, v_.OH, v_.OW});
    r_.add("Transpose", {volume}, {output}).attrs["perm"] = Attribute::of_ints(kFramesMajor);
  }

 private:
  static inline const std::vector<int64_t> kFramesMajor = {0, 2, 1, 3, 4};  // its own inverse
  const Window3& v_;
  DataType dt_;
  RewriteNodes& r_;
  int frames_ = -1;
  int64_t depth_ = 0;
};

bool single_output(const Node& n) {
  if (n.outputs.empty() || n.outputs[0] < 0) return false;
  for (size_t i = 1; i < n.outputs.size(); ++i)
    if (n.outputs[i] >= 0) return false;  // MaxPool's Indices
  return true;
}

// W[:, :, kd] as a constant (shape only where W's bytes were not loaded).
int depth_tap_weights(const Tensor& w, int64_t kd, RewriteNodes& r) {
  const int64_t OC = w.shape[0], Cg = w.shape[1], KD = w.shape[2], KH = w.shape[3], KW = w.shape[4];
  HostTensor taps;
  taps.dtype = w.dtype;
  taps.shape = {OC, Cg, KH, KW};
  if (w.has_data) {
    taps = HostTensor(w.dtype, taps.shape);
    const size_t plane = size_t(KH * KW) * element_size(w.dtype);
    for (int64_t o = 0; o < OC * Cg; ++o)
      std::memcpy(taps.bytes.data() + size_t(o) * plane, w.value.bytes.data() + size_t(o * KD + kd) * plane, plane);
  }
  return r.constant(std::move(taps));
}

bool lower_conv(const Graph& g, const Node& n, RewriteNodes& r) {
  if (n.inputs.size() < 2 || n.inputs[0] < 0 || n.inputs[1] < 0 || !single_output(n)) return false;
  // Copies: the rewrite adds tensors to g, which moves them.
  const Tensor x = without_value(g.tensors[n.inputs[0]]), w = without_value(g.tensors[n.inputs[1]]),
               y = without_value(g.tensors[n.outputs[0]]);
  if (w.shape.size() != 5 || !w.is_constant || w.dtype != x.dtype ||
      (x.dtype != DataType::Float32 && x.dtype != DataType::Float16))
    return false;
  const int64_t OC = w.shape[0], group = n.get_int("group", 1);
  const int bias = n.inputs.size() > 2 ? n.inputs[2] : -1;
  if (bias >= 0 && g.tensors[bias].shape != Shape{OC}) return false;
  if (x.shape.size() != 5 || group < 1 || x.shape[1] != w.shape[1] * group || OC % group != 0) return false;
  const std::vector<int64_t> k = {w.shape[2], w.shape[3], w.shape[4]};
  if (n.has("kernel_shape") && n.get_ints("kernel_shape") != k) return false;
  const std::optional<Window3> v = window3(n, x.shape, y.shape, k, false);
  if (!v || y.shape[1] != OC) return false;
  FrameTaps taps(n, *v, x.dtype, 0.0f, r);
  int sum = -1;
  for (int64_t kd = 0; kd < v->k[0]; ++kd) {
    const int out = r.tensor({v->N * v->OD, OC, v->OH, v->OW}, x.dtype);
    // Each later tap's conv adds the sum so far as its residual (a
    // FusedConv, in place): left as Adds, the fuser took them all into the
    // first tap's conv, which then ran last with every tap's output live.
    std::vector<int> inputs = {taps.images(kd), depth_tap_weights(g.tensors[n.inputs[1]], kd, r)};
    if (sum >= 0) inputs.insert(inputs.end(), {-1, sum});
    else if (bias >= 0) inputs.push_back(bias);
    Node& conv = r.add(sum >= 0 ? "FusedConv" : "Conv", inputs, {out});
    set_window_attrs(conv, *v, true);
    conv.attrs["group"] = Attribute::of_int(group);
    if (sum >= 0) conv.attrs["program"] = Attribute::of_strings({"Add x0 x1"});
    sum = out;
  }
  taps.finish(sum, OC, n.outputs[0]);
  return true;
}

// MaxPool: the taps' 2-D pools of frames padded with -inf, combined by Max.
// AveragePool (not rounding up): their 2-D averages summed over the zero-
// padded frames, divided by the kernel's depth (count_include_pad) or per
// output frame by how many of its taps are inside the clip.
bool lower_pool(const Graph& g, const Node& n, RewriteNodes& r) {
  if (n.inputs.empty() || n.inputs[0] < 0 || !single_output(n)) return false;
  const Tensor x = without_value(g.tensors[n.inputs[0]]), y = without_value(g.tensors[n.outputs[0]]);
  const bool max = n.op_type == "MaxPool", ceil = n.get_int("ceil_mode", 0) != 0;
  if (x.dtype != DataType::Float32 || (!max && ceil) || (max && n.get_int("storage_order", 0) != 0)) return false;
  const std::optional<Window3> v = window3(n, x.shape, y.shape, n.get_ints("kernel_shape"), ceil);
  if (!v || y.shape[1] != v->C) return false;
  // AveragePool: 1 / the depth taps counted for each output frame
  // (batch-major images); a frame whose taps all fall in the padding is left
  // to the reference (0 / 0).
  HostTensor scale(DataType::Float32, {v->N * v->OD, 1, 1, 1});
  for (int64_t i = 0; i < v->N * v->OD && !max; ++i) {
    const int64_t od = i % v->OD;
    int64_t inside = 0;
    for (int64_t kd = 0; kd < v->k[0]; ++kd) {
      const int64_t f = od * v->s[0] - v->pads[0] + kd * v->d[0];
      inside += f >= 0 && f < v->D;
    }
    const int64_t count = n.get_int("count_include_pad", 0) ? v->k[0] : inside;
    if (count == 0) return false;
    scale.data<float>()[i] = 1.0f / float(count);
  }
  FrameTaps taps(n, *v, x.dtype, max ? -std::numeric_limits<float>::infinity() : 0.0f, r);
  const Shape images = {v->N * v->OD, v->C, v->OH, v->OW};
  int acc = -1;
  for (int64_t kd = 0; kd < v->k[0]; ++kd) {
    const int out = r.tensor(images, x.dtype);
    Node& pool = r.add(n.op_type, {taps.images(kd)}, {out});
    set_window_attrs(pool, *v, n.has("dilations"));
    if (ceil) pool.attrs["ceil_mode"] = Attribute::of_int(1);
    if (!max) pool.attrs["count_include_pad"] = Attribute::of_int(n.get_int("count_include_pad", 0));
    if (acc >= 0) {
      const int combined = r.tensor(images, x.dtype);
      r.add(max ? "Max" : "Add", {acc, out}, {combined});
      acc = combined;
    } else {
      acc = out;
    }
  }
  if (!max) {
    const int scaled = r.tensor(images, x.dtype);
    r.add("Mul", {acc, r.constant(std::move(scale))}, {scaled});
    acc = scaled;
  }
  taps.finish(acc, v->C, n.outputs[0]);
  return true;
}

}  // namespace

int lower_volume_ops(Graph& g) {
  return replace_nodes(
      g,
      [&](const Node& n, RewriteNodes& r) {
        if (n.inputs.empty() || n.inputs[0] < 0 || g.tensors[n.inputs[0]].shape.size() != 5) return false;
        if (n.op_type == "Conv") return lower_conv(g, n, r);
        if (n.op_type == "MaxPool" || n.op_type == "AveragePool") return lower_pool(g, n, r);
        return false;
      },
      "frames");
}

}  // namespace texplan
