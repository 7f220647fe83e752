// The install as a user gets it: `cmake --install` into a fresh prefix, the
// prefix moved elsewhere (the package files are relocatable), then
// examples/ configured with find_package(texplan), built and run, and the
// same program built with pkg-config alone.
#include <gtest/gtest.h>

#include "shell.h"

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "onnx_builder.h"

namespace fs = std::filesystem;

namespace {

using Result = texplan::test::ShellResult;
using texplan::test::sh;

const fs::path kSource = TEXPLAN_SOURCE_DIR;
const fs::path kBuild = fs::path(TEXPLAN_CLI).parent_path();  // the CLI sits at the top of the build
const std::string kTiny = (kSource / "examples" / "models" / "tiny_cnn").string();

// plan_and_run's output as docs/library-api.md shows it, line by line; the
// device's name and the error's digits differ between machines.
void expect_example_output(const std::string& out) {
  std::ifstream doc(kSource / "docs" / "library-api.md");
  std::string line;
  std::vector<std::string> shown;
  bool in_block = false;
  while (std::getline(doc, line)) {
    if (line.find("    model tiny_cnn: ") == 0) in_block = true;
    if (in_block && line.rfind("    ", 0) != 0) break;
    if (in_block) shown.push_back(line.substr(4));
  }
  ASSERT_EQ(shown.size(), 12u) << "the example's output block in docs/library-api.md";
  std::istringstream got(out);
  for (const std::string& want : shown) {
    ASSERT_TRUE(std::getline(got, line)) << "missing: " << want << "\n" << out;
    if (want.rfind("ran on ", 0) == 0) {
      // Weights packed for CPU kernels are padded to the device's vector width.
      const std::regex ran(R"(: (\d+) B of activations, (\d+) B of weights)");
      std::smatch got_m, want_m;
      ASSERT_TRUE(std::regex_search(line, got_m, ran)) << out;
      ASSERT_TRUE(std::regex_search(want, want_m, ran)) << want;
      EXPECT_EQ(got_m[1].str(), want_m[1].str()) << out;
      EXPECT_GE(std::stol(got_m[2].str()), 9384) << "tiny_cnn's weights as stored in the file\n" << out;
      EXPECT_LE(std::stol(got_m[2].str()), 2 * 9384) << out;
    } else if (want.rfind("relative error against the reference: ", 0) == 0) {
      EXPECT_EQ(line.rfind("relative error against the reference: ", 0), 0u) << out;
      EXPECT_NE(line.find("(ok)"), std::string::npos) << out;
    } else {
      EXPECT_EQ(line, want) << out;
    }
  }
}

}  // namespace

TEST(Packaging, InstallThenBuildTheExampleWithFindPackageAndPkgConfig) {
  const fs::path tmp = texplan::test::temp_dir("packaging");
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  const fs::path staged = tmp / "staged", prefix = tmp / "prefix";

  Result r = sh("cmake --install " + kBuild.string() + " --prefix " + staged.string());
  ASSERT_EQ(r.code, 0) << r.out;
  fs::rename(staged, prefix);  // relocatable: nothing may point into `staged`

  for (const char* stage : {"graph", "import", "reference", "validate", "optimize", "plan", "kernels", "device",
                            "lower", "runtime", "pipeline"})
    EXPECT_TRUE(fs::exists(prefix / "lib" / (std::string("libtexplan_") + stage + ".a"))) << stage;
  EXPECT_TRUE(fs::exists(prefix / "lib" / "libtexplan.so"));
  const std::vector<std::string> public_headers = {
      "texplan.h",          "plan/memory_plan.h", "runtime/session.h", "import/onnx_import.h", "graph/graph.h",
      "optimize/usage.h",   "device/device.h",    "pipeline/pipeline.h"};
  for (const std::string& h : public_headers) EXPECT_TRUE(fs::exists(prefix / "include" / "texplan" / h)) << h;
  // Lowering, reference operators, kernels and the CLI stay inside.
  for (const char* h : {"lower/lower.h", "lower/ops.h", "reference/ops.h", "kernels/kernel_sources.h", "cli/commands.h",
                        "import/newer_schemas.h", "validate/validate.h"})
    EXPECT_FALSE(fs::exists(prefix / "include" / "texplan" / h)) << h;
  // Every installed header compiles alone against the install: nothing it
  // includes was left out.
  for (const auto& e : fs::recursive_directory_iterator(prefix / "include" / "texplan")) {
    if (!e.is_regular_file()) continue;
    const std::string rel = fs::relative(e.path(), prefix / "include").string();
    r = sh("echo '#include <" + rel + ">' | c++ -std=c++20 -fsyntax-only -DCL_TARGET_OPENCL_VERSION=120 -I" +
           (prefix / "include").string() + " -I" + (prefix / "include" / "texplan").string() + " -x c++ -");
    EXPECT_EQ(r.code, 0) << rel << "\n" << r.out;
  }
  EXPECT_TRUE(fs::exists(prefix / "lib" / "cmake" / "texplan" / "texplanConfig.cmake"));
  EXPECT_TRUE(fs::exists(prefix / "lib" / "pkgconfig" / "texplan.pc"));
  r = sh("grep -rl " + staged.string() + " " + (prefix / "lib" / "cmake").string() + " " +
         (prefix / "lib" / "pkgconfig").string());
  EXPECT_EQ(r.out, "") << "installed files name the staging prefix";

  // The installed CLI works on its own.
  r = sh((prefix / "bin" / "texplan").string() + " plan " + kTiny + " --strategy best");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("lower bound: 32.00 KiB (32768 B)"), std::string::npos) << r.out;  // optimized

  // examples/ as a separate project, through find_package(texplan).
  const fs::path ex = tmp / "examples-build";
  r = sh("cmake -S " + (kSource / "examples").string() + " -B " + ex.string() + " -DCMAKE_PREFIX_PATH=" +
         prefix.string() + " -DCMAKE_BUILD_TYPE=Release");
  ASSERT_EQ(r.code, 0) << r.out;
  r = sh("cmake --build " + ex.string());
  ASSERT_EQ(r.code, 0) << r.out;
  r = sh((ex / "plan_and_run").string() + " " + kTiny);
  EXPECT_EQ(r.code, 0) << r.out;
  expect_example_output(r.out);
  // The facade: one ModelSession, the CLI's optimized bytes.
  r = sh((ex / "run_model").string() + " " + kTiny + " " + kTiny + "/test_data_set_0/input_0.pb");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("output 1x10, activations 32768 B (lower bound 32768 B)"), std::string::npos) << r.out;
  // ... and against libtexplan.so.
  r = sh((ex / "run_model_shared").string() + " " + kTiny + " " + kTiny + "/test_data_set_0/input_0.pb");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("output 1x10, activations 32768 B (lower bound 32768 B)"), std::string::npos) << r.out;
  r = sh("ldd " + (ex / "run_model_shared").string());
  EXPECT_NE(r.out.find("libtexplan.so"), std::string::npos) << r.out;

  // The same program with pkg-config only.
  const fs::path pc_bin = tmp / "plan_and_run_pc";
  r = sh("PKG_CONFIG_PATH=" + (prefix / "lib" / "pkgconfig").string() + " sh -c 'c++ -O1 -o " + pc_bin.string() +
         " " + (kSource / "examples" / "plan_and_run.cpp").string() + " $(pkg-config --cflags --libs texplan)'");
  ASSERT_EQ(r.code, 0) << r.out;
  r = sh(pc_bin.string() + " " + kTiny);
  EXPECT_EQ(r.code, 0) << r.out;
  expect_example_output(r.out);
  fs::remove_all(tmp);
}
