// Nodes that keep every element where it was become Reshapes, which the
// plan treats as views of their input (no kernel, no storage): Transposes
// that move only size-1 dims (BERT's attention as torch exports it has two
// per layer, [1, S, D] <-> [S, 1, D]) and pools of 1x1 windows, stride 1,
// no padding (VGG's adaptive average pool of its 7x7 maps to 7x7).
#include <string>

#include "optimize/passes.h"

namespace texplan {

namespace {

// Whether node n moves no element: output i is input i.
bool keeps_elements(const Graph& g, const Node& n) {
  const Shape& in = g.tensors[n.inputs[0]].shape;
  const Shape& out = g.tensors[n.outputs[0]].shape;
  if (out.size() != in.size()) return false;
  const int64_t rank = int64_t(in.size());
  if (n.op_type == "Transpose") {
    std::vector<int64_t> perm = n.get_ints("perm");
    if (perm.empty())
      for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
    if (int64_t(perm.size()) != rank) return false;
    int64_t last = -1;
    for (int64_t p : perm) {
      if (p < 0 || p >= rank) return false;
      if (in[size_t(p)] == 1) continue;
      if (p < last) return false;
      last = p;
    }
    return true;
  }
  if (n.op_type == "AveragePool" || n.op_type == "MaxPool") {
    auto all = [](const std::vector<int64_t>& v, int64_t x) {
      for (int64_t e : v)
        if (e != x) return false;
      return true;
    };
    return in == out && rank >= 3 && n.get_string("auto_pad", "NOTSET") == "NOTSET" &&
           all(n.get_ints("kernel_shape", {0}), 1) && all(n.get_ints("strides", {1}), 1) &&
           all(n.get_ints("pads", {0}), 0) && all(n.get_ints("dilations", {1}), 1);
  }
  return false;
}

}  // namespace

int elements_in_place_to_views(Graph& g) {
  int made = 0;
  for (Node& n : g.nodes) {
    if (n.inputs.size() != 1 || n.outputs.size() != 1 || n.inputs[0] < 0 || n.outputs[0] < 0 ||
        !keeps_elements(g, n))
      continue;
    const Shape out = g.tensors[n.outputs[0]].shape;
    const int64_t rank = int64_t(out.size());
    Tensor shape;
    shape.name = n.name + "/view_shape";
    for (int k = 1; g.find(shape.name) >= 0; ++k) shape.name = n.name + "/view_shape_" + std::to_string(k);
    shape.dtype = DataType::Int64;
    shape.shape = {rank};
    shape.is_constant = shape.has_data = true;
    shape.value = HostTensor(DataType::Int64, {rank});
    for (int64_t i = 0; i < rank; ++i) shape.value.data<int64_t>()[i] = out[size_t(i)];
    const int id = g.add_tensor(shape);
    n.op_type = "Reshape";
    n.attrs.clear();
    n.inputs.push_back(id);
    ++made;
  }
  return made;
}

}  // namespace texplan
