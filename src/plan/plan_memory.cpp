// Strategy dispatch, input checks, and the plan-building pieces shared by
// the arena strategies.
#include <chrono>
#include <string_view>
#include <utility>

#include "plan/arena.h"

namespace texplan::plan {

using namespace detail;

const char* to_string(Storage s) { return s == Storage::Buffer ? "buffer" : "texture"; }

int64_t MemoryPlan::total_bytes() const { return buffer_bytes() + texture_bytes(); }

int64_t MemoryPlan::buffer_bytes() const {
  int64_t sum = 0;
  for (const Pool& p : pools)
    if (p.kind == Storage::Buffer) sum += p.bytes;
  return sum;
}

int64_t MemoryPlan::texture_bytes() const {
  int64_t sum = 0;
  for (const Pool& p : pools)
    if (p.kind == Storage::Texture) sum += p.bytes;
  return sum;
}

int64_t detail::view_row_pitch(const TextureExtent& e, const DeviceProfile& dev) {
  if (!dev.image_support) throw PlanError("texture-views needs images, which " + dev.name + " lacks");
  // Without image2d_from_buffer a view is an image1d_buffer over the
  // region (core OpenCL 1.2): rows packed with no padding.
  if (!dev.image2d_from_buffer) return e.width * e.pixel_bytes;
  return round_up(e.width * e.pixel_bytes, pitch_alignment_bytes(e, dev));
}

int64_t detail::pitch_alignment_bytes(const TextureExtent& e, const DeviceProfile& dev) {
  return std::max<int64_t>(1, dev.image_pitch_alignment * e.pixel_bytes / 16);
}

int64_t texture_view_bytes(const TextureExtent& e, const DeviceProfile& dev) {
  return view_row_pitch(e, dev) * e.height;
}

int64_t texture_footprint_bytes(const TextureExtent& e, const DeviceProfile& dev) {
  if (!dev.image_support || !dev.image2d_from_buffer) return e.tight_bytes();
  return texture_view_bytes(e, dev);
}

MemoryPlan detail::plan_arena_with_texture_pools(const std::vector<UsageRecord>& recs,
                                                 const DeviceProfile& dev, OffsetStrategy place) {
  const int64_t align = std::max<int64_t>(1, dev.mem_base_addr_align);
  std::vector<int32_t> buffers;
  std::vector<ArenaItem> items;
  for (int32_t i = 0; i < static_cast<int32_t>(recs.size()); ++i) {
    if (recs[i].storage != Storage::Buffer) continue;
    buffers.push_back(i);
    items.push_back({round_up(recs[i].bytes, align), recs[i].first, recs[i].last, align});
  }
  MemoryPlan plan;
  plan.placements.resize(recs.size());
  if (!buffers.empty()) {
    const ArenaPlan arena = place(ArenaProblem(std::move(items)));
    plan.pools.push_back(Pool{0, Storage::Buffer, arena.total});
    plan.repair_work = arena.repair_work;
    for (size_t k = 0; k < buffers.size(); ++k) plan.placements[buffers[k]] = Placement{0, arena.offsets[k]};
  }
  place_textures_in_pools(recs, dev, plan);
  return plan;
}

namespace {

using StrategyFn = MemoryPlan (*)(const std::vector<UsageRecord>&, const DeviceProfile&);

constexpr std::pair<std::string_view, StrategyFn> kStrategies[] = {
    {"naive", plan_naive},
    {"tvm-tokens", plan_tvm_tokens},
    {"greedy-by-size", plan_greedy_by_size},
    {"greedy-by-breadth", plan_greedy_by_breadth},
    {"best", plan_best},
    {"tvm-texture-pools", plan_tvm_texture_pools},
    {"texture-views", plan_texture_views},
};

// Strategies trust their input; reject what would make a plan meaningless,
// and sizes whose sums could overflow 64 bits anywhere in a strategy: every
// record's bytes, aligned (textures: the largest pool the device allows,
// images at most 65536 pixels a side), add up below 2^61.
void check_records(const std::vector<UsageRecord>& recs, const DeviceProfile& dev) {
  constexpr int64_t kMaxAlign = int64_t{1} << 24, kMaxTotal = int64_t{1} << 61;
  constexpr int64_t kMaxImageDim = int64_t{1} << 16, kMaxPixelBytes = 64;
  const int64_t max_width = std::min(dev.max_image2d_width, kMaxImageDim);
  const int64_t max_height = std::min(dev.max_image2d_height, kMaxImageDim);
  for (int64_t a : {dev.mem_base_addr_align, dev.image_pitch_alignment, dev.image_base_address_alignment})
    if (a > kMaxAlign)
      throw PlanError("device " + dev.name + ": alignment " + std::to_string(a) + " is beyond " +
                      std::to_string(kMaxAlign) + " bytes");
  const int64_t align = std::max<int64_t>(1, dev.mem_base_addr_align) * std::max<int64_t>(1, dev.image_base_address_alignment);
  int64_t total = 0;
  for (const UsageRecord& r : recs) {
    auto fail = [&](const std::string& why) { throw PlanError("record '" + r.name + "': " + why); };
    if (r.first < 0 || r.first > r.last)
      fail("steps [" + std::to_string(r.first) + ", " + std::to_string(r.last) + "] are not 0 <= first <= last");
    if (r.bytes < 0) fail("negative size");
    int64_t bytes = r.bytes;
    if (r.storage == Storage::Texture) {
      const TextureExtent& e = r.extent;
      if (e.width <= 0 || e.height <= 0 || e.pixel_bytes <= 0) fail("texture extent must be positive");
      if (!dev.image_support) fail("is a texture, but " + dev.name + " has no image support");
      if (e.width > max_width || e.height > max_height)
        fail("texture of " + std::to_string(e.width) + "x" + std::to_string(e.height) + " is beyond " + dev.name +
             "'s image limit " + std::to_string(max_width) + "x" + std::to_string(max_height));
      if (e.pixel_bytes > kMaxPixelBytes) fail("pixels of " + std::to_string(e.pixel_bytes) + " bytes");
      // Texture pools grow to the device's image limits at most; views take
      // rows rounded up to the pitch alignment.
      const int64_t row = round_up(e.width * e.pixel_bytes, detail::pitch_alignment_bytes(e, dev));
      bytes = std::max({bytes, max_width * max_height * e.pixel_bytes, row * e.height});
    }
    if (bytes > kMaxTotal - total - align)
      fail("sizes of the records add up beyond 2^61 bytes");
    total += bytes + align;
  }
}

}  // namespace

std::vector<std::string> strategy_names() {
  std::vector<std::string> names;
  for (const auto& [name, fn] : kStrategies) names.emplace_back(name);
  return names;
}

MemoryPlan plan_memory(const std::vector<UsageRecord>& recs, const DeviceProfile& dev,
                       const std::string& strategy) {
  for (const auto& [name, fn] : kStrategies) {
    if (name != strategy) continue;
    check_records(recs, dev);
    const auto start = std::chrono::steady_clock::now();
    MemoryPlan plan = fn(recs, dev);
    plan.plan_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    plan.strategy = strategy;
    return plan;
  }
  std::string known;
  for (const auto& [name, fn] : kStrategies) known += (known.empty() ? "" : ", ") + std::string(name);
  throw PlanError("unknown planning strategy '" + strategy + "' (known: " + known + ")");
}

}  // namespace texplan::plan
