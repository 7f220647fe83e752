#include "lower/optimize_for_device.h"

#include <algorithm>

#include "lower/ops.h"

namespace texplan::runtime {

OptimizeOptions runnable(OptimizeOptions o, const std::string& device_type) {
  if (device_type == "cpu-executor") return o;
  const auto ops = kernel_ops();
  if (device_type != "gpu" || std::find(ops.begin(), ops.end(), "FusedConvMaxPool") == ops.end())
    o.pool_fusion = false;
  if (device_type != "cpu") o.channel_scale_fusion = false;  // only the CPU kernels' GEMM scales its input
  if (device_type != "cpu") o.mlp_fusion = false;  // one work-group per image: on a GPU slower than two wide GEMVs
  if (device_type == "cpu") o.strided_operands = false;  // PoCL's GEMM kernels want contiguous rows
  return o;
}

}  // namespace texplan::runtime
