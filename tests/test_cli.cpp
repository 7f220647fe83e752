// The CLI as a user runs it: exit codes, messages, and the JSON contract.
#include <gtest/gtest.h>

#include "shell.h"

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "onnx_builder.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using Result = texplan::test::ShellResult;

Result run_cli(const std::string& args) { return texplan::test::sh(std::string(TEXPLAN_CLI) + " " + args); }

const std::string kTiny = std::string(TEXPLAN_SOURCE_DIR) + "/examples/models/tiny_cnn";

json read_json(const fs::path& p) {
  std::ifstream f(p);
  return json::parse(f);
}

}  // namespace

// Huge pages for plan (a million-node graph's small heap objects), not for
// run, whose weights then fault in slowly on some machines
// (docs/reliability.md#the-allocator);
// a GLIBC_TUNABLES that sets malloc tunables is the user's.
TEST(CliAllocator, HugePagesForPlanNotForRun) {
  std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string mode;
  std::getline(thp, mode);
  if (mode.find("[madvise]") == std::string::npos)
    GTEST_SKIP() << "transparent huge pages are not given on request here (" << mode << ")";
  const std::string unset = "env -u GLIBC_TUNABLES ";
  Result plan = texplan::test::sh(unset + TEXPLAN_CLI + " -v plan " + kTiny);
  ASSERT_EQ(plan.code, 0) << plan.out;
  EXPECT_NE(plan.out.find("allocator: glibc malloc, huge pages"), std::string::npos) << plan.out;
  Result run = texplan::test::sh(unset + TEXPLAN_CLI + " -v run " + kTiny + " --device cpu");
  ASSERT_EQ(run.code, 0) << run.out;
  EXPECT_NE(run.out.find("allocator: glibc malloc, 4 KiB pages"), std::string::npos) << run.out;
  Result user = texplan::test::sh("GLIBC_TUNABLES=glibc.malloc.hugetlb=1 " + std::string(TEXPLAN_CLI) + " -v run " +
                                  kTiny + " --device cpu");
  ASSERT_EQ(user.code, 0) << user.out;
  EXPECT_NE(user.out.find("allocator: glibc malloc, huge pages"), std::string::npos) << user.out;
}

TEST(CliPlan, JsonHasTheDocumentedFieldsAndEveryPlanValidates) {
  auto out = texplan::test::temp_dir("cli") / "plan.json";
  Result r = run_cli("plan " + kTiny + " --json " + out.string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("lower bound"), std::string::npos) << r.out;
  json j = read_json(out);
  EXPECT_EQ(j["model"], "tiny_cnn");
  int64_t lb = j["lower_bound_bytes"];
  EXPECT_GT(lb, 0);
  ASSERT_GE(j["strategies"].size(), 5u);
  for (const auto& s : j["strategies"]) {
    if (s.value("skipped", false)) continue;
    SCOPED_TRACE(s["name"].get<std::string>());
    EXPECT_TRUE(s["valid"].get<bool>());
    EXPECT_GE(s["total_bytes"].get<int64_t>(), lb);
    EXPECT_GE(s["plan_ms"].get<double>(), 0.0);
    ASSERT_FALSE(s["pools"].empty());
    for (const auto& p : s["pools"]) {
      EXPECT_TRUE(p.contains("id") && p.contains("kind") && p.contains("bytes"));
    }
    for (const auto& t : s["tensors"]) {
      EXPECT_TRUE(t.contains("name") && t.contains("bytes") && t.contains("first") && t.contains("last") &&
                  t.contains("storage") && t.contains("pool") && t.contains("offset"));
      EXPECT_LE(t["first"].get<int>(), t["last"].get<int>());
    }
    if (s["name"] == "best") EXPECT_LE(s["total_bytes"].get<int64_t>(), lb + lb / 1000);
  }
}

TEST(CliPlan, TexturesAutoReportsTexturePools) {
  auto out = texplan::test::temp_dir("clitex") / "plan.json";
  // --no-inplace: with tiny_cnn's in-place nodes, views keep it in buffers
  // (texture kernels do not run in place, and that would cost 16 KiB).
  Result r = run_cli("plan " + kTiny + " --textures auto --target adreno --no-inplace --json " + out.string());
  ASSERT_EQ(r.code, 0) << r.out;
  json j = read_json(out);
  EXPECT_GT(j["texture_records"].get<int>(), 0);
  bool saw_texture_pool = false, saw_view = false;
  for (const auto& s : j["strategies"]) {
    for (const auto& p : s["pools"]) saw_texture_pool |= p["kind"] == "texture";
    if (s["name"] == "texture-views") {
      EXPECT_TRUE(s["valid"].get<bool>());
      for (const auto& t : s["tensors"]) saw_view |= t.contains("row_pitch");
    }
  }
  EXPECT_TRUE(saw_texture_pool);
  EXPECT_TRUE(saw_view);
}

// `plan --target` optimizes as `run` on that kind of device does: a stem's
// conv + MaxPool fuses for a GPU profile (h100), not for PoCL's (cpu), and
// the plan's bound says so (the conv's full-size output gone on the GPU).
TEST(CliPlan, TheTargetsDeviceTypeDecidesTheFusedForms) {
  auto dir = texplan::test::temp_dir("cliforms");
  texplan::test::OnnxBuilder b;
  b.input("x", {1, 3, 32, 32}).output("y");
  b.initializer("w", {16, 3, 3, 3}, std::vector<float>(16 * 27, 0.01f));
  texplan::test::OnnxBuilder::attr_ints(b.node("Conv", {"x", "w"}, {"c"}), "pads", {1, 1, 1, 1});
  b.node("Relu", {"c"}, {"r"});
  auto* pool = b.node("MaxPool", {"r"}, {"y"});
  texplan::test::OnnxBuilder::attr_ints(pool, "kernel_shape", {2, 2});
  texplan::test::OnnxBuilder::attr_ints(pool, "strides", {2, 2});
  const std::string model = b.save(dir, "stem");
  json by_target;
  for (const char* target : {"pocl", "h100"}) {
    const auto out = dir / (std::string(target) + ".json");
    Result r = run_cli("plan " + model + " --target " + target + " --strategy best --json " + out.string());
    ASSERT_EQ(r.code, 0) << r.out;
    by_target[target] = read_json(out);
  }
  EXPECT_EQ(by_target["pocl"]["optimization"]["fused_pool"], 0);
  EXPECT_EQ(by_target["h100"]["optimization"]["fused_pool"], 1);
  EXPECT_LT(by_target["h100"]["lower_bound_bytes"].get<int64_t>(), by_target["pocl"]["lower_bound_bytes"].get<int64_t>());
}

TEST(CliPlan, RandomGraph) {
  Result r = run_cli("plan --random-graph 2000 --seed 3 --strategy best");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("best"), std::string::npos);
  EXPECT_NE(r.out.find("yes"), std::string::npos);
}

TEST(CliErrors, BadInputsGetOneLineAndNonZeroExit) {
  auto dir = texplan::test::temp_dir("clibad");
  { std::ofstream(dir / "junk.onnx") << "junk"; }
  for (const std::string& args :
       {std::string("plan /no/such/model.onnx"), "plan " + (dir / "junk.onnx").string(),
        "plan " + kTiny + " --target no-such-profile", "run " + kTiny + " --device opencl:99",
        "run " + kTiny + " --input " + (dir / "junk.onnx").string()}) {
    Result r = run_cli(args);
    EXPECT_NE(r.code, 0) << args;
    EXPECT_EQ(r.out.rfind("texplan: error: ", 0), 0u) << args << "\n" << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << args << "\n" << r.out;
  }
}

TEST(CliRun, TinyModelOnPoclIsCorrectAndGuardClean) {
  auto out = texplan::test::temp_dir("clirun") / "run.json";
  Result r = run_cli("run " + kTiny + " --device pocl --check --guard --bench 2 --json " + out.string());
  ASSERT_EQ(r.code, 0) << r.out;
  json j = read_json(out);
  EXPECT_LE(j["rel_error"].get<double>(), 1e-4);
  EXPECT_EQ(j["guard_violations"].get<int>(), 0);
  EXPECT_EQ(j["activation_bytes"].get<int64_t>(), j["plan_bytes"].get<int64_t>());
  EXPECT_GE(j["activation_bytes"].get<int64_t>(), j["lower_bound_bytes"].get<int64_t>());
  EXPECT_GT(j["weight_bytes"].get<int64_t>(), 0);
  EXPECT_GT(j["median_ms"].get<double>(), 0.0);
  for (const char* k : {"device", "rel_error", "median_ms", "activation_bytes", "lower_bound_bytes", "weight_bytes",
                        "enqueue_ms"})
    EXPECT_TRUE(j.contains(k)) << k;
  // The loop over the nodes is part of every run: its median cannot pass the runs'.
  EXPECT_GT(j["enqueue_ms"].get<double>(), 0.0);
  EXPECT_LE(j["enqueue_ms"].get<double>(), j["median_ms"].get<double>());
}

// --io device: inputs and outputs in device buffers, every run (the checked
// one too) copying only on the device; the same output as host copies give.
TEST(CliRun, DeviceIoGivesTheSameOutput) {
  auto dir = texplan::test::temp_dir("cliio");
  Result host = run_cli("run " + kTiny + " --device pocl --check --output " + (dir / "host").string());
  ASSERT_EQ(host.code, 0) << host.out;
  Result dev = run_cli("run " + kTiny + " --device pocl --check --io device --bench 3 --json " +
                       (dir / "r.json").string() + " --output " + (dir / "dev").string());
  ASSERT_EQ(dev.code, 0) << dev.out;
  EXPECT_NE(dev.out.find("inputs and outputs in device memory"), std::string::npos) << dev.out;
  json j = read_json(dir / "r.json");
  EXPECT_EQ(j["io"], "device");
  EXPECT_LE(j["rel_error"].get<double>(), 1e-4);
  EXPECT_GT(j["median_ms"].get<double>(), 0.0);
  auto bytes = [](const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  const std::string written = bytes(dir / "dev" / "output_0.pb");
  EXPECT_FALSE(written.empty());
  EXPECT_EQ(written, bytes(dir / "host" / "output_0.pb"));
  Result cpu = run_cli("run " + kTiny + " --device cpu --io device");
  EXPECT_NE(cpu.code, 0);
  EXPECT_NE(cpu.out.find("tiny_cnn: --io device needs an OpenCL device"), std::string::npos) << cpu.out;
}

TEST(CliRun, CpuReferenceExecutorFollowsThePlan) {
  Result r = run_cli("run " + kTiny + " --device cpu --check");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("rel error"), std::string::npos);
}

TEST(CliRun, WrongInputShapeIsNamed) {
  auto dir = texplan::test::temp_dir("cliinput");
  // A 1x3x8x8 input for a model that wants 1x3x32x32.
  texplan::test::OnnxBuilder b;
  b.input("x", {1, 3, 8, 8}).output("y");
  b.node("Relu", {"x"}, {"y"});
  std::string other = b.save(dir, "other");
  Result make = run_cli("run " + other + " --device cpu");  // no input: random ones, said in one line
  EXPECT_EQ(make.code, 0) << make.out;
  EXPECT_NE(make.out.find("random inputs, seed 0 (--random-input SEED for others, --input FILE.pb for yours)"),
            std::string::npos)
      << make.out;
  Result r = run_cli("run " + kTiny + " --device cpu --input " + kTiny + "/test_data_set_0/output_0.pb");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("input 'input' must be float32 1x3x32x32"), std::string::npos) << r.out;
}

// ONNX's own node tests through the OpenCL runtime on PoCL: nothing that
// texplan runs may fail; what it does not support is counted apart.
TEST(CliOnnxTests, NoSupportedTestFails) {
  const std::string dir = "/usr/share/libonnx-testdata/data/node";
  if (!fs::is_directory(dir)) GTEST_SKIP() << "no " << dir << " (apt-get install libonnx-testdata)";
  auto out = texplan::test::temp_dir("onnxtests") / "ot.json";
  Result r = run_cli("onnx-tests " + dir + " --device pocl --json " + out.string());
  EXPECT_EQ(r.code, 0) << r.out;
  json j = read_json(out);
  EXPECT_EQ(j["counts"].value("failed", 0), 0);
  EXPECT_EQ(j["counts"].value("failed (cpu fallback)", 0), 0);
  // On OpenCL kernels, no fallback; shapes fed as graph inputs (Reshape,
  // Expand, Slice ends, Resize sizes) run on the CPU reference, which checks
  // them against the plan.
  EXPECT_GE(j["counts"].value("passed", 0), 240);
  EXPECT_GE(j["counts"].value("passed", 0) + j["counts"].value("passed (cpu fallback)", 0), 640);
  for (const auto& t : j["tests"])
    if (t["status"] == "unsupported") EXPECT_FALSE(t["reason"].get<std::string>().empty()) << t["test"];
}
