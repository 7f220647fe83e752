#include "runtime/cpu_lowering.h"

#include "kernels/kernel_sources.h"
#include "runtime/tuning.h"

namespace texplan::runtime {

std::string CpuVariant::name() const {
  return std::to_string(ocb) + "x" + std::to_string(pb) +
         (local ? "/l" + std::to_string(local) : "");
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

} // namespace texplan::runtime
