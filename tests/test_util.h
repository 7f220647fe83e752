// Helpers shared by the tests (and bench/kernels): random tensors, the
// device kernel tests run on, and the error measure they compare with.
// Attributes are made with Attribute::of_int, of_ints, ... (graph/graph.h).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "device/device.h"
#include "graph/graph.h"

namespace texplan::test {

// Float32 values uniform in [lo, hi) drawn from `rng`: tests that draw
// several tensors from one stream.
inline HostTensor random_tensor(Shape s, std::mt19937& rng, float lo = -1, float hi = 1) {
  std::uniform_real_distribution<float> u(lo, hi);
  HostTensor t(DataType::Float32, std::move(s));
  for (int64_t i = 0; i < t.count(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

// The same values for the same shape, range and seed; tensors of different
// sizes differ even with the same seed.
inline HostTensor random_tensor(Shape s, float lo = -1, float hi = 1, uint32_t seed = 1) {
  std::mt19937 rng(seed * 7919u + uint32_t(element_count(s)));
  return random_tensor(std::move(s), rng, lo, hi);
}

// Kernel and session tests run on TEXPLAN_TEST_DEVICE (a device spec) when
// set, e.g. "gpu" on a GPU machine; PoCL otherwise.
inline std::shared_ptr<runtime::Device> test_device() {
  const char* spec = std::getenv("TEXPLAN_TEST_DEVICE");
  return runtime::open_device(spec ? spec : "pocl");
}

// max |a - r| over max |r|: the error relative to the output's scale
// (infinite when the sizes differ or only one side is NaN).
inline double rel_error(const HostTensor& a, const HostTensor& r) {
  const std::vector<float> x = a.as_float(), y = r.as_float();
  if (x.size() != y.size()) return INFINITY;
  double num = 0, den = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    if (std::isnan(y[i]) != std::isnan(x[i])) return INFINITY;
    if (std::isnan(y[i])) continue;
    num = std::max(num, double(std::fabs(x[i] - y[i])));
    den = std::max(den, double(std::fabs(y[i])));
  }
  return den > 0 ? num / den : num;
}

}  // namespace texplan::test
