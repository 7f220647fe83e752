// Session::Impl, private to src/runtime/session*.cpp: a session's device memory, prepared steps and run state.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/offload_hook.h"
#include "lower/lower.h"
#include "runtime/profile.h"
#include "runtime/session.h"

namespace texplan::runtime {

// A Float32 value's bytes as IEEE half (round to nearest even), and back.
std::vector<uint8_t> to_half(const HostTensor& v);
// `exponent`: h holds values times 2^exponent (Tensor::storage_exponent).
void from_half(const std::vector<uint8_t>& h, HostTensor& into, int exponent = 0);

struct Session::Impl {
  struct Step {
    int node = 0;
    std::vector<lower::Launch> launches;
    bool cpu = false;          // runs through reference::evaluate
    // Run by the offloader; `launches` (or the CPU) stay ready for when the
    // library rejects a call, after which they run this node for good.
    std::unique_ptr<OffloadedNode> offload;
    mutable bool offload_rejected = false;
    std::vector<int> writes;   // usage records this step writes (guard mode)
  };

  std::shared_ptr<Device> dev;
  bool ran = false;  // a run has finished (and the device's new programs were stored)
  cl_command_queue q = nullptr;  // the device's queue, or its profiling queue
  SessionOptions opt;
  Precision precision = Precision::Fp32;  // what the matrix products use
  bool half = false;  // Precision::Fp16: Float32 tensors stored as IEEE half on the device
  // Nodes run on the CPU because a kernel file they need has no half form.
  std::vector<std::string> half_fallback;
  Graph graph;  // metadata, plus the values of constants the CPU steps and outputs read
  PlanInput pin;
  plan::MemoryPlan plan;
  std::vector<cl_mem> pools;
  // Textures: one image per texture pool, or per buffer pool with 1D views
  // (else null); one image2d per record placed as a 2D view (over
  // `view_buffers`, its region of the arena); the packed weights lowerings
  // uploaded (textures, Winograd).
  // With 1D views a kernel may read and write the same pool: it gets two
  // image objects over it (`pool_write_images`), never one object as both.
  std::vector<cl_mem> pool_images, pool_write_images, view_images, view_buffers, packed;
  bool images_1d = false;  // views are image1d_buffer (no image2d_from_buffer)
  std::map<int, cl_mem> weights;  // constant tensor id -> its buffer
  // GPUs: graph output tensor id -> a pinned host buffer
  // (CL_MEM_ALLOC_HOST_PTR, mapped once, at the first run) the output is
  // read into, then copied out of: faster than reading into pageable memory.
  // Inputs stay written from the caller's memory: staging them put a memcpy
  // in the host's path of runs that wait on the host
  // (docs/kernel-choices.md#pinned-staging-of-outputs-on-gpus). The buffer
  // itself is never a command's argument: commands on a mapped buffer are
  // undefined, and mapping it around every copy costs more. CPU devices
  // read directly: there staging is one memcpy more.
  struct Staging {
    cl_mem buffer = nullptr;
    void* host = nullptr;
  };
  std::map<int, Staging> staging;
  // Index fault flags (src/kernels/shape.cl index_fault), made for the first
  // node whose indices are data: read back with every run's outputs (into
  // pinned memory where outputs are staged) and raised as that node's error.
  static constexpr int kFaultFlagsKey = -1;  // their key in `staging`
  cl_mem index_faults = nullptr;
  // Words 0-3: the first fault (node + 1, an index's low and high words,
  // the kind: 0 an index out of range, 1 a grid barrier that gave up);
  // 4-5: the persistent kernels' grid barrier (src/kernels/recurrent.cl).
  cl_int fault_words[8] = {};
  cl_int* fault_read = nullptr;  // where a run's read of the flags lands
  int64_t weight_bytes = 0, pool_bytes = 0;
  std::vector<Step> steps;
  std::vector<std::string> fallback;
  std::vector<std::string> offloaded;
  std::vector<std::string> tf32_nodes;
  std::vector<std::string> split_k_nodes;
  int launches = 0;
  double last_ms = 0, last_enqueue_ms = 0, last_span_ms = 0;
  std::vector<GuardViolation> violations;
  std::vector<NodeTime> times;
  std::vector<std::vector<uint8_t>> shadows;  // per record, guard mode
  ProfileEvents profiled;  // profile mode: the running run's events per step

  // Records no tensor owns are scratch space an offloaded node asked for
  // (src/offload): the node at their first step writes them.
  std::vector<std::vector<int>> scratch_records;

  // The parts of a run, in order (the two Session::run differ in their copies).
  void check_input(size_t i, DataType dtype, const Shape& shape, int64_t bytes) const;
  void begin_run();
  void inputs_written();  // guard mode: the inputs' bytes are the baseline
  void run_steps();       // every node's kernels, enqueued back to back
  void end_run(std::chrono::steady_clock::time_point start);  // waits for the queue

  ~Impl();


  std::string model() const { return "model " + graph.model_name; }
  std::string at_node(int n) const {
    return model() + ": node '" + graph.nodes[n].name + "' (" + graph.nodes[n].op_type + ")";
  }
  void check(cl_int s, const std::string& what) const {
    if (s != CL_SUCCESS) throw Error(what + ": " + cl_error_name(s));
  }

  int root(int t) const { return pin.alias_root.empty() ? t : pin.alias_root.at(t); }
  int record(int t) const {
    int r = pin.record_of_tensor.at(root(t));
    if (r < 0) throw Error(model() + ": tensor " + graph.tensors[t].name + " has no usage record in the plan");
    return r;
  }

  // Bytes of `t` on the device (Float32 as half where `half`).
  int64_t stored(const Tensor& t) const { return stored_bytes(t, half ? DataType::Float16 : DataType::Float32); }
  bool stored_as_half(const Tensor& t) const { return half && t.dtype == DataType::Float32; }

  // ---- device memory (session_pools.cpp) ----
  void* stage(int t, size_t bytes);
  lower::Location locate(const Graph& g, int t);
  cl_mem weight(const Graph& g, int t);
  void allocate_pools();
  cl_image_format rgba_float() const { return {CL_RGBA, cl_channel_type(half ? CL_HALF_FLOAT : CL_FLOAT)}; }
  int64_t pixel_bytes() const { return half ? 8 : 16; }
  void allocate_image_pool(const plan::Pool& pool, const std::string& what);
  void allocate_views();
  lower::TextureArg image(int t, bool write = false) const;

  // ---- guard mode (session_pools.cpp) ----
  std::vector<uint8_t> record_bytes(int r);
  void poison();
  void guard_after(int step);

  // ---- lowering the graph into steps (session_lowering.cpp) ----
  void keep_metadata(const Graph& g);
  void find_scratch_records(const Graph& g);
  bool texture_step(const Node& node) const;
  void prepare(const Graph& g);
  static std::vector<int> windows_of(const Graph& g, const Node& node);
  static bool reads(const std::vector<lower::Launch>& launches, cl_mem m);
  void merge_split_passes(const Graph& g);
  void release_unread_weights(const Graph& g);
  void offload(const Graph& g, Step& step);
  void keep_host_constants(const Graph& g);

  // ---- host <-> device transfers (session_io.cpp) ----
  void read(int t, HostTensor& into);
  void run_on_cpu(const Step& s);
  void convert_on_device(cl_mem src, int64_t src_at, cl_mem dst, int64_t dst_at, const Shape& shape, bool to_half,
                         int exponent, const std::string& what);

  // ---- running the steps (session_run.cpp) ----
  bool enqueue_offloaded(const Step& s, std::vector<cl_event>* events);
  void enqueue(const Step& s, std::vector<cl_event>* events = nullptr);
  cl_mem fault_flags();
  void raise_index_fault(const cl_int* words);
};

}  // namespace texplan::runtime
