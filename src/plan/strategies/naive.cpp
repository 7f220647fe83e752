// naive: every record gets its own allocation, nothing is shared. Buffers:
// one buffer pool of exactly the record's bytes; textures: one texture pool
// of exactly the record's extent (its footprint on the device). The upper
// reference for every other plan.
#include "plan/arena.h"

namespace texplan::plan::detail {

MemoryPlan plan_naive(const std::vector<UsageRecord>& recs, const DeviceProfile& dev) {
  MemoryPlan plan;
  plan.placements.resize(recs.size());
  for (size_t i = 0; i < recs.size(); ++i) {
    const UsageRecord& r = recs[i];
    Pool pool{static_cast<int>(plan.pools.size()), r.storage, r.bytes};
    if (r.storage == Storage::Texture) {
      pool.width = r.extent.width;
      pool.height = r.extent.height;
      pool.bytes = texture_footprint_bytes(r.extent, dev);
    }
    plan.placements[i].pool = pool.id;
    plan.pools.push_back(pool);
  }
  return plan;
}

}  // namespace texplan::plan::detail
