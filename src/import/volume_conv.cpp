// Conv over three spatial dims lowered to 2-D Convs over frames (rewrites.h).
//
// Y[n, :, od] = B + sum over kd of Conv2D(X[n, :, od * sd - pd + kd * dd], W[:, :, kd]):
// with X frames-major ([N, D, C, H, W], padded with zero frames in depth),
// tap kd's input frames for every od are one Slice (start kd * dd, step
// sd), which reshaped to [N * OD, C, H, W] is a batch of images; every
// device has 2-D convolution kernels (and FusedConv's residual Add, which
// sums the taps), none has 3-D ones, and the CPU reference ran r3d_18 15x
// slower than onnxruntime.
#include <algorithm>
#include <cstring>
#include <optional>

#include "import/rewrites.h"

namespace texplan {
namespace {

struct VolumeConv {
  int64_t N, C, D, H, W, OC, Cg, KD, KH, KW, OD, OH, OW;
  std::vector<int64_t> strides, dilations, pads;  // 3, 3 and 6 (begins, then ends)
  int64_t group;
};

// The conv's dims and explicit pads, or nothing where it is not a 3-D conv
// this rewrite takes (or its output shape disagrees: the reference says why).
std::optional<VolumeConv> volume_conv(const Graph& g, const Node& n) {
  if (n.op_type != "Conv" || n.inputs.size() < 2 || n.inputs[0] < 0 || n.inputs[1] < 0 || n.outputs.size() != 1 ||
      n.outputs[0] < 0)
    return std::nullopt;
  const Tensor &x = g.tensors[n.inputs[0]], &w = g.tensors[n.inputs[1]], &y = g.tensors[n.outputs[0]];
  if (x.shape.size() != 5 || w.shape.size() != 5 || y.shape.size() != 5 || !w.is_constant || w.dtype != x.dtype ||
      (x.dtype != DataType::Float32 && x.dtype != DataType::Float16))
    return std::nullopt;
  if (n.inputs.size() > 2 && n.inputs[2] >= 0 && g.tensors[n.inputs[2]].shape != Shape{w.shape[0]}) return std::nullopt;
  VolumeConv v;
  v.N = x.shape[0], v.C = x.shape[1], v.D = x.shape[2], v.H = x.shape[3], v.W = x.shape[4];
  v.OC = w.shape[0], v.Cg = w.shape[1], v.KD = w.shape[2], v.KH = w.shape[3], v.KW = w.shape[4];
  v.group = n.get_int("group", 1);
  v.strides = n.get_ints("strides", {1, 1, 1});
  v.dilations = n.get_ints("dilations", {1, 1, 1});
  v.pads = n.get_ints("pads", {0, 0, 0, 0, 0, 0});
  if (v.group < 1 || v.C != v.Cg * v.group || v.OC % v.group != 0 || v.strides.size() != 3 ||
      v.dilations.size() != 3 || v.pads.size() != 6)
    return std::nullopt;
  const std::vector<int64_t> in = {v.D, v.H, v.W}, k = {v.KD, v.KH, v.KW};
  for (int d = 0; d < 3; ++d)
    if (v.strides[d] < 1 || v.dilations[d] < 1 || v.pads[d] < 0 || v.pads[d + 3] < 0 || k[d] < 1) return std::nullopt;
  const std::string auto_pad = n.get_string("auto_pad", "NOTSET");
  if (auto_pad == "VALID") {
    std::fill(v.pads.begin(), v.pads.end(), 0);
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (int d = 0; d < 3; ++d) {
      const int64_t out = (in[d] + v.strides[d] - 1) / v.strides[d];
      const int64_t total = std::max<int64_t>(0, (out - 1) * v.strides[d] + (k[d] - 1) * v.dilations[d] + 1 - in[d]);
      const int64_t small = total / 2;
      v.pads[d] = auto_pad == "SAME_UPPER" ? small : total - small;
      v.pads[d + 3] = total - v.pads[d];
    }
  } else if (auto_pad != "NOTSET") {
    return std::nullopt;
  }
  int64_t out[3];
  for (int d = 0; d < 3; ++d) {
    const int64_t span = in[d] + v.pads[d] + v.pads[d + 3] - (k[d] - 1) * v.dilations[d] - 1;
    if (span < 0) return std::nullopt;
    out[d] = span / v.strides[d] + 1;
  }
  v.OD = out[0], v.OH = out[1], v.OW = out[2];
  if (y.shape != Shape{v.N, v.OC, v.OD, v.OH, v.OW}) return std::nullopt;
  return v;
}

// W[:, :, kd] as a constant (shape only where W's bytes were not loaded).
int depth_tap_weights(const Tensor& w, const VolumeConv& v, int64_t kd, RewriteNodes& r) {
  const Shape shape = {v.OC, v.Cg, v.KH, v.KW};
  HostTensor taps;
  taps.dtype = w.dtype;
  if (w.has_data) {
    taps = HostTensor(w.dtype, shape);
    const size_t plane = size_t(v.KH * v.KW) * element_size(w.dtype);
    for (int64_t o = 0; o < v.OC * v.Cg; ++o)
      std::memcpy(taps.bytes.data() + size_t(o) * plane, w.value.bytes.data() + size_t(o * v.KD + kd) * plane, plane);
  }
  return r.constant(shape, std::move(taps));
}

void lower(const Graph& g, const Node& n, const VolumeConv& v, RewriteNodes& r) {
  const Tensor& x = g.tensors[n.inputs[0]];
  const DataType dt = x.dtype;
  const std::vector<int64_t> frames_major = {0, 2, 1, 3, 4};  // its own inverse
  int frames = r.tensor({v.N, v.D, v.C, v.H, v.W}, dt);
  r.add("Transpose", {n.inputs[0]}, {frames}).attrs["perm"] = Attribute::of_ints(frames_major);
  const int64_t pd0 = v.pads[0], pd1 = v.pads[3], Dp = v.D + pd0 + pd1;
  if (pd0 > 0 || pd1 > 0) {
    const int padded = r.tensor({v.N, Dp, v.C, v.H, v.W}, dt);
    r.add("Pad", {frames, r.int64_constant({0, pd0, 0, 0, 0, 0, pd1, 0, 0, 0})}, {padded});
    frames = padded;
  }
  const int bias = n.inputs.size() > 2 ? n.inputs[2] : -1;
  int sum = -1;
  for (int64_t kd = 0; kd < v.KD; ++kd) {
    const int64_t start = kd * v.dilations[0], end = start + (v.OD - 1) * v.strides[0] + 1;
    int taps = frames;
    if (!(start == 0 && v.strides[0] == 1 && v.OD == Dp)) {
      taps = r.tensor({v.N, v.OD, v.C, v.H, v.W}, dt);
      r.add("Slice", {frames, r.int64_constant({start}), r.int64_constant({end}), r.int64_constant({1}),
                      r.int64_constant({v.strides[0]})},
            {taps});
    }
    const int images = r.reshape(taps, {v.N * v.OD, v.C, v.H, v.W});
    const int out = r.tensor({v.N * v.OD, v.OC, v.OH, v.OW}, dt);
    // Each later tap's conv adds the sum so far as its residual (a FusedConv,
    // in place): left as Adds, the fuser took them all into the first tap's
    // conv, which then ran last with every tap's output live at once.
    std::vector<int> inputs = {images, depth_tap_weights(g.tensors[n.inputs[1]], v, kd, r)};
    if (sum >= 0) inputs.insert(inputs.end(), {-1, sum});
    else if (bias >= 0) inputs.push_back(bias);
    Node& conv = r.add(sum >= 0 ? "FusedConv" : "Conv", inputs, {out});
    conv.attrs["strides"] = Attribute::of_ints({v.strides[1], v.strides[2]});
    conv.attrs["dilations"] = Attribute::of_ints({v.dilations[1], v.dilations[2]});
    conv.attrs["pads"] = Attribute::of_ints({v.pads[1], v.pads[2], v.pads[4], v.pads[5]});
    conv.attrs["kernel_shape"] = Attribute::of_ints({v.KH, v.KW});
    conv.attrs["group"] = Attribute::of_int(v.group);
    if (sum >= 0) conv.attrs["program"] = Attribute::of_strings({"Add x0 x1"});
    sum = out;
  }
  const int volume = r.reshape(sum, {v.N, v.OD, v.OC, v.OH, v.OW});
  r.add("Transpose", {volume}, {n.outputs[0]}).attrs["perm"] = Attribute::of_ints(frames_major);
}

}  // namespace

int lower_volume_convs(Graph& g) {
  return replace_nodes(
      g,
      [&](const Node& n, RewriteNodes& r) {
        const std::optional<VolumeConv> v = volume_conv(g, n);
        if (!v) return false;
        lower(g, n, *v, r);
        return true;
      },
      "frames");
}

}  // namespace texplan
