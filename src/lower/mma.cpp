// TF32 tensor-core lowerings onto src/kernels/gemm_mma.cl (lower/mma.h).
#include "lower/mma.h"

#include <algorithm>

#include "graph/epilogue.h"
#include "kernels/kernel_sources.h"
#include "lower/tuning.h"

namespace texplan::lower {

namespace {

// Register tiles of gemm_mma.cl: a BM x BN block per work-group, WM x WN per
// warp. `speed`: expected throughput per work-group relative to 64x64 (more
// mma per local-memory read); bigger tiles leave compute units idle on small
// problems, as in lower/conv_select.cpp's choose_tiles. `stages` > 0:
// conv2d_mma_taps (convolutions with constant weights only) with that many
// slices in flight, each stage BM x 16 + 16 x (BN + 8) words of local
// memory, at most 48 KB in all; `slice`: the channels of a tap a slice
// takes (conv2d_wgmma_taps: 16 or 32, stages of (BM + BN) x slice words).
struct MmaTiles {
  const char* name;
  int bm, bn, wm, wn;
  double speed;
  int stages = 0;
  bool wgmma = false;  // conv2d_wgmma_taps (sm_90a): bm / 64 warpgroups, bm x bn
  int slice = 16;
  bool pipelined = false;  // conv2d_wgmma_taps with two slices' products in flight (WG_PIPE)
  int threads() const { return (bm / wm) * (bn / wn) * 32; }
};
// Speeds as texplan_conv_bench found them on a GPU; 4-warp tiles of
// 64x32 warp blocks spill registers, 8-warp ones do not, so the first is the
// default (docs/kernel-choices.md#tf32-tile-speeds).
const MmaTiles kMmaTiles[] = {{"mma64x64w8", 64, 64, 32, 16, 1.02},  // first: the default where nothing fits better
                              {"mma32x64", 32, 64, 32, 32, 0.6},
                              {"mma64x64", 64, 64, 32, 32, 1.0},
                              {"mma128x64", 128, 64, 64, 32, 1.1},
                              {"mma64x128", 64, 128, 32, 64, 0.85},
                              {"mma128x128", 128, 128, 64, 32, 1.3},
                              // 8 warps of smaller blocks: fewer registers per work-item
                              {"mma128x64w8", 128, 64, 32, 32, 1.1},
                              {"taps128x64", 128, 64, 64, 32, 2.0, 3},
                              {"taps128x64w8", 128, 64, 32, 32, 1.8, 3},
                              {"taps64x64", 64, 64, 32, 32, 1.5, 4},
                              {"taps64x64w8", 64, 64, 32, 16, 1.2, 4},
                              {"taps32x64", 32, 64, 32, 32, 0.9, 4},
                              {"taps128x128", 128, 128, 64, 32, 1.9, 2},
                              // Hopper's warpgroup instruction (sm_90a), guessed only against each
                              // other (wgmma_before_winograd); their speeds: a work-group's time per
                              // slice hardly depends on its tile, so they go with the area
                              // (VGG-16's 256->256 56x56 on the H200, docs/kernel-choices.md#warpgroup-tiles)
                              {"wgmma64x128", 64, 128, 16, 128, 2.07, 3, true},
                              {"wgmma64x64", 64, 64, 16, 64, 1.0, 4, true},
                              {"wgmma64x64k32", 64, 64, 16, 64, 1.0, 3, true, 32},
                              {"wgmma64x128k32", 64, 128, 16, 128, 1.8, 2, true, 32},
                              // two warpgroups sharing the slice's input
                              {"wgmma128x64", 128, 64, 16, 64, 2.6, 3, true},
                              {"wgmma128x64k32", 128, 64, 16, 64, 2.0, 2, true, 32},
                              {"wgmma128x128", 128, 128, 16, 128, 5.4, 3, true},
                              // two slices' products in flight, the copies one slice less ahead:
                              // not measured yet, so below every other tile of the guess
                              {"wgmma128x64p", 128, 64, 16, 64, 0.5, 4, true, 16, true},
                              {"wgmma64x128p", 64, 128, 16, 128, 0.5, 4, true, 16, true},
                              {"wgmma128x128p", 128, 128, 16, 128, 0.5, 3, true, 16, true}};
constexpr int64_t kTapsBK = 16;  // gemm_mma.cl's BK with MMA_TAPS, unless a tile says otherwise

// A convolution as the taps tiles see it: taps (KH x KW) over the group's
// input channels; none (taps 0) where its weights are not constants.
struct TapsShape {
  int64_t taps = 0, channels = 0;
  // Its K as the tiles of `slice` channels walk it: the channels padded.
  int64_t depth(int64_t slice) const { return taps * ceil_div(channels, slice) * slice; }
};

// The depth tile t multiplies: the product's K, or for the taps tiles
// conv2d_mma_taps's (channels padded to the slice, times the taps).
int64_t tile_depth(const MmaTiles& t, int64_t K, const TapsShape& taps) { return t.stages ? taps.depth(t.slice) : K; }

int64_t groups(const MmaTiles& t, int64_t M, int64_t N, int64_t batches) {
  return ceil_div(M, t.bm) * ceil_div(N, t.bn) * batches;
}


// KernelChoice::mma parsed: the tiles named ("": none) and the build flags
// after them ("+FLAG": -DMMA_FLAG, measurements). Throws Error on an unknown name.
struct ForcedMma {
  std::string tiles, build;
};
ForcedMma parse_mma_variant(const std::string& variant) {
  // Build flags for measurements (gemm_mma.cl's MMA_* macros), "+" after the tiles.
  static const char* const kFlags[] = {"DIAG_NO_GLOBAL", "DIAG_NO_MMA", "DIAG_SYNC_COPY", "DIAG_NO_WEIGHTS",
                                       "DIAG_NO_INPUT"};
  ForcedMma f{variant.substr(0, variant.find('+')), ""};
  for (size_t at = variant.find('+'); at != std::string::npos;) {
    const size_t next = variant.find('+', at + 1);
    const std::string flag = variant.substr(at + 1, next == std::string::npos ? std::string::npos : next - at - 1);
    if (std::none_of(std::begin(kFlags), std::end(kFlags), [&](const char* k) { return flag == k; }))
      throw Error("no tf32 build flag +" + flag +
                  " (+DIAG_NO_GLOBAL, +DIAG_NO_MMA, +DIAG_SYNC_COPY, +DIAG_NO_WEIGHTS, +DIAG_NO_INPUT)");
    f.build += " -DMMA_" + flag;
    at = next;
  }
  if (!f.tiles.empty() && std::none_of(std::begin(kMmaTiles), std::end(kMmaTiles),
                                       [&](const MmaTiles& t) { return f.tiles == t.name; }))
    throw Error("no tf32 tile variant " + variant);
  return f;
}

Source mma_source(const NodeBuilder& b, const MmaTiles& t, const std::string& extra, const FusedTail& tail) {
  std::string d = "-DBM=" + std::to_string(t.bm) + " -DBN=" + std::to_string(t.bn) + " -DWM=" + std::to_string(t.wm) +
                  " -DWN=" + std::to_string(t.wn);
  if (t.stages) d += " -DMMA_TAPS -DSTAGES=" + std::to_string(t.stages);
  if (t.slice != kTapsBK) d += " -DTAPS_BK=" + std::to_string(t.slice);
  if (t.pipelined) d += " -DWG_PIPE";
  // The tap-major kernels read X (input 0) as it is stored: rounded already
  // where its producer stored it so (optimize/tf32_storage.h).
  if (t.stages && b.has_in(0) && b.in(0).stored_tf32) d += " -DINPUT_TF32";
  if (t.wgmma) d += std::string(" -DMMA_WGMMA") + (b.kernel_choice.tf32_emulation ? "" : " -DSM90A_PATCH");
  if (const ForcedMma f = parse_mma_variant(b.kernel_choice.mma); f.tiles == t.name) d += f.build;
  return mma_build(b, "gemm_mma.cl", d + extra, tail.prelude);
}

constexpr int64_t kBK = 32;               // gemm_mma.cl's BK
constexpr int64_t kMinSliceK = 4 * kBK;   // shallower split-K slices spend more on the fill and the adds

// Split-K (gemm_mma.cl SPLITK) for grids under one wave of work-groups: at
// most one wave of (tile, slice) work-groups, slices at least kMinSliceK
// deep; Y over an input cannot be split (it is zeroed first) unless it is
// the residual the slices may add onto (FusedTail::residual). Returns the
// number of slices (1: unsplit) and their depth.
int64_t split_k(const NodeBuilder& b, const MmaTiles& t, int64_t M, int64_t N, int64_t K, int64_t batches,
                int64_t total, int64_t& kslice, bool onto_residual) {
  const int64_t cu = std::max(1, b.compute_units()), gr = groups(t, M, N, batches);
  kslice = K;
  if (total < 0) return 1;  // POOL2: a max of partial sums is not their sum's
  if (const KernelChoice& c = b.kernel_choice; c.tf32_splits > 0) {  // tests and benchmarks: this many slices
    kslice = ceil_div(ceil_div(K, c.tf32_splits), kBK) * kBK;
  } else {
    const int64_t want = std::min(cu / gr, K / kMinSliceK);
    if (want < 2 || b.device_type() != "gpu") return 1;
    kslice = ceil_div(ceil_div(K, want), kBK) * kBK;
  }
  if (total > INT32_MAX || (output_overlaps_input(b) && !onto_residual)) return kslice = K, 1;
  return ceil_div(K, kslice);
}

// Whether conv2d_wgmma_taps runs: on sm_90a under NVIDIA's driver, or
// emulated (tests).
bool wgmma_runs(const NodeBuilder& b) { return b.kernel_choice.tf32_emulation || sm90a_supported(b.device()); }

// Whether tiles t are a candidate: the taps and warpgroup tiles take
// convolutions with constant weights only (taps.taps > 0), the warpgroup
// tiles where they run.
bool tile_runs(const NodeBuilder& b, const MmaTiles& t, const TapsShape& taps) {
  return (!t.stages || taps.taps) && (!t.wgmma || wgmma_runs(b));
}

// The tiles that waste at most a quarter of their area on the edges (none:
// the fp32 kernels' smaller tiles), the warpgroup tiles or the others, each
// split as split_k would, scored by waves of
// work-groups over the compute units times one work-group's work over the
// tile's speed, plus split-K's adds (gemm.cl's cost model). Null where even
// the best leaves three quarters of the compute units idle: such products
// (BERT's attention, small FC layers) are latency-bound, and the fp32
// kernels' small tiles serve them better.
const MmaTiles* choose_mma_tiles(const NodeBuilder& b, int64_t M, int64_t N, int64_t K, int64_t batches,
                                 int64_t total, bool onto_residual, const TapsShape& taps, bool warpgroup) {
  const int64_t cu = std::max(1, b.compute_units());
  const bool emulate = b.kernel_choice.tf32_emulation;
  const MmaTiles* best = nullptr;
  double best_cost = 1e300;
  int64_t best_groups = 0;
  for (const MmaTiles& t : kMmaTiles) {
    if (!tile_runs(b, t, taps) || t.wgmma != warpgroup) continue;
    double area = double(ceil_div(M, t.bm) * t.bm) * double(ceil_div(N, t.bn) * t.bn);
    if (double(M) * double(N) < 0.75 * area && !(emulate && &t == &kMmaTiles[0])) continue;
    const int64_t tk = tile_depth(t, K, taps);
    int64_t kslice = tk, splits = split_k(b, t, M, N, tk, batches, total, kslice, onto_residual), g = groups(t, M, N, batches) * splits;
    // The warpgroup tiles: the fastest whose grid (split included) fills
    // half the compute units; under that they ran up to 1.45x slower
    // (docs/kernel-choices.md#warpgroup-tiles).
    const double cost = warpgroup ? (2 * g >= cu ? 0.0 : 1e6) - t.speed
                                  : double(ceil_div(g, cu)) * double(t.bm * t.bn) * double(kslice) / t.speed +
                                        (splits > 1 ? 150e3 + 0.25 * double(M * N * batches * splits) : 0.0);
    if (cost < best_cost) best = &t, best_cost = cost, best_groups = g;
  }
  return best && 4 * best_groups < cu && !emulate ? nullptr : best;
}

// The launches of one variant: splitk_zero, the slices and splitk_finish
// (gemm.cl) around a split product, or the product alone.
struct MmaLaunch {
  // Appends its arguments; returns whether its slices took FusedTail::residual_bias (splits_add_bias).
  std::function<bool(const Source&, int64_t splits, int64_t kslice)> product;
  int64_t M, N, K, batches, total;
  TensorArg Y;
  TapsShape taps;  // none: no taps tiles
};
void emit_variant(NodeBuilder& b, const MmaTiles& t, const MmaLaunch& l, const std::string& defines,
                  const FusedTail& tail) {
  const int64_t K = tile_depth(t, l.K, l.taps);
  int64_t kslice = K, splits = split_k(b, t, l.M, l.N, K, l.batches, l.total, kslice, tail.residual);
  if (splits <= 1) {
    l.product(mma_source(b, t, defines, tail), 1, K);
    return;
  }
  launch_splitk_zero(b, Source("gemm.cl"), l.Y, l.total, tail);
  if (!l.product(mma_source(b, t, defines + " -DSPLITK", FusedTail{}), splits, kslice))
    launch_splitk_finish(b, l.Y, l.total, tail);
}


// Whether the guess (no tuning cache) takes the tensor cores for an M x N x
// K product (`batches` of them): 64 rows or more, min_K deep or more and 40M
// FMAs or more; products below any of these bounds ran slower in tf32 than
// in fp32: convolutions under 256 deep, GEMMs (1x1 convs, MatMul, Gemm)
// under 1024 (docs/kernel-choices.md#when-the-tf32-guess-takes-the-tensor-cores).
// Tuning measures them all the same. `emulate` (tests): always.
constexpr int64_t kConvMinK = 256, kGemmMinK = 1024;
bool mma_pays(int64_t M, int64_t N, int64_t K, int64_t batches, int64_t min_K, bool emulate) {
  return emulate || (M >= 64 && K >= min_K && double(M) * double(N) * double(K) * double(batches) >= 40e6);
}

// Emits the launch with the tiles forced, cached by `key` (texplan tune
// measures every variant and the fp32 lowering), or chosen by shape (where
// mma_pays); false (nothing emitted) where the fp32 kernels take it. The
// taps tiles are candidates where `taps` has taps only.
bool emit_tuned(NodeBuilder& b, const std::string& key, int64_t M, int64_t N, int64_t K, int64_t batches,
                int64_t total, bool onto_residual, const TapsShape& taps, int64_t min_K, bool warpgroup,
                const std::function<void(const MmaTiles&)>& emit) {
  std::vector<const MmaTiles*> tiles;
  for (const MmaTiles& t : kMmaTiles)
    if (tile_runs(b, t, taps)) tiles.push_back(&t);
  const std::string forced = parse_mma_variant(b.kernel_choice.mma).tiles;
  for (const MmaTiles& t : kMmaTiles) {
    if (forced != t.name) continue;
    if (t.stages && !taps.taps)  // benchmarks: not a silent stand-in
      throw Error(forced + " takes convolutions with constant weights only, not " + b.node.op_type);
    if (t.wgmma && !wgmma_runs(b))
      throw Error(forced + " needs a compute capability 9.0 GPU (sm_90a), not " + b.device().info().name);
    return emit(t), b.used_tf32 = true;
  }
  const MmaTiles* chosen = choose_mma_tiles(b, M, N, K, batches, total, onto_residual, taps, warpgroup);
  if (!chosen) return false;
  // The candidates: every tile, and the node's exact fp32 lowering, so that
  // `texplan tune --precision tf32` keeps in fp32 the nodes tf32 makes
  // slower (depthwise nets' thin 1x1 convs).
  std::vector<std::string> names;
  for (const MmaTiles* t : tiles) names.push_back(t->name);
  const int fp32 = int(names.size());
  names.push_back("fp32");
  const int guess = int(std::find(tiles.begin(), tiles.end(), chosen) - tiles.begin());
  int i = choose_variant(key, names, mma_pays(M, N, K, batches, min_K, b.kernel_choice.tf32_emulation) ? guess : fp32, [&](int v) {
    return time_candidate(b, [&] {
      if (v != fp32) return emit(*tiles[size_t(v)]), true;
      b.tf32 = false;  // lower_node's fp32 path for this node, as a run without tf32 would
      bool lowered = lower_node(b);
      b.tf32 = true;
      return lowered;
    });
  });
  if (i == fp32) return false;  // the caller goes on with its fp32 kernels
  emit(*tiles[size_t(i)]);
  return b.used_tf32 = true;
}

// Calls place(oc, c, tap, v) for every weight of a conv, v rounded to tf32
// as cvt.rna would (to nearest, ties away from zero), so that the taps
// kernels copy their packed weights to local memory untouched.
void for_each_tf32_weight(const HostTensor& weights, const MmaConv& g,
                          const std::function<void(int64_t oc, int64_t c, int64_t tap, float v)>& place) {
  const std::vector<float> w = weights.as_float();
  const int64_t ICg = g.C / g.groups, taps = g.KH * g.KW;
  for (int64_t oc = 0; oc < g.OC; ++oc)
    for (int64_t c = 0; c < ICg; ++c)
      for (int64_t t = 0; t < taps; ++t) {
        place(oc, c, t, round_tf32(w[size_t((oc * ICg + c) * taps + t)]));
      }
}

// conv2d_mma_taps's weights: [OC][KH x KW][CP] (CP: the group's input
// channels rounded up to the slice, zeros past them), rounded to tf32; each
// slice's channels in the order 0 4 8 12 1 5 9 13 ..., so that a lane's
// fragments over the slice are one 16-byte load.
std::vector<float> tap_weights(const HostTensor& weights, const MmaConv& g) {
  const int64_t taps = g.KH * g.KW, CP = ceil_div(g.C / g.groups, kTapsBK) * kTapsBK;
  std::vector<float> p(size_t(g.OC * taps * CP), 0.0f);
  for_each_tf32_weight(weights, g, [&](int64_t oc, int64_t c, int64_t t, float v) {
    const int64_t k = c % kTapsBK, slot = (c - k) + 4 * (k % 4) + k / 4;
    p[size_t((oc * taps + t) * CP + slot)] = v;
  });
  return p;
}

// conv2d_wgmma_taps's weights: per group, block of 64 output channels and
// slice (one tap, channels c0..c0 + slice - 1 of CP), the 64 x slice values
// in wgmma's K-major core-matrix layout (gemm_mma.cl WG_CORE), rounded to
// tf32; zeros past OC and C.
std::vector<float> wgmma_weights(const HostTensor& weights, const MmaConv& g, int64_t slice) {
  const int64_t CP = ceil_div(g.C / g.groups, slice) * slice, OCg = g.OC / g.groups, CS = CP / slice;
  const int64_t blocks = ceil_div(OCg, int64_t(64)), KT = g.KH * g.KW * CS;
  auto core = [](int64_t r, int64_t k) {  // WG_CORE(r, k, 64)
    return (k >> 3) * 64 * 8 + (r >> 3) * 64 + ((k >> 2) & 1) * 32 + (r & 7) * 4 + (k & 3);
  };
  std::vector<float> p(size_t(g.groups * blocks * KT * 64 * slice), 0.0f);
  for_each_tf32_weight(weights, g, [&](int64_t oc, int64_t c, int64_t t, float v) {
    const int64_t grp = oc / OCg, r = oc % OCg, kt = t * CS + c / slice;
    p[size_t(((grp * blocks + r / 64) * KT + kt) * 64 * slice + core(r % 64, c % slice))] = v;
  });
  return p;
}

std::string key_of(const char* kernel, std::initializer_list<int64_t> v) {
  std::string s = kernel;
  char sep = ' ';
  for (int64_t x : v) s += sep + std::to_string(x), sep = ',';
  return s;
}

}  // namespace

Source mma_build(const NodeBuilder& b, const char* file, const std::string& defines, const std::string& prelude) {
  std::string d = defines;
  if (!b.kernel_choice.tf32_emulation && accepts_inline_ptx(b.device())) d += " -DTEXPLAN_PTX";  // inline PTX reaches NVIDIA's driver only
  return Source(file, d, prelude + "\n" + kernels::sources().at("mma_common.cl"));
}

bool tf32_runs(const NodeBuilder& b) { return b.kernel_choice.tf32_emulation || tf32_supported(b.device()); }

std::vector<std::string> mma_tile_variants() {
  std::vector<std::string> v;
  for (const MmaTiles& t : kMmaTiles) v.push_back(t.name);
  return v;
}

bool wgmma_before_winograd(const NodeBuilder& b, int64_t C, int64_t OC, int64_t pixels, int64_t images, bool pooled) {
  const double macs = double(C) * double(OC) * 9.0 * double(pixels) * double(images);
  return !b.kernel_choice.tf32_emulation && wgmma_runs(b) && C >= 64 && OC >= 64 && macs >= 1.5e9 &&
         (!pooled || pixels * images >= 3136);
}

bool mma_tiles_forced(const NodeBuilder& b) { return !parse_mma_variant(b.kernel_choice.mma).tiles.empty(); }

void check_mma_variant(const std::string& variant) { parse_mma_variant(variant); }

bool launch_conv_mma(NodeBuilder& b, const MmaConv& g, bool has_bias, const TensorArg& bias, const FusedTail& tail,
                     int64_t PH, int64_t PW) {
  if (!b.tf32) return false;
  const bool pool = PH > 0 && PW > 0;
  const int64_t OCg = g.OC / g.groups, N = pool ? ceil_div(PH * PW, 4) * 16 : g.OH * g.OW, batches = g.N * g.groups;
  const int64_t K = (g.C / g.groups) * g.KH * g.KW;
  if (OCg < 16 || K < 8) return false;  // too thin for a tensor-core tile: the fp32 kernels
  // conv2d_mma_taps reads weights packed at load: constant ones only.
  const HostTensor* weights = b.constant(1);
  const TapsShape taps = weights && weights->dtype == DataType::Float32 && !b.half
                             ? TapsShape{g.KH * g.KW, g.C / g.groups}
                             : TapsShape{};
  auto emit = [&](const MmaTiles& t) {
    MmaLaunch l{[&](const Source& src, int64_t splits, int64_t kslice) {
                  Range r = group_range({size_t(ceil_div(N, t.bn)), size_t(ceil_div(OCg, t.bm)), size_t(batches * splits)},
                                        {size_t(t.threads()), 1, 1});
                  ConvParams p = conv_params(g, has_bias);
                  if (pool) p.pool_h = i32(PH), p.pool_w = i32(PW);
                  p.splits = i32(splits), p.kslice = i32(kslice);
                  if (t.wgmma) {
                    const MemArg packed = b.packed("mma wgmma " + std::to_string(t.slice),
                                                   [&] { return wgmma_weights(*weights, g, t.slice); });
                    launch_conv_kernel(b, src, "conv2d_wgmma_taps", r, TensorArg{packed.mem, 0}, bias, p);
                  } else if (t.stages) {
                    const MemArg packed = b.packed("mma taps", [&] { return tap_weights(*weights, g); });
                    launch_conv_kernel(b, src, "conv2d_mma_taps", r, TensorArg{packed.mem, 0}, bias, p);
                  } else {
                    launch_conv_kernel(b, src, "conv2d_gemm", r, b.arg_in(1), bias, p);
                  }
                  if (splits == 1) tail.append_args(b);
                  return false;  // a conv adds its own bias with slice 0
                },
                OCg, N, K, batches, pool ? -1 : g.N * g.OC * g.OH * g.OW, b.arg_out(0), taps};
    emit_variant(b, t, l, pool ? " -DPOOL2" : "", tail);
  };
  std::string key = key_of(pool ? "conv2d_gemm_pool2_tf32" : "conv2d_gemm_tf32",
                           {g.N, g.C, g.H, g.W, g.OC, g.OH, g.OW, g.KH, g.KW, g.sh, g.sw, g.ph, g.pw, g.dh, g.dw,
                            g.groups});
  const bool warpgroup = taps.taps && g.KH == 3 && g.KW == 3 && g.sh == 1 && g.sw == 1 && g.dh == 1 && g.dw == 1 &&
                         g.groups == 1 && wgmma_before_winograd(b, g.C, g.OC, g.OH * g.OW, g.N, pool);
  return emit_tuned(b, key, OCg, N, K, batches, pool ? -1 : g.N * g.OC * g.OH * g.OW, tail.residual, taps, kConvMinK,
                    warpgroup, emit);
}

bool launch_gemm_mma(NodeBuilder& b, const TensorArg& A, const TensorArg& B, const TensorArg& C, const TensorArg& Y,
                     const MmaGemm& g, const FusedTail& tail) {
  if (!b.tf32) return false;
  int64_t nb = 1;
  for (int64_t d : g.batch) nb *= d;
  if (g.M < 16 || g.N < 8 || g.K < 8) return false;  // thin products: the fp32 kernels
  auto emit = [&](const MmaTiles& t) {
    MmaLaunch l{[&](const Source& src, int64_t splits, int64_t kslice) {
                  Range r = group_range({size_t(ceil_div(g.N, t.bn)), size_t(ceil_div(g.M, t.bm)), size_t(nb * splits)},
                                        {size_t(t.threads()), 1, 1});
                  GemmParams p = gemm_params(g);
                  p.splits = i32(splits), p.kslice = i32(kslice);
                  TensorArg c = C;
                  const bool bias = splits > 1 && splits_add_bias(b, tail, p, c);
                  launch_gemm_kernel(b, src, "gemm", r, A, B, c, Y, p);
                  if (splits == 1) tail.append_args(b);
                  return bias;
                },
                g.M, g.N, g.K, nb, nb * g.M * g.N, Y, TapsShape{}};
    emit_variant(b, t, l, "", tail);
  };
  return emit_tuned(b, key_of("gemm_tf32", {g.M, g.N, g.K, nb, g.a_sk == 1, g.b_sn == 1}), g.M, g.N, g.K, nb,
                    nb * g.M * g.N, tail.residual, TapsShape{}, kGemmMinK, false, emit);
}

}  // namespace texplan::lower
