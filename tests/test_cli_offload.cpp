// Offload to CLBlast (src/offload) as a user runs it: partition reports,
// correctness and guard on PoCL for every zoo model with weights, memory
// (pools grow by planned scratch at most), auto's per-node choice and its
// tuning cache, and the fallback when CLBlast rejects a call.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "offload/offload.h"
#include "onnx_builder.h"
#include "shell.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using Result = texplan::test::ShellResult;

Result run_cli(const std::string& args) { return texplan::test::sh(std::string(TEXPLAN_CLI) + " " + args); }

json read_json(const fs::path& p) {
  std::ifstream f(p);
  return json::parse(f);
}

fs::path model_dir(const std::string& name) { return fs::path(TEXPLAN_MODELS_DIR) / name; }

bool has_weights(const std::string& name) {
  return fs::exists(model_dir(name) / (name + ".onnx.data"));
}

bool built_with_clblast() { return !texplan::offload::library_version().empty(); }

}  // namespace

TEST(CliOffload, PlanPrintsThePartitionAndPlansScratch) {
  if (!built_with_clblast()) GTEST_SKIP() << "built without CLBlast";
  const std::string m = model_dir("squeezenet1_1").string();
  if (!fs::exists(m)) GTEST_SKIP() << "no " << m;
  auto out = texplan::test::temp_dir("offload-plan") / "plan.json";
  Result r = run_cli("plan " + m + " --strategy best --offload clblast --json " + out.string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("-> clblast"), std::string::npos) << r.out;
  json j = read_json(out);
  ASSERT_TRUE(j.contains("partition"));
  ASSERT_FALSE(j["offloaded_nodes"].empty());
  int scratch = 0;
  for (const auto& t : j["strategies"][0]["tensors"])
    if (t["op"] == "scratch") {
      ++scratch;
      EXPECT_EQ(t["first"], t["last"]) << t["name"];  // live during its node only
    }
  EXPECT_GT(scratch, 0);
  EXPECT_TRUE(j["strategies"][0]["valid"].get<bool>());
  for (const auto& n : j["partition"]["nodes"])
    if (n["target"] == "texplan") {
      EXPECT_FALSE(n["reason"].get<std::string>().empty()) << n["node"];
    }
}

// Each model: once with texplan's kernels, once with every node the pattern
// table takes in CLBlast (unet_small: one node, as CLBlast's GEMM on PoCL
// needs about 27 s for the whole model).
TEST(CliOffload, EveryModelWithWeightsIsCorrectAndGuardCleanOnPocl) {
  if (!built_with_clblast()) GTEST_SKIP() << "built without CLBlast";
  int ran = 0;
  for (std::string name : {"squeezenet1_1", "mobilenet_v2", "shufflenet_v2_x1_0", "efficientnet_b0", "unet_small",
                           "bert_mini"}) {
    if (!has_weights(name)) {
      std::printf("skipping %s: no weights in %s\n", name.c_str(), TEXPLAN_MODELS_DIR);
      continue;
    }
    SCOPED_TRACE(name);
    auto dir = texplan::test::temp_dir("offload-" + name);
    const std::string m = model_dir(name).string();
    Result none = run_cli("run " + m + " --offload none --json " + (dir / "none.json").string());
    ASSERT_EQ(none.code, 0) << none.out;
    const std::string only = name == "unet_small" ? " --offload-only /m/b/b.0/" : "";
    Result lib = run_cli("run " + m + " --offload clblast" + only + " --check --guard --json " +
                         (dir / "clblast.json").string());
    ASSERT_EQ(lib.code, 0) << lib.out;
    json a = read_json(dir / "none.json"), b = read_json(dir / "clblast.json");
    EXPECT_LE(b["rel_error"].get<double>(), 1e-4);
    EXPECT_EQ(b["guard_violations"].get<int>(), 0);
    EXPECT_FALSE(b["offloaded_nodes"].empty());
    EXPECT_TRUE(a["offloaded_nodes"].empty());
    EXPECT_EQ(b["offloaded_nodes"].size(), b["partition"]["offloaded_nodes"].size());
    // Memory: the pools grow by the planned scratch at most.
    EXPECT_LE(b["activation_bytes"].get<int64_t>(),
              a["activation_bytes"].get<int64_t>() + b["partition"]["scratch_bytes"].get<int64_t>());
    ++ran;
  }
  if (ran == 0) GTEST_SKIP() << "no model with weights in " << TEXPLAN_MODELS_DIR;
}

TEST(CliOffload, AutoKeepsTheFasterPerNodeAndCachesTheMeasurement) {
  if (!built_with_clblast()) GTEST_SKIP() << "built without CLBlast";
  if (!has_weights("squeezenet1_1")) GTEST_SKIP() << "no squeezenet1_1 weights in " << TEXPLAN_MODELS_DIR;
  auto dir = texplan::test::temp_dir("offload-auto");
  const std::string m = model_dir("squeezenet1_1").string(), cache = (dir / "tuning.json").string();
  Result r = run_cli("run " + m + " --offload auto --check --bench 1 --tuning-cache " + cache + " --json " +
                     (dir / "1.json").string());
  ASSERT_EQ(r.code, 0) << r.out;
  json first = read_json(dir / "1.json");
  int measured = 0;
  for (const auto& n : first["partition"]["nodes"]) {
    if (!n.contains("clblast_ms")) continue;
    ++measured;
    double lib = n["clblast_ms"], own = n["texplan_ms"];
    EXPECT_EQ(n["target"].get<std::string>(), lib < own ? "clblast" : "texplan") << n["node"];
  }
  EXPECT_GT(measured, 0);
  // Measured before the final plan: only the nodes auto gives CLBlast bring scratch.
  Result none = run_cli("run " + m + " --offload none --json " + (dir / "none.json").string());
  ASSERT_EQ(none.code, 0) << none.out;
  EXPECT_LE(first["activation_bytes"].get<int64_t>(), read_json(dir / "none.json")["activation_bytes"].get<int64_t>() +
                                                          first["partition"]["scratch_bytes"].get<int64_t>());
  EXPECT_GE(first["partition_ms"]["clblast"].get<double>(), 0.0);  // --bench: time per partition
  EXPECT_GT(first["partition_ms"]["texplan"].get<double>(), 0.0);
  json c = read_json(cache);
  EXPECT_EQ(c["format"], "texplan-tuning-cache-1");
  ASSERT_TRUE(c.contains("clblast"));
  // The second run decides from the cache: the same partition, no new measurement.
  Result again = run_cli("run " + m + " --offload auto --check --tuning-cache " + cache + " --json " +
                         (dir / "2.json").string());
  ASSERT_EQ(again.code, 0) << again.out;
  json second = read_json(dir / "2.json");
  EXPECT_EQ(second["offloaded_nodes"], first["offloaded_nodes"]);
  EXPECT_LE(second["rel_error"].get<double>(), 1e-4);
}

// --offload-reject passes CLBlast an invalid leading dimension, so the
// library itself returns an error status: while preparing (the node stays on
// texplan), or with "run" only during the run (the node switches over).
TEST(CliOffload, RejectedCallsFallBackToTexplanWithOneWarning) {
  if (!built_with_clblast()) GTEST_SKIP() << "built without CLBlast";
  if (!has_weights("squeezenet1_1")) GTEST_SKIP() << "no squeezenet1_1 weights in " << TEXPLAN_MODELS_DIR;
  auto dir = texplan::test::temp_dir("offload-reject");
  const std::string m = model_dir("squeezenet1_1").string();
  for (std::string when : {"prepare", "run"}) {
    SCOPED_TRACE(when);
    auto out = dir / (when + ".json");
    Result r = run_cli("run " + m + " --offload clblast --offload-reject " + when + " --check --guard --json " +
                       out.string());
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("warning: node"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("CLBlast rejected Gemm"), std::string::npos) << r.out;
    json j = read_json(out);
    EXPECT_LE(j["rel_error"].get<double>(), 1e-4);
    EXPECT_EQ(j["guard_violations"].get<int>(), 0);
    if (when == "prepare") {
      EXPECT_TRUE(j["offloaded_nodes"].empty());
    }
  }
}
