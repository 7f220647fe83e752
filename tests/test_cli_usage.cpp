// The CLI as a Unix tool: usage errors exit 2 with one line and a
// did-you-mean, numbers are checked, `--json -` is stdout, --version, output
// formats refused before any work, the OpenCL compiler's messages only with
// -v, and a progress line for kernel builds (docs/cli.md).
#include <gtest/gtest.h>

#include "shell.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "onnx_builder.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using Result = texplan::test::ShellResult;

const std::string kCli = TEXPLAN_CLI;
const std::string kTiny = std::string(TEXPLAN_SOURCE_DIR) + "/examples/models/tiny_cnn";

// stdout and stderr apart: `2>FILE` then read back.
struct Split {
  int code;
  std::string out, err;
};
Split run_split(const std::string& args, const std::string& env = "") {
  const fs::path err = texplan::test::temp_dir("cli-usage-err") / "stderr.txt";
  Result r = texplan::test::sh(env + " " + kCli + " " + args + " 2>" + err.string(), /*merge_stderr=*/false);
  std::ifstream f(err);
  std::stringstream s;
  s << f.rdbuf();
  return {r.code, r.out, s.str()};
}

size_t lines(const std::string& s) { return size_t(std::count(s.begin(), s.end(), '\n')); }

// A usage error: exit 2, nothing on stdout, one line on stderr that starts
// "texplan: error: " and contains `says`.
void expect_usage_error(const std::string& args, const std::string& says) {
  SCOPED_TRACE(args);
  Split r = run_split(args);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.rfind("texplan: error: ", 0), 0u) << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--help"), std::string::npos) << r.err;
}

}  // namespace

TEST(CliUsage, UnknownCommandSaysDidYouMean) {
  expect_usage_error("plna " + kTiny, "unknown command 'plna'; did you mean 'plan'?");
  expect_usage_error("-q rnu " + kTiny, "unknown command 'rnu'; did you mean 'run'?");
  expect_usage_error("frobnicate", "unknown command 'frobnicate' (known: plan, run, tune, devices, onnx-tests)");
  expect_usage_error("", "give a command: plan, run, tune, devices, onnx-tests");
  expect_usage_error("-q", "give a command");
}

TEST(CliUsage, UnknownStrategyIsRefusedBeforeAnyWork) {
  // Refused before the model is read: a missing model is not what it says.
  expect_usage_error("plan /no/such/model.onnx --strategy bets", "unknown strategy 'bets'; did you mean 'best'?");
  expect_usage_error("run /no/such/model.onnx --strategy bets", "unknown strategy 'bets'; did you mean 'best'?");
  expect_usage_error("plan " + kTiny + " --strategy zzz", "unknown strategy 'zzz' (known: ");
  expect_usage_error("run " + kTiny + " --strategy all", "unknown strategy 'all'");  // plan only
  expect_usage_error("run " + kTiny + " --device gpo", "unknown device 'gpo'; did you mean 'gpu'?");
  expect_usage_error("onnx-tests --device cpu", "unknown device 'cpu'");
  expect_usage_error("run " + kTiny + " --textures view", "--textures");  // CLI::IsMember's own check
  Result all = texplan::test::sh(kCli + " plan " + kTiny + " --strategy all");
  EXPECT_EQ(all.code, 0) << all.out;
}

TEST(CliUsage, NumbersAreChecked) {
  const std::string run = "run /no/such/model.onnx ";
  expect_usage_error(run + "--bench -3", "--bench: expected a whole number >= 0 and <= 1073741824, got '-3'");
  expect_usage_error(run + "--bench 2.5", "expected a whole number");
  expect_usage_error(run + "--bench lots", "expected a whole number");
  expect_usage_error(run + "--tolerance -1", "--tolerance: expected a number >= 0, got '-1'");
  expect_usage_error(run + "--tolerance nan", "--tolerance");
  expect_usage_error(run + "--clblast-tune 2", "--clblast-tune: expected a number in [0, 1], got '2'");
  expect_usage_error(run + "--random-input -1", "--random-input");
  expect_usage_error("plan --random-graph -5", "--random-graph: expected a whole number >= 1, got '-5'");
  expect_usage_error("plan --random-graph 0", "--random-graph");
  expect_usage_error("plan --random-graph 10 --seed -2", "--seed: expected a whole number >= 0");
  // Values in range pass: the run then fails on the missing model (exit 1).
  Split r = run_split(run + "--bench 0 --tolerance 0.5 --clblast-tune 0.1");
  EXPECT_EQ(r.code, 1) << r.err;
}

TEST(CliUsage, QuietAndVerboseTogetherIsAUsageError) {
  expect_usage_error("-q -v plan " + kTiny, "--quiet and --verbose exclude each other");
}

TEST(CliUsage, VersionAndHelp) {
  Split v = run_split("--version");
  EXPECT_EQ(v.code, 0);
  EXPECT_TRUE(std::regex_match(v.out, std::regex("texplan [0-9]+\\.[0-9]+\\.[0-9]+\n"))) << v.out;
  Split h = run_split("--help");
  EXPECT_EQ(h.code, 0);
  EXPECT_NE(h.out.find("2 usage error"), std::string::npos) << h.out;
  EXPECT_NE(h.out.find("--version"), std::string::npos) << h.out;
  Split rh = run_split("run --help");
  EXPECT_EQ(rh.code, 0);
  EXPECT_NE(rh.out.find("-: to stdout"), std::string::npos) << rh.out;
}

TEST(CliUsage, TimelineFormatIsRefusedBeforePlanning) {
  const fs::path dir = texplan::test::temp_dir("cli-usage-timeline");
  expect_usage_error("plan " + kTiny + " --timeline " + (dir / "x.png").string(), "give a .svg, .html or .htm file");
  expect_usage_error("plan /no/such/model.onnx --timeline x.png", "x.png");  // before the model is read
  EXPECT_FALSE(fs::exists(dir / "x.png"));
  Split ok = run_split("plan " + kTiny + " --strategy best --timeline " + (dir / "X.SVG").string());
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_TRUE(fs::exists(dir / "X.SVG"));
}

TEST(CliUsage, JsonDashIsStdoutAndTheTableGoesToStderr) {
  Split plan = run_split("plan " + kTiny + " --strategy best --json -");
  ASSERT_EQ(plan.code, 0) << plan.err;
  EXPECT_FALSE(fs::exists("-"));
  json j = json::parse(plan.out);  // stdout is the JSON alone
  EXPECT_EQ(j["model"], "tiny_cnn");
  EXPECT_NE(plan.err.find("lower bound"), std::string::npos) << plan.err;

  Split run = run_split("run " + kTiny + " --device cpu --check --json -");
  ASSERT_EQ(run.code, 0) << run.err;
  json r = json::parse(run.out);
  EXPECT_EQ(r["model"], "tiny_cnn");
  EXPECT_TRUE(r.contains("rel_error"));
  EXPECT_NE(run.err.find("activations"), std::string::npos) << run.err;

  // --quiet: the JSON still comes, nothing else.
  Split quiet = run_split("-q plan " + kTiny + " --strategy best --json -");
  ASSERT_EQ(quiet.code, 0) << quiet.err;
  EXPECT_EQ(quiet.err, "");
  EXPECT_EQ(json::parse(quiet.out)["model"], "tiny_cnn");
}

TEST(CliUsage, ErrorsThatAreNotUsageExit1) {
  // A well-formed command line whose model is missing: an error, not usage.
  Split missing = run_split("run /no/such/model.onnx --bench 3");
  EXPECT_EQ(missing.code, 1) << missing.err;
  EXPECT_EQ(lines(missing.err), 1u) << missing.err;
  EXPECT_EQ(missing.err.find("--help"), std::string::npos) << missing.err;
}

TEST(CliUsage, CompilerMessagesOnlyWithVerboseAndPrefixed) {
  // A cold PoCL kernel cache, so that the compiler runs (and may warn).
  const fs::path cache = texplan::test::temp_dir("cli-usage-pocl-cache");
  fs::remove_all(cache);
  fs::create_directories(cache / "plain");
  fs::create_directories(cache / "verbose");
  // Without texplan's program cache, which would skip the compiler too.
  Split plain =
      run_split("run " + kTiny + " --check --no-program-cache", "POCL_CACHE_DIR=" + (cache / "plain").string());
  ASSERT_EQ(plain.code, 0) << plain.err;
  EXPECT_EQ(plain.err.find("warning"), std::string::npos) << plain.err;
  EXPECT_EQ(plain.err, "");

  Split verbose =
      run_split("-v run " + kTiny + " --check --no-program-cache", "POCL_CACHE_DIR=" + (cache / "verbose").string());
  ASSERT_EQ(verbose.code, 0) << verbose.err;
  std::istringstream in(verbose.err);
  int compiler_lines = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("opencl build: ", 0) == 0) {
      ++compiler_lines;
      continue;
    }
    EXPECT_EQ(line.find("warning"), std::string::npos) << "unprefixed compiler output: " << line;
  }
  // PoCL's compiler warns on tiny_cnn's convolutions ("loop not unrolled");
  // another driver may have nothing to say.
  RecordProperty("compiler_lines", compiler_lines);
}

TEST(CliUsage, SecondRunBuildsKernelsFromTheProgramCache) {
  const fs::path cache = texplan::test::temp_dir("cli-usage-program-cache") / "programs";
  fs::remove_all(cache);
  const std::string env = "TEXPLAN_CACHE_DIR=" + cache.string();
  Split first = run_split("run " + kTiny + " --check --json -", env);
  ASSERT_EQ(first.code, 0) << first.err;
  const json a = json::parse(first.out);
  EXPECT_GT(a["programs"]["compiled"].get<int>(), 0);
  EXPECT_EQ(a["programs"]["from_cache"], 0);
  EXPECT_EQ(a["programs"]["cache_dir"], cache.string());
  EXPECT_GT(a["first_inference_ms"].get<double>(), 0);
  Split second = run_split("run " + kTiny + " --check --json -", env);
  ASSERT_EQ(second.code, 0) << second.err;
  const json b = json::parse(second.out);
  EXPECT_EQ(b["programs"]["compiled"], 0);
  EXPECT_EQ(b["programs"]["from_cache"], a["programs"]["compiled"]);
  EXPECT_EQ(b["rel_error"], a["rel_error"]);
  EXPECT_NE(second.err.find("startup     first inference"), std::string::npos) << second.err;
  // --no-program-cache: compiled, the cache neither read nor named.
  Split off = run_split("run " + kTiny + " --check --no-program-cache --json -", env);
  ASSERT_EQ(off.code, 0) << off.err;
  const json c = json::parse(off.out);
  EXPECT_EQ(c["programs"]["from_cache"], 0);
  EXPECT_EQ(c["programs"]["compiled"], a["programs"]["compiled"]);
  EXPECT_EQ(c["programs"]["cache_dir"], "");
  // A folder that cannot be made: the run passes, and -v says why in one line.
  Split unwritable = run_split("-v run " + kTiny + " --check", "TEXPLAN_CACHE_DIR=/dev/null/programs");
  ASSERT_EQ(unwritable.code, 0) << unwritable.err;
  EXPECT_NE(unwritable.err.find("program cache: cannot create /dev/null/programs"), std::string::npos)
      << unwritable.err;
}

TEST(CliUsage, RunsAtOnceShareTheProgramCache) {
  // Two processes fill one empty folder at the same time: each file is
  // renamed into place whole, so both pass, no temporary is left, and a
  // third run builds everything from what they wrote.
  const fs::path cache = texplan::test::temp_dir("cli-usage-program-cache-shared") / "programs";
  fs::remove_all(cache);
  const std::string run = "TEXPLAN_CACHE_DIR=" + cache.string() + " " + kCli + " run " + kTiny + " --check -q";
  Result both = texplan::test::sh("(" + run + ") & (" + run + "); a=$?; wait $!; b=$?; exit $((a + b))");
  ASSERT_EQ(both.code, 0) << both.out;
  for (const auto& e : fs::directory_iterator(cache))
    EXPECT_EQ(e.path().extension(), ".clbin") << e.path();
  Split third = run_split("run " + kTiny + " --check --json -", "TEXPLAN_CACHE_DIR=" + cache.string());
  ASSERT_EQ(third.code, 0) << third.err;
  EXPECT_EQ(json::parse(third.out)["programs"]["compiled"], 0);
}

TEST(CliUsage, KernelBuildsShowAProgressLine) {
  // TEXPLAN_PROGRESS=1 draws as on a terminal; the piped run draws nothing.
  Split drawn = run_split("run " + kTiny + " --check", "TEXPLAN_PROGRESS=1");
  ASSERT_EQ(drawn.code, 0) << drawn.err;
  EXPECT_NE(drawn.err.find("building kernels"), std::string::npos) << drawn.err;
  EXPECT_NE(drawn.err.find("\r\x1b[K"), std::string::npos);
  Split piped = run_split("run " + kTiny + " --check", "env -u TEXPLAN_PROGRESS");
  ASSERT_EQ(piped.code, 0) << piped.err;
  EXPECT_EQ(piped.err.find("building kernels"), std::string::npos) << piped.err;
  EXPECT_EQ(piped.err.find('\r'), std::string::npos);
}
