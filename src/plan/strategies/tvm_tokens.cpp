// tvm-tokens: Apache TVM's graph memory planner (StorageAllocator with
// TokenAllocator1D, the scheme of TVM PR #2120), kept as the baseline.
// Walk the steps in order. At each step:
//   1. for every record first used at this step (record order), request a
//      token of `bytes`: in the free list (a multimap keyed by token size)
//      look at sizes in [bytes/16, bytes*16] (match_range = 16): first the
//      free tokens at least as large, smallest first (lower_bound upward),
//      then the smaller ones, largest first (downward from bytes). The first
//      one found is taken and grows to max(its size, bytes). None: a new
//      token of `bytes`.
//   2. then release the tokens of records whose last use is this step (a
//      node's inputs are freed only after its outputs were allocated), back
//      into the free list under their (possibly grown) size.
// Every token becomes one buffer pool of the largest size ever requested
// from it. Texture records never share tokens with buffers (TVM keys free
// lists by storage scope): they go to TVM's texture pools.
#include <algorithm>
#include <map>
#include <numeric>

#include "plan/arena.h"

namespace texplan::plan::detail {

namespace {
constexpr int64_t kMatchRange = 16;

struct TokenAllocator {
  std::vector<Pool>& pools;
  std::multimap<int64_t, int> free_by_size;  // token size -> pool id

  int request(int64_t bytes) {
    const auto lo = free_by_size.lower_bound(bytes / kMatchRange);
    const auto mid = free_by_size.lower_bound(bytes);
    const auto hi = free_by_size.upper_bound(bytes * kMatchRange);
    auto take = [&](std::multimap<int64_t, int>::iterator it) {
      const int id = it->second;
      free_by_size.erase(it);
      pools[id].bytes = std::max(pools[id].bytes, bytes);
      return id;
    };
    if (mid != hi) return take(mid);          // smallest free token >= bytes
    if (mid != lo) return take(std::prev(mid));  // largest free token < bytes
    const int id = static_cast<int>(pools.size());
    pools.push_back(Pool{id, Storage::Buffer, bytes});
    return id;
  }
  void release(int id) { free_by_size.emplace(pools[id].bytes, id); }
};
}  // namespace

MemoryPlan plan_tvm_tokens(const std::vector<UsageRecord>& recs, const DeviceProfile& dev) {
  MemoryPlan plan;
  plan.placements.resize(recs.size());
  std::vector<int32_t> buffers;
  for (int32_t i = 0; i < static_cast<int32_t>(recs.size()); ++i)
    if (recs[i].storage == Storage::Buffer) buffers.push_back(i);
  std::vector<int32_t> by_first = buffers, by_last = buffers;
  std::stable_sort(by_first.begin(), by_first.end(),
                   [&](int32_t a, int32_t b) { return recs[a].first < recs[b].first; });
  std::stable_sort(by_last.begin(), by_last.end(),
                   [&](int32_t a, int32_t b) { return recs[a].last < recs[b].last; });

  TokenAllocator tokens{plan.pools, {}};
  size_t a = 0, r = 0;
  while (r < by_last.size()) {  // first <= last, so allocations run out first
    const int32_t step = a < by_first.size() ? std::min(recs[by_first[a]].first, recs[by_last[r]].last)
                                             : recs[by_last[r]].last;
    for (; a < by_first.size() && recs[by_first[a]].first == step; ++a)
      plan.placements[by_first[a]].pool = tokens.request(recs[by_first[a]].bytes);
    for (; r < by_last.size() && recs[by_last[r]].last == step; ++r)
      tokens.release(plan.placements[by_last[r]].pool);
  }
  place_textures_in_pools(recs, dev, plan);
  return plan;
}

}  // namespace texplan::plan::detail
