#include "runtime/memory_check.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace texplan::runtime {

std::string pool_out_of_memory(const std::string& model, int pool_id, const std::string& kind, int64_t bytes,
                               const DeviceInfo& device, const std::string& reason) {
  return model + ": out of memory: pool " + std::to_string(pool_id) + " (" + kind + ", " + human_bytes(bytes) +
         ") does not fit device '" + device.name + "': " + reason;
}

namespace {

// Room the driver needs beside the pool itself (its own bookkeeping, the
// kernels it compiles): a reservation of the pool alone that just fits
// would leave the driver to abort on its next allocation.
constexpr int64_t kDriverHeadroom = int64_t(64) << 20;

}  // namespace

void check_pool_fits(const std::string& model, int pool_id, const std::string& kind, int64_t bytes, int64_t allocated,
                     const DeviceInfo& device) {
  const plan::DeviceProfile& p = device.profile;
  auto refuse = [&](const std::string& reason) {
    throw Error(pool_out_of_memory(model, pool_id, kind, bytes, device, reason));
  };
  if (bytes <= 0) return;
  if (p.max_alloc_bytes > 0 && bytes > p.max_alloc_bytes)
    refuse("exceeds the device's largest allocation, " + human_bytes(p.max_alloc_bytes) + " (global memory " +
           human_bytes(p.global_mem_bytes) + ")");
  if (p.global_mem_bytes > 0 && bytes > p.global_mem_bytes - std::min(allocated, p.global_mem_bytes))
    refuse("exceeds the device's global memory, " + human_bytes(p.global_mem_bytes) + ", of which " +
           human_bytes(allocated) + " already hold earlier pools");
  if (device.type != "cpu") return;
  // The probe maps without touching a page, so it costs next to nothing; it
  // fails where the driver's own allocation would: beyond the address-space
  // limit (ulimit -v) or what the kernel agrees to commit.
  const size_t probe = size_t(bytes) + size_t(kDriverHeadroom);
  void* m = ::mmap(nullptr, probe, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED)
    refuse("the host cannot give this process " + human_bytes(int64_t(probe)) + " more (" + std::strerror(errno) +
           "; the device's memory is host memory)");
  ::munmap(m, probe);
}

}  // namespace texplan::runtime
