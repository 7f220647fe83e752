// RecurrentSteps (graph.h RecurrentCell): recurrent.cl, each work-group
// owning some hidden units of every sequence. Devices with a device-wide
// fence (runtime::DeviceInfo::grid_fence: OpenCL C 3.0's device scope, or
// NVIDIA's membar.gl) run all steps in one launch of one group per compute
// unit, ordered by a grid barrier (on an H100 a launch costs the host 5-6
// us, a barrier 2.5 us:
// docs/performance.md#the-zoo-against-the-cuda-graph-on-the-h100-and-the-barriers-forms-2026-12-05);
// others take a launch a step, as KernelChoice::recurrent "steps" does.
#include <algorithm>

#include "lower/ops.h"

namespace texplan::lower {
namespace {

constexpr int64_t kGroupItems = 256;

int activation_code(CellActivation a) {
  return a == CellActivation::Sigmoid ? 0 : a == CellActivation::Tanh ? 1 : 2;
}

}  // namespace

void check_recurrent_form(const std::string& form) {
  if (!form.empty() && form != "steps" && form != "persistent")
    throw Error("no recurrent form " + form + " (steps: a launch a step; persistent: one launch)");
}

bool lower_recurrent_steps(NodeBuilder& b) {
  const RecurrentCell* cell = recurrent_cell(b.node);
  if (!cell || b.inputs() < 2 || !b.has_in(0) || !b.has_in(1) || b.node.outputs.empty()) return false;
  for (int i = 0; i < b.inputs(); ++i)
    if (b.has_in(i) && (b.in(i).dtype != DataType::Float32 || b.in_window(i))) return false;
  const bool lstm = cell->kind == Recurrence::Lstm;
  if (lstm && (b.node.outputs.size() < 2 || b.node.outputs[1] < 0)) return false;  // C is the running state
  const Shape& xw = b.in(0).shape;
  const int64_t T = xw[0], B = xw[1], H = b.in(1).shape[0], NG = gate_count(cell->kind);
  if (T * B * H == 0) return true;
  if (B * H > kMaxRecurrentState) return false;

  const std::string& named = b.kernel_choice.recurrent;
  using GridFence = runtime::DeviceInfo::GridFence;
  const GridFence fence = b.device().info().grid_fence;
  const bool fences = fence != GridFence::None;
  // By default wherever there is a fence (PoCL: 0.74-0.91x the unrolled
  // steps' time; the H100: 0.71-0.90x the steps form's,
  // docs/performance.md#recurrent-kernels-on-the-h100-2026-12-05).
  bool persistent = named.empty() ? fences : named == "persistent";
  if (persistent && !fences)
    throw Error("the persistent recurrent kernel needs OpenCL C 3.0's device-scope fences (or NVIDIA's), which " +
                b.device().info().name + " lacks");
  if (persistent && !b.index_faults) persistent = false;  // no fault flags (outside a session): nowhere to sync
  const int64_t cu = std::max(1, b.compute_units());
  // Units per group: every unit in as many groups as the device runs at once.
  int64_t upg = ceil_div(H, cu);
  const bool cpu_vectors = b.device_type() == "cpu" && !b.gpu_kernels_forced();
  const int64_t max_items =
      std::min<int64_t>(cpu_vectors ? 4 * kGroupItems : kGroupItems, std::max<int64_t>(1, b.device().info().max_group_items));
  auto local_bytes = [&](int64_t u, bool r_local) {
    return 4 * (B * H + NG * u * B + max_items + (r_local ? NG * u * H : 0)) + 64;
  };
  if (persistent && named.empty() && local_bytes(upg, false) > b.local_mem_bytes()) persistent = false;
  while (!persistent && upg > 1 && local_bytes(upg, false) > b.local_mem_bytes()) upg = ceil_div(upg, 2);
  if (local_bytes(upg, false) > b.local_mem_bytes()) return false;
  // CPU devices: an item per vector of units of one gate and sequence
  // (recurrent.cl RS_VEC), which the group's loop over items runs in turn.
  const int vec = b.device().info().native_float_width >= 16 ? 16 : 8;
  const int64_t wg =
      cpu_vectors ? std::min(max_items, std::max<int64_t>(16, ceil_div(NG * B * ceil_div(upg, vec), 16) * 16)) : max_items;
  const int64_t groups = ceil_div(H, upg), rows = NG * upg * B;
  // R's rows in local memory where a group reads them every step of one launch.
  const bool r_local = persistent && local_bytes(upg, true) <= std::min<int64_t>(b.local_mem_bytes(), 40960);
  int64_t tpr = 1;
  while (tpr * 2 <= 32 && tpr * 2 * rows <= wg && tpr * 2 <= H) tpr *= 2;

  std::string defines = "-DRS_CELL=" + std::to_string(int(cell->kind)) + " -DRS_WG=" + std::to_string(wg) +
                        " -DRS_TPR=" + std::to_string(tpr) + " -DRS_ROWS=" + std::to_string(rows) +
                        " -DRS_STATE=" + std::to_string(B * H);
  const char* names[] = {"-DRS_F=", "-DRS_G=", "-DRS_H="};
  for (size_t k = 0; k < cell->activations.size() && k < 3; ++k)
    defines += std::string(" ") + names[k] + std::to_string(activation_code(cell->activations[k]));
  for (size_t k = cell->activations.size(); k < 3; ++k) defines += std::string(" ") + names[k] + "0";
  if (persistent)
    defines += fence == GridFence::NvidiaPtx ? " -DRS_PERSISTENT -DRS_PTX_FENCE" : " -cl-std=CL3.0 -DRS_PERSISTENT";
  if (r_local) defines += " -DRS_RLOCAL=" + std::to_string(NG * upg * H);
  if (cpu_vectors) defines += " -DRS_VEC=" + std::to_string(vec);

  RecurrentParams p;
  const TensorArg x = b.arg_in(0), y = b.arg_out(0);
  TensorArg r = b.arg_in(1);
  // CPU devices: an item reads a column block of R^T down all H rows, and
  // rows of a stride of 2^n x 128 bytes fall into few cache sets
  // (speech_lstm's 4096 bytes: one): constant R^T is copied with its rows
  // 64 bytes longer where its row's 64-byte blocks number an even count
  // (docs/cpu-kernels.md#recurrent-weights-rows-padded).
  const int64_t G = NG * H;
  if (const HostTensor* rt = b.constant(1); cpu_vectors && rt && G % 16 == 0 && (G / 16) % 2 == 0) {
    const int64_t stride = G + 16;
    const MemArg padded = b.packed("recurrent padded rows", [&] {
      const std::vector<float> v = rt->as_float();
      std::vector<float> out(size_t(H * stride), 0.0f);
      for (int64_t k = 0; k < H; ++k) std::copy_n(v.begin() + k * G, G, out.begin() + k * stride);
      return out;
    });
    r = TensorArg{padded.mem, 0};
    defines += " -DRS_RSTRIDE=" + std::to_string(stride);
  }
  auto optional = [&](int i, cl_int& offset, cl_int& has) {
    if (!b.has_in(i)) return x;  // any valid buffer
    const TensorArg a = b.arg_in(i);
    offset = a.offset;
    has = 1;
    return a;
  };
  const TensorArg rbh = optional(2, p.rbo, p.has_rb), h0 = optional(3, p.h0o, p.has_h0),
                  c0 = optional(4, p.c0o, p.has_c0), peep = optional(5, p.po, p.has_p);
  const TensorArg c = lstm ? b.arg_out(1) : y;
  p.xwo = x.offset, p.ro = r.offset, p.yo = y.offset, p.co = lstm ? c.offset : 0;
  p.steps = i32(T), p.batch = i32(B), p.hidden = i32(H), p.upg = i32(upg);
  p.reverse = cell->reverse, p.input_forget = cell->input_forget, p.clip = cell->clip;
  // Only the persistent form's barrier uses the session's fault flags:
  // asking for them makes every run read them back.
  NodeBuilder::FaultFlags faults;
  if (persistent) faults = b.index_faults();
  p.node = faults.node;
  const MemArg fault{persistent ? faults.mem : y.mem};  // the steps form never touches it
  const Range range = group_range({size_t(groups)}, {size_t(wg)});
  const Source src("recurrent.cl", defines);
  const int64_t steps_a_launch = persistent ? T : 1;
  for (int64_t s = 0; s < T; s += steps_a_launch)
    b.launch(src, "recurrent_steps", range, MemArg{x.mem}, MemArg{r.mem}, MemArg{rbh.mem}, MemArg{h0.mem},
             MemArg{c0.mem}, MemArg{peep.mem}, MemArg{y.mem}, MemArg{c.mem}, p, i32(s), i32(s + steps_a_launch),
             fault);
  return true;
}

}  // namespace texplan::lower
