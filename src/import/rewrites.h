// The last step of import: forms that exports carry, rewritten on the Graph
// (shapes static by then) into the operators the later stages run
// (docs/optimizations.md, "Import rewrites").
//
//   Graph g = ...;             // every tensor with a static shape
//   rewrite_imported_graph(g); // Einsum -> MatMul forms, inference Dropouts gone
#pragma once
#include <onnx/defs/shape_inference.h>

#include "graph/graph.h"

namespace texplan {

// Every Einsum becomes Transpose, ReduceSum, Reshape and MatMul nodes
// (operands contracted pairwise, left to right). An Einsum with a diagonal
// (a label twice in one operand: "ii->i", trace) or an empty dimension stays
// as it is and runs on the CPU reference. Returns the number lowered.
int lower_einsums(Graph& g);

// Every Dropout in inference form (opset 7-11; from opset 12 training_mode
// absent or a constant false, or a constant ratio of 0) is removed: its
// readers read its input, a read mask becomes a constant all-true tensor.
// One whose mask is a graph output stays. Returns the number removed.
int remove_inference_dropouts(Graph& g);

// Both of the above; what import_onnx calls last.
void rewrite_imported_graph(Graph& g);

// Einsum's output dims where every operand's shape is known (libonnx 1.12's
// Einsum inference gives only the rank); fails shape inference, with the
// reason, on an equation that does not fit its operands.
void infer_einsum_dims(onnx::InferenceContext& ctx);

}  // namespace texplan
