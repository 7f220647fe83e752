#include "plan/arena.h"

#include <algorithm>
#include <limits>
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

  // CSR of the items alive at each task: count, prefix-sum, fill.
  const int32_t tasks = static_cast<int32_t>(task_steps.size());
  std::vector<int64_t> count(tasks + 1, 0);
  for (int32_t i = 0; i < n; ++i) {
    count[task_of_[i]] += 1;
    count[last_task[i] + 1] -= 1;
  }
  task_begin_.assign(tasks + 1, 0);
  int64_t alive_now = 0;
  for (int32_t t = 0; t < tasks; ++t) {
    alive_now += count[t];
    task_begin_[t + 1] = task_begin_[t] + alive_now;
  }
  alive_.resize(task_begin_[tasks]);
  std::vector<int64_t> fill(task_begin_.begin(), task_begin_.end() - 1);
  for (int32_t i : by_first_)
    for (int32_t t = task_of_[i]; t <= last_task[i]; ++t) alive_[fill[t]++] = i;

  task_breadth_.assign(tasks, 0);
  for (int32_t t = 0; t < tasks; ++t) {
    for (int32_t i : alive_at_task(t)) task_breadth_[t] += items_[i].size;
    lower_bound_ = std::max(lower_bound_, task_breadth_[t]);
  }
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
