// tf32 storage (docs/precision.md#tf32-storage): under --precision tf32 the
// tensor-core convolutions round their input to tf32 (10 mantissa bits)
// before multiplying, in a pass over each slice of local memory that costs
// the warpgroup tiles a quarter of their time. Rounding is idempotent, so
// where every reader of an activation is such a convolution, its producer
// may store it rounded (its epilogue's last instruction, RoundTf32) and the
// readers skip their pass with the same result.
//
//   int n = mark_tf32_storage(g);   // Tensor::stored_tf32 set on n tensors
#pragma once
#include "graph/graph.h"

namespace texplan {

// Marks (Tensor::stored_tf32) each activation that a FusedConv or
// FusedConvMaxPool writes and only convolutions read, each as its input X
// and with no channel scale, channel program or operand view on it; clears
// every other tensor's mark. A graph output is never marked. Returns how
// many it marked.
int mark_tf32_storage(Graph& g);

}  // namespace texplan
