// Internal: the passes optimize() runs (fuse.cpp, order.cpp).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"

namespace texplan {

inline bool is_f32(const Tensor& t) { return t.dtype == DataType::Float32; }

// Whether every element of v is x (an attribute's strides all 1, pads all 0).
inline bool all_equal(const std::vector<int64_t>& v, int64_t x) {
  for (int64_t e : v)
    if (e != x) return false;
  return true;
}

// The one node reading tensor t, an intermediate that is no graph output;
// -1 where none, several or t is an output. `readers`: g.consumers().
inline int only_reader(const Graph& g, const std::vector<std::vector<int>>& readers, int t) {
  if (t < 0 || g.tensors[size_t(t)].is_output || readers[size_t(t)].size() != 1) return -1;
  return readers[size_t(t)][0];
}

// A graph with the metadata of `g` and none of its constant values (has_data
// kept): what planning a candidate needs (storage.cpp's node forms,
// patch.cpp's segments and grids).
Graph without_values(const Graph& g);

// `base`, or `base_1`, `base_2`, ... : the first name no tensor of `g` has.
std::string unique_tensor_name(const Graph& g, const std::string& base);
// A constant int64 vector `v` (a Reshape's shape, a Slice's starts) named
// unique_tensor_name(g, base); returns its id.
int add_int64_constant(Graph& g, const std::string& base, const std::vector<int64_t>& v);

struct FuseCounts {
  int conv = 0, matmul = 0, elementwise = 0, batchnorm = 0, pool = 0, channel_scales = 0, channel_programs = 0,
      channel_gates = 0, depthwise_inputs = 0, mlps = 0, gathers = 0;
};
// BatchNormalization into the preceding Conv's weights (or into Mul/Add
// when no Conv precedes it), then each Conv/MatMul/Gemm (and each Gather
// of floats: FusedGather) with the chain of elementwise nodes after it, then
// the remaining elementwise chains; with
// `pool`, a MaxPool after a convolution without epilogue inputs too; with
// `channel_scales`, then channel_scales_into_convs; with
// `channel_programs`, channel_programs_into_convs, then
// channel_gates_into_convs within `gates` (none where a bound is 0); with
// `depthwise_inputs`, depthwise_into_pointwise_convs; with `mlps`, last
// mlp_pairs.
struct GateBounds {
  int64_t channels = 0, weights = 0;  // FusedForms::channel_gate_channels, channel_gate_weights
};
FuseCounts fuse(Graph& g, bool pool, bool channel_scales, bool channel_programs, GateBounds gates,
                bool depthwise_inputs, bool mlps);

// A scalar Mul or Div whose result only a MatMul reads moves after the
// MatMul, where fuse() takes it into the product's epilogue. Returns how many.
int scales_after_products(Graph& g);

// An Add, Sub, Mul, Div, Max or Min after a MatMul's, Gemm's or Conv's
// Reshape moves before it, the other operand reshaped (a view), and so does
// an activation of one tensor (Relu, Clip with constant bounds, ...), so
// fuse() takes it into the product's epilogue. Returns how many.
int reshapes_after_products(Graph& g);

// A per-channel Mul (squeeze-and-excitation's scale) read only by a 1x1
// convolution becomes that convolution's input scale
// (set_channel_scaled, docs/fused-ops.md). Returns how many.
int channel_scales_into_convs(Graph& g);

// A FusedElementwise of per-channel operands (BatchNormalization + Relu)
// read only by a 1x1 convolution becomes that convolution's channel program
// (ChannelProgram, graph.h; docs/fused-ops.md). Returns how many.
int channel_programs_into_convs(Graph& g);

// A 1x1 convolution of a one-pixel map of one image (squeeze-and-excitation's
// second fully connected layer, its Sigmoid its program), read only as a
// channel program's last operand, becomes that program's gate
// (ChannelProgram::gate, graph.h; docs/fused-ops.md#channel-gates): the
// conv reading the program computes it. Within `bounds`. Returns how many.
int channel_gates_into_convs(Graph& g, GateBounds bounds);

// A depthwise convolution (one filter per channel, no epilogue inputs) read
// only by a 1x1 convolution becomes that convolution's depthwise input, its
// bias and program the channel program (ChannelProgram::depthwise, graph.h;
// docs/fused-ops.md#depthwise-input-channelprogramdepthwise). Returns how many.
int depthwise_into_pointwise_convs(Graph& g);

// Two 1x1 convolutions of one-pixel maps in a row, the first read only by
// the second (squeeze-and-excitation's two fully connected layers), become
// one FusedMlp (docs/fused-ops.md). Returns how many.
int mlp_pairs(Graph& g);

// A Pad of zeros on the spatial dims read only by a Conv or an AveragePool
// (ceil_mode off) becomes that node's padding (pads.cpp; an AveragePool then
// counts it: count_include_pad). Returns how many.
int pads_into_windows(Graph& g);

// ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div/Mul/Add spelling LayerNorm over
// the last axis becomes one LayerNormalization (layer_norm.cpp); runs before
// fuse(), which would otherwise split the pattern. Returns how many.
int fuse_layer_norm(Graph& g);
// A LayerNormalization over the last axis of a FusedMatMul's output read by
// nothing else (no operand views; gamma and beta constant vectors) into
// that product (graph.h RowNorm). Returns how many.
int layer_norms_into_products(Graph& g);

// Softmax attention, [scale] q @ k^T [scale] [+ mask] -> Softmax -> @ v,
// becomes one FusedAttention (attention.cpp; AttentionForm, graph.h) where
// the pattern is exact and its head dims are at most `max_head_dim`: the
// score matrix is never stored. Runs before fuse(), which would take the
// products apart. Returns how many.
int fuse_attention(Graph& g, int64_t max_head_dim);

// A FusedAttention's output read only by a Transpose that keeps the last
// axis last (the heads' rows interleaved for the out-projection: [B, H, S,
// D] -> [B, S, H, D]) is written that way by the attention itself
// (AttentionForm::output_perm), and the Transpose dropped (attention.cpp).
// Returns how many.
int transposes_into_attention_outputs(Graph& g);

// ShuffleNet's channel shuffles of two halves (Concat, Reshape, Transpose,
// Reshape) into the plain 1x1 FusedConv computing the half made last, read
// by nothing else: it writes the shuffled tensor, copying the other half
// into it (graph.h ShuffledOutput; channel_shuffle.cpp). All of them or,
// where the bound would rise, none. Returns how many.
int channel_shuffles_into_convs(Graph& g);

// Nodes that move no element (Transposes of size-1 dims, pools of 1x1
// windows and stride 1) become Reshapes: views of their input, no kernel
// (views.cpp). Returns how many.
int elements_in_place_to_views(Graph& g);

// Slices whose output is one contiguous run of their input's bytes (one axis
// cut with step 1, only 1s before it: a batch-1 channel range), and Gathers
// of one constant index likewise (a batch-1 sequence's [CLS] row), read by
// no Concat, get `decisions.view_offset` (bytes): storage_sharing() makes
// them views at that offset, and they run nothing. Returns how many.
int slices_to_views(Graph& g);
// The byte offset of Gather n's output in its input where it is such a view
// (one constant index, only 1s before its axis); -1 otherwise.
int64_t contiguous_gather_offset(const Graph& g, const Node& n);

// Then, one at a time, such a Slice read by an elided Concat (ShuffleNet's
// passed-through half) becomes a view too where its input's storage can move
// into the Concat's output (sharing.h) and the bound does not rise: the
// Slice's copy is gone and the Concat stays elided. Returns how many.
int slices_into_concats_to_views(Graph& g);

// MatMul/FusedMatMul operands (and FusedAttention's Q, K, V) made from
// another tensor by a chain of Slices, Gathers of one constant index,
// Transposes and Reshapes (BERT's q, k and v cut from one projection and
// split into heads) read that tensor through an OperandView instead
// (graph.h), so the chain runs no kernel once nothing else reads it. Each
// view is set, then offered to `keep` (the graph with it, the product, the
// operand's slot): refused, it is undone and the next shorter chain tried.
// Returns how many operands took a view; the caller drops dead nodes.
using OperandViewKeep = std::function<bool(const Graph& g, const Node& product, int slot)>;
int strided_product_operands(Graph& g, const OperandViewKeep& keep);

// Reorders g.nodes topologically to lower the peak of live bytes; keeps the
// file order unless another order's lower bound is smaller. Returns the
// winning heuristic's name.
// `candidates`, when given, gets each heuristic's lower bound.
std::string memory_aware_order(Graph& g, std::vector<std::pair<std::string, int64_t>>* candidates = nullptr);

}  // namespace texplan
