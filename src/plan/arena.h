// Internal to the planner: the offset-packing problem shared by the arena
// strategies (greedy-by-size, greedy-by-breadth, best, texture-views), and
// the pieces every strategy uses to build a MemoryPlan.
#pragma once
#include <algorithm>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "plan/memory_plan.h"

namespace texplan::plan::detail {

inline int64_t round_up(int64_t x, int64_t align) {
  return align <= 1 ? x : (x + align - 1) / align * align;
}

// One block to place in an arena: `size` bytes live over steps [first, last],
// at an offset that is a multiple of `align`.
struct ArenaItem {
  int64_t size = 0;
  int32_t first = 0, last = 0;
  int64_t align = 1;
};

// Dense problems (below): the most overlap work W, or index entries L, that
// the greedy placements take on. Placing every item once costs about
// W log W; at this size a pass takes a fraction of a second.
constexpr int64_t kMaxArenaOverlapWork = int64_t{1} << 24;

// The items plus an index of who is live with whom, built once in
// O(n log n + L) time and memory, L = the sum over items of the tasks (see
// below) each is alive at, and shared by every ordering tried.
// Item j overlaps item i in time iff j is alive at step i.first, or j starts
// within (i.first, i.last]; both sets come straight out of the index, so no
// placement ever scans all items.
// Placing item i looks through every item overlapping it, so a placement
// pass costs W = the sum over items of the items overlapping each: n^2 when
// all n items are live at once (thousands of graph outputs). Beyond
// kMaxArenaOverlapWork (W or L) the problem is dense(): the index is not
// built and the strategies place with sweep_offsets instead, O(n log n).
class ArenaProblem {
 public:
  explicit ArenaProblem(std::vector<ArenaItem> items);

  bool dense() const { return dense_; }
  int64_t overlap_work() const { return overlap_work_; }

  int32_t size() const { return static_cast<int32_t>(items_.size()); }
  const ArenaItem& item(int32_t i) const { return items_[i]; }
  const std::vector<ArenaItem>& items() const { return items_; }

  // Calls f(j) for every item j != i whose lifetime intersects i's.
  template <class F>
  void for_each_overlap(int32_t i, F&& f) const {
    for (int32_t j : alive_at_task(task_of_[i]))
      if (j != i) f(j);
    for (int32_t k = start_rank_end_[i]; k < by_first_end_[i]; ++k) f(by_first_[k]);
  }

  // Calls f(j) for every item alive at some step in [a, b].
  template <class F>
  void for_each_alive_between(int32_t a, int32_t b, F&& f) const {
    const int32_t t = rank_after(task_steps_, a) - 1;  // the last task at or before a
    if (t >= 0)
      for (int32_t j : alive_at_task(t))
        if (items_[j].last >= a) f(j);
    // No item starts in (task step of t, a]; the rest start in (a, b].
    for (int32_t k = rank_after(firsts_, a); k < rank_after(firsts_, b); ++k) f(by_first_[k]);
  }

  // "Tasks" in TFLite's sense: the distinct steps at which some item starts
  // (a step where nothing starts holds a subset of the previous such step's
  // live items, so it never matters for ordering or for the peak).
  int32_t num_tasks() const { return static_cast<int32_t>(task_begin_.size()) - 1; }
  std::span<const int32_t> alive_at_task(int32_t t) const {
    return {alive_.data() + task_begin_[t], alive_.data() + task_begin_[t + 1]};
  }
  int64_t task_breadth(int32_t t) const { return task_breadth_[t]; }

  // Peak of live (aligned) sizes: no offset plan of these items is smaller.
  int64_t lower_bound() const { return lower_bound_; }

 private:
  static int32_t rank_after(const std::vector<int32_t>& sorted, int32_t step) {
    return static_cast<int32_t>(std::upper_bound(sorted.begin(), sorted.end(), step) - sorted.begin());
  }

  std::vector<ArenaItem> items_;
  std::vector<int32_t> firsts_;          // first steps, sorted (parallel to by_first_)
  std::vector<int32_t> task_steps_;      // distinct first steps, sorted
  std::vector<int32_t> by_first_;        // item ids sorted by first step
  std::vector<int32_t> start_rank_end_;  // per item: end of the by_first_ run with first <= item.first
  std::vector<int32_t> by_first_end_;    // per item: end of the by_first_ run with first <= item.last
  std::vector<int32_t> task_of_;         // per item: its start task
  std::vector<int64_t> task_begin_;      // CSR over alive_
  std::vector<int32_t> alive_;           // per task: items alive at that step
  std::vector<int64_t> task_breadth_;
  int64_t lower_bound_ = 0;
  int64_t overlap_work_ = 0;
  bool dense_ = false;
};

struct ArenaPlan {
  std::vector<int64_t> offsets;  // parallel to the items
  int64_t total = 0;             // arena bytes: max over items of offset + size
  int64_t repair_work = 0;       // best_offsets: units of kBestRepairWork spent
};

enum class Fit { Best, First };

// Places items one by one in `order`: each goes into the smallest gap (Best)
// or the lowest gap (First) left between the already placed items it
// overlaps in time, or above the highest of them if no gap fits.
ArenaPlan place_in_order(const ArenaProblem& p, std::span<const int32_t> order, Fit fit = Fit::Best);

// One step of the above: the offset for item i given `offsets` (-1 = not
// placed yet). `busy` is scratch space, passed in to save allocations.
int64_t place_one(const ArenaProblem& p, int32_t i, std::span<const int64_t> offsets, Fit fit,
                  std::vector<std::pair<int64_t, int64_t>>& busy);

// Item ids sorted by key(id) ascending, ties by id. Sorts (key, id) pairs
// rather than ids through a comparator: far fewer cache misses at 1M items.
template <class Key>
std::vector<int32_t> order_by(const ArenaProblem& p, Key&& key) {
  std::vector<std::pair<decltype(key(0)), int32_t>> keyed(p.size());
  for (int32_t i = 0; i < p.size(); ++i) keyed[i] = {key(i), i};
  std::sort(keyed.begin(), keyed.end());
  std::vector<int32_t> order(p.size());
  for (int32_t k = 0; k < p.size(); ++k) order[k] = keyed[k].second;
  return order;
}

// Orders used by the strategies and by `best`.
std::vector<int32_t> order_by_size(const ArenaProblem& p);     // size desc, then index
std::vector<int32_t> order_by_breadth(const ArenaProblem& p);  // tasks by breadth desc, items by size desc

// Items in order of first step (ties: index), each at the best-fit gap
// among the items live at that step, else above them: a linear-scan
// allocator in O(n log n) that needs no overlap index. It gives the plan
// place_in_order gives for that order (the items placed before an item and
// overlapping it are exactly those live at its first step). The strategies'
// plan for dense() problems.
ArenaPlan sweep_offsets(const ArenaProblem& p);

ArenaPlan greedy_by_size_offsets(const ArenaProblem& p);
ArenaPlan greedy_by_breadth_offsets(const ArenaProblem& p);
ArenaPlan best_offsets(const ArenaProblem& p);

using OffsetStrategy = ArenaPlan (*)(const ArenaProblem&);

// Buffer records at offsets in one arena (pool 0, sizes and offsets rounded
// to dev.mem_base_addr_align) chosen by `place`; texture records in TVM
// texture pools after it.
MemoryPlan plan_arena_with_texture_pools(const std::vector<UsageRecord>& recs, const DeviceProfile& dev,
                                         OffsetStrategy place);

// TVM's 2D texture pools for every texture record of `recs`, appended to
// plan.pools (see strategies/tvm_texture_pools.cpp); a pool's bytes are its
// image's texture_footprint_bytes on `dev`.
void place_textures_in_pools(const std::vector<UsageRecord>& recs, const DeviceProfile& dev, MemoryPlan& plan);

// Row pitch of a texture viewed over a buffer: width * pixel_bytes rounded
// up to the device's pitch alignment. Throws like texture_view_bytes.
int64_t view_row_pitch(const TextureExtent& e, const DeviceProfile& dev);
// The pitch alignment in bytes for e's pixels: the profile gives it for RGBA
// fp32 pixels (OpenCL's CL_DEVICE_IMAGE_PITCH_ALIGNMENT pixels x 16 bytes),
// so rows of RGBA fp16 pixels (8 bytes) align to half as many bytes.
int64_t pitch_alignment_bytes(const TextureExtent& e, const DeviceProfile& dev);

// Strategies, one file each in strategies/.
MemoryPlan plan_naive(const std::vector<UsageRecord>& recs, const DeviceProfile& dev);
MemoryPlan plan_tvm_tokens(const std::vector<UsageRecord>& recs, const DeviceProfile& dev);
MemoryPlan plan_greedy_by_size(const std::vector<UsageRecord>& recs, const DeviceProfile& dev);
MemoryPlan plan_greedy_by_breadth(const std::vector<UsageRecord>& recs, const DeviceProfile& dev);
MemoryPlan plan_best(const std::vector<UsageRecord>& recs, const DeviceProfile& dev);
MemoryPlan plan_tvm_texture_pools(const std::vector<UsageRecord>& recs, const DeviceProfile& dev);
MemoryPlan plan_texture_views(const std::vector<UsageRecord>& recs, const DeviceProfile& dev);

}  // namespace texplan::plan::detail
