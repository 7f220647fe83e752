// Random records shaped like real model graphs, for property and scale
// tests: about one producer step per record (some steps produce two, like
// multi-output nodes or parallel branches), most tensors consumed by the
// next step or two, some fanned out a few steps ahead, a few carried far
// (residual and U-Net skips). Sizes are log-uniform in [1 KiB, 4 MiB] and
// often repeat the previous tensor's (elementwise chains keep shapes).
// Deterministic for a seed: own generator (splitmix64) and conversions,
// not std:: distributions, whose output differs between standard libraries.
#include <algorithm>
#include <cmath>

#include "plan/memory_plan.h"
#include "plan/rng.h"

namespace texplan::plan {

std::vector<UsageRecord> random_records(int64_t n, uint64_t seed) {
  constexpr int64_t kMaxRecords = 20000000;  // ~2 GB of records: beyond, refuse rather than exhaust memory
  if (n > kMaxRecords)
    throw PlanError("random graphs are limited to " + std::to_string(kMaxRecords) + " tensors, asked for " +
                    std::to_string(n));
  detail::SplitMix64 rng{seed};
  std::vector<UsageRecord> recs(static_cast<size_t>(std::max<int64_t>(n, 0)));
  const double lo = std::log(1024.0), hi = std::log(4.0 * 1024 * 1024);
  int32_t step = 0;
  for (size_t i = 0; i < recs.size(); ++i) {
    UsageRecord& r = recs[i];
    r.name = 't' + std::to_string(i);  // a char, not "t": GCC 12 warns falsely (-Wrestrict) on that
    r.op = i == 0 ? "input" : "random";
    if (i > 0 && rng.uniform() >= 0.15) ++step;  // else: a second output of the same step
    r.first = step;
    if (i > 0 && rng.uniform() < 0.5) {
      r.bytes = recs[i - 1].bytes;
    } else {
      r.bytes = std::max<int64_t>(4, static_cast<int64_t>(std::exp(lo + rng.uniform() * (hi - lo))) / 4 * 4);
    }
  }
  const int32_t last_step = step;
  for (UsageRecord& r : recs) {
    const double kind = rng.uniform();
    uint32_t lifetime = 1 + (rng.uniform() < 0.3 ? 1 : 0);       // the next node or two
    if (kind < 0.03) lifetime = 8 + rng.below(120);               // a long skip
    else if (kind < 0.15) lifetime = 1 + rng.below(6);            // fan-out
    r.last = std::min(last_step, r.first + static_cast<int32_t>(lifetime));
  }
  return recs;
}

}  // namespace texplan::plan
