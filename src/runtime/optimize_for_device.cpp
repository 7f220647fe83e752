#include "runtime/optimize_for_device.h"

#include <algorithm>

#include "runtime/ops.h"

namespace texplan::runtime {

OptimizeOptions runnable(OptimizeOptions o, bool cpu_executor) {
  if (cpu_executor) return o;
  const auto ops = kernel_ops();
  if (std::find(ops.begin(), ops.end(), "FusedConvMaxPool") == ops.end()) o.pool_fusion = false;
  return o;
}

}  // namespace texplan::runtime
