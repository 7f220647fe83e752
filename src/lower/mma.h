// TF32 tensor-core lowerings (src/kernels/gemm_mma.cl) of the implicit-GEMM
// convolution, its 2x2 max-pool fusion and the GEMM, used instead of
// gemm.cl's exact fp32 kernels where the session asked for tf32
// (SessionOptions::precision, NodeBuilder::tf32) on an NVIDIA GPU with
// tensor cores. Each returns false where it does not apply: the caller goes
// on with the fp32 kernel.
#pragma once
#include "lower/ops.h"

namespace texplan::lower {

// tf32_supported (device/device.h): an NVIDIA GPU of compute capability
// 8.0 or later (cl_nv_device_attribute_query; assumed when it is absent).
// Whether b's tf32 kernels run as tf32: on such a GPU, or on any device with
// the mma emulated (KernelChoice::tf32_emulation, tests).
bool tf32_runs(const NodeBuilder& b);

// A build of kernel `file` with mma_common.cl's tf32 primitives after
// `prelude`: the inline PTX on NVIDIA, the emulated mma elsewhere (and
// wherever KernelChoice::tf32_emulation asks for it).
Source mma_build(const NodeBuilder& b, const char* file, const std::string& defines, const std::string& prelude);

// Conv geometry as lower/conv_select.h's ConvGeometry (2D; H = 1 for 1D).
struct MmaConv {
  int64_t N, C, H, W, OC, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw, groups;
};
// conv2d_gemm in tf32, or with constant weights conv2d_mma_taps (its
// weights packed at load); PH, PW > 0: FusedConvMaxPool's 2x2 stride-2 form
// (Y is the PH x PW pooled output).
bool launch_conv_mma(NodeBuilder& b, const MmaConv& c, bool has_bias, const TensorArg& bias, const FusedTail& tail,
                     int64_t PH = 0, int64_t PW = 0);
template <class G>  // any struct with MmaConv's fields (lower/conv_select.h's ConvGeometry)
bool launch_conv_mma(NodeBuilder& b, const G& g, bool has_bias, const TensorArg& bias, const FusedTail& tail,
                     int64_t PH = 0, int64_t PW = 0) {
  return launch_conv_mma(b,
                         MmaConv{g.N, g.C, g.H, g.W, g.OC, g.OH, g.OW, g.KH, g.KW, g.sh, g.sw, g.ph, g.pw, g.dh, g.dw,
                                 g.groups},
                         has_bias, bias, tail, PH, PW);
}

// gemm in tf32: Y = alpha A B + beta C, batched (lower/conv.cpp's GemmArgs).
struct MmaGemm {
  int64_t M, N, K, a_sm, a_sk, b_sk, b_sn, c_sm, c_sn;
  bool has_c;
  float alpha, beta;
  std::vector<int64_t> batch, a_sb, b_sb, c_sb;
};
bool launch_gemm_mma(NodeBuilder& b, const TensorArg& A, const TensorArg& B, const TensorArg& C, const TensorArg& Y,
                     const MmaGemm& g, const FusedTail& tail);
template <class G>
bool launch_gemm_mma(NodeBuilder& b, const TensorArg& A, const TensorArg& B, const TensorArg& C, const TensorArg& Y,
                     const G& g, const FusedTail& tail) {
  return launch_gemm_mma(b, A, B, C, Y,
                         MmaGemm{g.M, g.N, g.K, g.a_sm, g.a_sk, g.b_sk, g.b_sn, g.c_sm, g.c_sn, g.has_c, g.alpha,
                                 g.beta, g.batch, g.a_sb, g.b_sb, g.c_sb},
                         tail);
}

// Whether the tf32 guess runs a 3x3 convolution (stride 1, one group, its
// weights constant) of C -> OC channels over `pixels` output pixels of
// `images` on the warpgroup tiles (conv2d_wgmma_taps) rather than Winograd:
// on sm_90a, with 64 channels or more on both sides and 1.5 G multiply-adds
// or more, and `pooled` (FusedConvMaxPool's 2x2 form, which cannot split
// K) over 56x56 pixels or more, where they ran 8-30% faster than Winograd
// on the H200; elsewhere Winograd and the taps tiles were faster
// (docs/kernel-choices.md#warpgroup-tiles).
bool wgmma_before_winograd(const NodeBuilder& b, int64_t C, int64_t OC, int64_t pixels, int64_t images,
                           bool pooled);

// Tile variants of gemm_mma.cl ("mma128x64": 128 output channels or rows x
// 64 pixels or columns per work-group), which KernelChoice::mma names.
std::vector<std::string> mma_tile_variants();
// Throws Error unless `variant` is a KernelChoice::mma: "" (chosen by shape
// or tuning) or tiles, "+FLAG" after them for gemm_mma.cl's -DMMA_FLAG
// (DIAG_NO_GLOBAL, DIAG_NO_MMA: diagnostic builds that compute wrong values,
// to time parts).
void check_mma_variant(const std::string& variant);
bool mma_tiles_forced(const NodeBuilder& b);  // tiles named: they run where tf32 applies

}  // namespace texplan::lower
