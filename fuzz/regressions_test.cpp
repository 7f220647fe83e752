// Replays every input a fuzzer once broke texplan with
// (fuzz/regressions/<target>/*) through the same target functions, in the
// ordinary build: what was fixed stays fixed, with or without clang.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "targets.h"

namespace fs = std::filesystem;

TEST(FuzzRegressions, EveryKeptInputRunsClean) {
  const fs::path root = fs::path(TEXPLAN_FUZZ_DIR) / "regressions";
  int replayed = 0;
  for (const auto& t : texplan::fuzz::targets()) {
    if (!fs::is_directory(root / t.name)) continue;
    for (const auto& e : fs::directory_iterator(root / t.name)) {
      if (!e.is_regular_file() || e.path().filename().string().starts_with(".")) continue;
      SCOPED_TRACE(std::string(t.name) + "/" + e.path().filename().string());
      std::ifstream f(e.path(), std::ios::binary);
      std::string bytes((std::istreambuf_iterator<char>(f)), {});
      t.run(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());  // aborts or throws if not fixed
      ++replayed;
    }
  }
  RecordProperty("replayed", replayed);
  std::cout << "replayed " << replayed << " fuzz regression inputs\n";
}
