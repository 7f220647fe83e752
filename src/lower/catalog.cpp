// The kernel catalog (optimize/kernel_catalog.h): what this stage's kernels
// run, read off its own tables so that the optimizer and the lowerings
// cannot disagree.
#include <algorithm>

#include "lower/lower.h"
#include "lower/ops.h"

namespace texplan::lower {

const KernelCatalog& kernel_catalog() {
  static const KernelCatalog catalog = [] {
    KernelCatalog k;
    k.texture_kernel = [](const Graph& g, const Node& n) { return texture_kernel(g, n); };
    const std::vector<std::string> ops = kernel_ops();
    const bool conv_maxpool = std::find(ops.begin(), ops.end(), "FusedConvMaxPool") != ops.end();
    // - FusedConvMaxPool on GPUs only: on CPU devices its overlapping-window
    //   form recomputes the conv per window position and loses to conv +
    //   MaxPool (docs/kernel-choices.md#fusedconvmaxpool-on-cpu-devices).
    // - The channel-scale fusion (channel_scaled(), graph.h) on CPU devices
    //   only, whose 1x1 GEMM kernel scales its input rows.
    // - Channel programs (channel_program(), graph.h) on GPUs only, whose
    //   GEMM tiles apply them as they load X; the CPU kernels' GEMM does not.
    //   So are depthwise inputs (ChannelProgram::depthwise), the GEMM
    //   computing each depthwise sum as it loads it, and channel gates
    //   (ChannelProgram::gate), computed once per work-group.
    // - FusedMlp on CPU devices only: its one work-group per image loses to
    //   two wide GEMVs on GPUs (docs/kernel-choices.md#fusedmlp-on-gpus).
    // - Strided product operands off CPU devices: they leave the CPU
    //   kernels' contiguous GEMM (docs/kernel-choices.md#strided-product-operands).
    // - FusedAttention everywhere: attention.cl on GPUs, cpu_attention.cl on CPU devices.
    // - Shuffled outputs (ShuffledOutput, graph.h) on GPUs only, where a
    //   Transpose is a launch: the CPU kernels' stores then go an element at
    //   a time, not as vectors, slower than the Transposes on PoCL
    //   (docs/fused-ops.md#shuffled-output).
    // - Row norms (RowNorm, graph.h) on GPUs only, where the
    //   LayerNormalization is a launch; the CPU kernels' GEMM has no form.
    k.fused_forms["gpu"] = {.conv_maxpool = conv_maxpool, .channel_program_conv = true,
                            .depthwise_input_conv = true, .shuffled_output_conv = true, .row_norm_product = true,
                            .strided_operands = true,
                            .attention_head_dim = kMaxAttentionHeadDim,
                            .channel_gate_channels = kMaxGateChannels,
                            .channel_gate_weights = kMaxGateWeights};
    k.fused_forms["cpu"] = {.channel_scaled_conv = true, .mlp = true, .attention_head_dim = kMaxAttentionHeadDim};
    k.other_devices = {.strided_operands = true, .attention_head_dim = kMaxAttentionHeadDim};
    // Files whose float tensors go through common.cl's real_t, LD and ST.
    k.half_kernel_files = {"elementwise.cl",   "shape.cl",        "pool.cl",        "reduce.cl",
                           "norm.cl",          "fused.cl",        "cpu_conv.cl",    "cpu_gemm.cl",
                           "cpu_depthwise.cl", "cpu_winograd.cl", "texture_ops.cl", "texture_conv.cl",
                           "gemm.cl",          "conv.cl",         "conv_maxpool.cl", "attention.cl",
                           "cpu_attention.cl", "gemm_kgroups.cl", "recurrent.cl"};
    return k;
  }();
  return catalog;
}

}  // namespace texplan::lower
