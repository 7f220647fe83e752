// texplan_conv_bench: the convolution shapes that dominate the zoo's GPU
// time, each timed with every kernel variant (lower/ops.h
// conv_tile_variants) and with the variant the lowering chooses by itself
// ("auto"), as GFLOP/s and as a ratio to the best variant of that shape.
// The tf32 variants (--precision tf32: tensor cores, lower/mma.h) are
// "tf32" (chosen by shape), "tf32:<tiles>" and "tf32:winograd[...]" (Winograd's
// products on the tensor cores, forced as "winograd[...]" is); every variant's maximum
// error relative to "auto" (exact fp32) is printed beside it.
// One call on the GPU machine answers which tiles win where:
//
//   texplan_conv_bench --device gpu --reps 20 --json conv_bench.json
//
// --input-tf32 feeds the tf32 variants X rounded and marked so, as tf32
// storage (optimize/tf32_storage.h) has a producer write it in a model.
//
// "TILES/split" is split-K (K cut into slices added into Y atomically) with
// the slices chosen by shape; "TILES/sN" and "tf32:TILES/sN" (in --variants) N slices. For the
// small grids of ResNet's 512->512 7x7, 256->256 14x14 and VGG's 512 14x14:
//
//   texplan_conv_bench --device gpu --filter '512 7 3x3' --variants 32x32,64x64v/split,128x64v/split,128x64v/s16
//
// Stems whose conv feeds an overlapping MaxPool ("stem ..." shapes), and
// VGG's convs before its 2x2 pools ("pooled ...", with Winograd's pooled
// forms "conv:winograd" and "conv:winograd:t16:db" too), are timed
// as one FusedConvMaxPool node with each of its kernels (lower/ops.h
// conv_maxpool_variants: the tiled kernel per tile, the direct one) and as
// the unfused pair FusedConv(Relu) + MaxPool, the conv's GFLOP/s throughout:
//
//   texplan_conv_bench --device gpu --filter stem
//
// On CPU devices (PoCL) "auto" is the CPU lowering's own choice; "cpu:direct"
// and "cpu:<variant>" force the direct kernel or a Winograd variant
// (lower/kernel_choice.h KernelChoice::cpu_winograd):
//
//   texplan_conv_bench --device pocl --filter unet --variants 'cpu:direct,cpu:f4 16x16 w64 c32'
//
// and "block:<OCBxPB[xNV][/lL]>" one register block of the direct, GEMM
// (1x1) or matrix-vector kernels (lower/kernel_choice.h KernelChoice::cpu):
//
//   texplan_conv_bench --device pocl --filter 1x1 --variants block:8x16x2/l8,block:8x16/l1
//
// Times are the medians (--min: the minima, steadier where other jobs share
// the CPU) over --reps runs of the node's device time
// (Session profile mode; the pair: both nodes), after one warm-up run.
// Between runs the weights stay in the GPU's L2 cache (50 MB on an H100)
// where they fit; in a model the layers between evict them. --cold reads
// 256 MB before each run, so weights come from memory as they do there:
//
//   texplan_conv_bench --device gpu --cold --filter "512->512 14"
//
// For kernel work, --build-log prints every kernel build's log on stderr
// (NVIDIA: with -cl-nv-verbose, ptxas's registers and spills per kernel;
// scripts/device/winograd_registers.awk reads it) and --build-dump DIR
// writes every built program's binary (NVIDIA: PTX) into DIR:
//
//   texplan_conv_bench --device gpu --reps 1 --filter "vgg16 256->256 56" --variants auto --build-log
//
// --product MxKxN[t],... times products of any shape ("t": W stored [N,K],
// read transposed) in place of the built-in cases, e.g. a sweep of K that
// tells a per-step cost from a fixed one:
//
//   texplan_conv_bench --device gpu --product 128x64x256t,128x256x256t,128x1024x256t --variants 32x32,32x32k4
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <optional>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "../../tests/test_util.h"
#include "lower/mma.h"
#include "lower/opencl_cpu/lowerings.h"
#include "lower/ops.h"
#include "optimize/usage.h"
#include "plan/memory_plan.h"
#include "runtime/session.h"

using namespace texplan;
using test::random_tensor;

namespace {

struct ConvShape {
  std::string name;
  int64_t C, H, W, OC, K, stride, pad, groups;
  bool fused_residual = false;  // FusedConv: relu(conv + residual)
  std::vector<std::string> program = {};  // FusedConv: this epilogue on the conv (no residual)
  int64_t kw = 0, pad_w = -1;  // a KxKW kernel padded by pad_w along W (0, -1: K and pad)
  int64_t KW() const { return kw ? kw : K; }
  int64_t PW() const { return pad_w >= 0 ? pad_w : pad; }
  int64_t OH() const { return (H + 2 * pad - K) / stride + 1; }
  int64_t OW() const { return (W + 2 * PW() - KW()) / stride + 1; }
};

const std::vector<std::string> kSilu = {"Sigmoid x0", "Mul x0 t0"};

// A "tf32..." variant's kernel choice: "tf32" the guess, "tf32:winograd..."
// Winograd (its tensor-core form, forced as "winograd..." is), "tf32:<tiles>"
// the mma tiles, "tf32:<tiles>/sN" them over N slices of K.
void set_tf32_variant(const std::string& name, lower::KernelChoice& k) {
  if (name.rfind("tf32:winograd", 0) == 0) {
    k.conv = name.substr(5);
    return;
  }
  k.mma = name.rfind("tf32:", 0) == 0 ? name.substr(5) : "";
  if (const size_t at = k.mma.rfind("/s"); at != std::string::npos)
    k.tf32_splits = std::stoi(k.mma.substr(at + 2)), k.mma.resize(at);
}

// Batch 1, as the zoo runs. K x K kernels, square images.
std::vector<ConvShape> zoo_shapes() {
  return {
      {"vgg16 3->64 224 3x3", 3, 224, 224, 64, 3, 1, 1, 1},
      {"vgg16 64->64 224 3x3", 64, 224, 224, 64, 3, 1, 1, 1},
      {"vgg16 64->128 112 3x3", 64, 112, 112, 128, 3, 1, 1, 1},
      {"vgg16 128->128 112 3x3", 128, 112, 112, 128, 3, 1, 1, 1},
      {"vgg16 128->256 56 3x3", 128, 56, 56, 256, 3, 1, 1, 1},
      {"vgg16 256->256 56 3x3", 256, 56, 56, 256, 3, 1, 1, 1},
      {"vgg16 256->512 28 3x3", 256, 28, 28, 512, 3, 1, 1, 1},
      {"vgg16 512->512 28 3x3", 512, 28, 28, 512, 3, 1, 1, 1},
      {"vgg16 512->512 14 3x3", 512, 14, 14, 512, 3, 1, 1, 1},
      {"unet 32->32 256 3x3", 32, 256, 256, 32, 3, 1, 1, 1},
      {"unet 64->32 256 3x3", 64, 256, 256, 32, 3, 1, 1, 1},
      {"unet 64->64 128 3x3", 64, 128, 128, 64, 3, 1, 1, 1},
      {"unet 128->128 64 3x3", 128, 64, 64, 128, 3, 1, 1, 1},
      {"unet 256->256 32 3x3", 256, 32, 32, 256, 3, 1, 1, 1},
      {"squeezenet expand 16->64 55 3x3", 16, 55, 55, 64, 3, 1, 1, 1},
      {"squeezenet expand 32->128 27 3x3", 32, 27, 27, 128, 3, 1, 1, 1},
      {"squeezenet expand 48->192 13 3x3", 48, 13, 13, 192, 3, 1, 1, 1},
      {"squeezenet expand 64->256 13 3x3", 64, 13, 13, 256, 3, 1, 1, 1},
      {"resnet 3->64 224 7x7 s2", 3, 224, 224, 64, 7, 2, 3, 1},
      {"mobilenet stem 3->32 224 3x3 s2", 3, 224, 224, 32, 3, 2, 1, 1},
      {"squeezenet stem 3->64 224 3x3 s2 p0", 3, 224, 224, 64, 3, 2, 0, 1},
      {"resnet 64->64 56 3x3", 64, 56, 56, 64, 3, 1, 1, 1},
      {"resnet 64->64 56 3x3 +res", 64, 56, 56, 64, 3, 1, 1, 1, true},
      {"resnet 128->128 28 3x3", 128, 28, 28, 128, 3, 1, 1, 1},
      {"resnet 128->128 56 3x3 s2", 128, 56, 56, 128, 3, 2, 1, 1},
      {"resnet 256->256 14 3x3", 256, 14, 14, 256, 3, 1, 1, 1},
      {"resnet 512->512 7 3x3", 512, 7, 7, 512, 3, 1, 1, 1},
      {"resnet 512->512 7 3x3 +res", 512, 7, 7, 512, 3, 1, 1, 1, true},  // split-K's epilogue pass with a residual
      {"1x1 64->256 56", 64, 56, 56, 256, 1, 1, 0, 1},
      {"1x1 256->64 56", 256, 56, 56, 64, 1, 1, 0, 1},
      {"1x1 512->128 28", 512, 28, 28, 128, 1, 1, 0, 1},
      {"1x1 1024->256 14", 1024, 14, 14, 256, 1, 1, 0, 1},
      {"1x1 256->1024 14 +res", 256, 14, 14, 1024, 1, 1, 0, 1, true},
      {"1x1 2048->512 7", 2048, 7, 7, 512, 1, 1, 0, 1},
      {"1x1 512->2048 7", 512, 7, 7, 2048, 1, 1, 0, 1},
      // MobileNet/EfficientNet/ShuffleNet/SqueezeNet pointwise convs (PoCL's GEMM blocks).
      {"1x1 16->96 112", 16, 112, 112, 96, 1, 1, 0, 1},
      {"1x1 24->144 56", 24, 56, 56, 144, 1, 1, 0, 1},
      {"1x1 144->24 56", 144, 56, 56, 24, 1, 1, 0, 1},
      {"1x1 192->32 28", 192, 28, 28, 32, 1, 1, 0, 1},
      {"1x1 64->384 14", 64, 14, 14, 384, 1, 1, 0, 1},
      {"1x1 576->96 14", 576, 14, 14, 96, 1, 1, 0, 1},
      {"1x1 116->116 14", 116, 14, 14, 116, 1, 1, 0, 1},
      {"1x1 160->960 7", 160, 7, 7, 960, 1, 1, 0, 1},
      {"1x1 960->160 7", 960, 7, 7, 160, 1, 1, 0, 1},
      {"1x1 128->16 55", 128, 55, 55, 16, 1, 1, 0, 1},
      {"1x1 512->1000 13", 512, 13, 13, 1000, 1, 1, 0, 1},
      {"densenet 1x1 512->128 28", 512, 28, 28, 128, 1, 1, 0, 1},
      {"densenet 128->32 28 3x3", 128, 28, 28, 32, 3, 1, 1, 1},
      // EfficientNet's convs with their fused SiLU (x * sigmoid(x)).
      {"silu 1x1 16->96 112", 16, 112, 112, 96, 1, 1, 0, 1, false, kSilu},
      {"silu 1x1 40->240 28", 40, 28, 28, 240, 1, 1, 0, 1, false, kSilu},
      {"silu 1x1 112->672 14", 112, 14, 14, 672, 1, 1, 0, 1, false, kSilu},
      {"silu 1x1 320->1280 7", 320, 7, 7, 1280, 1, 1, 0, 1, false, kSilu},
      {"bert 1x1 1024->128 16 +res", 1024, 16, 16, 128, 1, 1, 0, 1, true},  // BERT-mini's FFN down (128 x 1024 x 256) with its residual
      {"bert 1x1 1024->128 16", 1024, 16, 16, 128, 1, 1, 0, 1},
      {"relu6 1x1 64->384 14", 64, 14, 14, 384, 1, 1, 0, 1, false, {"Clip x0 0 6"}},
      {"relu 1x1 64->384 14", 64, 14, 14, 384, 1, 1, 0, 1, false, {"Relu x0"}},
      {"silu 1x1 64->384 14", 64, 14, 14, 384, 1, 1, 0, 1, false, kSilu},
      {"silu stem 3->32 224 3x3 s2", 3, 224, 224, 32, 3, 2, 1, 1, false, kSilu},
      {"silu dw 3x3 96 112 s2", 96, 112, 112, 96, 3, 2, 1, 96, false, kSilu},
      {"silu dw 5x5 240 28", 240, 28, 28, 240, 5, 1, 2, 240, false, kSilu},
      {"dw 3x3 32 112", 32, 112, 112, 32, 3, 1, 1, 32},
      {"dw 3x3 144 56", 144, 56, 56, 144, 3, 1, 1, 144},
      {"dw 3x3 96 112 s2", 96, 112, 112, 96, 3, 2, 1, 96},
      {"dw 3x3 576 14", 576, 14, 14, 576, 3, 1, 1, 576},
      {"dw 5x5 240 28", 240, 28, 28, 240, 5, 1, 2, 240},
      {"dw 5x5 672 14 s2", 672, 14, 14, 672, 5, 2, 2, 672},
      {"dw 5x5 1152 7", 1152, 7, 7, 1152, 5, 1, 2, 1152},
      // ConvNeXt-T's 7x7 depthwise convs.
      {"convnext dw 7x7 96 56", 96, 56, 56, 96, 7, 1, 3, 96},
      {"convnext dw 7x7 192 28", 192, 28, 28, 192, 7, 1, 3, 192},
      {"convnext dw 7x7 384 14", 384, 14, 14, 384, 7, 1, 3, 384},
      {"convnext dw 7x7 768 7", 768, 7, 7, 768, 7, 1, 3, 768},
      // MNASNet-0.5's: few channels, 5x5 at stride 2.
      {"mnas dw 3x3 24 112 s2", 24, 112, 112, 24, 3, 2, 1, 24},
      {"mnas dw 5x5 48 56 s2", 48, 56, 56, 48, 5, 2, 2, 48},
      {"mnas dw 5x5 72 28", 72, 28, 28, 72, 5, 1, 2, 72},
      {"mnas dw 5x5 144 28 s2", 144, 28, 28, 144, 5, 2, 2, 144},
      {"mnas dw 5x5 240 14", 240, 14, 14, 240, 5, 1, 2, 240},
      {"mnas dw 5x5 576 7", 576, 7, 7, 576, 5, 1, 2, 576},
      // Inception-v3's factorized and strided convs, RegNet-Y's grouped ones (group width 8).
      {"inception 1x7 128->128 17", 128, 17, 17, 128, 1, 1, 0, 1, false, {}, 7, 3},
      {"inception 7x1 128->192 17", 128, 17, 17, 192, 7, 1, 3, 1, false, {}, 1, 0},
      {"inception 1x7 192->192 17", 192, 17, 17, 192, 1, 1, 0, 1, false, {}, 7, 3},
      {"inception 7x1 192->192 17", 192, 17, 17, 192, 7, 1, 3, 1, false, {}, 1, 0},
      {"inception 1x3 384->384 8", 384, 8, 8, 384, 1, 1, 0, 1, false, {}, 3, 1},
      {"inception 3x1 384->384 8", 384, 8, 8, 384, 3, 1, 1, 1, false, {}, 1, 0},
      {"inception 5x5 48->64 35", 48, 35, 35, 64, 5, 1, 2, 1},
      {"inception relu 5x5 48->64 35", 48, 35, 35, 64, 5, 1, 2, 1, false, {"Relu x0"}},
      {"inception 3x3 64->96 35", 64, 35, 35, 96, 3, 1, 1, 1},
      {"inception 3x3 96->96 35 s2 p0", 96, 35, 35, 96, 3, 2, 0, 1},
      {"inception 3x3 288->384 35 s2 p0", 288, 35, 35, 384, 3, 2, 0, 1},
      {"inception 3x3 192->320 17 s2 p0", 192, 17, 17, 320, 3, 2, 0, 1},
      {"inception 3x3 448->384 8", 448, 8, 8, 384, 3, 1, 1, 1},
      {"inception 3x3 80->192 73 p0", 80, 73, 73, 192, 3, 1, 0, 1},
      {"inception 3x3 32->64 147", 32, 147, 147, 64, 3, 1, 1, 1},
      {"regnet g8 3x3 104 56 s2", 104, 56, 56, 104, 3, 2, 1, 13},
      {"regnet g8 3x3 208 14", 208, 14, 14, 208, 3, 1, 1, 26},
      {"regnet g8 3x3 440 7", 440, 7, 7, 440, 3, 1, 1, 55},
      {"regnet g8 3x3 48 56", 48, 56, 56, 48, 3, 1, 1, 6},
      {"regnet 1x1 s2 208->440 14", 208, 14, 14, 440, 1, 2, 0, 1},
      // RegNet-X-400MF's grouped convs (group width 16).
      {"regnet g16 3x3 400 7", 400, 7, 7, 400, 3, 1, 1, 25},
      {"regnet g16 3x3 160 14", 160, 14, 14, 160, 3, 1, 1, 10},
      {"regnet 1x1 400->400 7", 400, 7, 7, 400, 1, 1, 0, 1},
      {"regnet 1x1 160->160 14", 160, 14, 14, 160, 1, 1, 0, 1},
  };
}

// A tensor of the benchmark's graph: a fed input, an output, or a weight
// (`value`) or neither.
int add_tensor(Graph& g, const std::string& name, Shape s, bool input, bool output, const HostTensor* value) {
  Tensor t;
  t.name = name;
  t.shape = std::move(s);
  t.is_input = input;
  t.is_output = output;
  if (value) t.is_constant = t.has_data = true, t.value = *value;
  int id = g.add_tensor(t);
  if (input) g.inputs.push_back(id);
  if (output) g.outputs.push_back(id);
  return id;
}

// One Conv (or FusedConv with a residual) node: X fed, W and B weights.
Graph conv_graph(const ConvShape& c, std::vector<HostTensor>& feeds) {
  Graph g;
  g.model_name = "conv_bench";
  g.opset = 17;
  int64_t OH = c.OH(), OW = c.OW();
  HostTensor w = random_tensor({c.OC, c.C / c.groups, c.K, c.KW()}, -1, 1, 2), b = random_tensor({c.OC}, -1, 1, 3);
  feeds = {random_tensor({1, c.C, c.H, c.W}, -1, 1, 1)};
  Node n;
  n.name = "conv";
  n.op_type = c.fused_residual || !c.program.empty() ? "FusedConv" : "Conv";
  n.inputs = {add_tensor(g, "x", {1, c.C, c.H, c.W}, true, false, nullptr), add_tensor(g, "w", w.shape, false, false, &w),
              add_tensor(g, "b", b.shape, false, false, &b)};
  if (c.fused_residual) {
    feeds.push_back(random_tensor({1, c.OC, OH, OW}, -1, 1, 4));
    n.inputs.push_back(add_tensor(g, "r", {1, c.OC, OH, OW}, true, false, nullptr));
    n.attrs["program"] = Attribute::of_strings({"Add x0 x1", "Relu t0"});
  } else if (!c.program.empty()) {
    n.attrs["program"] = Attribute::of_strings(c.program);
  }
  n.attrs["strides"] = Attribute::of_ints({c.stride, c.stride});
  n.attrs["pads"] = Attribute::of_ints({c.pad, c.PW(), c.pad, c.PW()});
  n.attrs["kernel_shape"] = Attribute::of_ints({c.K, c.KW()});
  n.attrs["group"] = Attribute::of_int(c.groups);
  n.outputs = {add_tensor(g, "y", {1, c.OC, OH, OW}, false, true, nullptr)};
  g.tensors[size_t(n.outputs[0])].producer = 0;
  g.nodes.push_back(n);
  return g;
}

double flops(const ConvShape& c) {
  return 2.0 * double(c.OC) * double(c.OH() * c.OW()) * double(c.C / c.groups) * double(c.K * c.KW());
}

// A matrix product with its bias, Y[M,N] = X[M,K] W + b: W a weight [K,N],
// or [N,K] read transposed (`trans_b`: a Gemm with transB, as a 2-D Linear
// exports). The transformers' shapes at their token counts, and a square.
struct ProductShape {
  std::string name;
  int64_t M, K, N;
  bool trans_b = false;
  double flops() const { return 2.0 * double(M) * double(N) * double(K); }
};

std::vector<ProductShape> product_shapes() {
  return {
      {"product vit qkv 197x768x2304", 197, 768, 2304},
      {"product vit proj 197x768x768", 197, 768, 768},
      {"product vit fc1 197x768x3072", 197, 768, 3072},
      {"product vit fc2 197x3072x768", 197, 3072, 768},
      {"product bert qkv 128x256x768 transB", 128, 256, 768, true},
      {"product bert proj 128x256x256 transB", 128, 256, 256, true},
      {"product bert fc1 128x256x1024 transB", 128, 256, 1024, true},
      {"product bert fc2 128x1024x256 transB", 128, 1024, 256, true},
      {"product swin fc1 196x384x1536", 196, 384, 1536},
      {"product swin fc2 196x1536x384", 196, 1536, 384},
      {"product swin fc1 3136x96x384", 3136, 96, 384},
      {"product square 1024x1024x1024", 1024, 1024, 1024},
  };
}

// "MxKxN" or "MxKxNt" (transposed W) as a product shape named after it.
ProductShape parse_product(const std::string& text) {
  ProductShape c;
  char t = 0;
  long long m = 0, k = 0, n = 0;
  const int got = std::sscanf(text.c_str(), "%lldx%lldx%lld%c", &m, &k, &n, &t);
  if (got < 3 || (got == 4 && t != 't') || m < 1 || k < 1 || n < 1)
    throw Error("--product: '" + text + "' is not MxKxN or MxKxNt (positive sizes)");
  c.M = m, c.K = k, c.N = n, c.trans_b = got == 4;
  c.name = "product " + text;
  return c;
}

// One FusedMatMul node (the product and its bias): X fed, W and b weights.
Graph product_graph(const ProductShape& c, std::vector<HostTensor>& feeds) {
  Graph g;
  g.model_name = "conv_bench";
  g.opset = 17;
  HostTensor w = random_tensor(c.trans_b ? Shape{c.N, c.K} : Shape{c.K, c.N}, -1, 1, 2), b = random_tensor({c.N}, -1, 1, 3);
  feeds = {random_tensor({c.M, c.K}, -1, 1, 1)};
  Node n;
  n.name = "product";
  n.op_type = "FusedMatMul";
  n.inputs = {add_tensor(g, "x", {c.M, c.K}, true, false, nullptr), add_tensor(g, "w", w.shape, false, false, &w),
              add_tensor(g, "b", b.shape, false, false, &b)};
  n.attrs["program"] = Attribute::of_strings({"Add x0 x1"});
  if (c.trans_b) n.attrs["transB"] = Attribute::of_int(1);
  n.outputs = {add_tensor(g, "y", {c.M, c.N}, false, true, nullptr)};
  g.tensors[size_t(n.outputs[0])].producer = 0;
  g.nodes.push_back(n);
  return g;
}

// Median device ms of the node over `reps` runs, after a warm-up (its
// launches' first start to last end); the first output so variants can be
// compared for agreement, and the node's kernel launches (split-K: 2 or 3).
// `kernels`: the variants the session runs instead of its own choice.
bool take_min = false;  // --min
bool cold = false;      // --cold
// --input-tf32: in the tf32 variants X (input 0) is fed rounded to tf32 and
// marked Tensor::stored_tf32, as a producer under tf32 storage writes it
// (optimize/tf32_storage.h): the tap-major tiles then skip their rounding.
bool input_tf32 = false;

// Reads 256 MB on the device's queue and waits (ceiling.cl's stream_read):
// the L2 cache then holds none of a node's data, and nothing dirty to write
// back during its run (a fill would leave 50 MB of it).
class CacheEvictor {
 public:
  explicit CacheEvictor(runtime::Device& dev) : dev_(dev) {
    cl_int s = CL_SUCCESS;
    buf_ = clCreateBuffer(dev.context(), CL_MEM_READ_WRITE, kBytes, nullptr, &s);
    check(s, "a 256 MB buffer");
    const cl_uint zero = 0;
    check(clEnqueueFillBuffer(dev.queue(), buf_, &zero, sizeof zero, 0, kBytes, 0, nullptr, nullptr), "filling it");
    kernel_ = clCreateKernel(dev.program("ceiling.cl"), "stream_read", &s);
    check(s, "its kernel");
    check(clSetKernelArg(kernel_, 0, sizeof buf_, &buf_), "its arguments");
    check(clSetKernelArg(kernel_, 1, sizeof buf_, &buf_), "its arguments");
  }
  ~CacheEvictor() {
    if (kernel_) clReleaseKernel(kernel_);
    if (buf_) clReleaseMemObject(buf_);
  }
  CacheEvictor(const CacheEvictor&) = delete;
  CacheEvictor& operator=(const CacheEvictor&) = delete;
  void run() {
    const size_t global = kBytes / 16, local = 256;
    check(clEnqueueNDRangeKernel(dev_.queue(), kernel_, 1, nullptr, &global, &local, 0, nullptr, nullptr), "reading");
    check(clFinish(dev_.queue()), "reading");
  }

 private:
  static constexpr size_t kBytes = size_t(256) << 20;
  static void check(cl_int s, const char* what) {
    if (s != CL_SUCCESS) throw Error(std::string("--cold: ") + what + " failed (OpenCL error " + std::to_string(s) + ")");
  }
  runtime::Device& dev_;
  cl_mem buf_ = nullptr;
  cl_kernel kernel_ = nullptr;
};

double time_node(const Graph& node_graph, const std::vector<HostTensor>& node_feeds,
                 std::shared_ptr<runtime::Device> dev, int reps, std::vector<float>& output,
                 runtime::Precision precision, const lower::KernelChoice& kernels, int& launches) {
  Graph g = node_graph;
  std::vector<HostTensor> feeds = node_feeds;
  if (input_tf32 && precision == runtime::Precision::Tf32 && !g.inputs.empty()) {
    g.tensors[size_t(g.inputs[0])].stored_tf32 = true;
    for (int64_t i = 0; i < feeds[0].count(); ++i) feeds[0].data<float>()[i] = round_tf32(feeds[0].data<float>()[i]);
  }
  PlanInput pin = make_usage_records(g);
  plan::MemoryPlan plan = plan::plan_memory(pin.records, dev->info().profile, "best");
  runtime::SessionOptions opt;
  opt.profile = true;
  opt.precision = precision;
  opt.kernel_choice = kernels;
  runtime::Session s(g, pin, plan, dev, opt);
  if (s.precision() != precision) throw Error("this device has no tf32 tensor cores");
  output = s.run(feeds)[0].as_float();
  launches = s.kernel_launches();
  std::optional<CacheEvictor> evictor;
  if (cold) evictor.emplace(*dev);
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    if (evictor) evictor->run();
    s.run(feeds);
    double t = 0;
    for (const auto& nt : s.node_times()) t += nt.ms;
    ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  return take_min ? ms.front() : ms[ms.size() / 2];
}

// A stem: conv (ReLU) then an overlapping MaxPool, batch 1, square images.
struct StemShape {
  std::string name;
  int64_t C, H, OC, K, stride, pad;       // the conv
  int64_t pool_k, pool_s, pool_p, ceil;  // the MaxPool
  int64_t conv_out() const { return (H + 2 * pad - K) / stride + 1; }
  int64_t pool_out() const {  // ONNX's rule: with ceil_mode, no window starts in the end padding
    const int64_t span = conv_out() + 2 * pool_p - pool_k;
    int64_t out = (ceil ? (span + pool_s - 1) / pool_s : span / pool_s) + 1;
    if (ceil && (out - 1) * pool_s >= conv_out() + pool_p) --out;
    return out;
  }
  double flops() const { return 2.0 * double(OC * conv_out() * conv_out()) * double(C * K * K); }
};

std::vector<StemShape> stem_shapes() {
  return {
      {"stem resnet 3->64 224 7x7 s2 + maxpool 3x3 s2 p1", 3, 224, 64, 7, 2, 3, 3, 2, 1, 0},
      {"stem googlenet 3->64 224 7x7 s2 + maxpool 3x3 s2 ceil", 3, 224, 64, 7, 2, 3, 3, 2, 0, 1},
      {"stem squeezenet1.1 3->64 224 3x3 s2 + maxpool 3x3 s2 ceil", 3, 224, 64, 3, 2, 0, 3, 2, 0, 1},
      // VGG-16's convs before its pools (2x2 windows: Winograd's pooled forms, "conv:" variants)
      {"pooled vgg16 64->64 224 3x3 + maxpool 2x2 s2", 64, 224, 64, 3, 1, 1, 2, 2, 0, 0},
      {"pooled vgg16 128->128 112 3x3 + maxpool 2x2 s2", 128, 112, 128, 3, 1, 1, 2, 2, 0, 0},
      {"pooled vgg16 256->256 56 3x3 + maxpool 2x2 s2", 256, 56, 256, 3, 1, 1, 2, 2, 0, 0},
      {"pooled vgg16 512->512 28 3x3 + maxpool 2x2 s2", 512, 28, 512, 3, 1, 1, 2, 2, 0, 0},
  };
}

// The stem as one FusedConvMaxPool node, or (`fused` false) as FusedConv +
// MaxPool; X fed, W and B weights, Y the pool's output either way.
Graph stem_graph(const StemShape& c, bool fused, std::vector<HostTensor>& feeds) {
  Graph g;
  g.model_name = "conv_bench";
  g.opset = 17;
  HostTensor w = random_tensor({c.OC, c.C, c.K, c.K}, -1, 1, 2), b = random_tensor({c.OC}, -1, 1, 3);
  feeds = {random_tensor({1, c.C, c.H, c.H}, -1, 1, 1)};
  const std::map<std::string, Attribute> pool = {{"kernel_shape", Attribute::of_ints({c.pool_k, c.pool_k})},
                                                 {"strides", Attribute::of_ints({c.pool_s, c.pool_s})},
                                                 {"pads", Attribute::of_ints({c.pool_p, c.pool_p, c.pool_p, c.pool_p})},
                                                 {"ceil_mode", Attribute::of_int(c.ceil)}};
  Node conv;
  conv.name = "conv";
  conv.op_type = fused ? "FusedConvMaxPool" : "FusedConv";
  conv.inputs = {add_tensor(g, "x", {1, c.C, c.H, c.H}, true, false, nullptr), add_tensor(g, "w", w.shape, false, false, &w),
                 add_tensor(g, "b", b.shape, false, false, &b)};
  conv.attrs = {{"strides", Attribute::of_ints({c.stride, c.stride})},
                {"pads", Attribute::of_ints({c.pad, c.pad, c.pad, c.pad})},
                {"kernel_shape", Attribute::of_ints({c.K, c.K})},
                {"program", Attribute::of_strings({"Relu x0"})}};
  const int y = add_tensor(g, "y", {1, c.OC, c.pool_out(), c.pool_out()}, false, true, nullptr);
  if (fused) {
    for (const auto& [k, v] : pool) conv.attrs["pool_" + k] = v;
    conv.outputs = {y};
    g.tensors[size_t(y)].producer = 0;
    g.nodes.push_back(conv);
    return g;
  }
  conv.outputs = {add_tensor(g, "c", {1, c.OC, c.conv_out(), c.conv_out()}, false, false, nullptr)};
  g.tensors[size_t(conv.outputs[0])].producer = 0;
  Node mp;
  mp.name = "pool";
  mp.op_type = "MaxPool";
  mp.inputs = conv.outputs;
  mp.outputs = {y};
  mp.attrs = pool;
  g.tensors[size_t(y)].producer = 1;
  g.nodes = {conv, mp};
  return g;
}

int usage(const char* argv0) {
  std::cerr << "usage: " << argv0
            << " [--device SPEC] [--reps N] [--filter TEXT] [--variants a,b,...] [--json FILE] [--list] [--min]\n"
               "       [--cold] [--input-tf32] [--build-log] [--build-dump DIR] [--product MxKxN[t],...]\n"
               "  SPEC: gpu, pocl, opencl:N (default gpu); variants default to all of --list\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string device = "gpu", filter, json_path, variants_arg;
  std::vector<ProductShape> products;  // --product: these alone
  int reps = 20;
  bool list = false;
  runtime::KernelBuildDiagnostics diagnostics;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw Error("missing value after " + a);
      return argv[++i];
    };
    try {
      if (a == "--device") device = value();
      else if (a == "--reps") reps = std::max(1, std::atoi(value().c_str()));
      else if (a == "--filter") filter = value();
      else if (a == "--variants") variants_arg = value();
      else if (a == "--json") json_path = value();
      else if (a == "--list") list = true;
      else if (a == "--min") take_min = true;
      else if (a == "--cold") cold = true;
      else if (a == "--input-tf32") input_tf32 = true;
      else if (a == "--build-log") diagnostics.log = true;
      else if (a == "--build-dump") diagnostics.dump_dir = value();
      else if (a == "--product") {
        std::stringstream ss(value());
        for (std::string p; std::getline(ss, p, ',');) products.push_back(parse_product(p));
      } else return usage(argv[0]);
    } catch (const Error& e) {
      std::cerr << e.what() << "\n";
      return usage(argv[0]);
    }
  }
  std::vector<std::string> variants = lower::conv_tile_variants();
  for (const std::string& v : lower::kgroups_variants()) variants.push_back(v);
  variants.push_back("tf32");
  for (const std::string& t : lower::mma_tile_variants()) variants.push_back("tf32:" + t);
  if (list) {
    for (const auto& v : variants) std::cout << v << "\n";
    return 0;
  }
  if (!variants_arg.empty()) {
    variants.clear();
    std::stringstream ss(variants_arg);
    for (std::string v; std::getline(ss, v, ',');) variants.push_back(v);
  }
  runtime::KernelBuildScope build_scope(nullptr, nullptr, diagnostics);
  try {
    auto dev = runtime::open_device(device);
    std::cout << "device: " << dev->info().platform << " / " << dev->info().name << " (" << dev->info().type << ", "
              << dev->info().compute_units << " compute units), " << reps << " reps, median device ms"
              << (cold ? ", caches evicted before each rep" : "") << "\n";
    nlohmann::json rows = nlohmann::json::array();
    // The convolutions, then the matrix products: name, GFLOP, graph, and
    // whether only "auto" is timed (depthwise has one kernel).
    struct Case {
      std::string name;
      double flops;
      Graph graph;
      std::vector<HostTensor> feeds;
      bool one_kernel;
    };
    std::vector<Case> cases;
    for (const ConvShape& c : zoo_shapes())
      if (products.empty() && (filter.empty() || c.name.find(filter) != std::string::npos)) {
        Case& k = cases.emplace_back(Case{c.name, flops(c), {}, {}, c.groups == c.C && c.groups > 1});
        k.graph = conv_graph(c, k.feeds);
      }
    for (const ProductShape& c : products.empty() ? product_shapes() : products)
      if (filter.empty() || c.name.find(filter) != std::string::npos) {
        Case& k = cases.emplace_back(Case{c.name, c.flops(), {}, {}, false});
        k.graph = product_graph(c, k.feeds);
      }
    for (const Case& c : cases) {
      const Graph& g = c.graph;
      const std::vector<HostTensor>& feeds = c.feeds;
      std::vector<std::string> names = {"auto"};
      if (!c.one_kernel) names.insert(names.end(), variants.begin(), variants.end());
      std::vector<double> ms(names.size(), NAN);
      std::vector<int> launches(names.size(), 0);
      std::vector<std::vector<float>> outs(names.size());
      for (size_t v = 0; v < names.size(); ++v) {
        try {
          const bool tf32 = names[v].rfind("tf32", 0) == 0;
          const bool cpu = names[v].rfind("cpu:", 0) == 0;  // CPU devices: cpu:direct, cpu:<Winograd variant>
          const bool block = names[v].rfind("block:", 0) == 0;  // CPU devices: a register block (lower/opencl_cpu/common.h)
          lower::KernelChoice k;
          k.cpu_winograd = cpu ? names[v].substr(4) : "";
          k.cpu = block ? names[v].substr(6) : "";
          k.conv = names[v] == "auto" || tf32 || cpu || block ? "" : names[v];
          if (tf32) set_tf32_variant(names[v], k);
          ms[v] = time_node(g, feeds, dev, reps, outs[v], tf32 ? runtime::Precision::Tf32 : runtime::Precision::Fp32,
                            k, launches[v]);
        } catch (const Error& e) {
          std::cerr << c.name << " / " << names[v] << ": " << e.what() << "\n";
        }
      }
      double best = INFINITY;
      for (double m : ms)
        if (m > 0) best = std::min(best, m);
      std::cout << "\n" << c.name << "  (" << std::fixed << std::setprecision(3) << c.flops / 1e9 << " GFLOP)\n";
      nlohmann::json row = {{"shape", c.name}, {"gflop", c.flops / 1e9}, {"variants", nlohmann::json::object()}};
      for (size_t v = 0; v < names.size(); ++v) {
        if (!(ms[v] > 0)) continue;
        double gflops = c.flops / (ms[v] * 1e6);
        // Variants must agree: max |Y - Y(auto)| over max |Y(auto)| (tf32: about 1e-3).
        double num = 0, den = 0;
        for (size_t i = 0; i < outs[0].size() && i < outs[v].size(); ++i) {
          num = std::max(num, std::fabs(double(outs[v][i]) - double(outs[0][i])));
          den = std::max(den, std::fabs(double(outs[0][i])));
        }
        const double err = outs[v].size() == outs[0].size() ? num / std::max(den, 1e-30) : INFINITY;
        const bool tf32 = names[v].rfind("tf32", 0) == 0;
        std::cout << "  " << std::left << std::setw(18) << names[v] << std::right << std::setw(10)
                  << std::setprecision(4) << ms[v] << " ms" << std::setw(10) << std::setprecision(1) << gflops
                  << " GFLOP/s" << std::setw(8) << std::setprecision(2) << best / ms[v] << std::scientific
                  << std::setw(11) << std::setprecision(2) << err << std::fixed << (ms[v] == best ? "  best" : "")
                  << (!(err <= (tf32 ? 1e-2 : 1e-4)) ? "  DIFFERS" : "")
                  << (launches[v] > 1 ? "  " + std::to_string(launches[v]) + " launches" : "") << "\n";
        row["variants"][names[v]] = {{"ms", ms[v]},       {"gflops", gflops},           {"ratio_to_best", best / ms[v]},
                                     {"rel_error", err}, {"launches", launches[v]}};
      }
      rows.push_back(row);
    }
    for (const StemShape& c : stem_shapes()) {
      if (!products.empty() || (!filter.empty() && c.name.find(filter) == std::string::npos)) continue;
      std::vector<std::string> names = {"unfused", "auto"};
      for (const std::string& v : lower::conv_maxpool_variants()) names.push_back(v);
      if (c.pool_k == 2 && c.pool_s == 2) {  // Winograd's tiles hold whole 2x2 windows, the tf32 tiles' POOL2 form too
        for (const char* v : {"conv:winograd", "conv:winograd:t16:db"}) names.push_back(v);
        for (const std::string& v : variants)
          if (v.rfind("tf32", 0) == 0) names.push_back(v);
      }
      std::vector<double> ms(names.size(), NAN);
      std::vector<int> launches(names.size(), 0);
      std::vector<std::vector<float>> outs(names.size());
      for (size_t v = 0; v < names.size(); ++v) {
        try {
          std::vector<HostTensor> feeds;
          Graph g = stem_graph(c, names[v] != "unfused", feeds);
          const bool conv = names[v].rfind("conv:", 0) == 0, tf32 = names[v].rfind("tf32", 0) == 0;
          lower::KernelChoice k{.conv = conv ? names[v].substr(5) : "",
                                .conv_maxpool = conv || tf32 || names[v] == "unfused" || names[v] == "auto" ? "" : names[v]};
          if (tf32) set_tf32_variant(names[v], k);
          ms[v] = time_node(g, feeds, dev, reps, outs[v], tf32 ? runtime::Precision::Tf32 : runtime::Precision::Fp32, k,
                            launches[v]);
        } catch (const Error& e) {
          std::cerr << c.name << " / " << names[v] << ": " << e.what() << "\n";
        }
      }
      double best = INFINITY;
      for (double m : ms)
        if (m > 0) best = std::min(best, m);
      std::cout << "\n" << c.name << "  (" << std::fixed << std::setprecision(3) << c.flops() / 1e9
                << " GFLOP of conv)\n";
      nlohmann::json row = {{"shape", c.name}, {"gflop", c.flops() / 1e9}, {"variants", nlohmann::json::object()}};
      for (size_t v = 0; v < names.size(); ++v) {
        if (!(ms[v] > 0)) continue;
        // Against the unfused pair: max |Y - Y(unfused)| over max |Y(unfused)|.
        double num = 0, den = 0;
        for (size_t i = 0; i < outs[0].size() && i < outs[v].size(); ++i) {
          num = std::max(num, std::fabs(double(outs[v][i]) - double(outs[0][i])));
          den = std::max(den, std::fabs(double(outs[0][i])));
        }
        const double err = outs[v].size() == outs[0].size() ? num / std::max(den, 1e-30) : INFINITY;
        const double gflops = c.flops() / (ms[v] * 1e6);
        std::cout << "  " << std::left << std::setw(18) << names[v] << std::right << std::setw(10)
                  << std::setprecision(4) << ms[v] << " ms" << std::setw(10) << std::setprecision(1) << gflops
                  << " GFLOP/s" << std::setw(8) << std::setprecision(2) << best / ms[v] << std::scientific
                  << std::setw(11) << std::setprecision(2) << err << std::fixed << (ms[v] == best ? "  best" : "")
                  << (!(err <= (names[v].rfind("tf32", 0) == 0 ? 1e-2 : 1e-4)) ? "  DIFFERS" : "") << "\n";
        row["variants"][names[v]] = {{"ms", ms[v]},       {"gflops", gflops},           {"ratio_to_best", best / ms[v]},
                                     {"rel_error", err}, {"launches", launches[v]}};
      }
      rows.push_back(row);
    }
    if (!json_path.empty()) {
      std::ofstream(json_path) << nlohmann::json{{"device", dev->info().name}, {"reps", reps}, {"shapes", rows}}.dump(1)
                               << "\n";
    }
  } catch (const Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
