// Texture lowerings (texture_conv.cl, texture_ops.cl): nodes whose 4D
// activations are textures, chosen by optimize/storage.h. Constants stay
// buffers; convolution weights are packed by 4 output channels at prepare
// time (layouts in texture_conv.cl).
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include "graph/epilogue.h"
#include "kernels/kernel_sources.h"
#include "lower/epilogue_cl.h"
#include "lower/ops.h"

namespace texplan::lower {
namespace {

struct Nchw {
  int64_t N = 1, C = 1, H = 1, W = 1;
  int64_t C4() const { return ceil_div(C, 4); }
};
Nchw nchw(const Shape& s) {
  Shape p = s;
  while (p.size() < 4) p.insert(p.begin(), 1);
  return {p[0], p[1], p[2], p[3]};
}

Source texture_source(const NodeBuilder& b, const char* file, std::string defines = "", std::string prelude = "") {
  if (b.images_1d()) defines += " -DTEX1D";
  return Source(file, defines, prelude + "\n" + kernels::sources().at("texture_common.cl"));
}

TextureArg image_of(const NodeBuilder& b, int tensor, const Tensor& t) {
  TextureArg m = b.image(tensor);
  if (!m.mem) throw Error("tensor " + t.name + " is not a texture, but its node runs in texture form");
  return m;
}
TextureArg tex_in(const NodeBuilder& b, int i) { return image_of(b, b.node.inputs.at(i), b.in(i)); }
TextureArg tex_out(const NodeBuilder& b) { return image_of(b, b.node.outputs.at(0), b.out(0)); }

// One work-item per pixel of a W x H x slices grid.
Range pixels(int64_t w, int64_t h, int64_t slices) {
  Range r;
  r.dims = 3;
  r.global[0] = size_t(std::max<int64_t>(1, w));
  r.global[1] = size_t(std::max<int64_t>(1, h));
  r.global[2] = size_t(std::max<int64_t>(1, slices));
  return r;
}

const HostTensor& weights(const NodeBuilder& b, int i) {
  const HostTensor* w = b.constant(i);
  if (!w) throw Error("weights of " + b.in(i).name + " are not loaded");
  return *w;
}

void lower_conversion(NodeBuilder& b) {
  const Nchw s = nchw(b.out(0).shape);
  if (b.node.op_type == "BufferToTexture")
    b.launch(texture_source(b, "texture_ops.cl"), "tex_from_buffer", pixels(s.W, s.H, s.N * s.C4()), b.arg_in(0),
             tex_out(b), i32(s.C), i32(s.H), i32(s.W));
  else
    b.launch(texture_source(b, "texture_ops.cl"), "tex_to_buffer", pixels(s.W, s.H, s.N * s.C4()), tex_in(b, 0),
             b.arg_out(0), i32(s.C), i32(s.H), i32(s.W));
}

void lower_texture_conv(NodeBuilder& b) {
  const Node& n = b.node;
  const Nchw x = nchw(b.in(0).shape), y = nchw(b.out(0).shape);
  const Shape& ws = b.in(1).shape;
  const int64_t KH = ws[2], KW = ws[3], groups = n.get_int("group", 1);
  std::vector<int64_t> st = n.get_ints("strides", {1, 1}), dl = n.get_ints("dilations", {1, 1});
  const int64_t ph = spatial_pad(n, 0, 2, x.H, y.H, KH, st[0], dl[0]).begin;
  const int64_t pw = spatial_pad(n, 1, 2, x.W, y.W, KW, st[1], dl[1]).begin;
  const bool has_bias = b.has_in(2);

  std::string defines, prelude;
  const bool residual = n.op_type == "FusedConv" && b.has_in(3);
  if (n.op_type == "FusedConv") {
    Epilogue e = Epilogue::parse(n);
    if (!e.code.empty()) {
      prelude = epilogue_cl(e, std::vector<EpilogueRead>(residual ? 2 : 1, EpilogueRead::Value));
      defines += " -DTEX_EPILOGUE";
    }
    if (residual) defines += " -DTEX_RESIDUAL";
  }
  const Source src = texture_source(b, "texture_conv.cl", defines, prelude);
  const int64_t OC4 = y.C4(), C4 = x.C4(), KK = KH * KW;
  const HostTensor& wt = weights(b, 1);
  const float* w = wt.data<float>();
  // Bias by slice of 4 output channels, zero beyond OC.
  std::vector<float> bias(size_t(OC4 * 4), 0.0f);
  if (has_bias) {
    const HostTensor& bt = weights(b, 2);
    for (int64_t c = 0; c < y.C; ++c) bias[size_t(c)] = bt.data<float>()[c];
  }
  auto geometry = [&](auto&&... head) {
    return std::make_tuple(head..., cl_int(has_bias), i32(x.C), i32(x.H), i32(x.W), i32(y.C), i32(y.H), i32(y.W),
                           i32(KH), i32(KW), i32(st[0]), i32(st[1]), i32(ph), i32(pw), i32(dl[0]), i32(dl[1]));
  };

  if (groups == 1) {
    std::vector<float> packed(size_t(OC4 * C4 * 4 * KK * 4), 0.0f);
    for (int64_t oc = 0; oc < y.C; ++oc)
      for (int64_t ic = 0; ic < x.C; ++ic)
        for (int64_t k = 0; k < KK; ++k)
          packed[size_t((((oc / 4) * C4 * 4 + ic) * KK + k) * 4 + oc % 4)] = w[(oc * x.C + ic) * KK + k];
    MemArg wp = b.upload_floats(packed.data(), packed.size()), bp = b.upload_floats(bias.data(), bias.size());
    Range r = pixels(ceil_div(y.W, 4), y.H, y.N * OC4);
    std::apply([&](auto&&... a) { b.launch(src, "tex_conv2d", r, a...); },
               geometry(tex_in(b, 0), wp, bp, tex_out(b)));
  } else if (groups == x.C && y.C == x.C) {
    std::vector<float> packed(size_t(C4 * KK * 4), 0.0f);
    for (int64_t c = 0; c < x.C; ++c)
      for (int64_t k = 0; k < KK; ++k) packed[size_t(((c / 4) * KK + k) * 4 + c % 4)] = w[c * KK + k];
    MemArg wp = b.upload_floats(packed.data(), packed.size()), bp = b.upload_floats(bias.data(), bias.size());
    Range r = pixels(ceil_div(y.W, 4), y.H, y.N * C4);
    std::apply([&](auto&&... a) { b.launch(src, "tex_conv2d_depthwise", r, a...); },
               geometry(tex_in(b, 0), wp, bp, tex_out(b)));
  } else {
    TensorArg wa = b.arg_in(1), ba = has_bias ? b.arg_in(2) : b.arg_in(1);
    Range r = pixels(y.W, y.H, y.N * OC4);
    std::apply([&](auto&&... a) { b.launch(src, "tex_conv2d_grouped", r, a..., i32(groups)); },
               geometry(tex_in(b, 0), wa, ba, tex_out(b)));
  }
  if (residual) b.more_args(tex_in(b, 3));
}

float scalar_input(const NodeBuilder& b, int i, float dflt) {
  if (!b.has_in(i)) return dflt;
  return weights(b, i).as_float().at(0);
}

// tex_unary's and tex_binary's operation codes (texture_ops.cl): the ops of
// the Unary and Binary texture forms.
const std::map<std::string, cl_int> kUnaryCodes = {
    {"Relu", 0}, {"Clip", 1}, {"Sigmoid", 2}, {"HardSwish", 3}, {"HardSigmoid", 4}, {"LeakyRelu", 5}, {"Tanh", 6}};
const std::map<std::string, cl_int> kBinaryCodes = {{"Add", 0}, {"Sub", 1}, {"Mul", 2}, {"Div", 3}};

void lower_texture_unary(NodeBuilder& b) {
  const std::string& op = b.node.op_type;
  const float inf = std::numeric_limits<float>::infinity();
  const cl_int code = kUnaryCodes.at(op);
  float a = 0, c = 0;
  if (op == "Clip") {
    a = b.has_in(1) ? scalar_input(b, 1, -inf) : b.node.get_float("min", -inf);  // inputs from opset 11, else attributes
    c = b.has_in(2) ? scalar_input(b, 2, inf) : b.node.get_float("max", inf);
  } else if (op == "HardSigmoid") {
    a = b.node.get_float("alpha", 0.2f), c = b.node.get_float("beta", 0.5f);
  } else if (op == "LeakyRelu") {
    a = b.node.get_float("alpha", 0.01f);
  }
  const Nchw s = nchw(b.out(0).shape);
  b.launch(texture_source(b, "texture_ops.cl"), "tex_unary", pixels(s.W, s.H, s.N * s.C4()), tex_in(b, 0),
           tex_out(b), cl_int(code), a, c, i32(s.C), i32(s.H), i32(s.W));
}

void lower_texture_binary(NodeBuilder& b) {
  const std::string& op = b.node.op_type;
  const cl_int code = kBinaryCodes.at(op);
  const Nchw s = nchw(b.out(0).shape);
  const Nchw p = nchw(b.in(0).shape), q = nchw(b.in(1).shape);
  const Source src = texture_source(b, "texture_ops.cl");
  const Range r = pixels(s.W, s.H, s.N * s.C4());
  const bool tp = b.image(b.node.inputs[0]).mem != nullptr, tq = b.image(b.node.inputs[1]).mem != nullptr;
  auto dims = [](const Nchw& d) { return std::make_tuple(i32(d.N), i32(d.C), i32(d.H), i32(d.W)); };
  if (tp && tq) {
    std::apply([&](auto&&... a) { b.launch(src, "tex_binary", r, a...); },
               std::tuple_cat(std::make_tuple(tex_in(b, 0)), dims(p), std::make_tuple(tex_in(b, 1)), dims(q),
                              std::make_tuple(tex_out(b), code, i32(s.C), i32(s.H), i32(s.W))));
    return;
  }
  const int t = tp ? 0 : 1, k = 1 - t;  // texture operand, constant operand
  const Nchw dt = t == 0 ? p : q, dk = k == 0 ? p : q;
  std::apply([&](auto&&... a) { b.launch(src, "tex_binary_const", r, a...); },
             std::tuple_cat(std::make_tuple(tex_in(b, t)), dims(dt), std::make_tuple(b.arg_in(k)), dims(dk),
                            std::make_tuple(tex_out(b), code, cl_int(k == 0), i32(s.C), i32(s.H), i32(s.W))));
}

void lower_texture_pool(NodeBuilder& b) {
  const Node& n = b.node;
  const Nchw x = nchw(b.in(0).shape), y = nchw(b.out(0).shape);
  const Source src = texture_source(b, "texture_ops.cl");
  const bool is_max = n.op_type == "MaxPool" || n.op_type == "GlobalMaxPool";
  if (n.op_type == "GlobalAveragePool" || n.op_type == "GlobalMaxPool") {
    Range r;
    r.global[0] = size_t(std::max<int64_t>(1, x.N * x.C4()));
    b.launch(src, "tex_global_pool", r, tex_in(b, 0), tex_out(b), cl_int(is_max), i32(x.C), i32(x.H), i32(x.W));
    return;
  }
  std::vector<int64_t> k = n.get_ints("kernel_shape"), st = n.get_ints("strides", {1, 1});
  SpatialPad ph = spatial_pad(n, 0, 2, x.H, y.H, k[0], st[0], 1), pw = spatial_pad(n, 1, 2, x.W, y.W, k[1], st[1], 1);
  b.launch(src, "tex_pool", pixels(y.W, y.H, y.N * y.C4()), tex_in(b, 0), tex_out(b), cl_int(is_max),
           cl_int(n.get_int("count_include_pad", 0)), i32(x.C), i32(x.H), i32(x.W), i32(y.H), i32(y.W), i32(k[0]),
           i32(k[1]), i32(st[0]), i32(st[1]), i32(ph.begin), i32(pw.begin), i32(ph.end), i32(pw.end));
}

void lower_texture_batch_norm(NodeBuilder& b) {
  const Nchw s = nchw(b.out(0).shape);
  b.launch(texture_source(b, "texture_ops.cl"), "tex_batch_norm", pixels(s.W, s.H, s.N * s.C4()), tex_in(b, 0),
           b.arg_in(1), b.arg_in(2), b.arg_in(3), b.arg_in(4), tex_out(b), b.node.get_float("epsilon", 1e-5f),
           i32(s.C), i32(s.H), i32(s.W));
}

void lower_texture_concat(NodeBuilder& b) {
  const Nchw y = nchw(b.out(0).shape);
  const Source src = texture_source(b, "texture_ops.cl");
  const int k = b.inputs();
  bool whole = true;
  for (int i = 0; i + 1 < k; ++i) whole = whole && b.in(i).shape[1] % 4 == 0;
  if (whole) {
    int64_t offset = 0;
    for (int i = 0; i < k; ++i) {
      const Nchw x = nchw(b.in(i).shape);
      if (x.C > 0)
        b.launch(src, "tex_concat_slices", pixels(x.W, x.H, x.N * x.C4()), tex_in(b, i), i32(x.C), tex_out(b),
                 i32(y.C), i32(offset / 4), i32(y.H), i32(y.W));
      offset += x.C;
    }
    return;
  }
  if (k > 4) throw Error("texture Concat of " + std::to_string(k) + " inputs at unaligned channel offsets");
  TextureArg in[4];
  cl_int c[4] = {0, 0, 0, 0};
  for (int i = 0; i < 4; ++i) {
    in[i] = tex_in(b, std::min(i, k - 1));
    c[i] = i < k ? i32(b.in(i).shape[1]) : 0;
  }
  b.launch(src, "tex_concat_lanes", pixels(y.W, y.H, y.N * y.C4()), in[0], c[0], in[1], c[1], in[2], c[2], in[3],
           c[3], tex_out(b), cl_int(k), i32(y.C), i32(y.H), i32(y.W));
}

}  // namespace

std::map<std::string, TextureForm> texture_forms() {
  std::map<std::string, TextureForm> f = {{"Conv", TextureForm::Conv},
                                          {"FusedConv", TextureForm::FusedConv},
                                          {"MaxPool", TextureForm::Pool},
                                          {"AveragePool", TextureForm::Pool},
                                          {"GlobalAveragePool", TextureForm::GlobalPool},
                                          {"GlobalMaxPool", TextureForm::GlobalPool},
                                          {"BatchNormalization", TextureForm::BatchNorm},
                                          {"Concat", TextureForm::Concat}};
  for (const auto& [op, code] : kUnaryCodes) f[op] = TextureForm::Unary;
  for (const auto& [op, code] : kBinaryCodes) f[op] = TextureForm::Binary;
  return f;
}

void lower_texture(NodeBuilder& b) {
  const std::string& op = b.node.op_type;
  if (op == "BufferToTexture" || op == "TextureToBuffer") return lower_conversion(b);
  const TextureForm* form = texture_form(op);
  if (!form) throw Error("no texture kernel for " + op);
  switch (*form) {
    case TextureForm::Conv:
    case TextureForm::FusedConv: return lower_texture_conv(b);
    case TextureForm::Unary: return lower_texture_unary(b);
    case TextureForm::Binary: return lower_texture_binary(b);
    case TextureForm::Pool:
    case TextureForm::GlobalPool: return lower_texture_pool(b);
    case TextureForm::BatchNorm: return lower_texture_batch_norm(b);
    case TextureForm::Concat: return lower_texture_concat(b);
  }
}

}  // namespace texplan::lower
