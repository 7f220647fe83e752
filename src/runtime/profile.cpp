#include "runtime/profile.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <set>

#include "runtime/session.h"

namespace texplan::runtime {

NodeCost node_cost(const Graph& g, const Node& n) {
  NodeCost c;
  std::set<int> seen;
  for (int t : n.inputs)
    if (t >= 0 && seen.insert(t).second) c.bytes += double(g.tensors[t].bytes());
  for (int t : n.outputs)
    if (t >= 0 && seen.insert(t).second) c.bytes += double(g.tensors[t].bytes());
  auto in = [&](size_t k) -> const Shape* {
    return k < n.inputs.size() && n.inputs[k] >= 0 ? &g.tensors[n.inputs[k]].shape : nullptr;
  };
  const Shape* y = n.outputs.empty() || n.outputs[0] < 0 ? nullptr : &g.tensors[n.outputs[0]].shape;
  const Shape *a = in(0), *b = in(1);
  if (!y || !a || !b) return c;
  auto tail = [](const Shape& s, size_t from) {  // product of dims [from, end)
    double p = 1;
    for (size_t k = from; k < s.size(); ++k) p *= double(s[k]);
    return p;
  };
  const std::string& op = n.op_type;
  if (op == "Conv" || op == "FusedConv") {
    c.flops = 2 * tail(*y, 0) * tail(*b, 1);  // W: [OC, C/groups, k...]
    if (shuffled_output(n)) c.flops /= 2;  // half of Y is a copy
    // A depthwise input's sums, one per input channel at each of Y's pixels.
    if (const std::optional<ChannelProgram> p = channel_program(n); p && p->depthwise && y->size() == 4)
      c.flops += 2 * double((*y)[0]) * double((*b)[1]) * double((*y)[2]) * double((*y)[3]) *
                 double(p->depthwise->kh * p->depthwise->kw);
  } else if (op == "FusedConvMaxPool" && a->size() == b->size() && a->size() >= 3) {
    // The conv's work at each of its output pixels (never stored: Y is the
    // pool's), sizes from the conv attributes as Conv's shape inference.
    const size_t rank = a->size() - 2;
    const std::vector<int64_t> s = n.get_ints("strides", std::vector<int64_t>(rank, 1)),
                               d = n.get_ints("dilations", std::vector<int64_t>(rank, 1));
    double pixels = 1;
    for (size_t k = 0; k < rank && s.size() == rank && d.size() == rank; ++k)
      pixels *= double(std::max<int64_t>(0, conv_out_extent(n, k, rank, (*a)[2 + k], (*b)[2 + k], s[k], d[k])));
    c.flops = 2 * double((*y)[0]) * double((*y)[1]) * pixels * tail(*b, 1);
  } else if (op == "ConvTranspose") {
    c.flops = 2 * tail(*a, 0) * tail(*b, 1);  // W: [C, OC/groups, k...]: every input pixel hits every tap
  } else if (op == "Gemm") {
    bool ta = n.get_int("transA", 0) != 0;
    if (a->size() == 2) c.flops = 2 * tail(*y, 0) * double(ta ? (*a)[0] : (*a)[1]);
  } else if (op == "FusedMlp" && in(3)) {  // W1 [H, C, 1, 1], W2 [O, H, 1, 1]: two matrix-vector products per image
    c.flops = 2 * double((*a)[0]) * (tail(*b, 0) + tail(*in(3), 0));
  } else if (const std::optional<AttentionForm> f = attention_form(n); f && in(2)) {
    // Two products per query row: scores over the Sk keys (D long), then Sk rows of V.
    const std::optional<OperandView> qv = operand_view(n, 0), kv = operand_view(n, 1);
    const Shape &q = qv ? qv->shape : *a, &k = kv ? kv->shape : *b;
    if (q.size() >= 2 && k.size() >= 2) {
      const double keys = double(f->k_transposed ? k.back() : k[k.size() - 2]);
      c.flops = 2 * tail(*y, 0) / double(y->back()) * keys * double(q.back() + y->back());
    }
  } else if (recurrent_cell(n) && b->size() == 2) {
    c.flops = 2 * tail(*y, 0) * double((*b)[1]);  // every step: its state [B, H] times R^T [H, G*H]
  } else if (op == "MatMul" || op == "FusedMatMul") {
    const std::optional<OperandView> v = operand_view(n, 0);  // A read through a view: its logical shape
    c.flops = 2 * tail(*y, 0) * double(v ? v->shape.back() : a->back());
  }
  return c;
}

ProfileEvents::~ProfileEvents() { clear(); }

void ProfileEvents::clear() {
  for (auto& s : steps_)
    for (cl_event e : s) clReleaseEvent(e);
  steps_.clear();
}

namespace {
// Widens [first, last] to event e's start and end; false when it has none.
bool widen(cl_event e, cl_ulong& first, cl_ulong& last) {
  cl_ulong s = 0, t = 0;
  if (clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_START, sizeof s, &s, nullptr) != CL_SUCCESS ||
      clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_END, sizeof t, &t, nullptr) != CL_SUCCESS)
    return false;
  first = std::min(first, s);
  last = std::max(last, t);
  return true;
}
}  // namespace

void ProfileEvents::device_times(std::vector<NodeTime>& times) const {
  // The device clock onto the host's: the run's first kernel was queued
  // when its step began enqueueing (its START where QUEUED is not given).
  // Differences of the integer nanoseconds first: a device clock counting
  // from 1970 has no sub-microsecond digits left in a double.
  cl_ulong anchor_ns = 0;
  double anchor_us = 0;
  for (size_t k = 0; k < steps_.size() && k < times.size(); ++k) {
    if (steps_[k].empty()) continue;
    cl_ulong queued = 0;
    if (clGetEventProfilingInfo(steps_[k][0], CL_PROFILING_COMMAND_QUEUED, sizeof queued, &queued, nullptr) !=
            CL_SUCCESS ||
        queued == 0)
      clGetEventProfilingInfo(steps_[k][0], CL_PROFILING_COMMAND_START, sizeof queued, &queued, nullptr);
    anchor_ns = queued, anchor_us = times[k].host_begin_us;
    break;
  }
  for (size_t k = 0; k < steps_.size() && k < times.size(); ++k) {
    if (steps_[k].empty()) continue;
    cl_ulong first = ~cl_ulong(0), last = 0;
    for (size_t i = 0; i < steps_[k].size(); ++i) {
      cl_ulong s = ~cl_ulong(0), e = 0;
      if (!widen(steps_[k][i], s, e)) continue;
      first = std::min(first, s), last = std::max(last, e);
      if (i < times[k].kernels.size())
        times[k].kernels[i].begin_us = anchor_us + double(int64_t(s - anchor_ns)) * 1e-3,
        times[k].kernels[i].end_us = anchor_us + double(int64_t(e - anchor_ns)) * 1e-3;
    }
    if (last >= first) times[k].ms = double(last - first) * 1e-6;
  }
}

double ProfileEvents::span_ms() const {
  cl_ulong first = ~cl_ulong(0), last = 0;
  for (const auto& step : steps_)
    for (cl_event e : step) widen(e, first, last);
  return last >= first ? double(last - first) * 1e-6 : 0;
}

namespace {

void check(cl_int s, const char* what) {
  if (s != CL_SUCCESS) throw Error(std::string("measuring the device's ceilings: ") + what + ": " + cl_error_name(s));
}

// Best of `reps` timed runs of one kernel, in seconds.
double best_seconds(cl_command_queue q, cl_kernel k, size_t global, const size_t* local, int reps) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    cl_event e = nullptr;
    check(clEnqueueNDRangeKernel(q, k, 1, nullptr, &global, local, 0, nullptr, &e), "clEnqueueNDRangeKernel");
    cl_int s = clWaitForEvents(1, &e);
    cl_ulong t0 = 0, t1 = 0;
    if (s == CL_SUCCESS) s = clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_START, sizeof t0, &t0, nullptr);
    if (s == CL_SUCCESS) s = clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_END, sizeof t1, &t1, nullptr);
    clReleaseEvent(e);
    check(s, "kernel timing");
    if (r > 0) best = std::min(best, double(t1 - t0) * 1e-9);  // the first run warms up
  }
  return best;
}

}  // namespace

Ceilings measure_ceilings(Device& dev) {
  static std::mutex mutex;
  static std::map<const Device*, Ceilings> measured;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = measured.find(&dev); it != measured.end()) return it->second;

  const bool gpu = dev.info().type == "gpu";
  cl_command_queue q = dev.profiling_queue();
  cl_program prog = dev.program("ceiling.cl", gpu ? "-DFMA_W=4" : "-DFMA_W=16");
  cl_int s = CL_SUCCESS;
  Ceilings c;
  size_t bytes = gpu ? (256u << 20) : (64u << 20);
  if (dev.info().profile.max_alloc_bytes > 0)
    bytes = std::min<size_t>(bytes, size_t(dev.info().profile.max_alloc_bytes) / 2);
  cl_mem a = clCreateBuffer(dev.context(), CL_MEM_READ_WRITE, bytes, nullptr, &s);
  check(s, "clCreateBuffer");
  cl_mem b = clCreateBuffer(dev.context(), CL_MEM_READ_WRITE, bytes, nullptr, &s);
  cl_kernel copy = nullptr, fma = nullptr;
  try {
    check(s, "clCreateBuffer");
    const cl_uchar zero = 0;
    check(clEnqueueFillBuffer(q, a, &zero, 1, 0, bytes, 0, nullptr, nullptr), "clEnqueueFillBuffer");
    check(clEnqueueFillBuffer(q, b, &zero, 1, 0, bytes, 0, nullptr, nullptr), "clEnqueueFillBuffer");
    copy = clCreateKernel(prog, "stream_copy", &s);
    check(s, "clCreateKernel(stream_copy)");
    check(clSetKernelArg(copy, 0, sizeof a, &a), "clSetKernelArg");
    check(clSetKernelArg(copy, 1, sizeof b, &b), "clSetKernelArg");
    c.gbps = 2.0 * double(bytes) / best_seconds(q, copy, bytes / 16, nullptr, 6) * 1e-9;

    fma = clCreateKernel(prog, "fma_loop", &s);
    check(s, "clCreateKernel(fma_loop)");
    // CPUs: groups of 8 work-items, 128 groups per compute unit to balance.
    const size_t items = size_t(std::max(1, dev.info().compute_units)) * (gpu ? 2048 : 1024), cpu_local = 8;
    const cl_int iters = gpu ? 4096 : 256;
    const cl_float scale = 0.999f;
    check(clSetKernelArg(fma, 0, sizeof b, &b), "clSetKernelArg");
    check(clSetKernelArg(fma, 1, sizeof iters, &iters), "clSetKernelArg");
    check(clSetKernelArg(fma, 2, sizeof scale, &scale), "clSetKernelArg");
    c.gflops = (gpu ? 64.0 : 256.0) * double(items) * double(iters) / best_seconds(q, fma, items, gpu ? nullptr : &cpu_local, 6) * 1e-9;
  } catch (...) {
    if (copy) clReleaseKernel(copy);
    if (fma) clReleaseKernel(fma);
    clReleaseMemObject(a);
    if (b) clReleaseMemObject(b);
    throw;
  }
  clReleaseKernel(copy);
  clReleaseKernel(fma);
  clReleaseMemObject(a);
  clReleaseMemObject(b);
  measured[&dev] = c;
  return c;
}

}  // namespace texplan::runtime
