// The weight side of Winograd F(m x m, 3x3), shared by the GPU kernel
// (conv_winograd.cl, lower/conv.cpp) and the CPU one (cpu_winograd.cl,
// lower/opencl_cpu/winograd.cpp): each packs the results in its own layout.
#pragma once
#include <cstdint>

namespace texplan::lower {

// U = G g G^T of one 3x3 filter g (row-major) for m = 2 or 4, computed in
// double: (m + 2)^2 values, row-major, into u.
void winograd_filter_transform(const float* g, int m, double* u);

}  // namespace texplan::lower
