// Which nodes the texture kernels (texture.cpp) cover: each op's texture
// form and that form's conditions on the node. The storage assignment asks
// through KernelCatalog::texture_kernel, so that it makes textures exactly
// where lower_texture has a kernel.
#include <algorithm>

#include "graph/epilogue.h"
#include "lower/ops.h"

namespace texplan::lower {

namespace {

bool is_act(const Graph& g, int t) { return t >= 0 && !g.tensors[t].is_constant; }
bool is_4d_float(const Tensor& t) { return t.shape.size() == 4 && t.dtype == DataType::Float32; }
bool is_float_constant(const Graph& g, int t) {
  return t >= 0 && g.tensors[t].is_constant && g.tensors[t].dtype == DataType::Float32;
}

// Every dim of `in` is 1 or equal to `out`'s (right-aligned, numpy rules).
bool broadcasts_to(const Shape& in, const Shape& out) {
  if (in.size() > out.size()) return false;
  for (size_t k = 0; k < in.size(); ++k) {
    int64_t a = in[in.size() - 1 - k], b = out[out.size() - 1 - k];
    if (a != 1 && a != b) return false;
  }
  return true;
}

bool conv_like(const Graph& g, const Node& n) {
  if (n.inputs.size() < 2 || !is_act(g, n.inputs[0]) || !is_float_constant(g, n.inputs[1])) return false;
  if (n.inputs.size() > 2 && n.inputs[2] >= 0 && !is_float_constant(g, n.inputs[2])) return false;
  const Shape& w = g.tensors[n.inputs[1]].shape;
  if (w.size() != 4) return false;
  int64_t groups = n.get_int("group", 1);
  const Shape& x = g.tensors[n.inputs[0]].shape;
  return groups > 0 && x[1] % groups == 0 && w[0] % groups == 0 && n.get_ints("strides", {1, 1}).size() == 2 &&
         n.get_ints("dilations", {1, 1}).size() == 2;
}

}  // namespace

const TextureForm* texture_form(const std::string& op) {
  static const std::map<std::string, TextureForm> forms = texture_forms();
  auto it = forms.find(op);
  return it == forms.end() ? nullptr : &it->second;
}

bool texture_kernel(const Graph& g, const Node& n) {
  if (n.op_type == "BufferToTexture" || n.op_type == "TextureToBuffer") return true;
  const TextureForm* form = texture_form(n.op_type);
  if (!form || n.decisions.elided) return false;
  // A window (a patch's part of a larger tensor, graph.h) is read and
  // written by the buffer kernels only.
  for (const auto* list : {&n.inputs, &n.outputs})
    for (int t : *list)
      if (t >= 0 && g.tensors[t].window) return false;
  // Every activation the node touches is 4D fp32.
  int acts_in = 0;
  for (int t : n.inputs)
    if (is_act(g, t)) {
      if (!is_4d_float(g.tensors[t])) return false;
      ++acts_in;
    }
  if (n.outputs.size() != 1 || n.outputs[0] < 0 || !is_4d_float(g.tensors[n.outputs[0]])) return false;
  const Shape& y = g.tensors[n.outputs[0]].shape;
  switch (*form) {
    case TextureForm::Conv: return n.inputs.size() <= 3 && conv_like(g, n);
    case TextureForm::FusedConv: {
      // Texture form covers epilogues over the convolution's value (x0) and
      // at most one operand of Y's shape (a residual, x1); no channel scale.
      if (!conv_like(g, n) || n.inputs.size() > 4 || channel_scaled(n) || channel_program(n) || shuffled_output(n))
        return false;
      int operands = 1;
      if (n.inputs.size() == 4) {
        if (!is_act(g, n.inputs[3]) || g.tensors[n.inputs[3]].shape != y) return false;
        operands = 2;
      }
      return Epilogue::parse(n).inputs() <= operands;
    }
    case TextureForm::Unary: {
      if (acts_in != 1 || !is_act(g, n.inputs[0])) return false;
      for (size_t k = 1; k < n.inputs.size(); ++k)  // Clip's min/max
        if (n.inputs[k] >= 0 && (!is_float_constant(g, n.inputs[k]) || g.tensors[n.inputs[k]].bytes() != 4 ||
                                 !g.tensors[n.inputs[k]].has_data))
          return false;
      return true;
    }
    case TextureForm::Binary: {
      if (n.inputs.size() != 2 || acts_in < 1) return false;
      for (int t : n.inputs) {
        if (t < 0) return false;
        const Tensor& x = g.tensors[t];
        if (x.dtype != DataType::Float32 || !broadcasts_to(x.shape, y)) return false;
        // A broadcast activation keeps its channels or has one; so does a constant.
        Shape s = x.shape;
        while (s.size() < 4) s.insert(s.begin(), 1);
        if (s[1] != 1 && s[1] != y[1]) return false;
      }
      return true;
    }
    case TextureForm::Pool: {
      if (acts_in != 1 || n.outputs.size() != 1) return false;
      if (n.get_ints("kernel_shape").size() != 2 || n.get_ints("strides", {1, 1}).size() != 2) return false;
      return n.get_ints("dilations", {1, 1}) == std::vector<int64_t>{1, 1};
    }
    case TextureForm::GlobalPool: return acts_in == 1;
    case TextureForm::BatchNorm: {
      if (acts_in != 1 || n.inputs.size() != 5) return false;
      for (int k = 1; k < 5; ++k)
        if (!is_float_constant(g, n.inputs[k]) || !g.tensors[n.inputs[k]].has_data) return false;
      return true;
    }
    case TextureForm::Concat: {
      int64_t axis = n.get_int("axis", 0);
      if (axis != 1 && axis != -3) return false;
      if (acts_in != int(n.inputs.size()) || acts_in < 1) return false;
      // Slices land whole when every input but the last has C % 4 == 0;
      // otherwise lanes are gathered, from at most 4 inputs.
      bool whole = true;
      for (size_t k = 0; k + 1 < n.inputs.size(); ++k) whole = whole && g.tensors[n.inputs[k]].shape[1] % 4 == 0;
      return whole || acts_in <= 4;
    }
  }
  return false;
}

}  // namespace texplan::lower
