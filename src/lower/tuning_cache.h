// One file of tuning results (`--tuning-cache FILE`), shared by every part
// that measures candidates once and reuses the winner: texplan's own kernel
// variants (section "texplan") and the CLBlast offload (section "clblast").
// Each part reads and writes only its own section; saving keeps the others.
// Entries are keyed by device (Device::info().name plus driver version) so a
// file moved to another GPU is searched again, not trusted.
// Keys of section "texplan" start with the kernel they choose for:
// "conv2d_cpu ..." and friends (lower/opencl_cpu/conv_gemm.cpp, CPU devices), "conv2d_gemm
// N,C,H,W,OC,OH,OW,KH,KW,sh,sw,ph,pw,dh,dw,groups" and "gemm
// M,N,K,batches,a_kfast,b_nfast" (lower/conv.cpp, GPU tiles).
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace texplan::lower {

class TuningCache {
 public:
  TuningCache() = default;  // in memory only: save() does nothing
  // Reads FILE if it exists (a missing file is an empty cache); throws Error
  // naming the file if it exists but is not a tuning cache.
  explicit TuningCache(std::string path);
  const std::string& path() const { return path_; }
  // The JSON object of `section` for `device`, created empty on first use.
  nlohmann::json& entry(const std::string& section, const std::string& device);
  // Writes the file (atomically: temp file, then rename); throws Error on failure.
  void save() const;
  bool dirty() const { return dirty_; }
  void mark_dirty() { dirty_ = true; }

 private:
  std::string path_;
  nlohmann::json data_ = nlohmann::json::object();
  bool dirty_ = false;
};

}  // namespace texplan::lower
