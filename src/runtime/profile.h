// Profiling support for the runtime: the work a node does (FLOPs and bytes,
// counted from its shapes), OpenCL profiling events per step, and the
// device's ceilings (streaming bandwidth, FMA throughput, timed once) that
// achieved rates are compared against.
//
//   SessionOptions o; o.profile = true;          // events on the profiling queue
//   Session s(g, pin, plan, dev, o); s.run(in);
//   for (const NodeTime& t : s.node_times()) t.flops / (t.ms * 1e6);   // GFLOP/s
//   Ceilings c = measure_ceilings(*dev);          // c.gbps, c.gflops
#pragma once
#include <CL/cl.h>

#include <vector>

#include "device/device.h"
#include "graph/graph.h"

namespace texplan::runtime {

struct NodeTime;

// Work of one node, from the shapes alone. FLOPs are counted for Conv,
// ConvTranspose, Gemm, MatMul and the fused forms (a multiply-add is 2);
// bytes are every input and output tensor once (weights included), the
// least any kernel must move.
struct NodeCost {
  double flops = 0, bytes = 0;
};
NodeCost node_cost(const Graph& g, const Node& n);

// Events of one run, one list per step; released when it goes.
class ProfileEvents {
 public:
  ProfileEvents() = default;
  ~ProfileEvents();
  ProfileEvents(const ProfileEvents&) = delete;
  ProfileEvents& operator=(const ProfileEvents&) = delete;
  std::vector<cl_event>& step() { return steps_.emplace_back(); }
  void clear();  // releases the events
  // After the queue finished: NodeTime::ms of each step that enqueued
  // kernels = from its first kernel's start to its last one's end.
  void device_times(std::vector<NodeTime>& times) const;
  // From the run's first kernel start to its last kernel end: the part of it
  // not inside some kernel is the device waiting between launches.
  double span_ms() const;

 private:
  std::vector<std::vector<cl_event>> steps_;
};

// Timed once per device and process: a streaming copy of 64 MiB (bytes
// read + written per second) and a register-resident FMA loop over enough
// work-items to fill the device (docs/kernel-choices.md#ceilings-for-profiles).
struct Ceilings {
  double gbps = 0, gflops = 0;
};
Ceilings measure_ceilings(Device& dev);

}  // namespace texplan::runtime
