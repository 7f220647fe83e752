// Shared storage: the one place that decides which tensors live inside
// another tensor's bytes (docs/fused-ops.md "Shared storage"). Three kinds,
// all read from the graph as it stands (node order included):
//   - aliases: the output of Identity/Reshape/Flatten/Squeeze/Unsqueeze is
//     its input's bytes, that of a Slice or Gather with a `decisions.view_offset` a
//     contiguous run of them at that offset (optimize/views.cpp);
//   - zero-copy concat: a Concat marked `decisions.elided` has every input
//     as a view at its byte offset in the output (an earlier concat whose
//     inputs already lie contiguously in a later one becomes a view there);
//   - in place: a node marked `decisions.in_place` writes its output over
//     an input it reads at the written index, when that input's storage dies
//     at the node (same shape and dtype, no graph input/output, no constant,
//     no other input of the node overlapping it).
//   - windows: a tensor with a TensorWindow (graph.h) lives in its base's
//     bytes at the window's origin, strided as the base's storage
//     (patch-based execution: a patch's tile of a segment output, a crop
//     of a patch tensor). Nothing else aliases a window or runs in place
//     over one; a PatchJoin (optimize/patch.h) writes nothing.
// The optimizer only sets the marks; whether an in-place mark is taken is
// decided here, for the order the graph has when it is planned.
#pragma once
#include <cstdint>
#include <vector>

#include "graph/graph.h"

namespace texplan {

struct StorageSharing {
  std::vector<int> root;         // tensor id -> tensor whose storage it lives in (itself if none)
  std::vector<int64_t> offset;   // byte offset inside the root's storage
};

// Throws Error naming the node when a Concat is marked elided but its inputs
// cannot be laid out in its output.
StorageSharing storage_sharing(const Graph& g);

// Concats (node ids) that can be elided, decided in the same order
// storage_sharing places them; `candidates[n]` limits the choice (all when empty).
std::vector<int> elidable_concats(const Graph& g, const std::vector<char>& candidates = {});

// Element strides of tensor t's storage: its own contiguous NCHW strides,
// or for a window those of its base's storage.
std::vector<int64_t> storage_strides(const Graph& g, int t);
// A window's first element in its base's storage, in elements (0 otherwise).
int64_t window_offset(const Graph& g, int t);
// Bytes from t's first element to one past its last in its storage (its
// bytes, unless it is a window).
int64_t storage_span_bytes(const Graph& g, int t);

// True for nodes whose output may be written over one of their inputs at the
// same index (the ones the optimizer marks decisions.in_place).
bool may_run_in_place(const Node& n);

// A node that executes nothing: an alias op whose output shares its input's
// bytes, an elided Concat, a PatchJoin, or a Slice whose output is a window
// of its input. `root`/`offset` as in StorageSharing (PlanInput's
// alias_root/alias_offset); empty: no sharing.
bool writes_nothing(const Graph& g, const Node& n, const std::vector<int>& root, const std::vector<int64_t>& offset);

}  // namespace texplan
