// The node and tensor bookkeeping that import rewrites share (rewrites.h).
#include <algorithm>

#include "import/rewrites.h"

namespace texplan {

int RewriteNodes::tensor(const Shape& shape, DataType dtype) {
  Tensor t;
  do t.name = n_.name + "/" + tag_ + "_" + std::to_string(tensors_++);
  while (g_.find(t.name) >= 0);
  t.dtype = dtype;
  t.shape = shape;
  return g_.add_tensor(std::move(t));
}

int RewriteNodes::int64_constant(const std::vector<int64_t>& values) {
  HostTensor v(DataType::Int64, {int64_t(values.size())});
  std::copy(values.begin(), values.end(), v.data<int64_t>());
  return constant(std::move(v));
}

int RewriteNodes::float_scalar(float value) {
  HostTensor v(DataType::Float32, {});
  v.data<float>()[0] = value;
  return constant(std::move(v));
}

int RewriteNodes::constant(HostTensor value) {
  const int id = tensor(value.shape, value.dtype);
  Tensor& t = g_.tensors[id];
  t.is_constant = true;
  t.has_data = !value.bytes.empty() || element_count(value.shape) == 0;
  if (t.has_data) t.value = std::move(value);
  return id;
}

Node& RewriteNodes::add(const std::string& op, std::vector<int> inputs, std::vector<int> outputs) {
  Node m;
  m.name = n_.name + "/" + op + "_" + std::to_string(nodes_.size());
  m.op_type = op;
  m.inputs = std::move(inputs);
  m.outputs = std::move(outputs);
  nodes_.push_back(std::move(m));
  return nodes_.back();
}

int RewriteNodes::reshape(int t, const Shape& shape) {
  if (g_.tensors[t].shape == shape) return t;
  const int target = int64_constant(shape);
  const int out = tensor(shape, g_.tensors[t].dtype);
  // A 0 in the target is a 0 dim, not ONNX's "copy the input's dim".
  Node& m = add("Reshape", {t, target}, {out});
  if (std::count(shape.begin(), shape.end(), 0)) m.attrs["allowzero"] = Attribute::of_int(1);
  return out;
}

int replace_nodes(Graph& g, const std::function<bool(const Node&, RewriteNodes&)>& lower, const std::string& tag) {
  std::vector<Node> nodes;
  int replaced = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node n = g.nodes[i];  // a copy: lowering adds tensors, not nodes, to g
    RewriteNodes r(g, n, tag);
    if (!lower(n, r)) {
      nodes.push_back(n);
      continue;
    }
    for (Node& m : r.take()) nodes.push_back(std::move(m));
    ++replaced;
  }
  if (replaced) {
    g.nodes = std::move(nodes);
    g.topological_sort();  // sets the new nodes' producers
    g.remove_dead_nodes();
  }
  return replaced;
}

}  // namespace texplan
