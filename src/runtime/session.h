// Executes a Graph on an OpenCL device, in the memory a MemoryPlan decided.
//
//   Graph g = import_onnx("squeezenet1_1", {.load_weights = true});
//   PlanInput pin = make_usage_records(g);
//   plan::MemoryPlan plan = plan::plan_memory(pin.records, dev_profile, "best");
//   runtime::Session s(g, pin, plan, "pocl");
//   std::vector<HostTensor> out = s.run({input});   // g.inputs order in, g.outputs order out
//   s.run({&x}, {&y});   // or DeviceTensors: inputs and outputs stay on the device
//   s.last_run_ms(); s.activation_bytes(); s.fallback_nodes();
//
// Promises: one device allocation per plan pool, made in the constructor;
// weights uploaded once; every kernel and its arguments prepared once. A
// run writes the inputs, enqueues the prepared kernels back to back (no host
// sync, no allocation), and reads the outputs (copies on the device alone
// with DeviceTensors). Nodes without an OpenCL
// kernel run on the CPU reference (listed by fallback_nodes(), never
// silent). Buffer pools become buffers and texture pools 2D images; textures
// placed as views of a buffer pool become images over it (image2d from the
// buffer, or image1d_buffer on devices without it); a device without images,
// or an image past its limits, is refused with the pool named.
// Failures throw texplan::Error naming the model, the node or pool, and the
// OpenCL error. Sessions on one device share its queue: run them from one
// thread at a time.
#pragma once
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "device/device.h"
#include "graph/graph.h"
#include "lower/kernel_choice.h"
#include "optimize/usage.h"
#include "plan/memory_plan.h"
#include "runtime/device_tensor.h"

namespace texplan::runtime {

class Offloader;  // runtime/offload_hook.h

// Arithmetic of the matrix products (Conv, Gemm, MatMul and their fusions),
// and how float tensors are stored (docs/precision.md).
enum class Precision {
  Fp32,  // exact fp32 (the default)
  Tf32,  // inputs rounded to tf32 (10-bit mantissa) on tensor cores, fp32 sums: NVIDIA GPUs
         // of compute capability 8.0+ only (lower/mma.h), exact fp32 elsewhere
  Fp16,  // float activations and weights stored as IEEE half (every device: vload_half /
         // vstore_half and CL_HALF_FLOAT images are core OpenCL), arithmetic in fp32; graph
         // inputs and outputs stay fp32, converted inside the run. Plan with
         // UsageOptions::float_storage = float_storage(Precision::Fp16).
};
Precision parse_precision(const std::string& s);  // "fp32" | "tf32" | "fp16"; throws Error
const char* precision_name(Precision p);
// How `p` stores Float32 tensors: Float16 for Fp16, else Float32.
DataType float_storage(Precision p);
// Whether a device runs Precision::Tf32: tf32_supported (device/device.h).

struct SessionOptions {
  // Proves the plan while running: pools start poisoned (NaN bytes), and
  // after every node the bytes of every live tensor that node did not write
  // are compared with what its producer left. Slow (a sync and readback per
  // node); violations are reported by guard_violations(), not thrown.
  bool guard = false;
  // Times every node from OpenCL profiling events (node_times()) on the
  // device's profiling queue: no host sync between nodes; CPU fallback nodes
  // are timed on the host.
  bool profile = false;
  // Runs the nodes it takes in a library (src/offload), in this session's
  // pools and queue; null: texplan's kernels run every node.
  std::shared_ptr<Offloader> offload{};
  // Tf32, Fp16: opt-in, lower precision (docs/precision.md); precision()
  // says what the session uses. Fp16 needs usage records made with
  // float_storage(Precision::Fp16) (their bytes are checked).
  Precision precision = Precision::Fp32;
  // Outputs read through pinned host buffers: on GPUs (unset: by the
  // device's type), where that is faster than into pageable memory.
  std::optional<bool> staged_io{};
  // Kernel variants named instead of chosen (measurements and tests,
  // lower/kernel_choice.h); the constructor throws Error on an unknown one.
  lower::KernelChoice kernel_choice;
};

struct NodeTime {
  std::string node, op;
  double ms = 0;            // device time: first kernel start to last kernel end (host time on the CPU)
  bool cpu = false;         // ran on the CPU fallback
  int launches = 0;         // kernels enqueued
  double enqueue_us = 0;    // host time inside clEnqueueNDRangeKernel for them
  double flops = 0, bytes = 0;  // work of the node (runtime/profile.h: node_cost)
  // Where the run's time went, for a trace (cli/trace.h). Times are
  // microseconds of the host's steady clock; a kernel's device start and
  // end are moved onto it by the offset between the run's first kernel's
  // CL_PROFILING_COMMAND_QUEUED and the host time its step began enqueueing.
  double host_begin_us = 0, host_end_us = 0;  // the node's enqueue (its whole run on the CPU)
  struct Kernel {
    std::string name;                          // the OpenCL kernel ("offload" for an offloader's)
    double begin_us = 0, end_us = 0;           // 0, 0: the device gave no times
  };
  std::vector<Kernel> kernels;                 // one per launch, in enqueue order
  std::vector<Shape> input_shapes, output_shapes;
};

// Bytes [begin, end) of `pool` (the span of the changed bytes) that belong
// to live tensor `tensor` were changed by `node`, which does not write it.
struct GuardViolation {
  std::string node, tensor;
  int pool = 0;
  int64_t begin = 0, end = 0;
  std::string to_string() const;
};
std::ostream& operator<<(std::ostream& o, const GuardViolation& v);

class Session {
 public:
  // `g` must have its weights loaded; `pin` and `plan` must describe `g`.
  // Nothing of `g` is referenced after construction.
  Session(const Graph& g, const PlanInput& pin, const plan::MemoryPlan& plan, std::shared_ptr<Device> device,
          SessionOptions options = {});
  Session(const Graph& g, const PlanInput& pin, const plan::MemoryPlan& plan, const std::string& device_spec = "pocl",
          SessionOptions options = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Inputs in g.inputs order; throws Error naming the input on a shape or
  // dtype mismatch. Outputs in g.outputs order.
  std::vector<HostTensor> run(const std::vector<HostTensor>& inputs);
  // The same with inputs and outputs in device memory of this session's
  // device (runtime/device_tensor.h), in g.inputs / g.outputs order: the
  // inputs are copied into the plan's pools and the outputs out of them on
  // the device, and the call returns once the outputs are written. The
  // inputs are never written. Throws Error naming the tensor on a dtype,
  // shape or device mismatch.
  void run(const std::vector<const DeviceTensor*>& inputs, const std::vector<DeviceTensor*>& outputs);

  double last_run_ms() const;         // wall time of the last run(), transfers included
  // Host time of the last run()'s loop over the nodes (enqueues, CPU
  // fallback nodes): near last_run_ms() the run is bound by the host.
  double last_enqueue_ms() const;
  // Profile mode: from the last run()'s first kernel start to its last
  // kernel end; less the node times, what the device idled between kernels.
  double last_device_span_ms() const;
  int64_t activation_bytes() const;   // device bytes of the pools (= plan.total_bytes())
  int64_t weight_bytes() const;       // device bytes of the uploaded constants
  int kernel_launches() const;        // per run
  const std::vector<std::string>& fallback_nodes() const;  // nodes run on the CPU, "name (op)"
  const std::vector<std::string>& offloaded_nodes() const; // nodes the offloader runs, "name (op)"
  const std::vector<std::string>& tf32_nodes() const;      // nodes whose products run in tf32, "name (op)"
  // Nodes whose product is split over K (small grids: slices added into Y), "name (op)".
  const std::vector<std::string>& split_k_nodes() const;
  // Precision::Fp16: nodes among fallback_nodes() only because a kernel they
  // need has no half-storage form (they run on the CPU, converting), "name (op)".
  const std::vector<std::string>& half_fallback_nodes() const;
  const std::vector<GuardViolation>& guard_violations() const;  // of the last run, guard mode only
  const std::vector<NodeTime>& node_times() const;              // of the last run, profile mode only
  const Device& device() const;
  Precision precision() const;  // options.precision where the device supports it, else Fp32

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace texplan::runtime
