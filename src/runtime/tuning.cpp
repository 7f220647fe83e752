#include "runtime/tuning.h"

#include <algorithm>

namespace texplan::runtime {

namespace {
thread_local TuningScope* innermost = nullptr;
}

std::string tuning_device_key(const DeviceInfo& d) { return d.name + " | " + d.driver; }

TuningScope::TuningScope(TuningCache* cache, bool search, Device& dev)
    : cache_(cache), search_(search), dev_(dev), device_key_(tuning_device_key(dev.info())), outer_(innermost) {
  innermost = this;
}

TuningScope::~TuningScope() { innermost = outer_; }

Device* tuning_device() { return innermost ? &innermost->dev_ : nullptr; }

int choose_variant(const std::string& key, const std::vector<std::string>& names, int fallback,
                   const std::function<double(int)>& measure) {
  TuningScope* s = innermost;
  if (!s || !s->cache_ || names.size() < 2) return fallback;
  nlohmann::json& entry = s->cache_->entry("texplan", s->device_key_);
  if (auto it = entry.find(key); it != entry.end() && it->is_object()) {
    auto name = it->value("variant", std::string());
    auto pos = std::find(names.begin(), names.end(), name);
    if (pos != names.end()) {
      ++s->stats_.cached;
      return int(pos - names.begin());
    }
  }
  if (!s->search_) return fallback;
  int best = fallback;
  double best_ms = 1e300;
  nlohmann::json times = nlohmann::json::object();
  for (int i = 0; i < int(names.size()); ++i) {
    double ms = measure(i);
    if (ms < 0) continue;
    times[names[size_t(i)]] = ms;
    if (ms < best_ms) best_ms = ms, best = i;
  }
  entry[key] = {{"variant", names[size_t(best)]}, {"ms", times}};
  s->cache_->mark_dirty();
  ++s->stats_.searched;
  if (s->on_search) s->on_search(s->stats_.searched, key);
  return best;
}

double time_launch(Device& dev, cl_kernel k, cl_uint dims, const size_t* global, const size_t* local, int reps) {
  cl_command_queue q = dev.profiling_queue();
  double best = -1;
  for (int r = 0; r <= reps; ++r) {
    cl_event e = nullptr;
    cl_int s = clEnqueueNDRangeKernel(q, k, dims, nullptr, global, local, 0, nullptr, &e);
    if (s != CL_SUCCESS) {
      clFinish(q);
      return -1;  // e.g. a work-group size the device refuses: not a candidate
    }
    s = clWaitForEvents(1, &e);
    cl_ulong t0 = 0, t1 = 0;
    if (s == CL_SUCCESS) s = clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_START, sizeof t0, &t0, nullptr);
    if (s == CL_SUCCESS) s = clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_END, sizeof t1, &t1, nullptr);
    clReleaseEvent(e);
    if (s != CL_SUCCESS) throw Error(std::string("tuning: timing a kernel: ") + cl_error_name(s));
    double ms = double(t1 - t0) * 1e-6;
    if (r > 0 && (best < 0 || ms < best)) best = ms;  // run 0 warms up (PoCL compiles per work-group size)
  }
  return best;
}

}  // namespace texplan::runtime
