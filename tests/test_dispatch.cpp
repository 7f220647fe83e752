// Lean dispatch (issue 7, part 1): a run enqueues the prepared kernels back
// to back, with no host synchronisation between nodes and no allocation,
// kernel creation or argument setting; one clFinish at the end. Counted by
// interposing the OpenCL entry points (this executable defines them and
// forwards to the ICD loader's), like test_robustness_device.
#include <CL/cl.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <random>

#include "graph_builder.h"
#include "lower/ops.h"
#include "optimize/optimize.h"
#include "optimize/usage.h"
#include "plan/memory_plan.h"
#include "runtime/session.h"
#include "test_util.h"

using namespace texplan;
using test::random_tensor;
using test::test_device;

namespace {

std::atomic<int> finishes{0}, waits{0}, ndranges{0}, buffers{0}, kernels{0}, set_args{0}, writes{0}, reads{0};

template <class F>
F real(const char* name) {
  void* f = dlsym(RTLD_NEXT, name);
  if (!f) std::abort();
  return reinterpret_cast<F>(f);
}

void reset() {
  for (auto* c : {&finishes, &waits, &ndranges, &buffers, &kernels, &set_args, &writes, &reads}) *c = 0;
}

}  // namespace

extern "C" {
CL_API_ENTRY cl_int CL_API_CALL clFinish(cl_command_queue q) CL_API_SUFFIX__VERSION_1_0 {
  static auto f = real<decltype(&clFinish)>("clFinish");
  ++finishes;
  return f(q);
}
CL_API_ENTRY cl_int CL_API_CALL clWaitForEvents(cl_uint n, const cl_event* e) CL_API_SUFFIX__VERSION_1_0 {
  static auto f = real<decltype(&clWaitForEvents)>("clWaitForEvents");
  ++waits;
  return f(n, e);
}
CL_API_ENTRY cl_int CL_API_CALL clEnqueueNDRangeKernel(cl_command_queue q, cl_kernel k, cl_uint dims,
                                                       const size_t* off, const size_t* global, const size_t* local,
                                                       cl_uint nw, const cl_event* wl,
                                                       cl_event* ev) CL_API_SUFFIX__VERSION_1_0 {
  static auto f = real<decltype(&clEnqueueNDRangeKernel)>("clEnqueueNDRangeKernel");
  ++ndranges;
  return f(q, k, dims, off, global, local, nw, wl, ev);
}
CL_API_ENTRY cl_mem CL_API_CALL clCreateBuffer(cl_context c, cl_mem_flags fl, size_t size, void* host,
                                               cl_int* err) CL_API_SUFFIX__VERSION_1_0 {
  static auto f = real<decltype(&clCreateBuffer)>("clCreateBuffer");
  ++buffers;
  return f(c, fl, size, host, err);
}
CL_API_ENTRY cl_kernel CL_API_CALL clCreateKernel(cl_program p, const char* name,
                                                  cl_int* err) CL_API_SUFFIX__VERSION_1_0 {
  static auto f = real<decltype(&clCreateKernel)>("clCreateKernel");
  ++kernels;
  return f(p, name, err);
}
CL_API_ENTRY cl_int CL_API_CALL clSetKernelArg(cl_kernel k, cl_uint i, size_t size,
                                               const void* v) CL_API_SUFFIX__VERSION_1_0 {
  static auto f = real<decltype(&clSetKernelArg)>("clSetKernelArg");
  ++set_args;
  return f(k, i, size, v);
}
CL_API_ENTRY cl_int CL_API_CALL clEnqueueWriteBuffer(cl_command_queue q, cl_mem m, cl_bool block, size_t off,
                                                     size_t size, const void* p, cl_uint nw, const cl_event* wl,
                                                     cl_event* ev) CL_API_SUFFIX__VERSION_1_0 {
  static auto f = real<decltype(&clEnqueueWriteBuffer)>("clEnqueueWriteBuffer");
  ++writes;
  return f(q, m, block, off, size, p, nw, wl, ev);
}
CL_API_ENTRY cl_int CL_API_CALL clEnqueueReadBuffer(cl_command_queue q, cl_mem m, cl_bool block, size_t off,
                                                    size_t size, void* p, cl_uint nw, const cl_event* wl,
                                                    cl_event* ev) CL_API_SUFFIX__VERSION_1_0 {
  static auto f = real<decltype(&clEnqueueReadBuffer)>("clEnqueueReadBuffer");
  ++reads;
  return f(q, m, block, off, size, p, nw, wl, ev);
}
}  // extern "C"

namespace {

// conv -> relu -> conv -> add(residual) -> global pool -> flatten -> gemm:
// several kernels per run, an alias, a broadcast.
Graph small_net() {
  std::mt19937 rng(3);
  Graph g;
  g.model_name = "dispatch";
  g.opset = 13;
  auto tensor = [&](const std::string& name, Shape s, bool constant) {
    Tensor t;
    t.name = name;
    t.shape = s;
    if (constant) {
      t.is_constant = t.has_data = true;
      t.value = random_tensor(s, rng);
    }
    return g.add_tensor(t);
  };
  auto node = [&](const std::string& op, std::vector<int> in, int out, std::map<std::string, Attribute> a = {}) {
    Node n;
    n.name = op + std::to_string(g.nodes.size());
    n.op_type = op;
    n.inputs = std::move(in);
    n.outputs = {out};
    n.attrs = std::move(a);
    g.tensors[out].producer = int(g.nodes.size());
    g.nodes.push_back(n);
  };
  const Attribute pads = Attribute::of_ints({1, 1, 1, 1});
  int x = tensor("x", {1, 4, 12, 12}, false);
  g.tensors[x].is_input = true;
  g.inputs = {x};
  int c1 = tensor("c1", {1, 8, 12, 12}, false), r1 = tensor("r1", {1, 8, 12, 12}, false);
  int c2 = tensor("c2", {1, 8, 12, 12}, false), a = tensor("a", {1, 8, 12, 12}, false);
  int p = tensor("p", {1, 8, 1, 1}, false), f = tensor("f", {1, 8}, false), y = tensor("y", {1, 5}, false);
  node("Conv", {x, tensor("w1", {8, 4, 3, 3}, true), tensor("b1", {8}, true)}, c1, {{"pads", pads}});
  node("Relu", {c1}, r1);
  node("Conv", {r1, tensor("w2", {8, 8, 3, 3}, true), tensor("b2", {8}, true)}, c2, {{"pads", pads}});
  node("Add", {c2, r1}, a);
  node("GlobalAveragePool", {a}, p);
  node("Flatten", {p}, f);
  node("Gemm", {f, tensor("wg", {8, 5}, true), tensor("bg", {5}, true)}, y);
  g.tensors[y].is_output = true;
  g.outputs = {y};
  return g;
}

HostTensor input() {
  HostTensor t(DataType::Float32, {1, 4, 12, 12});
  for (int64_t i = 0; i < t.count(); ++i) t.data<float>()[i] = float(i % 7) * 0.25f - 0.5f;
  return t;
}

}  // namespace

TEST(Dispatch, RunEnqueuesPreparedKernelsWithOneSyncAndNoAllocation) {
  Graph g = small_net();
  PlanInput pin = make_usage_records(g);
  auto dev = test_device();
  plan::MemoryPlan plan = plan::plan_memory(pin.records, dev->info().profile, "best");
  runtime::Session s(g, pin, plan, dev);
  ASSERT_TRUE(s.fallback_nodes().empty());
  HostTensor in = input();
  std::vector<HostTensor> first = s.run({in});  // builds nothing either, but warm the driver
  reset();
  std::vector<HostTensor> out = s.run({in});
  EXPECT_EQ(ndranges.load(), s.kernel_launches());
  EXPECT_GE(s.kernel_launches(), 6);
  EXPECT_EQ(finishes.load(), 1) << "host syncs in a run";
  EXPECT_EQ(waits.load(), 0);
  EXPECT_EQ(buffers.load(), 0) << "device allocations in a run";
  EXPECT_EQ(kernels.load(), 0);
  EXPECT_EQ(set_args.load(), 0) << "kernel arguments are set once, when the session is built";
  EXPECT_EQ(writes.load(), 1);  // the input, copied once
  EXPECT_EQ(reads.load(), 1);   // the output, copied once
  EXPECT_EQ(out[0].bytes, first[0].bytes);

  // Profiling times nodes from events: still one sync per run.
  runtime::SessionOptions o;
  o.profile = true;
  runtime::Session p(g, pin, plan, dev, o);
  p.run({in});
  reset();
  p.run({in});
  EXPECT_EQ(finishes.load(), 1);
  EXPECT_EQ(waits.load(), 0);
  EXPECT_EQ(ndranges.load(), p.kernel_launches());
  int timed = 0;
  for (const auto& t : p.node_times())
    if (t.launches > 0) {
      ++timed;
      EXPECT_GT(t.ms, 0) << t.node;
      EXPECT_GE(t.enqueue_us, 0) << t.node;
    }
  EXPECT_GE(timed, 5);
}

// Split-K (named: the GPU kernels with K in 2 slices) makes a conv 2
// launches (zero Y, the slices; a third applies an epilogue in place), all
// prepared when the session is built: the run is still one pass of enqueues.
TEST(Dispatch, SplitKConvsArePreparedLaunches) {
  Graph g = small_net();
  PlanInput pin = make_usage_records(g);
  auto dev = test_device();
  plan::MemoryPlan plan = plan::plan_memory(pin.records, dev->info().profile, "best");
  HostTensor in = input();
  runtime::Session whole(g, pin, plan, dev, {.kernel_choice = {.conv = "gpu"}});
  runtime::Session split(g, pin, plan, dev, {.kernel_choice = {.conv = "gpu/s2"}});
  // Both convs (K = 36 and 72, bias, no epilogue) split; the Gemm (K = 8) is too shallow.
  EXPECT_EQ(split.kernel_launches(), whole.kernel_launches() + 2);
  EXPECT_EQ(split.split_k_nodes().size(), 2u);
  EXPECT_TRUE(whole.split_k_nodes().empty());
  std::vector<HostTensor> expected = whole.run({in});
  split.run({in});
  reset();
  std::vector<HostTensor> out = split.run({in});
  EXPECT_EQ(ndranges.load(), split.kernel_launches());
  EXPECT_EQ(finishes.load(), 1) << "host syncs in a run";
  EXPECT_EQ(waits.load(), 0);
  EXPECT_EQ(buffers.load(), 0) << "device allocations in a run";
  EXPECT_EQ(kernels.load(), 0);
  EXPECT_EQ(set_args.load(), 0);
  ASSERT_EQ(out[0].count(), expected[0].count());
  std::vector<float> a = out[0].as_float(), e = expected[0].as_float();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], e[i], 1e-4f * (1 + std::fabs(e[i]))) << i;
}

namespace {
// The kernels of a profiled run, node by node.
std::vector<std::vector<std::string>> kernels_by_node(runtime::Session& s, const HostTensor& in) {
  s.run({in});
  std::vector<std::vector<std::string>> names;
  for (const auto& t : s.node_times()) {
    if (t.launches == 0) continue;
    names.emplace_back();
    for (const auto& k : t.kernels) names.back().push_back(k.name);
  }
  return names;
}
}  // namespace

// A split product's zeroing pass right after another's epilogue pass runs
// inside it (Session::Impl::merge_split_passes): three split convs with a
// Relu each, 9 launches as 7, with the results of the unsplit convs and of
// guard mode, which keeps the passes apart and proves the plan; where the
// zeroed output reuses the bytes of the residual the epilogue before it
// reads, the pass stays apart.
TEST(Dispatch, SplitKZeroingPassesRunInsideTheEpiloguesBefore) {
  auto dev = test_device();
  auto build = [](bool residual) {
    test::GraphBuilder b("split_chain");
    const int x = b.input({1, 8, 10, 10});
    const int c1 = b.node("Relu", {b.conv(x, 16, 3, 1, 1)}, {1, 16, 10, 10});
    int c2 = b.node("Relu", {b.conv(c1, 16, 3, 1, 1)}, {1, 16, 10, 10});
    if (residual) c2 = b.node("Relu", {b.node("Add", {b.conv(c2, 16, 3, 1, 1), c1}, {1, 16, 10, 10})}, {1, 16, 10, 10});
    const int c3 = b.node("Relu", {b.conv(c2, 16, 3, 1, 1)}, {1, 16, 10, 10});
    b.output(c3);
    Graph g = std::move(b.g);
    OptimizeOptions o;
    o.inplace = false;  // the residual stays an input of the epilogue, not Y's own storage
    optimize(g, o);
    return g;
  };
  const HostTensor in = random_tensor({1, 8, 10, 10});
  for (bool residual : {false, true}) {
    SCOPED_TRACE(residual ? "residual" : "chain");
    Graph g = build(residual);
    PlanInput pin = make_usage_records(g);
    plan::MemoryPlan plan = plan::plan_memory(pin.records, dev->info().profile, "best");
    runtime::Session whole(g, pin, plan, dev, {.kernel_choice = {.conv = "gpu"}});
    runtime::SessionOptions o{.kernel_choice = {.conv = "gpu/s2"}};
    o.profile = true;
    runtime::Session split(g, pin, plan, dev, o);
    o.profile = false;
    o.guard = true;
    runtime::Session guarded(g, pin, plan, dev, o);
    const std::vector<std::vector<std::string>> names = kernels_by_node(split, in);
    const size_t convs = residual ? 4 : 3;
    ASSERT_EQ(names.size(), convs);
    EXPECT_EQ(names[0], (std::vector<std::string>{"splitk_zero", "conv2d_gemm", "splitk_finish"}));
    int merged = 0;
    for (size_t i = 1; i < convs; ++i) merged += names[i].front() != "splitk_zero";
    EXPECT_EQ(split.kernel_launches(), int(3 * convs) - merged);
    EXPECT_EQ(merged, 2);
    // The residual chain: the last conv's output lies on c1's bytes (the
    // plan's reuse), which the residual conv's epilogue reads.
    if (residual) EXPECT_EQ(names[3].front(), "splitk_zero");
    const HostTensor expected = whole.run({in})[0];
    for (runtime::Session* s : {&split, &guarded}) {
      const HostTensor out = s->run({in})[0];
      EXPECT_LT(test::rel_error(out, expected), 1e-5);
    }
    EXPECT_TRUE(guarded.guard_violations().empty()) << guarded.guard_violations()[0].to_string();
    EXPECT_EQ(guarded.kernel_launches(), int(3 * convs));
  }
}
