// The graph optimizations a device can run (optimize/optimize.h): a fused
// operator the runtime has no kernel for would fall back to the CPU, so the
// rewrite that makes it is turned off there.
#pragma once
#include <string>

#include "optimize/optimize.h"

namespace texplan::runtime {

// `o` for a device of type `device_type` (DeviceInfo::type: "gpu", "cpu",
// ...; "cpu-executor" for the CPU reference executor, which runs every fused
// op).
// - FusedConvMaxPool on GPUs only: on CPU devices its overlapping-window form
//   recomputes the conv per window position and loses to conv + MaxPool
//   (docs/kernel-choices.md#fusedconvmaxpool-on-cpu-devices).
// - The channel-scale fusion (channel_scaled(), graph.h) on CPU devices only,
//   whose 1x1 GEMM kernel scales its input rows.
// - FusedMlp on CPU devices only: its one work-group per image loses to two
//   wide GEMVs on GPUs (docs/kernel-choices.md#fusedmlp-on-gpus).
// - Strided product operands on GPUs only: they leave the CPU kernels'
//   contiguous GEMM (docs/kernel-choices.md#strided-product-operands).
OptimizeOptions runnable(OptimizeOptions o, const std::string& device_type);

}  // namespace texplan::runtime
