// Transposes that move only size-1 dims keep every element where it was:
// they become Reshapes, which the plan treats as views of their input (no
// kernel, no storage). BERT's attention as torch exports it has two per
// layer ([1, S, D] <-> [S, 1, D]).
#include <string>

#include "optimize/passes.h"

namespace texplan {

int transposes_to_views(Graph& g) {
  int made = 0;
  for (Node& n : g.nodes) {
    if (n.op_type != "Transpose" || n.inputs.size() != 1 || n.outputs.size() != 1 || n.inputs[0] < 0 ||
        n.outputs[0] < 0)
      continue;
    const Shape in = g.tensors[n.inputs[0]].shape;
    const Shape out = g.tensors[n.outputs[0]].shape;
    const int64_t rank = int64_t(in.size());
    std::vector<int64_t> perm = n.get_ints("perm");
    if (perm.empty())
      for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
    if (int64_t(perm.size()) != rank || out.size() != in.size()) continue;
    bool in_order = true;
    int64_t last = -1;
    for (int64_t p : perm) {
      if (p < 0 || p >= rank) in_order = false;
      else if (in[size_t(p)] != 1) in_order = in_order && p > last, last = p;
    }
    if (!in_order) continue;
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
