// The CLI sessions shown in the README and in docs/*.md: every
// `    $ build/texplan ...` block is run from the repository's root, and each
// line shown under it must be a line of the output ("..." stands for what
// differs between machines: timings, errors' digits). A session that shows
// "texplan: error: ..." must fail; any other must exit 0. Sessions on the
// shared model zoo (../shared/models) are skipped when it is absent. Files a
// session writes into the root (a --trace, a --json) are removed after it.
// The Python sessions are doctests (python/tests/test_readme.py,
// test_inference_session.py for docs/python.md).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "shell.h"

namespace fs = std::filesystem;

namespace {

struct Session {
  std::string file;  // relative to the repository
  int line = 0;
  std::string args;
  std::vector<std::string> shown;
};

std::vector<Session> sessions_of(const std::string& file) {
  std::ifstream in(fs::path(TEXPLAN_SOURCE_DIR) / file);
  std::vector<Session> sessions;
  std::string line;
  bool open = false;
  const std::string prompt = "    $ build/texplan ";
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.rfind(prompt, 0) == 0) {
      std::string args = line.substr(prompt.size());
      if (const size_t comment = args.find("  #"); comment != std::string::npos) args.resize(comment);
      while (!args.empty() && args.back() == ' ') args.pop_back();
      sessions.push_back({file, n, args, {}});
      open = true;
    } else if (open && line.rfind("    ", 0) == 0 && line.rfind("    $ ", 0) != 0) {
      sessions.back().shown.push_back(line.substr(4));
    } else {
      open = false;
    }
  }
  return sessions;
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

std::set<std::string> root_files() {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(TEXPLAN_SOURCE_DIR))
    if (e.is_regular_file()) names.insert(e.path().filename().string());  // what a session writes: reports, traces
  return names;
}

// Runs `s` and checks what it prints; false when it was skipped.
bool run_session(const Session& s) {
  SCOPED_TRACE(s.file + ":" + std::to_string(s.line) + ": texplan " + s.args);
  if (s.args.find("../shared/models") != std::string::npos && !fs::exists(TEXPLAN_MODELS_DIR)) {
    std::cout << "skipped " << s.file << ":" << s.line << ": needs the model zoo " << TEXPLAN_MODELS_DIR << "\n";
    return false;
  }
  const std::set<std::string> before = root_files();
  const texplan::test::ShellResult r = texplan::test::sh("cd " + std::string(TEXPLAN_SOURCE_DIR) + " && " +
                                                         std::string(TEXPLAN_CLI) + " " + s.args + " 2>&1");
  for (const std::string& name : root_files())
    if (!before.count(name)) fs::remove(fs::path(TEXPLAN_SOURCE_DIR) / name);
  bool shows_error = false;
  for (const std::string& shown : s.shown) shows_error = shows_error || shown.rfind("texplan: error: ", 0) == 0;
  if (shows_error) {
    EXPECT_NE(r.code, 0) << r.out;
  } else {
    EXPECT_EQ(r.code, 0) << r.out;
  }
  std::vector<std::string> lines;
  std::istringstream out(r.out);
  for (std::string l; std::getline(out, l);) lines.push_back(l);
  for (const std::string& shown : s.shown) {
    bool found = false;
    for (const std::string& l : lines) found = found || matches(shown, l);
    EXPECT_TRUE(found) << s.file << " shows '" << shown << "'; the output is:\n" << r.out;
  }
  return true;
}

}  // namespace

TEST(Readme, CliSessionsPrintWhatTheReadmeShows) {
  const std::vector<Session> sessions = sessions_of("README.md");
  ASSERT_GE(sessions.size(), 2u);
  for (const Session& s : sessions) {
    EXPECT_FALSE(s.shown.empty()) << "README.md:" << s.line << " shows no output";
    run_session(s);
  }
}

TEST(Readme, IsAGuideNotALog) {
  std::ifstream in(fs::path(TEXPLAN_SOURCE_DIR) / "README.md");
  int lines = 0;
  for (std::string l; std::getline(in, l);) ++lines;
  EXPECT_LE(lines, 200);
}

// Every doc's sessions; and a command shown as `$ texplan ...` (not run)
// is a defect: the docs show only what this test checks.
TEST(Docs, CliSessionsPrintWhatTheDocsShow) {
  int ran = 0, docs_with_sessions = 0;
  for (const auto& e : fs::directory_iterator(fs::path(TEXPLAN_SOURCE_DIR) / "docs")) {
    if (e.path().extension() != ".md") continue;
    const std::string file = "docs/" + e.path().filename().string();
    std::ifstream in(e.path());
    int n = 0;
    for (std::string l; std::getline(in, l);)
      if (++n; l.rfind("    $ texplan ", 0) == 0) ADD_FAILURE() << file << ":" << n << ": '" << l << "' is not run by a test (write $ build/texplan)";
    const std::vector<Session> sessions = sessions_of(file);
    docs_with_sessions += !sessions.empty();
    for (const Session& s : sessions) ran += run_session(s);
  }
  EXPECT_GE(docs_with_sessions, 4);
  EXPECT_GE(ran, 8);
}

namespace {

texplan::cli::json plan_json(const std::string& args) {
  const texplan::test::ShellResult r = texplan::test::sh("cd " + std::string(TEXPLAN_SOURCE_DIR) + " && " +
                                                         std::string(TEXPLAN_CLI) + " plan " + args + " --json -",
                                                         /*merge_stderr=*/false);
  EXPECT_EQ(r.code, 0) << r.out;
  return texplan::cli::json::parse(r.out);
}

}  // namespace

// docs/plan-json.md: the tensors[] entries it quotes are what its command
// writes, and every top-level field of the report is in its table.
TEST(Docs, PlanJsonShowsWhatPlanWrites) {
  const texplan::cli::json r = plan_json("examples/models/tiny_cnn --target adreno --textures pools");
  std::ifstream in(fs::path(TEXPLAN_SOURCE_DIR) / "docs" / "plan-json.md");
  std::stringstream doc;
  doc << in.rdbuf();
  int quoted = 0;
  std::istringstream lines(doc.str());
  for (std::string l; std::getline(lines, l);) {
    if (l.rfind("    {\"bytes\"", 0) != 0) continue;
    const texplan::cli::json shown = texplan::cli::json::parse(l.substr(4));
    bool found = false;
    for (const auto& s : r["strategies"])
      if (s["name"] == "texture-views")
        for (const auto& t : s["tensors"]) found = found || t == shown;
    EXPECT_TRUE(found) << "docs/plan-json.md quotes " << l << ", which texture-views' tensors[] do not hold";
    ++quoted;
  }
  EXPECT_GE(quoted, 2);
  for (const auto& [key, value] : r.items())
    EXPECT_NE(doc.str().find("| `" + key + "` |"), std::string::npos) << "docs/plan-json.md does not describe '" << key << "'";
}

// docs/library-api.md's "The planner alone": its program, compiled against
// the planner's library only, prints the lines shown under it.
TEST(Docs, PlannerAloneExamplePrintsWhatItShows) {
  std::ifstream in(fs::path(TEXPLAN_SOURCE_DIR) / "docs" / "library-api.md");
  std::string code, line;
  std::vector<std::string> shown;
  enum { Before, Section, Code, After } at = Before;
  while (std::getline(in, line)) {
    if (at == Before && line == "## The planner alone") at = Section;
    else if (at == Section && line == "```cpp") at = Code;
    else if (at == Code && line == "```") at = After;
    else if (at == Code) code += line + "\n";
    else if (at == After && line.rfind("    ", 0) == 0) shown.push_back(line.substr(4));
    else if (at == After && !shown.empty()) break;
  }
  ASSERT_FALSE(code.empty());
  ASSERT_EQ(shown.size(), 4u);
  const fs::path dir = fs::temp_directory_path() / ("texplan_docs_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "planner.cpp") << code;
  const fs::path build = fs::path(TEXPLAN_CLI).parent_path();
  const texplan::test::ShellResult c = texplan::test::sh(
      "c++ -std=c++20 -I " + std::string(TEXPLAN_SOURCE_DIR) + "/src " + (dir / "planner.cpp").string() + " " +
      (build / "libtexplan_plan.a").string() + " -o " + (dir / "planner").string());
  ASSERT_EQ(c.code, 0) << c.out;
  const texplan::test::ShellResult r = texplan::test::sh((dir / "planner").string());
  fs::remove_all(dir);
  EXPECT_EQ(r.code, 0);
  std::string expected;
  for (const std::string& s : shown) expected += s + "\n";
  EXPECT_EQ(r.out, expected);
}

namespace {

// GitHub's anchor of a heading: lower case, spaces to '-', punctuation
// other than '-' and '_' dropped.
std::string anchor_of(const std::string& heading) {
  std::string a;
  for (char c : heading) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_')
      a += char(std::tolower(static_cast<unsigned char>(c)));
    else if (c == ' ')
      a += '-';
  }
  return a;
}

std::set<std::string> anchors_of(const fs::path& doc) {
  std::set<std::string> anchors;
  std::ifstream in(doc);
  for (std::string l; std::getline(in, l);)
    if (const size_t text = l.find_first_not_of('#'); text > 0 && text != std::string::npos && l[text] == ' ')
      anchors.insert(anchor_of(l.substr(text + 1)));
  return anchors;
}

}  // namespace

// Code comments point to docs for the figures behind a choice
// ("docs/kernel-choices.md#cpu-depthwise-rows-per-block"): each pointer
// names a doc that exists and a section it has.
TEST(Docs, SourceCommentsPointToSectionsThatExist) {
  const fs::path root(TEXPLAN_SOURCE_DIR);
  const std::regex pointer(R"(docs/([A-Za-z0-9_-]+\.md)#([a-z0-9_-]+))");
  int pointers = 0;
  for (const char* dir : {"src", "include"})
    for (const auto& e : fs::recursive_directory_iterator(root / dir)) {
      if (!e.is_regular_file()) continue;
      std::ifstream in(e.path());
      int n = 0;
      for (std::string l; std::getline(in, l);) {
        ++n;
        for (std::sregex_iterator m(l.begin(), l.end(), pointer), end; m != end; ++m) {
          ++pointers;
          const fs::path doc = root / "docs" / (*m)[1].str();
          const std::string where = fs::relative(e.path(), root).string() + ":" + std::to_string(n);
          if (!fs::exists(doc)) {
            ADD_FAILURE() << where << " points to " << (*m)[0] << ", but there is no " << doc.filename();
            continue;
          }
          EXPECT_TRUE(anchors_of(doc).count((*m)[2].str()))
              << where << " points to " << (*m)[0] << ", a section " << doc.filename() << " does not have";
        }
      }
    }
  EXPECT_GE(pointers, 20);
}

// The README's layout table names every folder of src/, so a reader knows
// where each stage lives.
TEST(Readme, LayoutTableListsEverySourceFolder) {
  std::ifstream in(fs::path(TEXPLAN_SOURCE_DIR) / "README.md");
  std::stringstream readme;
  readme << in.rdbuf();
  for (const auto& e : fs::directory_iterator(fs::path(TEXPLAN_SOURCE_DIR) / "src"))
    if (e.is_directory()) {
      const std::string row = "| `src/" + e.path().filename().string() + "` |";
      EXPECT_NE(readme.str().find(row), std::string::npos) << "README.md's layout table has no row " << row;
    }
}
