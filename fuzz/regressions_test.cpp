// Replays every input a fuzzer once broke texplan with
// (fuzz/regressions/<target>/*) through the same target functions, in the
// ordinary build: what was fixed stays fixed, with or without clang.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "targets.h"

namespace fs = std::filesystem;

namespace {

std::string read_bytes(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), {});
}

}  // namespace

TEST(FuzzRegressions, EveryKeptInputRunsClean) {
  const fs::path root = fs::path(TEXPLAN_FUZZ_DIR) / "regressions";
  int replayed = 0;
  for (const auto& t : texplan::fuzz::targets()) {
    if (!fs::is_directory(root / t.name)) continue;
    for (const auto& e : fs::directory_iterator(root / t.name)) {
      if (!e.is_regular_file() || e.path().filename().string().starts_with(".")) continue;
      SCOPED_TRACE(std::string(t.name) + "/" + e.path().filename().string());
      const std::string bytes = read_bytes(e.path());
      t.run(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());  // aborts or throws if not fixed
      ++replayed;
    }
  }
  RecordProperty("replayed", replayed);
  std::cout << "replayed " << replayed << " fuzz regression inputs\n";
}

// Records for which `best`'s repair rounds ran their full 10,000 rounds
// (about 90 records that all overlap: n^2 units of work a round; 1 s in
// Release, 12 to 14 s under ASan). The work budget ends the search now,
// with a valid plan. Times are printed, not asserted.
TEST(FuzzRegressions, SlowBestInputsStopAtTheRepairWorkBudgetWithAValidPlan) {
  namespace plan = texplan::plan;
  int checked = 0;
  for (const auto& e : fs::directory_iterator(fs::path(TEXPLAN_FUZZ_DIR) / "regressions" / "planner")) {
    const std::string name = e.path().filename().string();
    if (!name.starts_with("best-repair-loop")) continue;
    const std::string bytes = read_bytes(e.path());
    const auto [dev, recs] = texplan::fuzz::planner_input(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    int64_t most_work = 0;
    for (const char* strategy : {"best", "tvm-texture-pools", "texture-views"}) {  // all run best's search
      SCOPED_TRACE(name + " " + strategy);
      plan::MemoryPlan p;
      try {
        p = plan::plan_memory(recs, dev, strategy);
      } catch (const plan::PlanError&) {
        continue;  // records this device cannot plan this way
      }
      plan::validate(p, recs, dev);
      EXPECT_LE(p.repair_work, plan::kBestRepairWork);
      most_work = std::max(most_work, p.repair_work);
      std::printf("[ info     ] %s, %s: %zu records, %.1f ms, %lld units of repair work\n", name.c_str(), strategy,
                  recs.size(), p.plan_ms, static_cast<long long>(p.repair_work));
    }
    EXPECT_EQ(most_work, plan::kBestRepairWork) << name << ": the budget, not the round count, ends the slow search";
    ++checked;
  }
  EXPECT_EQ(checked, 3);
}
