// Internal to the planner: a tiny deterministic generator (splitmix64), the
// same sequence on every platform, unlike std:: distributions.
#pragma once
#include <cstdint>

namespace texplan::plan::detail {

struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  uint32_t below(uint32_t n) { return static_cast<uint32_t>(uniform() * n); }  // [0, n)
};

}  // namespace texplan::plan::detail
