// The graph optimizations a device can run (optimize/optimize.h): a fused
// operator the runtime has no kernel for would fall back to the CPU, so the
// rewrite that makes it is turned off there.
#pragma once
#include "optimize/optimize.h"

namespace texplan::runtime {

// `o` without FusedConvMaxPool unless an OpenCL kernel runs it; unchanged for
// the CPU reference executor (which runs every fused op).
OptimizeOptions runnable(OptimizeOptions o, bool cpu_executor);

}  // namespace texplan::runtime
