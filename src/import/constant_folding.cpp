// Constant folding: every node whose inputs are all known constants is evaluated
// with the reference operators, and its outputs become initializers.
#include <algorithm>
#include <limits>

#include "import/importer.h"
#include "reference/reference_ops.h"

namespace texplan::importing {

namespace {

constexpr int64_t kFoldLimitElements = 1 << 24;  // never materialise huge constants
// Operators whose cost grows faster than their inputs and outputs (windows,
// matrix products): folded only when every operand is this small, so a
// hostile model cannot make import compute for hours.
constexpr int64_t kFoldHeavyLimitElements = 4096;
bool is_heavy_op(const std::string& op) {
  return op == "Conv" || op == "ConvTranspose" || op == "MatMul" || op == "Gemm" || op == "MaxPool" ||
         op == "AveragePool" || op == "LRN" || op == "LpPool" || op == "Einsum";
}

}  // namespace

// The static shape and element type inference gave `name`, or null. The
// index is built on the first question after inference: a graph with
// nothing to fold never asks.
const std::pair<Shape, int>*Importer::inferred_shape(const std::string& name) {
  if (!shapes_indexed_) {
    const auto& g = model_.graph();
    auto note = [&](const onnx::ValueInfoProto& v) {
      Shape s;
      int et = 0;
      if (static_shape(v, s, et)) shapes_[v.name()] = {s, et};
    };
    for (const auto& v : g.input()) note(v);
    for (const auto& v : g.value_info()) note(v);
    for (const auto& v : g.output()) note(v);
    for (const auto& t : g.initializer()) shapes_[t.name()] = {dims_of(t), t.data_type()};
    shapes_indexed_ = true;
  }
  auto it = shapes_.find(name);
  return it == shapes_.end() ? nullptr : &it->second;
}

// One pass over the nodes; returns true if anything was folded.
bool Importer::fold_constants() {
  auto* g = model_.mutable_graph();
  bool folded = false;
  keep_nodes_if(*g->mutable_node(), [&](const onnx::NodeProto& n, int i) {
    std::vector<HostTensor> outs;
    if (!try_fold(n, i, outs)) return true;
    for (int k = 0; k < n.output_size() && k < int(outs.size()); ++k) {
      if (n.output(k).empty()) continue;
      fill_proto(outs[k], n.output(k), g->add_initializer());
      constants_[n.output(k)] = std::move(outs[k]);
    }
    folded = true;
    return false;
  });
  if (folded) {
    // Folded values now live as initializers; drop stale value_info for them.
    std::unordered_set<std::string> inits;
    for (const auto& t : g->initializer()) inits.insert(t.name());
    google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> vi;
    for (const auto& v : g->value_info())
      if (!inits.count(v.name())) *vi.Add() = v;
    g->mutable_value_info()->Swap(&vi);
  }
  return folded;
}

bool Importer::try_fold(const onnx::NodeProto& n, int index, std::vector<HostTensor>& outs) {
  for (const auto& o : n.output())
    if (is_graph_output(o)) return false;  // outputs are computed at run time
  if (n.op_type() == "Shape") {
    const auto* known = inferred_shape(n.input(0));
    if (!known) return false;
    Node node = to_node(n, index, nullptr);
    int64_t rank = int64_t(known->first.size());
    int64_t start = node.get_int("start", 0), end = node.get_int("end", rank);
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    start = std::clamp<int64_t>(start, 0, rank);
    end = std::clamp<int64_t>(end, start, rank);
    HostTensor s(DataType::Int64, {end - start});
    for (int64_t k = start; k < end; ++k) s.data<int64_t>()[k - start] = known->first[k];
    outs.push_back(std::move(s));
    return true;
  }
  if (n.op_type() == "Size") {
    const auto* known = inferred_shape(n.input(0));
    if (!known) return false;
    if (count_or_max(known->first) == std::numeric_limits<int64_t>::max()) return false;
    HostTensor s(DataType::Int64, {});
    s.data<int64_t>()[0] = element_count(known->first);
    outs.push_back(std::move(s));
    return true;
  }
  std::vector<const HostTensor*> ins;
  for (const auto& in : n.input()) {
    if (in.empty()) {
      ins.push_back(nullptr);
      continue;
    }
    auto it = constants_.find(in);
    if (it == constants_.end()) return false;
    ins.push_back(&it->second);
  }
  if (n.op_type() == "RandomNormal" || n.op_type() == "RandomUniform" || n.op_type().find("Random") == 0)
    return false;
  if (!reference::supports(n.op_type())) return false;
  // Einsum's direct loop runs over the product of its operands' sizes:
  // folded with two at most, each within the heavy limit below.
  if (n.op_type() == "Einsum" && n.input_size() > 2) return false;
  // Skip folding whose result would be huge (e.g. Expand to a big tensor).
  const bool heavy = is_heavy_op(n.op_type());
  for (const auto& o : n.output()) {
    const auto* known = inferred_shape(o);
    if (known && count_or_max(known->first) > kFoldLimitElements) return false;
    if (heavy && (!known || count_or_max(known->first) > kFoldHeavyLimitElements)) return false;
  }
  if (heavy) {
    for (const HostTensor* t : ins)
      if (t && t->count() > kFoldHeavyLimitElements) return false;
    for (const auto& a : n.attribute())  // window sizes
      if (a.name() == "kernel_shape" || a.name() == "size") {
        int64_t k = 1;
        for (int64_t d : a.ints()) {
          if (d <= 0 || d > kFoldHeavyLimitElements / k) return false;
          k *= d;
        }
        if (a.i() > kFoldHeavyLimitElements) return false;
      }
  }
  Node node = to_node(n, index, nullptr);
  // Outputs whose shapes inference could not give are bounded here: a
  // tensor beyond the fold limit is not folded (it stays a node).
  HostTensorLimit limit(kFoldLimitElements * 8);
  try {
    outs = reference::evaluate(node, ins);
  } catch (const Error& e) {
    if (limit.exceeded()) return false;
    throw Error(name_ + ": node '" + node.name + "' (" + node.op_type +
                "): " + one_line(reference::failure_reason(node, e.what())) + " (while folding constants)");
  }
  return true;
}

int64_t Importer::count_or_max(const Shape& s) {
  try {
    return element_count(s);
  } catch (const Error&) {
    return std::numeric_limits<int64_t>::max();
  }
}

// A set, built on first use (the outputs are fixed by then): folding asks
// for every node, and a model may have 40,000 outputs.
bool Importer::is_graph_output(const std::string& name) {
  if (graph_output_names_.empty())
    for (const auto& o : model_.graph().output()) graph_output_names_.insert(o.name());
  return graph_output_names_.count(name) > 0;
}

}  // namespace texplan::importing
