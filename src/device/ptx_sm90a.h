// Hopper's sm_90a-only instructions (wgmma) under NVIDIA's OpenCL driver,
// whose compiler targets sm_90, where ptxas refuses them: a kernel built
// with -DSM90A_PATCH writes them as PTX comments "// @@..."; the PTX read
// back from the program is uncommented and retargeted here, then built again
// as a binary (Device::program; bench/kernels/gemm_probe.cpp --sm90a).
// Header-only: the probe links OpenCL alone.
// docs/kernel-choices.md#wgmma-through-ptx-retargeted-to-sm_90a
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace texplan {

// `ptx` with its "// @@" lines uncommented (how many into `uncommented`)
// and its target sm_90a; none when it has no sm_90 target or no such line.
inline std::optional<std::string> ptx_for_sm90a(std::string ptx, size_t* uncommented = nullptr) {
  size_t n = 0;
  for (size_t at; (at = ptx.find("// @@")) != std::string::npos; ++n) ptx.erase(at, 5);
  if (uncommented) *uncommented = n;
  const size_t target = ptx.find(".target sm_90");
  if (target == std::string::npos || n == 0) return std::nullopt;
  if (ptx.compare(target, 14, ".target sm_90a") != 0) ptx.insert(target + 13, "a");
  return ptx;
}

}  // namespace texplan
