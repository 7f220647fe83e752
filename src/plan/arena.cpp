#include "plan/arena.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <numeric>

namespace texplan::plan::detail {

ArenaProblem::ArenaProblem(std::vector<ArenaItem> items) : items_(std::move(items)) {
  const int32_t n = size();
  by_first_.resize(n);
  std::iota(by_first_.begin(), by_first_.end(), 0);
  auto earlier = [&](int32_t a, int32_t b) { return items_[a].first < items_[b].first; };
  if (!std::is_sorted(by_first_.begin(), by_first_.end(), earlier))  // records usually come in step order
    std::stable_sort(by_first_.begin(), by_first_.end(), earlier);
  firsts_.resize(n);
  for (int32_t k = 0; k < n; ++k) firsts_[k] = items_[by_first_[k]].first;
  task_steps_ = firsts_;
  task_steps_.erase(std::unique(task_steps_.begin(), task_steps_.end()), task_steps_.end());
  const std::vector<int32_t>& firsts = firsts_;
  const std::vector<int32_t>& task_steps = task_steps_;

  start_rank_end_.resize(n);
  by_first_end_.resize(n);
  task_of_.resize(n);
  std::vector<int32_t> last_task(n);
  for (int32_t i = 0; i < n; ++i) {
    start_rank_end_[i] = rank_after(firsts, items_[i].first);
    by_first_end_[i] = rank_after(firsts, items_[i].last);
    task_of_[i] = rank_after(task_steps, items_[i].first) - 1;
    last_task[i] = rank_after(task_steps, items_[i].last) - 1;
  }

  // Items alive and their bytes per task, by differences: count, prefix-sum.
  const int32_t tasks = static_cast<int32_t>(task_steps.size());
  std::vector<int64_t> count(tasks + 1, 0), bytes(tasks + 1, 0);
  for (int32_t i = 0; i < n; ++i) {
    count[task_of_[i]] += 1;
    count[last_task[i] + 1] -= 1;
    bytes[task_of_[i]] += items_[i].size;
    bytes[last_task[i] + 1] -= items_[i].size;
  }
  task_begin_.assign(tasks + 1, 0);
  task_breadth_.assign(tasks, 0);
  int64_t alive_now = 0, breadth_now = 0;
  for (int32_t t = 0; t < tasks; ++t) {
    alive_now += count[t];
    breadth_now += bytes[t];
    task_begin_[t + 1] = task_begin_[t] + alive_now;
    task_breadth_[t] = breadth_now;
    lower_bound_ = std::max(lower_bound_, breadth_now);
  }

  // W: item j overlaps item i unless j starts after i ends or ends before i
  // starts (disjoint cases, as first <= last).
  std::vector<int32_t> lasts(n);
  for (int32_t i = 0; i < n; ++i) lasts[i] = items_[i].last;
  std::sort(lasts.begin(), lasts.end());
  for (int32_t i = 0; i < n; ++i) {
    const int64_t after = n - rank_after(firsts, items_[i].last);
    const int64_t before = std::lower_bound(lasts.begin(), lasts.end(), items_[i].first) - lasts.begin();
    overlap_work_ += n - 1 - after - before;
  }
  dense_ = overlap_work_ > kMaxArenaOverlapWork || task_begin_[tasks] > kMaxArenaOverlapWork;
  if (dense_) return;

  // CSR of the items alive at each task.
  alive_.resize(task_begin_[tasks]);
  std::vector<int64_t> fill(task_begin_.begin(), task_begin_.end() - 1);
  for (int32_t i : by_first_)
    for (int32_t t = task_of_[i]; t <= last_task[i]; ++t) alive_[fill[t]++] = i;
}

ArenaPlan sweep_offsets(const ArenaProblem& p) {
  ArenaPlan plan;
  plan.offsets.assign(p.size(), -1);
  const std::vector<int32_t> by_first = order_by(p, [&](int32_t i) { return p.item(i).first; });
  const std::vector<int32_t> by_last = order_by(p, [&](int32_t i) { return p.item(i).last; });
  std::map<int64_t, int64_t> live;               // offset -> end, the live items of nonzero size
  std::set<std::pair<int64_t, int64_t>> gaps;    // (length, offset) of the free space between them
  auto gap = [&](int64_t from, int64_t to, bool add) {
    if (to > from) add ? (void)gaps.emplace(to - from, from) : (void)gaps.erase({to - from, from});
  };
  auto release = [&](int32_t j) {
    if (p.item(j).size == 0) return;
    const auto it = live.find(plan.offsets[j]);
    const int64_t prev_end = it == live.begin() ? 0 : std::prev(it)->second;
    gap(prev_end, it->first, false);
    const auto next = std::next(it);
    if (next != live.end()) {
      gap(it->second, next->first, false);
      gap(prev_end, next->first, true);
    }
    live.erase(it);
  };
  size_t released = 0;
  for (int32_t i : by_first) {
    const ArenaItem& it = p.item(i);
    for (; released < by_last.size() && p.item(by_last[released]).last < it.first; ++released)
      release(by_last[released]);
    if (it.size == 0) {  // occupies nothing: any offset is fine
      plan.offsets[i] = 0;
      continue;
    }
    // Best fit as place_one measures it: the least room left above the
    // aligned start, ties to the lowest offset. Room >= length - (align - 1).
    int64_t best = -1, best_room = std::numeric_limits<int64_t>::max(), best_len = 0;
    for (auto g = gaps.lower_bound({it.size, 0}); g != gaps.end() && g->first - (it.align - 1) <= best_room; ++g) {
      const auto [length, from] = *g;
      const int64_t start = round_up(from, it.align), room = from + length - start;
      if (room >= it.size && (room < best_room || (room == best_room && from < best))) {
        best = from, best_room = room, best_len = length;
      }
    }
    int64_t offset;
    if (best >= 0) {
      offset = round_up(best, it.align);
      gap(best, best + best_len, false);
      gap(best, offset, true);
      gap(offset + it.size, best + best_len, true);
    } else {
      const int64_t top = live.empty() ? 0 : live.rbegin()->second;
      offset = round_up(top, it.align);
      gap(top, offset, true);
    }
    live.emplace(offset, offset + it.size);
    plan.offsets[i] = offset;
    plan.total = std::max(plan.total, offset + it.size);
  }
  return plan;
}

int64_t place_one(const ArenaProblem& p, int32_t i, std::span<const int64_t> offsets, Fit fit,
                  std::vector<std::pair<int64_t, int64_t>>& busy) {
  const ArenaItem& it = p.item(i);
  if (it.size == 0) return 0;  // occupies nothing: any offset is fine
  busy.clear();
  p.for_each_overlap(i, [&](int32_t j) {
    if (offsets[j] >= 0) busy.emplace_back(offsets[j], offsets[j] + p.item(j).size);
  });
  std::sort(busy.begin(), busy.end());
  int64_t prev_end = 0, best = -1, best_gap = std::numeric_limits<int64_t>::max();
  for (const auto& [offset, end] : busy) {
    const int64_t start = round_up(prev_end, it.align);
    if (offset >= start + it.size && offset - start < best_gap) {
      best = start;
      best_gap = offset - start;
      if (fit == Fit::First) break;
    }
    prev_end = std::max(prev_end, end);
  }
  return best >= 0 ? best : round_up(prev_end, it.align);
}

ArenaPlan place_in_order(const ArenaProblem& p, std::span<const int32_t> order, Fit fit) {
  ArenaPlan plan;
  plan.offsets.assign(p.size(), -1);
  std::vector<std::pair<int64_t, int64_t>> busy;
  for (int32_t i : order) {
    plan.offsets[i] = place_one(p, i, plan.offsets, fit, busy);
    plan.total = std::max(plan.total, plan.offsets[i] + p.item(i).size);
  }
  return plan;
}

std::vector<int32_t> order_by_size(const ArenaProblem& p) {
  return order_by(p, [&](int32_t i) { return -p.item(i).size; });
}

}  // namespace texplan::plan::detail
