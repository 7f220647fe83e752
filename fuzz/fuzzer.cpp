// libFuzzer entry point for one target of targets.h, chosen at compile time
// (-DTEXPLAN_FUZZ_TARGET="import"). Built with clang by fuzz/CMakeLists.txt.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "targets.h"

namespace {
void (*run)(const uint8_t*, size_t) = nullptr;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  for (const auto& t : texplan::fuzz::targets())
    if (std::strcmp(t.name, TEXPLAN_FUZZ_TARGET) == 0) run = t.run;
  if (!run) {
    std::fprintf(stderr, "no fuzz target %s\n", TEXPLAN_FUZZ_TARGET);
    std::abort();
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (const char* dump = std::getenv("TEXPLAN_FUZZ_DUMP"); dump && std::strcmp(TEXPLAN_FUZZ_TARGET, "shapes") == 0) {
    std::ofstream(dump, std::ios::binary) << texplan::fuzz::shapes_model(data, size);
  }
  run(data, size);
  return 0;
}
