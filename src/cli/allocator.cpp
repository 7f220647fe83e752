#include "cli/allocator.h"

#include <malloc.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <fstream>
#include <string>

namespace texplan::cli {

namespace {

// glibc's names for the three mallopt settings below, and huge pages.
constexpr const char* kTunables =
    "glibc.malloc.hugetlb=1:glibc.malloc.trim_threshold=2147483647:glibc.malloc.mmap_threshold=33554432:"
    "glibc.malloc.top_pad=67108864";

// "always [madvise] never": huge pages only where a program asks for them.
bool huge_pages_on_request() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string mode;
  std::getline(f, mode);
  return mode.find("[madvise]") != std::string::npos;
}

}  // namespace

void tune_allocator(char** argv, bool huge_pages) {
  const char* set = std::getenv("GLIBC_TUNABLES");
  if (set && std::string(set).find("glibc.malloc.") != std::string::npos) return;  // the user's (or ours, after exec)
  if (!set && huge_pages && huge_pages_on_request()) {
    setenv("GLIBC_TUNABLES", kTunables, 1);
    execv("/proc/self/exe", argv);
    unsetenv("GLIBC_TUNABLES");  // no exec: go on with the settings below
  }
  // The heap grows 64 MiB at a time, freed memory stays for the next stage
  // instead of going back to the kernel and faulting in again, and blocks
  // up to 32 MiB come from the heap.
  mallopt(M_TOP_PAD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, INT_MAX);
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
}

const char* allocator_pages() {
  const char* set = std::getenv("GLIBC_TUNABLES");
  return set && std::string(set).find("glibc.malloc.hugetlb=1") != std::string::npos ? "huge pages" : "4 KiB pages";
}

}  // namespace texplan::cli
