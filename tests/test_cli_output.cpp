// What the CLI prints: a progress line only on a terminal, --quiet and
// --verbose, aligned tables.
#include <gtest/gtest.h>

#include "shell.h"

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "onnx_builder.h"

namespace fs = std::filesystem;

namespace {

using Result = texplan::test::ShellResult;
Result sh(const std::string& cmd) { return texplan::test::sh(cmd, /*merge_stderr=*/false); }

const std::string kCli = TEXPLAN_CLI;
const std::string kTiny = std::string(TEXPLAN_SOURCE_DIR) + "/examples/models/tiny_cnn";

}  // namespace

TEST(CliOutput, ProgressOnlyOnATerminal) {
  // Piped: stdout and stderr carry no progress line and no escape codes.
  Result piped = sh("env -u TEXPLAN_PROGRESS " + kCli + " plan --random-graph 20000 2>&1");
  ASSERT_EQ(piped.code, 0) << piped.out;
  EXPECT_EQ(piped.out.find('\r'), std::string::npos);
  EXPECT_EQ(piped.out.find("\x1b["), std::string::npos);
  EXPECT_EQ(piped.out.find("elapsed"), std::string::npos);

  // On a terminal (script(1) gives the command a pseudo-terminal).
  if (sh("command -v script >/dev/null 2>&1").code != 0) GTEST_SKIP() << "no script(1)";
  Result tty = sh("env -u TEXPLAN_PROGRESS script -qec '" + kCli + " plan --random-graph 20000' /dev/null");
  ASSERT_EQ(tty.code, 0) << tty.out;
  EXPECT_NE(tty.out.find("planning 20000 tensors [0/7]"), std::string::npos) << tty.out;
  EXPECT_NE(tty.out.find("\r\x1b[K"), std::string::npos);
  // The line is erased before the table: the table's first line starts clean.
  EXPECT_NE(tty.out.find("\r\x1b[Kmodel random-20000"), std::string::npos) << tty.out;

  // --quiet on a terminal: no progress either.
  Result quiet = sh("env -u TEXPLAN_PROGRESS script -qec '" + kCli + " plan --random-graph 20000 -q' /dev/null");
  EXPECT_EQ(quiet.code, 0);
  EXPECT_EQ(quiet.out.find("elapsed"), std::string::npos) << quiet.out;
}

TEST(CliOutput, QuietPrintsNothingButStillWritesFiles) {
  fs::path dir = texplan::test::temp_dir("cli-output");
  Result r = sh(kCli + " plan " + kTiny + " --quiet --json " + (dir / "p.json").string() + " --timeline " +
                (dir / "p.svg").string() + " 2>&1");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(fs::file_size(dir / "p.json") > 0);
  EXPECT_TRUE(fs::file_size(dir / "p.svg") > 0);
  // Before the subcommand too, and errors still print.
  r = sh(kCli + " -q plan " + kTiny + " 2>&1");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, "");
  r = sh(kCli + " -q plan /nonexistent.onnx 2>&1");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("error"), std::string::npos);
  // devices --json is what was asked for: it still prints.
  r = sh(kCli + " -q devices --json 2>/dev/null");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out.rfind("[", 0), 0u) << r.out;
  // Both at once make no sense: a usage error.
  r = sh(kCli + " -q -v plan " + kTiny + " 2>&1");
  EXPECT_EQ(r.code, 2);
}

TEST(CliOutput, VerboseTellsStagesOnStderr) {
  Result r = sh(kCli + " plan " + kTiny + " --strategy best --verbose 2>&1 >/dev/null");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("tiny_cnn: imported 15 nodes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("best: 32.00 KiB in 1 pool(s), planned in"), std::string::npos) << r.out;  // optimized graph
  r = sh(kCli + " run " + kTiny + " -v 2>&1 >/dev/null");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("kernels built) in"), std::string::npos) << r.out;
  // Not verbose: stderr stays empty.
  r = sh(kCli + " plan " + kTiny + " 2>&1 >/dev/null");
  EXPECT_EQ(r.out, "");
}

TEST(CliOutput, PlanTableColumnsAlign) {
  Result r = sh(kCli + " plan " + kTiny + " 2>&1");
  ASSERT_EQ(r.code, 0);
  // Every row of the table ends its "bytes" column where the header does.
  std::istringstream in(r.out);
  std::string line;
  size_t header_end = std::string::npos;
  int rows = 0;
  while (std::getline(in, line)) {
    if (line.rfind("strategy ", 0) == 0) {
      header_end = line.find("bytes") + 5;
      continue;
    }
    if (header_end == std::string::npos || line.find("skipped") != std::string::npos) continue;
    ++rows;
    ASSERT_GT(line.size(), header_end) << line;
    EXPECT_TRUE(std::isdigit(static_cast<unsigned char>(line[header_end - 1]))) << line;
    EXPECT_EQ(line[header_end], ' ') << line;
  }
  EXPECT_GE(rows, 5);
}
