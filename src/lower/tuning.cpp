#include "lower/tuning.h"

#include <algorithm>

namespace texplan::lower {

namespace {
thread_local TuningScope* innermost = nullptr;
}

std::string tuning_device_key(const runtime::DeviceInfo& d) { return d.name + " | " + d.driver; }

TuningScope::TuningScope(TuningCache* cache, bool search, runtime::Device& dev)
    : cache_(cache), search_(search), dev_(dev), device_key_(tuning_device_key(dev.info())), outer_(innermost) {
  innermost = this;
}

TuningScope::~TuningScope() { innermost = outer_; }

runtime::Device* tuning_device() { return innermost ? &innermost->dev_ : nullptr; }

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
  // On CPU devices, whose speed moves with the machine's other tenants, the
  // candidates are timed in 3 interleaved rounds and each keeps its best,
  // so that a slow moment cannot pick the variant that happened to run
  // outside it (docs/kernel-choices.md#tuning-on-cpu-devices-in-interleaved-rounds).
  const int rounds = s->dev_.info().type == "cpu" ? 3 : 1;
  std::vector<double> best_of(names.size(), -1.0);
  for (int r = 0; r < rounds; ++r)
    for (int i = 0; i < int(names.size()); ++i) {
      if (r > 0 && best_of[size_t(i)] < 0) continue;  // cannot run
      const double ms = measure(i);
      if (ms >= 0 && (best_of[size_t(i)] < 0 || ms < best_of[size_t(i)])) best_of[size_t(i)] = ms;
    }
  int best = fallback;
  double best_ms = 1e300;
  nlohmann::json times = nlohmann::json::object();
  for (int i = 0; i < int(names.size()); ++i) {
    const double ms = best_of[size_t(i)];
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

double time_launches(runtime::Device& dev, const std::vector<TimedLaunch>& launches, int reps) {
  cl_command_queue q = dev.profiling_queue();
  double best = -1;
  for (int r = 0; r <= reps; ++r) {
    std::vector<cl_event> events(launches.size(), nullptr);
    for (size_t i = 0; i < launches.size(); ++i) {
      const TimedLaunch& l = launches[i];
      cl_int s = clEnqueueNDRangeKernel(q, l.kernel, l.dims, nullptr, l.global, l.local, 0, nullptr, &events[i]);
      if (s != CL_SUCCESS) {
        clFinish(q);
        for (cl_event e : events)
          if (e) clReleaseEvent(e);
        return -1;  // e.g. a work-group size the device refuses: not a candidate
      }
    }
    if (events.empty()) return 0;
    cl_int s = clWaitForEvents(cl_uint(events.size()), events.data());
    cl_ulong t0 = 0, t1 = 0;
    if (s == CL_SUCCESS) s = clGetEventProfilingInfo(events.front(), CL_PROFILING_COMMAND_START, sizeof t0, &t0, nullptr);
    if (s == CL_SUCCESS) s = clGetEventProfilingInfo(events.back(), CL_PROFILING_COMMAND_END, sizeof t1, &t1, nullptr);
    for (cl_event e : events) clReleaseEvent(e);
    if (s != CL_SUCCESS) throw Error(std::string("tuning: timing a kernel: ") + runtime::cl_error_name(s));
    double ms = double(t1 - t0) * 1e-6;
    if (r > 0 && (best < 0 || ms < best)) best = ms;  // run 0 warms up (PoCL compiles per work-group size)
  }
  return best;
}

}  // namespace texplan::lower
