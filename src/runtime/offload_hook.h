// The session's hook for running nodes in a library instead of texplan's own
// kernels (implemented by src/offload; the runtime knows no library). The
// session still prepares its own launches for every offloaded node: they run
// when the library rejects a call, so a rejection never leaves a wrong result.
#pragma once
#include <CL/cl.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "device/device.h"
#include "graph/graph.h"
#include "lower/lower.h"

namespace texplan::runtime {

// One node prepared for the library: every argument fixed, a run only calls it.
class OffloadedNode {
 public:
  virtual ~OffloadedNode() = default;
  // Enqueues the node on `q` (the session's queue). Returns false when the
  // library rejected a call; the caller then enqueues the built-in launches,
  // which write every output in full. `events` (profile mode) receives one
  // event per enqueued kernel the library reports.
  virtual bool enqueue(cl_command_queue q, std::vector<cl_event>* events) = 0;
};

// What the session hands the offloader for one node, once, while preparing.
struct OffloadRequest {
  Device& device;
  cl_command_queue queue;
  const Graph& graph;  // with weights: the lowering may read constants
  int node = 0;
  std::function<lower::Location(int tensor)> locate;  // pool or weight buffer of a tensor
  std::function<lower::Location(int record)> scratch;  // pool bytes of a usage record the offloader added
  const std::vector<lower::Launch>& builtin;            // texplan's own launches (empty: CPU fallback node)
  // The session's products run in tf32: an output marked Tensor::stored_tf32
  // is stored rounded to tf32, as texplan's own kernels would store it
  // (optimize/tf32_storage.h), since its readers skip their rounding.
  bool tf32 = false;
};

class Offloader {
 public:
  virtual ~Offloader() = default;
  // Null: texplan's kernels run the node.
  virtual std::unique_ptr<OffloadedNode> prepare(const OffloadRequest& r) = 0;
};

}  // namespace texplan::runtime
