// Kernel tuning: per device and per node shape, the kernel variant (register
// block, work-group size) found fastest once and remembered in the tuning
// cache (lower/tuning_cache.h, section "texplan"), so later runs load the
// choice and search nothing.
//
//   TuningCache cache("tune.json");
//   { TuningScope scope(&cache, /*search=*/true, *dev);   // texplan tune
//     Session s(g, pin, plan, dev); }                      // lowerings measure here
//   cache.save();
//   { TuningScope scope(&cache, false, *dev); Session s(...); }  // texplan run --tuning-cache
//
// Lowerings ask choose_variant() while a Session is being built; with no
// scope (or no entry and no search) they get their shape heuristic.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "device/device.h"
#include "lower/tuning_cache.h"

namespace texplan::lower {

// The cache's key for a device: its name and driver version.
std::string tuning_device_key(const runtime::DeviceInfo& d);

struct TuningStats {
  int searched = 0;  // nodes measured in this scope
  int cached = 0;    // nodes whose choice came from the cache
};

// While one lives (on this thread), lowerings read and write `cache` for
// `dev`; `search` measures candidates of shapes the cache lacks. Scopes nest.
class TuningScope {
 public:
  TuningScope(TuningCache* cache, bool search, runtime::Device& dev);
  ~TuningScope();
  TuningScope(const TuningScope&) = delete;
  TuningScope& operator=(const TuningScope&) = delete;
  const TuningStats& stats() const { return stats_; }
  // Called after each searched node: (nodes searched so far, its key).
  std::function<void(int, const std::string&)> on_search;

 private:
  friend int choose_variant(const std::string&, const std::vector<std::string>&, int,
                            const std::function<double(int)>&);
  friend runtime::Device* tuning_device();
  TuningCache* cache_;
  bool search_;
  runtime::Device& dev_;
  std::string device_key_;
  TuningStats stats_;
  TuningScope* outer_;
};

// Index of the variant to use for shape `key` among `names`: the cached
// winner; else, when searching, the fastest by `measure(i)` (milliseconds;
// negative: the candidate cannot run; on CPU devices the best of 3
// interleaved rounds), stored in the cache; else `fallback`.
int choose_variant(const std::string& key, const std::vector<std::string>& names, int fallback,
                   const std::function<double(int)>& measure);

// The device of the innermost scope (null outside any): for measuring.
runtime::Device* tuning_device();

// Milliseconds of prepared launches enqueued back to back (a node's passes,
// e.g. split-K's zero, slices and epilogue): a warm-up, then the best of
// `reps` runs timed with profiling events on the device's profiling queue,
// the first one's start to the last one's end, gaps between them included.
// Lowerings call it through time_candidate (ops.h).
struct TimedLaunch {
  cl_kernel kernel;
  cl_uint dims;
  const size_t* global;
  const size_t* local;  // null: the driver's choice
};
double time_launches(runtime::Device& dev, const std::vector<TimedLaunch>& launches, int reps = 3);

}  // namespace texplan::lower
