// Shared pieces of the CPU-device lowerings (lower/opencl_cpu/conv_gemm.cpp,
// lower/opencl_cpu/depthwise.cpp, lower/opencl_cpu/winograd.cpp): register-block variants of
// the cpu_*.cl kernels, their sources and ranges, the tuning pick among
// them, and a 1-D/2-D convolution's geometry read once from the node.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "lower/ops.h"

namespace texplan::lower {

// A register block "OCBxPB" (output channels or rows x pixels or columns per
// work-item) and a work-group size along dim 0 (0: the driver chooses);
// gemm_block_cpu and gemv_rows_cpu also take nv PB-wide vectors per row
// ("OCBxPBxNV" when nv > 1).
struct CpuVariant {
  int ocb, pb;
  size_t local;
  int nv = 1;
  // gemm_block_cpu: consecutive work-items walk columns ("c" in the name),
  // sharing one block of A rows, instead of rows sharing a panel of B.
  bool cols_first = false;
  // conv2d_ocvec_cpu's blocks: ocb pixels x nv vectors of pb output
  // channels, named with a "v" in front ("v6x8x2").
  bool channel_vectors = false;
  std::string name() const;
};

// Candidates for `rows` output channels (or GEMM rows) and `cols` pixels
// (columns); the first is the heuristic's choice, tried first and used
// without a tuning cache.
std::vector<CpuVariant> cpu_candidates(int64_t rows, int64_t cols);

// Register blocks of gemm_block_cpu (lower/opencl_cpu/conv_gemm.cpp) for `rows` x `cols` per
// batch over `batches`: OCB <= rows, and OCB x NV vectors of accumulators
// (more FMAs per load than cpu_candidates' OCB x 1); the first is the
// shape rule's choice for a device whose SIMD registers hold `width` floats
// (DeviceInfo::native_float_width). Work-groups are sized so PoCL's threads
// get at least a few dozen of them.
// `transcendental`: the fused epilogue is one (Epilogue::transcendental).
std::vector<CpuVariant> cpu_gemm_candidates(int64_t rows, int64_t cols, int64_t batches, int width = 16,
                                            bool transcendental = false);

// `file` (a cpu_*.cl kernel file) built for variant v with the epilogue of
// `tail`; cpu_common.cl's block macros come between the two.
Source cpu_source(const char *file, const CpuVariant &v, const FusedTail &tail,
                  const std::string &defines = "");

// Range of ceil(cols / v.pb) x ceil(rows / v.ocb) x batches work-items,
// grouped by v.local along dim 0 (global rounded up: kernels bound-check).
Range cpu_range(const CpuVariant &v, int64_t cols, int64_t rows,
                int64_t batches);

// Picks one of vs for `key`: the one KernelChoice::cpu names (CpuVariant::name;
// without "/lL" the first candidate of that block, any group size; Error if
// vs lacks it), else measuring each with `emit` (which prepares the launch as
// the last of b.launches) when the tuning scope searches.
int pick_cpu_variant(NodeBuilder &b, const std::string &key,
                     const std::vector<CpuVariant> &vs,
                     const std::function<void(const CpuVariant &)> &emit);

// "a,b,c": the shape part of a tuning key.
std::string dims_key(std::initializer_list<int64_t> v);

// A Conv's geometry as 2-D (1-D convs have H = OH = KH = 1).
struct CpuConv {
  int64_t N, C, H, W, OC, OH, OW, KH, KW, sh, sw, dh, dw, ph, pw, groups;
  bool has_bias;
  TensorArg bias; // the bias, or any valid buffer when there is none
  // channel_scaled(): X's channels scaled by these C values first.
  std::optional<TensorArg> channel_scale = std::nullopt;
};

} // namespace texplan::lower
