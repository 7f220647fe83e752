// texplan tune and run --tuning-cache / --profile through the CLI, on
// examples/models/tiny_cnn and PoCL: a tuned run gives the reference's
// outputs, a second tune finds every shape cached, the profile names its
// operators with rates.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "shell.h"

namespace {

const std::string kModel = std::string(TEXPLAN_SOURCE_DIR) + "/examples/models/tiny_cnn";

texplan::test::ShellResult cli(const std::string& args) {
  return texplan::test::sh(std::string(TEXPLAN_CLI) + " " + args + " 2>&1");
}

nlohmann::json read_json(const std::filesystem::path& p) { return nlohmann::json::parse(std::ifstream(p)); }

}  // namespace

TEST(CliTune, SecondTuneFindsEverythingCachedAndTunedRunsMatch) {
  auto dir = std::filesystem::temp_directory_path() / ("texplan-tune-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string cache = (dir / "tuning.json").string();

  auto first = cli("tune " + kModel + " --tuning-cache " + cache + " --check --json " + (dir / "t1.json").string());
  ASSERT_EQ(first.code, 0) << first.out;
  nlohmann::json t1 = read_json(dir / "t1.json");
  EXPECT_GT(t1["tuning"]["searched"].get<int>(), 0) << first.out;
  EXPECT_LE(t1["rel_error"].get<double>(), 1e-4);
  nlohmann::json c = read_json(cache);
  EXPECT_EQ(c["format"], "texplan-tuning-cache-1");
  ASSERT_TRUE(c.contains("texplan"));

  auto second = cli("tune " + kModel + " --tuning-cache " + cache + " --json " + (dir / "t2.json").string());
  ASSERT_EQ(second.code, 0) << second.out;
  nlohmann::json t2 = read_json(dir / "t2.json");
  EXPECT_EQ(t2["tuning"]["searched"].get<int>(), 0) << second.out;
  EXPECT_EQ(t2["tuning"]["cached"].get<int>(), t1["tuning"]["searched"].get<int>());

  auto run = cli("run " + kModel + " --tuning-cache " + cache + " --check --output " + (dir / "tuned").string());
  ASSERT_EQ(run.code, 0) << run.out;
  EXPECT_NE(run.out.find("0 node shape(s) measured"), std::string::npos) << run.out;
  auto plain = cli("run " + kModel + " --check --output " + (dir / "plain").string());
  ASSERT_EQ(plain.code, 0) << plain.out;

  auto missing = cli("tune " + kModel);
  EXPECT_NE(missing.code, 0);
  EXPECT_NE(missing.out.find("--tuning-cache"), std::string::npos) << missing.out;
  std::filesystem::remove_all(dir);
}

TEST(CliTune, ProfileReportsOperatorsWithRates) {
  auto dir = std::filesystem::temp_directory_path() / ("texplan-profile-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto r = cli("run " + kModel + " --profile --json " + (dir / "p.json").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("GFLOP/s"), std::string::npos) << r.out;
  nlohmann::json p = read_json(dir / "p.json")["profile"];
  EXPECT_GT(p["ceilings"]["gbps"].get<double>(), 0);
  EXPECT_GT(p["ceilings"]["gflops"].get<double>(), 0);
  EXPECT_GT(p["launches"].get<int>(), 0);
  // The span holds every kernel: at least their sum, the rest idle.
  EXPECT_GE(p["span_ms"].get<double>(), p["device_ms"].get<double>() * (1 - 1e-6)) << p.dump(1);
  EXPECT_NEAR(p["idle_ms"].get<double>(), p["span_ms"].get<double>() - p["device_ms"].get<double>(), 1e-6);
  ASSERT_FALSE(p["ops"].empty());
  double share = 0, last = 1e300;
  bool conv_flops = false;
  for (const auto& o : p["ops"]) {
    share += o["share"].get<double>();
    EXPECT_LE(o["ms"].get<double>(), last);  // sorted, longest first
    last = o["ms"].get<double>();
    if (o["op"].get<std::string>().find("Conv") != std::string::npos) conv_flops = o["flops"].get<double>() > 0;
  }
  EXPECT_NEAR(share, 1.0, 1e-6);
  EXPECT_TRUE(conv_flops) << p.dump(1);
  std::filesystem::remove_all(dir);
}
