// Activations kept inside IEEE half's range under fp16 storage
// (docs/precision.md#scaled-half-storage). Half holds 2^-24 .. 65504: a
// network whose activations shrink block after block (random weights, or
// unnormalized ones) rounds them to zero; one that grows overflows. Each
// activation is stored as value * 2^e instead, e chosen per tensor from its
// largest magnitude in a calibration run, and the nodes that read or write
// it absorb the power of two: a product folds it into its weights or its
// epilogue program, a fused elementwise node into its program, and
// data-movement nodes (Reshape, Concat, pools, Add, ...) pass it through,
// which ties their inputs and outputs to one exponent. Any other node reads
// and writes plain values (exponent 0), as do the graph's inputs; outputs
// are unscaled when they leave the device (runtime/session.h).
//
//   std::vector<float> m = reference::largest_magnitudes(g, inputs);
//   HalfRangeReport r = fit_half_range(g, m);   // Tensor::storage_exponent set
//
// Tensors whose largest magnitude lies in [2^-4, 2^8] keep exponent 0, so a
// network in range runs exactly as without this pass.
#pragma once
#include <string>
#include <vector>

#include "graph/graph.h"

namespace texplan {

struct HalfRangeReport {
  bool calibrated = false;     // the pass ran (fp16 on a device, weights loaded)
  int scaled_tensors = 0;      // activations with storage_exponent != 0
  int min_exponent = 0, max_exponent = 0;  // over the scaled ones (0 when none)
  int rewritten_nodes = 0;     // nodes whose weights or program absorb a power of two
  int64_t copied_weight_bytes = 0;  // weights shared by several products, copied to scale one
  // Activations outside half's range that must stay unscaled (a node that
  // reads plain values holds them): "NAME (largest 3.1e-09, read by Softmax 'sm')".
  std::vector<std::string> out_of_range;
  std::string calibration_error;  // the calibration run failed: every exponent stays 0
};

// `largest[t]` is tensor t's largest magnitude (reference::largest_magnitudes);
// sets storage_exponent on every float activation and rewrites the nodes
// and constants that absorb it. `g` is optimized, not yet patched or stored.
HalfRangeReport fit_half_range(Graph& g, const std::vector<float>& largest);

}  // namespace texplan
