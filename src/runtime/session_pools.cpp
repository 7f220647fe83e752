// Session::Impl's device memory: activation pools, texture images and views, weight uploads, pinned output
// staging, and guard mode's poisoning of the pools and its checks of live tensors' bytes after every step.
#include <algorithm>
#include <cmath>

#include "runtime/memory_check.h"
#include "runtime/session_impl.h"

namespace texplan::runtime {

namespace {
bool out_of_memory(cl_int s) {
  return s == CL_MEM_OBJECT_ALLOCATION_FAILURE || s == CL_OUT_OF_RESOURCES || s == CL_OUT_OF_HOST_MEMORY;
}

std::string mib(int64_t bytes) { return std::to_string(bytes) + " bytes (" + std::to_string(bytes >> 20) + " MiB)"; }
}  // namespace

Session::Impl::~Impl() {
  for (Step& s : steps) s.offload.reset();  // may hold sub-buffers of the pools
  for (Step& s : steps)
    for (lower::Launch& l : s.launches) clReleaseKernel(l.kernel);
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
void* Session::Impl::stage(int t, size_t bytes) {
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

lower::Location Session::Impl::locate(const Graph& g, int t) {
  int r = root(t);
  if (g.tensors[r].is_constant) return {weight(g, r), 0};
  const plan::Placement& p = plan.placements.at(record(t));
  const int64_t offset = p.offset + (pin.alias_offset.empty() ? 0 : pin.alias_offset.at(t));  // zero-copy concat slice
  if (offset + stored(g.tensors[t]) > plan.pools.at(p.pool).bytes)
    throw Error(model() + ": tensor " + g.tensors[t].name + " does not fit pool " + std::to_string(p.pool));
  return {pools.at(p.pool), offset};
}

cl_mem Session::Impl::weight(const Graph& g, int t) {
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

void Session::Impl::allocate_pools() {
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

void Session::Impl::allocate_image_pool(const plan::Pool& pool, const std::string& what) {
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
void Session::Impl::allocate_views() {
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
lower::TextureArg Session::Impl::image(int t, bool write) const {
  int rt = root(t);
  if (graph.tensors.at(rt).is_constant) return {};
  int r = pin.record_of_tensor.at(rt);
  if (r < 0 || pin.records[r].storage != plan::Storage::Texture) return {};
  const plan::Placement& p = plan.placements.at(r);
  lower::TextureArg a;
  if (size_t(rt) < pin.texture_layout.size() && pin.texture_layout[rt] == TextureLayout::WideRows) {
    const Shape& s = graph.tensors.at(rt).shape;  // NCHW
    a.layout_h = lower::i32(s.at(2)), a.layout_c4 = lower::i32((s.at(1) + 3) / 4);
    a.layout_fold = size_t(rt) < pin.texture_fold.size() ? std::max(1, pin.texture_fold[rt]) : 1;
  }
  if (p.view && !images_1d) {
    a.mem = view_images.at(r);
  } else if (p.view) {
    a.mem = (write ? pool_write_images : pool_images).at(p.pool);
    a.base = lower::i32(p.offset / pixel_bytes());
  } else {
    a.mem = pool_images.at(p.pool);
  }
  return a;
}

// ---- guard mode ----
std::vector<uint8_t> Session::Impl::record_bytes(int r) {
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

void Session::Impl::poison() {
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

void Session::Impl::guard_after(int step) {
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

}  // namespace texplan::runtime
