// The tests' main: GoogleTest's, plus one thing for `make sanitize`.
//
// LeakSanitizer checks at exit by stopping every thread and reading its
// stack and TLS. At exit PoCL's device threads are being torn down by its
// own destructors, and that race crashed the checker itself ("Tracer caught
// signal 11") after a test had passed. So under the sanitizers the leak check
// runs once all tests are done and before exit, while PoCL's threads sit idle;
// it is the same check (a leak still fails the process), only earlier, and
// LeakSanitizer then skips its at-exit pass.
#include <gtest/gtest.h>

#if defined(__SANITIZE_ADDRESS__)
#define TEXPLAN_LEAK_CHECK 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(leak_sanitizer)
#define TEXPLAN_LEAK_CHECK 1
#endif
#endif

#ifdef TEXPLAN_LEAK_CHECK
#include <sanitizer/lsan_interface.h>

namespace {
class LeakCheckBeforeExit : public testing::Environment {
 public:
  void TearDown() override { __lsan_do_leak_check(); }
};
}  // namespace
#endif

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
#ifdef TEXPLAN_LEAK_CHECK
  testing::AddGlobalTestEnvironment(new LeakCheckBeforeExit);
#endif
  return RUN_ALL_TESTS();
}
