// What the lowering stage's kernels run, as data the optimizer reads: which
// nodes have a texture kernel (storage assignment), which fused operators a
// kind of device runs (the rewrites that make them), and which kernel files
// store floats as half. The lowering stage fills it in (kernel_catalog(),
// lower/lower.h) from its own dispatch tables; the optimizer takes it as an
// input and never includes the lowering, as runtime/offload_hook.h inverts
// the offload's dependency.
#pragma once
#include <functional>
#include <map>
#include <set>
#include <string>

namespace texplan {

struct Graph;
struct Node;

// Fused operators (and the operand views of products) one kind of device
// runs; the optimizer makes only these (OptimizeOptions::device_forms).
struct FusedForms {
  bool conv_maxpool = false;        // FusedConvMaxPool (OptimizeOptions::pool_fusion)
  bool channel_scaled_conv = false; // 1x1 convs scaling their input's channels (channel_scale_fusion)
  bool channel_program_conv = false; // 1x1 convs applying a channel program to X (channel_program_fusion)
  bool depthwise_input_conv = false; // 1x1 convs whose X is a depthwise conv they compute (depthwise_input_fusion)
  bool mlp = false;                 // FusedMlp (mlp_fusion)
  bool shuffled_output_conv = false; // 1x1 convs writing a channel shuffle (channel_shuffle_fusion)
  bool row_norm_product = false;    // products layer-normalizing their rows (row_norm_fusion)
  // MatMul/FusedMatMul reading OperandViews (strided_operands; FusedAttention
  // reads them on every device).
  bool strided_operands = false;
  // FusedAttention with head dims (Q/K's and V's last dims) up to this;
  // 0: none (attention_fusion).
  int attention_head_dim = 0;
  // Channel gates (ChannelProgram::gate) over up to this many channels and
  // this many weights (channels x inputs: every work-group of the conv
  // reads them all); 0: none (channel_gate_fusion).
  int64_t channel_gate_channels = 0, channel_gate_weights = 0;
};

struct KernelCatalog {
  // Whether a texture kernel covers node `n` of `g` with its 4D activations
  // as textures (constants stay buffers): the lowering's texture forms and
  // their conditions on the node (lower/texture_forms.cpp). The storage
  // assignment (optimize/storage.h) makes textures only where it says yes.
  std::function<bool(const Graph& g, const Node& n)> texture_kernel;
  // Per device type (DeviceInfo::type: "gpu", "cpu"); other types get `other_devices`.
  std::map<std::string, FusedForms> fused_forms;
  FusedForms other_devices;
  // Kernel files (src/kernels) that build with -DTEXPLAN_HALF: their float
  // tensors stored as IEEE half (Precision::Fp16); a node needing another
  // runs on the CPU under fp16.
  std::set<std::string> half_kernel_files;

  const FusedForms& fused_for(const std::string& device_type) const {
    auto it = fused_forms.find(device_type);
    return it == fused_forms.end() ? other_devices : it->second;
  }
  bool half_kernel_file(const std::string& file) const { return half_kernel_files.count(file) > 0; }
};

}  // namespace texplan
