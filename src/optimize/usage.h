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
  // What Float32 tensors are stored as: Float16 halves their records
  // (--precision fp16, runtime::float_storage); other dtypes are unaffected.
  DataType float_storage = DataType::Float32;
};

// Bytes of `t` in memory when Float32 tensors are stored as `float_storage`.
int64_t stored_bytes(const Tensor& t, DataType float_storage);
size_t stored_element_size(DataType t, DataType float_storage);

// Per tensor, the tensor whose storage it uses (itself if none):
// storage_sharing(g).root (optimize/sharing.h: aliases such as Reshape,
// zero-copy concat, in-place writes).
std::vector<int> alias_roots(const Graph& g);

// Texture extent of a 4D NCHW fp32 activation, channels packed by 4 into
// RGBA pixels (layouts in optimize/storage.h): Rows width = W, height =
// N * ceil(C/4) * H; WideRows width = fold * W * ceil(C/4), height =
// N * ceil(H/fold); pixels of 4 x `element_bytes` (4: CL_FLOAT, 2: CL_HALF_FLOAT).
plan::TextureExtent texture_extent(const Shape& nchw, int element_bytes = 4,
                                   TextureLayout layout = TextureLayout::Rows, int32_t fold = 1);

struct PlanInput {
  std::vector<plan::UsageRecord> records;
  std::vector<int> record_of_tensor;  // tensor id -> record index, -1 for constants
  std::vector<int> alias_root;        // tensor id -> storage owner tensor id
  std::vector<int64_t> alias_offset;  // tensor id -> byte offset inside its owner's storage
  std::vector<TextureLayout> texture_layout;  // tensor id -> its texture's layout (Rows for buffers)
  std::vector<int32_t> texture_fold;          // tensor id -> WideRows' fold (1 otherwise)
  int32_t steps = 0;                  // number of execution steps (= nodes)
};

// Graph inputs are live from step 0; graph outputs stay live to the last step.
PlanInput make_usage_records(const Graph& g, const UsageOptions& opt = {});

}  // namespace texplan
