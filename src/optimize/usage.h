// Graph -> planner input: the execution order is the graph's node order (one
// step per node), zero-copy aliases share storage, and every tensor that is
// not a constant becomes (part of) one usage record.
#pragma once
#include <vector>

#include "graph/graph.h"
#include "optimize/storage.h"
#include "plan/memory_plan.h"

namespace texplan {

struct UsageOptions {
  // Which tensors are textures (optimize/storage.h); null: all buffers.
  const StorageAssignment* storage = nullptr;
};

// Per tensor, the tensor whose storage it uses (itself if none):
// storage_sharing(g).root (optimize/sharing.h: aliases such as Reshape,
// zero-copy concat, in-place writes).
std::vector<int> alias_roots(const Graph& g);

// Texture extent of a 4D NCHW fp32 activation, channels packed by 4 into
// RGBA pixels: width = W, height = N * ceil(C/4) * H.
plan::TextureExtent texture_extent(const Shape& nchw);

struct PlanInput {
  std::vector<plan::UsageRecord> records;
  std::vector<int> record_of_tensor;  // tensor id -> record index, -1 for constants
  std::vector<int> alias_root;        // tensor id -> storage owner tensor id
  std::vector<int64_t> alias_offset;  // tensor id -> byte offset inside its owner's storage
  int32_t steps = 0;                  // number of execution steps (= nodes)
};

// Graph inputs are live from step 0; graph outputs stay live to the last step.
PlanInput make_usage_records(const Graph& g, const UsageOptions& opt = {});

}  // namespace texplan
