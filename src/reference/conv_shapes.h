// Shape arithmetic of the convolutions, shared by the reference operators
// (conv.cpp) and the validation stage (src/validate), so both compute a
// Conv's or ConvTranspose's channels and output extent one way. The tensors
// need only dtype and shape (values are not read).
#pragma once
#include "reference/common.h"

namespace texplan::reference {

struct ConvShapes {
  int64_t N, C, M, group, Cg, Mg;
};

// Checks X [N, C, ...] against W (Conv: W [M, C/group, k...]; ConvTranspose:
// W [C, M/group, k...]), group and kernel_shape; fails naming the node.
ConvShapes conv_shapes(const OpContext& c, const HostTensor& x, const HostTensor& w, bool transposed);

// Output extent and padding of a ConvTranspose (attributes of c.node).
Window transposed_window(const OpContext& c, const HostTensor& x, const HostTensor& w);

}  // namespace texplan::reference
