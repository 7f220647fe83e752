// Independent check of a plan: shares no code with the strategies.
// Overlaps: per buffer pool, a sweep over records by first step keeps the
// live records in a set ordered by offset; live records never overlap each
// other (or we would have stopped), so a newcomer only needs checking
// against its neighbours in that set. O(n log n).
#include <algorithm>
#include <numeric>
#include <queue>
#include <set>

#include "plan/arena.h"
#include "plan/memory_plan.h"

namespace texplan::plan {

namespace {

std::string quoted(const UsageRecord& r) { return "'" + r.name + "'"; }

bool aligned(int64_t value, int64_t align) { return align <= 1 || value % align == 0; }

// Bytes a record occupies in a buffer pool.
int64_t occupied_bytes(const UsageRecord& r, const Placement& p) {
  return p.view ? p.row_pitch * r.extent.height : r.bytes;
}

void check_no_overlap(const std::vector<int32_t>& ids, const std::vector<UsageRecord>& recs,
                      const MemoryPlan& plan, int pool) {
  std::vector<int32_t> by_first = ids;
  std::sort(by_first.begin(), by_first.end(), [&](int32_t a, int32_t b) {
    return recs[a].first != recs[b].first ? recs[a].first < recs[b].first : a < b;
  });
  struct Live {
    int64_t offset, end;
    int32_t id;
    bool operator<(const Live& o) const { return offset != o.offset ? offset < o.offset : id < o.id; }
  };
  std::set<Live> live;
  using Expiry = std::pair<int32_t, Live>;  // (last step, entry)
  auto later = [](const Expiry& a, const Expiry& b) { return a.first > b.first; };
  std::priority_queue<Expiry, std::vector<Expiry>, decltype(later)> expiries(later);
  for (int32_t i : by_first) {
    const UsageRecord& r = recs[i];
    while (!expiries.empty() && expiries.top().first < r.first) {
      live.erase(expiries.top().second);
      expiries.pop();
    }
    const Live me{plan.placements[i].offset, plan.placements[i].offset + occupied_bytes(r, plan.placements[i]), i};
    if (me.end == me.offset) continue;  // occupies nothing
    auto clash = [&](const Live& other) {
      const UsageRecord& o = recs[other.id];
      throw PlanError("tensors " + quoted(o) + " and " + quoted(r) + " overlap in pool " + std::to_string(pool) +
                      " at step " + std::to_string(r.first) + ": [" + std::to_string(other.offset) + ", " +
                      std::to_string(other.end) + ") and [" + std::to_string(me.offset) + ", " +
                      std::to_string(me.end) + ")");
    };
    auto next = live.lower_bound(me);
    if (next != live.end() && next->offset < me.end) clash(*next);
    if (next != live.begin() && std::prev(next)->end > me.offset) clash(*std::prev(next));
    live.insert(me);
    expiries.emplace(r.last, me);
  }
}

void check_textures_exclusive(std::vector<int32_t> ids, const std::vector<UsageRecord>& recs, int pool) {
  std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return recs[a].first < recs[b].first; });
  for (size_t k = 1, holder = 0; k < ids.size(); ++k) {
    const UsageRecord &prev = recs[ids[holder]], &cur = recs[ids[k]];
    if (cur.first <= prev.last)
      throw PlanError("textures " + quoted(prev) + " and " + quoted(cur) + " share texture pool " +
                      std::to_string(pool) + " at step " + std::to_string(cur.first));
    holder = k;  // sorted by first and disjoint so far: the latest one ends last
  }
}

void check_image_limits(const UsageRecord& r, const DeviceProfile& dev) {
  if (!dev.image_support) throw PlanError("texture " + quoted(r) + " on " + dev.name + ", which has no images");
  if (r.extent.width > dev.max_image2d_width || r.extent.height > dev.max_image2d_height)
    throw PlanError("texture " + quoted(r) + " is " + std::to_string(r.extent.width) + "x" +
                    std::to_string(r.extent.height) + ", beyond " + dev.name + "'s image limit " +
                    std::to_string(dev.max_image2d_width) + "x" + std::to_string(dev.max_image2d_height));
}

}  // namespace

void validate(const MemoryPlan& plan, const std::vector<UsageRecord>& recs, const DeviceProfile& dev) {
  if (plan.placements.size() != recs.size())
    throw PlanError("plan places " + std::to_string(plan.placements.size()) + " records, expected " +
                    std::to_string(recs.size()));
  const int pools = static_cast<int>(plan.pools.size());
  for (int k = 0; k < pools; ++k)
    if (plan.pools[k].id != k) throw PlanError("pool " + std::to_string(k) + " has id " + std::to_string(plan.pools[k].id));

  std::vector<std::vector<int32_t>> members(pools);
  for (int32_t i = 0; i < static_cast<int32_t>(recs.size()); ++i) {
    const UsageRecord& r = recs[i];
    const Placement& p = plan.placements[i];
    if (p.pool < 0 || p.pool >= pools) throw PlanError("tensor " + quoted(r) + " is not placed");
    const Pool& pool = plan.pools[p.pool];
    const std::string where = "tensor " + quoted(r) + " in pool " + std::to_string(p.pool);
    if (r.storage == Storage::Buffer && (pool.kind != Storage::Buffer || p.view))
      throw PlanError(where + ": a buffer must be placed in a buffer pool, not as a view");
    const bool view_1d = p.view && !dev.image2d_from_buffer;
    if (r.storage == Storage::Texture) {
      if (view_1d) {
        if (!dev.image_support) throw PlanError("texture " + quoted(r) + " on " + dev.name + ", which has no images");
        if (r.extent.width * r.extent.height > dev.max_image1d_buffer_pixels)
          throw PlanError("texture " + quoted(r) + " of " + std::to_string(r.extent.width * r.extent.height) +
                          " pixels is beyond " + dev.name + "'s 1D image limit " +
                          std::to_string(dev.max_image1d_buffer_pixels));
      } else {
        check_image_limits(r, dev);
      }
      if (p.view != (pool.kind == Storage::Buffer))
        throw PlanError(where + ": a texture lives in a texture pool or as a view over a buffer pool");
    }
    if (pool.kind == Storage::Texture) {
      if (p.offset != 0) throw PlanError(where + ": a texture pool holds one image, offset must be 0");
      if (pool.width < r.extent.width || pool.height < r.extent.height)
        throw PlanError(where + ": extent " + std::to_string(r.extent.width) + "x" + std::to_string(r.extent.height) +
                        " does not fit pool " + std::to_string(pool.width) + "x" + std::to_string(pool.height));
      if (pool.width > dev.max_image2d_width || pool.height > dev.max_image2d_height)
        throw PlanError("texture pool " + std::to_string(p.pool) + " is beyond " + dev.name + "'s image limits");
      if (pool.bytes < pool.width * pool.height * r.extent.pixel_bytes)
        throw PlanError(where + ": pool bytes " + std::to_string(pool.bytes) + " below its image size");
    } else {
      if (p.offset < 0) throw PlanError(where + ": negative offset");
      if (!aligned(p.offset, dev.mem_base_addr_align))
        throw PlanError(where + ": offset " + std::to_string(p.offset) + " not aligned to mem_base_addr_align " +
                        std::to_string(dev.mem_base_addr_align));
      if (view_1d && p.row_pitch != r.extent.width * r.extent.pixel_bytes)
        throw PlanError(where + ": 1D view (no image2d_from_buffer on " + dev.name + ") with row pitch " +
                        std::to_string(p.row_pitch) + ", not " + std::to_string(r.extent.width * r.extent.pixel_bytes));
      if (p.view && !view_1d) {  // a sub-buffer (above) then an image over it (here)
        if (!aligned(p.offset, dev.image_base_address_alignment))
          throw PlanError(where + ": view offset " + std::to_string(p.offset) +
                          " not aligned to image_base_address_alignment " +
                          std::to_string(dev.image_base_address_alignment));
        const int64_t pitch = detail::pitch_alignment_bytes(r.extent, dev);
        if (p.row_pitch < r.extent.width * r.extent.pixel_bytes || !aligned(p.row_pitch, pitch))
          throw PlanError(where + ": row pitch " + std::to_string(p.row_pitch) + " is not a multiple of " +
                          std::to_string(pitch) + " holding " +
                          std::to_string(r.extent.width * r.extent.pixel_bytes) + " bytes");
      }
      const int64_t end = p.offset + occupied_bytes(r, p);
      if (end > pool.bytes)
        throw PlanError(where + ": ends at " + std::to_string(end) + ", beyond pool size " + std::to_string(pool.bytes));
    }
    members[p.pool].push_back(i);
  }
  for (int k = 0; k < pools; ++k) {
    if (plan.pools[k].kind == Storage::Buffer)
      check_no_overlap(members[k], recs, plan, k);
    else
      check_textures_exclusive(members[k], recs, k);
  }
}

}  // namespace texplan::plan
