// Internal to the lowering stage: the helpers the operator families'
// lowerings share (strided views, conv and GEMM launches, fused tails,
// windows, split-K, variant names) and the families themselves, each in its
// own lower/*.cpp; lower.cpp maps op names to them.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "graph/epilogue.h"
#include "lower/lower.h"

namespace texplan::lower {

// ---- strided views, shared by elementwise, copy and reduce lowerings ----
std::vector<int64_t> contiguous_strides(const Shape& s);
// Strides of `in` read as if broadcast to `out` (numpy rules): 0 on broadcast dims.
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out);
// An iteration space `dims` over several operands, each with its strides.
struct Strided {
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> strides;  // [operand][dim]
};
// Drops size-1 dims and merges neighbours that are contiguous in every operand.
Strided collapse(Strided s);
// Right-aligned into kMaxRank; throws Error if the rank is larger.
Dims to_dims(const std::vector<int64_t>& v, int64_t pad);

// A conv's ConvParams from its sizes `g` (any struct with the fields: the
// lowerings' ConvGeometry, mma.h's MmaConv); launch_conv_kernel fills in
// the tensors' offsets.
template <class G>
ConvParams conv_params(const G& g, bool has_bias) {
  ConvParams p;
  p.has_bias = has_bias;
  p.c = i32(g.C), p.h = i32(g.H), p.w = i32(g.W), p.oc = i32(g.OC), p.oh = i32(g.OH), p.ow = i32(g.OW);
  p.kh = i32(g.KH), p.kw = i32(g.KW), p.sh = i32(g.sh), p.sw = i32(g.sw), p.ph = i32(g.ph), p.pw = i32(g.pw);
  p.dh = i32(g.dh), p.dw = i32(g.dw), p.groups = i32(g.groups);
  return p;
}
// A GEMM's GemmParams from `g` (the lowerings' GemmArgs, mma.h's
// MmaGemm); launch_gemm_kernel fills in the operands' offsets.
template <class G>
GemmParams gemm_params(const G& g) {
  GemmParams p;
  p.m = i32(g.M), p.n = i32(g.N), p.k = i32(g.K), p.a_sm = i32(g.a_sm), p.a_sk = i32(g.a_sk);
  p.b_sk = i32(g.b_sk), p.b_sn = i32(g.b_sn), p.c_sm = i32(g.c_sm), p.c_sn = i32(g.c_sn), p.has_c = g.has_c;
  p.alpha = g.alpha, p.beta = g.beta;
  p.batch = to_dims(g.batch, 1), p.a_sb = to_dims(g.a_sb, 0), p.b_sb = to_dims(g.b_sb, 0), p.c_sb = to_dims(g.c_sb, 0);
  return p;
}


// Begin and end padding of spatial dim `dim` of a Conv/Pool-like node, from
// pads or auto_pad (the output size `out` is known from the static shapes);
// `transposed`: a ConvTranspose's, else graph.h's conv_axis_pad.
SpatialPad spatial_pad(const Node& n, size_t dim, size_t rank, int64_t in, int64_t out, int64_t k, int64_t s,
                       int64_t d, bool transposed = false, int64_t out_pad = 0);

class NodeBuilder;
// Copies elements (bit patterns of `t`) walking `s`: operand 0 is the
// destination's strides, operand 1 the source's.
void launch_copy(NodeBuilder& b, const TensorArg& src, const TensorArg& dst, DataType t, const Strided& s);

// Prepares conv kernel `name` (X, W, bias, Y, ConvParams: gemm.cl,
// gemm_mma.cl, conv.cl, conv_winograd.cl) on the node's input 0 and output 0,
// weights `w` (input 1, or a packed copy) and `bias`, their offsets put in `p`.
void launch_conv_kernel(NodeBuilder& b, const Source& src, const char* name, const Range& r, const TensorArg& w,
                        const TensorArg& bias, ConvParams p);
// Prepares GEMM kernel `name` (A, B, C, Y, GemmParams), the offsets put in `p`.
void launch_gemm_kernel(NodeBuilder& b, const Source& src, const char* name, const Range& r, const TensorArg& A,
                        const TensorArg& B, const TensorArg& C, const TensorArg& Y, GemmParams p);

// The elementwise tail of a fused node (docs/fused-ops.md) as a lowering
// applies it: generated OpenCL C (epilogue_cl.h) for the kernel file's
// prelude, and the arguments to append after the kernel's own.
struct FusedTail {
  struct Input {
    TensorArg arg;
    bool strided = false;  // then `strides` (broadcast, over `dims`) follow it
    Dims strides{};
  };
  std::string prelude;        // empty: plain stores
  bool transcendental = false;  // Epilogue::transcendental (CPU register blocks)
  std::vector<Input> inputs;  // buffer operands, in operand order
  bool strided = false;       // any input strided: `dims` is passed last
  Dims dims{};
  // The prelude also stores an operand, its planes every other one
  // (epilogue_cl's `copied`: a ShuffledOutput's other half): where it
  // starts and its plane's elements, passed after `dims`.
  struct PlaneCopy {
    TensorArg to;
    cl_int plane = 0;
  };
  std::optional<PlaneCopy> copy;
  // Y's rows layer-normalized after the product (a FusedMatMul's RowNorm,
  // graph.h): gemm.cl's -DROW_NORM tiles only, no split; its parameters
  // (ROW_NORM_PARAMS) passed after the split's.
  struct RowNormArgs {
    TensorArg gamma, beta;
    bool has_beta = false;
    float epsilon = 1e-5f;
    int64_t row = 0;  // Y's row length (its last dim)
  };
  std::optional<RowNormArgs> row_norm;
  // When the program begins with a residual Add whose operand is Y's own
  // storage (in-place sharing), Y already holds the residual: split-K adds
  // its slices onto it instead of onto zeros (`residual`), and then runs
  // residual_prelude, the program after that Add with the same parameters
  // (empty: nothing follows the Add).
  bool residual = false;
  std::string residual_prelude;
  // Over the residual, when the program after its Add is only a bias along
  // Y's last dim (x0 + bias, a Linear's): that vector, which split-K's first
  // slice adds as the product's C (splits_add_bias), so no pass follows.
  std::optional<TensorArg> residual_bias;
  // Y is a window of a larger tensor (patch-based execution: graph.h
  // TensorWindow): the prelude redefines common.cl's YI(i) (where Y's
  // element i is stored), YRUN(i, n) (whether elements [i, i+n) are
  // contiguous there) and YWIN_PARAMS, and `ywin_dims` (Y's shape) and
  // `ywin_strides` (its storage's) are passed after everything else.
  bool window = false;
  Dims ywin_dims{}, ywin_strides{};
  // X (input 0) is a window: XPLANE, XROW, XCOL, XCOLRUN and XWIN_PARAMS
  // redefined (common.cl), its plane and row strides and width passed last.
  bool xwindow = false;
  cl_int xwin_plane = 0, xwin_row = 0, xwin_w = 0;
  // The conv's channel program (channel_program(), graph.h): gemm.cl's
  // XPRO and XPRO_PARAMS (epilogue_cl.h channel_program_cl), its operands
  // passed after everything else. Only the 1x1 GEMM's tiles take it.
  // With a depthwise input (ChannelProgram::depthwise) the prelude defines
  // XLOAD too, and the depthwise weights and `xdepthwise_dims` (X's H, W
  // and the output's width) are passed before the operands.
  std::string xprogram_prelude;
  std::vector<TensorArg> xprogram_args;  // the program's operands
  bool xdepthwise = false;
  TensorArg xdepthwise_weights{};
  Dims xdepthwise_dims{};
  bool xprogram() const { return !xprogram_prelude.empty(); }
  void append_args(NodeBuilder& b) const;           // all of the above but the channel program's
  void append_xprogram_args(NodeBuilder& b) const;  // the channel program's, after append_args' (gemm.cl XPRO_PARAMS)
};
// A fused node's epilogue program (attribute `program`), ending in
// RoundTf32 where its output is Tensor::stored_tf32 and tf32 runs (b.tf32).
Epilogue fused_epilogue(const NodeBuilder& b);
// Adds Y's window to `tail` where output 0 of the node is one (else leaves
// it as it is); the lowering then writes Y through YI.
void window_output(NodeBuilder& b, FusedTail& tail);
// The OpenCL C that makes YI, YRUN and YWIN_PARAMS Y's window's.
std::string window_prelude();
// Adds X's window to `tail` where input 0 of the node (4D) is one; the
// lowering's kernels then read X through XPLANE, XROW and XCOL (GEMMs over
// its pixels: their B operand's K stride is xwin_plane).
void window_input(NodeBuilder& b, FusedTail& tail);

// Kernel variants chosen by shape and device, named instead by
// KernelChoice::conv for measurements and tests (bench/kernels,
// tests/test_fused_kernels). The conv/gemm tiles are "MxN" (rows of output
// channels x output pixels per work-group), "v" at the end for float4 local
// reads, "taps:" in front for the baseline convolution that decodes every tap
// with divisions; "/split" after them for split-K (K in slices added into Y
// atomically) with the slices chosen by shape, "/sN" (named only) for N slices.
std::vector<std::string> conv_tile_variants();
// The k-groups forms of GEMMs with K >= 128 (gemm_kgroups.cl: "32x32k4",
// "64x64k2"...: the tile and its groups of 64 work-items over slices of K);
// elsewhere, named, the tile alone.
std::vector<std::string> kgroups_variants();
// Throws Error unless `variant` is a KernelChoice::conv: "" (the choice by
// shape and device), "gpu" (the GPU kernels with the tiles chosen by shape or
// tuning), "gpu/sN" (those split in N where allowed), the tiles above, or
// "winograd", "winograd/split", "winograd/sN" (conv_winograd.cl for the 3x3
// stride-1 single-group convs, the GPU kernels' choice elsewhere) with
// ":form"s after "winograd" (:raw, :pf2, :db, :db8, :t16, :nopairs, and the
// diagnostic builds :dng, :dnm).
void check_conv_variant(const std::string& variant);
// The Winograd form a 3x3 stride-1 conv (C -> OC channels, OH x OW output,
// `images`) takes by shape on a GPU of `compute_units`, untuned: "winograd",
// "winograd/sN" (split, where `can_split`) or "winograd:t16:db" (the fp32
// build's 16-tile form).
std::string winograd_variant_by_shape(int64_t C, int64_t OC, int64_t OH, int64_t OW, int64_t images,
                                      int compute_units, bool can_split, bool fp32);
// The variant a GPU of `compute_units` runs an MxNxK product in (gemm.cl,
// `batches` of them) without a tuning cache: the fastest by the measured GEMM
// times (docs/kernel-choices.md#the-gemm-time-model), split-K where
// `can_split`, k-groups where `can_kgroups` (K >= 128), the narrow tiles
// where `narrow` (a product, not a 1x1 conv); with `among`, only the
// variants it names ("" if none): those a measurement has.
std::string gemm_variant_by_shape(int64_t M, int64_t N, int64_t K, int64_t batches, int compute_units, bool can_split,
                                  bool can_kgroups, bool narrow, const std::vector<std::string>* among = nullptr);
// Whether Y's planned storage overlaps an input's (lower/conv.cpp): split-K
// zeroes Y and adds into it, so it must not.
bool output_overlaps_input(const NodeBuilder& b, int except = -1);  // input `except` not counted
// Split-K's passes around the slices (lower/conv.cpp; gemm.cl and gemm_mma.cl):
// Y zeroed, then the epilogue in place; onto the residual Y already holds
// (FusedTail::residual) nothing is zeroed and the program after its Add runs.
bool splits_onto_residual(const NodeBuilder& b, const FusedTail& tail);
void launch_splitk_zero(NodeBuilder& b, const Source& split, const TensorArg& Y, int64_t total, const FusedTail& tail);
void launch_splitk_finish(NodeBuilder& b, const TensorArg& Y, int64_t total, const FusedTail& tail);
// Onto the residual with only a bias after it (FusedTail::residual_bias):
// that bias as the product's C in `p` and `C`, which the first slice adds;
// true where taken, and then no finishing pass is launched.
bool splits_add_bias(const NodeBuilder& b, const FusedTail& tail, GemmParams& p, TensorArg& C);
// Whether split-K over Y would take both passes (zeroing and finishing).
bool splitk_takes_both_passes(const NodeBuilder& b, const FusedTail& tail);
// FusedConvMaxPool with overlapping windows (KernelChoice::conv_maxpool):
// "direct" (conv2d_maxpool, one work-item per pooled output) or
// "tiled:<tile>" (conv2d_maxpool_tiled with that tile, the direct kernel
// where it does not fit local memory); "": the choice by shape (and tuning
// cache). check_conv_maxpool_variant throws Error on an unknown name.
std::vector<std::string> conv_maxpool_variants();
void check_conv_maxpool_variant(const std::string& variant);

// How a lowering measures one candidate for choose_variant (tuning.h): the
// milliseconds of the launches `emit` prepares on `b`, timed together (a
// split's passes too), which are then released. Negative outside a tuning
// scope, or when `emit` returns false (the candidate cannot run).
double time_candidate(NodeBuilder& b, const std::function<bool()>& emit);

// Op families (lower/*.cpp); each returns false to fall back.
bool lower_unary(NodeBuilder& b);
bool lower_binary(NodeBuilder& b);
bool lower_where(NodeBuilder& b);
bool lower_cast(NodeBuilder& b);
bool lower_conv(NodeBuilder& b);
bool lower_conv(NodeBuilder& b, const FusedTail& tail);  // FusedConv: Conv + epilogue
bool lower_conv_transpose(NodeBuilder& b);
bool lower_gemm(NodeBuilder& b);
bool lower_matmul(NodeBuilder& b);
bool lower_matmul(NodeBuilder& b, bool trans_b, const FusedTail& tail);  // FusedMatMul
bool lower_fused_conv(NodeBuilder& b);         // lower/fused.cpp
bool lower_fused_matmul(NodeBuilder& b);
bool lower_fused_elementwise(NodeBuilder& b);
bool lower_fused_gather(NodeBuilder& b);
bool lower_fused_mlp(NodeBuilder& b);
// FusedAttention (lower/attention.cpp): attention.cl's blocks of query rows
// with K and V tiles in local memory; on CPU devices lower_attention_cpu.
bool lower_fused_attention(NodeBuilder& b);
// RecurrentSteps (lower/recurrent.cpp): recurrent.cl, a launch a step or
// all steps in one persistent launch (KernelChoice::recurrent).
bool lower_recurrent_steps(NodeBuilder& b);
void check_recurrent_form(const std::string& form);  // throws unless "", "steps" or "persistent"
// Throws Error unless `blocks` is "" or KernelChoice::attention's "BMxSPLIT".
void check_attention_blocks(const std::string& blocks);
// The head dims (Q/K's and V's last dims) its kernels take: the fused forms'
// attention_head_dim (lower/catalog.cpp).
constexpr int kMaxAttentionHeadDim = 256;
// The channels a channel gate (ChannelProgram::gate) may have: gemm.cl and
// gemm_kgroups.cl keep its values in local memory (8 KiB at most), beside
// their tiles. The fused forms' channel_gate_channels (lower/catalog.cpp).
constexpr int64_t kMaxGateChannels = 2048;
// And the weights (channels x inputs) a gate may have: each work-group
// reads them all and computes every channel's sum, which cost more than the
// kernel they save beyond 16K (docs/fused-ops.md#channel-gates).
constexpr int64_t kMaxGateWeights = 16384;
// A FusedAttention's buffers and scalars as its kernels take them.
struct AttentionLaunch {
  MemArg q, k, v, mask, y;
  AttentionParams p;
  int64_t batches;  // the flat batch dims (p.heads per b0)
};
// FusedConvMaxPool (lower/conv.cpp): 2x2/2 windows on GPUs are an implicit GEMM
// with no recomputation; overlapping windows a tiled direct conv that
// recomputes only the edges of each tile's conv region (on PoCL still 1.5-2x
// conv + MaxPool's CPU kernels on the ResNet and GoogLeNet stems, hence
// the kernel catalog, catalog.cpp, keeps pool fusion to GPUs).
bool lower_fused_conv_maxpool(NodeBuilder& b);
bool lower_pool(NodeBuilder& b);
bool lower_global_pool(NodeBuilder& b);
bool lower_reduce(NodeBuilder& b);
bool lower_softmax(NodeBuilder& b);
bool lower_batch_norm(NodeBuilder& b);
bool lower_layer_norm(NodeBuilder& b);
bool lower_instance_norm(NodeBuilder& b);
bool lower_copy(NodeBuilder& b);  // Identity/Reshape/... when not aliased
bool lower_concat(NodeBuilder& b);
bool lower_split(NodeBuilder& b);
bool lower_transpose(NodeBuilder& b);
bool lower_slice(NodeBuilder& b);
bool lower_expand(NodeBuilder& b);
bool lower_tile(NodeBuilder& b);
bool lower_gather(NodeBuilder& b);
// A Gather node's geometry (inputs 0 and 1, attribute axis): data viewed as
// [outer, axis_len, inner], the indices flattened to nidx; constant indices
// checked (Error when out of range), data indices given the session's fault
// flags. Empty where its kernels cannot run it (indices neither int64 nor
// int32, data indices outside a session).
struct GatherGeometry {
  int64_t outer = 1, axis_len = 0, nidx = 0, inner = 1;
  bool int64_indices = true;
  bool by_rows = false;  // CPU devices, rows of 16 or more: a gathered row per work-item
  NodeBuilder::FaultFlags faults;
  int64_t count() const { return outer * nidx * inner; }
};
std::optional<GatherGeometry> gather_geometry(NodeBuilder& b);
bool lower_pad(NodeBuilder& b);
bool lower_resize(NodeBuilder& b);
bool lower_grid_sample(NodeBuilder& b);
// ---- texture kernels (texture.cpp), one per family of ops ----
// Each form has its own conditions on the node (texture_kernel below).
enum class TextureForm : uint8_t {
  Conv,        // Conv: dense, depthwise and grouped
  FusedConv,   // FusedConv: an epilogue over the conv's value and at most one residual of Y's shape
  Unary,       // one activation in, scalar constants (Clip's bounds)
  Binary,      // two operands broadcast to Y, each with Y's channels or one
  Pool,        // MaxPool, AveragePool: 2D windows, no dilation
  GlobalPool,  // GlobalAveragePool, GlobalMaxPool
  BatchNorm,   // BatchNormalization with constant statistics
  Concat,      // along channels: whole slices, or lanes of at most 4 inputs
};
// The ops with a texture kernel and its form (texture.cpp).
std::map<std::string, TextureForm> texture_forms();
// The texture form of `op`; null when it has none (texture_forms.cpp).
const TextureForm* texture_form(const std::string& op);
// True when a texture kernel covers node `n` with its 4D activations as
// textures: its op has a form and the node meets that form's conditions
// (texture_forms.cpp). KernelCatalog::texture_kernel for the storage
// assignment; lower_texture covers exactly these nodes.
bool texture_kernel(const Graph& g, const Node& n);

}  // namespace texplan::lower
