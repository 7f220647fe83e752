// What the lowering stage's kernels run, as data the optimizer reads: which
// nodes have a texture form (storage assignment), which fused operators a
// kind of device runs (the rewrites that make them), and which kernel files
// store floats as half. The lowering stage fills it in (kernel_catalog(),
// lower/lower.h) from its own dispatch tables; the optimizer takes it as an
// input and never includes the lowering, as runtime/offload_hook.h inverts
// the offload's dependency.
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <string>

namespace texplan {

// The texture kernels (lower/texture.cpp), one per family of ops; each form
// has its own conditions on the node (texture_kernel, optimize/storage.h).
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

// Fused operators (and the operand views of products) one kind of device
// runs; the optimizer makes only these (OptimizeOptions::device_forms).
struct FusedForms {
  bool conv_maxpool = false;        // FusedConvMaxPool (OptimizeOptions::pool_fusion)
  bool channel_scaled_conv = false; // 1x1 convs scaling their input's channels (channel_scale_fusion)
  bool mlp = false;                 // FusedMlp (mlp_fusion)
  bool strided_operands = false;    // products reading OperandViews (strided_operands)
};

struct KernelCatalog {
  std::map<std::string, TextureForm> texture_forms;  // op type -> its texture kernel
  // Per device type (DeviceInfo::type: "gpu", "cpu"); other types get `other_devices`.
  std::map<std::string, FusedForms> fused_forms;
  FusedForms other_devices;
  // Kernel files (src/kernels) that build with -DTEXPLAN_HALF: their float
  // tensors stored as IEEE half (Precision::Fp16); a node needing another
  // runs on the CPU under fp16.
  std::set<std::string> half_kernel_files;

  const TextureForm* texture_form(const std::string& op) const {
    auto it = texture_forms.find(op);
    return it == texture_forms.end() ? nullptr : &it->second;
  }
  const FusedForms& fused_for(const std::string& device_type) const {
    auto it = fused_forms.find(device_type);
    return it == fused_forms.end() ? other_devices : it->second;
  }
  bool half_kernel_file(const std::string& file) const { return half_kernel_files.count(file) > 0; }
};

}  // namespace texplan
