// Kernel variants named instead of chosen, for measurements and tests
// (bench/kernels/conv_bench, bench/bench_main --kernels, tests/): a session
// takes them in SessionOptions::kernel_choice and hands them to every node's
// lowering (NodeBuilder::kernel_choice). The default chooses every kernel by
// shape, device and tuning cache, as production runs do.
#pragma once
#include <string>

namespace texplan::lower {

struct KernelChoice {
  // The GPU conv and GEMM kernels (gemm.cl, conv.cl, conv_winograd.cl) on
  // every device, CPUs included: "gpu" with the tiles chosen by shape or
  // tuning; tiles "MxN" ("v" after them for float4 local reads, "taps:" in
  // front for the baseline conv, conv_tile_variants()); "/split" after them
  // for split-K with the slices by shape, "/sN" for N slices; "winograd",
  // "winograd/split", "winograd/sN" and ":form"s (ops.h) for conv_winograd.cl
  // on the 3x3 stride-1 single-group convs. "": the choice by shape and device.
  std::string conv{};
  // FusedConvMaxPool with overlapping windows: "direct" or "tiled:<tile>"
  // (conv_maxpool_variants()); "": by shape and tuning cache.
  std::string conv_maxpool{};
  // FusedAttention's GPU kernel: "short" (all of a row's scores in local
  // memory, key sequences up to 256), "tiled" (key tiles in turn, blocks by
  // the grid's size) or the tiled kernel's blocks "BMxSPLIT": BM query rows
  // per work-group, SPLIT work-items per row (BM of 8, 16 or 32; BM x SPLIT
  // of 32 to 512); "": short up to 256 keys, else tiled.
  std::string attention{};
  // RecurrentSteps' kernel: "steps" (a launch a step) or "persistent" (all
  // steps in one launch, a grid barrier between them; devices with a
  // device-wide fence, runtime::DeviceInfo::grid_fence); "": persistent
  // wherever there is one, else steps.
  std::string recurrent{};
  // --precision tf32's tiles (mma_tile_variants()), "+FLAG" after them for a
  // diagnostic build of gemm_mma.cl; "": by shape and tuning cache.
  std::string mma{};
  // CPU devices' register block "OCBxPB[xNV]" (CpuVariant::name, any group
  // size without "/lL") wherever a lowering offers it; a lowering that does
  // not throws Error. "": by shape and tuning cache.
  std::string cpu{};
  // CPU devices' 3x3 convs: "direct" (no Winograd) or a Winograd variant
  // "fM OCBxPB wOCW cCC"; "": by shape and tuning cache.
  std::string cpu_winograd{};
  // The tf32 kernels on every device, the tensor-core instruction emulated
  // in OpenCL C (no inline PTX), so PoCL checks their data layouts; with
  // Precision::Tf32 a session then runs tf32 anywhere.
  bool tf32_emulation = false;
  // The tf32 tiles' split-K into this many slices wherever it is allowed
  // (0: by shape; tests and texplan_conv_bench's "tf32:TILES/sN").
  int tf32_splits = 0;
  // Programs built with -cl-opt-disable: for tests that check the GPU
  // kernels' results on PoCL, whose code generation for their unrolled tiles
  // takes seconds per program when optimized.
  bool unoptimized_programs = false;
};

// Throws Error naming the first unknown variant of `c` (the CPU register
// block is checked where a lowering offers its candidates).
void check_kernel_choice(const KernelChoice& c);

}  // namespace texplan::lower
