#include "runtime/session.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <map>
#include <set>

#include "optimize/sharing.h"
#include "reference/common.h"
#include "reference/reference_ops.h"
#include "runtime/offload_hook.h"
#include "runtime/ops.h"
#include "runtime/memory_check.h"
#include "runtime/profile.h"

namespace texplan::runtime {

std::string GuardViolation::to_string() const {
  return "node " + node + " changed bytes [" + std::to_string(begin) + ", " + std::to_string(end) + ") of pool " +
         std::to_string(pool) + " holding live tensor " + tensor;
}

std::ostream& operator<<(std::ostream& o, const GuardViolation& v) { return o << v.to_string(); }

namespace {
bool out_of_memory(cl_int s) {
  return s == CL_MEM_OBJECT_ALLOCATION_FAILURE || s == CL_OUT_OF_RESOURCES || s == CL_OUT_OF_HOST_MEMORY;
}

std::string mib(int64_t bytes) { return std::to_string(bytes) + " bytes (" + std::to_string(bytes >> 20) + " MiB)"; }

// A Float32 value's bytes as IEEE half (round to nearest even), and back.
std::vector<uint8_t> to_half(const HostTensor& v) {
  std::vector<uint8_t> h(size_t(v.count()) * 2);
  reference::floats_to_halves(v.data<float>(), reinterpret_cast<uint16_t*>(h.data()), size_t(v.count()));
  return h;
}
void from_half(const std::vector<uint8_t>& h, HostTensor& into) {
  reference::halves_to_floats(reinterpret_cast<const uint16_t*>(h.data()), into.data<float>(), size_t(into.count()));
}

// Tensor without its value: what a run needs to know about it.
Tensor metadata(const Tensor& t) {
  Tensor m;
  m.name = t.name;
  m.dtype = t.dtype;
  m.shape = t.shape;
  m.is_input = t.is_input;
  m.is_output = t.is_output;
  m.is_constant = t.is_constant;
  m.producer = t.producer;
  return m;
}
}  // namespace

struct Session::Impl {
  struct Step {
    int node = 0;
    std::vector<Launch> launches;
    bool cpu = false;          // runs through reference::evaluate
    // Run by the offloader; `launches` (or the CPU) stay ready for when the
    // library rejects a call, after which they run this node for good.
    std::unique_ptr<OffloadedNode> offload;
    mutable bool offload_rejected = false;
    std::vector<int> writes;   // usage records this step writes (guard mode)
  };

  std::shared_ptr<Device> dev;
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
  cl_int fault_words[4] = {};
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

  // The parts of a run, in order (the two Session::run differ in their copies).
  void check_input(size_t i, DataType dtype, const Shape& shape, int64_t bytes) const;
  void begin_run();
  void inputs_written();  // guard mode: the inputs' bytes are the baseline
  void run_steps();       // every node's kernels, enqueued back to back
  void end_run(std::chrono::steady_clock::time_point start);  // waits for the queue

  ~Impl() {
    for (Step& s : steps) s.offload.reset();  // may hold sub-buffers of the pools
    for (Step& s : steps)
      for (Launch& l : s.launches) clReleaseKernel(l.kernel);
    for (auto* list : {&view_images, &view_buffers, &pool_images, &pool_write_images, &packed})
      for (cl_mem m : *list)
        if (m) clReleaseMemObject(m);
    for (cl_mem m : pools)
      if (m) clReleaseMemObject(m);
    for (auto& [t, m] : weights) clReleaseMemObject(m);
    if (index_faults) clReleaseMemObject(index_faults);
    for (auto& [t, st] : staging) {
      clEnqueueUnmapMemObject(q, st.buffer, st.host, 0, nullptr, nullptr);
      clFinish(q);
      clReleaseMemObject(st.buffer);
    }
  }

  // The pinned host memory output t is read into, or null (CPU devices).
  void* stage(int t, size_t bytes) {
    if (!opt.staged_io.value_or(dev->info().type == "gpu")) return nullptr;
    auto it = staging.find(t);
    if (it != staging.end()) return it->second.host;
    const std::string what = model() + ": a pinned host buffer of " + std::to_string(bytes) + " bytes for " +
                             (t == kFaultFlagsKey ? std::string("the index fault flags") : graph.tensors[t].name);
    cl_int s = CL_SUCCESS;
    Staging st;
    st.buffer = clCreateBuffer(dev->context(), CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes, nullptr, &s);
    check(s, what);
    st.host = clEnqueueMapBuffer(q, st.buffer, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0, nullptr, nullptr, &s);
    if (s != CL_SUCCESS) clReleaseMemObject(st.buffer);
    check(s, what + ", mapped");
    return (staging[t] = st).host;
  }

  std::string model() const { return "model " + graph.model_name; }
  std::string at_node(int n) const {
    return model() + ": node " + graph.nodes[n].name + " (" + graph.nodes[n].op_type + ")";
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

  Location locate(const Graph& g, int t) {
    int r = root(t);
    if (g.tensors[r].is_constant) return {weight(g, r), 0};
    const plan::Placement& p = plan.placements.at(record(t));
    const int64_t offset = p.offset + (pin.alias_offset.empty() ? 0 : pin.alias_offset.at(t));  // zero-copy concat slice
    if (offset + stored(g.tensors[t]) > plan.pools.at(p.pool).bytes)
      throw Error(model() + ": tensor " + g.tensors[t].name + " does not fit pool " + std::to_string(p.pool));
    return {pools.at(p.pool), offset};
  }

  // Bytes of `t` on the device (Float32 as half where `half`).
  int64_t stored(const Tensor& t) const { return stored_bytes(t, half ? DataType::Float16 : DataType::Float32); }
  bool stored_as_half(const Tensor& t) const { return half && t.dtype == DataType::Float32; }

  cl_mem weight(const Graph& g, int t) {
    auto it = weights.find(t);
    if (it != weights.end()) return it->second;
    const Tensor& w = g.tensors[t];
    if (!w.has_data)
      throw Error(model() + ": weights of " + w.name + " are not loaded (import with load_weights, next to the .onnx.data file)");
    std::vector<uint8_t> halves;  // the value as stored, where stored as half
    if (stored_as_half(w)) halves = to_half(w.value);
    const std::vector<uint8_t>& value = stored_as_half(w) ? halves : w.value.bytes;
    size_t bytes = std::max<size_t>(1, value.size());
    cl_int s = CL_SUCCESS;
    cl_mem m = clCreateBuffer(dev->context(), CL_MEM_READ_ONLY, bytes, nullptr, &s);
    if (s == CL_SUCCESS && !value.empty())
      s = clEnqueueWriteBuffer(q, m, CL_TRUE, 0, value.size(), value.data(), 0, nullptr, nullptr);
    if (s != CL_SUCCESS) {
      if (m) clReleaseMemObject(m);
      throw Error(model() + ": uploading weight " + w.name + " of " + mib(int64_t(bytes)) + ": " + cl_error_name(s) +
                  (out_of_memory(s) ? " (out of device memory)" : ""));
    }
    weights[t] = m;
    weight_bytes += int64_t(value.size());
    return m;
  }

  void allocate_pools() {
    for (const plan::Pool& pool : plan.pools) {
      std::string what = model() + ": pool " + std::to_string(pool.id) + " of " + mib(pool.bytes);
      pool_images.push_back(nullptr);
      if (pool.kind == plan::Storage::Texture) {
        pools.push_back(nullptr);
        allocate_image_pool(pool, what);
        continue;
      }
      if (pool.bytes == 0) {
        pools.push_back(nullptr);
        continue;
      }
      check_pool_fits(model(), pool.id, "buffer", pool.bytes, pool_bytes, dev->info());
      cl_int s = CL_SUCCESS;
      cl_mem m = clCreateBuffer(dev->context(), CL_MEM_READ_WRITE, size_t(pool.bytes), nullptr, &s);
      // Drivers may allocate lazily: touch the pool now so a shortage shows
      // here, attributed to this pool, rather than in some kernel later.
      if (s == CL_SUCCESS) {
        pools.push_back(m);
        pool_bytes += pool.bytes;
        const cl_uchar zero = 0;
        s = clEnqueueFillBuffer(q, m, &zero, 1, 0, size_t(pool.bytes), 0, nullptr, nullptr);
        if (s == CL_SUCCESS) s = clFinish(q);
      }
      if (out_of_memory(s))
        throw Error(pool_out_of_memory(model(), pool.id, "buffer", pool.bytes, dev->info(),
                                       std::string(cl_error_name(s)) + " (out of device memory)"));
      if (s != CL_SUCCESS) throw Error(what + ": " + cl_error_name(s));
    }
    allocate_views();
  }

  // ---- textures ----
  cl_image_format rgba_float() const { return {CL_RGBA, cl_channel_type(half ? CL_HALF_FLOAT : CL_FLOAT)}; }
  int64_t pixel_bytes() const { return half ? 8 : 16; }

  void allocate_image_pool(const plan::Pool& pool, const std::string& what) {
    const plan::DeviceProfile& p = dev->info().profile;
    if (!p.image_support) throw Error(what + " is a texture pool, but the device has no images");
    if (pool.width > p.max_image2d_width || pool.height > p.max_image2d_height)
      throw Error(what + ": image " + std::to_string(pool.width) + "x" + std::to_string(pool.height) +
                  " exceeds the device's limit " + std::to_string(p.max_image2d_width) + "x" +
                  std::to_string(p.max_image2d_height) + " (plan with --textures none, or views)");
    cl_image_desc d{};
    d.image_type = CL_MEM_OBJECT_IMAGE2D;
    d.image_width = size_t(pool.width);
    d.image_height = size_t(pool.height);
    check_pool_fits(model(), pool.id, "texture", pool.bytes, pool_bytes, dev->info());
    const cl_image_format f = rgba_float();
    cl_int s = CL_SUCCESS;
    cl_mem m = clCreateImage(dev->context(), CL_MEM_READ_WRITE, &f, &d, nullptr, &s);
    if (s == CL_SUCCESS) {
      pool_images.back() = m;
      pool_bytes += pool.bytes;
      const cl_float zero[4] = {0, 0, 0, 0};
      const size_t origin[3] = {0, 0, 0}, region[3] = {d.image_width, d.image_height, 1};
      s = clEnqueueFillImage(q, m, zero, origin, region, 0, nullptr, nullptr);
      if (s == CL_SUCCESS) s = clFinish(q);
    }
    if (s != CL_SUCCESS)
      throw Error(what + " (image " + std::to_string(pool.width) + "x" + std::to_string(pool.height) +
                  "): " + cl_error_name(s) + (out_of_memory(s) ? " (out of device memory)" : ""));
  }

  // Textures placed as views of the arena. With image2d_from_buffer: a
  // sub-buffer of the texture's region, then an image2d over it with the
  // plan's row pitch. Without (NVIDIA, PoCL): one image1d_buffer over each
  // whole buffer pool, the texture at pixel offset / 16 in it (PoCL makes
  // no images over sub-buffers; the plan aligns views to 16 bytes anyway).
  void allocate_views() {
    const plan::DeviceProfile& p = dev->info().profile;
    images_1d = !p.image2d_from_buffer &&
                std::any_of(plan.placements.begin(), plan.placements.end(), [](const auto& pl) { return pl.view; });
    view_images.assign(plan.placements.size(), nullptr);
    const cl_image_format f = rgba_float();
    for (size_t r = 0; r < plan.placements.size(); ++r) {
      const plan::Placement& pl = plan.placements[r];
      if (!pl.view) continue;
      const plan::UsageRecord& rec = pin.records[r];
      const std::string what = model() + ": texture view " + rec.name;
      if (!p.image_support) throw Error(what + ": the device has no images");
      cl_int s = CL_SUCCESS;
      if (images_1d) {
        if (pool_images.at(pl.pool)) continue;  // the pool's image exists
        const int64_t pixels = plan.pools.at(pl.pool).bytes / pixel_bytes();
        if (pixels > p.max_image1d_buffer_pixels)
          throw Error(what + ": pool " + std::to_string(pl.pool) + " of " + std::to_string(pixels) +
                      " pixels exceeds the device's 1D image limit " + std::to_string(p.max_image1d_buffer_pixels) +
                      " (use --textures pools or none)");
        cl_image_desc d{};
        d.image_type = CL_MEM_OBJECT_IMAGE1D_BUFFER;
        d.image_width = size_t(pixels);
        d.buffer = pools.at(pl.pool);  // CL 1.2 `buffer` (mem_object in 2.0)
        cl_mem img = clCreateImage(dev->context(), CL_MEM_READ_WRITE, &f, &d, nullptr, &s);
        if (s != CL_SUCCESS) throw Error(what + ": 1D image over pool " + std::to_string(pl.pool) + ": " + cl_error_name(s));
        pool_images[pl.pool] = img;
        pool_write_images.resize(plan.pools.size(), nullptr);
        pool_write_images[pl.pool] = clCreateImage(dev->context(), CL_MEM_READ_WRITE, &f, &d, nullptr, &s);
        if (s != CL_SUCCESS) throw Error(what + ": 1D image over pool " + std::to_string(pl.pool) + ": " + cl_error_name(s));
        continue;
      }
      cl_buffer_region region{size_t(pl.offset), size_t(pl.row_pitch * rec.extent.height)};
      cl_mem sub = clCreateSubBuffer(pools.at(pl.pool), CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &s);
      if (s != CL_SUCCESS) throw Error(what + ": sub-buffer at " + std::to_string(pl.offset) + ": " + cl_error_name(s));
      view_buffers.push_back(sub);
      cl_image_desc d{};
      d.image_type = CL_MEM_OBJECT_IMAGE2D;
      d.image_width = size_t(rec.extent.width);
      d.image_height = size_t(rec.extent.height);
      d.image_row_pitch = size_t(pl.row_pitch);
      d.buffer = sub;
      cl_mem img = clCreateImage(dev->context(), CL_MEM_READ_WRITE, &f, &d, nullptr, &s);
      if (s != CL_SUCCESS) throw Error(what + ": image over the arena: " + cl_error_name(s));
      view_images[r] = img;
    }
  }

  // The image of texture tensor `t`, its first pixel there and its layout;
  // a null image for buffers and constants.
  TextureArg image(int t, bool write = false) const {
    int rt = root(t);
    if (graph.tensors.at(rt).is_constant) return {};
    int r = pin.record_of_tensor.at(rt);
    if (r < 0 || pin.records[r].storage != plan::Storage::Texture) return {};
    const plan::Placement& p = plan.placements.at(r);
    TextureArg a;
    if (size_t(rt) < pin.texture_layout.size() && pin.texture_layout[rt] == TextureLayout::WideRows) {
      const Shape& s = graph.tensors.at(rt).shape;  // NCHW
      a.layout_h = i32(s.at(2)), a.layout_c4 = i32((s.at(1) + 3) / 4);
      a.layout_fold = size_t(rt) < pin.texture_fold.size() ? std::max(1, pin.texture_fold[rt]) : 1;
    }
    if (p.view && !images_1d) {
      a.mem = view_images.at(r);
    } else if (p.view) {
      a.mem = (write ? pool_write_images : pool_images).at(p.pool);
      a.base = i32(p.offset / pixel_bytes());
    } else {
      a.mem = pool_images.at(p.pool);
    }
    return a;
  }

  bool texture_step(const Node& node) const {
    if (node.op_type == "BufferToTexture" || node.op_type == "TextureToBuffer") return true;
    for (int t : node.inputs)
      if (t >= 0 && image(t).mem) return true;
    for (int t : node.outputs)
      if (t >= 0 && image(t).mem) return true;
    return false;
  }

  // Decides per node: nothing (aliases, constant outputs), prepared kernels, or the CPU.
  void prepare(const Graph& g) {
    for (int n = 0; n < int(g.nodes.size()); ++n) {
      const Node& node = g.nodes[n];
      Step& step = steps.emplace_back();
      step.node = n;
      bool all_constant = true;
      for (int o : node.outputs)
        if (o >= 0) all_constant = all_constant && g.tensors[o].is_constant;
      // Aliases, views and elided concats: their outputs already hold the bytes.
      if (all_constant || writes_nothing(g, node, pin.alias_root, pin.alias_offset)) continue;
      try {
        NodeBuilder b(*dev, g, node, [&](int t) { return locate(g, t); });
        b.kernel_choice = opt.kernel_choice;
        b.tf32 = precision == Precision::Tf32;
        b.half = half;
        b.index_faults = [&, n] { return NodeBuilder::FaultFlags{fault_flags(), n}; };
        b.set_images(
            [&](int t) {
              return image(t, std::find(node.outputs.begin(), node.outputs.end(), t) != node.outputs.end());
            },
            images_1d);
        bool lowered = false;
        try {
          lowered = texture_step(node) ? (lower_texture(b), true) : lower_node(b);
        } catch (const NoHalfKernel& e) {
          if (texture_step(node)) throw Error("its texture kernels (" + e.file + ") have no fp16 storage form");
          half_fallback.push_back(node.name + " (" + node.op_type + "): " + e.file);  // runs on the CPU, converting
        }
        // A window (a patch's part of a larger tensor) is read or written
        // only by kernels that address it through its storage's strides.
        if (const std::vector<int> left = lowered ? b.untaken_windows() : windows_of(g, node); !left.empty())
          throw Error(std::string(lowered ? "its kernels" : "the CPU") + " cannot address tensor " +
                      g.tensors[left[0]].name + ", a window of " + g.tensors[g.tensors[left[0]].window->base].name +
                      " (patch-based execution)");
        if (lowered) {
          std::swap(step.launches, b.launches);
          if (b.used_tf32) tf32_nodes.push_back(node.name + " (" + node.op_type + ")");
          if (b.used_split_k) split_k_nodes.push_back(node.name + " (" + node.op_type + ")");
          // Weights the lowering packed (textures, Winograd) count as
          // weights; those only a tuning candidate read are dropped.
          for (cl_mem m : b.buffers) {
            if (!reads(step.launches, m)) {
              clReleaseMemObject(m);
              continue;
            }
            size_t bytes = 0;
            clGetMemObjectInfo(m, CL_MEM_SIZE, sizeof bytes, &bytes, nullptr);
            weight_bytes += int64_t(bytes);
            packed.push_back(m);
          }
          b.buffers.clear();
        } else {
          if (!reference::supports(node.op_type))
            throw Error("unsupported operator: no OpenCL kernel and no CPU reference");
          step.cpu = true;
          fallback.push_back(node.name + " (" + node.op_type + ")");
        }
      } catch (const Error& e) {
        throw Error(at_node(n) + ": " + e.what());
      }
      if (opt.offload && !texture_step(node)) offload(g, step);
      launches += int(step.launches.size());
      for (int o : node.outputs)
        if (o >= 0 && !g.tensors[root(o)].is_constant) step.writes.push_back(record(o));
      for (int r : scratch_records[n]) step.writes.push_back(r);
    }
    release_unread_weights(g);
  }

  static std::vector<int> windows_of(const Graph& g, const Node& node) {
    std::vector<int> w;
    for (const auto* list : {&node.inputs, &node.outputs})
      for (int t : *list)
        if (t >= 0 && g.tensors[t].window) w.push_back(t);
    return w;
  }

  static bool reads(const std::vector<Launch>& launches, cl_mem m) {
    for (const Launch& l : launches)
      if (std::find(l.mems.begin(), l.mems.end(), m) != l.mems.end()) return true;
    return false;
  }

  // Weights uploaded while lowering that no prepared launch reads: a tuning
  // candidate's (the direct kernel's, where a packed copy won). Offloaded
  // steps' inputs are kept: the library may read them.
  void release_unread_weights(const Graph& g) {
    std::set<int> kept;
    for (const Step& s : steps)
      if (s.offload)
        for (int t : g.nodes[s.node].inputs)
          if (t >= 0) kept.insert(root(t));
    for (auto it = weights.begin(); it != weights.end();) {
      bool read = kept.count(it->first) > 0;
      for (size_t i = 0; i < steps.size() && !read; ++i) read = reads(steps[i].launches, it->second);
      if (read) {
        ++it;
        continue;
      }
      weight_bytes -= stored(g.tensors[it->first]);
      clReleaseMemObject(it->second);
      it = weights.erase(it);
    }
  }

  // Records no tensor owns are scratch space an offloaded node asked for
  // (src/offload): the node at their first step writes them.
  std::vector<std::vector<int>> scratch_records;
  void find_scratch_records(const Graph& g) {
    std::vector<bool> owned(pin.records.size(), false);
    for (int r : pin.record_of_tensor)
      if (r >= 0) owned[size_t(r)] = true;
    scratch_records.assign(g.nodes.size(), {});
    for (size_t r = 0; r < pin.records.size(); ++r)
      if (!owned[r] && pin.records[r].first >= 0 && pin.records[r].first < int(g.nodes.size()))
        scratch_records[size_t(pin.records[r].first)].push_back(int(r));
  }

  void offload(const Graph& g, Step& step) {
    const Node& node = g.nodes[step.node];
    OffloadRequest r{*dev,
                     q,
                     g,
                     step.node,
                     [&](int t) { return locate(g, t); },
                     [&](int rec) {
                       const plan::Placement& p = plan.placements.at(size_t(rec));
                       return Location{pools.at(size_t(p.pool)), p.offset};
                     },
                     step.launches};
    step.offload = opt.offload->prepare(r);
    if (step.offload) offloaded.push_back(node.name + " (" + node.op_type + ")");
  }

  // True when the offloader ran the step; false (after one warning) when it
  // rejected the call: the caller then runs the step's own launches.
  bool enqueue_offloaded(const Step& s, std::vector<cl_event>* events) {
    if (!s.offload || s.offload_rejected) return false;
    if (s.offload->enqueue(q, events)) return true;
    s.offload_rejected = true;
    return false;
  }

  // The run-time copy of the graph, without weights (messages need it while
  // preparing already).
  void keep_metadata(const Graph& g) {
    graph.model_path = g.model_path;
    graph.opset = g.opset;
    graph.nodes = g.nodes;
    graph.inputs = g.inputs;
    graph.outputs = g.outputs;
    for (const Tensor& t : g.tensors) graph.tensors.push_back(metadata(t));
  }

  // Values of the constants read on the host: by CPU steps and as outputs.
  void keep_host_constants(const Graph& g) {
    auto keep = [&](int t) {
      if (t >= 0 && g.tensors[t].is_constant) {
        graph.tensors[t].value = g.tensors[t].value;
        graph.tensors[t].has_data = g.tensors[t].has_data;
      }
    };
    for (const Step& s : steps)
      if (s.cpu)
        for (int t : g.nodes[s.node].inputs) keep(t);
    for (int t : g.outputs) keep(root(t));
  }

  cl_mem fault_flags() {
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
  void raise_index_fault(const cl_int* words) {
    if (words[0] == 0) return;
    const int n = words[0] - 1;
    const int64_t k = int64_t(uint64_t(uint32_t(words[1])) | uint64_t(uint32_t(words[2])) << 32);
    const cl_int zeros[4] = {};
    check(clEnqueueWriteBuffer(q, index_faults, CL_TRUE, 0, sizeof zeros, zeros, 0, nullptr, nullptr),
          model() + ": clearing the index fault flags");
    if (n < 0 || n >= int(graph.nodes.size())) throw Error(model() + ": an index out of range, node unknown");
    const Node& node = graph.nodes[n];
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

  void read(int t, HostTensor& into) {
    if (into.bytes.empty()) return;
    Location l = locate(graph, t);
    std::vector<uint8_t> halves(stored_as_half(graph.tensors[t]) ? into.bytes.size() / 2 : 0);
    check(clEnqueueReadBuffer(q, l.mem, CL_TRUE, size_t(l.byte_offset), halves.empty() ? into.bytes.size() : halves.size(),
                              halves.empty() ? into.bytes.data() : halves.data(), 0, nullptr, nullptr),
          model() + ": reading " + graph.tensors[t].name);
    if (!halves.empty()) from_half(halves, into);
  }

  void run_on_cpu(const Step& s) {
    const Node& node = graph.nodes[s.node];
    std::vector<HostTensor> held(node.inputs.size());
    std::vector<const HostTensor*> ins;
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      int t = node.inputs[k];
      if (t < 0) {
        ins.push_back(nullptr);
      } else if (graph.tensors[root(t)].is_constant) {
        ins.push_back(&graph.tensors[root(t)].value);
      } else {
        held[k] = HostTensor(graph.tensors[t].dtype, graph.tensors[t].shape);
        read(t, held[k]);
        ins.push_back(&held[k]);
      }
    }
    std::vector<HostTensor> outs;
    try {
      outs = reference::evaluate(node, ins);
    } catch (const Error& e) {
      // Its inputs may hold the zeros of an earlier node's faulty index: that
      // node's error comes first.
      if (index_faults) {
        check(clEnqueueReadBuffer(q, index_faults, CL_TRUE, 0, sizeof fault_words, fault_words, 0, nullptr, nullptr),
              model() + ": reading the index fault flags");
        raise_index_fault(fault_words);
      }
      std::string reason = e.what();  // "NAME (OP): reason": the node is named once
      const std::string prefix = node.name + " (" + node.op_type + "): ";
      if (reason.starts_with(prefix)) reason = reason.substr(prefix.size());
      throw Error(at_node(s.node) + " on the CPU: " + reason);
    }
    for (size_t k = 0; k < node.outputs.size() && k < outs.size(); ++k) {
      int t = node.outputs[k];
      if (t < 0) continue;
      const Tensor& want = graph.tensors[t];
      if (outs[k].dtype != want.dtype || outs[k].shape != want.shape)
        throw Error(at_node(s.node) + ": CPU result " + to_string(outs[k].dtype) + " " + to_string(outs[k].shape) +
                    " does not match tensor " + want.name + " " + to_string(want.dtype) + " " + to_string(want.shape));
      if (outs[k].bytes.empty()) continue;
      Location l = locate(graph, t);
      if (stored_as_half(want)) outs[k].bytes = to_half(outs[k]);
      check(clEnqueueWriteBuffer(q, l.mem, CL_TRUE, size_t(l.byte_offset), outs[k].bytes.size(),
                                 outs[k].bytes.data(), 0, nullptr, nullptr),
            at_node(s.node) + ": writing " + want.name);
    }
  }

  // `events` (profile mode) receives one event per launch.
  void enqueue(const Step& s, std::vector<cl_event>* events = nullptr) {
    for (const Launch& l : s.launches) {
      cl_event* ev = events ? &events->emplace_back() : nullptr;
      cl_int e = clEnqueueNDRangeKernel(q, l.kernel, l.dims, nullptr, l.global,
                                        l.has_local ? l.local : nullptr, 0, nullptr, ev);
      if (e != CL_SUCCESS) {
        if (ev) events->pop_back();
        throw Error(at_node(s.node) + ": enqueueing kernel " + l.name + ": " + cl_error_name(e));
      }
    }
  }

  // fp16 at the DeviceTensor boundary: the fp32 elements of `src` from
  // element `src_at` into half `dst` from element `dst_at` (`to_half`), or
  // half to fp32, on the queue (elementwise.cl).
  void convert_on_device(cl_mem src, int64_t src_at, cl_mem dst, int64_t dst_at, const Shape& shape, bool to_half,
                         const std::string& what) {
    const cl_int n = i32(element_count(shape)), so = i32(src_at), dso = i32(dst_at);
    cl_int s = CL_SUCCESS;
    cl_kernel k = clCreateKernel(dev->program("elementwise.cl"), to_half ? "f32_to_half" : "half_to_f32", &s);
    check(s, what);
    for (cl_uint a = 0; s == CL_SUCCESS && a < 5; ++a) {
      const std::pair<size_t, const void*> arg[] = {
          {sizeof src, &src}, {sizeof so, &so}, {sizeof dst, &dst}, {sizeof dso, &dso}, {sizeof n, &n}};
      s = clSetKernelArg(k, a, arg[a].first, arg[a].second);
    }
    const size_t global = size_t(ceil_div(std::max(n, 1), 64)) * 64;
    if (s == CL_SUCCESS) s = clEnqueueNDRangeKernel(q, k, 1, nullptr, &global, nullptr, 0, nullptr, nullptr);
    clReleaseKernel(k);
    check(s, what);
  }

  // ---- guard mode ----
  std::vector<uint8_t> record_bytes(int r) {
    const plan::Placement& p = plan.placements[r];
    std::vector<uint8_t> b(size_t(pin.records[r].bytes));
    if (!b.empty() && plan.pools[p.pool].kind == plan::Storage::Texture) {  // a texture pool: its image's pixels of this texture
      const plan::TextureExtent& e = pin.records[r].extent;
      const size_t origin[3] = {0, 0, 0}, region[3] = {size_t(e.width), size_t(e.height), 1};
      check(clEnqueueReadImage(q, pool_images[p.pool], CL_TRUE, origin, region, 0, 0, b.data(), 0, nullptr, nullptr),
            model() + ": guard readback of texture " + pin.records[r].name);
    } else if (!b.empty())
      check(clEnqueueReadBuffer(q, pools[p.pool], CL_TRUE, size_t(p.offset), b.size(), b.data(), 0,
                                nullptr, nullptr),
            model() + ": guard readback of " + pin.records[r].name);
    return b;
  }

  void poison() {
    const cl_uchar nan = 0xFF;  // 0xFFFFFFFF is a NaN
    for (size_t p = 0; p < pools.size(); ++p)
      if (pools[p])
        check(clEnqueueFillBuffer(q, pools[p], &nan, 1, 0, size_t(plan.pools[p].bytes), 0, nullptr, nullptr),
              model() + ": poisoning pool " + std::to_string(p));
    const cl_float nan4[4] = {NAN, NAN, NAN, NAN};
    for (size_t p = 0; p < pool_images.size(); ++p)
      if (pool_images[p] && plan.pools[p].kind == plan::Storage::Texture) {
        const size_t origin[3] = {0, 0, 0}, region[3] = {size_t(plan.pools[p].width), size_t(plan.pools[p].height), 1};
        check(clEnqueueFillImage(q, pool_images[p], nan4, origin, region, 0, nullptr, nullptr),
              model() + ": poisoning texture pool " + std::to_string(p));
      }
    shadows.assign(pin.records.size(), {});
  }

  void guard_after(int step) {
    check(clFinish(q), at_node(step));
    const std::vector<int>& writes = steps[step].writes;
    for (int r = 0; r < int(pin.records.size()); ++r) {
      const plan::UsageRecord& rec = pin.records[r];
      bool written = std::find(writes.begin(), writes.end(), r) != writes.end();
      if (written || step < rec.first || step > rec.last || shadows[r].empty()) continue;
      std::vector<uint8_t> now = record_bytes(r);
      if (now == shadows[r]) continue;
      size_t a = 0, z = now.size();
      while (now[a] == shadows[r][a]) ++a;
      while (now[z - 1] == shadows[r][z - 1]) --z;
      const plan::Placement& p = plan.placements[r];
      violations.push_back({graph.nodes[step].name, rec.name, p.pool, p.offset + int64_t(a), p.offset + int64_t(z)});
      shadows[r] = std::move(now);  // report each change once
    }
    for (int r : writes) shadows[r] = record_bytes(r);
  }
};

Session::Session(const Graph& g, const PlanInput& pin, const plan::MemoryPlan& plan, const std::string& spec,
                 SessionOptions options)
    : Session(g, pin, plan, open_device(spec), options) {}

Session::Session(const Graph& g, const PlanInput& pin, const plan::MemoryPlan& plan, std::shared_ptr<Device> device,
                 SessionOptions options)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.dev = std::move(device);
  m.opt = options;
  m.graph.model_name = g.model_name;
  try {
    check_kernel_choice(options.kernel_choice);
  } catch (const Error& e) {
    throw Error(m.model() + ": " + e.what());
  }
  const bool tf32 = tf32_supported(*m.dev) || options.kernel_choice.tf32_emulation;
  m.precision = options.precision == Precision::Tf32 && tf32 ? Precision::Tf32
                : options.precision == Precision::Fp16      ? Precision::Fp16
                                                            : Precision::Fp32;
  m.half = m.precision == Precision::Fp16;
  m.q = options.profile ? m.dev->profiling_queue() : m.dev->queue();
  m.pin = pin;
  m.plan = plan;
  if (plan.placements.size() != pin.records.size())
    throw Error(m.model() + ": the plan places " + std::to_string(plan.placements.size()) + " records, the graph has " +
                std::to_string(pin.records.size()));
  if (pin.record_of_tensor.size() != g.tensors.size())
    throw Error(m.model() + ": the usage records describe another graph");
  if (m.half && options.offload)
    throw Error(m.model() + ": --precision fp16 runs texplan's kernels only: the offloaded library (CLBlast) takes "
                            "fp32 buffers (drop --offload, or run fp32)");
  // Buffer records must be as large as the tensors are stored: fp32 records
  // under an fp16 session waste half, fp16 records under fp32 overflow.
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    const int r = pin.record_of_tensor[t];
    if (r < 0 || m.root(int(t)) != int(t) || g.tensors[t].dtype != DataType::Float32 ||
        pin.records[size_t(r)].storage != plan::Storage::Buffer || pin.records[size_t(r)].bytes == m.stored(g.tensors[t]))
      continue;
    throw Error(m.model() + ": usage record " + pin.records[size_t(r)].name + " has " +
                std::to_string(pin.records[size_t(r)].bytes) + " bytes, the tensor is stored in " +
                std::to_string(m.stored(g.tensors[t])) + " with precision " + precision_name(m.precision) +
                " (make the usage records with UsageOptions::float_storage = float_storage(precision))");
  }
  m.keep_metadata(g);
  m.find_scratch_records(g);
  m.allocate_pools();
  m.prepare(g);
  m.keep_host_constants(g);
}

Session::~Session() = default;

Precision Session::precision() const { return impl_->precision; }

Precision parse_precision(const std::string& s) {
  if (s == "fp32") return Precision::Fp32;
  if (s == "tf32") return Precision::Tf32;
  if (s == "fp16") return Precision::Fp16;
  throw Error("unknown precision '" + s + "': fp32, tf32 or fp16");
}

const char* precision_name(Precision p) {
  return p == Precision::Tf32 ? "tf32" : p == Precision::Fp16 ? "fp16" : "fp32";
}

DataType float_storage(Precision p) { return p == Precision::Fp16 ? DataType::Float16 : DataType::Float32; }

namespace {
// Input writes and output reads are asynchronous: when anything in a run
// throws (a lost device, a failed enqueue), wait for the queue before the
// caller's host memory may go, or the device would use freed memory.
struct DrainOnThrow {
  cl_command_queue q;
  int pending = std::uncaught_exceptions();
  ~DrainOnThrow() {
    if (std::uncaught_exceptions() > pending) clFinish(q);
  }
};
}  // namespace

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
  if (opt.profile) profiled.device_times(times), last_span_ms = profiled.span_ms();
  profiled.clear();
  last_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (index_faults) raise_index_fault(fault_read);
}

std::vector<HostTensor> Session::run(const std::vector<HostTensor>& inputs) {
  Impl& m = *impl_;
  const Graph& g = m.graph;
  if (inputs.size() != g.inputs.size())
    throw Error(m.model() + ": expected " + std::to_string(g.inputs.size()) + " inputs, got " +
                std::to_string(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i)
    m.check_input(i, inputs[i].dtype, inputs[i].shape, int64_t(inputs[i].bytes.size()));
  auto start = std::chrono::steady_clock::now();
  cl_command_queue q = m.q;
  std::vector<HostTensor> outs;
  DrainOnThrow drain{q};
  m.begin_run();
  // fp16: Float32 inputs converted here, outputs read as half and converted
  // after the queue is done; both buffers live until then.
  std::vector<std::vector<uint8_t>> halves(inputs.size() + g.outputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    int t = g.inputs[i];
    if (m.pin.record_of_tensor[m.root(t)] < 0 || inputs[i].bytes.empty()) continue;  // unused input
    Location l = m.locate(g, t);
    if (m.stored_as_half(g.tensors[t])) halves[i] = to_half(inputs[i]);
    const std::vector<uint8_t>& value = halves[i].empty() ? inputs[i].bytes : halves[i];
    m.check(clEnqueueWriteBuffer(q, l.mem, CL_FALSE, size_t(l.byte_offset), value.size(), value.data(), 0, nullptr,
                                 nullptr),
            m.model() + ": writing input " + g.tensors[t].name);
  }
  m.inputs_written();
  m.run_steps();

  outs.reserve(g.outputs.size());  // reads land in these buffers until clFinish
  std::vector<std::pair<size_t, const void*>> staged;  // outputs read into pinned memory: index, where
  for (int t : g.outputs) {
    const Tensor& meta = g.tensors[t];
    if (g.tensors[m.root(t)].is_constant) {
      outs.push_back(g.tensors[m.root(t)].value);
      outs.back().shape = meta.shape;
      continue;
    }
    outs.emplace_back(meta.dtype, meta.shape);
    if (outs.back().bytes.empty()) continue;
    Location l = m.locate(g, t);
    size_t bytes = outs.back().bytes.size();
    void* into = outs.back().bytes.data();
    if (m.stored_as_half(meta)) {
      std::vector<uint8_t>& h = halves[inputs.size() + outs.size() - 1];
      h.resize(bytes /= 2);
      into = h.data();
    } else if (void* pinned = m.stage(t, bytes)) {
      staged.emplace_back(outs.size() - 1, into = pinned);
    }
    m.check(clEnqueueReadBuffer(q, l.mem, CL_FALSE, size_t(l.byte_offset), bytes, into, 0, nullptr, nullptr),
            m.model() + ": reading output " + meta.name);
  }
  m.end_run(start);
  for (auto [k, pinned] : staged) std::memcpy(outs[k].bytes.data(), pinned, outs[k].bytes.size());
  for (size_t k = 0; k < outs.size(); ++k)
    if (!halves[inputs.size() + k].empty()) from_half(halves[inputs.size() + k], outs[k]);
  return outs;
}

void Session::run(const std::vector<const DeviceTensor*>& inputs, const std::vector<DeviceTensor*>& outputs) {
  Impl& m = *impl_;
  const Graph& g = m.graph;
  if (inputs.size() != g.inputs.size() || outputs.size() != g.outputs.size())
    throw Error(m.model() + ": expected " + std::to_string(g.inputs.size()) + " inputs and " +
                std::to_string(g.outputs.size()) + " outputs, got " + std::to_string(inputs.size()) + " and " +
                std::to_string(outputs.size()));
  auto on_this_device = [&](const DeviceTensor* d, int t, const char* role) {
    if (!d) throw Error(m.model() + ": " + role + " " + g.tensors[t].name + " is null");
    if (&d->device() != m.dev.get())
      throw Error(m.model() + ": " + role + " " + g.tensors[t].name + " lives on " + d->device().info().name +
                  ", not on this session's device " + m.dev->info().name);
  };
  for (size_t i = 0; i < inputs.size(); ++i) {
    on_this_device(inputs[i], g.inputs[i], "input");
    m.check_input(i, inputs[i]->dtype(), inputs[i]->shape(), inputs[i]->bytes());
  }
  for (size_t k = 0; k < outputs.size(); ++k) {
    const Tensor& t = g.tensors[g.outputs[k]];
    on_this_device(outputs[k], g.outputs[k], "output");
    if (outputs[k]->dtype() != t.dtype || outputs[k]->shape() != t.shape)
      throw Error(m.model() + ": output " + t.name + " is " + to_string(t.dtype) + " " + to_string(t.shape) +
                  ", the device tensor given for it " + to_string(outputs[k]->dtype()) + " " +
                  to_string(outputs[k]->shape()));
  }
  auto start = std::chrono::steady_clock::now();
  cl_command_queue q = m.q;
  DrainOnThrow drain{q};
  m.begin_run();
  for (size_t i = 0; i < inputs.size(); ++i) {
    int t = g.inputs[i];
    if (m.pin.record_of_tensor[m.root(t)] < 0 || inputs[i]->bytes() == 0) continue;  // unused input
    Location l = m.locate(g, t);
    if (m.stored_as_half(g.tensors[t])) {
      m.convert_on_device(inputs[i]->buffer(), 0, l.mem, l.byte_offset / 2, g.tensors[t].shape, true,
                          m.model() + ": converting input " + g.tensors[t].name + " to half");
      continue;
    }
    m.check(clEnqueueCopyBuffer(q, inputs[i]->buffer(), l.mem, 0, size_t(l.byte_offset), size_t(inputs[i]->bytes()),
                                0, nullptr, nullptr),
            m.model() + ": copying input " + g.tensors[t].name);
  }
  m.inputs_written();
  m.run_steps();
  for (size_t k = 0; k < outputs.size(); ++k) {
    const int t = g.outputs[k];
    const int64_t bytes = outputs[k]->bytes();
    if (bytes == 0) continue;
    const std::string what = m.model() + ": copying output " + g.tensors[t].name;
    if (g.tensors[m.root(t)].is_constant)  // the host keeps the value of constants that are outputs
      m.check(clEnqueueWriteBuffer(q, outputs[k]->buffer(), CL_FALSE, 0, size_t(bytes),
                                   g.tensors[m.root(t)].value.bytes.data(), 0, nullptr, nullptr),
              what);
    else if (m.stored_as_half(g.tensors[t])) {
      Location l = m.locate(g, t);
      m.convert_on_device(l.mem, l.byte_offset / 2, outputs[k]->buffer(), 0, g.tensors[t].shape, false, what);
    } else {
      Location l = m.locate(g, t);
      m.check(clEnqueueCopyBuffer(q, l.mem, outputs[k]->buffer(), size_t(l.byte_offset), 0, size_t(bytes), 0,
                                  nullptr, nullptr),
              what);
    }
  }
  m.end_run(start);
}

double Session::last_run_ms() const { return impl_->last_ms; }
double Session::last_enqueue_ms() const { return impl_->last_enqueue_ms; }
double Session::last_device_span_ms() const { return impl_->last_span_ms; }
int64_t Session::activation_bytes() const { return impl_->pool_bytes; }
int64_t Session::weight_bytes() const { return impl_->weight_bytes; }
int Session::kernel_launches() const { return impl_->launches; }
const std::vector<std::string>& Session::fallback_nodes() const { return impl_->fallback; }
const std::vector<std::string>& Session::offloaded_nodes() const { return impl_->offloaded; }
const std::vector<std::string>& Session::tf32_nodes() const { return impl_->tf32_nodes; }
const std::vector<std::string>& Session::split_k_nodes() const { return impl_->split_k_nodes; }
const std::vector<std::string>& Session::half_fallback_nodes() const { return impl_->half_fallback; }
const std::vector<GuardViolation>& Session::guard_violations() const { return impl_->violations; }
const std::vector<NodeTime>& Session::node_times() const { return impl_->times; }
const Device& Session::device() const { return *impl_->dev; }

}  // namespace texplan::runtime
