// tvm-texture-pools: buffers by `best`, textures in TVM's 2D texture pools
// (after TVM's TokenAllocator2D, the Adreno texture planner). An image
// cannot be offset-packed, so textures share whole images instead. Walk
// the steps in order; at each step, for every texture record first used
// there (record order), among the free pools of the same pixel size:
//   - if some fit (width >= w and height >= h), take the one that wastes
//     the least area (pool area - w*h);
//   - else take the one whose growth to max(w, pw) x max(h, ph) adds the
//     least area, and grow it, provided that adds less than a new w x h
//     pool would (TVM likewise refuses growth that costs more than the
//     request itself);
//   - else make a new pool of exactly w x h.
// Ties go to the lowest pool id. Then the pools of records whose last use
// is this step are released. Pool bytes: the image's footprint on the
// device (width * height * pixel_bytes, rows pitched where the device
// pitches them: texture_footprint_bytes).
// Unlike TVM we do not also skip pools more than 5x off in one dimension:
// the area rules above already keep such pools from being chosen badly.
#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "plan/arena.h"

namespace texplan::plan::detail {

void place_textures_in_pools(const std::vector<UsageRecord>& recs, const DeviceProfile& dev, MemoryPlan& plan) {
  std::vector<int32_t> by_first, by_last;
  for (int32_t i = 0; i < static_cast<int32_t>(recs.size()); ++i)
    if (recs[i].storage == Storage::Texture) by_first.push_back(i);
  by_last = by_first;
  std::stable_sort(by_first.begin(), by_first.end(),
                   [&](int32_t a, int32_t b) { return recs[a].first < recs[b].first; });
  std::stable_sort(by_last.begin(), by_last.end(),
                   [&](int32_t a, int32_t b) { return recs[a].last < recs[b].last; });

  std::map<int64_t, std::set<int>> free_pools;  // pixel bytes -> free pool ids
  auto area = [](int64_t w, int64_t h) { return w * h; };
  auto acquire = [&](const TextureExtent& e) {
    std::set<int>& candidates = free_pools[e.pixel_bytes];
    int fit = -1, grow = -1;
    int64_t least_waste = std::numeric_limits<int64_t>::max(), least_added = least_waste;
    for (int id : candidates) {
      const Pool& p = plan.pools[id];
      if (p.width >= e.width && p.height >= e.height) {
        const int64_t waste = area(p.width, p.height) - area(e.width, e.height);
        if (waste < least_waste) least_waste = waste, fit = id;
      } else {
        const int64_t added =
            area(std::max(p.width, e.width), std::max(p.height, e.height)) - area(p.width, p.height);
        if (added < least_added) least_added = added, grow = id;
      }
    }
    if (fit < 0 && grow >= 0 && least_added < area(e.width, e.height)) {
      Pool& p = plan.pools[grow];
      p.width = std::max(p.width, e.width);
      p.height = std::max(p.height, e.height);
      fit = grow;
    }
    if (fit >= 0) {
      candidates.erase(fit);
      return fit;
    }
    const int id = static_cast<int>(plan.pools.size());
    plan.pools.push_back(Pool{id, Storage::Texture, 0, e.width, e.height});
    return id;
  };

  size_t a = 0, r = 0;
  while (r < by_last.size()) {
    const int32_t step = a < by_first.size() ? std::min(recs[by_first[a]].first, recs[by_last[r]].last)
                                             : recs[by_last[r]].last;
    for (; a < by_first.size() && recs[by_first[a]].first == step; ++a)
      plan.placements[by_first[a]] = Placement{acquire(recs[by_first[a]].extent)};
    for (; r < by_last.size() && recs[by_last[r]].last == step; ++r) {
      const UsageRecord& rec = recs[by_last[r]];
      free_pools[rec.extent.pixel_bytes].insert(plan.placements[by_last[r]].pool);
    }
  }
  // Pools grow while planning: their bytes are known only at the end. A
  // pool holds one pixel size, so any of its records gives it.
  for (int32_t i : by_first) {
    Pool& p = plan.pools[plan.placements[i].pool];
    p.bytes = texture_footprint_bytes({p.width, p.height, recs[i].extent.pixel_bytes}, dev);
  }
}

MemoryPlan plan_tvm_texture_pools(const std::vector<UsageRecord>& recs, const DeviceProfile& dev) {
  return plan_best(recs, dev);  // `best` already puts textures in these pools
}

}  // namespace texplan::plan::detail
