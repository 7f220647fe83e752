// Internal to the GPU conv and GEMM lowerings: their variants (gemm.cl's
// register tiles, split-K, conv_winograd.cl's forms, conv_maxpool.cl's
// tiles), the names KernelChoice gives them, and the cost models and tuning
// that choose among them (lower/conv_select.cpp). lower/conv.cpp prepares the
// launches of the variant chosen.
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "lower/ops.h"

namespace texplan::lower {

// 1D and 2D convolutions as 2D: spatial dims [H, W] with H = 1 for 1D.
struct ConvGeometry {
  int64_t N = 0, C = 0, H = 1, W = 1, OC = 0, OH = 1, OW = 1, KH = 1, KW = 1;
  int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1, groups = 1;
};

// Register-tile variants of gemm.cl: a 16x16 work-group, each work-item
// WPTM x WPTN outputs, read from local memory as scalars or (vec, "v") as
// float4. `speed` is the expected throughput per work-group relative to 2x2
// (FMAs per local-memory read, saturating): bigger tiles read local memory
// less per FMA but leave compute units idle on small problems. Measured
// choices come from the tuning cache (texplan tune) where it has them.
struct Tiles {
  const char* name;
  int wptm, wptn;
  bool vec;
  double speed;
  int64_t tm() const { return 16 * wptm; }
  int64_t tn() const { return 16 * wptn; }
};
constexpr int64_t kTK = 16;  // gemm.cl's TK, the depth of a slice of K unless a variant names another

// The tiles named `n` ("64x64v"); throws Error for another name.
const Tiles& tiles_named(const char* n);
// Whether tiles `t` can take slices of K `depth` deep in local memory.
bool depth_fits(const Tiles& t, int64_t depth);

// What KernelChoice::conv names, parsed.
struct Forced {
  const Tiles* tiles = nullptr;  // these tiles, not the choice by shape
  bool taps = false;             // conv2d_gemm_taps for conv2d_gemm
  int64_t splits = 0;            // split-K where allowed: S slices; -1 the S by shape; 0 the choice; 1 never
  bool winograd = false;         // conv_winograd.cl for the 3x3 stride-1 convs it takes
  std::string winograd_build;    // "winograd:dng", ":dnm": diagnostic builds (measurements only)
  std::string winograd_weights;  // "winograd:raw": untransformed packed weights (measurements only)
  int64_t winograd_tiles = 32;   // "winograd:t16": 16 tiles per 128-item work-group (measurements)
  bool winograd_db = false;      // ":db": chunks in two buffers (WG_DB); ":db8" with 8-channel chunks
  bool winograd_ck8 = false;
  bool winograd_pairs = true;    // ":nopairs": no WG_PAIRS (a measurement)
  int64_t kgroups = 0;           // "32x32k4", "64x64k2"...: gemm_kgroups where the GEMM takes it
  int64_t depth = kTK;           // "32x32d64": slices of K 64 deep (unsplit tiles only)
};
// KernelChoice::conv parsed; throws Error on an unknown name.
Forced parse_conv_variant(const std::string& variant);
// The conv variant the session named for node builder `b` (none: every field unset).
Forced forced(const NodeBuilder& b);

// The tiles for an MxN output per batch, by shape and device (or named).
const Tiles& choose_tiles(const NodeBuilder& b, int64_t M, int64_t N, int64_t batches);

// A GEMM launch's variant: tiles, unsplit (splits 1) or split-K.
struct Variant {
  const Tiles* tiles;  // null: Winograd (conv_winograd.cl), K = input channels
  int64_t splits = 1, kslice = 0;
  // Winograd's tiles per work-group: 32 (256 items), or 16 in 128-item
  // groups with 4-channel chunks in two buffers (WG_BT=16, WG_DB; fp32 only).
  int64_t wg_tiles = 32;
  // gemm_kgroups (gemm_kgroups.cl): this many groups of 64 work-items share
  // a tile (32x32, 32x64 or 64x64), each walking its own slices of K; 0: the tiles' kernel.
  int64_t kgroups = 0;
  // The tiles' slices of K (gemm.cl TK): 16, or 32 and 64 unsplit ("d64").
  int64_t depth = kTK;
  std::string base() const {
    return tiles ? std::string(tiles->name) + (kgroups ? "k" + std::to_string(kgroups) : "") +
                       (depth != kTK ? "d" + std::to_string(depth) : "")
                 : wg_tiles == 16 ? "winograd:t16:db" : "winograd";
  }
  std::string name() const { return splits > 1 ? base() + "/s" + std::to_string(splits) : base(); }
};

// gemm_kgroups.cl's build options for k-groups variant `v`.
std::string kgroups_defines(const Variant& v);

// The cost model of a variant of an M x N x K product (`batches` of them)
// on `cu` compute units, in FMAs of a 32x32 work-group.
double variant_cost(const Variant& v, int64_t M, int64_t N, int64_t K, int64_t batches, int64_t cu);

// Whether a GEMM of depth K into Y (`total` elements) may be split over K.
// `one_launch`: the split would run as SPLITK_ONE, whose slices store through
// YI, so Y may be a window.
bool split_k_allowed(const NodeBuilder& b, int64_t K, int64_t total, const FusedTail& tail, bool one_launch = false);

// Winograd F(2x2, 3x3) (conv_winograd.cl) of a 3x3 stride-1 conv with one
// group: a work-group computes 32 output channels x 32 2x2 tiles, all 16
// transform elements, over K = C input channels in chunks of 8 (kWinogradCK).
struct WinogradShape {
  int64_t C = 0, OC = 0, tiles = 0, images = 0;
  int64_t groups(int64_t per_group = 32) const { return ceil_div(OC, 32) * ceil_div(tiles, per_group) * images; }
};
constexpr int64_t kWinogradCK = 8;

// Winograd's cost in variant_cost's units.
double winograd_cost(const Variant& v, const WinogradShape& w, int64_t cu);
// The Winograd form by shape (whole, split where `can_split`, or the 16-tile
// form where `t16`).
Variant winograd_by_shape(const WinogradShape& w, bool can_split, int64_t cu, bool t16);
// The Winograd form KernelChoice::conv names (`f`).
Variant forced_winograd(const Forced& f, const WinogradShape& w, bool can_split, int64_t cu);
// The Winograd shape of a conv it takes, where it may run; none elsewhere.
std::optional<WinogradShape> winograd_shape(const NodeBuilder& b, const ConvGeometry& g);
// --precision tf32: whether Winograd's tensor-core form runs before the tf32 tiles.
bool winograd_before_tf32(const NodeBuilder& b, const WinogradShape& w, bool pooled);

// The variant of a GPU GEMM for the shape named `key` (named, tuned or by
// shape); `emit(v)` appends a candidate's launches to b.launches, `wino` (a
// conv Winograd takes) adds Winograd's forms to the candidates,
// `can_kgroups` (a GEMM gemm_kgroups takes) the k-groups forms, `narrow`
// the tiles under 32 on a side. A `product` (gemm.cl's gemm, not
// conv2d_gemm) on a GPU is guessed by the measured GEMM times
// (docs/kernel-choices.md#the-gemm-time-model), k-groups included.
Variant pick_variant(NodeBuilder& b, std::string key, int64_t M, int64_t N, int64_t K, int64_t batches,
                     bool can_split, const std::function<void(const Variant&)>& emit,
                     const WinogradShape* wino = nullptr, bool can_kgroups = false, bool product = false,
                     bool narrow = false);

// The variant of a GEMM with a depthwise input (ChannelProgram::depthwise)
// unless one is forced: 32x32 tiles, K split (where `can_split`) until the
// grid is two waves of the compute units (slices down to 32 deep); unsplit,
// 32x16 tiles where 32x32 leave compute units idle. Its work-groups compute
// the depthwise sums as they load B, so one per compute unit, as the GEMM
// time model would have it for a small grid, spent 3-4x the two kernels
// apart (docs/fused-ops.md#depthwise-input-channelprogramdepthwise).
Variant depthwise_input_variant(const NodeBuilder& b, int64_t M, int64_t N, int64_t K, int64_t batches,
                                bool can_split);

// The pool of a FusedConvMaxPool: window, strides, begin pads, dilations.
struct PoolGeometry {
  int64_t PH = 0, PW = 0, kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
};

// Tiles of conv2d_maxpool_tiled (conv_maxpool.cl): TPH x TPW pooled outputs of OCB
// channels per work-group of WG items, ROC channels per item (OCB a multiple
// of 8, ROC of 4, WG / (OCB / ROC) a multiple of 32: whole warps per channel
// slice, so weight reads are broadcasts). Ties in cost go to the first.
struct PoolTile {
  const char* name;
  int tph, tpw, ocb, roc, wg;
};
inline constexpr PoolTile kPoolTiles[] = {{"4x8x32", 4, 8, 32, 8, 128},
                                          {"8x8x32", 8, 8, 32, 8, 256},
                                          {"4x8x16", 4, 8, 16, 8, 64},
                                          {"2x8x16", 2, 8, 16, 4, 128}};
// What KernelChoice::conv_maxpool names, parsed.
struct ForcedPool {
  bool set = false;
  const PoolTile* tile = nullptr;  // null: the direct kernel
};
// KernelChoice::conv_maxpool parsed; throws Error on an unknown name.
ForcedPool parse_pool_variant(const std::string& variant);

// `t` fitted to a node: the build defines and the launch's shape; none when
// the conv region or one input channel's patch and weights exceed local
// memory, or the accumulators the registers.
struct TiledConvMaxPool {
  const PoolTile* tile = nullptr;
  std::string defines;
  int64_t tiles_x = 0, tiles_y = 0, oc_blocks = 0, rpx = 0;
  int64_t groups() const { return tiles_x * tiles_y * oc_blocks; }
  // Time by the busiest compute unit (work-groups dealt round-robin): its
  // work-groups times the FMAs of one (every work-item's ROC x RPX per tap,
  // region edges and idle slots included) over the speed of the register
  // block, FMAs per local read (ROC/4 float4 weights, RPX inputs) short of
  // the 4 that keep NVIDIA's FMA units busy (one local read per 4 FMAs).
  double cost(int64_t images, int64_t cu) const {
    const double per_read = double(tile->roc * rpx) / double(rpx + tile->roc / 4);
    return double(ceil_div(groups() * images, cu)) * double(tile->wg * tile->roc * rpx) / std::min(1.0, per_read / 4);
  }
};
std::optional<TiledConvMaxPool> fit_pool_tile(const ConvGeometry& g, const PoolGeometry& p, const PoolTile& t,
                                              int64_t local_bytes);

}  // namespace texplan::lower
