#include "cli/trace.h"

#include <algorithm>
#include <cmath>

namespace texplan::cli {

using nlohmann::json;

namespace {

json shapes_json(const std::vector<Shape>& shapes) {
  json a = json::array();
  for (const Shape& s : shapes) a.push_back(s);
  return a;
}

// Microseconds to the nanosecond: the clocks give no finer digits.
double to_ns(double us) { return std::round(us * 1e3) / 1e3; }

// A complete event; ts relative to `origin_us`.
json complete_event(const std::string& name, const std::string& category, int tid, double begin_us, double end_us,
                    double origin_us, json args) {
  return {{"name", name},
          {"cat", category},
          {"ph", "X"},
          {"pid", 1},
          {"tid", tid},
          {"ts", to_ns(begin_us - origin_us)},
          {"dur", to_ns(end_us - begin_us)},
          {"args", std::move(args)}};
}

json metadata_event(const char* name, int tid, json args) {
  json e{{"name", name}, {"ph", "M"}, {"pid", 1}, {"args", std::move(args)}};
  if (tid > 0) e["tid"] = tid;
  return e;
}

}  // namespace

json trace_json(const std::vector<std::vector<runtime::NodeTime>>& runs, const std::string& model,
                const std::string& device) {
  double origin = INFINITY;
  for (const auto& run : runs)
    for (const runtime::NodeTime& t : run) {
      origin = std::min(origin, t.host_begin_us);
      for (const auto& k : t.kernels)
        if (k.end_us > k.begin_us) origin = std::min(origin, k.begin_us);
    }
  if (!std::isfinite(origin)) origin = 0;  // nothing ran
  std::vector<json> host, kernels;
  for (size_t r = 0; r < runs.size(); ++r)
    for (const runtime::NodeTime& t : runs[r]) {
      if (t.launches == 0 && !t.cpu && t.kernels.empty()) continue;  // aliases and constants: no work
      const std::string name = t.node + " (" + t.op + ")";
      json args{{"run", r},
                {"op", t.op},
                {"input_shapes", shapes_json(t.input_shapes)},
                {"output_shapes", shapes_json(t.output_shapes)},
                {"bytes", t.bytes},
                {"flops", t.flops}};
      json host_args = args;
      host_args["launches"] = t.kernels.size();
      if (t.cpu) host_args["cpu"] = true;  // ran on the host: this is its whole run
      host.push_back(complete_event(name, t.cpu ? "cpu" : "enqueue", kTraceHostTrack, t.host_begin_us,
                                    t.host_end_us, origin, std::move(host_args)));
      for (const auto& k : t.kernels) {
        if (!(k.end_us > k.begin_us)) continue;  // the device gave no times for this one
        json kernel_args = args;
        kernel_args["kernel"] = k.name;
        kernels.push_back(
            complete_event(name, "kernel", kTraceDeviceTrack, k.begin_us, k.end_us, origin, std::move(kernel_args)));
      }
    }
  auto by_ts = [](const json& a, const json& b) { return a["ts"].get<double>() < b["ts"].get<double>(); };
  std::stable_sort(host.begin(), host.end(), by_ts);
  std::stable_sort(kernels.begin(), kernels.end(), by_ts);

  json events = json::array();
  events.push_back(metadata_event("process_name", 0, {{"name", "texplan " + model + " on " + device}}));
  events.push_back(metadata_event("thread_name", kTraceHostTrack, {{"name", "host: enqueue per node"}}));
  events.push_back(metadata_event("thread_name", kTraceDeviceTrack, {{"name", "device: kernels"}}));
  events.push_back(metadata_event("thread_sort_index", kTraceHostTrack, {{"sort_index", kTraceHostTrack}}));
  events.push_back(metadata_event("thread_sort_index", kTraceDeviceTrack, {{"sort_index", kTraceDeviceTrack}}));
  for (auto& e : host) events.push_back(std::move(e));
  for (auto& e : kernels) events.push_back(std::move(e));
  return {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
}

}  // namespace texplan::cli
