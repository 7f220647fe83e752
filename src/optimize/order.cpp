// Memory-aware execution order: several cheap topological orders (greedy
// list scheduling by bytes allocated/freed, depth-first from the outputs),
// each scored by the exact lower bound of its plan input; the file order
// wins ties, so the result is never worse than the graph as given.
#include <algorithm>
#include <functional>
#include <numeric>
#include <set>
#include <tuple>

#include "optimize/optimize.h"
#include "optimize/passes.h"
#include "optimize/sharing.h"

namespace texplan {
namespace {

struct Dag {
  int n = 0;
  std::vector<std::vector<int>> succ, pred;
  std::vector<std::vector<int>> touches;  // storage roots each node reads or writes
  std::vector<int64_t> bytes;             // per root
  std::vector<char> pinned_end, live_from_start;
};

Dag build_dag(const Graph& g) {
  Dag d;
  d.n = int(g.nodes.size());
  d.succ.resize(d.n);
  d.pred.resize(d.n);
  d.touches.resize(d.n);
  const StorageSharing s = storage_sharing(g);
  const size_t nt = g.tensors.size();
  d.bytes.assign(nt, 0);
  d.pinned_end.assign(nt, 0);
  d.live_from_start.assign(nt, 0);
  for (size_t t = 0; t < nt; ++t) {
    if (g.tensors[t].is_constant) continue;
    const int r = s.root[t];
    d.bytes[r] = g.tensors[r].bytes();
    if (g.tensors[t].is_output) d.pinned_end[r] = 1;
    if (g.tensors[t].is_input) d.live_from_start[r] = 1;
  }
  std::vector<int> producer(nt, -1);
  for (int k = 0; k < d.n; ++k)
    for (int t : g.nodes[k].outputs)
      if (t >= 0) producer[t] = k;
  for (int k = 0; k < d.n; ++k) {
    const Node& n = g.nodes[k];
    for (const auto* list : {&n.inputs, &n.outputs})
      for (int t : *list)
        if (t >= 0 && !g.tensors[t].is_constant) d.touches[k].push_back(s.root[t]);
    std::sort(d.touches[k].begin(), d.touches[k].end());
    d.touches[k].erase(std::unique(d.touches[k].begin(), d.touches[k].end()), d.touches[k].end());
    for (int t : n.inputs)
      if (t >= 0 && producer[t] >= 0 && producer[t] != k) d.pred[k].push_back(producer[t]);
    std::sort(d.pred[k].begin(), d.pred[k].end());
    d.pred[k].erase(std::unique(d.pred[k].begin(), d.pred[k].end()), d.pred[k].end());
    for (int p : d.pred[k]) d.succ[p].push_back(k);
  }
  return d;
}

enum class Greedy { Net, Peak, Lifo };

// List scheduling: at each step run the ready node with the smallest key.
// A node's key depends only on the state of the roots it touches (allocated
// yet; touched by one unscheduled node only), and a root's state changes at
// most twice, so keys are kept in an ordered set and recomputed only for the
// ready nodes touching a root at those changes: O((nodes + edges) log n),
// even when one tensor feeds every node. Peak's key drops the live bytes,
// the same for every candidate of a step.
std::vector<int> greedy_order(const Dag& d, Greedy kind) {
  using Key = std::tuple<int64_t, int64_t, int>;
  const size_t roots = d.bytes.size();
  std::vector<int> indeg(d.n), pending(roots, 0), order;
  std::vector<char> allocated(roots, 0), is_ready(d.n, 0);
  std::vector<int> ready_time(d.n, 0);
  std::vector<std::vector<int>> touched_by(roots);
  for (int k = 0; k < d.n; ++k)
    for (int r : d.touches[k]) ++pending[r], touched_by[r].push_back(k);
  for (size_t r = 0; r < roots; ++r)
    if (d.live_from_start[r]) allocated[r] = 1;
  auto key_of = [&](int k) -> Key {
    int64_t alloc = 0, freed = 0;
    for (int r : d.touches[k]) {
      if (!allocated[r]) alloc += d.bytes[r];
      if (pending[r] == 1 && !d.pinned_end[r]) freed += d.bytes[r];
    }
    switch (kind) {
      case Greedy::Net: return {alloc - freed, alloc, k};
      case Greedy::Peak: return {alloc, alloc - freed, k};
      default: return {alloc - freed > 0 ? 1 : 0, -ready_time[k], k};
    }
  };
  std::set<Key> ready;
  std::vector<Key> key(d.n);
  auto make_ready = [&](int k) {
    is_ready[k] = 1;
    key[k] = key_of(k);
    ready.insert(key[k]);
  };
  auto rekey_ready_touching = [&](int r) {
    for (int k : touched_by[r])
      if (is_ready[k] == 1) {
        ready.erase(key[k]);
        key[k] = key_of(k);
        ready.insert(key[k]);
      }
  };
  for (int k = 0; k < d.n; ++k) {
    indeg[k] = int(d.pred[k].size());
    if (!indeg[k]) make_ready(k);
  }
  int clock = 0;
  while (!ready.empty()) {
    const int k = std::get<2>(*ready.begin());
    ready.erase(ready.begin());
    is_ready[k] = 2;  // scheduled
    order.push_back(k);
    for (int r : d.touches[k]) {
      const bool newly_allocated = !allocated[r];
      allocated[r] = 1;
      --pending[r];
      if (newly_allocated || pending[r] == 1) rekey_ready_touching(r);
    }
    ++clock;
    for (int s : d.succ[k])
      if (--indeg[s] == 0) {
        ready_time[s] = clock;
        make_ready(s);
      }
  }
  return order;
}

// Post-order depth-first from the sinks: finishes one branch before the next.
std::vector<int> dfs_order(const Dag& d, bool reverse_inputs) {
  std::vector<char> done(d.n, 0);
  std::vector<int> order;
  std::vector<std::pair<int, size_t>> stack;
  for (int root = d.n - 1; root >= 0; --root) {
    if (done[root] || !d.succ[root].empty()) continue;
    stack.push_back({root, 0});
    while (!stack.empty()) {
      auto& [k, i] = stack.back();
      const auto& preds = d.pred[k];
      if (i < preds.size()) {
        const int p = reverse_inputs ? preds[preds.size() - 1 - i] : preds[i];
        ++i;
        if (!done[p]) {
          done[p] = 2;  // on the stack
          stack.push_back({p, 0});
        }
        continue;
      }
      done[k] = 1;
      order.push_back(k);
      stack.pop_back();
    }
  }
  // Sinks first visited in reverse put the last sink last; keep every node.
  if (int(order.size()) != d.n) return {};
  return order;
}

void apply_order(Graph& g, const std::vector<int>& order) {
  std::vector<Node> nodes;
  nodes.reserve(order.size());
  for (int k : order) nodes.push_back(std::move(g.nodes[k]));
  g.nodes = std::move(nodes);
  for (auto& t : g.tensors) t.producer = -1;
  for (size_t k = 0; k < g.nodes.size(); ++k)
    for (int t : g.nodes[k].outputs)
      if (t >= 0) g.tensors[t].producer = int(k);
}

}  // namespace

std::string memory_aware_order(Graph& g, std::vector<std::pair<std::string, int64_t>>* candidates) {
  if (g.nodes.size() < 2) return "file";
  const Dag d = build_dag(g);
  std::vector<std::pair<std::string, std::vector<int>>> orders;
  std::vector<int> file(d.n);
  std::iota(file.begin(), file.end(), 0);
  orders.push_back({"file", file});
  orders.push_back({"greedy-net", greedy_order(d, Greedy::Net)});
  orders.push_back({"greedy-peak", greedy_order(d, Greedy::Peak)});
  orders.push_back({"greedy-lifo", greedy_order(d, Greedy::Lifo)});
  orders.push_back({"dfs", dfs_order(d, false)});
  orders.push_back({"dfs-reversed", dfs_order(d, true)});

  // Score each order on the graph itself (permuted, then put back).
  std::string best_name = "file";
  std::vector<int> best = file;
  int64_t best_bytes = graph_lower_bound(g);
  if (candidates) candidates->push_back({"file", best_bytes});
  for (size_t i = 1; i < orders.size(); ++i) {
    const auto& [name, order] = orders[i];
    if (int(order.size()) != d.n) continue;
    std::vector<int> inverse(d.n);
    for (int k = 0; k < d.n; ++k) inverse[order[k]] = k;
    apply_order(g, order);
    const int64_t bytes = graph_lower_bound(g);
    apply_order(g, inverse);
    if (candidates) candidates->push_back({name, bytes});
    if (bytes < best_bytes) best_bytes = bytes, best = order, best_name = name;
  }
  apply_order(g, best);
  return best_name;
}

}  // namespace texplan
