// texplan plan/run --patch (docs/patching.md) from the command line: the
// report's patching fields, the plan reaching the patched bound, a patched
// run checked and guarded, and settings refused as usage errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "shell.h"

using nlohmann::json;

namespace {
const std::string kCli = TEXPLAN_CLI;
const std::string kTiny = std::string(TEXPLAN_SOURCE_DIR) + "/examples/models/tiny_cnn";
const std::string kSqueezenet = std::string(TEXPLAN_MODELS_DIR) + "/squeezenet1_1";
}  // namespace

TEST(CliPatch, PlanReportsBothBoundsAndReachesThePatchedOne) {
  if (!std::filesystem::exists(kSqueezenet)) GTEST_SKIP() << "no model zoo at " << TEXPLAN_MODELS_DIR;
  auto r = texplan::test::sh(kCli + " plan " + kSqueezenet + " --patch auto --strategy best --json - -q", false);
  ASSERT_EQ(r.code, 0) << r.out;
  const json j = json::parse(r.out);
  const json& p = j["patching"];
  ASSERT_TRUE(p["applied"].get<bool>()) << p.dump();
  EXPECT_EQ(p["mode"], "auto");
  EXPECT_LT(p["bound_ratio"].get<double>(), 0.6);
  EXPECT_EQ(p["bound_with_bytes"], j["lower_bound_bytes"]);
  EXPECT_GT(p["extra_flops_pct"].get<double>(), 0.0);
  ASSERT_GE(p["segments"].size(), 1u);
  EXPECT_EQ(p["segments"][0]["first_node"], 0);
  EXPECT_EQ(p["copy_bytes"], 0);  // crops are windows, tiles written in place
  EXPECT_EQ(p["copies"].size(), 0u) << p["copies"].dump();
  const json& best = j["strategies"][0];
  EXPECT_TRUE(best["valid"].get<bool>());
  EXPECT_LE(best["total_bytes"].get<double>(), 1.01 * j["lower_bound_bytes"].get<double>());
}

TEST(CliPatch, PatchedRunMatchesTheReference) {
  auto r = texplan::test::sh(kCli + " run " + kTiny + " --patch 3x3 --check --guard");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("patching 3x3 over nodes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("guard       clean"), std::string::npos) << r.out;
}

TEST(CliPatch, BadSettingsAreUsageErrors) {
  for (const char* bad : {"0x3", "4", "on", "17x17"}) {
    auto r = texplan::test::sh(kCli + " plan " + kTiny + " --patch " + bad);
    EXPECT_EQ(r.code, 2) << bad << ": " << r.out;
    EXPECT_NE(r.out.find("expected off, auto, or a grid RxC"), std::string::npos) << r.out;
  }
  auto r = texplan::test::sh(kCli + " run " + kTiny + " --device cpu --patch auto");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("--patch runs on OpenCL devices"), std::string::npos) << r.out;
}
