// texplan run --profile --trace FILE.json through the CLI, on
// examples/models/tiny_cnn and PoCL: the Chrome trace (Trace Event Format)
// has complete events for every profiled node on the host's and the
// device's tracks, each track in time order, and bad file names are refused
// before anything runs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "cli/trace.h"
#include "cli/usage.h"
#include "shell.h"

namespace {

const std::string kModel = std::string(TEXPLAN_SOURCE_DIR) + "/examples/models/tiny_cnn";

texplan::test::ShellResult cli(const std::string& args) {
  return texplan::test::sh(std::string(TEXPLAN_CLI) + " " + args + " 2>&1");
}

nlohmann::json read_json(const std::filesystem::path& p) { return nlohmann::json::parse(std::ifstream(p)); }

struct TempDir {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("texplan-trace-" + std::to_string(::getpid()));
  TempDir() { std::filesystem::create_directories(path); }
  ~TempDir() { std::filesystem::remove_all(path); }
};

}  // namespace

TEST(CliTrace, EveryProfiledNodeOnBothTracksInTimeOrder) {
  TempDir dir;
  const auto trace_path = dir.path / "tiny.trace.json", report_path = dir.path / "r.json";
  auto r = cli("run " + kModel + " --profile --trace " + trace_path.string() + " --json " + report_path.string());
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json report = read_json(report_path);
  const nlohmann::json trace = read_json(trace_path);
  ASSERT_TRUE(trace.contains("traceEvents")) << trace.dump().substr(0, 400);
  const int runs = report["profile"]["runs"].get<int>();
  ASSERT_GT(runs, 0);

  std::map<int, std::map<std::string, int>> per_track;  // tid -> event name -> count
  std::map<int, double> last_ts;
  std::set<std::string> track_names;
  for (const auto& e : trace["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph") && e.contains("pid") && e.contains("name")) << e.dump();
    if (e["ph"] == "M") {
      if (e["name"] == "thread_name") track_names.insert(e["args"]["name"].get<std::string>());
      continue;
    }
    ASSERT_EQ(e["ph"], "X") << e.dump();
    for (const char* k : {"ts", "dur", "tid", "cat", "args"}) ASSERT_TRUE(e.contains(k)) << k << ": " << e.dump();
    const int tid = e["tid"].get<int>();
    const double ts = e["ts"].get<double>(), dur = e["dur"].get<double>();
    EXPECT_GE(ts, 0) << e.dump();
    EXPECT_GT(dur, 0) << e.dump();
    if (last_ts.count(tid)) EXPECT_GE(ts, last_ts[tid]) << "track " << tid << " out of order at " << e.dump();
    last_ts[tid] = ts;
    per_track[tid][e["name"].get<std::string>()] += 1;
    EXPECT_TRUE(e["args"].contains("input_shapes") && e["args"].contains("output_shapes") &&
                e["args"].contains("bytes"))
        << e.dump();
    if (tid == texplan::cli::kTraceDeviceTrack) EXPECT_FALSE(e["args"]["kernel"].get<std::string>().empty());
  }
  EXPECT_EQ(track_names.size(), 2u);
  ASSERT_FALSE(report["profile"]["nodes"].empty());
  for (const auto& n : report["profile"]["nodes"]) {
    const std::string name = n["node"].get<std::string>() + " (" + n["op"].get<std::string>() + ")";
    EXPECT_EQ(per_track[texplan::cli::kTraceHostTrack][name], runs) << name;  // one enqueue per run
    if (!n["cpu"].get<bool>())  // one event per kernel launch per run
      EXPECT_EQ(per_track[texplan::cli::kTraceDeviceTrack][name], runs * n["launches"].get<int>()) << name;
  }
}

TEST(CliTrace, TraceAloneProfilesAndWritesTheFile) {
  TempDir dir;
  auto r = cli("run " + kModel + " --trace " + (dir.path / "t.json").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("profile"), std::string::npos) << r.out;
  EXPECT_FALSE(read_json(dir.path / "t.json")["traceEvents"].empty());
}

TEST(CliTrace, BadFileNamesAreRefusedBeforeAnyWork) {
  TempDir dir;
  std::filesystem::create_directories(dir.path / "folder.json");
  for (const std::string& bad : {(dir.path / "t.txt").string(), (dir.path / "no-such-folder" / "t.json").string(),
                                 (dir.path / "folder.json").string(), std::string("-")}) {
    auto r = cli("run " + kModel + " --profile --trace " + bad);
    EXPECT_EQ(r.code, texplan::cli::kExitUsage) << bad << ": " << r.out;
    EXPECT_NE(r.out.find("trace"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("activation"), std::string::npos) << "ran before refusing: " << r.out;
  }
  auto cpu = cli("run " + kModel + " --device cpu --trace " + (dir.path / "t.json").string());
  EXPECT_EQ(cpu.code, texplan::cli::kExitError) << cpu.out;
  EXPECT_NE(cpu.out.find("OpenCL"), std::string::npos) << cpu.out;
  EXPECT_FALSE(std::filesystem::exists(dir.path / "t.json"));
}
