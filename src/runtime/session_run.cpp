// Session::Impl's run: input checks, the steps enqueued (or offloaded, or run on the CPU) with profile mode's
// node times, guard mode's baseline, and the index fault flags read back and raised as the node's error.
#include <chrono>

#include "runtime/session_impl.h"

namespace texplan::runtime {

void Session::Impl::check_input(size_t i, DataType dtype, const Shape& shape, int64_t bytes) const {
  const Tensor& t = graph.tensors[graph.inputs[i]];
  if (dtype != t.dtype || shape != t.shape || bytes != t.bytes())
    throw Error(model() + ": input " + t.name + " must be " + to_string(t.dtype) + " " + to_string(t.shape) +
                ", got " + to_string(dtype) + " " + to_string(shape));
}

void Session::Impl::begin_run() {
  violations.clear();
  if (opt.guard) poison();
}

void Session::Impl::inputs_written() {
  if (!opt.guard) return;
  check(clFinish(q), model() + ": writing inputs");
  for (int t : graph.inputs)
    if (pin.record_of_tensor[root(t)] >= 0) shadows[record(t)] = record_bytes(record(t));
}

void Session::Impl::run_steps() {
  const Graph& g = graph;
  times.clear();
  profiled.clear();
  const auto enqueue_start = std::chrono::steady_clock::now();
  for (const Step& s : steps) {
    auto node_start = std::chrono::steady_clock::now();
    std::vector<cl_event>* events = opt.profile ? &profiled.step() : nullptr;
    const bool offloaded = enqueue_offloaded(s, events);
    if (offloaded) {
    } else if (s.cpu) run_on_cpu(s);
    else enqueue(s, events);
    if (opt.profile) {
      const auto node_end = std::chrono::steady_clock::now();
      const Node& n = g.nodes[s.node];
      NodeTime& t = times.emplace_back();
      t.node = n.name, t.op = n.op_type, t.cpu = s.cpu, t.launches = int(s.launches.size());
      double host_ms = std::chrono::duration<double, std::milli>(node_end - node_start).count();
      if (s.cpu) t.ms = host_ms;
      else t.enqueue_us = host_ms * 1e3;
      NodeCost c = node_cost(g, n);
      t.flops = c.flops, t.bytes = c.bytes;
      using us = std::chrono::duration<double, std::micro>;
      t.host_begin_us = us(node_start.time_since_epoch()).count();
      t.host_end_us = us(node_end.time_since_epoch()).count();
      for (size_t k = 0; k < events->size(); ++k)  // texplan's launches by name; more events: the offloader's
        t.kernels.push_back({!offloaded && k < s.launches.size() ? s.launches[k].name : "offload"});
      for (int i : n.inputs) t.input_shapes.push_back(i >= 0 ? g.tensors[i].shape : Shape{});
      for (int o : n.outputs) t.output_shapes.push_back(o >= 0 ? g.tensors[o].shape : Shape{});
    }
    if (opt.guard) guard_after(s.node);
  }
  last_enqueue_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - enqueue_start).count();
}

void Session::Impl::end_run(std::chrono::steady_clock::time_point start) {
  if (index_faults)
    check(clEnqueueReadBuffer(q, index_faults, CL_FALSE, 0, sizeof fault_words, fault_read, 0, nullptr, nullptr),
          model() + ": reading the index fault flags");
  check(clFinish(q), model() + ": running");
  if (!ran) dev->store_programs();  // with what the driver generated at the kernels' first launches
  ran = true;
  if (opt.profile) profiled.device_times(times), last_span_ms = profiled.span_ms();
  profiled.clear();
  last_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (index_faults) raise_index_fault(fault_read);
}

// True when the offloader ran the step; false (after one warning) when it
// rejected the call: the caller then runs the step's own launches.
bool Session::Impl::enqueue_offloaded(const Step& s, std::vector<cl_event>* events) {
  if (!s.offload || s.offload_rejected) return false;
  if (s.offload->enqueue(q, events)) return true;
  s.offload_rejected = true;
  return false;
}

// `events` (profile mode) receives one event per launch.
void Session::Impl::enqueue(const Step& s, std::vector<cl_event>* events) {
  for (const lower::Launch& l : s.launches) {
    cl_event* ev = events ? &events->emplace_back() : nullptr;
    cl_int e = clEnqueueNDRangeKernel(q, l.kernel, l.dims, nullptr, l.global,
                                      l.has_local ? l.local : nullptr, 0, nullptr, ev);
    if (e != CL_SUCCESS) {
      if (ev) events->pop_back();
      throw Error(at_node(s.node) + ": enqueueing kernel " + l.name + ": " + cl_error_name(e));
    }
  }
}

cl_mem Session::Impl::fault_flags() {
  if (index_faults) return index_faults;
  cl_int s = CL_SUCCESS;
  index_faults = clCreateBuffer(dev->context(), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof fault_words,
                                fault_words, &s);
  check(s, model() + ": the index fault flags");
  fault_read = static_cast<cl_int*>(stage(kFaultFlagsKey, sizeof fault_words));
  if (!fault_read) fault_read = fault_words;
  return index_faults;
}

// Throws the error of the node that flagged an index out of range, if
// any, after clearing the flags for the next run.
void Session::Impl::raise_index_fault(const cl_int* words) {
  if (words[0] == 0) return;
  const int n = words[0] - 1;
  const int64_t k = int64_t(uint64_t(uint32_t(words[1])) | uint64_t(uint32_t(words[2])) << 32);
  const cl_int zeros[8] = {};
  check(clEnqueueWriteBuffer(q, index_faults, CL_TRUE, 0, sizeof zeros, zeros, 0, nullptr, nullptr),
        model() + ": clearing the index fault flags");
  if (n < 0 || n >= int(graph.nodes.size())) throw Error(model() + ": an index out of range, node unknown");
  const Node& node = graph.nodes[n];
  if (words[3] == 1)
    throw Error(model() + ": node '" + node.name + "' (" + node.op_type +
                "): the device did not run the persistent kernel's work-groups at once (its grid barrier gave up "
                "waiting); the recurrent kernel's steps form runs anywhere");
  std::string where = "an index input";
  if (!node.inputs.empty() && node.inputs[0] >= 0) {
    const Shape& data = graph.tensors[node.inputs[0]].shape;
    int64_t axis = node.get_int("axis", 0);
    if (axis < 0) axis += int64_t(data.size());
    if (axis >= 0 && axis < int64_t(data.size()))
      where = "axis " + std::to_string(axis) + " of size " + std::to_string(data[axis]);
  }
  throw Error(model() + ": node '" + node.name + "' (" + node.op_type + "): index " + std::to_string(k) +
              " is out of range for " + where);
}

}  // namespace texplan::runtime
