// texplan_enqueue_bench: what one kernel launch costs the host, by the
// kernel's argument list and the alternation of kernels, on one in-order
// queue as a texplan run enqueues them (no events, one clFinish at the end).
// On NVIDIA's OpenCL the zoo's runs spend most of their time in that loop
// (`texplan run --bench` reports it as enqueue_ms), so this tells what a
// leaner launch would gain before anyone builds one.
//
//   texplan_enqueue_bench [--device SPEC] [--launches N] [--rounds R] [--transfer BYTES]
//
// Then what a persistent kernel would save: 64 dependent steps launched one
// by one against one launch of a group per compute unit that runs them all
// with a grid barrier between steps (persistent_chains below).
//
// Cases: kernels of 2 buffer arguments, of 2 buffers and 16 ints, of 2
// buffers and the 16 ints as one struct, of 8 buffers (8 distinct, or the 8
// arguments naming only 1 or 2 buffers), and of 8 buffers and 16 ints (a
// fused conv's list), as 1 work-group and as 1024; the same N
// launches alternating over 8 distinct kernel objects, and over the same
// kernel from 8 programs (as a run's nodes each launch their own program's)
// of 1, 2 and 16 groups; 64 groups of real work (about 0.3 ms on PoCL); and
// with an event per launch (what --profile adds). Per case: host
// microseconds per clEnqueueNDRangeKernel (median of R rounds), the wall
// time per launch to clFinish, and the device's idle time between two
// kernels from events on the profiling queue (first start to last end less
// the kernels' own times, per launch; `texplan run --profile` reports the
// same for a model). On the H100 (`--launches 100 --rounds 9`) the host pays
// per argument, not per distinct buffer: 8 buffer arguments cost 5.7 us a
// launch whether they name 8, 2 or 1 buffers (2 arguments: 4.0 us), so one
// arena for all weights would not make launches cheaper. On PoCL (2-core
// Zen 4 VM) the idle time is 3-9 us per
// one-group launch and 11-17 us per launch of many groups, whatever the
// kernel's length: the worker threads sleep and are woken between kernels;
// only fewer launches remove it.
//
// Then a run's input and output copies (BYTES, default a 224x224 RGB image
// in fp32; 4 KB and BYTES back), wall microseconds to clFinish: from pageable host
// memory as texplan's runs copy them, and through a pinned staging buffer
// (CL_MEM_ALLOC_HOST_PTR, mapped once: a memcpy into it, then a write from
// its mapped pointer or a copy from the buffer itself while mapped, which
// the spec leaves undefined; or mapped and unmapped around the memcpy each
// time, as runtime/session.cpp stages a GPU run's inputs and outputs);
// written straight from the pinned buffer (no memcpy: a caller that fills
// it), or copied into it in 4 parts each written as it lands; and the host
// time of a non-blocking write from pageable memory alone. H100, 602 KB,
// two calls (`--launches 50 --rounds 10`), us: pageable then clFinish 61,
// the call alone 5 (the driver copies behind it); memcpy to pinned then
// written from its pointer 53, in 4 parts 48, with no memcpy 20; copied
// from the mapped buffer 27 (undefined by the spec, so not used). Why the
// memcpy adds 33 us before a write from the pointer but at most 27 before
// the copy was not found; an API for callers to fill pinned input memory
// themselves would pay their fill in its place, and was not built. A run's
// input stays written from pageable memory (runtime/session.cpp).
#include <CL/cl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "device/device.h"

using namespace texplan;
using Clock = std::chrono::steady_clock;

namespace {

const char* kSource = R"CL(
__kernel void two(__global float* a, __global const float* b) {
  const int i = get_global_id(0);
  a[i] = b[i] + 1.0f;
}
__kernel void ints(__global float* a, __global const float* b, int i0, int i1, int i2, int i3, int i4, int i5,
                   int i6, int i7, int j0, int j1, int j2, int j3, int j4, int j5, int j6, int j7) {
  const int i = get_global_id(0);
  a[i] = b[i] + (float)(i0 + i1 + i2 + i3 + i4 + i5 + i6 + i7 + j0 + j1 + j2 + j3 + j4 + j5 + j6 + j7);
}
typedef struct { int v[16]; } Scalars;
// Work enough that the launches queue up ahead of the device.
__kernel void work(__global float* a, __global const float* b, int n) {
  const int i = get_global_id(0);
  float x = b[i];
  for (int k = 0; k < n; ++k) x = x * 0.999f + 1.0f;
  a[i] = x;
}
__kernel void packed(__global float* a, __global const float* b, Scalars s) {
  const int i = get_global_id(0);
  a[i] = b[i] + (float)(s.v[0] + s.v[15]);
}
__kernel void bufs(__global float* a, __global const float* b, __global const float* c, __global const float* d,
                   __global const float* e, __global const float* f, __global const float* g, __global const float* h) {
  const int i = get_global_id(0);
  a[i] = b[i] + c[i] + d[i] + e[i] + f[i] + g[i] + h[i];
}
__kernel void many(__global float* a, __global const float* b, __global const float* c, __global const float* d,
                   __global const float* e, __global const float* f, __global const float* g, __global const float* h,
                   int i0, int i1, int i2, int i3, int i4, int i5, int i6, int i7,
                   int j0, int j1, int j2, int j3, int j4, int j5, int j6, int j7) {
  const int i = get_global_id(0);
  a[i] = b[i] + (float)(i0 + i1 + i2 + i3 + i4 + i5 + i6 + i7 + j0 + j1 + j2 + j3 + j4 + j5 + j6 + j7);
}
)CL";

// A chain of dependent steps, each reading what another work-group wrote in
// the step before (element n-1-i), as a model's layers do: one launch per
// step, or all steps in one persistent launch with a grid barrier between
// them. The barrier needs every group resident at once (one group per compute
// unit), and it gives up after a bounded spin, flagging sync[2], rather than
// hang where the driver does not run them together.
const char* kPersistentSource = R"CL(
// The barrier's forms (BarrierForm below): OpenCL 1.2's mem_fence, which
// NVIDIA compiles to a fence of the group alone (membar.cta); PTX's
// device-wide membar.gl inline (NVIDIA only); OpenCL C 3.0's device-scope
// fence; each with the steps' reads volatile (past a non-coherent L1) or not.
#if defined(PTX_FENCE)
#define DEVICE_FENCE() asm volatile("membar.gl;" ::: "memory")
#elif defined(SCOPED_FENCE)
#define DEVICE_FENCE() atomic_work_item_fence(CLK_GLOBAL_MEM_FENCE, memory_order_seq_cst, memory_scope_device)
#else
#define DEVICE_FENCE() mem_fence(CLK_GLOBAL_MEM_FENCE)
#endif
#ifdef VOLATILE_READS
#define READS volatile __global const float*
#else
#define READS __global const float*
#endif
float step_value(float x, int work) {
  for (int k = 0; k < work; ++k) x = fma(x, 0.999f, 0.001f);
  return x + 1.0f;
}
__kernel void chain_step(__global float* y, __global const float* x, int n, int work) {
  const int i = get_global_id(0);
  if (i < n) y[i] = step_value(x[n - 1 - i], work);
}
// sync[0]: arrivals, sync[1]: barriers passed, sync[2]: a group gave up.
void grid_barrier(volatile __global int* sync, int groups) {
  barrier(CLK_GLOBAL_MEM_FENCE);
  if (get_local_id(0) == 0) {
    const int passed = atomic_add(&sync[1], 0);
    DEVICE_FENCE();
    if (atomic_inc(&sync[0]) == groups - 1) {
      atomic_xchg(&sync[0], 0);
      DEVICE_FENCE();
      atomic_inc(&sync[1]);
    } else {
      for (long spins = 0; atomic_add(&sync[1], 0) == passed; ++spins)
        if (spins == (1L << 26) || atomic_add(&sync[2], 0)) {
          atomic_xchg(&sync[2], 1);
          break;
        }
    }
    DEVICE_FENCE();
  }
  barrier(CLK_GLOBAL_MEM_FENCE);
}
__kernel void chain_persistent(__global float* a, __global float* b, int n, int work, int steps,
                               volatile __global int* sync) {
  const int groups = get_num_groups(0);
  for (int s = 0; s < steps; ++s) {
    __global float* y = s % 2 ? a : b;
    READS x = s % 2 ? b : a;
    for (int i = get_global_id(0); i < n; i += get_global_size(0)) y[i] = step_value(x[n - 1 - i], work);
    grid_barrier(sync, groups);
  }
}
)CL";

struct BarrierForm {
  const char* name;
  const char* options;
  bool nvidia_only;
};
const BarrierForm kBarrierForms[] = {
    {"OpenCL 1.2 mem_fence", "", false},
    {"OpenCL 1.2 mem_fence, volatile reads", "-DVOLATILE_READS", false},
    {"PTX membar.gl", "-DPTX_FENCE", true},
    {"PTX membar.gl, volatile reads", "-DPTX_FENCE -DVOLATILE_READS", true},
    {"OpenCL C 3.0 device-scope fence", "-cl-std=CL3.0 -DSCOPED_FENCE", false},
};

void check(cl_int s, const char* what) {
  if (s != CL_SUCCESS) {
    std::fprintf(stderr, "%s: error %d\n", what, s);
    std::exit(1);
  }
}

// The PTX lines of a program's binary that name a fence or a barrier (NVIDIA
// returns PTX text; other drivers' binaries print nothing): whether
// mem_fence(CLK_GLOBAL_MEM_FENCE) became a device-wide fence.
void print_fences(cl_program p) {
  size_t size = 0;
  if (clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr) != CL_SUCCESS || size == 0) return;
  std::string bin(size, '\0');
  char* ptr = bin.data();
  if (clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof ptr, &ptr, nullptr) != CL_SUCCESS) return;
  if (bin.find(".version") == std::string::npos) return;  // not PTX
  std::vector<std::string> seen;
  size_t at = 0;
  while (at < bin.size()) {
    size_t end = bin.find('\n', at);
    if (end == std::string::npos) end = bin.size();
    std::string line = bin.substr(at, end - at);
    at = end + 1;
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos) continue;
    line = line.substr(first);
    const bool fence = line.rfind("membar", 0) == 0 || line.rfind("fence", 0) == 0 || line.rfind("bar.", 0) == 0 ||
                       line.rfind("barrier", 0) == 0 || line.rfind("atom", 0) == 0;
    if (!fence) continue;
    line = line.substr(0, line.find_first_of(" \t"));
    if (std::find(seen.begin(), seen.end(), line) == seen.end()) seen.push_back(line);
  }
  std::printf("PTX fences, barriers and atomics of the persistent kernel:");
  for (const std::string& l : seen) std::printf(" %s", l.c_str());
  std::printf("\n");
}

// `steps` dependent steps over n floats, each launched (chain_step) or all
// in one launch of one group per compute unit (chain_persistent): wall and
// device microseconds per step, and whether the result is right (every
// element stepped `steps` times: a read of a stale value, or a barrier
// that let a group through early, leaves some short). What a persistent
// kernel over a run's launch-bound nodes would save per node, before one
// is built (docs/performance.md#a-persistent-kernel-measured-before-it-is-built).
void persistent_chains(runtime::Device& dev, int rounds, const BarrierForm& form) {
  cl_context ctx = dev.context();
  cl_command_queue q = dev.queue(), pq = dev.profiling_queue();
  cl_device_id id = dev.id();
  cl_int s = CL_SUCCESS;
  char vendor[256] = {};
  clGetDeviceInfo(id, CL_DEVICE_VENDOR, sizeof vendor - 1, vendor, nullptr);
  std::printf("\nbarrier: %s\n", form.name);
  if (form.nvidia_only && std::string(vendor).find("NVIDIA") == std::string::npos) {
    std::printf("  (NVIDIA only: skipped on %s)\n", vendor);
    return;
  }
  cl_program p = clCreateProgramWithSource(ctx, 1, &kPersistentSource, nullptr, &s);
  check(s, "clCreateProgramWithSource");
  if (clBuildProgram(p, 1, &id, form.options, nullptr, nullptr) != CL_SUCCESS) {
    size_t size = 0;
    clGetProgramBuildInfo(p, id, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size);
    std::string log(size, '\0');
    clGetProgramBuildInfo(p, id, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
    std::printf("  does not build: %s\n", log.substr(0, log.find('\n')).c_str());
    clReleaseProgram(p);
    return;
  }
  print_fences(p);
  cl_uint units = 0;
  check(clGetDeviceInfo(id, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, nullptr), "compute units");
  const int steps = 64;
  const size_t local = 256, groups = std::max<cl_uint>(1, units);
  std::printf("%d dependent steps over n floats (step k reads element n-1-i of step k-1), %zu groups of %zu "
              "in the persistent launch\n",
              steps, groups, local);
  std::printf("%-34s %12s %12s %12s %12s %8s %8s\n", "n, FMAs per element", "launch wall", "launch dev",
              "persist wall", "persist dev", "ratio", "right");
  struct Chain {
    cl_int n, work;
  };
  for (const Chain c : {Chain{4096, 0}, Chain{50176, 0}, Chain{50176, 256}, Chain{802816, 0}, Chain{802816, 64}}) {
    const size_t bytes = size_t(c.n) * sizeof(float);
    cl_mem a = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, nullptr, &s);
    check(s, "clCreateBuffer");
    cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, nullptr, &s);
    check(s, "clCreateBuffer");
    cl_mem sync = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 4 * sizeof(cl_int), nullptr, &s);
    check(s, "clCreateBuffer");
    cl_kernel ping = clCreateKernel(p, "chain_step", &s), pong = clCreateKernel(p, "chain_step", &s);
    check(s, "clCreateKernel");
    cl_kernel whole = clCreateKernel(p, "chain_persistent", &s);
    check(s, "clCreateKernel");
    for (cl_kernel k : {ping, pong}) {
      check(clSetKernelArg(k, 0, sizeof(cl_mem), k == ping ? &b : &a), "arg");
      check(clSetKernelArg(k, 1, sizeof(cl_mem), k == ping ? &a : &b), "arg");
      check(clSetKernelArg(k, 2, sizeof(cl_int), &c.n), "arg");
      check(clSetKernelArg(k, 3, sizeof(cl_int), &c.work), "arg");
    }
    check(clSetKernelArg(whole, 0, sizeof(cl_mem), &a), "arg");
    check(clSetKernelArg(whole, 1, sizeof(cl_mem), &b), "arg");
    check(clSetKernelArg(whole, 2, sizeof(cl_int), &c.n), "arg");
    check(clSetKernelArg(whole, 3, sizeof(cl_int), &c.work), "arg");
    check(clSetKernelArg(whole, 4, sizeof(cl_int), &steps), "arg");
    check(clSetKernelArg(whole, 5, sizeof(cl_mem), &sync), "arg");
    float expected = 0.0f;  // the device's fma is exact, as std::fma is
    for (int k = 0; k < steps; ++k) {
      for (int w = 0; w < c.work; ++w) expected = std::fma(expected, 0.999f, 0.001f);
      expected += 1.0f;
    }
    const size_t step_global = (size_t(c.n) + local - 1) / local * local, whole_global = groups * local;
    // One round: inputs zeroed, then the steps on `queue`; wall us per step,
    // device us per step (queue == pq), and whether the result is right.
    int gave_up = 0;  // persistent rounds whose barrier gave up waiting
    auto round = [&](bool persistent, cl_command_queue queue, double& wall, double& device, bool& right) {
      const float zero = 0.0f;
      const cl_int zeros = 0;
      check(clEnqueueFillBuffer(queue, a, &zero, sizeof zero, 0, bytes, 0, nullptr, nullptr), "fill");
      check(clEnqueueFillBuffer(queue, sync, &zeros, sizeof zeros, 0, 4 * sizeof(cl_int), 0, nullptr, nullptr),
            "fill");
      check(clFinish(queue), "clFinish");
      std::vector<cl_event> events;
      const bool timed = queue == pq;
      const auto t0 = Clock::now();
      if (persistent) {
        events.resize(timed ? 1 : 0);
        check(clEnqueueNDRangeKernel(queue, whole, 1, nullptr, &whole_global, &local, 0, nullptr,
                                     timed ? &events[0] : nullptr),
              "clEnqueueNDRangeKernel");
      } else {
        events.resize(timed ? size_t(steps) : 0);
        for (int k = 0; k < steps; ++k)
          check(clEnqueueNDRangeKernel(queue, k % 2 ? pong : ping, 1, nullptr, &step_global, &local, 0, nullptr,
                                       timed ? &events[size_t(k)] : nullptr),
                "clEnqueueNDRangeKernel");
      }
      check(clFinish(queue), "clFinish");
      wall = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / steps;
      cl_ulong first = ~cl_ulong(0), last = 0;
      for (cl_event e : events) {
        cl_ulong t_start = 0, t_end = 0;
        check(clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_START, sizeof t_start, &t_start, nullptr), "event");
        check(clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_END, sizeof t_end, &t_end, nullptr), "event");
        first = std::min(first, t_start), last = std::max(last, t_end);
        clReleaseEvent(e);
      }
      device = events.empty() ? 0.0 : double(last - first) * 1e-3 / steps;
      std::vector<float> out(size_t(c.n));
      cl_int flags[4] = {};
      check(clEnqueueReadBuffer(queue, steps % 2 ? b : a, CL_TRUE, 0, bytes, out.data(), 0, nullptr, nullptr),
            "read");
      check(clEnqueueReadBuffer(queue, sync, CL_TRUE, 0, sizeof flags, flags, 0, nullptr, nullptr), "read");
      right = flags[2] == 0;
      gave_up += flags[2] != 0;
      for (float v : out) right = right && v == expected;
    };
    double wall[2], dev_us[2];
    bool right[2] = {true, true};
    for (int mode = 0; mode < 2; ++mode) {
      std::vector<double> walls, devs;
      for (int r = 0; r <= rounds; ++r) {
        double w = 0, d = 0, w2 = 0;
        bool ok = true, ok2 = true;
        round(mode == 1, q, w, d, ok);
        round(mode == 1, pq, w2, d, ok2);
        right[mode] = right[mode] && ok && ok2;
        if (r == 0) continue;  // warm-up
        walls.push_back(w), devs.push_back(d);
      }
      std::sort(walls.begin(), walls.end());
      std::sort(devs.begin(), devs.end());
      wall[mode] = walls[walls.size() / 2], dev_us[mode] = devs[devs.size() / 2];
    }
    const std::string name = std::to_string(c.n) + ", " + std::to_string(c.work);
    std::printf("%-34s %12.2f %12.2f %12.2f %12.2f %8.2f %4s/%s\n", name.c_str(), wall[0], dev_us[0], wall[1],
                dev_us[1], wall[1] / wall[0], right[0] ? "yes" : "NO", right[1] ? "yes" : gave_up ? "gave up" : "NO");
    for (cl_kernel k : {ping, pong, whole}) clReleaseKernel(k);
    for (cl_mem m : {a, b, sync}) clReleaseMemObject(m);
  }
  clReleaseProgram(p);
}

struct Case {
  std::string name;
  std::vector<cl_kernel> kernels;  // launched in turn
  size_t groups;
  bool events;
};

}  // namespace

int main(int argc, char** argv) {
  std::string spec = "gpu";
  int launches = 200, rounds = 9;
  size_t transfer = 3 * 224 * 224 * 4;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--device") spec = argv[i + 1];
    else if (a == "--launches") launches = std::max(1, std::atoi(argv[i + 1]));
    else if (a == "--rounds") rounds = std::max(1, std::atoi(argv[i + 1]));
    else if (a == "--transfer") transfer = size_t(std::max(4L, std::atol(argv[i + 1])));
    else {
      std::fprintf(stderr, "usage: %s [--device SPEC] [--launches N] [--rounds R] [--transfer BYTES]\n", argv[0]);
      return 2;
    }
  }
  std::shared_ptr<runtime::Device> dev;
  try {
    dev = runtime::open_device(spec);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "texplan_enqueue_bench: error: %s\n", e.what());
    return 1;
  }
  cl_context ctx = dev->context();
  cl_command_queue q = dev->queue();
  cl_int s = CL_SUCCESS;
  cl_program p = clCreateProgramWithSource(ctx, 1, &kSource, nullptr, &s);
  check(s, "clCreateProgramWithSource");
  cl_device_id id = dev->id();
  check(clBuildProgram(p, 1, &id, "", nullptr, nullptr), "clBuildProgram");
  const size_t n = 1024 * 256;
  std::vector<cl_mem> bufs;
  for (int i = 0; i < 8; ++i) {
    bufs.push_back(clCreateBuffer(ctx, CL_MEM_READ_WRITE, n * sizeof(float), nullptr, &s));
    check(s, "clCreateBuffer");
  }
  auto make = [&](const char* name) {
    cl_kernel k = clCreateKernel(p, name, &s);
    check(s, "clCreateKernel");
    const std::string nm = name;
    const int buffers = nm == "many" || nm == "bufs" ? 8 : 2, ints = nm == "many" || nm == "ints" ? 16 : 0;
    for (int i = 0; i < buffers; ++i) check(clSetKernelArg(k, cl_uint(i), sizeof(cl_mem), &bufs[size_t(i)]), "arg");
    for (int i = buffers; i < buffers + ints; ++i) {
      cl_int v = i;
      check(clSetKernelArg(k, cl_uint(i), sizeof v, &v), "arg");
    }
    if (nm == "work") {
      cl_int v = 64;
      check(clSetKernelArg(k, 2, sizeof v, &v), "arg");
    }
    if (nm == "packed") {
      cl_int v[16] = {};
      check(clSetKernelArg(k, 2, sizeof v, v), "arg");
    }
    return k;
  };
  // The 8 buffer arguments naming `distinct` buffers in turn: does the driver
  // pay per argument or per distinct buffer? (A run's arguments are mostly
  // its one pool and a separate buffer per weight.)
  auto same = [&](int distinct) {
    cl_kernel k = make("bufs");
    for (int i = 0; i < 8; ++i) check(clSetKernelArg(k, cl_uint(i), sizeof(cl_mem), &bufs[size_t(i % distinct)]), "arg");
    return k;
  };
  std::vector<cl_kernel> eight;
  for (int i = 0; i < 8; ++i) eight.push_back(make("many"));
  // The same kernel from 8 programs (distinct build options), as a run's
  // nodes each launch their own program's kernel.
  std::vector<cl_kernel> programs;
  for (int i = 0; i < 8; ++i) {
    cl_program pi = clCreateProgramWithSource(ctx, 1, &kSource, nullptr, &s);
    check(s, "clCreateProgramWithSource");
    const std::string options = "-DPROGRAM=" + std::to_string(i);
    check(clBuildProgram(pi, 1, &id, options.c_str(), nullptr, nullptr), "clBuildProgram");
    std::swap(p, pi);
    programs.push_back(make("many"));
    std::swap(p, pi);
  }
  const std::vector<Case> cases = {{"2 buffers, 1 group", {make("two")}, 1, false},
                                   {"2 buffers + 16 ints, 1 group", {make("ints")}, 1, false},
                                   {"2 buffers + a 64-byte struct, 1 group", {make("packed")}, 1, false},
                                   {"8 buffers, 1 group", {make("bufs")}, 1, false},
                                   {"2 buffers, 1024 groups", {make("two")}, 1024, false},
                                   {"2 buffers + 16 ints, 1024 groups", {make("ints")}, 1024, false},
                                   {"2 buffers + a 64-byte struct, 1024 groups", {make("packed")}, 1024, false},
                                   {"8 buffers, 1024 groups", {make("bufs")}, 1024, false},
                                   {"8 buffer arguments, 1 buffer, 1 group", {same(1)}, 1, false},
                                   {"8 buffer arguments, 2 buffers, 1 group", {same(2)}, 1, false},
                                   {"8 buffer arguments, 1 buffer, 1024 groups", {same(1)}, 1024, false},
                                   {"8 buffer arguments, 2 buffers, 1024 groups", {same(2)}, 1024, false},
                                   {"8 buffers + 16 ints, 1 group", {make("many")}, 1, false},
                                   {"8 buffers + 16 ints, 1024 groups", {make("many")}, 1024, false},
                                   {"8 kernel objects in turn, 1024 groups", eight, 1024, false},
                                   {"8 programs in turn, 1 group", programs, 1, false},
                                   {"8 programs in turn, 2 groups", programs, 2, false},
                                   {"8 programs in turn, 16 groups", programs, 16, false},
                                   {"8 buffers + 16 ints, 16 groups", {make("many")}, 16, false},
                                   {"64 groups of a 64-step FMA loop each", {make("work")}, 64, false},
                                   {"8 buffers + 16 ints, 1024 groups, an event each", {make("many")}, 1024, true}};
  std::printf("device: %s, %d launches per round, median of %d rounds\n", dev->info().name.c_str(), launches,
              rounds);
  std::printf("%-48s %14s %14s %14s\n", "case", "enqueue us", "wall us", "idle us");
  cl_command_queue pq = dev->profiling_queue();
  for (const Case& c : cases) {
    std::vector<double> enq, wall, idle;
    const size_t local = 256, global = c.groups * local;
    for (int r = 0; r <= rounds; ++r) {
      std::vector<cl_event> events(c.events ? size_t(launches) : 0, nullptr);
      check(clFinish(q), "clFinish");
      const auto t0 = Clock::now();
      for (int i = 0; i < launches; ++i)
        check(clEnqueueNDRangeKernel(q, c.kernels[size_t(i) % c.kernels.size()], 1, nullptr, &global, &local, 0,
                                     nullptr, c.events ? &events[size_t(i)] : nullptr),
              "clEnqueueNDRangeKernel");
      const auto t1 = Clock::now();
      check(clFinish(q), "clFinish");
      const auto t2 = Clock::now();
      for (cl_event e : events) clReleaseEvent(e);
      if (r == 0) continue;  // warm-up
      enq.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / launches);
      wall.push_back(std::chrono::duration<double, std::micro>(t2 - t0).count() / launches);
    }
    // The device's wait between kernels, from events on the profiling queue:
    // the first start to the last end, less the kernels' own times, per
    // launch. The launches are all enqueued before the device drains them
    // only where the enqueue is faster than a kernel.
    for (int r = 0; r <= rounds; ++r) {
      std::vector<cl_event> events(size_t(launches), nullptr);
      check(clFinish(pq), "clFinish");
      for (int i = 0; i < launches; ++i)
        check(clEnqueueNDRangeKernel(pq, c.kernels[size_t(i) % c.kernels.size()], 1, nullptr, &global, &local, 0,
                                     nullptr, &events[size_t(i)]),
              "clEnqueueNDRangeKernel");
      check(clFinish(pq), "clFinish");
      cl_ulong first = ~cl_ulong(0), last = 0;
      double busy = 0;
      for (cl_event e : events) {
        cl_ulong a = 0, b = 0;
        check(clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_START, sizeof a, &a, nullptr), "event");
        check(clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_END, sizeof b, &b, nullptr), "event");
        first = std::min(first, a), last = std::max(last, b), busy += double(b - a);
        clReleaseEvent(e);
      }
      if (r > 0) idle.push_back((double(last - first) - busy) * 1e-3 / std::max(1, launches - 1));
    }
    std::sort(enq.begin(), enq.end());
    std::sort(wall.begin(), wall.end());
    std::sort(idle.begin(), idle.end());
    std::printf("%-48s %14.2f %14.2f %14.2f\n", c.name.c_str(), enq[enq.size() / 2], wall[wall.size() / 2],
                idle[idle.size() / 2]);
  }

  for (const BarrierForm& form : kBarrierForms) persistent_chains(*dev, rounds, form);

  // Transfers: `bytes` in (and 4 KB out) per round, wall time to clFinish.
  const size_t out_bytes = 4096;
  cl_mem dst = clCreateBuffer(ctx, CL_MEM_READ_WRITE, transfer, nullptr, &s);
  check(s, "clCreateBuffer");
  cl_mem pinned = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, transfer, nullptr, &s);
  check(s, "clCreateBuffer pinned");
  void* staged = clEnqueueMapBuffer(q, pinned, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, transfer, 0, nullptr, nullptr, &s);
  check(s, "clEnqueueMapBuffer");
  std::vector<char> host(transfer, 1), back(out_bytes);
  using Step = void (*)(cl_command_queue, cl_mem, cl_mem, void*, std::vector<char>&, std::vector<char>&);
  struct Transfer {
    const char* name;
    Step step;
  };
  // The map-per-run cases use their own pinned buffer, never left mapped
  // (the OpenCL spec leaves commands on a mapped buffer undefined).
  cl_mem unmapped = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, transfer, nullptr, &s);
  check(s, "clCreateBuffer pinned");
  const Transfer transfers[] = {
      {"in: write from pageable memory, blocking",
       [](cl_command_queue q, cl_mem d, cl_mem, void*, std::vector<char>& h, std::vector<char>&) {
         check(clEnqueueWriteBuffer(q, d, CL_TRUE, 0, h.size(), h.data(), 0, nullptr, nullptr), "write");
       }},
      {"in: write from pageable memory, then clFinish",
       [](cl_command_queue q, cl_mem d, cl_mem, void*, std::vector<char>& h, std::vector<char>&) {
         check(clEnqueueWriteBuffer(q, d, CL_FALSE, 0, h.size(), h.data(), 0, nullptr, nullptr), "write");
         check(clFinish(q), "clFinish");
       }},
      {"in: memcpy to pinned, write from its pointer",
       [](cl_command_queue q, cl_mem d, cl_mem, void* st, std::vector<char>& h, std::vector<char>&) {
         std::copy(h.begin(), h.end(), static_cast<char*>(st));
         check(clEnqueueWriteBuffer(q, d, CL_FALSE, 0, h.size(), st, 0, nullptr, nullptr), "write");
         check(clFinish(q), "clFinish");
       }},
      {"in: write from pinned memory (no memcpy)",  // what a caller filling the staging buffer itself would pay
       [](cl_command_queue q, cl_mem d, cl_mem, void* st, std::vector<char>& h, std::vector<char>&) {
         check(clEnqueueWriteBuffer(q, d, CL_FALSE, 0, h.size(), st, 0, nullptr, nullptr), "write");
         check(clFinish(q), "clFinish");
       }},
      {"in: memcpy to pinned in 4 parts, each written",  // the copy of part k+1 overlaps the DMA of part k
       [](cl_command_queue q, cl_mem d, cl_mem, void* st, std::vector<char>& h, std::vector<char>&) {
         const size_t part = (h.size() / 4 + 63) / 64 * 64;
         for (size_t o = 0; o < h.size(); o += part) {
           const size_t n = std::min(part, h.size() - o);
           std::copy(h.begin() + long(o), h.begin() + long(o + n), static_cast<char*>(st) + o);
           check(clEnqueueWriteBuffer(q, d, CL_FALSE, o, n, static_cast<char*>(st) + o, 0, nullptr, nullptr), "write");
           check(clFlush(q), "clFlush");
         }
         check(clFinish(q), "clFinish");
       }},
      {"in: write from pageable memory, the call alone",  // how long the host is held (runs go on enqueueing after)
       [](cl_command_queue q, cl_mem d, cl_mem, void*, std::vector<char>& h, std::vector<char>&) {
         check(clEnqueueWriteBuffer(q, d, CL_FALSE, 0, h.size(), h.data(), 0, nullptr, nullptr), "write");
       }},
      {"in: memcpy to pinned, copy from its buffer",
       [](cl_command_queue q, cl_mem d, cl_mem p, void* st, std::vector<char>& h, std::vector<char>&) {
         std::copy(h.begin(), h.end(), static_cast<char*>(st));
         check(clEnqueueCopyBuffer(q, p, d, 0, 0, h.size(), 0, nullptr, nullptr), "copy");
         check(clFinish(q), "clFinish");
       }},
      {"in: map pinned, memcpy, unmap, copy from it",
       [](cl_command_queue q, cl_mem d, cl_mem p, void*, std::vector<char>& h, std::vector<char>&) {
         cl_int s = CL_SUCCESS;
         void* m = clEnqueueMapBuffer(q, p, CL_TRUE, CL_MAP_WRITE_INVALIDATE_REGION, 0, h.size(), 0, nullptr, nullptr, &s);
         check(s, "map");
         std::copy(h.begin(), h.end(), static_cast<char*>(m));
         check(clEnqueueUnmapMemObject(q, p, m, 0, nullptr, nullptr), "unmap");
         check(clEnqueueCopyBuffer(q, p, d, 0, 0, h.size(), 0, nullptr, nullptr), "copy");
         check(clFinish(q), "clFinish");
       }},
      {"out 4 KB: read to pageable memory, then clFinish",
       [](cl_command_queue q, cl_mem d, cl_mem, void*, std::vector<char>&, std::vector<char>& b) {
         check(clEnqueueReadBuffer(q, d, CL_FALSE, 0, b.size(), b.data(), 0, nullptr, nullptr), "read");
         check(clFinish(q), "clFinish");
       }},
      {"out 4 KB: read to pinned, then memcpy",
       [](cl_command_queue q, cl_mem d, cl_mem, void* st, std::vector<char>&, std::vector<char>& b) {
         check(clEnqueueReadBuffer(q, d, CL_FALSE, 0, b.size(), st, 0, nullptr, nullptr), "read");
         check(clFinish(q), "clFinish");
         std::copy(static_cast<char*>(st), static_cast<char*>(st) + b.size(), b.begin());
       }},
      {"out BYTES: read to pageable memory, then clFinish",
       [](cl_command_queue q, cl_mem d, cl_mem, void*, std::vector<char>& h, std::vector<char>&) {
         check(clEnqueueReadBuffer(q, d, CL_FALSE, 0, h.size(), h.data(), 0, nullptr, nullptr), "read");
         check(clFinish(q), "clFinish");
       }},
      {"out BYTES: read to pinned, then memcpy",
       [](cl_command_queue q, cl_mem d, cl_mem, void* st, std::vector<char>& h, std::vector<char>&) {
         check(clEnqueueReadBuffer(q, d, CL_FALSE, 0, h.size(), st, 0, nullptr, nullptr), "read");
         check(clFinish(q), "clFinish");
         std::copy(static_cast<char*>(st), static_cast<char*>(st) + h.size(), h.begin());
       }},
      {"out BYTES: copy to pinned, map, memcpy, unmap",
       [](cl_command_queue q, cl_mem d, cl_mem p, void*, std::vector<char>& h, std::vector<char>&) {
         check(clEnqueueCopyBuffer(q, d, p, 0, 0, h.size(), 0, nullptr, nullptr), "copy");
         check(clFinish(q), "clFinish");
         cl_int s = CL_SUCCESS;
         void* m = clEnqueueMapBuffer(q, p, CL_TRUE, CL_MAP_READ, 0, h.size(), 0, nullptr, nullptr, &s);
         check(s, "map");
         std::copy(static_cast<char*>(m), static_cast<char*>(m) + h.size(), h.begin());
         check(clEnqueueUnmapMemObject(q, p, m, 0, nullptr, nullptr), "unmap");
       }},
  };
  std::printf("\n%-48s %14s   (BYTES: %zu)\n", "transfer", "wall us", transfer);
  for (const Transfer& t : transfers) {
    std::vector<double> wall;
    for (int r = 0; r <= 4 * rounds; ++r) {
      check(clFinish(q), "clFinish");
      const auto t0 = Clock::now();
      t.step(q, dst, std::string(t.name).find("map") != std::string::npos ? unmapped : pinned, staged, host, back);
      const auto t1 = Clock::now();
      if (r > 0) wall.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    std::sort(wall.begin(), wall.end());
    std::printf("%-48s %14.2f\n", t.name, wall[wall.size() / 2]);
  }
  check(clEnqueueUnmapMemObject(q, pinned, staged, 0, nullptr, nullptr), "unmap");
  check(clFinish(q), "clFinish");
  clReleaseMemObject(pinned);
  clReleaseMemObject(unmapped);
  clReleaseMemObject(dst);
  return 0;
}
