// The graph built from the model: tensors and nodes, the shapes inference
// left, order, dead nodes and the checks every imported graph passes.
#include <algorithm>

#include "import/importer.h"
#include "import/rewrites.h"
#include "reference/reference_ops.h"
#include "validate/validate.h"

namespace texplan::importing {

// With `graph`, inputs and outputs become its tensor ids (all defined by
// then); `first_output`, when known, is the id of the node's first
// non-empty output, the others following it. Without it (constant folding)
// the outputs are placeholders, -1 where omitted: the reference ops read
// how many a node has and which are wanted (a Split's parts).
Node Importer::to_node(const onnx::NodeProto& n, int index, const Graph* graph, int first_output) {
  Node r;
  r.name = n.name().empty() ? node_label(n, index) : printable(n.name());
  r.op_type = n.op_type();
  if (n.attribute_size() > 0) {
    const std::string w = name_ + ": node '" + r.name + "' (" + n.op_type() + ")";
    for (const auto& a : n.attribute()) r.attrs[a.name()] = attribute_from_proto(a, dir_, w);
  }
  if (graph) {
    r.inputs.reserve(size_t(n.input_size()));
    r.outputs.reserve(size_t(n.output_size()));
    // Most operands are the previous node's output, the tensor just before
    // this node's first: one comparison instead of a hash lookup.
    const int previous = first_output - 1;
    for (const auto& in : n.input())
      r.inputs.push_back(in.empty()                                                   ? -1
                         : previous >= 0 && graph->tensors[size_t(previous)].name == in ? previous
                                                                                        : find_tensor(*graph, in));
    for (const auto& out : n.output())
      r.outputs.push_back(out.empty() ? -1 : first_output >= 0 ? first_output++ : find_tensor(*graph, out));
  } else {
    for (const auto& out : n.output()) r.outputs.push_back(out.empty() ? -1 : int(r.outputs.size()));
  }
  return r;
}

Importer::Skeleton Importer::build_skeleton() {
  const auto& g = model_.graph();
  Skeleton sk;
  Graph& graph = sk.graph;
  try {
    graph.model_name = name_;
    graph.model_path = file_;
    graph.opset = opset_;
    // Tensor ids by name live in the graph's own index (one map, not two).
    graph.tensors.reserve(size_t(g.initializer_size() + g.input_size() + g.node_size()));
    graph.nodes.reserve(size_t(g.node_size()));
    auto add = [&](const std::string& n, bool constant) -> int {
      Tensor t;
      t.name = printable(n);
      t.is_constant = constant;
      return graph.add_tensor(std::move(t));  // names are unique (check_names)
    };
    for (const auto& t : g.initializer()) add(t.name(), true);
    const int initializers = int(graph.tensors.size());
    for (const auto& v : g.input()) {
      const int listed = find_tensor(graph, v.name());
      if (listed >= 0 && listed < initializers) continue;  // old-style: initializer listed as input
      int id = add(v.name(), false);
      graph.tensors[id].is_input = true;
      graph.inputs.push_back(id);
    }
    // Every output is named before any node reads it: a cycle is reported as one.
    sk.node_outputs_from = int(graph.tensors.size());
    for (const auto& proto : g.node())
      for (const auto& out : proto.output())
        if (!out.empty()) add(out, false);
    int first_output = sk.node_outputs_from;
    for (int i = 0; i < g.node_size(); ++i) {
      const auto& proto = g.node(i);
      graph.nodes.push_back(to_node(proto, i, &graph, first_output));
      first_output += int(std::count_if(proto.output().begin(), proto.output().end(),
                                        [](const std::string& o) { return !o.empty(); }));
      const Node& node = graph.nodes.back();
      for (size_t k = 0; k < node.inputs.size(); ++k)
        if (node.inputs[k] < 0 && !proto.input(int(k)).empty())
          throw Error(name_ + ": node '" + node_label(proto, i) + "' reads '" + proto.input(int(k)) +
                      "', which nothing produces");
    }
  } catch (...) {
    sk.error = std::current_exception();
  }
  return sk;
}

// The skeleton with the constants' values, the shapes inference left and
// the graph outputs: the last step that reads the model.
Graph Importer::graph_from_model(Skeleton sk) {
  if (sk.error) std::rethrow_exception(sk.error);
  const auto& g = model_.graph();
  Graph graph = std::move(sk.graph);
  // Initializers are the first tensors, in file order.
  for (int i = 0; i < g.initializer_size(); ++i)
    if (auto c = constants_.find(g.initializer(i).name()); c != constants_.end()) {
      Tensor& t = graph.tensors[size_t(i)];
      t.value = std::move(c->second);
      t.dtype = t.value.dtype;
      t.shape = t.value.shape;
      t.has_data = true;
    }
  // Shapes as inference left them (initializers' own dims over a value_info's).
  // Inference lists values in node order: the next node output is tried
  // before the name index.
  std::vector<char> known(graph.tensors.size(), 0);
  int next = sk.node_outputs_from;
  auto locate = [&](const std::string& name) {
    if (next < int(graph.tensors.size()) && graph.tensors[size_t(next)].name == name) return next++;
    const int id = find_tensor(graph, name);
    if (id >= 0) next = id + 1;
    return id;
  };
  // Tensor `id` (named `name` in the file) gets `dims` and element type `type` (0: unknown).
  auto give_shape = [&](int id, Shape dims, int type, const std::string& name) {
    Tensor& t = graph.tensors[size_t(id)];
    t.shape = std::move(dims);
    if (type != 0) t.dtype = known_type(type) ? *known_type(type) : from_onnx_type(type, name_ + ": tensor '" + name + "'");
    known[size_t(id)] = 1;
  };
  auto note = [&](const onnx::ValueInfoProto& v) {
    const int id = locate(v.name());
    Shape dims;
    int type = 0;
    if (id < 0 || graph.tensors[id].has_data || !static_shape(v, dims, type)) return;
    give_shape(id, std::move(dims), type, v.name());
  };
  for (const auto& v : g.input()) note(v);
  for (const auto& v : g.value_info()) note(v);
  for (const auto& v : g.output()) note(v);
  for (int i = 0; i < g.initializer_size(); ++i) {
    const auto& init = g.initializer(i);
    if (graph.tensors[size_t(i)].has_data) known[size_t(i)] = 1;
    else give_shape(i, dims_of(init), init.data_type(), init.name());
  }
  // Checked after dead nodes are gone: an unused value may stay unknown.
  unknown_.clear();
  for (size_t t = 0; t < known.size(); ++t)
    if (!known[t] && !graph.tensors[t].has_data) unknown_.push_back(graph.tensors[t].name);
  for (const auto& v : g.output()) {
    const int id = find_tensor(graph, v.name());
    if (id < 0) throw Error(name_ + ": graph output '" + v.name() + "' is produced by no node");
    graph.tensors[id].is_output = true;
    graph.outputs.push_back(id);
  }
  return graph;
}

// Order, dead nodes, operators texplan runs, static shapes everywhere.
void Importer::complete_graph(Graph& graph) {
  graph.topological_sort();
  graph.remove_dead_nodes();
  adopt_opset13_softmax(graph);
  // An operator texplan lacks is named as such, before any shape it left unknown.
  const std::string* supported = nullptr;  // the last operator found (a chain asks for one a million times)
  for (const auto& n : graph.nodes) {
    if (supported && *supported == n.op_type) continue;
    if (reference::supports(n.op_type)) {
      supported = &n.op_type;
      continue;
    }
    throw Error(name_ + ": node '" + n.name + "' (" + n.op_type + "): operator " + n.op_type +
                " is not supported by texplan");
  }
  // Every tensor needs a concrete shape and a known type.
  for (const std::string& name : unknown_) {
    const int id = graph.find(name);
    if (id < 0) continue;  // dead, and gone
    const Tensor& t = graph.tensors[id];
    // Inputs all known: the node itself is wrong (a window larger than its
    // input, say), not data-dependent; its rule says how.
    if (t.producer >= 0) {
      const Node& p = graph.nodes[t.producer];
      bool inputs_known = true;
      for (int i : p.inputs)
        inputs_known = inputs_known && (i < 0 || std::find(unknown_.begin(), unknown_.end(), graph.tensors[i].name) == unknown_.end());
      if (inputs_known) validate_operands(graph, p);
    }
    std::string who = t.producer >= 0 ? " (output of node '" + graph.nodes[t.producer].name + "', " +
                                            graph.nodes[t.producer].op_type + ")"
                                      : "";
    throw Error(name_ + ": cannot make the shape of tensor '" + t.name + "'" + who +
                " static: it depends on values only known at run time (data-dependent shapes are not supported)");
  }
  for (const auto& t : graph.tensors) try {
      element_count(t.shape);
    } catch (const Error& e) {
      throw Error(name_ + ": tensor '" + t.name + "': " + e.what());
    }
  for (auto& t : graph.tensors)
    if (t.is_constant && !t.has_data && opt_.load_weights)
      throw Error(name_ + ": weights of '" + t.name + "' are not loaded");
  rewrite_imported_graph(graph, opt_.recurrent_steps_nodes);
}

// Before opset 13, Softmax/LogSoftmax/Hardmax flatten the input to 2-D at
// `axis` (default 1); the reference and kernels implement opset 13 (one
// axis). The two agree when the axis is the last one; otherwise refuse.
void Importer::adopt_opset13_softmax(Graph& graph) const {
  if (opset_ >= 13) return;
  for (auto& n : graph.nodes) {
    if (n.op_type != "Softmax" && n.op_type != "LogSoftmax" && n.op_type != "Hardmax") continue;
    int64_t rank = int64_t(graph.tensors[n.inputs[0]].shape.size());
    int64_t axis = n.get_int("axis", 1);
    if (axis < 0) axis += rank;
    if (axis != rank - 1)
      throw Error(name_ + ": node '" + n.name + "' (" + n.op_type + ", opset " + std::to_string(opset_) +
                  "): coercion to 2-D at axis " + std::to_string(axis) + " of a rank-" + std::to_string(rank) +
                  " input is not supported (only the last axis)");
    n.attrs["axis"] = Attribute::of_int(-1);
  }
}

}  // namespace texplan::importing
