// Per-operator rules of the validation stage (validate.h), one file per
// family (elementwise_rules.cpp, compute_rules.cpp, shape_rules.cpp), and the
// node loop that runs them. Each rule checks a node's operands and attributes
// and states the shape and dtype of every output; validate_node then compares
// those with the graph's tensors, which is what catches a lying value_info or
// a growing Reshape whatever ONNX's inference let through. Window, broadcast
// and axis arithmetic comes from the reference operators (reference/common.h,
// reference/conv_shapes.h) so the validator and the reference compute shapes
// one way.
//
// Fully checked (operands, dtypes, parameters, attributes, outputs): the
// elementwise family (unary math and activations, Clip, binary arithmetic,
// comparisons, logic, variadic Max/Min/Sum/Mean, PRelu, Where, Cast,
// CastLike, QuantizeLinear, DequantizeLinear), Conv, ConvTranspose, Gemm, MatMul, MaxPool, AveragePool, the
// global pools, BatchNormalization, InstanceNormalization,
// LayerNormalization, LRN, MeanVarianceNormalization, Softmax, LogSoftmax,
// Hardmax, the Reduce* family, ArgMax, ArgMin, Reshape, Flatten, Squeeze,
// Unsqueeze, Transpose, Concat, Split, Slice, Expand, Tile, Pad, Gather,
// GatherElements, GatherND, ScatterND, ScatterElements, Scatter, Identity,
// Dropout, DepthToSpace, SpaceToDepth, Resize, Upsample, Shape, Size,
// Constant, ConstantOfShape, EyeLike, Trilu, CumSum, OneHot, TopK, Range.
// Output shape only (the reference checks the rest while evaluating; no
// OpenCL kernel reads them): NonZero (dtype and rank; its length is data).
// Shapes against its cell: RecurrentSteps, which import makes from an RNN,
// GRU or LSTM checked here (compute_rules.cpp).
// Not checked here: the Fused* operators, which only optimize creates (import
// refuses them: they have no ONNX schema) and whose operands optimize derives
// from nodes checked here.
//
// Indices that are data (Gather, GatherElements, GatherND, Scatter* with
// computed indices) cannot be checked before the run: the OpenCL kernels
// bound every index they read (out of range reads as 0) and flag it, and the
// session raises the node's error after the run (runtime/session.cpp), as
// the CPU reference does.
#include "validate/validate.h"
#include "validate/validate_internal.h"

namespace texplan {
namespace {

using validation::NodeCheck;
using validation::NodeError;
using validation::RuleTable;

const RuleTable& rules() {
  static const RuleTable table = [] {
    RuleTable t;
    validation::add_elementwise_rules(t);
    validation::add_compute_rules(t);
    validation::add_shape_rules(t);
    return t;
  }();
  return table;
}

// Runs n's rule: its operands and attributes checked, its outputs' shapes
// and dtypes stated in c.
void run_rule(NodeCheck& c, const Graph& g, const Node& n) {
  for (size_t o = 0; o < n.outputs.size(); ++o)
    if (n.outputs[o] >= int(g.tensors.size())) c.fail("output " + std::to_string(o) + " names no tensor");
  auto it = rules().find(n.op_type);
  if (it == rules().end()) return;
  try {
    it->second(c);
  } catch (const NodeError&) {
    throw;
  } catch (const std::exception& e) {  // element_count overflow, bad_alloc: name the node all the same
    c.fail(e.what());
  }
}

void validate_node(const Graph& g, const Node& n) {
  NodeCheck c(g, n);
  run_rule(c, g, n);
  c.compare_outputs();
}

}  // namespace

void validate_graph(const Graph& g) {
  for (const Node& n : g.nodes) validate_node(g, n);
}

void validate_operands(const Graph& g, const Node& n) {
  NodeCheck c(g, n);
  run_rule(c, g, n);
}

}  // namespace texplan
