// Patch-based execution of the memory-heavy first stages of a CNN
// (MCUNetV2's idea; docs/patching.md). A prefix of the execution order (the
// segment) is run patch by patch: each patch of the segment's outputs is
// computed from its receptive field through the whole segment, so only one
// patch's intermediates are live, and the outputs are assembled in their
// full buffers. The price is the recomputed overlap (halo) between patches.
//
//   Graph g = import_onnx(path);
//   optimize(g, {});
//   PatchReport r = apply_patching(g, parse_patch("auto"));  // g now runs per patch
//   PlanInput pin = make_usage_records(g);                    // patch tensors get records
//
// The rewrite is an ordinary graph: per patch, the segment's nodes on
// patch-shaped tensors (convolutions and pools with per-side pads: the
// real padding only on sides at the image border). Where a consumer reads
// less of a tensor than the patch holds (a halo), a Slice gives it that
// part: a window of the patch tensor (no copy) where the consumer's
// kernels read windows (reads_window), else a copy (a crop). A segment
// output's producer writes each patch's part straight into the full
// tensor: its patch tensor is a window of the full one (writes_windows),
// and one PatchJoin per output (inputs: those windows, output: the full
// tensor; it executes nothing) hands the full tensor on. Where the
// producer's kernels cannot, a PatchWrite per patch copies the tile. Every
// later stage (storage, usage records, planner, validator, timeline,
// runtime) sees patch steps as any other step.
//
// PatchWrite: inputs [P] or [F, P], output F' of the full tensor's shape;
// attributes `tile` = [y0, x0, h, w] (the tile in F') and `source` =
// [sy, sx] (the tile's origin in P). F' is F with the tile written (it is
// in place over F: decisions.in_place), the rest of F' is F's (zero-copy
// where in place). With one input, F' outside the tile is undefined until
// later PatchWrites of the chain write it.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"

namespace texplan {

struct PatchOptions {
  enum class Mode { Off, Auto, Grid } mode = Mode::Off;
  int rows = 0, cols = 0;  // Grid: the patch grid over every segment output
  // Auto: extra FLOPs (recomputed halo) at most this fraction of the model's.
  double recompute_budget = 0.5;
};
// "off", "auto", or "RxC" (1..16 each, e.g. "4x4"); throws Error on anything else.
PatchOptions parse_patch(const std::string& s);
std::string to_string(const PatchOptions& o);

// Rows [y0, y1) and columns [x0, x1) of a 4D NCHW tensor.
struct Region {
  int64_t y0 = 0, y1 = 0, x0 = 0, x1 = 0;
  bool empty() const { return y1 <= y0 || x1 <= x0; }
  int64_t height() const { return y1 - y0; }
  int64_t width() const { return x1 - x0; }
  bool operator==(const Region& o) const { return y0 == o.y0 && y1 == o.y1 && x0 == o.x0 && x1 == o.x1; }
};

// True when node `n` maps an output region to input regions: convolutions
// (any stride, dilation, padding, groups; FusedConv without a channel scale,
// FusedConvMaxPool), Max/AveragePool (no ceil overhang with pad counting),
// BatchNormalization, elementwise nodes whose activation inputs have the
// output's spatial shape, channel Concat. Global pooling, resizes, shape
// ops, products and anything across positions end a segment.
bool patchable(const Graph& g, const Node& n);

// The region of every tensor that computing `wanted` (tensor id, region)
// needs through nodes [begin, end) in order: per tensor the bounding box of
// what its readers need (windows for convolutions and pools, clamped to the
// tensor; the same region for elementwise inputs). Empty for tensors not
// needed. Throws Error naming the node when one is not patchable.
std::vector<Region> required_regions(const Graph& g, int begin, int end, const std::vector<std::pair<int, Region>>& wanted);

// Whether the runtime's kernels for node `n` write its output as a window
// of a larger tensor (graph.h TensorWindow: a patch's part of a segment
// output, written in place): convolutions (FusedConvMaxPool included),
// Max/AveragePool, FusedElementwise. An elided Concat whose inputs are
// written so is one too (the rewrite sees to it).
bool writes_windows(const Graph& g, const Node& n);
// Whether they read input `pos` of `n` as a window of a larger tensor (a
// patch tensor's part that `n` needs, instead of a copy of it): a
// convolution's or pool's input of one image, a FusedConv's epilogue
// operands and a FusedElementwise's operands of the output's shape.
bool reads_window(const Graph& g, const Node& n, size_t pos);

// Multiply-adds count twice; pools a compare or add per window element;
// other nodes one per output element; copies (Slice, Concat, PatchWrite,
// aliases) none.
double graph_flops(const Graph& g);

// One patched segment: nodes [first, first + nodes) of the graph as it was
// when the segment was chosen.
struct PatchSegment {
  int first = 0, nodes = 0;
  std::vector<std::string> outputs;  // tensors assembled from patches
  int rows = 1, cols = 1;
};

struct PatchReport {
  std::string mode;                      // "off", "auto", "RxC"
  bool applied = false;
  std::string reason;                    // why not applied, when not
  std::vector<PatchSegment> segments;    // in the order they were patched
  int64_t bound_without = 0, bound_with = 0;  // buffer lower bounds of the graph before and after
  double flops_without = 0, flops_with = 0;   // whole model (graph_flops)
  int64_t copy_bytes = 0;                // bytes moved per run by crops and PatchWrites (the fallbacks)
  // What copies, once per segment node, naming the node whose kernels take
  // no window: "crop of TENSOR for NODE (OP)", "tiles of TENSOR: written by
  // NODE (OP)" or "tiles of TENSOR: read by NODE (OP)"; empty when nothing
  // is copied.
  std::vector<std::string> copies;
  int candidates = 0;                    // segment and grid pairs evaluated (auto)
  double extra_flops_pct() const {
    return flops_without > 0 ? 100.0 * (flops_with - flops_without) / flops_without : 0.0;
  }
};

// Analysis and rewrite of `g` (optimized, in its execution order).
// Segments start where a run of patchable nodes starts (the graph's first
// node, or after a node that cannot be patched) and end where at most two
// tensors leave them. Auto: among such segments and square grids 2x2..8x8,
// the one with the lowest lower bound whose extra FLOPs keep the model's
// within the budget (within 1% of that bound: the fewest extra FLOPs), then
// again on the patched graph while the bound drops by more than 1% (at most
// four segments); Grid: that grid on the best segment for it. `g` is
// rewritten only when the patched bound is below the unpatched one.
PatchReport apply_patching(Graph& g, const PatchOptions& opt);

}  // namespace texplan
