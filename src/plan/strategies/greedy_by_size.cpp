// greedy-by-size: TFLite GPU's GreedyBySizeAssignment (offsets version).
// Records sorted by size, largest first (ties: record order). Each is put at
// the best-fit gap, the smallest gap that holds it between the already
// placed records whose lifetimes overlap its own, or above the highest of
// them if none fits. TFLite rescans every placed record per record
// (quadratic); here the overlapping ones come from an interval index, so the
// cost is O(sum over records of k log k), k = records overlapping it.
#include "plan/arena.h"

namespace texplan::plan::detail {

ArenaPlan greedy_by_size_offsets(const ArenaProblem& p) {
  if (p.dense()) return sweep_offsets(p);
  return place_in_order(p, order_by_size(p), Fit::Best);
}

MemoryPlan plan_greedy_by_size(const std::vector<UsageRecord>& recs, const DeviceProfile& dev) {
  return plan_arena_with_texture_pools(recs, dev, greedy_by_size_offsets);
}

}  // namespace texplan::plan::detail
