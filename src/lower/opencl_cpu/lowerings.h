// Lowerings for CPU OpenCL devices (PoCL), onto src/kernels/cpu_*.cl:
// register-blocked kernels without local memory or barriers, which a CPU
// compiler vectorizes (the GPU kernels' 16x16 work-groups, local tiles and
// barriers are a poor fit there). The GPU lowerings call these first when
// the device is a CPU; false means "not covered": the caller goes on.
#pragma once
#include "lower/opencl_cpu/common.h"
#include "lower/ops.h"

namespace texplan::lower {

// Conv and FusedConv, 1-D and 2-D, any groups (depthwise included).
bool lower_conv_cpu(NodeBuilder& b, const FusedTail& tail);

// 1x1 Conv/FusedConv with stride 1 and no padding as a GEMM per image and
// group (cpu_gemm.cl); false: another shape.
bool lower_conv1x1_cpu(NodeBuilder& b, const FusedTail& tail, const CpuConv& c);

// Depthwise Conv/FusedConv (lower/opencl_cpu/depthwise.cpp); false: not depthwise.
bool lower_depthwise_cpu(NodeBuilder& b, const FusedTail& tail, const CpuConv& c);

// Every other convolution: conv2d_ocvec_cpu (cpu_conv.cl) where the weights
// are constant, conv2d_rows_cpu for stems (C <= 4) when a block "OCBxPB" of
// it is named, conv2d_cpu for the rest; register block by tuning.
void lower_conv_direct_cpu(NodeBuilder& b, const FusedTail& tail, const CpuConv& c);
// conv2d_ocvec_cpu's blocks (CpuVariant::channel_vectors: ocb pixels of an
// output row x nv vectors of pb output channels, groups of one work-item)
// for OCg output channels per group and OW output columns on a device whose
// SIMD registers hold `width` floats; the first is the shape rule's choice,
// the last the same block with the driver's group size.
std::vector<CpuVariant> conv_ocvec_candidates(int64_t OCg, int64_t OW, int width);

// 3x3 stride-1 Conv/FusedConv by Winograd (lower/opencl_cpu/winograd.cpp) where it
// pays; false: the direct kernel runs it.
bool lower_conv_winograd_cpu(NodeBuilder& b, const FusedTail& tail, const CpuConv& c);
// KernelChoice::cpu_winograd names "direct" (no Winograd) or one Winograd
// variant "fM OCBxPB wOCW cCC" for every conv it covers; "": the choice by
// shape (and tuning cache). Throws Error on a malformed name.
void check_cpu_winograd_variant(const std::string& variant);

// FusedAttention (lower/opencl_cpu/attention.cpp, cpu_attention.cl): a few
// query rows per work-item, 16 keys at a time.
bool lower_attention_cpu(NodeBuilder& b, const AttentionLaunch& a);

// ConvTranspose (2-D) whose taps tile the output exactly (U-Net's 2x2
// stride 2); others are left to the caller.
bool lower_conv_transpose_cpu(NodeBuilder& b);

// Add/Sub/Mul/Div of `rows` x `cols` A and one value per row S (S op A when
// scalar_first): the per-channel broadcast of squeeze-excitation.
bool launch_channel_binary_cpu(NodeBuilder& b, const TensorArg& A, const TensorArg& S, const TensorArg& Y,
                               int64_t rows, int64_t cols, const std::string& op, bool scalar_first);

// GlobalAveragePool of `rows` rows of R elements each.
bool lower_global_avg_pool_cpu(NodeBuilder& b, int64_t rows, int64_t R);

// Y = alpha A B + beta C, batched (the GEMM of lower/conv.cpp's launch_gemm),
// on cpu_gemm.cl: one row (or column) as a matrix-vector product, a
// constant transposed B packed once as [K, N].
struct CpuGemm {
  int64_t M, N, K, a_sm, a_sk, b_sk, b_sn, c_sm, c_sn;
  bool has_c;
  float alpha, beta;
  std::vector<int64_t> batch, a_sb, b_sb, c_sb;
  // B's row k scaled by k_scale[k] (one value per row, every batch): a
  // 1x1 conv's channel scale (channel_scaled(), graph.h).
  std::optional<TensorArg> k_scale = std::nullopt;
};
bool launch_gemm_cpu(NodeBuilder& b, const TensorArg& A, const TensorArg& B, const TensorArg& C, const TensorArg& Y,
                     const CpuGemm& g, const FusedTail& tail);
template <class G>  // any struct with CpuGemm's fields (lower/conv.cpp's GemmArgs)
bool launch_gemm_cpu(NodeBuilder& b, const TensorArg& A, const TensorArg& B, const TensorArg& C, const TensorArg& Y,
                     const G& g, const FusedTail& tail) {
  return launch_gemm_cpu(b, A, B, C, Y,
                         CpuGemm{g.M, g.N, g.K, g.a_sm, g.a_sk, g.b_sk, g.b_sn, g.c_sm, g.c_sn, g.has_c, g.alpha,
                                 g.beta, g.batch, g.a_sb, g.b_sb, g.c_sb},
                         tail);
}

}  // namespace texplan::lower
