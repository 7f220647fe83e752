// texplan_enqueue_bench: what one kernel launch costs the host, by the
// kernel's argument list and the alternation of kernels, on one in-order
// queue as a texplan run enqueues them (no events, one clFinish at the end).
// On NVIDIA's OpenCL the zoo's runs spend most of their time in that loop
// (`texplan run --bench` reports it as enqueue_ms), so this tells what a
// leaner launch would gain before anyone builds one.
//
//   texplan_enqueue_bench [--device SPEC] [--launches N] [--rounds R]
//
// Cases: kernels of 2 buffer arguments, of 2 buffers and 16 ints, of 2
// buffers and the 16 ints as one struct, of 8 buffers, and of 8 buffers and
// 16 ints (a fused conv's list), as 1 work-group and as 1024; the same N
// launches alternating over 8 distinct kernel objects; and with an event
// per launch (what --profile adds). Per case: host microseconds per
// clEnqueueNDRangeKernel (median of R rounds) and the wall time per launch
// to clFinish.
#include <CL/cl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "runtime/device.h"

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

void check(cl_int s, const char* what) {
  if (s != CL_SUCCESS) {
    std::fprintf(stderr, "%s: error %d\n", what, s);
    std::exit(1);
  }
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
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--device") spec = argv[i + 1];
    else if (a == "--launches") launches = std::max(1, std::atoi(argv[i + 1]));
    else if (a == "--rounds") rounds = std::max(1, std::atoi(argv[i + 1]));
    else {
      std::fprintf(stderr, "usage: %s [--device SPEC] [--launches N] [--rounds R]\n", argv[0]);
      return 2;
    }
  }
  auto dev = runtime::open_device(spec);
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
    if (nm == "packed") {
      cl_int v[16] = {};
      check(clSetKernelArg(k, 2, sizeof v, v), "arg");
    }
    return k;
  };
  std::vector<cl_kernel> eight;
  for (int i = 0; i < 8; ++i) eight.push_back(make("many"));
  const std::vector<Case> cases = {{"2 buffers, 1 group", {make("two")}, 1, false},
                                   {"2 buffers, 1024 groups", {make("two")}, 1024, false},
                                   {"2 buffers + 16 ints, 1024 groups", {make("ints")}, 1024, false},
                                   {"2 buffers + a 64-byte struct, 1024 groups", {make("packed")}, 1024, false},
                                   {"8 buffers, 1024 groups", {make("bufs")}, 1024, false},
                                   {"8 buffers + 16 ints, 1 group", {make("many")}, 1, false},
                                   {"8 buffers + 16 ints, 1024 groups", {make("many")}, 1024, false},
                                   {"8 kernel objects in turn, 1024 groups", eight, 1024, false},
                                   {"8 buffers + 16 ints, 1024 groups, an event each", {make("many")}, 1024, true}};
  std::printf("device: %s, %d launches per round, median of %d rounds\n", dev->info().name.c_str(), launches,
              rounds);
  std::printf("%-48s %14s %14s\n", "case", "enqueue us", "wall us");
  for (const Case& c : cases) {
    std::vector<double> enq, wall;
    for (int r = 0; r <= rounds; ++r) {
      std::vector<cl_event> events(c.events ? size_t(launches) : 0, nullptr);
      const size_t local = 256, global = c.groups * local;
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
    std::sort(enq.begin(), enq.end());
    std::sort(wall.begin(), wall.end());
    std::printf("%-48s %14.2f %14.2f\n", c.name.c_str(), enq[enq.size() / 2], wall[wall.size() / 2]);
  }
  return 0;
}
