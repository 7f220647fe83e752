// Lower bound of any plan for this execution order: the peak over steps of
// the bytes live at that step. Sweep over +bytes at `first` and -bytes
// after `last`; at equal steps frees (of records that ended the step
// before) come first, so they never inflate the peak. O(n log n). Throws
// PlanError on negative sizes or sums beyond 64 bits.
#include <algorithm>

#include "plan/memory_plan.h"

namespace texplan::plan {

namespace {

// Peak of the running sum of (step, delta) events, sorted here: at equal
// steps negative deltas (frees) come first.
int64_t peak_of(std::vector<std::pair<int64_t, int64_t>>& events) {
  std::sort(events.begin(), events.end());
  int64_t live = 0, peak = 0;
  for (const auto& [step, delta] : events) {
    if (__builtin_add_overflow(live, delta, &live)) throw PlanError("sizes of the records overflow 64-bit sums");
    peak = std::max(peak, live);
  }
  return peak;
}

// `footprint`: a texture's bytes; null counts width * height * pixel_bytes.
int64_t peak_bytes(const std::vector<UsageRecord>& recs, const DeviceProfile* footprint) {
  std::vector<std::pair<int64_t, int64_t>> events;  // (step, delta)
  events.reserve(2 * recs.size());
  auto overflow = [](const UsageRecord& r) {
    return PlanError("record '" + r.name + "': sizes overflow 64-bit sums");
  };
  for (const UsageRecord& r : recs) {
    int64_t bytes = r.bytes;
    if (r.storage == Storage::Texture &&
        (__builtin_mul_overflow(r.extent.width, r.extent.height, &bytes) ||
         __builtin_mul_overflow(bytes, r.extent.pixel_bytes, &bytes)))
      throw overflow(r);
    if (r.storage == Storage::Texture && footprint) bytes = texture_footprint_bytes(r.extent, *footprint);
    if (bytes < 0) throw PlanError("record '" + r.name + "': negative size");
    events.emplace_back(r.first, bytes);
    events.emplace_back(int64_t{r.last} + 1, -bytes);
  }
  return peak_of(events);
}

}  // namespace

int64_t lower_bound_bytes(const std::vector<UsageRecord>& recs) { return peak_bytes(recs, nullptr); }

int64_t lower_bound_bytes(const std::vector<UsageRecord>& recs, const DeviceProfile& dev) {
  return peak_bytes(recs, &dev);
}

int64_t lifetimes_lower_bound_bytes(const std::vector<Lifetime>& lifetimes) {
  std::vector<std::pair<int64_t, int64_t>> events;
  events.reserve(2 * lifetimes.size());
  for (const Lifetime& l : lifetimes) {
    if (l.bytes < 0) throw PlanError("a lifetime of negative size");
    events.emplace_back(l.first, l.bytes);
    events.emplace_back(int64_t{l.last} + 1, -l.bytes);
  }
  return peak_of(events);
}

}  // namespace texplan::plan
