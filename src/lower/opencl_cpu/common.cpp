#include "lower/opencl_cpu/common.h"

#include <algorithm>

#include "kernels/kernel_sources.h"
#include "lower/tuning.h"

namespace texplan::lower {

std::string CpuVariant::name() const {
  return (channel_vectors ? "v" : "") + std::to_string(ocb) + "x" + std::to_string(pb) +
         (nv > 1 ? "x" + std::to_string(nv) : "") + (cols_first ? "c" : "") +
         (local ? "/l" + std::to_string(local) : "");
}

namespace {
// Work-items per group along dim 0 for a grid of `x` x `rest` items: PoCL
// runs each work-group on one thread, and left to itself it may make one
// group of a small grid; at least ~32 groups balance its threads.
size_t group_items(int64_t x, int64_t rest) {
  size_t l = 8;
  while (l > 1 && (int64_t(l) > x || x * rest / int64_t(l) < 32))
    l /= 2;
  return l;
}
} // namespace

std::vector<CpuVariant> cpu_gemm_candidates(int64_t rows, int64_t cols,
                                            int64_t batches, int width,
                                            bool transcendental) {
  // 8 rows first: blocks of 12 or 16 rows read A down as many 4 KB-apart
  // streams (docs/kernel-choices.md#cpu-gemm-blocks-of-at-most-8-rows); few
  // rows or columns take thinner blocks.
  static const int kBlocks[][3] = {// ocb, pb, nv
                                   {8, 16, 2},  {8, 16, 1}, {6, 16, 1}, {4, 16, 4},
                                   {6, 16, 3},  {8, 16, 3}, {12, 16, 2},
                                   {16, 16, 1}, {4, 16, 2}, {2, 16, 4},
                                   {1, 16, 4},  {8, 8, 2},  {4, 8, 4},
                                   {2, 8, 4},   {1, 8, 4},  {1, 16, 1},
                                   {1, 8, 1},   {5, 16, 1}};
  std::vector<CpuVariant> v;
  for (const auto &k : kBlocks) {
    if (k[0] > rows || (k[1] * k[2] > cols && k[1] * k[2] > 16))
      continue;
    const int64_t x = ceil_div(rows, int64_t(k[0])); // dim 0: row blocks
    v.push_back({k[0], k[1], group_items(x, ceil_div(cols, int64_t(k[1] * k[2])) *
                                               std::max<int64_t>(1, batches)),
                 k[2]});
  }
  // The shape rule: least work per useful output, the work being the rows
  // and columns computed (a cut block computes whole vectors) over the
  // block's speed, which grows with its accumulator registers up to what
  // the register file holds beside one broadcast and the B vectors.
  // - 16-float registers (AVX-512): speed grows up to 24 PB-vectors of
  //   accumulators (8 rows x 3 vectors), counting only vectors with columns
  //   to compute; at most 8 rows
  //   (docs/kernel-choices.md#cpu-gemm-blocks-on-16-float-registers-avx-512).
  // - 8-float registers (AVX2, 16 of them): at most 12 accumulator
  //   registers, so 6x16 (MLAS's AVX2 block too); 8x16 and 8x16x2 spill
  //   (docs/kernel-choices.md#cpu-gemm-blocks-on-8-float-registers-avx2).
  //   With a transcendental epilogue (EfficientNet's SiLU) at most 10, so
  //   5x16: its inline exp keeps constants in registers across the K loop
  //   and LLVM spills an accumulator of 6x16 there
  //   (docs/kernel-choices.md#cpu-gemm-with-a-transcendental-epilogue).
  // Ties go to the first listed.
  const bool narrow = width <= 8;
  auto cost = [&](const CpuVariant &c) {
    const int64_t bw = c.pb * c.nv;
    const double cw = double(cols <= bw ? bw : ceil_div(cols, bw) * bw) /
                      double(cols),
                 rw = double(ceil_div(rows, int64_t(c.ocb)) * c.ocb) /
                      double(rows);
    if (narrow) {
      const int regs = c.ocb * c.nv * c.pb / std::max(width, 1), limit = transcendental ? 10 : 12;
      return cw * rw * 12.0 / double(std::min(regs, limit)) + (regs > limit ? 1e9 : 0.0);
    }
    const int64_t a = std::min<int64_t>(c.ocb * std::min<int64_t>(c.nv, ceil_div(cols, int64_t(c.pb))), 24);
    return cw * rw * 24.0 / double(a) + (c.ocb > 8 ? 1e9 : 0.0);
  };
  size_t best = 0;
  for (size_t i = 1; i < v.size(); ++i)
    if (cost(v[i]) < cost(v[best]) * 0.999)
      best = i;
  std::rotate(v.begin(), v.begin() + long(best), v.begin() + long(best) + 1);
  // Walking rows, each panel of B is read once while A is read once per
  // column block; walking columns, the reverse. With 2-4 column blocks (17
  // to 64 columns: 7x7 planes) and A the weights, columns first read the
  // large A once (7x7 1x1 convs 8-90% faster in the tuning above); the
  // other walk is offered to the tuner.
  auto walk = [&](CpuVariant &c, bool cols_first) {  // dim 0's blocks grouped as cpu_range does
    const int64_t rb = ceil_div(rows, int64_t(c.ocb)), cb = ceil_div(cols, int64_t(c.pb * c.nv)),
                  nb = std::max<int64_t>(1, batches);
    c.cols_first = cols_first;
    c.local = cols_first ? group_items(cb, rb * nb) : group_items(rb, cb * nb);
  };
  if (!narrow && cols > 16 && cols <= 64)
    walk(v[0], true);
  CpuVariant flip = v[0], driver = v[0];
  walk(flip, !v[0].cols_first);
  v.push_back(flip);
  driver.local = 0; // the driver's group size against the chosen one
  v.push_back(driver);
  return v;
}

std::vector<CpuVariant> cpu_candidates(int64_t rows, int64_t cols) {
  std::vector<CpuVariant> v;
  int ocb0 = rows >= 8 ? 8 : rows >= 4 ? 4 : 1, pb0 = cols >= 16 ? 16 : 8;
  v.push_back({ocb0, pb0, 0});
  for (int ocb : {1, 4, 8, 16})
    for (int pb : {8, 16}) {
      if (ocb > 1 && ocb / 2 >= rows)
        continue; // most of the block idle
      if (pb == 16 && cols < 9)
        continue;
      if (ocb != ocb0 || pb != pb0)
        v.push_back({ocb, pb, 0});
    }
  for (size_t local : {1, 4})
    v.push_back(
        {ocb0, pb0, local}); // the driver's group size against fixed ones
  return v;
}

Source cpu_source(const char *file, const CpuVariant &v, const FusedTail &tail,
                  const std::string &defines) {
  const std::string pb = std::to_string(v.pb);
  return Source(file,
                "-DOCB=" + std::to_string(v.ocb) + " -DPB=" + pb +
                    " -DEPI_VECTOR_WIDTH=" + pb + defines,
                tail.prelude + "\n" + kernels::sources().at("cpu_common.cl"));
}

Range cpu_range(const CpuVariant &v, int64_t cols, int64_t rows,
                int64_t batches) {
  Range r;
  r.dims = 3;
  size_t x = size_t(ceil_div(cols, v.pb));
  if (v.local) {
    r.has_local = true;
    r.local[0] = v.local;
    x = size_t(ceil_div(int64_t(x), int64_t(v.local))) * v.local;
  }
  r.global[0] = x;
  r.global[1] = size_t(ceil_div(rows, v.ocb));
  r.global[2] = size_t(std::max<int64_t>(1, batches));
  return r;
}

int pick_cpu_variant(NodeBuilder &b, const std::string &key,
                     const std::vector<CpuVariant> &vs,
                     const std::function<void(const CpuVariant &)> &emit) {
  std::vector<std::string> names;
  for (const CpuVariant &x : vs)
    names.push_back(x.name());
  if (const std::string &f = b.kernel_choice.cpu; !f.empty()) {
    for (size_t i = 0; i < names.size(); ++i) // without "/lL": any group size
      if (names[i] == f || names[i].substr(0, names[i].find('/')) == f)
        return int(i);
    std::string all;
    for (const std::string &x : names)
      all += " " + x;
    throw Error("no CPU variant " + f + " for " + key + " (candidates:" + all +
                ")");
  }
  return choose_variant(key, names, 0, [&](int i) {
    return time_candidate(b, [&] { return emit(vs[size_t(i)]), true; });
  });
}

std::string dims_key(std::initializer_list<int64_t> v) {
  std::string s;
  for (int64_t x : v)
    s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

} // namespace texplan::lower
