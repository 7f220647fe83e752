// run --check's judgement of its outputs against a model's test data:
// how far they are, and whether the reference can tell a right run from a
// wrong one at all.
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "cli/commands.h"

namespace texplan::cli {

double relative_error(const HostTensor& out, const HostTensor& ref) {
  std::vector<float> a = out.as_float(), b = ref.as_float();
  if (a.size() != b.size()) return INFINITY;
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    double d = double(a[i]) - double(b[i]);
    num += d * d;
    den += double(b[i]) * double(b[i]);
  }
  if (std::isnan(num)) return INFINITY;
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

// Why a reference output cannot tell a right run from a wrong one (all
// zeros, or every element equal: a zero classifier head), or "" when it
// can. A single nonzero value is a fair reference.
std::string trivial_reference(const HostTensor& ref) {
  const std::vector<float> v = ref.as_float();
  if (v.empty() || !std::all_of(v.begin(), v.end(), [&](float x) { return x == v[0]; })) return "";
  if (v[0] == 0) return "all zeros";
  if (v.size() == 1) return "";
  std::ostringstream o;
  o << "constant (every element " << v[0] << ")";
  return o.str();
}

// Why a floating-point output cannot tell a right run from a wrong one
// although it is neither zero nor constant, or "": `probe`, the output for a
// second, random input, is within `tolerance` of `out`. The output then
// hardly depends on what the network computes (GoogLeNet with torchvision's
// initialisation: its classifier's bias to 1e-12 whatever the input).
std::string insensitive_output(const HostTensor& out, const HostTensor& probe, double tolerance) {
  if (!is_float(out.dtype) || out.count() < 2 || probe.dtype != out.dtype) return "";
  const double moved = relative_error(probe, out);
  if (!(moved <= tolerance)) return "";
  std::ostringstream o;
  o << "the same for another input (a second, random input moves it by " << std::scientific << std::setprecision(2)
    << moved << " relative, within the tolerance)";
  return o.str();
}

}  // namespace texplan::cli
