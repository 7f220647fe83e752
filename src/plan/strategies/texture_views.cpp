// texture-views: buffers and textures share one arena and one offset plan.
// A texture becomes an image view over a region of the arena (a sub-buffer,
// then cl_khr_image2d_from_buffer), so it is packed like a buffer of
// texture_view_bytes = round_up(width * pixel_bytes, pitch) * height bytes,
// at an offset aligned to both the sub-buffer origin alignment
// (mem_base_addr_align) and the image base-address alignment. Offsets come
// from `best`. Devices without image2d_from_buffer (NVIDIA, PoCL) get 1D
// views instead: an image1d_buffer over the region, rows packed tight
// (pitch = width * pixel_bytes), kernels index pixels as y * width + x.
#include <numeric>

#include "plan/arena.h"

namespace texplan::plan::detail {

MemoryPlan plan_texture_views(const std::vector<UsageRecord>& recs, const DeviceProfile& dev) {
  if (!dev.image_support) throw PlanError("texture-views needs images, which " + dev.name + " lacks");
  const int64_t buffer_align = std::max<int64_t>(1, dev.mem_base_addr_align);
  const int64_t view_align = std::lcm(buffer_align, std::max<int64_t>(1, dev.image_base_address_alignment));
  std::vector<ArenaItem> items;
  items.reserve(recs.size());
  for (const UsageRecord& r : recs) {
    const bool view = r.storage == Storage::Texture;
    const int64_t bytes = view ? texture_view_bytes(r.extent, dev) : r.bytes;
    items.push_back({round_up(bytes, buffer_align), r.first, r.last, view ? view_align : buffer_align});
  }
  const ArenaPlan arena = best_offsets(ArenaProblem(std::move(items)));

  MemoryPlan plan;
  plan.repair_work = arena.repair_work;
  plan.placements.resize(recs.size());
  for (size_t i = 0; i < recs.size(); ++i) {
    Placement& pl = plan.placements[i];
    pl = Placement{0, arena.offsets[i]};
    if (recs[i].storage == Storage::Texture) {
      pl.view = true;
      pl.row_pitch = view_row_pitch(recs[i].extent, dev);
    }
  }
  if (!recs.empty()) plan.pools.push_back(Pool{0, Storage::Buffer, arena.total});
  return plan;
}

}  // namespace texplan::plan::detail
