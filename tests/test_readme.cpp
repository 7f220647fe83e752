// The README's CLI sessions: every `    $ build/texplan ...` block is run and
// each line shown under it must be a line of the output ("..." stands for
// what differs between machines: timings, errors' digits). The Python
// session is python/tests/test_readme.py's.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "shell.h"

namespace fs = std::filesystem;

namespace {

struct Block {
  std::string args;
  std::vector<std::string> shown;
};

std::vector<Block> readme_blocks() {
  std::ifstream in(fs::path(TEXPLAN_SOURCE_DIR) / "README.md");
  std::vector<Block> blocks;
  std::string line;
  bool open = false;
  while (std::getline(in, line)) {
    const std::string prompt = "    $ build/texplan ";
    if (line.rfind(prompt, 0) == 0) {
      blocks.push_back({line.substr(prompt.size()), {}});
      open = true;
    } else if (open && line.rfind("    ", 0) == 0) {
      blocks.back().shown.push_back(line.substr(4));
    } else {
      open = false;
    }
  }
  return blocks;
}

// `shown` with "..." as a wildcard, against one output line.
bool matches(const std::string& shown, const std::string& line) {
  size_t at = 0, from = 0;
  while (true) {
    const size_t dots = shown.find("...", from);
    const std::string piece = shown.substr(from, dots == std::string::npos ? std::string::npos : dots - from);
    if (from == 0 && line.compare(0, piece.size(), piece) != 0) return false;  // anchored at the start
    const size_t found = line.find(piece, at);
    if (found == std::string::npos) return false;
    at = found + piece.size();
    if (dots == std::string::npos) return at == line.size();
    from = dots + 3;
  }
}

}  // namespace

TEST(Readme, CliSessionsPrintWhatTheReadmeShows) {
  const std::vector<Block> blocks = readme_blocks();
  ASSERT_GE(blocks.size(), 2u);
  for (const Block& b : blocks) {
    SCOPED_TRACE(b.args);
    ASSERT_FALSE(b.shown.empty());
    const texplan::test::ShellResult r = texplan::test::sh("cd " + std::string(TEXPLAN_SOURCE_DIR) + " && " +
                                                           std::string(TEXPLAN_CLI) + " " + b.args + " 2>&1");
    EXPECT_EQ(r.code, 0) << r.out;
    std::vector<std::string> lines;
    std::istringstream out(r.out);
    for (std::string l; std::getline(out, l);) lines.push_back(l);
    for (const std::string& shown : b.shown) {
      bool found = false;
      for (const std::string& l : lines) found = found || matches(shown, l);
      EXPECT_TRUE(found) << "the README shows '" << shown << "'; the output is:\n" << r.out;
    }
  }
}

TEST(Readme, IsAGuideNotALog) {
  std::ifstream in(fs::path(TEXPLAN_SOURCE_DIR) / "README.md");
  int lines = 0;
  for (std::string l; std::getline(in, l);) ++lines;
  EXPECT_LE(lines, 200);
}
