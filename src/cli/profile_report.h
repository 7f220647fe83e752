// `texplan run --profile`: per-node device times from OpenCL events,
// aggregated per operator type and sorted, with achieved GFLOP/s and GB/s
// against the device's ceilings (runtime/profile.h).
#pragma once
#include <nlohmann/json.hpp>
#include <ostream>
#include <vector>

#include "runtime/profile.h"
#include "runtime/session.h"

namespace texplan::cli {

// Per node the median over `runs` profiled runs (each NodeTime list of the
// same session, same order); `spans_ms` per run its device span
// (Session::last_device_span_ms). JSON: {runs, ceilings{gbps, gflops},
// device_ms, span_ms, idle_ms (span less the kernels: the device waiting
// between launches), enqueue_us, launches, ops[{op, nodes, launches, ms, share,
// gflops, gbps, flop_share_of_ceiling, byte_share_of_ceiling}],
// nodes[{node, op, ms, launches, enqueue_us, flops, bytes, gflops, gbps, cpu}]}
// with ops and nodes sorted by time, longest first.
nlohmann::json profile_report(const std::vector<std::vector<runtime::NodeTime>>& runs,
                              const std::vector<double>& spans_ms, const runtime::Ceilings& ceilings);
// The tables: per op type, then the `top` longest nodes.
void print_profile(const nlohmann::json& report, std::ostream& out, int top = 15);

}  // namespace texplan::cli
