// Variant selection of the GPU conv and GEMM lowerings (lower/conv_select.h):
// the names KernelChoice gives variants, the cost models, and the tuning
// cache's choice among candidates.
#include "lower/conv_select.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "lower/mma.h"
#include "lower/tuning.h"

namespace texplan::lower {

static const Tiles kTiles[] = {{"32x32", 2, 2, false, 1.0},     {"64x64", 4, 4, false, 2.0},
                               {"64x64v", 4, 4, true, 2.5},     {"64x128", 4, 8, false, 2.67},
                               {"64x128v", 4, 8, true, 3.2},    {"128x64", 8, 4, false, 2.67},
                               {"128x64v", 8, 4, true, 3.2},    {"128x128", 8, 8, false, 3.0},
                               {"128x128v", 8, 8, true, 4.0}};

// Tiles under 32 on a side: a work-item's 1x1 to 1x2 block, two to four
// times the work-groups of 32x32 where a grid leaves compute units idle.
// Candidates of products only (time model and tuning), never of convs nor
// of the tile rules (docs/kernel-choices.md#the-gemm-time-model).
static const Tiles kNarrowTiles[] = {{"16x16", 1, 1, false, 0.25}, {"16x32", 1, 2, false, 0.5}, {"32x16", 2, 1, false, 0.5}};
// A tile only the k-groups take (gemm_kgroups' own work-item blocks; its
// wptm and wptn only name the tile's size).
static const Tiles kKGroupTiles[] = {{"32x64", 2, 4, false, 0.0}};

const Tiles& tiles_named(const char* n) {
  for (const Tiles& t : kTiles)
    if (std::string(n) == t.name) return t;
  for (const Tiles& t : kNarrowTiles)
    if (std::string(n) == t.name) return t;
  throw Error(std::string("no tile variant ") + n);
}

// gemm_kgroups' forms: the tile, its groups of 64 work-items, a
// work-item's block (wm x wn) and whether a group keeps two slices (db).
// 64x64 with 8 groups would need 70 KB of local memory, 32x64 with 4 in
// two slices 53 KB.
struct KGroups {
  const char* name;
  const char* tiles;
  int64_t groups;
  int wm, wn;
  bool db;
};
static const KGroups kKGroups[] = {{"32x32k2", "32x32", 2, 4, 4, false}, {"32x32k4", "32x32", 4, 4, 4, false},
                                   {"32x32k8", "32x32", 8, 4, 4, false}, {"64x64k2", "64x64", 2, 8, 8, false},
                                   {"64x64k4", "64x64", 4, 8, 8, false}, {"32x64k2", "32x64", 2, 8, 4, true},
                                   {"32x64k4", "32x64", 4, 8, 4, false}};

// The tile k-groups form `k` shares among its groups.
static const Tiles& kgroup_tiles(const KGroups& k) {
  for (const Tiles& t : kKGroupTiles)
    if (std::string(k.tiles) == t.name) return t;
  return tiles_named(k.tiles);
}

static const KGroups* kgroups_named(const std::string& n) {
  for (const KGroups& k : kKGroups)
    if (n == k.name) return &k;
  return nullptr;
}

// Whether two slices of A and B `depth` deep (gemm.cl GEMM_LOCALS: rows of
// the tile plus PAD, and one float4 more each) fit the 48 KB of local memory
// every OpenCL GPU here gives a work-group.
bool depth_fits(const Tiles& t, int64_t depth) {
  const int64_t pad = t.vec ? 4 : 1;
  return depth * (t.tm() + pad + t.tn() + pad) * 4 + 2 * 16 <= 48 * 1024;
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
    // reads, ":dnm" no products, ":dnt" no transforms, ":dnb" no barriers
    // in the chunk loop (these two in the 32-tile fp32 build only), to time
    // the rest. The build forms tried and
    // not kept: docs/kernel-choices.md#winograd-builds-tried-and-not-kept.
    std::stringstream opts(tiles.substr(8));
    for (std::string o; std::getline(opts, o, ':');) {
      if (o == "dng") f.winograd_build += " -DWG_DIAG_NO_GLOBAL";
      else if (o == "dnm") f.winograd_build += " -DWG_DIAG_NO_GEMM";
      else if (o == "dnt") f.winograd_build += " -DWG_DIAG_NO_TRANSFORM";  // the chunks' transforms and stores
      else if (o == "dnb") f.winograd_build += " -DWG_DIAG_NO_BARRIER";    // the chunk loop's barriers
      else if (o == "raw") f.winograd_weights = o;
      else if (o == "pf2") f.winograd_build += " -DWG_PREFETCH2";  // two chunks in flight in the fp32 build
      else if (o == "db") f.winograd_db = true;  // 4-channel chunks in two buffers (fp32 build)
      else if (o == "db8") f.winograd_db = f.winograd_ck8 = true;  // 8-channel chunks: with :t16 only
      else if (o == "t16") f.winograd_tiles = 16;
      else if (o == "nopairs") f.winograd_pairs = false;  // input rows read a float at a time
      else if (!o.empty())
        throw Error("no Winograd build variant :" + o + " (:dng, :dnm, :dnt, :dnb, :raw, :pf2, :db, :db8, :t16, :nopairs)");
    }
    if (f.winograd_weights == "raw" && (f.winograd_tiles != 32 || f.winograd_db))
      throw Error("winograd:raw takes neither :db nor :t16");
    if (f.winograd_tiles == 32 && f.winograd_ck8)
      throw Error("winograd:db8 needs :t16 (two buffers of 32 tiles exceed 48 KB of local memory)");
  } else if (const KGroups* kg = kgroups_named(tiles)) {
    if (f.splits != 0) throw Error("the k-groups variant " + tiles + " has no split-K form");
    f.tiles = &kgroup_tiles(*kg);
    f.kgroups = kg->groups;
  } else if (!variant.empty() && tiles != "gpu") {
    f.taps = tiles.rfind("taps:", 0) == 0;
    std::string name = tiles.substr(f.taps ? 5 : 0);
    if (const size_t d = name.rfind('d'); d != std::string::npos) {  // "TILESdN"
      const std::string depth = name.substr(d + 1);
      if (depth != "32" && depth != "64") throw Error("no slice depth d" + depth + " (d32 or d64)");
      if (f.splits != 0) throw Error("the deep slices of " + tiles + " have no split-K form");
      name.resize(d);
      f.depth = std::stoll(depth);
    }
    f.tiles = &tiles_named(name.c_str());
    if (!depth_fits(*f.tiles, f.depth))
      throw Error(tiles + ": two slices " + std::to_string(f.depth) + " deep need more than 48 KB of local memory");
    if (f.taps && f.splits != 0) throw Error("the taps: baseline has no split-K variant");
  }
  return f;
}

// The conv variant the session named for node builder `b` (none: every field unset).
Forced forced(const NodeBuilder& b) { return parse_conv_variant(b.kernel_choice.conv); }

// Whether tiles `t` waste at most a quarter of their area on the edges of
// an MxN output (32x32 always qualifies: the smallest).
static bool fits(const Tiles& t, int64_t M, int64_t N) {
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
constexpr int64_t kMinSliceK = 4 * kTK;  // shallower slices spend more on the pipeline's fill and the adds

// About `want` slices of K, rounded to whole TK; the variant has as many as
// are nonempty (1: unsplit).
static Variant split_k(const Tiles& t, int64_t K, int64_t want) {
  int64_t kslice = ceil_div(ceil_div(K, std::max<int64_t>(1, want)), kTK) * kTK, splits = ceil_div(K, kslice);
  return splits > 1 ? Variant{&t, splits, kslice} : Variant{&t};
}

// The slices that bring `t`'s grid to about `waves` waves of work-groups
// (two: as many per compute unit as the memory latency wants hidden), none
// shallower than kMinSliceK.
static Variant split_by_shape(const Tiles& t, int64_t M, int64_t N, int64_t K, int64_t batches, int64_t cu,
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

// The matrix products' times on a GPU by variant (gemm.cl's gemm, its split-K
// build and gemm_kgroups), fitted to texplan_conv_bench's product and 1x1
// shapes on one H200 (bench/data/gemm_times_h200.json, by
// scripts/fit_gemm_times.py; docs/kernel-choices.md#the-gemm-time-model): a launch
// costs `overhead_us`, and the work-groups run in waves of `per_cu` a compute
// unit, each wave `us_per_mfma` per million FMAs of one group. Families not
// here (the tiles without float4 reads from 64x64 on, 128x128v, the 64x64
// k-groups) won one shape of 40 at most and are left to tuning: 64x64
// without float4 reads, fitted, took ViT-B/16's fc1 at 92 us where 128x64v
// takes 80 (docs/kernel-choices.md#the-gemm-time-model).
struct GemmTime {
  const char* family;  // Variant::base(), "/s" after it for its split-K form
  int64_t per_cu;
  double overhead_us, us_per_mfma;
};
static const GemmTime kGemmTimes[] = {  // scripts/fit_gemm_times.py on bench/data/gemm_times_h200.json
    {"16x16", 1, 6.26, 44.15},      {"16x32", 1, 6.11, 33.69},      {"32x16", 1, 6.13, 34.32},
    {"32x32", 1, 6.56, 24.79},      {"64x64v", 1, 8.30, 13.17},
    {"64x128v", 1, 9.85, 9.98},     {"128x64v", 1, 9.81, 9.86},     {"32x32/s", 3, 9.07, 73.71},
    {"64x64/s", 1, 12.17, 13.54},   {"64x64v/s", 1, 13.46, 13.49},  {"64x128v/s", 1, 13.43, 13.20},
    {"128x64v/s", 1, 13.28, 13.26}, {"32x32k2", 2, 6.24, 25.21},    {"32x32k4", 1, 6.62, 14.86},
    {"32x32k8", 1, 6.35, 15.86},    {"32x64k2", 1, 7.70, 11.18},    {"32x64k4", 1, 7.10, 10.63}};

// Microseconds by kGemmTimes, or infinity for a family it lacks.
static double gemm_time_us(const Variant& v, int64_t M, int64_t N, int64_t K, int64_t batches, int64_t cu) {
  if (!v.tiles) return INFINITY;  // Winograd
  const std::string family = v.base() + (v.splits > 1 ? "/s" : "");
  for (const GemmTime& t : kGemmTimes) {
    if (family != t.family) continue;
    const int64_t tm = v.tiles->tm(), tn = v.tiles->tn();  // k-groups: the tile the groups share
    const int64_t groups = ceil_div(M, tm) * ceil_div(N, tn) * batches * v.splits;
    const double fmas = double(tm * tn) * double(v.splits > 1 ? v.kslice : K);
    return t.overhead_us + double(ceil_div(groups, cu * t.per_cu)) * fmas * 1e-6 * t.us_per_mfma;
  }
  return INFINITY;
}

// The heuristic's variant: choose_tiles' tiles, or on GPUs (where
// `can_split`) a split of fitting tiles where the cost model says it saves a
// fifth at least, a margin for its guesses
// (docs/kernel-choices.md#split-k-and-its-cost).
static Variant choose_by_shape(const NodeBuilder& b, int64_t M, int64_t N, int64_t K, int64_t batches, bool can_split) {
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

constexpr int64_t kWinogradMinSlice = 32;  // input channels per split-K slice, at least

// Winograd's slices: grids under half a wave (of one work-group per compute
// unit) split to about `waves` waves (rounded to the nearest whole number of
// slices); larger ones stay whole (docs/kernel-choices.md#winograd-slices).
static Variant winograd_split(const WinogradShape& w, int64_t cu, int64_t waves) {
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
// the last wave half empty and halves fill it, 2x2-pooled convs too
// (docs/kernel-choices.md#winograd-split-or-in-16-tile-groups).
Variant winograd_by_shape(const WinogradShape& w, bool can_split, int64_t cu, bool t16) {
  const Variant whole{nullptr}, split = can_split ? winograd_split(w, cu, 1) : whole;
  if (split.splits > 1 && winograd_cost(split, w, cu) < 0.8 * winograd_cost(whole, w, cu)) return split;
  Variant halves{nullptr};
  halves.wg_tiles = 16;
  return t16 && winograd_cost(halves, w, cu) < 0.9 * winograd_cost(whole, w, cu) ? halves : whole;
}

std::string winograd_variant_by_shape(int64_t C, int64_t OC, int64_t OH, int64_t OW, int64_t images,
                                      int compute_units, bool can_split, bool fp32) {
  const WinogradShape w{C, OC, ceil_div(OH, 2) * ceil_div(OW, 2), images};
  return winograd_by_shape(w, can_split, std::max(1, compute_units), fp32).name();
}


// KernelChoice::conv's "winograd", "winograd/split" or "winograd/sN" (`f`).
Variant forced_winograd(const Forced& f, const WinogradShape& w, bool can_split, int64_t cu) {
  if (!can_split || f.splits == 1 || f.splits == 0) return Variant{nullptr};
  if (f.splits < 0) return winograd_split(w, std::max<int64_t>(cu, 2 * w.groups() + 1), 1);  // split
  int64_t cslice = ceil_div(ceil_div(w.C, f.splits), kWinogradCK) * kWinogradCK;
  return ceil_div(w.C, cslice) > 1 ? Variant{nullptr, ceil_div(w.C, cslice), cslice} : Variant{nullptr};
}

// Every tile unsplit (where `narrow` the narrow ones too), and where
// `can_split` each of kTiles split to about 2 waves and to 1 (half the
// atomic adds); where `can_kgroups` the k-groups forms.
static std::vector<Variant> gemm_candidates(int64_t M, int64_t N, int64_t K, int64_t batches, int64_t cu,
                                            bool can_split, bool can_kgroups, bool narrow) {
  std::vector<Variant> candidates;
  for (const Tiles& t : kTiles) candidates.push_back({&t});
  if (narrow)
    for (const Tiles& t : kNarrowTiles) candidates.push_back({&t});
  if (can_split)
    for (const Tiles& t : kTiles)
      for (int64_t waves : {2, 1})
        if (Variant v = split_by_shape(t, M, N, K, batches, cu, waves);
            v.splits > 1 && v.name() != candidates.back().name())
          candidates.push_back(v);
  if (can_kgroups)
    for (const KGroups& k : kKGroups) {
      candidates.push_back(Variant{&kgroup_tiles(k)});
      candidates.back().kgroups = k.groups;
    }
  return candidates;
}

// The candidate of the least gemm_time_us (the first of them on ties).
static Variant fastest_gemm(const std::vector<Variant>& candidates, int64_t M, int64_t N, int64_t K, int64_t batches,
                            int64_t cu) {
  Variant best = candidates.front();
  double fastest = INFINITY;
  for (const Variant& v : candidates)
    if (double t = gemm_time_us(v, M, N, K, batches, cu); t < fastest) fastest = t, best = v;
  return best;
}

std::string gemm_variant_by_shape(int64_t M, int64_t N, int64_t K, int64_t batches, int compute_units, bool can_split,
                                  bool can_kgroups, bool narrow, const std::vector<std::string>* among) {
  const int64_t cu = std::max(1, compute_units);
  std::vector<Variant> candidates = gemm_candidates(M, N, K, batches, cu, can_split, can_kgroups, narrow);
  if (among)
    candidates.erase(std::remove_if(candidates.begin(), candidates.end(),
                                    [&](const Variant& v) {
                                      return std::find(among->begin(), among->end(), v.name()) == among->end();
                                    }),
                     candidates.end());
  if (candidates.empty()) return "";
  return fastest_gemm(candidates, M, N, K, batches, cu).name();
}

// `t` split as forced: unsplit where `can_split` is false or no split is
// forced, else f.splits slices (-1: by shape).
static Variant forced_splits(const Forced& f, const Tiles& t, int64_t M, int64_t N, int64_t K, int64_t batches,
                             int64_t cu, bool can_split) {
  if (!can_split || f.splits == 0 || f.splits == 1) return Variant{&t};
  return f.splits < 0 ? split_by_shape(t, M, N, K, batches, cu) : split_k(t, K, f.splits);
}

Variant depthwise_input_variant(const NodeBuilder& b, int64_t M, int64_t N, int64_t K, int64_t batches,
                                bool can_split) {
  const Forced f = forced(b);
  if (f.tiles || f.splits != 0 || f.kgroups || f.depth != kTK) {  // as pick_variant takes them (no k-groups)
    return forced_splits(f, f.tiles ? *f.tiles : kTiles[0], M, N, K, batches, std::max(1, b.compute_units()),
                         can_split);
  }
  const Tiles& t = kTiles[0];
  const int64_t cu = std::max(1, b.compute_units()), groups = ceil_div(M, t.tm()) * ceil_div(N, t.tn()) * batches;
  if (!can_split) return Variant{groups < cu ? &kNarrowTiles[2] : &t};  // 32x16: twice the groups, the same sums
  return split_k(t, K, std::min(ceil_div(2 * cu, groups), K / (2 * kTK)));
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
                     const WinogradShape* wino, bool can_kgroups, bool product, bool narrow) {
  const Forced f = forced(b);
  const int64_t cu = std::max(1, b.compute_units());
  if (f.winograd && wino) return forced_winograd(f, *wino, can_split, cu);
  if (f.kgroups) {  // where the GEMM does not take it, the 32x32 tiles
    Variant v{f.tiles};
    if (can_kgroups) v.kgroups = f.kgroups;
    return v;
  }
  if (f.depth != kTK) {
    Variant v{f.tiles};
    v.depth = f.depth;
    return v;
  }
  if (f.tiles || f.splits != 0) return forced_splits(f, choose_tiles(b, M, N, batches), M, N, K, batches, cu, can_split);
  std::vector<Variant> candidates = gemm_candidates(M, N, K, batches, cu, can_split, can_kgroups, narrow);
  // The guess without Winograd: a product on a GPU by the measured GEMM
  // times, anything else by the tile rules.
  const Variant direct = product && b.device_type() == "gpu" ? fastest_gemm(candidates, M, N, K, batches, cu)
                                                             : choose_by_shape(b, M, N, K, batches, can_split);
  std::string guess = direct.name();
  if (can_split && std::any_of(candidates.begin(), candidates.end(), [](const Variant& v) { return v.splits > 1; }))
    key += " splitk";  // caches from before split-K did not measure it
  if (can_kgroups) key += " kgroups7";  // caches from before the seven k-groups forms did not measure them
  if (narrow) key += " narrow";  // nor the narrow tiles
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
// the mma.sync tiles on every 3x3 shape timed
// (docs/kernel-choices.md#winograd-before-the-tf32-tiles), except on the
// big convolutions the warpgroup tiles run faster (wgmma_before_winograd).
// The pooled form cannot split:
// under half a wave of work-groups the tf32 tiles keep it. Forced tiles
// (benchmarks) run as forced.
bool winograd_before_tf32(const NodeBuilder& b, const WinogradShape& w, bool pooled) {
  const int64_t cu = std::max(1, b.compute_units());
  if (!b.tf32 || mma_tiles_forced(b)) return false;
  if (forced(b).winograd) return true;
  if (wgmma_before_winograd(b, w.C, w.OC, 4 * w.tiles, w.images, pooled)) return false;
  return (w.OC >= 64 || w.groups() >= cu) && (!pooled || 2 * w.groups() >= cu);
}

// Whether a GEMM of depth K into Y (total elements) may be split: K deep
// enough for two slices, Y over no input, or over exactly the residual of a
// tail with a residual form (the slices then add onto it). The epilogue
// always runs as a separate pass: it reads its operands at Y's index only,
// and (Y over none of them) they still hold the same values after the slices.
bool split_k_allowed(const NodeBuilder& b, int64_t K, int64_t total, const FusedTail& tail, bool one_launch) {
  // Half storage: the slices' atomic adds (split_add) work on fp32 words.
  return !b.half && (!tail.window || one_launch) && !tail.xwindow && K >= 2 * kTK && total <= INT32_MAX &&
         (!output_overlaps_input(b) || tail.residual);
}

// Local memory a tile may take: more would cut the work-groups a GPU runs at
// once (docs/kernel-choices.md#conv--maxpool-tiles-on-gpus).
constexpr int64_t kPoolTileLocalBytes = 48 * 1024;
constexpr int64_t kPoolTileMaxAccumulators = 64;  // ROC x RPX registers per item

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

std::vector<std::string> conv_tile_variants() {
  std::vector<std::string> v;
  for (const Tiles& t : kTiles) v.push_back(t.name);
  for (const char* t : {"32x32", "64x64"}) v.push_back(std::string("taps:") + t);  // the previous kernels
  for (const Tiles& t : kTiles) v.push_back(std::string(t.name) + "/split");       // split-K, slices by shape
  return v;
}

std::string kgroups_defines(const Variant& v) {
  const KGroups* k = kgroups_named(v.base());
  if (!k) throw Error("no k-groups variant " + v.base());
  return "-DKGROUPS=" + std::to_string(k->groups) + " -DKG_TM=" + std::to_string(v.tiles->tm()) +
         " -DKG_TN=" + std::to_string(v.tiles->tn()) + " -DKG_WM=" + std::to_string(k->wm) +
         " -DKG_WN=" + std::to_string(k->wn) + (k->db ? " -DKG_DB" : "");
}

std::vector<std::string> kgroups_variants() {
  std::vector<std::string> v;
  for (const KGroups& k : kKGroups) v.push_back(k.name);
  return v;
}

std::vector<std::string> conv_maxpool_variants() {
  std::vector<std::string> v = {"direct"};
  for (const PoolTile& t : kPoolTiles) v.push_back(std::string("tiled:") + t.name);
  return v;
}

void check_conv_maxpool_variant(const std::string& variant) { parse_pool_variant(variant); }

void check_conv_variant(const std::string& variant) { parse_conv_variant(variant); }

}  // namespace texplan::lower
