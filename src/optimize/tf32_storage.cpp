#include "optimize/tf32_storage.h"

namespace texplan {
namespace {

bool writes_through_epilogue(const Node& n) { return n.op_type == "FusedConv" || n.op_type == "FusedConvMaxPool"; }

// Whether n reads tensor t as its input X only, and rounds it to tf32 as
// it stands (nothing applied to X first). A shuffled output's conv stores
// through a window, which the tensor-core tiles do not: it rounds nothing.
bool rounds_input(const Node& n, int t) {
  if (n.op_type != "Conv" && n.op_type != "FusedConv" && n.op_type != "FusedConvMaxPool") return false;
  if (n.inputs.empty() || n.inputs[0] != t) return false;
  for (size_t i = 1; i < n.inputs.size(); ++i)
    if (n.inputs[i] == t) return false;
  return !channel_scaled(n) && !channel_program(n) && !operand_view(n, 0) && !shuffled_output(n);
}

}  // namespace

int mark_tf32_storage(Graph& g) {
  const std::vector<std::vector<int>> readers = g.consumers();
  int marked = 0;
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    Tensor& x = g.tensors[t];
    x.stored_tf32 = false;
    if (x.is_input || x.is_output || x.is_constant || x.dtype != DataType::Float32 || x.window || x.producer < 0)
      continue;
    const Node& p = g.nodes[size_t(x.producer)];
    if (!writes_through_epilogue(p) || p.outputs.size() != 1 || readers[t].empty()) continue;
    bool all = true;
    for (int n : readers[t]) all = all && rounds_input(g.nodes[size_t(n)], int(t));
    if (all) x.stored_tf32 = true, ++marked;
  }
  return marked;
}

}  // namespace texplan
