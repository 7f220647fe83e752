// greedy-by-breadth: TFLite GPU's GreedyByBreadthAssignment ordering, with
// offsets instead of shared objects. A task's breadth is the sum of the
// sizes of the records live at it. Tasks are visited by breadth, widest
// first (ties: earlier task); within a task its not yet placed records go by
// size, largest first, each at the best-fit gap among the placed records
// that overlap it in time (as in greedy-by-size), else above them.
#include <algorithm>
#include <numeric>

#include "plan/arena.h"

namespace texplan::plan::detail {

std::vector<int32_t> order_by_breadth(const ArenaProblem& p) {
  std::vector<int32_t> tasks(p.num_tasks());
  std::iota(tasks.begin(), tasks.end(), 0);
  std::stable_sort(tasks.begin(), tasks.end(),
                   [&](int32_t a, int32_t b) { return p.task_breadth(a) > p.task_breadth(b); });
  std::vector<int32_t> order;
  order.reserve(p.size());
  std::vector<char> taken(p.size(), 0);
  std::vector<int32_t> in_task;
  for (int32_t t : tasks) {
    in_task.clear();
    for (int32_t i : p.alive_at_task(t))
      if (!taken[i]) in_task.push_back(i), taken[i] = 1;
    std::sort(in_task.begin(), in_task.end(), [&](int32_t a, int32_t b) {
      return p.item(a).size != p.item(b).size ? p.item(a).size > p.item(b).size : a < b;
    });
    order.insert(order.end(), in_task.begin(), in_task.end());
  }
  return order;
}

ArenaPlan greedy_by_breadth_offsets(const ArenaProblem& p) {
  if (p.dense()) return sweep_offsets(p);
  return place_in_order(p, order_by_breadth(p), Fit::Best);
}

MemoryPlan plan_greedy_by_breadth(const std::vector<UsageRecord>& recs, const DeviceProfile& dev) {
  return plan_arena_with_texture_pools(recs, dev, greedy_by_breadth_offsets);
}

}  // namespace texplan::plan::detail
