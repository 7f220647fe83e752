// The graph optimizations a device can run (optimize/optimize.h): a fused
// operator the runtime has no kernel for would fall back to the CPU, so the
// rewrite that makes it is turned off there.
#pragma once
#include <string>

#include "optimize/optimize.h"

namespace texplan::runtime {

// `o` for a device of type `device_type` (DeviceInfo::type: "gpu", "cpu",
// ...; "cpu-executor" for the CPU reference executor, which runs every fused
// op). FusedConvMaxPool is kept on GPUs only: on CPU devices (PoCL) its
// overlapping-window form recomputes the conv per window position, measured
// 3x slower than conv + MaxPool on squeezenet (80 -> 242 ms), so there the
// full-resolution conv output is stored instead (--no-pool-fusion does the
// same on a GPU). The channel-scale fusion (texplan_channel_scale) is kept
// on CPU devices only, whose 1x1 GEMM kernel scales its input rows; so is
// FusedMlp, whose kernel runs one work-group per image (on the H100
// EfficientNet-B0's 16 took 0.57 ms, the model 1.35 ms against 0.97
// unfused; with 16 items adding each first-layer row, 0.29 ms and 1.03
// against 0.93, 5 alternated rounds: not kept). Strided product operands
// are kept on GPUs only: on PoCL bert_mini ran 6.48-6.59 ms with its 24
// (76 nodes) against 6.15-6.44 with copies (100 nodes), 3 alternated pairs,
// the strided products leaving the CPU kernels' contiguous GEMM; on the
// H100 0.520 against 0.574 ms (72 -> 60 launches, 7 alternated rounds).
OptimizeOptions runnable(OptimizeOptions o, const std::string& device_type);

}  // namespace texplan::runtime
