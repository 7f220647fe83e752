// Seeded random values for a graph's inputs, for running a bare .onnx with
// no test data (as onnxruntime_perf_test and trtexec do).
#pragma once
#include <cstdint>
#include <vector>

#include "graph/graph.h"

namespace texplan::runtime {

// One tensor per graph input (g.inputs order), drawn from `seed` and the
// input's position: floats uniform in [-1, 1); integers in [0, 100), or in
// [0, n) where the input indexes a constant table of n entries along a
// Gather's axis (token ids into an embedding), also through Cast, Reshape,
// Squeeze, Unsqueeze, Flatten and Identity; booleans 0 or 1. The same seed
// gives the same values.
std::vector<HostTensor> random_inputs(const Graph& g, uint32_t seed);

// The exclusive upper bound random_inputs draws input `input` (a tensor id)
// from when it is an integer: 100, or the smallest table it indexes.
int64_t random_integer_bound(const Graph& g, int input);

}  // namespace texplan::runtime
