// Transposes undone by inverse Transposes after elementwise ops removed
// (rewrites.h). Volume ops leave one between each pair of them: their output
// transposed back to [N, C, D, H, W], an activation, and the next one's
// input transposed frames-major again (S3D: 181 Transposes, 12% of a run).
#include <algorithm>

#include "graph/epilogue.h"
#include "import/rewrites.h"

namespace texplan {
namespace {

// Elementwise ops of one tensor: they give the same values in any layout.
bool layout_free(const Graph& g, const Node& n) {
  return Epilogue::unary_node(g, n) ||
         (n.op_type == "Identity" && n.inputs.size() == 1 && n.inputs[0] >= 0 && n.outputs.size() == 1 && n.outputs[0] >= 0);
}

std::vector<int64_t> inverse(const std::vector<int64_t>& perm) {
  std::vector<int64_t> inv(perm.size(), -1);
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] < 0 || perm[i] >= int64_t(perm.size()) || inv[size_t(perm[i])] >= 0) return {};
    inv[size_t(perm[i])] = int64_t(i);
  }
  return inv;
}

}  // namespace

int cancel_transpose_round_trips(Graph& g) {
  int cancelled = 0;
  std::vector<std::vector<int>> consumers = g.consumers();  // kept current as nodes are bypassed
  std::vector<char> graph_output(g.tensors.size(), 0);
  for (int t : g.outputs) graph_output[size_t(t)] = 1;
  auto drop_reader = [&](int t, int node) {
    auto& c = consumers[size_t(t)];
    c.erase(std::remove(c.begin(), c.end(), node), c.end());
  };
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& a = g.nodes[k];
    if (a.op_type != "Transpose" || a.inputs.empty() || a.inputs[0] < 0 || a.outputs.size() != 1 || a.outputs[0] < 0)
      continue;
    const size_t rank = g.tensors[a.inputs[0]].shape.size();
    const std::vector<int64_t> undo = inverse(transpose_perm(a, rank));
    if (undo.size() != rank) continue;
    // A's output through a chain of layout-free ops, each read by the next
    // alone, to a tensor read only by Transposes that undo A.
    std::vector<int> chain;
    int end = a.outputs[0];
    while (!graph_output[size_t(end)] && consumers[size_t(end)].size() == 1 &&
           layout_free(g, g.nodes[size_t(consumers[size_t(end)][0])])) {
      chain.push_back(consumers[size_t(end)][0]);
      end = g.nodes[size_t(chain.back())].outputs[0];
    }
    const std::vector<int> readers = consumers[size_t(end)];
    if (graph_output[size_t(end)] || readers.empty() ||
        !std::all_of(readers.begin(), readers.end(), [&](int r) {
          const Node& b = g.nodes[size_t(r)];
          return b.op_type == "Transpose" && transpose_perm(b, rank) == undo && b.outputs.size() == 1 && b.outputs[0] >= 0 &&
                 !graph_output[size_t(b.outputs[0])];
        }))
      continue;
    // The chain now runs on A's input, in its layout; the undoing
    // Transposes' readers read the chain's end; A and they are left dead.
    const int source = a.inputs[0];
    drop_reader(source, int(k));
    consumers[size_t(a.outputs[0])].clear();
    if (chain.empty()) {
      end = source;
    } else {
      g.nodes[size_t(chain.front())].inputs[0] = source;
      consumers[size_t(source)].push_back(chain.front());
      const Shape shape = g.tensors[source].shape;
      for (int c : chain) g.tensors[size_t(g.nodes[size_t(c)].outputs[0])].shape = shape;
    }
    for (int r : readers) {
      drop_reader(g.nodes[size_t(r)].inputs[0], r);
      const int out = g.nodes[size_t(r)].outputs[0];
      for (int c : consumers[size_t(out)]) {
        for (int& in : g.nodes[size_t(c)].inputs)
          if (in == out) in = end;
        consumers[size_t(end)].push_back(c);
      }
      consumers[size_t(out)].clear();
    }
    ++cancelled;
  }
  if (cancelled) g.remove_dead_nodes();
  return cancelled;
}

}  // namespace texplan
