// The validation stage: every node of an imported graph checked against what
// its kernels will read, before optimize and lowering (DESIGN.md's data
// flow). A model that passes ONNX's checker can still lie: a bias of 1 value
// for 16 channels, a Reshape that grows its input, a value_info that declares
// a shape the node does not produce. Kernels trust shapes and element counts
// (they index by them), so a lie must end here, in one clear line.
//
//   Graph g = import_onnx(path);   // import calls validate_graph(g) itself
//
// Checked per node: operand counts and dtypes, ranks, the exact element
// count of every parameter a kernel reads (weights, biases, scales, means),
// attribute ranges (group, strides, dilations, pads, axes), constant
// parameters in range (Slice, Gather indices, Pad widths), and the shape and
// dtype of every output against what the operator computes from its inputs.
// Weights need not be loaded: without values only shapes are checked.
#pragma once
#include "graph/graph.h"

namespace texplan {

// Throws Error "MODEL: node 'NAME' (OP): what is wrong, what was expected".
void validate_graph(const Graph& g);

// n's operands and attributes only (its outputs' shapes may be unknown yet):
// why import could not infer an output, where the inputs are known.
void validate_operands(const Graph& g, const Node& n);

}  // namespace texplan
