// How much the commands say: --quiet (errors only), normal, --verbose (stage
// timings and per-item lines on stderr), and a progress line for long work.
//
//   Progress p("onnx tests", tests.size());
//   for (size_t i = 0; i < tests.size(); ++i) {
//     p.step(i, tests[i]);     // "[ 37/1218]   3%  0:02 elapsed  test_abs"
//     ... work ...
//     p.clear();               // before printing a result line of one's own
//     std::cout << ...;
//   }                          // the destructor erases the line
//
// The progress line goes to stderr, only when stderr is a terminal and not
// --quiet, redrawn at most ten times a second; piped or redirected output
// never contains it. Only the outermost live Progress draws.
#pragma once
#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

namespace texplan::report {

enum class Verbosity { Quiet, Normal, Verbose };
void set_verbosity(Verbosity v);
Verbosity verbosity();

// stderr under --verbose; a stream that drops everything otherwise.
std::ostream& verbose_log();

class Progress {
 public:
  Progress(std::string label, int64_t total);  // total 0: unknown
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void step(int64_t done, const std::string& item = "");
  void clear();  // erase the line; the next step() redraws it

  // Whether progress lines are drawn in this process (stderr is a terminal,
  // not --quiet; TEXPLAN_PROGRESS=0/1 overrides the terminal test).
  static bool enabled();

 private:
  std::string label_;
  int64_t total_;
  bool active_ = false;  // this one draws (the outermost, and enabled())
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace texplan::report
