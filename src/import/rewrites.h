// The last step of import: forms that exports carry, rewritten on the Graph
// (shapes static by then) into the operators the later stages run
// (docs/optimizations.md, "Import rewrites").
//
//   Graph g = ...;             // every tensor with a static shape
//   rewrite_imported_graph(g); // Einsum -> MatMul forms, inference Dropouts gone
#pragma once
#include <onnx/defs/shape_inference.h>

#include <functional>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace texplan {

// The nodes and tensors that replace node `n` in a rewrite: tensors named
// "<n>/<tag>_<k>", nodes "<n>/<op>_<k>", kept in order until take().
class RewriteNodes {
 public:
  RewriteNodes(Graph& g, const Node& n, std::string tag) : g_(g), n_(n), tag_(std::move(tag)) {}
  int tensor(const Shape& shape, DataType dtype);
  int int64_constant(const std::vector<int64_t>& values);
  int float_scalar(float value);  // a float32 constant of shape []
  // A constant of value's dtype and shape, with its bytes where it has any
  // (weights not loaded: a shape without bytes).
  int constant(HostTensor value);
  Node& add(const std::string& op, std::vector<int> inputs, std::vector<int> outputs);
  // `tensor` reshaped (itself where it has the shape already).
  int reshape(int tensor, const Shape& shape);
  std::vector<Node> take() { return std::move(nodes_); }
  bool empty() const { return nodes_.empty(); }
  Node& back() { return nodes_.back(); }

 private:
  Graph& g_;
  const Node& n_;
  std::string tag_;
  std::vector<Node> nodes_;
  int tensors_ = 0;
};

// Replaces every node for which `lower(node, nodes)` returns true (having
// added the nodes that compute its outputs, the last writing them) by those
// nodes, calling it once per node in the graph's order; re-sorts and drops
// what became dead. Returns how many it replaced.
int replace_nodes(Graph& g, const std::function<bool(const Node&, RewriteNodes&)>& lower, const std::string& tag);

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

// Every Conv (constant weights), MaxPool and AveragePool over three
// spatial dims (video models' Conv3d, MaxPool3d, AvgPool3d) becomes its 2-D
// form over frames, which every device runs: the input transposed
// frames-major [N, D, C, H, W] and padded in depth, per tap of the window's
// depth a Slice of the frames it reads for every output frame (the depth
// stride as the step) reshaped to N*OD images for the 2-D op, the taps
// combined (convs: each later one adding the sum so far as its residual;
// Max; a sum scaled per output frame), and the result transposed back.
// Others (non-constant weights, MaxPool's Indices, AveragePool rounding up)
// stay for the CPU reference. Returns the number lowered.
int lower_volume_ops(Graph& g);

// Every QuantizeLinear (per tensor, of float32) read only by
// DequantizeLinears of its scale s and zero point z, with them, becomes
// y = clip(round(x / s), qmin - z, qmax - z) * s in float (Div, Round, Clip,
// Mul), which is what the pair computes: quantized ("QDQ") models run in
// float on every device. Returns the number of pairs lowered.
int lower_quantize_pairs(Graph& g);

// Every RNN, GRU and LSTM (float32, constant W, R, B and peepholes, no
// sequence shorter than X) lowered: X's product with W for all steps, then
// with `steps_nodes` (ImportOptions::recurrent_steps_nodes) one
// RecurrentSteps per direction (graph.h) where the state fits one, else
// unrolled: per step the state's product with R and the cell's elementwise
// nodes, the states written into Y's slices. Others stay for the CPU
// reference. Returns the number lowered.
int lower_recurrent_ops(Graph& g, bool steps_nodes = true);

// A Transpose whose output, through elementwise ops of one tensor (Relu,
// Clip with constant bounds, ...) each read by the next alone, is read only
// by Transposes that undo it: the ops run on its input instead and the
// Transposes' readers read their result (volume ops leave such a pair
// between each two of them). Returns the number removed.
int cancel_transpose_round_trips(Graph& g);

// All of the above; what import_onnx calls last.
void rewrite_imported_graph(Graph& g, bool recurrent_steps_nodes = true);

// Einsum's output dims where every operand's shape is known (libonnx 1.12's
// Einsum inference gives only the rank); fails shape inference, with the
// reason, on an equation that does not fit its operands.
void infer_einsum_dims(onnx::InferenceContext& ctx);

}  // namespace texplan
