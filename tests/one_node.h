// One node on random inputs beside what the CPU reference computes for it:
// the single-kernel tests (test_cpu_*.cpp) build their graphs here.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "optimize/usage.h"
#include "plan/memory_plan.h"
#include "reference/reference_ops.h"
#include "runtime/session.h"
#include "test_util.h"

namespace texplan::test {

struct NodeCase {
  std::string op;
  std::vector<Shape> inputs;  // an empty shape: that input is omitted
  std::map<std::string, Attribute> attrs;
  std::vector<bool> fed = {true};  // which inputs are graph inputs; the rest are constants (weights)
};

struct OneNode {
  Graph graph;
  std::vector<HostTensor> feeds;  // the fed inputs' values, in order
  HostTensor want;                // the reference's output
};

// `value` as input `name` of node n in g: a graph input (its value in
// `feeds`) or, not fed, a constant holding it.
inline int add_operand(Graph& g, Node& n, const std::string& name, const HostTensor& value, bool fed,
                       std::vector<HostTensor>& feeds) {
  Tensor t;
  t.name = name;
  t.dtype = value.dtype;
  t.shape = value.shape;
  t.is_input = fed;
  t.is_constant = t.has_data = !fed;
  if (!fed) t.value = value;
  const int id = g.add_tensor(t);
  if (fed) g.inputs.push_back(id), feeds.push_back(value);
  n.inputs.push_back(id);
  return id;
}

// Input i gets random values in [-1, 1) from seed `seed + i`.
inline OneNode one_node(const NodeCase& c, const std::string& model, int opset, uint32_t seed) {
  OneNode r;
  Graph& g = r.graph;
  g.model_name = model;
  g.opset = opset;
  Node n;
  n.name = c.op;
  n.op_type = c.op;
  n.attrs = c.attrs;
  std::vector<HostTensor> values;
  for (size_t i = 0; i < c.inputs.size(); ++i)
    values.push_back(c.inputs[i].empty() ? HostTensor() : random_tensor(c.inputs[i], -1, 1, uint32_t(seed + i)));
  std::vector<const HostTensor*> ref;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (c.inputs[i].empty()) {
      n.inputs.push_back(-1);
      ref.push_back(nullptr);
      continue;
    }
    add_operand(g, n, "in" + std::to_string(i), values[i], i < c.fed.size() && c.fed[i], r.feeds);
    ref.push_back(&values[i]);
  }
  n.outputs = {0};  // one output, for the reference
  r.want = reference::evaluate(n, ref).at(0);
  Tensor y;
  y.name = "y";
  y.shape = r.want.shape;
  y.is_output = true;
  y.producer = 0;
  n.outputs = {g.add_tensor(y)};
  g.outputs = n.outputs;
  g.nodes.push_back(n);
  return r;
}

struct OneNodeRun {
  HostTensor got;
  int64_t weight_bytes = 0;
};

// Plans n's graph (strategy best) and runs it once on dev with `options`;
// every node must run on the device's kernels.
inline OneNodeRun run_one_node(const OneNode& n, const std::shared_ptr<runtime::Device>& dev,
                               const runtime::SessionOptions& options = {}) {
  PlanInput pin = make_usage_records(n.graph);
  plan::MemoryPlan plan = plan::plan_memory(pin.records, dev->info().profile, "best");
  runtime::Session s(n.graph, pin, plan, dev, options);
  EXPECT_TRUE(s.fallback_nodes().empty());
  OneNodeRun r;
  r.got = s.run(n.feeds).at(0);
  r.weight_bytes = s.weight_bytes();
  return r;
}

// Every node evaluated by the reference, in order: the graph's outputs.
inline std::vector<HostTensor> evaluate_graph(const Graph& g, const std::vector<HostTensor>& feeds) {
  std::vector<HostTensor> v(g.tensors.size());
  for (size_t i = 0; i < g.inputs.size(); ++i) v[g.inputs[i]] = feeds.at(i);
  for (size_t t = 0; t < g.tensors.size(); ++t)
    if (g.tensors[t].is_constant) v[t] = g.tensors[t].value;
  for (const Node& n : g.nodes) {
    std::vector<const HostTensor*> ins;
    for (int t : n.inputs) ins.push_back(t >= 0 ? &v[t] : nullptr);
    std::vector<HostTensor> outs = reference::evaluate(n, ins);
    for (size_t k = 0; k < n.outputs.size(); ++k)
      if (n.outputs[k] >= 0) v[n.outputs[k]] = std::move(outs[k]);
  }
  std::vector<HostTensor> r;
  for (int t : g.outputs) r.push_back(v[t]);
  return r;
}

inline double max_abs_diff(const HostTensor& a, const HostTensor& b) {
  EXPECT_EQ(to_string(a.shape), to_string(b.shape));
  std::vector<float> x = a.as_float(), y = b.as_float();
  if (x.size() != y.size()) return INFINITY;
  double m = 0;
  for (size_t i = 0; i < x.size(); ++i) m = std::max(m, std::abs(double(x[i]) - double(y[i])));
  return m;
}

}  // namespace texplan::test
