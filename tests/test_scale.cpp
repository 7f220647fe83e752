// Scale (issue 26): import and planning stay linear or n log n in nodes and
// outputs. The two graphs of tests/make_scale_models.sh, built here:
// thousands of Relus of one input, each a graph output (every record live
// with every other: the quadratic case of the offset planners, the order
// heuristics and the importer's output lookup), and a long chain of Relus.
// Each is planned as `texplan plan` plans it (report::plan_model: import,
// optimize with every optimization's share, storage, usage records, every
// strategy, the validator). Times are printed, never asserted; the full
// sizes (40,000 outputs, 1,000,000 nodes) are measured by hand
// (docs/reliability.md).
#include <gtest/gtest.h>

#include <chrono>
#include <iostream>

#include "report/report.h"
#include "onnx_builder.h"
#include "plan/arena.h"

using namespace texplan;
using texplan::test::OnnxBuilder;

namespace {

constexpr int64_t kReluBytes = 16 * 4;  // x and every Relu output: float32 [1, 16]

// x[1,16] -> n Relus reading x, each output a graph output.
std::string outputs_model(int n) {
  OnnxBuilder b;
  b.input("x", {1, 16});
  for (int i = 0; i < n; ++i) b.node("Relu", {"x"}, {"y" + std::to_string(i)}, "r" + std::to_string(i));
  for (int i = 0; i < n; ++i) b.output("y" + std::to_string(i));
  return b.save(texplan::test::temp_dir("scale"), "outputs_" + std::to_string(n));
}

// x[1,16] -> a chain of n Relus; the last one the graph output.
std::string chain_model(int n) {
  OnnxBuilder b;
  b.input("x", {1, 16});
  std::string prev = "x";
  for (int i = 0; i < n; ++i) {
    const std::string out = "t" + std::to_string(i);
    b.node("Relu", {prev}, {out}, "r" + std::to_string(i));
    prev = out;
  }
  b.output(prev);
  return b.save(texplan::test::temp_dir("scale"), "chain_" + std::to_string(n));
}

report::json plan_timed(const std::string& path, const plan::DeviceProfile& dev) {
  const auto t0 = std::chrono::steady_clock::now();
  report::json r = report::plan_model(path, dev, report::PlanOptions{});
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << path << ": planned in " << s << " s (";
  for (const auto& st : r["strategies"]) std::cout << " " << st["name"].get<std::string>() << " " << st["plan_ms"] << " ms";
  std::cout << " )\n";
  return r;
}

void expect_every_plan_valid(const report::json& r) {
  ASSERT_EQ(r["strategies"].size(), plan::strategy_names().size());
  for (const auto& s : r["strategies"]) {
    SCOPED_TRACE(s["name"].get<std::string>());
    EXPECT_FALSE(s.contains("skipped")) << s.value("error", "");
    EXPECT_TRUE(s["valid"].get<bool>()) << s.value("error", "");
    EXPECT_GE(s["total_bytes"].get<int64_t>(), r["lower_bound_bytes"].get<int64_t>());
  }
}

int64_t total_of(const report::json& r, const std::string& strategy) {
  for (const auto& s : r["strategies"])
    if (s["name"] == strategy) return s["total_bytes"];
  ADD_FAILURE() << "no strategy " << strategy;
  return -1;
}

}  // namespace

// The reported case: 40,000 graph outputs took 345 s and 3.5 GB to plan.
TEST(Scale, FortyThousandOutputsOfOneInput) {
  constexpr int n = 40000;
  const plan::DeviceProfile dev = plan::DeviceProfile::load("pocl");
  const report::json r = plan_timed(outputs_model(n), dev);
  EXPECT_EQ(r["nodes"], n);
  EXPECT_EQ(r["records"], n + 1);
  // At the last Relu, x and every output are live.
  EXPECT_EQ(r["lower_bound_bytes"], (n + 1) * kReluBytes);
  EXPECT_EQ(r["raw_lower_bound_bytes"], (n + 1) * kReluBytes);
  expect_every_plan_valid(r);
  // One pool per tensor, or one arena of every tensor at its aligned size:
  // none can share, as all are live at the end.
  EXPECT_EQ(total_of(r, "naive"), (n + 1) * kReluBytes);
  EXPECT_EQ(total_of(r, "tvm-tokens"), (n + 1) * kReluBytes);
  const int64_t aligned = (kReluBytes + dev.mem_base_addr_align - 1) / dev.mem_base_addr_align * dev.mem_base_addr_align;
  for (const char* arena : {"greedy-by-size", "greedy-by-breadth", "best", "tvm-texture-pools", "texture-views"})
    EXPECT_EQ(total_of(r, arena), (n + 1) * aligned) << arena;
}

// A chain (1,000,000 nodes took 78 s): fused 32 Relus a node, in place.
TEST(Scale, ChainOfTwoHundredThousandRelus) {
  constexpr int n = 200000;
  const report::json r = plan_timed(chain_model(n), plan::DeviceProfile::load("pocl"));
  EXPECT_EQ(r["optimization"]["nodes_before"], n);
  // Each Relu reads one 64-byte tensor and writes the next: two live at once.
  EXPECT_EQ(r["raw_lower_bound_bytes"], 2 * kReluBytes);
  EXPECT_EQ(r["lower_bound_bytes"], 2 * kReluBytes);
  expect_every_plan_valid(r);
  EXPECT_EQ(total_of(r, "best"), 2 * 128);  // two tensors at PoCL's 128-byte alignment
}

// ImportOptions::max_nodes refuses a larger graph right after parsing.
TEST(Scale, MaxNodesRefusesLargerGraphs) {
  EXPECT_EQ(ImportOptions{}.max_nodes, 1000000);
  const std::string path = chain_model(1001);
  ImportOptions at_limit, below;
  at_limit.max_nodes = 1001;
  below.max_nodes = 1000;
  EXPECT_EQ(import_onnx(path, at_limit).nodes.size(), 1001u);
  try {
    import_onnx(path, below);
    ADD_FAILURE() << "a graph of 1001 nodes imported with max_nodes 1000";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("1001 nodes, more than the 1000"), std::string::npos) << e.what();
  }
}

// sweep_offsets, the planners' way with dense problems, gives exactly the
// plan of place_in_order in first-step order (what its comment promises),
// on random lifetimes, sizes and alignments.
TEST(Scale, SweepOffsetsEqualsBestFitInFirstStepOrder) {
  using namespace texplan::plan::detail;
  uint64_t state = 12345;
  auto next = [&](uint64_t below) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return int64_t((state >> 33) % below);
  };
  for (int round = 0; round < 200; ++round) {
    std::vector<ArenaItem> items(1 + next(300));
    for (auto& it : items) {
      it.first = int32_t(next(100));
      it.last = it.first + int32_t(next(round % 2 ? 100 : 5));
      it.align = round % 3 == 0 ? 1 : int64_t{1} << next(8);
      it.size = next(10) == 0 ? 0 : round_up(1 + next(5000), round % 4 == 0 ? it.align : 1);
    }
    const ArenaProblem p(items);
    const ArenaPlan sweep = sweep_offsets(p);
    const ArenaPlan greedy = place_in_order(p, order_by(p, [&](int32_t i) { return p.item(i).first; }), Fit::Best);
    ASSERT_EQ(sweep.offsets, greedy.offsets) << "round " << round;
    ASSERT_EQ(sweep.total, greedy.total) << "round " << round;
  }
}
