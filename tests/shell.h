// Runs a shell command in tests and captures what it prints and its exit code.
#pragma once
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace texplan::test {

struct ShellResult {
  int code;         // exit status, -1 if killed by a signal
  std::string out;  // stdout (and stderr when merged)
};

inline ShellResult sh(const std::string& cmd, bool merge_stderr = true) {
  FILE* p = popen((merge_stderr ? cmd + " 2>&1" : cmd).c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace texplan::test
