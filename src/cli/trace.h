// `texplan run --profile --trace FILE.json`: the profiled runs as a Chrome
// trace (Trace Event Format, as onnxruntime's profiler writes it), which
// Perfetto (ui.perfetto.dev) and chrome://tracing open.
//
//   json t = trace_json(runs, "tiny_cnn", "pthread-cpu (Portable Computing Language)");
//   write_file("tiny_cnn.trace.json", t.dump());
//
// One process with two tracks (threads): tid 1 "host" holds each node's
// enqueue (a CPU fallback node's whole run), tid 2 "device" each kernel's
// time on the device. Both are complete events ("ph": "X") named
// "NODE (OP)", with ts and dur in microseconds from the trace's first
// event, sorted by ts per track; args: run, op, kernel (device track),
// input_shapes, output_shapes, bytes and flops (runtime/profile.h:
// node_cost). Metadata events ("ph": "M") name the process and tracks.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runtime/session.h"

namespace texplan::cli {

inline constexpr int kTraceHostTrack = 1, kTraceDeviceTrack = 2;

// `runs`: Session::node_times() of each profiled run, in run order.
nlohmann::json trace_json(const std::vector<std::vector<runtime::NodeTime>>& runs, const std::string& model,
                          const std::string& device);

}  // namespace texplan::cli
