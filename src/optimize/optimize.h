// Graph rewrites that lower the memory bound itself (docs/optimizations.md):
// operator fusion, in-place execution, zero-copy concat and a memory-aware
// execution order. Run on the imported graph, before storage assignment and
// make_usage_records:
//
//   Graph g = import_onnx(path);
//   OptimizeReport r = optimize(g, {});   // r.raw_lower_bound_bytes: g as imported
//   PlanInput pin = make_usage_records(g);
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "optimize/kernel_catalog.h"

namespace texplan {

struct OptimizeOptions {
  bool fuse = true;            // Conv/MatMul/Gemm + BatchNormalization, bias, activation, residual; elementwise chains; decomposed LayerNorm
  bool inplace = true;         // elementwise writes over an input that dies at the node
  bool concat_elision = true;  // producers write their slice of a Concat's output
  // Conv(+epilogue) -> MaxPool as one FusedConvMaxPool (docs/fused-ops.md).
  bool pool_fusion = true;
  // Squeeze-and-excitation's channel Mul into the 1x1 convolution reading
  // it (channel_scaled(), graph.h).
  bool channel_scale_fusion = true;
  // A per-channel elementwise node (BatchNormalization + Relu) into the 1x1
  // convolution reading it (channel_program(), graph.h).
  bool channel_program_fusion = true;
  // Squeeze-and-excitation's second fully connected layer and its Sigmoid
  // into the channel program its scale feeds (ChannelProgram::gate,
  // graph.h): that layer's kernel never runs.
  bool channel_gate_fusion = true;
  // A depthwise convolution (with its bias and activation) into the 1x1
  // convolution reading it: a MobileNet block's last two convs as one
  // (ChannelProgram::depthwise, graph.h).
  bool depthwise_input_fusion = true;
  // A Slice that an elided Concat passes through as a view, its input's
  // storage moved into the Concat's output (slices_into_concats_to_views).
  bool concat_slice_views = true;
  // Two fully connected layers of one-pixel maps (squeeze-and-excitation)
  // as one FusedMlp.
  bool mlp_fusion = true;
  // Product operands cut and moved by Slices, Gathers, Transposes and
  // Reshapes read through strides (OperandView) where the bound allows:
  // FusedAttention's Q, K and V on every device, MatMul's where the
  // device's forms say so.
  bool strided_operands = true;
  // Softmax attention (q k^T, scale, mask, Softmax, @ v) as one
  // FusedAttention: the score matrix never stored.
  bool attention_fusion = true;
  // The Transpose after a FusedAttention into its stores
  // (transposes_into_attention_outputs).
  bool attention_output_transposes = true;
  // ShuffleNet's channel shuffle into the 1x1 conv computing one of its
  // halves (channel_shuffles_into_convs): its Transpose never runs.
  bool channel_shuffle_fusion = true;
  // A LayerNormalization after a product and its residual into that product
  // (layer_norms_into_products): its kernel never runs. Opt-in: on the H200
  // BERT-mini ran slower with it (docs/fused-ops.md#row-norm).
  bool row_norm_fusion = false;
  enum class Order { File, Memory } order = Order::Memory;
  // The fused forms the device's kernels run (KernelCatalog::fused_for):
  // the rewrites above that make any other are off. Unset: every form, as
  // the CPU reference executor runs them.
  std::optional<FusedForms> device_forms{};
};
// "file" or "memory"; throws Error on anything else.
OptimizeOptions::Order parse_order(const std::string& s);

struct OptimizeReport {
  int64_t raw_lower_bound_bytes = 0;  // the graph as given: file order, no optimization
  int64_t lower_bound_bytes = 0;      // after the rewrites (buffers only)
  int nodes_before = 0, nodes_after = 0;
  int fused_conv = 0, fused_matmul = 0, fused_elementwise = 0;  // fused nodes made
  int fused_gather = 0;       // Gathers with the elementwise chain after them (FusedGather)
  int folded_batchnorm = 0;   // BatchNormalization folded into a convolution's weights
  int folded_pads = 0;        // Pads of zeros taken into the Conv or AveragePool reading them
  int fused_pool = 0;         // FusedConvMaxPool nodes
  int fused_channel_scales = 0;  // channel Muls taken into a 1x1 convolution
  int fused_channel_programs = 0;  // per-channel elementwise nodes taken into a 1x1 convolution
  int fused_channel_gates = 0;     // fully connected 1x1 convolutions computed as a channel program's gate
  int fused_depthwise_inputs = 0;  // depthwise convolutions taken into the 1x1 convolution reading them
  int fused_mlps = 0;            // pairs of fully connected 1x1 convolutions made FusedMlp
  int fused_layernorm = 0;    // LayerNormalization nodes made from their decomposed form
  int fused_attention = 0;    // FusedAttention nodes (the score matrices no longer stored)
  int fused_channel_shuffles = 0;  // channel shuffles written by a conv (their Transposes gone)
  int fused_row_norms = 0;         // LayerNormalizations taken into the product before them
  int inplace = 0;            // nodes whose output shares an input's storage
  int elided_concats = 0;     // Concat nodes whose inputs are views of the output
  int viewed_nodes = 0;       // Transposes of size-1 dims, 1x1 stride-1 pools: made Reshapes (views)
  std::string order;          // heuristic that won ("file", "greedy-net", ...)
  std::vector<std::pair<std::string, int64_t>> order_candidates;  // each heuristic's lower bound
  double order_ms = 0;        // time spent choosing the order
  double total_ms = 0;
};

// Rewrites `g` in place. The result is a valid graph with the same outputs
// and values (up to float rounding of folded BatchNormalization); fused ops
// and marks are described in docs/fused-ops.md.
OptimizeReport optimize(Graph& g, const OptimizeOptions& opt = {});

// Each enabled optimization's share: the optimized lower bound with that one
// switched off, minus the bound with all of `opt` on (bytes it saves).
// `optimized` is optimize's report on `imported` with `opt`: an optimization
// that changed nothing there (no node fused, none in place, no Concat, the
// file order kept) gets a share of 0 without optimizing again. Graphs of
// more than kMaxShareNodes imported nodes get no shares (an empty list):
// each share costs a whole optimize.
constexpr size_t kMaxShareNodes = 200000;
struct OptimizationShare {
  std::string name;  // "fuse", "pool_fusion", "attention_fusion", "inplace", "concat_elision", "order"
  int64_t lower_bound_without = 0;
  int64_t bytes_saved = 0;
};
std::vector<OptimizationShare> optimization_shares(const Graph& imported, const OptimizeOptions& opt,
                                                   const OptimizeReport& optimized);

// Lower bound of `g` in its node order, buffers only.
int64_t graph_lower_bound(const Graph& g);

}  // namespace texplan
