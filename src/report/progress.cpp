#include "report/progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <streambuf>

namespace texplan::report {

namespace {

Verbosity g_verbosity = Verbosity::Normal;
Progress* g_outermost = nullptr;

struct NullBuf : std::streambuf {
  int overflow(int c) override { return c; }
};

std::string clock_text(double seconds) {
  long s = long(seconds);
  char b[32];
  if (s >= 3600)
    std::snprintf(b, sizeof b, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  else
    std::snprintf(b, sizeof b, "%ld:%02ld", s / 60, s % 60);
  return b;
}

int terminal_columns() {
  winsize ws{};
  if (ioctl(2, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20) return ws.ws_col;
  if (const char* c = std::getenv("COLUMNS")) {
    int n = std::atoi(c);
    if (n > 20) return n;
  }
  return 80;
}

}  // namespace

void set_verbosity(Verbosity v) { g_verbosity = v; }
Verbosity verbosity() { return g_verbosity; }

std::ostream& verbose_log() {
  static NullBuf null_buf;
  static std::ostream null_stream(&null_buf);
  return g_verbosity == Verbosity::Verbose ? std::cerr : null_stream;
}

bool Progress::enabled() {
  if (g_verbosity == Verbosity::Quiet) return false;
  if (const char* e = std::getenv("TEXPLAN_PROGRESS")) return std::string(e) == "1";
  return isatty(2) == 1;
}

Progress::Progress(std::string label, int64_t total) : label_(std::move(label)), total_(total) {
  start_ = last_ = std::chrono::steady_clock::now();
  if (!g_outermost && enabled()) {
    g_outermost = this;
    active_ = true;
  }
}

Progress::~Progress() {
  clear();
  if (g_outermost == this) g_outermost = nullptr;
}

void Progress::step(int64_t done, const std::string& item) {
  if (!active_) return;
  auto now = std::chrono::steady_clock::now();
  if (shown_ && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  std::string line = label_;
  char b[96];
  if (total_ > 0) {
    const int w = int(std::to_string(total_).size());
    std::snprintf(b, sizeof b, " [%*lld/%lld] %3d%%", w, (long long)done, (long long)total_,
                  int(100.0 * double(done) / double(total_)));
    line += b;
  }
  line += "  " + clock_text(elapsed) + " elapsed";
  if (total_ > 0 && done > 0 && done < total_)
    line += ", ~" + clock_text(elapsed / double(done) * double(total_ - done)) + " left";
  if (!item.empty()) line += "  " + item;
  const size_t cols = size_t(terminal_columns() - 1);
  if (line.size() > cols) line.resize(cols);
  std::cerr << "\r\x1b[K" << line << std::flush;
  shown_ = true;
}

void Progress::clear() {
  if (!active_ || !shown_) return;
  std::cerr << "\r\x1b[K" << std::flush;
  shown_ = false;
}

}  // namespace texplan::report
