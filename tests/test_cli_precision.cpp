// texplan run --precision through the CLI on PoCL (no tensor cores): tf32
// warns once, runs exact fp32 and reports the precision it used.
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

}  // namespace

TEST(CliPrecision, Tf32WithoutTensorCoresWarnsAndRunsExactFp32) {
  auto json = std::filesystem::temp_directory_path() / ("texplan-precision-" + std::to_string(::getpid()) + ".json");
  auto r = cli("run " + kModel + " --precision tf32 --check --json " + json.string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("warning: --precision tf32 needs an NVIDIA GPU"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("precision   fp32 (exact)"), std::string::npos) << r.out;
  nlohmann::json j = nlohmann::json::parse(std::ifstream(json));
  EXPECT_EQ(j["precision"], "fp32");
  EXPECT_TRUE(j["tf32_nodes"].empty());
  EXPECT_EQ(j["tolerance"].get<double>(), 1e-4);  // fp32's, since fp32 ran
  EXPECT_LE(j["rel_error"].get<double>(), 1e-4);
  std::filesystem::remove(json);

  auto plain = cli("run " + kModel + " --check");
  ASSERT_EQ(plain.code, 0) << plain.out;
  EXPECT_EQ(plain.out.find("warning"), std::string::npos) << plain.out;
  EXPECT_NE(plain.out.find("precision   fp32 (exact)"), std::string::npos) << plain.out;

  auto bad = cli("run " + kModel + " --precision fp8");  // fp16 is storage precision (test_fp16.cpp)
  EXPECT_NE(bad.code, 0);
  EXPECT_NE(bad.out.find("--precision"), std::string::npos) << bad.out;
}
