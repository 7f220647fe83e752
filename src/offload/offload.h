// Offload to a vendor-tuned library (CLBlast) in texplan's own OpenCL
// context: the partitioner picks the nodes the library runs (GEMM-shaped
// work), their scratch space becomes usage records the planner places like
// any tensor, and the session runs them on its queue over the planned pools.
//
//   offload::Offloader off(offload::Mode::Auto, device, &cache);
//   PlanInput pin = make_usage_records(g);
//   off.partition(g, pin);                      // before planning: adds scratch records
//   plan::MemoryPlan plan = plan::plan_memory(pin.records, profile, "best");
//   runtime::SessionOptions so; so.offload = shared_ptr to `off`;
//   runtime::Session s(g, pin, plan, device, so);   // prepares (auto: measures) per node
//   off.report();                               // partition, measurements, scratch bytes
//
// Promises: an offloaded node reads and writes only its planned tensors and
// its planned scratch records (no library allocation: routines that would
// allocate are not used); when the library is absent (a build without
// CLBlast) or rejects a call, the node runs on texplan's kernel after one
// warning on stderr, never with a wrong result. One Offloader serves one
// graph (node indices key its decisions), in any number of sessions.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "lower/tuning_cache.h"
#include "optimize/usage.h"
#include "runtime/offload_hook.h"

namespace texplan::offload {

// none: texplan's kernels only; clblast: every node the pattern table and
// the cost rule accept; auto: those of them that measure faster in CLBlast.
enum class Mode { None, Clblast, Auto };
Mode parse_mode(const std::string& s);  // throws Error on another name
const char* to_string(Mode m);

// "CLBlast 1.5.3" when texplan was built with it, "" otherwise.
std::string library_version();

// Narrowing for debugging and tests, given on the command line (`texplan
// run --offload-only`, `--offload-reject`).
struct OffloadOptions {
  // Offload only nodes whose names contain one of these parts (empty: every
  // node the pattern table and the cost rule accept).
  std::vector<std::string> only;
  // When CLBlast must reject every call, to test the fallback: None, while
  // preparing (the node stays on texplan), or during the run (the trial call
  // while preparing is skipped, so the node switches over mid-run). Each
  // call is made invalid (a zero leading dimension), so the library itself
  // rejects it.
  enum class Reject { None, Prepare, Run } reject = Reject::None;
};
// "prepare" or "run" (throws Error on another word).
OffloadOptions::Reject parse_reject(const std::string& s);

// One node the pattern table matched, and where it runs.
struct NodeChoice {
  int node = 0;
  std::string name, op;
  std::string routine;      // "gemm", "im2col+gemm", "gemm (1x1 conv)", "gemm x<batch>"
  std::string target;       // "clblast" or "texplan"
  std::string reason;       // why texplan keeps it / how auto decided
  double flops = 0;
  double texplan_ms = -1, clblast_ms = -1;  // auto's measurement (or the cached one)
  std::vector<int> scratch;  // usage records of its scratch space
};

class Offloader : public runtime::Offloader {
 public:
  // `device` sizes CLBlast's GEMM scratch exactly (null, as for `texplan
  // plan` on a profile: an upper bound). `cache` (may be null) holds
  // CLBlast's tuned parameters and auto's measurements, section "clblast".
  Offloader(Mode mode, std::shared_ptr<runtime::Device> device, lower::TuningCache* cache,
            OffloadOptions options = {});
  ~Offloader() override;

  Mode mode() const { return mode_; }
  // Matches the pattern table and the cost rule over `g`, and appends the
  // scratch usage records of the chosen nodes to `pin` (first = last = the
  // node's step). Call once, before planning.
  void partition(const Graph& g, PlanInput& pin);
  const std::vector<NodeChoice>& choices() const { return choices_; }
  int64_t scratch_bytes() const;  // sum of the scratch records' sizes
  // Auto: some chosen node has no measurement yet (none in the tuning cache).
  // Measure them with a Session over a plan of this partition, then
  // partition and plan again: nodes texplan keeps then get no scratch.
  bool needs_measurement() const;
  // {mode, library, tuned, nodes[], offloaded_nodes[], scratch_bytes}
  nlohmann::json report() const;

  // Produces CLBlast's tuned GEMM parameters for the device (a small search,
  // `fraction` of each tuner's space) and stores them in the cache; later
  // Offloaders load them. Returns a line saying what was tuned.
  std::string tune(double fraction);

  std::unique_ptr<runtime::OffloadedNode> prepare(const runtime::OffloadRequest& r) override;

 private:
  nlohmann::json& measurement(const Graph& g, const Node& n);
  static bool decide(NodeChoice& c, const nlohmann::json& m);
  struct Impl;
  bool selected(const std::string& node) const;  // by options_.only
  Mode mode_;
  OffloadOptions options_;
  std::shared_ptr<runtime::Device> device_;
  lower::TuningCache* cache_;
  std::vector<NodeChoice> choices_;
  std::vector<int> choice_of_node_;  // node -> index in choices_, -1
  std::unique_ptr<Impl> impl_;
};

// The partition as text lines ("  node (op)  -> clblast  gemm ...").
void print_partition(const nlohmann::json& report, std::ostream& out);

}  // namespace texplan::offload
