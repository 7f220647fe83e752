// Device faults (issue 9): out of device memory at pool allocation, a kernel
// that fails to build, an image larger than the device allows, a lost
// device. Each gives one clear error naming the model (and node or pool), or
// a documented fallback, and the process stays usable: a later Session on the
// same device runs and matches the CPU reference.
//
// Faults are injected without touching the runtime: this executable defines
// the OpenCL entry points it wants to break (clCreateBuffer, clBuildProgram,
// clEnqueueNDRangeKernel, clFinish); the runtime, linked statically, calls
// these, which fail on demand or forward to the ICD loader's (RTLD_NEXT).
#include <CL/cl.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <functional>
#include <random>

#include "import/onnx_import.h"
#include "lower/lower.h"
#include "onnx_builder.h"
#include "optimize/usage.h"
#include "plan/memory_plan.h"
#include "runtime/cpu_executor.h"
#include "runtime/session.h"

using namespace texplan;
using texplan::test::OnnxBuilder;

namespace {

// Fault switches: a status to return instead of calling the driver (0: none),
// and for clCreateBuffer only requests of at least `min_bytes`.
std::atomic<cl_int> fail_create_buffer{0}, fail_build{0}, fail_enqueue{0}, fail_finish{0};
std::atomic<size_t> fail_create_buffer_min_bytes{0}, fail_create_buffer_max_bytes{SIZE_MAX};

template <class F>
F real(const char* name) {
  void* f = dlsym(RTLD_NEXT, name);
  if (!f) std::abort();
  return reinterpret_cast<F>(f);
}

}  // namespace

extern "C" {

CL_API_ENTRY cl_mem CL_API_CALL clCreateBuffer(cl_context context, cl_mem_flags flags, size_t size, void* host_ptr,
                                               cl_int* errcode_ret) CL_API_SUFFIX__VERSION_1_0 {
  static auto f = real<decltype(&clCreateBuffer)>("clCreateBuffer");
  if (cl_int e = fail_create_buffer.load();
      e != 0 && size >= fail_create_buffer_min_bytes.load() && size <= fail_create_buffer_max_bytes.load()) {
    if (errcode_ret) *errcode_ret = e;
    return nullptr;
  }
  return f(context, flags, size, host_ptr, errcode_ret);
}

CL_API_ENTRY cl_int CL_API_CALL clBuildProgram(cl_program program, cl_uint num_devices, const cl_device_id* devices,
                                               const char* options, void(CL_CALLBACK* notify)(cl_program, void*),
                                               void* user_data) CL_API_SUFFIX__VERSION_1_0 {
  static auto f = real<decltype(&clBuildProgram)>("clBuildProgram");
  if (cl_int e = fail_build.load()) return e;
  return f(program, num_devices, devices, options, notify, user_data);
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueNDRangeKernel(cl_command_queue q, cl_kernel k, cl_uint dims,
                                                       const size_t* offset, const size_t* global, const size_t* local,
                                                       cl_uint n, const cl_event* wait,
                                                       cl_event* event) CL_API_SUFFIX__VERSION_1_0 {
  static auto f = real<decltype(&clEnqueueNDRangeKernel)>("clEnqueueNDRangeKernel");
  if (cl_int e = fail_enqueue.load()) return e;
  return f(q, k, dims, offset, global, local, n, wait, event);
}

CL_API_ENTRY cl_int CL_API_CALL clFinish(cl_command_queue q) CL_API_SUFFIX__VERSION_1_0 {
  static auto f = real<decltype(&clFinish)>("clFinish");
  if (cl_int e = fail_finish.load()) {
    f(q);  // the work still drains: only the status is lost
    return e;
  }
  return f(q);
}

}  // extern "C"

namespace {

struct Model {
  Graph g;
  PlanInput pin;
  plan::MemoryPlan plan;
  HostTensor input;
  std::vector<HostTensor> expected;
};

Model with_reference(Model m);

Model tiny_cnn() {
  Model m;
  const std::string dir = std::string(TEXPLAN_SOURCE_DIR) + "/examples/models/tiny_cnn";
  m.g = import_onnx(dir, {.load_weights = true});
  m.input = load_tensor_pb(dir + "/test_data_set_0/input_0.pb");
  return with_reference(std::move(m));
}

Model with_reference(Model m) {
  m.pin = make_usage_records(m.g);
  m.plan = plan::plan_memory(m.pin.records, runtime::open_device("pocl")->info().profile, "best");
  m.expected = runtime::CpuExecutor(m.g, m.pin, m.plan).run({m.input});
  return m;
}

// y = BatchNormalization(x) over 4 channels.
Model batch_norm() {
  OnnxBuilder b;
  b.input("x", {1, 4, 3, 3}).output("y");
  b.initializer("scale", {4}, {1, 2, 3, 4});
  b.initializer("bias", {4}, {0, 1, 0, -1});
  b.initializer("mean", {4}, {0.5f, 0, -0.5f, 1});
  b.initializer("var", {4}, {1, 4, 0.25f, 2});
  b.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"y"}, "bn");
  Model m;
  m.g = import_onnx(b.save(test::temp_dir("devfault"), "bn"), {.load_weights = true});
  m.input = HostTensor(DataType::Float32, {1, 4, 3, 3});
  for (int64_t i = 0; i < m.input.count(); ++i) m.input.data<float>()[i] = float(i % 5) - 2;
  return with_reference(std::move(m));
}

double max_abs_diff(const HostTensor& a, const HostTensor& b) {
  std::vector<float> x = a.as_float(), y = b.as_float();
  if (x.size() != y.size()) return INFINITY;
  double d = 0;
  for (size_t i = 0; i < x.size(); ++i) d = std::max(d, std::fabs(double(x[i]) - y[i]));
  return d;
}

// The process is still usable: a new Session on the same device runs and
// matches the CPU reference.
void expect_usable(const Model& m) {
  runtime::Session s(m.g, m.pin, m.plan, runtime::open_device("pocl"));
  auto out = s.run({m.input});
  ASSERT_EQ(out.size(), m.expected.size());
  EXPECT_LT(max_abs_diff(out[0], m.expected[0]), 1e-4);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << typeid(e).name() << " escaped: " << e.what();
  }
  return "";
}

void expect_one_line(const std::string& m, const std::vector<std::string>& needles) {
  if (std::getenv("TEXPLAN_SHOW_ERRORS")) std::cout << "  message: " << m << "\n";
  EXPECT_FALSE(m.empty());
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  for (const auto& n : needles) EXPECT_NE(m.find(n), std::string::npos) << "'" << n << "' not in: " << m;
}

}  // namespace

// The driver refuses a pool (CL_MEM_OBJECT_ALLOCATION_FAILURE), or would
// exceed the device's largest allocation: one error naming the pool; the
// failed Session releases what it had made.
TEST(DeviceFaults, OutOfDeviceMemoryAtPoolAllocation) {
  const Model m = tiny_cnn();
  fail_create_buffer_min_bytes = size_t(m.plan.pools[0].bytes);  // the pool, not the small weights
  fail_create_buffer = CL_MEM_OBJECT_ALLOCATION_FAILURE;
  std::string e = error_of([&] { runtime::Session s(m.g, m.pin, m.plan, runtime::open_device("pocl")); });
  fail_create_buffer = 0;
  expect_one_line(e, {"model tiny_cnn", "pool 0", "CL_MEM_OBJECT_ALLOCATION_FAILURE", "out of device memory"});
  expect_usable(m);

  // Weights that do not fit (every buffer smaller than the pool): named too.
  fail_create_buffer_min_bytes = 0;
  fail_create_buffer_max_bytes = size_t(m.plan.pools[0].bytes) - 1;
  fail_create_buffer = CL_OUT_OF_RESOURCES;
  e = error_of([&] { runtime::Session s(m.g, m.pin, m.plan, runtime::open_device("pocl")); });
  fail_create_buffer = 0;
  fail_create_buffer_max_bytes = SIZE_MAX;
  expect_one_line(e, {"model tiny_cnn", "uploading weight", "CL_OUT_OF_RESOURCES", "out of device memory"});
  expect_usable(m);

  // A plan whose pool is beyond the device's largest allocation is refused
  // before asking the driver.
  plan::MemoryPlan huge = m.plan;
  huge.pools[0].bytes = runtime::open_device("pocl")->info().profile.max_alloc_bytes + 4096;
  e = error_of([&] { runtime::Session s(m.g, m.pin, huge, runtime::open_device("pocl")); });
  expect_one_line(e, {"model tiny_cnn", "pool 0", "exceeds the device's largest allocation"});
  expect_usable(m);
}

// The OpenCL compiler rejects a program: the error names the model, the node
// and the kernel file, with the build log after it; the failed build is not
// cached, so the next Session builds and runs.
TEST(DeviceFaults, KernelThatFailsToBuild) {
  // BatchNormalization's kernels (norm.cl) are built by no other test here,
  // so the injected failure meets a program not yet in the device's cache.
  const Model m = batch_norm();
  fail_build = CL_BUILD_PROGRAM_FAILURE;
  std::string e = error_of([&] { runtime::Session s(m.g, m.pin, m.plan, runtime::open_device("pocl")); });
  fail_build = 0;
  const std::string first_line = e.substr(0, e.find('\n'));
  expect_one_line(first_line, {"model bn: node 'bn' (BatchNormalization)", "building kernels norm.cl",
                               "CL_BUILD_PROGRAM_FAILURE"});
  expect_usable(m);

  // A real compiler error (broken source through the build options).
  auto dev = runtime::open_device("pocl");
  e = error_of([&] { dev->program("elementwise.cl", "-D__kernel=broken("); });
  expect_one_line(e.substr(0, e.find('\n')), {"building kernels elementwise.cl", "CL_BUILD_PROGRAM_FAILURE"});
  EXPECT_NE(e.find('\n'), std::string::npos) << "the build log follows the first line";
  expect_usable(m);
}

// A 4D activation wider than the device's images stays a buffer (the
// documented fallback), plans, runs and matches the CPU reference; a texture
// beyond the limits given to the planner directly is refused by name.
TEST(DeviceFaults, ImageLargerThanTheDeviceAllowsStaysABuffer) {
  auto dev = runtime::open_device("pocl");
  const plan::DeviceProfile& p = dev->info().profile;
  ASSERT_TRUE(p.image_support);
  Graph g;
  g.model_name = "wide";
  auto tensor = [](const char* name, Shape s) {
    Tensor t;
    t.name = name;
    t.shape = std::move(s);
    return t;
  };
  const int64_t w = p.max_image2d_width + 8;
  Tensor x = tensor("x", {1, 4, 1, w}), a = tensor("a", {1, 4, 1, w}), y = tensor("y", {1, 4, 1, w});
  x.is_input = true;
  y.is_output = true;
  int xi = g.add_tensor(x), ai = g.add_tensor(a), yi = g.add_tensor(y);
  g.inputs = {xi};
  g.outputs = {yi};
  g.nodes.push_back({"relu", "Relu", {xi}, {ai}, {}});
  g.nodes.push_back({"neg", "Neg", {ai}, {yi}, {}});
  g.tensors[ai].producer = 0;
  g.tensors[yi].producer = 1;
  const StorageAssignment sa = assign_storage(g, p, TextureMode::Pools, lower::kernel_catalog());
  PlanInput pin = make_usage_records(g, {&sa});
  for (const auto& r : pin.records) EXPECT_EQ(r.storage, plan::Storage::Buffer) << r.name;
  plan::MemoryPlan plan = plan::plan_memory(pin.records, p, "best");
  plan::validate(plan, pin.records, p);
  runtime::Session s(g, pin, plan, dev);
  HostTensor in(DataType::Float32, {1, 4, 1, w});
  for (int64_t i = 0; i < in.count(); ++i) in.data<float>()[i] = float(i % 7) - 3;
  auto out = s.run({in});
  for (int64_t i = 0; i < in.count(); ++i) ASSERT_EQ(out[0].data<float>()[i], -std::max(0.0f, in.data<float>()[i]));

  plan::UsageRecord tex;
  tex.name = "too_wide";
  tex.storage = plan::Storage::Texture;
  tex.extent = {w, 1, 16};
  tex.bytes = tex.extent.tight_bytes();
  try {
    plan::plan_memory({tex}, p, "best");
    FAIL() << "a texture beyond the image limits was planned";
  } catch (const plan::PlanError& e) {
    EXPECT_NE(std::string(e.what()).find("'too_wide': texture of " + std::to_string(w) + "x1 is beyond"),
              std::string::npos)
        << e.what();
  }
}

// A device lost in the middle of a run (the driver fails every enqueue or
// the final wait, as NVIDIA's does after an Xid error): the run throws one
// error naming the model and the node or the wait; the Session itself and a
// new one run again once the device answers. (A device that stays lost keeps
// failing the same way: open_device keeps one context per device for the
// process's life, so recovering from a real loss needs a new process.)
TEST(DeviceFaults, LostDeviceMidRun) {
  const Model m = tiny_cnn();
  runtime::Session s(m.g, m.pin, m.plan, runtime::open_device("pocl"));
  ASSERT_LT(max_abs_diff(s.run({m.input})[0], m.expected[0]), 1e-4);

  fail_enqueue = CL_OUT_OF_RESOURCES;
  std::string e = error_of([&] { s.run({m.input}); });
  fail_enqueue = 0;
  expect_one_line(e, {"model tiny_cnn: node", "enqueueing kernel", "CL_OUT_OF_RESOURCES"});

  fail_finish = CL_DEVICE_NOT_AVAILABLE;
  e = error_of([&] { s.run({m.input}); });
  fail_finish = 0;
  expect_one_line(e, {"model tiny_cnn", "CL_DEVICE_NOT_AVAILABLE"});

  EXPECT_LT(max_abs_diff(s.run({m.input})[0], m.expected[0]), 1e-4) << "the same Session recovers";
  expect_usable(m);
}
