// Session::Impl's lowering of a graph into steps: each node's prepared kernels, CPU fallback or offloaded call,
// and the metadata, scratch records and host constants the steps need.
#include <algorithm>
#include <set>

#include "optimize/sharing.h"
#include "reference/reference_ops.h"
#include "runtime/session_impl.h"

namespace texplan::runtime {

namespace {
// Tensor without its value: what a run needs to know about it. has_data
// says whether this copy holds the value (keep_host_constants), and
// windows were taken when the nodes were lowered.
Tensor metadata(const Tensor& t) {
  Tensor m = without_value(t);
  m.has_data = false;
  m.window.reset();
  return m;
}
}  // namespace

// The run-time copy of the graph, without weights (messages need it while
// preparing already).
void Session::Impl::keep_metadata(const Graph& g) {
  graph.model_path = g.model_path;
  graph.opset = g.opset;
  graph.nodes = g.nodes;
  graph.inputs = g.inputs;
  graph.outputs = g.outputs;
  for (const Tensor& t : g.tensors) graph.tensors.push_back(metadata(t));
}

void Session::Impl::find_scratch_records(const Graph& g) {
  std::vector<bool> owned(pin.records.size(), false);
  for (int r : pin.record_of_tensor)
    if (r >= 0) owned[size_t(r)] = true;
  scratch_records.assign(g.nodes.size(), {});
  for (size_t r = 0; r < pin.records.size(); ++r)
    if (!owned[r] && pin.records[r].first >= 0 && pin.records[r].first < int(g.nodes.size()))
      scratch_records[size_t(pin.records[r].first)].push_back(int(r));
}

bool Session::Impl::texture_step(const Node& node) const {
  if (node.op_type == "BufferToTexture" || node.op_type == "TextureToBuffer") return true;
  for (int t : node.inputs)
    if (t >= 0 && image(t).mem) return true;
  for (int t : node.outputs)
    if (t >= 0 && image(t).mem) return true;
  return false;
}

// Decides per node: nothing (aliases, constant outputs), prepared kernels, or the CPU.
void Session::Impl::prepare(const Graph& g) {
  for (int n = 0; n < int(g.nodes.size()); ++n) {
    const Node& node = g.nodes[n];
    Step& step = steps.emplace_back();
    step.node = n;
    bool all_constant = true;
    for (int o : node.outputs)
      if (o >= 0) all_constant = all_constant && g.tensors[o].is_constant;
    // Aliases, views and elided concats: their outputs already hold the bytes.
    if (all_constant || writes_nothing(g, node, pin.alias_root, pin.alias_offset)) continue;
    try {
      lower::NodeBuilder b(*dev, g, node, [&](int t) { return locate(g, t); });
      b.kernel_choice = opt.kernel_choice;
      b.tf32 = precision == Precision::Tf32;
      b.half = half;
      b.index_faults = [&, n] { return lower::NodeBuilder::FaultFlags{fault_flags(), n}; };
      b.set_images(
          [&](int t) {
            return image(t, std::find(node.outputs.begin(), node.outputs.end(), t) != node.outputs.end());
          },
          images_1d);
      bool lowered = false;
      try {
        lowered = texture_step(node) ? (lower::lower_texture(b), true) : lower::lower_node(b);
      } catch (const lower::NoHalfKernel& e) {
        if (texture_step(node)) throw Error("its texture kernels (" + e.file + ") have no fp16 storage form");
        half_fallback.push_back(node.name + " (" + node.op_type + "): " + e.file);  // runs on the CPU, converting
      }
      // A window (a patch's part of a larger tensor) is read or written
      // only by kernels that address it through its storage's strides.
      if (const std::vector<int> left = lowered ? b.untaken_windows() : windows_of(g, node); !left.empty())
        throw Error(std::string(lowered ? "its kernels" : "the CPU") + " cannot address tensor " +
                    g.tensors[left[0]].name + ", a window of " + g.tensors[g.tensors[left[0]].window->base].name +
                    " (patch-based execution)");
      if (lowered) {
        std::swap(step.launches, b.launches);
        if (b.used_tf32) tf32_nodes.push_back(node.name + " (" + node.op_type + ")");
        if (b.used_split_k) split_k_nodes.push_back(node.name + " (" + node.op_type + ")");
        // Weights the lowering packed (textures, Winograd) count as
        // weights, and so do split-K's semaphores (a few KiB); those only a
        // tuning candidate read are dropped.
        for (cl_mem m : b.buffers) {
          if (!reads(step.launches, m)) {
            clReleaseMemObject(m);
            continue;
          }
          size_t bytes = 0;
          clGetMemObjectInfo(m, CL_MEM_SIZE, sizeof bytes, &bytes, nullptr);
          weight_bytes += int64_t(bytes);
          packed.push_back(m);
        }
        b.buffers.clear();
      } else {
        if (!reference::supports(node.op_type))
          throw Error("unsupported operator: no OpenCL kernel and no CPU reference");
        step.cpu = true;
        fallback.push_back(node.name + " (" + node.op_type + ")");
      }
    } catch (const Error& e) {
      throw Error(at_node(n) + ": " + e.what());
    }
    if (opt.offload && !texture_step(node)) offload(g, step);
    launches += int(step.launches.size());
    for (int o : node.outputs)
      if (o >= 0 && !g.tensors[root(o)].is_constant) step.writes.push_back(record(o));
    for (int r : scratch_records[n]) step.writes.push_back(r);
  }
  merge_split_passes(g);
  release_unread_weights(g);
}

// A split product's zeroing pass (splitk_zero) right after another's
// epilogue pass (splitk_finish) runs inside it: GoogLeNet's and ResNet's
// deep layers split one after the other, and where a driver costs 5-10 us
// a launch the pass costs more on the host than on the device
// (docs/kernel-choices.md#split-k-passes-merged). In the merged launch the
// zeros land while the epilogue runs, after the earlier product's slices
// and before anything after it: so the zeroed range must overlap nothing
// that epilogue touches, its node's outputs and the inputs its program
// reads (all but the product's operands 0 and 1, which only the slices
// read). Steps between them run nothing; a step on the CPU, offloaded or on
// textures ends the chance. Guard mode keeps the passes apart: its proof
// checks each step against the plan's lifetimes, in which the zeroed bytes
// may still hold the earlier product's operands, dead only once its slices
// have run.
void Session::Impl::merge_split_passes(const Graph& g) {
  if (opt.guard) return;
  const int64_t element = half ? 2 : 4;
  int last = -1;  // the step whose last launch is the one before this step's first
  for (int n = 0; n < int(steps.size()); ++n) {
    Step& s = steps[n];
    if (s.cpu || s.offload || texture_step(g.nodes[s.node])) {
      last = -1;
      continue;
    }
    if (s.launches.empty()) continue;
    if (last >= 0 && steps[last].launches.back().zero_args >= 0 && s.launches.front().zero_count > 0 &&
        s.launches.size() > 1) {
      const lower::Launch& zero = s.launches.front();
      const int64_t z0 = int64_t(zero.zeroes.offset) * element, z1 = z0 + zero.zero_count * element;
      const Node& before = g.nodes[steps[last].node];
      std::vector<int> touched(before.outputs);
      const auto program_inputs = before.inputs.begin() + std::min<size_t>(2, before.inputs.size());
      for (auto in = before.inputs.begin(); in != before.inputs.end(); ++in)
        if (in >= program_inputs || std::find(program_inputs, before.inputs.end(), *in) != before.inputs.end())
          touched.push_back(*in);
      bool overlaps = false;
      for (int t : touched) {
        if (t < 0 || g.tensors[root(t)].is_constant) continue;
        const lower::Location at = locate(g, t);
        overlaps = overlaps ||
                   (at.mem == zero.zeroes.mem && at.byte_offset < z1 && z0 < at.byte_offset + stored(g.tensors[t]));
      }
      if (!overlaps) {
        lower::absorb_zeroing(steps[last].launches.back(), zero);
        clReleaseKernel(zero.kernel);
        s.launches.erase(s.launches.begin());
        --launches;
      }
    }
    last = n;
  }
}

std::vector<int> Session::Impl::windows_of(const Graph& g, const Node& node) {
  std::vector<int> w;
  for (const auto* list : {&node.inputs, &node.outputs})
    for (int t : *list)
      if (t >= 0 && g.tensors[t].window) w.push_back(t);
  return w;
}

bool Session::Impl::reads(const std::vector<lower::Launch>& launches, cl_mem m) {
  for (const lower::Launch& l : launches)
    if (std::find(l.mems.begin(), l.mems.end(), m) != l.mems.end()) return true;
  return false;
}

// Weights uploaded while lowering that no prepared launch reads: a tuning
// candidate's (the direct kernel's, where a packed copy won). Offloaded
// steps' inputs are kept: the library may read them.
void Session::Impl::release_unread_weights(const Graph& g) {
  std::set<int> kept;
  for (const Step& s : steps)
    if (s.offload)
      for (int t : g.nodes[s.node].inputs)
        if (t >= 0) kept.insert(root(t));
  for (auto it = weights.begin(); it != weights.end();) {
    bool read = kept.count(it->first) > 0;
    for (size_t i = 0; i < steps.size() && !read; ++i) read = reads(steps[i].launches, it->second);
    if (read) {
      ++it;
      continue;
    }
    weight_bytes -= stored(g.tensors[it->first]);
    clReleaseMemObject(it->second);
    it = weights.erase(it);
  }
}

void Session::Impl::offload(const Graph& g, Step& step) {
  const Node& node = g.nodes[step.node];
  OffloadRequest r{*dev,
                   q,
                   g,
                   step.node,
                   [&](int t) { return locate(g, t); },
                   [&](int rec) {
                     const plan::Placement& p = plan.placements.at(size_t(rec));
                     return lower::Location{pools.at(size_t(p.pool)), p.offset};
                   },
                   step.launches,
                   precision == Precision::Tf32};
  step.offload = opt.offload->prepare(r);
  if (step.offload) offloaded.push_back(node.name + " (" + node.op_type + ")");
}

// Values of the constants read on the host: by CPU steps and as outputs.
void Session::Impl::keep_host_constants(const Graph& g) {
  auto keep = [&](int t) {
    if (t >= 0 && g.tensors[t].is_constant) {
      graph.tensors[t].value = g.tensors[t].value;
      graph.tensors[t].has_data = g.tensors[t].has_data;
    }
  };
  for (const Step& s : steps)
    if (s.cpu)
      for (int t : g.nodes[s.node].inputs) keep(t);
  for (int t : g.outputs) keep(root(t));
}

}  // namespace texplan::runtime
