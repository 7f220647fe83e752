// Winograd convolutions on CPU devices (src/kernels/cpu_winograd.cl): 3x3,
// stride 1, dilation 1, one group, constant weights, any padding. The
// weights are transformed (G g G^T) once here and uploaded instead of the
// originals (they count in the session's weights); the transformed input
// and the products live in each work-group's __local memory, so nothing is
// allocated per run. Tuning measures the Winograd variants against the
// direct kernel; without a tuning cache a shape rule picks.
#include <algorithm>
#include <cstdio>

#include "lower/opencl_cpu/lowerings.h"
#include "lower/tuning.h"
#include "lower/winograd_weights.h"

namespace texplan::lower {
namespace {

// F(m x m, 3x3) with an OCB x PB register block, OCW output channels per
// work-group and CC input channels per chunk.
struct WinogradVariant {
  int m;
  CpuVariant v;
  int ocw, cc;
  std::string name() const {
    return "f" + std::to_string(m) + " " + v.name() + " w" + std::to_string(ocw) + " c" + std::to_string(cc);
  }
  // The kernel's __local arrays (cpu_winograd.cl V, M, T).
  int64_t local_bytes() const {
    const int64_t a = m + 2, nq = ceil_div(v.pb * m + 2, v.pb);
    return 4 * (a * a * (cc + ocw) * v.pb + a * (nq + m) * v.pb);
  }
  std::string defines() const {
    return " -DWM=" + std::to_string(m) + " -DOCW=" + std::to_string(ocw) + " -DCC=" + std::to_string(cc);
  }
};

// G g G^T of every filter of w [OC, C, 3, 3], laid out as the kernel reads
// it: [xi][OC/16 rounded up][C][16], zeros past OC.
std::vector<float> transform_weights(const float* w, int64_t OC, int64_t C, int m) {
  const int a = m + 2;
  const int64_t blocks = ceil_div(OC, 16);
  std::vector<float> u(size_t(a * a * blocks * C * 16), 0.0f);
  double t[36];
  for (int64_t oc = 0; oc < OC; ++oc)
    for (int64_t c = 0; c < C; ++c) {
      winograd_filter_transform(w + (oc * C + c) * 9, m, t);
      for (int xi = 0; xi < a * a; ++xi) u[size_t(((xi * blocks + oc / 16) * C + c) * 16 + oc % 16)] = float(t[xi]);
    }
  return u;
}

// Multiplications per output relative to a tile's own (m+2)^2 / m^2: the
// tiles cut by the image's bottom and right edges, the lanes of the last
// tile block of a row and the output channels up to 16 compute for nothing.
double cost(const CpuConv& c, int m, int pb) {
  const double a = m + 2, TH = double(ceil_div(c.OH, m)), TW = double(ceil_div(c.OW, m));
  const double blocks = double(ceil_div(int64_t(TW), pb));
  return a * a / (m * m) * (TH * m / double(c.OH)) * (blocks * pb * m / double(c.OW)) *
         (double(ceil_div(c.OC, 16) * 16) / double(c.OC));
}

// The variants offered for a shape, the shape rule's choice first (the
// tile size and tile block of least cost); `pays` whether that choice is
// expected to beat the direct kernel's 9 multiplications per output at its
// lower efficiency (docs/kernel-choices.md#cpu-winograd-when-it-pays). On
// devices whose SIMD registers hold `width` <= 8 floats (AVX2: 16 of them)
// the register block is 8 channels x 8 tiles: 16x16 and 8x16 spill there
// (docs/cpu-kernels.md#winograd-blocks-on-avx2).
std::vector<WinogradVariant> candidates(const CpuConv& c, int64_t local_bytes, int width, bool& pays) {
  const bool narrow = width <= 8;
  int m0 = 4, pb0 = narrow ? 8 : 16;
  for (int m : {4, 2})
    for (int pb : {16, 8})
      if ((!narrow || pb == 8) && cost(c, m, pb) < cost(c, m0, pb0) - 1e-9) m0 = m, pb0 = pb;
  pays = cost(c, m0, pb0) <= 6.0;
  // Output channels per work-group: 64, or 128 (each input tile transformed
  // for twice as many) where they divide OC and leave 14 work-groups or more
  // to share between the threads
  // (docs/kernel-choices.md#cpu-winograd-output-channels-per-work-group).
  const int64_t tile_blocks = ceil_div(c.OH, int64_t(m0)) * ceil_div(ceil_div(c.OW, int64_t(m0)), int64_t(pb0));
  const int ocw = c.OC % 128 == 0 && tile_blocks * (c.OC / 128) >= 14
                      ? 128
                      : int(std::min<int64_t>(64, ceil_div(c.OC, 16) * 16));
  const int ocb0 = narrow ? 8 : 16;
  std::vector<WinogradVariant> vs = {{m0, {ocb0, pb0, 0}, ocw, 32}};
  if (narrow) {
    vs.push_back({m0, {4, 16, 0}, ocw, 32});
    vs.push_back({m0 == 4 ? 2 : 4, {8, 8, 0}, ocw, 32});
  } else {
    vs.push_back({m0, {8, pb0, 0}, ocw, 32});
    for (int m : {4, 2})
      for (int pb : {16, 8})
        if (m != m0 || pb != pb0) vs.push_back({m, {16, pb, 0}, ocw, 32});
  }
  for (int w : {32, 64, 128})  // work-groups of fewer or more channels, larger chunks
    if (w != ocw && w <= ceil_div(c.OC, 16) * 16) vs.push_back({m0, {ocb0, pb0, 0}, w, 32});
  if (c.C > 32) vs.push_back({m0, {ocb0, pb0, 0}, ocw, 64});
  std::vector<WinogradVariant> fit;
  for (const WinogradVariant& v : vs)
    if (v.local_bytes() <= local_bytes) fit.push_back(v);
  pays = pays && vs[0].local_bytes() <= local_bytes;
  return fit;
}

// A variant from its name ("f4 8x16 w64 c32"); false if malformed.
bool parse_variant(const std::string& name, WinogradVariant& v) {
  int m = 0, ocb = 0, pb = 0, ocw = 0, cc = 0;
  char tail = 0;
  if (std::sscanf(name.c_str(), "f%d %dx%d w%d c%d%c", &m, &ocb, &pb, &ocw, &cc, &tail) != 5) return false;
  v = {m, {ocb, pb, 0}, ocw, cc};
  return (m == 2 || m == 4) && (pb == 8 || pb == 16) && (ocb == 4 || ocb == 8 || ocb == 16) && ocw >= 16 &&
         ocw % 16 == 0 && cc >= 1 && v.name() == name;
}

}  // namespace

void check_cpu_winograd_variant(const std::string& variant) {
  WinogradVariant v{};
  if (!variant.empty() && variant != "direct" && !parse_variant(variant, v))
    throw Error("unknown CPU Winograd variant '" + variant + "' (direct, or fM OCBxPB wOCW cCC: f4 8x16 w64 c32)");
}

bool lower_conv_winograd_cpu(NodeBuilder& b, const FusedTail& tail, const CpuConv& c) {
  if (c.KH != 3 || c.KW != 3 || c.sh != 1 || c.sw != 1 || c.dh != 1 || c.dw != 1 || c.groups != 1) return false;
  const HostTensor* w = b.constant(1);
  if (!w || w->dtype != DataType::Float32) return false;
  const std::string& forced = b.kernel_choice.cpu_winograd;
  if (forced == "direct") return false;
  bool pays = false;
  std::vector<WinogradVariant> vs = candidates(c, b.local_mem_bytes(), b.device().info().native_float_width, pays);
  if (!forced.empty()) {
    WinogradVariant v{};
    parse_variant(forced, v);
    if (v.local_bytes() > b.local_mem_bytes()) return false;
    vs = {v};
  }
  if (vs.empty()) return false;

  // Transformed weights per tile size, uploaded when a variant first needs
  // them (the session keeps only those the chosen variant reads).
  auto weights = [&](int m) {
    return b.packed("winograd f" + std::to_string(m), [&] { return transform_weights(w->as_float().data(), c.OC, c.C, m); });
  };
  auto emit = [&](const WinogradVariant& v) {
    const int64_t TH = ceil_div(c.OH, v.m), TW = ceil_div(c.OW, v.m);
    Range r;
    r.dims = 3;
    r.global[0] = size_t(TH * ceil_div(TW, v.v.pb));
    r.global[1] = size_t(ceil_div(c.OC, v.ocw));
    r.global[2] = size_t(c.N);
    r.has_local = true;  // local sizes stay 1: the kernel needs groups of one
    b.launch(cpu_source("cpu_winograd.cl", v.v, tail, v.defines()), "winograd_cpu", r, b.arg_in(0), weights(v.m),
             c.bias, b.arg_out(0), cl_int(c.has_bias), i32(c.C), i32(c.H), i32(c.W), i32(c.OC), i32(c.OH), i32(c.OW),
             i32(c.ph), i32(c.pw));
    tail.append_args(b);
  };

  std::vector<std::string> names;
  for (const WinogradVariant& v : vs) names.push_back(v.name());
  names.push_back("direct");
  const int direct = int(vs.size());
  const std::string key = "winograd_cpu " +
                          dims_key({c.N, c.C, c.H, c.W, c.OC, c.OH, c.OW, c.ph, c.pw}) +
                          (tail.prelude.empty() ? "" : " fused");
  const int pick = !forced.empty() ? 0 : choose_variant(key, names, pays ? 0 : direct, [&](int i) {
    return time_candidate(b, [&] {
      if (i == direct) {
        // Its shape rule's register block, not searched here: its own key
        // is searched (and cached) where the direct kernel wins.
        TuningScope no_search(nullptr, false, *tuning_device());
        lower_conv_direct_cpu(b, tail, c);
      } else {
        emit(vs[size_t(i)]);
      }
      return true;
    });
  });
  if (pick == direct) return false;
  emit(vs[size_t(pick)]);
  return true;
}

}  // namespace texplan::lower
