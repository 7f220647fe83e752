// Conv, ConvTranspose, Gemm and MatMul lowerings onto gemm.cl / conv.cl.
#include <optional>
#include <sstream>

#include "graph/epilogue.h"
#include "runtime/epilogue_cl.h"
#include "runtime/ops.h"
#include "runtime/ops_cpu.h"
#include "runtime/ops_mma.h"
#include "runtime/session.h"
#include "runtime/tuning.h"
#include "runtime/winograd_weights.h"

namespace texplan::runtime {

SpatialPad spatial_pad(const Node& n, size_t dim, size_t rank, int64_t in, int64_t out, int64_t k, int64_t s,
                       int64_t d, bool transposed, int64_t out_pad) {
  std::string auto_pad = n.get_string("auto_pad", "NOTSET");
  bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  if (transposed && (same || n.has("output_shape"))) {
    // What the full output s*(in-1)+out_pad+(k-1)*d+1 loses to reach `out`;
    // halves rounded down as the spec's Python does (a negative total pads).
    int64_t total = s * (in - 1) + out_pad + (k - 1) * d + 1 - out;
    int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
    return auto_pad == "SAME_UPPER" ? SpatialPad{half, total - half} : SpatialPad{total - half, half};
  }
  if (same) {
    int64_t total = std::max<int64_t>(0, (out - 1) * s + (k - 1) * d + 1 - in);
    int64_t begin = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    return {begin, total - begin};
  }
  std::vector<int64_t> pads = n.get_ints("pads");
  if (auto_pad == "VALID" || pads.size() != 2 * rank) return {0, 0};
  return {pads[dim], pads[rank + dim]};
}

namespace {

// 1D and 2D convolutions as 2D: spatial dims [H, W] with H = 1 for 1D.
struct ConvGeometry {
  int64_t N = 0, C = 0, H = 1, W = 1, OC = 0, OH = 1, OW = 1, KH = 1, KW = 1;
  int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1, groups = 1;
};

// Output size of a (forward) convolution's spatial dim `k` of `rank`.
int64_t conv_out_size(const Node& n, size_t k, size_t rank, int64_t in, int64_t kk, int64_t st, int64_t dl) {
  std::string auto_pad = n.get_string("auto_pad", "NOTSET");
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") return ceil_div(in, st);
  std::vector<int64_t> pads = n.get_ints("pads");
  int64_t total = auto_pad == "VALID" || pads.size() != 2 * rank ? 0 : pads[k] + pads[rank + k];
  return (in + total - dl * (kk - 1) - 1) / st + 1;
}

// `conv_out`: the convolution's output shape when Y is not it (a fused pool).
bool conv_geometry(const NodeBuilder& b, bool transposed, ConvGeometry& g, const Shape* conv_out = nullptr) {
  const Shape &x = b.in(0).shape, &w = b.in(1).shape, &y = conv_out ? *conv_out : b.out(0).shape;
  if (x.size() != 3 && x.size() != 4) return false;
  if (b.in(0).dtype != DataType::Float32 || b.in(1).dtype != DataType::Float32) return false;
  if (b.has_in(2) && b.in(2).dtype != DataType::Float32) return false;
  size_t rank = x.size() - 2;
  const Node& n = b.node;
  std::vector<int64_t> s = n.get_ints("strides", std::vector<int64_t>(rank, 1));
  std::vector<int64_t> d = n.get_ints("dilations", std::vector<int64_t>(rank, 1));
  std::vector<int64_t> op = n.get_ints("output_padding", std::vector<int64_t>(rank, 0));
  if (s.size() != rank || d.size() != rank || op.size() != rank) return false;
  g.N = x[0], g.C = x[1], g.OC = y[1], g.groups = n.get_int("group", 1);
  auto spatial = [&](size_t k, int64_t& in, int64_t& out, int64_t& kk, int64_t& st, int64_t& dl, int64_t& p) {
    in = x[2 + k], out = y[2 + k], kk = w[2 + k], st = s[k], dl = d[k];
    p = spatial_pad(n, k, rank, in, out, kk, st, dl, transposed, op[k]).begin;
  };
  if (rank == 2) spatial(0, g.H, g.OH, g.KH, g.sh, g.dh, g.ph);
  spatial(rank - 1, g.W, g.OW, g.KW, g.sw, g.dw, g.pw);
  return g.groups > 0 && g.C % g.groups == 0 && g.OC % g.groups == 0;
}

Dims batch_dims(std::vector<int64_t> v) { return to_dims(v, 1); }

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
const Tiles kTiles[] = {{"32x32", 2, 2, false, 1.0},     {"64x64", 4, 4, false, 2.0},
                        {"64x64v", 4, 4, true, 2.5},     {"64x128", 4, 8, false, 2.67},
                        {"64x128v", 4, 8, true, 3.2},    {"128x64", 8, 4, false, 2.67},
                        {"128x64v", 8, 4, true, 3.2},    {"128x128", 8, 8, false, 3.0},
                        {"128x128v", 8, 8, true, 4.0}};

// KernelChoice::conv parsed.
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
};
const Tiles& tiles_named(const char* n) {
  for (const Tiles& t : kTiles)
    if (std::string(n) == t.name) return t;
  throw Error(std::string("no tile variant ") + n);
}

// KernelChoice::conv parsed; throws Error on an unknown name.
Forced parse_conv_variant(const std::string& variant) {
  Forced f;
  std::string tiles = variant;
  if (size_t slash = variant.find('/'); slash != std::string::npos) {  // "TILES/split", "TILES/sN"
    std::string split = variant.substr(slash + 1);
    tiles = variant.substr(0, slash);
    if (split == "split") {
      f.splits = -1;
    } else {
      size_t digits = split.size() > 1 && split[0] == 's' ? split.find_first_not_of("0123456789", 1) : 0;
      if (digits != std::string::npos || split.size() > 7) throw Error("no split-K variant /" + split + " (/split or /sN)");
      f.splits = std::max<int64_t>(1, std::stoll(split.substr(1)));
    }
  }
  if (tiles == "winograd" || tiles.rfind("winograd:", 0) == 0) {
    f.winograd = true;  // where it applies; the GPU kernels' choice by shape elsewhere
    // Diagnostic builds, for measurements (wrong results): ":dng" no global
    // reads, ":dnm" no products, to time the rest. The build forms tried and
    // not kept: docs/kernel-choices.md#winograd-builds-tried-and-not-kept.
    std::stringstream opts(tiles.substr(8));
    for (std::string o; std::getline(opts, o, ':');) {
      if (o == "dng") f.winograd_build += " -DWG_DIAG_NO_GLOBAL";
      else if (o == "dnm") f.winograd_build += " -DWG_DIAG_NO_GEMM";
      else if (o == "raw") f.winograd_weights = o;
      else if (o == "pf2") f.winograd_build += " -DWG_PREFETCH2";  // two chunks in flight in the fp32 build
      else if (o == "db") f.winograd_db = true;  // 4-channel chunks in two buffers (fp32 build)
      else if (o == "db8") f.winograd_db = f.winograd_ck8 = true;  // 8-channel chunks: with :t16 only
      else if (o == "t16") f.winograd_tiles = 16;
      else if (o == "nopairs") f.winograd_pairs = false;  // input rows read a float at a time
      else if (!o.empty())
        throw Error("no Winograd build variant :" + o + " (:dng, :dnm, :raw, :pf2, :db, :db8, :t16, :nopairs)");
    }
    if (f.winograd_weights == "raw" && (f.winograd_tiles != 32 || f.winograd_db))
      throw Error("winograd:raw takes neither :db nor :t16");
    if (f.winograd_tiles == 32 && f.winograd_ck8)
      throw Error("winograd:db8 needs :t16 (two buffers of 32 tiles exceed 48 KB of local memory)");
  } else if (!variant.empty() && tiles != "gpu") {
    f.taps = tiles.rfind("taps:", 0) == 0;
    f.tiles = &tiles_named(tiles.c_str() + (f.taps ? 5 : 0));
    if (f.taps && f.splits != 0) throw Error("the taps: baseline has no split-K variant");
  }
  return f;
}

// The conv variant the session named for node builder `b` (none: every field unset).
Forced forced(const NodeBuilder& b) { return parse_conv_variant(b.kernel_choice.conv); }

// Whether tiles `t` waste at most a quarter of their area on the edges of
// an MxN output (32x32 always qualifies: the smallest).
bool fits(const Tiles& t, int64_t M, int64_t N) {
  double area = double(ceil_div(M, t.tm()) * t.tm()) * double(ceil_div(N, t.tn()) * t.tn());
  return &t == &kTiles[0] || double(M) * double(N) >= 0.75 * area;
}

// Tiles for an MxN output per batch. On CPUs 64x64, or 32x32 when 64x64
// gives fewer work-groups than compute units. On GPUs the tiles that `fit`,
// scored by waves of work-groups (one per compute unit per wave) times the
// work of one tile over its speed.
const Tiles& choose_tiles(const NodeBuilder& b, int64_t M, int64_t N, int64_t batches) {
  if (const Forced f = forced(b); f.tiles) return *f.tiles;
  auto groups = [&](const Tiles& t) { return ceil_div(M, t.tm()) * ceil_div(N, t.tn()) * batches; };
  const int64_t cu = std::max(1, b.compute_units());
  if (b.device_type() != "gpu") return groups(kTiles[1]) < cu ? kTiles[0] : kTiles[1];
  const Tiles* best = &kTiles[0];
  double best_cost = 1e300;
  for (const Tiles& t : kTiles) {
    if (!fits(t, M, N)) continue;
    double cost = double(ceil_div(groups(t), cu)) * double(t.tm() * t.tn()) / t.speed;
    if (cost < best_cost) best = &t, best_cost = cost;
  }
  return *best;
}

// Split-K (gemm.cl SPLITK): K cut into `splits` slices of `kslice` (a
// multiple of TK), one work-group per (tile, slice) adding its partial tile
// into Y atomically (slice 0 with the bias); Y zeroed before, the epilogue
// applied after, in place: three launches instead of one (two without an
// epilogue). For grids too small to fill the compute units
// (docs/kernel-choices.md#split-k-and-its-cost).
constexpr int64_t kTK = 16;              // gemm.cl's TK
constexpr int64_t kMinSliceK = 4 * kTK;  // shallower slices spend more on the pipeline's fill and the adds

// A GEMM launch's variant: tiles, unsplit (splits 1) or split-K.
struct Variant {
  const Tiles* tiles;  // null: Winograd (conv_winograd.cl), K = input channels
  int64_t splits = 1, kslice = 0;
  // Winograd's tiles per work-group: 32 (256 items), or 16 in 128-item
  // groups with 4-channel chunks in two buffers (WG_BT=16, WG_DB; fp32 only).
  int64_t wg_tiles = 32;
  std::string base() const { return tiles ? tiles->name : wg_tiles == 16 ? "winograd:t16:db" : "winograd"; }
  std::string name() const { return splits > 1 ? base() + "/s" + std::to_string(splits) : base(); }
};

// About `want` slices of K, rounded to whole TK; the variant has as many as
// are nonempty (1: unsplit).
Variant split_k(const Tiles& t, int64_t K, int64_t want) {
  int64_t kslice = ceil_div(ceil_div(K, std::max<int64_t>(1, want)), kTK) * kTK, splits = ceil_div(K, kslice);
  return splits > 1 ? Variant{&t, splits, kslice} : Variant{&t};
}

// The slices that bring `t`'s grid to about `waves` waves of work-groups
// (two: as many per compute unit as the memory latency wants hidden), none
// shallower than kMinSliceK.
Variant split_by_shape(const Tiles& t, int64_t M, int64_t N, int64_t K, int64_t batches, int64_t cu,
                       int64_t waves = 2) {
  int64_t groups = ceil_div(M, t.tm()) * ceil_div(N, t.tn()) * batches;
  return split_k(t, K, std::min(ceil_div(waves * cu, groups), K / kMinSliceK));
}

// choose_tiles' cost with K (waves x the work of one work-group / speed),
// in FMAs of a 32x32 work-group; split-K adds its two extra passes (150k)
// and its atomic adds (0.25 each), figures from
// docs/kernel-choices.md#split-k-and-its-cost.
double variant_cost(const Variant& v, int64_t M, int64_t N, int64_t K, int64_t batches, int64_t cu) {
  const Tiles& t = *v.tiles;
  int64_t groups = ceil_div(M, t.tm()) * ceil_div(N, t.tn()) * batches * v.splits;
  double work = double(t.tm() * t.tn()) * double(v.splits > 1 ? v.kslice : K) / t.speed;
  double split = v.splits > 1 ? 150e3 + 0.25 * double(M * N * batches * v.splits) : 0.0;
  return double(ceil_div(groups, cu)) * work + split;
}

// The heuristic's variant: choose_tiles' tiles, or on GPUs (where
// `can_split`) a split of fitting tiles where the cost model says it saves a
// fifth at least, a margin for its guesses
// (docs/kernel-choices.md#split-k-and-its-cost).
Variant choose_by_shape(const NodeBuilder& b, int64_t M, int64_t N, int64_t K, int64_t batches, bool can_split) {
  Variant best{&choose_tiles(b, M, N, batches)};
  if (!can_split || b.device_type() != "gpu") return best;
  const int64_t cu = std::max(1, b.compute_units());
  double best_cost = 0.8 * variant_cost(best, M, N, K, batches, cu);
  for (const Tiles& t : kTiles) {
    if (!fits(t, M, N)) continue;
    Variant v = split_by_shape(t, M, N, K, batches, cu);
    double c = variant_cost(v, M, N, K, batches, cu);
    if (v.splits > 1 && c < best_cost) best = v, best_cost = c;
  }
  return best;
}

// Winograd F(2x2, 3x3) (conv_winograd.cl) of a 3x3 stride-1 conv with one
// group: a work-group computes 32 output channels x 32 2x2 tiles, all 16
// transform elements, over K = C input channels in chunks of 8 (kWinogradCK).
struct WinogradShape {
  int64_t C = 0, OC = 0, tiles = 0, images = 0;
  int64_t groups(int64_t per_group = 32) const { return ceil_div(OC, 32) * ceil_div(tiles, per_group) * images; }
};
constexpr int64_t kWinogradCK = 8;
constexpr int64_t kWinogradMinSlice = 32;  // input channels per split-K slice, at least

// Winograd's slices: grids under half a wave (of one work-group per compute
// unit) split to about `waves` waves (rounded to the nearest whole number of
// slices); larger ones stay whole (docs/kernel-choices.md#winograd-slices).
Variant winograd_split(const WinogradShape& w, int64_t cu, int64_t waves) {
  if (2 * w.groups() >= cu) return Variant{nullptr};
  int64_t want = std::min((waves * cu + w.groups() / 2) / w.groups(), w.C / kWinogradMinSlice);
  int64_t cslice = ceil_div(ceil_div(w.C, std::max<int64_t>(1, want)), kWinogradCK) * kWinogradCK;
  int64_t splits = ceil_div(w.C, cslice);
  return splits > 1 ? Variant{nullptr, splits, cslice} : Variant{nullptr};
}

// variant_cost's units for Winograd: 16 x 32 x 32 FMAs per input channel and
// work-group; kWinogradSpeed against 32x32's 1.0. The 16-tile form does half
// a group's work at 0.87 of its speed, several groups per compute unit
// (docs/kernel-choices.md#winograds-speed-in-the-cost-model).
constexpr double kWinogradSpeed = 2.8, kWinogradT16Speed = 0.87 * kWinogradSpeed;
double winograd_cost(const Variant& v, const WinogradShape& w, int64_t cu) {
  const double speed = v.wg_tiles == 16 ? kWinogradT16Speed : kWinogradSpeed;
  double work = 16.0 * 32 * double(v.wg_tiles) * double(v.splits > 1 ? v.kslice : w.C) / speed;
  double split = v.splits > 1 ? 150e3 + 0.25 * double(w.OC * w.tiles * 4 * w.images * v.splits) : 0.0;
  return double(ceil_div(w.groups(v.wg_tiles) * v.splits, cu)) * work + split;
}

// The Winograd form by shape: split where `can_split` and winograd_split's
// slices cost a fifth less than the whole grid (the margin of
// choose_by_shape). Else, where `t16` (the fp32 build), the 16-tile form
// where it costs a tenth less than the whole grid: where whole groups leave
// the last wave half empty and halves fill it. Not for 2x2-pooled convs,
// where it ran slower (docs/kernel-choices.md#winograd-split-or-in-16-tile-groups).
Variant winograd_by_shape(const WinogradShape& w, bool can_split, int64_t cu, bool t16) {
  const Variant whole{nullptr}, split = can_split ? winograd_split(w, cu, 1) : whole;
  if (split.splits > 1 && winograd_cost(split, w, cu) < 0.8 * winograd_cost(whole, w, cu)) return split;
  Variant halves{nullptr};
  halves.wg_tiles = 16;
  return t16 && winograd_cost(halves, w, cu) < 0.9 * winograd_cost(whole, w, cu) ? halves : whole;
}

}  // namespace

std::string winograd_variant_by_shape(int64_t C, int64_t OC, int64_t OH, int64_t OW, int64_t images,
                                      int compute_units, bool can_split, bool fp32) {
  const WinogradShape w{C, OC, ceil_div(OH, 2) * ceil_div(OW, 2), images};
  return winograd_by_shape(w, can_split, std::max(1, compute_units), fp32).name();
}

namespace {

// KernelChoice::conv's "winograd", "winograd/split" or "winograd/sN" (`f`).
Variant forced_winograd(const Forced& f, const WinogradShape& w, bool can_split, int64_t cu) {
  if (!can_split || f.splits == 1 || f.splits == 0) return Variant{nullptr};
  if (f.splits < 0) return winograd_split(w, std::max<int64_t>(cu, 2 * w.groups() + 1), 1);  // split
  int64_t cslice = ceil_div(ceil_div(w.C, f.splits), kWinogradCK) * kWinogradCK;
  return ceil_div(w.C, cslice) > 1 ? Variant{nullptr, ceil_div(w.C, cslice), cslice} : Variant{nullptr};
}

// The variant of a GPU GEMM whose launches `emit(v)` appends to b.launches,
// for the shape named `key`: forced, else the tuning cache's choice
// (texplan tune times every candidate once: each tile unsplit, and where
// `can_split` split to about 2 waves and to 1, half the atomic adds), else
// choose_by_shape's heuristic.
//
// `wino` (a conv Winograd takes, on a GPU): "winograd" and its splits are
// candidates too, and the guess where their cost is below the direct one's.
Variant pick_variant(NodeBuilder& b, std::string key, int64_t M, int64_t N, int64_t K, int64_t batches,
                     bool can_split, const std::function<void(const Variant&)>& emit,
                     const WinogradShape* wino = nullptr) {
  const Forced f = forced(b);
  const int64_t cu = std::max(1, b.compute_units());
  if (f.winograd && wino) return forced_winograd(f, *wino, can_split, cu);
  if (f.tiles || f.splits != 0) {
    const Tiles& t = choose_tiles(b, M, N, batches);
    if (!can_split || f.splits == 0 || f.splits == 1) return Variant{&t};
    return f.splits < 0 ? split_by_shape(t, M, N, K, batches, cu) : split_k(t, K, f.splits);
  }
  const Variant direct = choose_by_shape(b, M, N, K, batches, can_split);
  std::string guess = direct.name();
  std::vector<Variant> candidates;
  for (const Tiles& t : kTiles) candidates.push_back({&t});
  if (can_split) {
    for (const Tiles& t : kTiles)
      for (int64_t waves : {2, 1})
        if (Variant v = split_by_shape(t, M, N, K, batches, cu, waves);
            v.splits > 1 && v.name() != candidates.back().name())
          candidates.push_back(v);
    if (candidates.size() > std::size(kTiles)) key += " splitk";  // caches from before split-K did not measure it
  }
  if (wino) {
    key += " winograd";  // caches from before Winograd did not measure it
    const Variant whole{nullptr}, split = can_split ? winograd_split(*wino, cu, 1) : whole;
    candidates.push_back(whole);
    if (split.splits > 1) candidates.push_back(split);
    if (!b.tf32) {  // the 16-tile form (fp32 build only)
      key += " t16";  // caches from before it did not measure it
      candidates.push_back(whole);
      candidates.back().wg_tiles = 16;
    }
    // The guess: the Winograd form by shape where it costs less than the
    // direct variant, for 64 output channels or more or a grid of a wave at
    // least (docs/kernel-choices.md#where-winograd-runs-on-gpus).
    const Variant w = winograd_by_shape(*wino, can_split, cu, !b.tf32);
    if ((wino->OC >= 64 || wino->groups() >= cu) &&
        winograd_cost(w, *wino, cu) < variant_cost(direct, M, N, K, batches, cu))
      guess = w.name();
  }
  std::vector<std::string> names;
  int fallback = 0;
  for (const Variant& v : candidates) {
    if (v.name() == guess) fallback = int(names.size());
    names.push_back(v.name());
  }
  int i = choose_variant(key, names, fallback, [&](int c) {
    return time_candidate(b, [&] { return emit(candidates[size_t(c)]), true; });
  });
  return candidates[size_t(i)];
}

// The Winograd shape of a conv it takes (3x3, stride and dilation 1, one
// group), on GPUs or forced: none for others. Where Winograd pays is the
// cost model's (or the tuning's) call; below 32 input or output channels or
// 32 tiles a work-group's 8-channel chunks, 32-channel block or 32-tile
// block would run mostly empty (docs/kernel-choices.md#where-winograd-runs-on-gpus).
std::optional<WinogradShape> winograd_shape(const NodeBuilder& b, const ConvGeometry& g) {
  if (g.KH != 3 || g.KW != 3 || g.sh != 1 || g.sw != 1 || g.dh != 1 || g.dw != 1 || g.groups != 1) return std::nullopt;
  if (b.half) return std::nullopt;  // conv_winograd.cl has no half-storage form: the direct kernels run
  if (b.in_window(0)) return std::nullopt;  // nor reads a window: conv2d_gemm does
  const HostTensor* weights = b.constant(1);
  if (!weights || weights->dtype != DataType::Float32) return std::nullopt;  // packed at load: constant only
  const Forced f = forced(b);
  if (f.taps || f.tiles) return std::nullopt;
  const WinogradShape w{g.C, g.OC, ceil_div(g.OH, 2) * ceil_div(g.OW, 2), g.N};
  if (!f.winograd && (b.device_type() != "gpu" || g.C < 32 || g.OC < 32 || w.tiles * w.images < 32))
    return std::nullopt;
  return w;
}

// --precision tf32: Winograd first wherever the fp32 guess would consider
// it, its products on the tensor cores (conv_winograd.cl WG_MMA), which beat
// the tf32 tiles on every 3x3 shape timed
// (docs/kernel-choices.md#winograd-before-the-tf32-tiles). The pooled form
// cannot split: under half a wave of work-groups the tf32 tiles keep it.
// Forced tiles (benchmarks) run as forced.
bool winograd_before_tf32(const NodeBuilder& b, const WinogradShape& w, bool pooled) {
  const int64_t cu = std::max(1, b.compute_units());
  if (!b.tf32 || mma_tiles_forced(b)) return false;
  return forced(b).winograd || ((w.OC >= 64 || w.groups() >= cu) && (!pooled || 2 * w.groups() >= cu));
}

// conv_winograd.cl's weights, packed once so that a chunk of kWinogradCK
// input channels is one contiguous block: [OC / 32][CP][taps][32], zeros
// past OC and C (CP: C rounded up to the chunk), with taps the 16 values of
// G g G^T (`transformed`, 16/9 of the weights' bytes) or the 9 raw ones.
std::vector<float> winograd_weights(const HostTensor& weights, int64_t OC, int64_t C, bool transformed) {
  const std::vector<float> w = weights.as_float();
  const int64_t CP = ceil_div(C, kWinogradCK) * kWinogradCK, taps = transformed ? 16 : 9;
  std::vector<float> p(size_t(ceil_div(OC, 32) * CP * taps * 32), 0.0f);
  double u[16];
  for (int64_t oc = 0; oc < OC; ++oc)
    for (int64_t c = 0; c < C; ++c) {
      const float* g = w.data() + (oc * C + c) * 9;
      if (transformed) winograd_filter_transform(g, 2, u);
      for (int64_t k = 0; k < taps; ++k)
        p[size_t((((oc / 32) * CP + c) * taps + k) * 32 + oc % 32)] = transformed ? float(u[k]) : g[k];
    }
  return p;
}

// conv_winograd.cl's launches for variant `v` (whole, or split over the
// input channels with gemm.cl's zero and finish passes); PH, PW > 0: the
// 2x2 stride-2 max pool of the output (POOL2, never split).
void launch_winograd(NodeBuilder& b, const ConvGeometry& g, bool has_bias, const TensorArg& bias, const FusedTail& tail,
                     const Variant& v, int64_t PH = 0, int64_t PW = 0) {
  // --precision tf32: the transforms' products on the tensor cores (WG_MMA).
  const bool mma = b.tf32 && tf32_runs(b);
  // Tiles per work-group (BT): 32, or 16 in 128-item groups (fp32 only;
  // the variant's form double-buffered, forced forms as forced).
  const Forced f = forced(b);
  const bool halves = !mma && v.wg_tiles == 16;
  const int64_t bt = mma ? 32 : halves ? 16 : f.winograd_tiles;
  const bool db = !mma && (halves || f.winograd_db);
  const int64_t tiles = ceil_div(g.OH, 2) * ceil_div(g.OW, 2), total = g.N * g.OC * g.OH * g.OW;
  Range r = group_range({size_t(ceil_div(tiles, bt)), size_t(ceil_div(g.OC, 32)), size_t(g.N * v.splits)},
                        {size_t(8 * bt), 1, 1});
  const bool pre = f.winograd_weights != "raw";
  // WG_PAIRS: input rows as aligned float2s, where W and X's offset are even.
  const bool pairs = f.winograd_pairs && g.W % 2 == 0 && b.arg_in(0).offset % 2 == 0;
  const std::string build = f.winograd_build + (bt != 32 ? " -DWG_BT=" + std::to_string(bt) : "") +
                            (db ? " -DWG_DB" : "") + (db && f.winograd_ck8 ? " -DWG_CK=8" : "") +
                            (pairs ? std::string(" -DWG_PAIRS=") + (g.pw % 2 ? "1" : "2") : "");
  // TEXPLAN_PTX on NVIDIA: split-K's red.global.add (common.cl split_add); nothing else reads it here.
  auto source = [&](const std::string& defines, const std::string& prelude) {
    const std::string form = defines + build + (pre ? " -DWG_PRE" : "");
    if (mma) return mma_build(b, "conv_winograd.cl", form + " -DWG_MMA", prelude);
    return Source("conv_winograd.cl", form + (accepts_inline_ptx(b.device()) ? " -DTEXPLAN_PTX" : ""),
                  prelude);
  };
  const MemArg weights = b.packed(pre ? "winograd u" : "winograd g", [&] {
    return winograd_weights(*b.constant(1), g.OC, g.C, pre);
  });
  ConvParams p = conv_params(g, has_bias);
  auto args = [&](const Source& src) {
    launch_conv_kernel(b, src, "conv2d_winograd", r, TensorArg{weights.mem, 0}, bias, p);
  };
  if (mma) b.used_tf32 = true;
  if (PH > 0) {
    p.pool_h = i32(PH), p.pool_w = i32(PW);
    args(source("-DPOOL2", tail.prelude));
    tail.append_args(b);
  } else if (v.splits > 1) {
    launch_splitk_zero(b, Source("gemm.cl", "-DSPLITK"), b.arg_out(0), total, tail);
    p.splits = i32(v.splits), p.kslice = i32(v.kslice);
    args(source("-DSPLITK", ""));
    launch_splitk_finish(b, b.arg_out(0), total, tail);
  } else {
    args(source("", tail.prelude));
    tail.append_args(b);
  }
}

}  // namespace

// Whether Y's planned storage overlaps an input's (in-place sharing, e.g. a
// residual): split-K zeroes Y before the slices read the inputs and adds
// into it, so it must not.
bool output_overlaps_input(const NodeBuilder& b, int except) {
  const TensorArg y = b.arg_out(0);
  const int64_t ye = int64_t(b.stored_size(b.out(0).dtype));
  const int64_t y0 = int64_t(y.offset) * ye, y1 = y0 + element_count(b.out(0).shape) * ye;
  for (int i = 0; i < b.inputs(); ++i) {
    if (!b.has_in(i) || i == except) continue;
    const TensorArg x = b.arg_in(i);
    const int64_t xe = int64_t(b.stored_size(b.in(i).dtype));
    const int64_t x0 = int64_t(x.offset) * xe, x1 = x0 + element_count(b.in(i).shape) * xe;
    if (x.mem == y.mem && x0 < y1 && y0 < x1) return true;
  }
  return false;
}

// Split-K's passes around the slices' launch (prepared between them): Y's
// `total` elements zeroed, and after the slices the epilogue in place, where
// there is one.
// With Y over its residual (FusedTail::residual), nothing is zeroed
// and the finish pass runs the program after the residual Add.
bool splits_onto_residual(const NodeBuilder& b, const FusedTail& tail) {
  return tail.residual && output_overlaps_input(b);
}
void launch_splitk_zero(NodeBuilder& b, const Source& split, const TensorArg& Y, int64_t total, const FusedTail& tail) {
  b.used_split_k = true;  // every split lowering starts here
  if (splits_onto_residual(b, tail)) return;
  b.launch(split, "splitk_zero", linear_range(total), Y, i32(total));
}
void launch_splitk_finish(NodeBuilder& b, const TensorArg& Y, int64_t total, const FusedTail& tail) {
  const std::string& prelude = splits_onto_residual(b, tail) ? tail.residual_prelude : tail.prelude;
  if (prelude.empty()) return;
  b.launch(Source("gemm.cl", "", prelude), "splitk_finish", linear_range(total), Y, i32(total));
  tail.append_args(b);
}

namespace {

// Whether a GEMM of depth K into Y (total elements) may be split: K deep
// enough for two slices, Y over no input, or over exactly the residual of a
// tail with a residual form (the slices then add onto it). The epilogue
// always runs as a separate pass: it reads its operands at Y's index only,
// and (Y over none of them) they still hold the same values after the slices.
bool split_k_allowed(const NodeBuilder& b, int64_t K, int64_t total, const FusedTail& tail) {
  // Half storage: the slices' atomic adds (split_add) work on fp32 words.
  return !b.half && !tail.window && !tail.xwindow && K >= 2 * kTK && total <= INT32_MAX && (!output_overlaps_input(b) || tail.residual);
}

// "kernel 1,2,3": a tuning cache key.
std::string shape_key(const char* kernel, std::initializer_list<int64_t> v) {
  std::string s = kernel;
  char sep = ' ';
  for (int64_t x : v) {
    s += sep;
    s += std::to_string(x);
    sep = ',';
  }
  return s;
}

Source gemm_source(const Tiles& t, const FusedTail& tail) {
  return Source("gemm.cl", "-DWPTM=" + std::to_string(t.wptm) + " -DWPTN=" + std::to_string(t.wptn) + (t.vec ? " -DVEC" : ""),
                tail.prelude);
}

// The split-K build of gemm.cl's tiles (no epilogue: splitk_finish applies
// it); on NVIDIA's driver the adds are PTX reductions, elsewhere (PoCL's CUDA
// device included: NVIDIA vendor, another compiler) compare-and-swap loops.
Source split_source(const Tiles& t, const NodeBuilder& b) {
  return Source("gemm.cl", "-DWPTM=" + std::to_string(t.wptm) + " -DWPTN=" + std::to_string(t.wptn) +
                               (t.vec ? " -DVEC" : "") + " -DSPLITK" +
                               (accepts_inline_ptx(b.device()) ? " -DTEXPLAN_PTX" : ""));
}

// Prepared `gemm` launch; `batch` and the *_sb strides describe the batch.
struct GemmArgs {
  int64_t M, N, K, a_sm, a_sk, b_sk, b_sn, c_sm = 0, c_sn = 0;
  bool has_c = false;
  float alpha = 1, beta = 1;
  std::vector<int64_t> batch{1}, a_sb{0}, b_sb{0}, c_sb{0};
};

// GEMMs with a single row or column become matrix-vector products; the
// others take register tiles chosen by choose_tiles.
void launch_gemm(NodeBuilder& b, const TensorArg& A, const TensorArg& B, const TensorArg& C, const TensorArg& Y,
                 const GemmArgs& g, const FusedTail& tail) {
  if (b.device_type() == "cpu" && !b.gpu_kernels_forced() && launch_gemm_cpu(b, A, B, C, Y, g, tail)) return;  // PoCL: ops_cpu.cpp
  int64_t nb = 1;
  for (int64_t d : g.batch) nb *= d;
  if (g.M == 0 || g.N == 0 || nb == 0) return;
  if ((g.M == 1 || g.N == 1) && g.K >= 64) {
    bool col = g.N == 1;  // outputs run along M: rows of A times B's column
    int64_t outputs = col ? g.M : g.N;
    b.launch(Source("gemm.cl", "", tail.prelude), "gemv", group_range({size_t(outputs), size_t(nb)}, {64, 1}),
             col ? A : B, col ? B : A, C, Y, i32(outputs), i32(g.K), i32(col ? g.a_sm : g.b_sn),
             i32(col ? g.a_sk : g.b_sk), i32(col ? g.b_sk : g.a_sk), i32(col ? g.c_sm : g.c_sn), cl_int(g.has_c),
             g.alpha, g.beta, batch_dims(g.batch), to_dims(col ? g.a_sb : g.b_sb, 0),
             to_dims(col ? g.b_sb : g.a_sb, 0), to_dims(g.c_sb, 0));
    tail.append_args(b);
    return;
  }
  if (!tail.window && !tail.xwindow && launch_gemm_mma(b, A, B, C, Y, g, tail)) return;  // --precision tf32
  const int64_t total = nb * g.M * g.N;
  auto emit = [&](const Variant& v) {
    const Tiles& t = *v.tiles;
    Range r = group_range({size_t(ceil_div(g.N, t.tn())), size_t(ceil_div(g.M, t.tm())), size_t(nb * v.splits)},
                          {16, 16, 1});
    if (v.splits > 1) {
      Source split = split_source(t, b);
      launch_splitk_zero(b, split, Y, total, tail);
      GemmParams p = gemm_params(g);
      p.splits = i32(v.splits), p.kslice = i32(v.kslice);
      launch_gemm_kernel(b, split, "gemm", r, A, B, C, Y, p);
      launch_splitk_finish(b, Y, total, tail);
      return;
    }
    launch_gemm_kernel(b, gemm_source(t, tail), "gemm", r, A, B, C, Y, gemm_params(g));
    tail.append_args(b);
  };
  emit(pick_variant(b, shape_key("gemm", {g.M, g.N, g.K, nb, g.a_sk == 1, g.b_sn == 1}), g.M, g.N, g.K, nb,
                    split_k_allowed(b, g.K, total, tail), emit));
}

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
const PoolTile kPoolTiles[] = {{"4x8x32", 4, 8, 32, 8, 128},
                               {"8x8x32", 8, 8, 32, 8, 256},
                               {"4x8x16", 4, 8, 16, 8, 64},
                               {"2x8x16", 2, 8, 16, 4, 128}};
// Local memory a tile may take: more would cut the work-groups a GPU runs at
// once (docs/kernel-choices.md#conv--maxpool-tiles-on-gpus).
constexpr int64_t kPoolTileLocalBytes = 48 * 1024;
constexpr int64_t kPoolTileMaxAccumulators = 64;  // ROC x RPX registers per item

// KernelChoice::conv_maxpool parsed.
struct ForcedPool {
  bool set = false;
  const PoolTile* tile = nullptr;  // null: the direct kernel
};
ForcedPool parse_pool_variant(const std::string& variant) {
  ForcedPool f;
  f.set = !variant.empty();
  if (f.set && variant != "direct") {
    for (const PoolTile& t : kPoolTiles)
      if (variant == std::string("tiled:") + t.name) f.tile = &t;
    if (!f.tile) throw Error("no FusedConvMaxPool variant " + variant);
  }
  return f;
}

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
                                              int64_t local_bytes) {
  auto round4 = [](int64_t v) { return (v + 3) / 4 * 4; };
  const int64_t CRH = (t.tph - 1) * p.sh + (p.kh - 1) * p.dh + 1, CRW = (t.tpw - 1) * p.sw + (p.kw - 1) * p.dw + 1;
  const int64_t IRH = (CRH - 1) * g.sh + (g.KH - 1) * g.dh + 1, IRW = (CRW - 1) * g.sw + (g.KW - 1) * g.dw + 1;
  const int64_t IPW = ceil_div(IRW, g.sw), ICS = IRH * g.sw * IPW, WP = t.ocb + 4, taps = g.KH * g.KW;
  const int64_t slice_items = t.wg / (t.ocb / t.roc), RPX = ceil_div(CRH * CRW, slice_items);
  const int64_t budget = std::min(local_bytes, kPoolTileLocalBytes) / 4, conv_floats = t.ocb * CRH * CRW;
  if (RPX * t.roc > kPoolTileMaxAccumulators || conv_floats > budget) return std::nullopt;
  auto staged = [&](int64_t c) { return round4(c * ICS) + c * taps * WP; };
  int64_t ICC = std::min(g.C / g.groups, budget);  // input channels staged at once
  while (ICC > 0 && staged(ICC) > budget) --ICC;
  if (ICC == 0) return std::nullopt;
  TiledConvMaxPool f;
  f.tile = &t;
  std::string d;
  auto def = [&](const char* name, int64_t v) { d += std::string(" -D") + name + "=" + std::to_string(v); };
  def("KH", g.KH), def("KW", g.KW), def("SH", g.sh), def("SW", g.sw), def("DH", g.dh), def("DW", g.dw);
  def("PKH", p.kh), def("PKW", p.kw), def("PSH", p.sh), def("PSW", p.sw), def("PDH", p.dh), def("PDW", p.dw);
  def("TPH", t.tph), def("TPW", t.tpw), def("OCB", t.ocb), def("ROC", t.roc), def("WG", t.wg), def("ICC", ICC);
  def("RPX", RPX), def("CRH", CRH), def("CRW", CRW), def("IRH", IRH), def("IRW", IRW), def("IPW", IPW);
  def("ICS", ICS), def("WP", WP), def("WOFF", round4(ICC * ICS));
  def("LOCAL_FLOATS", round4(std::max(staged(ICC), conv_floats)));
  f.defines = d;
  f.tiles_x = ceil_div(p.PW, t.tpw), f.tiles_y = ceil_div(p.PH, t.tph);
  f.oc_blocks = ceil_div(g.OC / g.groups, t.ocb);
  f.rpx = RPX;
  return f;
}

}  // namespace

void FusedTail::append_args(NodeBuilder& b) const {
  for (const Input& in : inputs) {
    b.more_args(in.arg);
    if (in.strided) b.more_args(in.strides);
  }
  if (strided) b.more_args(dims);
  if (window) {
    b.more_args(ywin_dims);
    b.more_args(ywin_strides);
  }
  if (xwindow)
    for (const cl_int v : {xwin_plane, xwin_row, xwin_w}) b.more_args(v);
}

std::vector<std::string> conv_tile_variants() {
  std::vector<std::string> v;
  for (const Tiles& t : kTiles) v.push_back(t.name);
  for (const char* t : {"32x32", "64x64"}) v.push_back(std::string("taps:") + t);  // the previous kernels
  for (const Tiles& t : kTiles) v.push_back(std::string(t.name) + "/split");       // split-K, slices by shape
  return v;
}

std::vector<std::string> conv_maxpool_variants() {
  std::vector<std::string> v = {"direct"};
  for (const PoolTile& t : kPoolTiles) v.push_back(std::string("tiled:") + t.name);
  return v;
}

void check_conv_maxpool_variant(const std::string& variant) { parse_pool_variant(variant); }

void check_conv_variant(const std::string& variant) { parse_conv_variant(variant); }

bool lower_conv(NodeBuilder& b) { return lower_conv(b, FusedTail{}); }

bool lower_conv(NodeBuilder& b, const FusedTail& fused) {
  FusedTail tail = fused;
  // A patch's windows: every variant below but split-K, tf32's tiles and
  // (for X) Winograd's GPU form writes Y through YI and reads X through XPLANE.
  window_output(b, tail);
  window_input(b, tail);
  if (b.device_type() == "cpu" && !b.gpu_kernels_forced() && lower_conv_cpu(b, tail)) return true;  // PoCL: ops_cpu.cpp
  if (channel_scaled(b.node)) return false;  // the GPU kernels do not scale X: the CPU runs it
  const Forced f = forced(b);
  ConvGeometry g;
  if (!conv_geometry(b, false, g)) return false;
  bool has_bias = b.has_in(2);
  // Without a bias, a dummy the kernels do not read: not the weights, which
  // Winograd reads from a packed copy and then never uploads.
  TensorArg bias = has_bias ? b.arg_in(2) : b.arg_in(0);
  int64_t ICg = g.C / g.groups, OCg = g.OC / g.groups;
  if (g.N * g.OC * g.OH * g.OW == 0) return true;

  if (g.groups == g.C && ICg == 1) {  // depthwise
    Range r = group_range({size_t(ceil_div(ceil_div(g.OW, 4), 16)), size_t(ceil_div(g.OH, 4)), size_t(g.N * g.OC)},
                          {16, 4, 1});
    launch_conv_kernel(b, Source("conv.cl", "", tail.prelude), "conv2d_depthwise", r, b.arg_in(1), bias,
                       conv_params(g, has_bias));
    tail.append_args(b);
    return true;
  }
  if (g.KH == 1 && g.KW == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0) {  // 1x1: a plain GEMM
    const int64_t HW = g.H * g.W, plane = tail.xwindow ? tail.xwin_plane : HW;  // X's plane stride
    GemmArgs a{OCg, HW, ICg, ICg, 1, plane, 1};
    a.c_sm = 1, a.c_sn = 0, a.has_c = has_bias;
    a.batch = {g.N, g.groups};
    a.a_sb = {0, OCg * ICg};
    a.b_sb = {g.C * plane, ICg * plane};
    a.c_sb = {0, OCg};
    launch_gemm(b, b.arg_in(1), b.arg_in(0), bias, b.arg_out(0), a, tail);
    return true;
  }
  const int64_t K = ICg * g.KH * g.KW, total = g.N * g.OC * g.OH * g.OW;
  const std::optional<WinogradShape> wino = winograd_shape(b, g);
  if (wino && winograd_before_tf32(b, *wino, false)) {
    const bool can_split = split_k_allowed(b, K, total, tail);
    const int64_t cu = std::max(1, b.compute_units());
    launch_winograd(b, g, has_bias, bias, tail,
                    f.winograd ? forced_winograd(f, *wino, can_split, cu)
                                      : winograd_by_shape(*wino, can_split, cu, false));
    return true;
  }
  if (!tail.window && !tail.xwindow && launch_conv_mma(b, g, has_bias, bias, tail)) return true;  // --precision tf32
  auto emit = [&](const Variant& v) {
    if (!v.tiles) return launch_winograd(b, g, has_bias, bias, tail, v);
    const Tiles& t = *v.tiles;
    Range r = group_range({size_t(ceil_div(g.OH * g.OW, t.tn())), size_t(ceil_div(OCg, t.tm())),
                           size_t(g.N * g.groups * v.splits)},
                          {16, 16, 1});
    if (v.splits > 1) {
      Source split = split_source(t, b);
      launch_splitk_zero(b, split, b.arg_out(0), total, tail);
      ConvParams p = conv_params(g, has_bias);
      p.splits = i32(v.splits), p.kslice = i32(v.kslice);
      launch_conv_kernel(b, split, "conv2d_gemm", r, b.arg_in(1), bias, p);
      launch_splitk_finish(b, b.arg_out(0), total, tail);
      return;
    }
    launch_conv_kernel(b, gemm_source(t, tail), f.taps ? "conv2d_gemm_taps" : "conv2d_gemm", r, b.arg_in(1),
                       bias, conv_params(g, has_bias));
    tail.append_args(b);
  };
  std::string key = shape_key("conv2d_gemm", {g.N, g.C, g.H, g.W, g.OC, g.OH, g.OW, g.KH, g.KW, g.sh, g.sw, g.ph,
                                              g.pw, g.dh, g.dw, g.groups});
  emit(pick_variant(b, key, OCg, g.OH * g.OW, K, g.N * g.groups, !f.taps && split_k_allowed(b, K, total, tail),
                    emit, wino ? &*wino : nullptr));
  return true;
}

// FusedConvMaxPool (docs/fused-ops.md): Y = MaxPool(program(conv + B)), the
// conv output never stored. 2x2 windows of stride 2 (VGG, U-Net): the
// implicit GEMM with N enumerating (pooled pixel, window position), so each
// work-item holds whole windows in its float4 column groups (VEC tiles) and
// stores their max. Other windows (overlapping stems): conv_maxpool.cl's
// tiles, the conv region under a tile of pooled outputs computed once from
// local memory (ResNet's stem: 1.2x the conv's work), else conv.cl's direct
// kernel, one work-item per pooled output recomputing the conv at each
// window position (2.25x for 3x3/2 windows).
bool lower_fused_conv_maxpool(NodeBuilder& b) {
  const Node& n = b.node;
  const Shape &x = b.in(0).shape, &w = b.in(1).shape, &y = b.out(0).shape;
  if (x.size() != 4 || w.size() != 4 || y.size() != 4 || b.inputs() > 3) return false;
  std::vector<int64_t> s = n.get_ints("strides", {1, 1}), d = n.get_ints("dilations", {1, 1});
  if (s.size() != 2 || d.size() != 2) return false;
  Shape conv_out = {x[0], y[1], conv_out_size(n, 0, 2, x[2], w[2], s[0], d[0]),
                    conv_out_size(n, 1, 2, x[3], w[3], s[1], d[1])};
  ConvGeometry g;
  if (!conv_geometry(b, false, g, &conv_out) || g.OH <= 0 || g.OW <= 0) return false;
  std::vector<int64_t> pk = n.get_ints("pool_kernel_shape"), ps = n.get_ints("pool_strides", {1, 1}),
                       pp = n.get_ints("pool_pads", {0, 0, 0, 0}), pd = n.get_ints("pool_dilations", {1, 1});
  if (pk.size() != 2 || ps.size() != 2 || pp.size() != 4 || pd.size() != 2) return false;
  if (n.get_string("pool_auto_pad", "NOTSET") != "NOTSET") return false;
  FusedTail tail;
  Epilogue e = Epilogue::parse(n);
  if (e.inputs() > 1) throw Error("program reads x" + std::to_string(e.inputs() - 1) + " but the node has no epilogue inputs");
  tail.prelude = epilogue_cl(e, {EpilogueRead::Value});
  tail.transcendental = e.transcendental();
  window_output(b, tail);
  window_input(b, tail);
  const bool has_bias = b.has_in(2);
  const TensorArg bias = has_bias ? b.arg_in(2) : b.arg_in(0);  // a dummy (see lower_conv)
  const int64_t PH = y[2], PW = y[3], OCg = g.OC / g.groups;
  if (g.N * g.OC * PH * PW == 0) return true;
  const bool pairs = pk == std::vector<int64_t>{2, 2} && ps == std::vector<int64_t>{2, 2} &&
                     pp == std::vector<int64_t>{0, 0, 0, 0} && pd == std::vector<int64_t>{1, 1};
  const std::optional<WinogradShape> wino = pairs ? winograd_shape(b, g) : std::nullopt;
  if (wino && winograd_before_tf32(b, *wino, true)) {
    launch_winograd(b, g, has_bias, bias, tail, Variant{nullptr}, PH, PW);
    return true;
  }
  if (pairs && !tail.window && !tail.xwindow && launch_conv_mma(b, g, has_bias, bias, tail, PH, PW)) return true;  // --precision tf32
  if (pairs && (b.device_type() == "gpu" || b.gpu_kernels_forced())) {
    const Forced f = forced(b);
    const Tiles* t = f.tiles;
    if (!t || !t->vec) {  // the heuristic's tiles, in their float4 form
      const Tiles& c = choose_tiles(b, OCg, PH * PW * 4, g.N * g.groups);
      t = &tiles_named(c.wptm == 2 ? "64x64v" : (std::string(c.name) + (c.vec ? "" : "v")).c_str());
    }
    // Winograd's 2x2 output tiles are the pool's windows: forced, or where
    // its cost is below these tiles' (never split: a max of partial sums).
    if (const auto& w = wino) {
      const int64_t cu = std::max(1, b.compute_units());
      if (f.winograd || ((w->OC >= 64 || w->groups() >= cu) &&
                                winograd_cost(Variant{nullptr}, *w, cu) <
                                    variant_cost(Variant{t}, OCg, PH * PW * 4, g.C * 9, g.N, cu))) {
        launch_winograd(b, g, has_bias, bias, tail, Variant{nullptr}, PH, PW);
        return true;
      }
    }
    Range r = group_range(
        {size_t(ceil_div(PH * PW * 4, t->tn())), size_t(ceil_div(OCg, t->tm())), size_t(g.N * g.groups)}, {16, 16, 1});
    Source src("gemm.cl", "-DWPTM=" + std::to_string(t->wptm) + " -DWPTN=" + std::to_string(t->wptn) + " -DVEC -DPOOL2",
               tail.prelude);
    ConvParams p = conv_params(g, has_bias);
    p.pool_h = i32(PH), p.pool_w = i32(PW);
    launch_conv_kernel(b, src, "conv2d_gemm", r, b.arg_in(1), bias, p);
    tail.append_args(b);
    return true;
  }
  // Other windows: the tiled kernel where a tile fits local memory (forced,
  // else the tuning cache's choice, else the tile of least cost:
  // docs/kernel-choices.md#conv--maxpool-tiles-on-gpus), the direct kernel
  // where none fits.
  const PoolGeometry pg{PH, PW, pk[0], pk[1], ps[0], ps[1], pp[0], pp[1], pd[0], pd[1]};
  std::vector<TiledConvMaxPool> fits;
  for (const PoolTile& t : kPoolTiles)
    if (auto f = fit_pool_tile(g, pg, t, b.local_mem_bytes()); f && !tail.xwindow) fits.push_back(*f);  // X a window: direct
  const int64_t images = g.N * g.groups, cu = std::max(1, b.compute_units());
  int fallback = -1;  // index into fits; -1: direct
  for (int i = 0; i < int(fits.size()); ++i)
    if (fallback < 0 || fits[size_t(i)].cost(images, cu) < fits[size_t(fallback)].cost(images, cu)) fallback = i;
  auto emit = [&](int i) {
    if (i < 0 || i >= int(fits.size())) {
      int64_t total = g.N * g.OC * PH * PW;
      b.launch(Source("conv.cl", "", tail.prelude), "conv2d_maxpool", linear_range(total), b.arg_in(0), b.arg_in(1),
               bias, b.arg_out(0), cl_int(has_bias), i32(g.C), i32(g.H), i32(g.W), i32(g.OC), i32(g.OH), i32(g.OW),
               i32(g.KH), i32(g.KW), i32(g.sh), i32(g.sw), i32(g.ph), i32(g.pw), i32(g.dh), i32(g.dw), i32(g.groups),
               i32(PH), i32(PW), i32(pk[0]), i32(pk[1]), i32(ps[0]), i32(ps[1]), i32(pp[0]), i32(pp[1]), i32(pd[0]),
               i32(pd[1]), i32(total));
      tail.append_args(b);
      return;
    }
    const TiledConvMaxPool& f = fits[size_t(i)];
    Range r = group_range({size_t(f.tiles_x), size_t(f.tiles_y), size_t(images * f.oc_blocks)},
                          {size_t(f.tile->wg), 1, 1});
    b.launch(Source("conv_maxpool.cl", f.defines, tail.prelude), "conv2d_maxpool_tiled", r, b.arg_in(0), b.arg_in(1), bias,
             b.arg_out(0), cl_int(has_bias), i32(g.C), i32(g.H), i32(g.W), i32(g.OC), i32(g.OH), i32(g.OW), i32(g.ph),
             i32(g.pw), i32(g.groups), i32(PH), i32(PW), i32(pp[0]), i32(pp[1]), i32(f.oc_blocks));
    tail.append_args(b);
  };
  int choice = fallback;
  if (const ForcedPool forced_pool = parse_pool_variant(b.kernel_choice.conv_maxpool); forced_pool.set) {
    choice = -1;
    for (int i = 0; i < int(fits.size()); ++i)
      if (fits[size_t(i)].tile == forced_pool.tile) choice = i;
  } else {
    std::vector<std::string> names;
    for (const TiledConvMaxPool& f : fits) names.push_back(std::string("tiled:") + f.tile->name);
    names.push_back("direct");
    std::string key = shape_key("conv2d_maxpool", {g.N, g.C, g.H, g.W, g.OC, g.OH, g.OW, g.KH, g.KW, g.sh, g.sw, g.ph,
                                                   g.pw, g.dh, g.dw, g.groups, PH, PW, pk[0], pk[1], ps[0], ps[1],
                                                   pp[0], pp[1], pd[0], pd[1]});
    choice = choose_variant(key, names, fallback < 0 ? int(fits.size()) : fallback,
                            [&](int i) { return time_candidate(b, [&] { return emit(i), true; }); });
  }
  emit(choice);
  return true;
}

bool lower_conv_transpose(NodeBuilder& b) {
  if (b.device_type() == "cpu" && !b.gpu_kernels_forced() && lower_conv_transpose_cpu(b)) return true;  // PoCL: ops_cpu.cpp
  ConvGeometry g;
  if (!conv_geometry(b, true, g)) return false;
  bool has_bias = b.has_in(2);
  int64_t OCg = g.OC / g.groups, blocks = ceil_div(OCg, 4);
  if (g.N * g.OC * g.OH * g.OW == 0) return true;
  TensorArg bias = has_bias ? b.arg_in(2) : b.arg_in(1);
  // Taps that tile the output exactly (UNet's 2x2 stride 2): one GEMM.
  if (g.sh == g.KH && g.sw == g.KW && g.dh == 1 && g.dw == 1 && g.ph == 0 && g.pw == 0 && g.OH == g.H * g.KH &&
      g.OW == g.W * g.KW) {
    int64_t M = OCg * g.KH * g.KW, N = g.H * g.W;
    const Tiles& t = choose_tiles(b, M, N, g.N * g.groups);
    Range r = group_range({size_t(ceil_div(N, t.tn())), size_t(ceil_div(M, t.tm())), size_t(g.N * g.groups)}, {16, 16, 1});
    b.launch(gemm_source(t, FusedTail{}), "conv_transpose2d_gemm", r, b.arg_in(0), b.arg_in(1), bias, b.arg_out(0),
             cl_int(has_bias), i32(g.C), i32(g.H), i32(g.W), i32(g.OC), i32(g.KH), i32(g.KW), i32(g.groups));
    return true;
  }
  Range r = group_range({size_t(ceil_div(g.OW, 16)), size_t(ceil_div(g.OH, 4)), size_t(g.N * g.groups * blocks)},
                        {16, 4, 1});
  b.launch("conv.cl", "conv_transpose2d", r, b.arg_in(0), b.arg_in(1), bias, b.arg_out(0), cl_int(has_bias), i32(g.C), i32(g.H), i32(g.W), i32(g.OC), i32(g.OH), i32(g.OW), i32(g.KH),
           i32(g.KW), i32(g.sh), i32(g.sw), i32(g.ph), i32(g.pw), i32(g.dh), i32(g.dw), i32(g.groups));
  return true;
}

bool lower_gemm(NodeBuilder& b) {
  for (int i = 0; i < b.inputs(); ++i)
    if (b.has_in(i) && b.in(i).dtype != DataType::Float32) return false;
  const Shape &A = b.in(0).shape, &B = b.in(1).shape;
  if (A.size() != 2 || B.size() != 2) return false;
  bool ta = b.node.get_int("transA", 0) != 0, tb = b.node.get_int("transB", 0) != 0;
  int64_t M = ta ? A[1] : A[0], K = ta ? A[0] : A[1], N = tb ? B[0] : B[1];
  GemmArgs a{M, N, K, ta ? 1 : K, ta ? M : 1, tb ? 1 : N, tb ? K : 1};
  a.alpha = b.node.get_float("alpha", 1.0f);
  a.beta = b.node.get_float("beta", 1.0f);
  a.has_c = b.has_in(2);
  if (a.has_c) {
    std::vector<int64_t> cs = broadcast_strides(b.in(2).shape, {M, N});
    a.c_sm = cs[0], a.c_sn = cs[1];
  }
  launch_gemm(b, b.arg_in(0), b.arg_in(1), a.has_c ? b.arg_in(2) : b.arg_in(0), b.arg_out(0), a, FusedTail{});
  return true;
}

// A MatMul whose operands (one at least) are read through OperandViews
// (optimize/views.cpp; ranks 2 and more): the GEMM's row, column and batch
// strides are the views', numpy-broadcast over the batch dims.
static bool lower_strided_matmul(NodeBuilder& b, const std::optional<OperandView>& va, const std::optional<OperandView>& vb,
                          const FusedTail& tail) {
  const Shape A = va ? va->shape : b.in(0).shape, B = vb ? vb->shape : b.in(1).shape;
  if (A.size() < 2 || B.size() < 2) return false;
  const std::vector<int64_t> sa = va ? va->strides : contiguous_strides(A), sb = vb ? vb->strides : contiguous_strides(B);
  const int64_t M = A[A.size() - 2], K = A.back(), N = B.back();
  if (B[B.size() - 2] != K) return false;
  const size_t rank = std::max(A.size(), B.size()) - 2;
  Shape batch(rank, 1);
  std::vector<int64_t> as(rank, 0), bs(rank, 0);
  auto align = [&](const Shape& s, const std::vector<int64_t>& st, std::vector<int64_t>& out) {
    const size_t r = s.size() - 2, pad = rank - r;
    for (size_t d = 0; d < r; ++d) {
      if (s[d] != 1 && batch[pad + d] != 1 && batch[pad + d] != s[d]) return false;
      if (s[d] != 1) batch[pad + d] = s[d], out[pad + d] = st[d];
    }
    return true;
  };
  if (!align(A, sa, as) || !align(B, sb, bs)) return false;
  GemmArgs a{M, N, K, sa[A.size() - 2], sa.back(), sb[B.size() - 2], sb.back()};
  Strided s = collapse({batch, {contiguous_strides(batch), as, bs}});
  if (!s.dims.empty()) a.batch = s.dims, a.a_sb = s.strides[1], a.b_sb = s.strides[2];
  a.c_sb = std::vector<int64_t>(a.batch.size(), 0);
  TensorArg x = b.arg_in(0), w = b.arg_in(1);
  x.offset += cl_int(va ? va->offset : 0);
  w.offset += cl_int(vb ? vb->offset : 0);
  launch_gemm(b, x, w, b.arg_in(0), b.arg_out(0), a, tail);
  return true;
}

// Batched with numpy broadcasting of the batch dims; 1-D operands get the
// missing matrix dim (ONNX/numpy rules) which changes no memory layout.
bool lower_matmul(NodeBuilder& b) { return lower_matmul(b, false, FusedTail{}); }

// trans_b: B is 2-D [N, K] (FusedMatMul's transB).
bool lower_matmul(NodeBuilder& b, bool trans_b, const FusedTail& tail) {
  if (b.in(0).dtype != DataType::Float32 || b.in(1).dtype != DataType::Float32) return false;
  const std::optional<OperandView> va = operand_view(b.node, 0), vb = operand_view(b.node, 1);
  if (va || vb) return !trans_b && lower_strided_matmul(b, va, vb, tail);
  Shape A = b.in(0).shape, B = b.in(1).shape;
  if (A.empty() || B.empty()) return false;
  if (trans_b) {
    if (B.size() != 2) return false;
    std::swap(B[0], B[1]);  // the logical [K, N]
  }
  if (A.size() == 1) A.insert(A.begin(), 1);
  if (B.size() == 1) B.push_back(1);
  int64_t M = A[A.size() - 2], K = A.back(), N = B.back();
  Shape ab(A.begin(), A.end() - 2), bb(B.begin(), B.end() - 2);
  size_t rank = std::max(ab.size(), bb.size());
  ab.insert(ab.begin(), rank - ab.size(), 1);
  bb.insert(bb.begin(), rank - bb.size(), 1);
  Shape batch(rank);
  for (size_t k = 0; k < rank; ++k) batch[k] = std::max(ab[k], bb[k]);
  GemmArgs a{M, N, K, K, 1, trans_b ? 1 : N, trans_b ? K : 1};
  int64_t b_batch = element_count(bb);
  if (b_batch == 1) {  // B shared by every batch: one tall GEMM
    a.M = M * element_count(ab);
  } else {
    std::vector<int64_t> as = broadcast_strides(ab, batch), bs = broadcast_strides(bb, batch);
    for (auto& v : as) v *= M * K;
    for (auto& v : bs) v *= K * N;
    Strided s = collapse({batch, {contiguous_strides(batch), as, bs}});
    a.batch = s.dims.empty() ? std::vector<int64_t>{1} : s.dims;
    a.a_sb = s.dims.empty() ? std::vector<int64_t>{0} : s.strides[1];
    a.b_sb = s.dims.empty() ? std::vector<int64_t>{0} : s.strides[2];
    a.c_sb = std::vector<int64_t>(a.batch.size(), 0);
  }
  launch_gemm(b, b.arg_in(0), b.arg_in(1), b.arg_in(0), b.arg_out(0), a, tail);
  return true;
}

}  // namespace texplan::runtime
