// A graph built node by node for kernel and storage tests, with static
// shapes given by the test and seeded random constants.
#pragma once
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "test_util.h"

namespace texplan::test {

struct GraphBuilder {
  Graph g;
  uint32_t seed = 1;
  explicit GraphBuilder(std::string model = "test") {
    g.model_name = std::move(model);
    g.opset = 13;
  }
  int input(Shape s) {
    Tensor t;
    t.name = "x" + std::to_string(g.tensors.size());
    t.shape = std::move(s);
    t.is_input = true;
    int id = g.add_tensor(t);
    g.inputs.push_back(id);
    return id;
  }
  int constant(Shape s, float lo = -1, float hi = 1) {
    Tensor t;
    t.name = "w" + std::to_string(g.tensors.size());
    t.value = random_tensor(s, lo, hi, seed++);
    t.shape = std::move(s);
    t.is_constant = t.has_data = true;
    return g.add_tensor(t);
  }
  int node(const std::string& op, std::vector<int> in, Shape out, std::map<std::string, Attribute> attrs = {}) {
    Tensor t;
    t.name = "t" + std::to_string(g.tensors.size());
    t.shape = std::move(out);
    t.producer = int(g.nodes.size());
    int id = g.add_tensor(t);
    g.nodes.push_back({op + std::to_string(g.nodes.size()), op, std::move(in), {id}, std::move(attrs), {}});
    return id;
  }
  int conv(int x, int64_t oc, int64_t k, int64_t stride = 1, int64_t pad = 0, int64_t groups = 1, bool bias = true) {
    const Shape s = g.tensors[x].shape;  // a copy: adding tensors moves them
    int w = constant({oc, s[1] / groups, k, k});
    std::vector<int> in = {x, w};
    if (bias) in.push_back(constant({oc}));
    Shape out = {s[0], oc, (s[2] + 2 * pad - k) / stride + 1, (s[3] + 2 * pad - k) / stride + 1};
    return node("Conv", in, out,
                {{"kernel_shape", Attribute::of_ints({k, k})}, {"strides", Attribute::of_ints({stride, stride})},
                 {"pads", Attribute::of_ints({pad, pad, pad, pad})}, {"group", Attribute::of_int(groups)}});
  }
  void output(int t) {
    g.tensors[t].is_output = true;
    g.outputs.push_back(t);
  }
};

// Tensors and nodes added by name into a graph the test owns, for tests that
// spell out an exported pattern node by node (outputs made before their node).
struct NamedGraph {
  Graph& g;
  int tensor(const std::string& name, Shape shape) {
    Tensor t;
    t.name = name;
    t.shape = std::move(shape);
    return g.add_tensor(std::move(t));
  }
  int constant(const std::string& name, HostTensor v) {
    Tensor t;
    t.name = name;
    t.dtype = v.dtype;
    t.shape = v.shape;
    t.is_constant = t.has_data = true;
    t.value = std::move(v);
    return g.add_tensor(std::move(t));
  }
  int scalar(const std::string& name, float v) {
    HostTensor t(DataType::Float32, {});
    t.data<float>()[0] = v;
    return constant(name, std::move(t));
  }
  int ints(const std::string& name, const std::vector<int64_t>& v) {
    HostTensor t(DataType::Int64, {int64_t(v.size())});
    std::copy(v.begin(), v.end(), t.data<int64_t>());
    return constant(name, std::move(t));
  }
  void node(const std::string& op, std::vector<int> in, int out, std::map<std::string, Attribute> attrs = {}) {
    g.nodes.push_back({op + "_" + std::to_string(g.nodes.size()), op, std::move(in), {out}, std::move(attrs), {}});
  }
};

}  // namespace texplan::test
