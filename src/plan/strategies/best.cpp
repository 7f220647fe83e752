// best: texplan's own offset planner, in two phases.
// 1. Greedy starts: several orders of the records, each placed best-fit (or
//    first-fit) among the records overlapping it in time (the first one,
//    by size, gets a short round of phase 2 before the others are tried):
//      by size, ties by longer lifetime; by task breadth (greedy-by-breadth);
//      by pressure (the widest step a record lives through, then size: the
//      records that make up the peak are packed first); by lifetime, then
//      size; by size x lifetime; by size with first-fit.
// 2. Ruin and recreate on the best starts: take a record at the top of the
//    arena, remove every record live in a window around its lifetime (its
//    own, widened by a random reach, or by the lifetimes of all records
//    overlapping it) and place them again, greedily, in a randomized order
//    (as they were, bottom up, with the top record first or jittered; by
//    size with random ties or perturbed; by lifetime). Keep the change
//    unless the arena grew or more records reach its top. A run that has
//    not improved for a while restarts from the next start.
// Stops as soon as the arena equals the lower bound (the peak of live
// aligned bytes), which is the rule on real CNN and transformer graphs, and
// otherwise after a fixed number of rounds or of units of work
// (kBestRepairWork, memory_plan.h), so plans are deterministic: records
// that all overlap each other cost n^2 units a round
// (docs/kernel-choices.md#bests-repair-budget).
#include <algorithm>
#include <numeric>
#include <tuple>
#include <utility>

#include "plan/arena.h"
#include "plan/rng.h"

namespace texplan::plan::detail {

namespace {

constexpr int kRounds = 10000;      // ruin-and-recreate rounds in all
constexpr int kStallRounds = 300;   // rounds without improvement before a restart
constexpr size_t kStarts = 3;       // restarts cycle through the best greedy starts
constexpr int32_t kReach[] = {0, 0, 1, 2, 4, 8, 16, 32, 64, -1};  // -1: lifetimes of the overlapping

// Widest step (task breadth) each item lives through.
std::vector<int64_t> pressure(const ArenaProblem& p) {
  std::vector<int64_t> widest(p.size(), 0);
  for (int32_t t = 0; t < p.num_tasks(); ++t)
    for (int32_t i : p.alive_at_task(t)) widest[i] = std::max(widest[i], p.task_breadth(t));
  return widest;
}

std::vector<int32_t> by_size(const ArenaProblem& p) {  // ties: longer lifetime first
  return order_by(p, [&](int32_t i) { return std::pair(-p.item(i).size, p.item(i).first - p.item(i).last); });
}

// Appends greedy plans for the other orders, stopping at one that reaches
// the lower bound.
void add_greedy_starts(const ArenaProblem& p, std::vector<ArenaPlan>& plans) {
  const auto& it = p.items();
  auto span = [&](int32_t i) { return int64_t{it[i].last} - it[i].first; };
  auto reached = [&] { return !plans.empty() && plans.back().total <= p.lower_bound(); };
  auto start = [&](auto&& make_order, Fit fit) {  // orders are made only when needed
    if (!reached()) plans.push_back(place_in_order(p, make_order(), fit));
  };
  start([&] { return order_by_breadth(p); }, Fit::Best);
  if (reached()) return;
  const std::vector<int64_t> widest = pressure(p);
  start([&] { return order_by(p, [&](int32_t i) { return std::pair(-widest[i], -it[i].size); }); }, Fit::Best);
  start([&] { return order_by(p, [&](int32_t i) { return std::pair(-span(i), -it[i].size); }); }, Fit::Best);
  start([&] { return order_by(p, [&](int32_t i) { return -it[i].size * (span(i) + 1); }); }, Fit::Best);
  start([&] { return by_size(p); }, Fit::First);
}

// Tops (offset + size) of all items: the max, how many items reach it, and
// one of them at random, each in O(log n) after an update. A segment tree
// in an array: leaves at [n, 2n), node k joins 2k and 2k+1.
class Tops {
 public:
  Tops(const ArenaProblem& p, std::span<const int64_t> offsets) : n_(p.size()), node_(2 * n_) {
    for (int32_t i = 0; i < n_; ++i) node_[n_ + i] = {offsets[i] + p.item(i).size, 1};
    for (int32_t k = n_ - 1; k > 0; --k) node_[k] = join(node_[2 * k], node_[2 * k + 1]);
  }
  void set(int32_t i, int64_t top) {
    int32_t k = n_ + i;
    node_[k] = {top, 1};
    for (k /= 2; k > 0; k /= 2) node_[k] = join(node_[2 * k], node_[2 * k + 1]);
  }
  int64_t max() const { return node_[1].first; }
  int32_t count_at_max() const { return node_[1].second; }
  int32_t any_at_max(SplitMix64& rng) const {
    int32_t k = 1;  // with n == 1 the root is the leaf
    while (k < n_) {
      const bool left = node_[2 * k].first == node_[k].first, right = node_[2 * k + 1].first == node_[k].first;
      k = 2 * k + (left && right ? static_cast<int32_t>(rng.below(2)) : right ? 1 : 0);
    }
    return k - n_;
  }

 private:
  using Node = std::pair<int64_t, int32_t>;  // (max top, items at it)
  static Node join(const Node& a, const Node& b) {
    return a.first != b.first ? std::max(a, b) : Node{a.first, a.second + b.second};
  }
  int32_t n_;
  std::vector<Node> node_;
};

// Units of work left to the repair rounds (kBestRepairWork): placing item
// i again costs cost[i] = 1 + the items overlapping it in time, which
// place_one looks through.
struct WorkBudget {
  explicit WorkBudget(const ArenaProblem& p) : cost(p.size(), 1) {
    for (int32_t i = 0; i < p.size(); ++i) p.for_each_overlap(i, [&](int32_t) { ++cost[i]; });
  }
  int64_t left = kBestRepairWork;
  std::vector<int64_t> cost;
};

// Ruin and recreate from `plan` (see the top of the file). Returns the
// rounds used: at most `rounds`, fewer on reaching the lower bound, after
// kStallRounds without improvement, or when the next round would cost
// more work than `work` has left (which then ends the search).
int ruin_and_recreate(const ArenaProblem& p, ArenaPlan& plan, int rounds, uint64_t seed, WorkBudget& work) {
  const auto& it = p.items();
  Tops tops(p, plan.offsets);
  SplitMix64 rng{seed};
  std::vector<int32_t> ruined;
  std::vector<double> noise(p.size());   // per ruined item, in [0, 1)
  std::vector<int64_t> prior(p.size());  // per ruined item, its offset before the ruin
  std::vector<std::pair<int64_t, int64_t>> busy;
  int round = 0;
  for (int stalled = 0; round < rounds && stalled < kStallRounds && tops.max() > p.lower_bound();
       ++round, ++stalled) {
    const int64_t total = tops.max();
    const int32_t count = tops.count_at_max();
    const int32_t top = tops.any_at_max(rng);
    const int32_t reach = kReach[rng.below(std::size(kReach))];
    int32_t from = it[top].first - std::max(reach, 0), to = it[top].last + std::max(reach, 0);
    if (reach < 0)
      p.for_each_overlap(top, [&](int32_t j) { from = std::min(from, it[j].first), to = std::max(to, it[j].last); });
    ruined.clear();
    p.for_each_alive_between(from, to, [&](int32_t j) { ruined.push_back(j); });
    int64_t cost = 0;
    for (int32_t i : ruined) cost += work.cost[i];
    if (cost > work.left) {
      work.left = 0;
      break;
    }
    work.left -= cost;
    for (int32_t i : ruined) prior[i] = plan.offsets[i], plan.offsets[i] = -1, noise[i] = rng.uniform();

    auto by = [&](auto key) {  // ascending key, ties by id: the same order with any std::sort
      std::sort(ruined.begin(), ruined.end(),
                [&](int32_t a, int32_t b) { return std::pair(key(a), a) < std::pair(key(b), b); });
    };
    switch (rng.below(5)) {
      case 0: by([&](int32_t i) { return std::tuple(i != top, prior[i], -it[i].size); }); break;
      case 1: by([&](int32_t i) { return double(prior[i]) - 2.0 * noise[i] * double(it[i].size); }); break;
      case 2: by([&](int32_t i) { return std::pair(-it[i].size, noise[i]); }); break;
      case 3: by([&](int32_t i) { return -double(it[i].size) * (1.0 + 0.5 * noise[i]); }); break;
      default: by([&](int32_t i) { return std::pair(int64_t{it[i].first} - it[i].last, noise[i]); });
    }
    for (int32_t i : ruined) {
      plan.offsets[i] = place_one(p, i, plan.offsets, Fit::Best, busy);
      tops.set(i, plan.offsets[i] + it[i].size);
    }

    const auto before = std::pair(total, count), after = std::pair(tops.max(), tops.count_at_max());
    if (after < before) stalled = -1;
    if (after > before)
      for (int32_t i : ruined) plan.offsets[i] = prior[i], tops.set(i, prior[i] + it[i].size);
  }
  plan.total = tops.max();
  return round;
}

}  // namespace

ArenaPlan best_offsets(const ArenaProblem& p) {
  if (p.dense()) return sweep_offsets(p);
  // Most graphs: greedy by size, or it after a short repair, reaches the bound.
  std::vector<ArenaPlan> starts = {place_in_order(p, by_size(p))};
  if (starts[0].total <= p.lower_bound()) return starts[0];
  ArenaPlan best = starts[0];
  WorkBudget work(p);
  auto spent = [&](ArenaPlan& plan) -> ArenaPlan& {
    plan.repair_work = kBestRepairWork - work.left;
    return plan;
  };
  int rounds_left = kRounds - ruin_and_recreate(p, best, kStallRounds, 1, work);
  if (best.total <= p.lower_bound()) return spent(best);

  add_greedy_starts(p, starts);
  std::stable_sort(starts.begin(), starts.end(),
                   [](const ArenaPlan& a, const ArenaPlan& b) { return a.total < b.total; });
  if (starts.front().total < best.total) best = starts.front();
  const size_t restarts_from = std::min(starts.size(), kStarts);
  for (uint64_t run = 0; rounds_left > 0 && work.left > 0 && best.total > p.lower_bound(); ++run) {
    ArenaPlan plan = starts[run % restarts_from];
    rounds_left -= ruin_and_recreate(p, plan, rounds_left, run + 2, work);
    if (plan.total < best.total) best = std::move(plan);
  }
  return spent(best);
}

MemoryPlan plan_best(const std::vector<UsageRecord>& recs, const DeviceProfile& dev) {
  return plan_arena_with_texture_pools(recs, dev, best_offsets);
}

}  // namespace texplan::plan::detail
