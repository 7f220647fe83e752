// Winograd convolutions on CPU devices (3x3, stride 1): not written yet;
// every conv goes on to the direct kernel.
#include "runtime/ops_cpu.h"

namespace texplan::runtime {

bool lower_conv_winograd_cpu(NodeBuilder&, const FusedTail&, const CpuConv&) { return false; }

}  // namespace texplan::runtime
