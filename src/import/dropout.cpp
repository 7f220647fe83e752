// Dropout in inference form removed at import, and rewrite_imported_graph
// (rewrites.h).
#include "import/rewrites.h"

namespace texplan {
namespace {

// The value of a one-element constant input, or nothing when the input is
// absent (`absent`) or not a constant with data (nullopt).
std::optional<double> constant_scalar(const Graph& g, const Node& n, size_t i, double absent) {
  if (i >= n.inputs.size() || n.inputs[i] < 0) return absent;
  const Tensor& t = g.tensors[n.inputs[i]];
  if (!t.is_constant || !t.has_data || t.value.count() != 1) return std::nullopt;
  if (t.dtype == DataType::Bool || t.dtype == DataType::UInt8) return double(t.value.bytes[0]);
  if (t.dtype == DataType::Float16) return std::nullopt;  // a ratio in half: rare, left to the reference
  return double(t.value.as_float()[0]);
}

// Opsets 7-11 have no training mode: a graph runs Dropout as the identity.
// From opset 12 it is the identity unless training_mode is true, and then
// still when the ratio is 0.
bool inference_form(const Graph& g, const Node& n) {
  if (n.inputs.empty() || n.inputs[0] < 0 || n.outputs.empty() || n.outputs[0] < 0) return false;
  if (g.opset < 12) return true;
  const std::optional<double> training = constant_scalar(g, n, 2, 0);
  if (!training) return false;
  if (*training == 0) return true;
  const std::optional<double> ratio = constant_scalar(g, n, 1, 0.5);
  return ratio && *ratio == 0;
}

}  // namespace

int remove_inference_dropouts(Graph& g) {
  const auto consumers = g.consumers();
  std::vector<char> erased(g.nodes.size(), 0);
  int removed = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& n = g.nodes[i];
    if (n.op_type != "Dropout" || !inference_form(g, n)) continue;
    const int x = n.inputs[0], y = n.outputs[0];
    const int mask = n.outputs.size() > 1 ? n.outputs[1] : -1;
    if (mask >= 0 && g.tensors[mask].is_output) continue;
    if (mask >= 0 && !consumers[mask].empty()) {
      // Nothing is dropped: every element is kept.
      Tensor& m = g.tensors[mask];
      m.value = HostTensor(DataType::Bool, m.shape);
      std::fill(m.value.bytes.begin(), m.value.bytes.end(), uint8_t(1));
      m.dtype = DataType::Bool;
      m.is_constant = true;
      m.has_data = true;
      m.producer = -1;
    }
    if (g.tensors[y].is_output) {
      // A graph output keeps its tensor: a copy of the input.
      n.op_type = "Identity";
      n.inputs = {x};
      n.outputs = {y};
      n.attrs.clear();
    } else {
      for (int c : consumers[y])
        for (int& in : g.nodes[c].inputs)
          if (in == y) in = x;
      erased[i] = 1;
    }
    ++removed;
  }
  if (removed) g.erase_nodes(erased);
  return removed;
}

void rewrite_imported_graph(Graph& g, bool recurrent_steps_nodes) {
  remove_inference_dropouts(g);
  lower_einsums(g);
  lower_quantize_pairs(g);
  lower_recurrent_ops(g, recurrent_steps_nodes);
  lower_volume_ops(g);
  cancel_transpose_round_trips(g);
}

}  // namespace texplan
