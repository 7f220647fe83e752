// --precision tf32 (lower/mma.h, src/kernels/gemm_mma.cl). PoCL cannot
// run the tensor-core PTX, so the kernels run here with the mma emulated in
// OpenCL C (KernelChoice::tf32_emulation): every tile variant, conv and GEMM shape
// and epilogue checks the fragment layouts, the staging and the stores
// against the CPU reference, with errors of tf32's size (above fp32's, far
// under the 1e-2 --check accepts). Without emulation PoCL has no tensor
// cores: a tf32 session runs exact fp32 and says so.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <random>

#include "lower/mma.h"
#include "lower/ops.h"
#include "lower/tuning.h"
#include "optimize/tf32_storage.h"
#include "optimize/usage.h"
#include "plan/memory_plan.h"
#include "reference/reference_ops.h"
#include "runtime/session.h"
#include "test_util.h"

using namespace texplan;
using test::random_tensor;
using test::rel_error;

namespace {

struct Case {
  std::string name, op;
  std::vector<HostTensor> inputs;  // every input fed (weights too, unless constant_weights)
  std::map<std::string, Attribute> attrs;
  bool constant_weights = false;  // input 1 a constant of the graph (weights packed at load)
};

// The node alone in a graph, run in a session with `precision` and the
// kernels `kernels` names; the reference's result in `expected`.
HostTensor run_case(const Case& c, runtime::Precision precision, const lower::KernelChoice& kernels, HostTensor& expected,
                    runtime::Precision* used = nullptr, int* launches = nullptr,
                    std::shared_ptr<runtime::Device> dev = nullptr, lower::TuningCache* tuning = nullptr,
                    bool search = false, int* tf32_nodes = nullptr, int64_t* weight_bytes = nullptr) {
  Node n;
  n.name = c.name;
  n.op_type = c.op;
  n.attrs = c.attrs;
  std::vector<const HostTensor*> ins;
  for (size_t i = 0; i < c.inputs.size(); ++i) n.inputs.push_back(int(i)), ins.push_back(&c.inputs[i]);
  n.outputs = {int(c.inputs.size())};
  expected = reference::evaluate(n, ins)[0];

  Graph g;
  g.model_name = "tf32_test";
  g.opset = 17;
  std::vector<HostTensor> feeds;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    Tensor t;
    t.name = "in" + std::to_string(i);
    t.shape = c.inputs[i].shape;
    if (c.constant_weights && i == 1) {
      t.is_constant = t.has_data = true;
      t.value = c.inputs[i];
      g.add_tensor(t);
      continue;
    }
    t.is_input = true;
    g.inputs.push_back(g.add_tensor(t));
    feeds.push_back(c.inputs[i]);
  }
  Tensor y;
  y.name = "y";
  y.shape = expected.shape;
  y.is_output = true;
  y.producer = 0;
  g.outputs.push_back(g.add_tensor(y));
  g.nodes.push_back(n);
  if (!dev) dev = runtime::open_device("pocl");
  PlanInput pin = make_usage_records(g);
  plan::MemoryPlan plan = plan::plan_memory(pin.records, dev->info().profile, "best");
  runtime::SessionOptions opt;
  opt.precision = precision;
  opt.kernel_choice = kernels;
  std::optional<lower::TuningScope> scope;
  if (tuning) scope.emplace(tuning, search, *dev);
  runtime::Session s(g, pin, plan, dev, opt);
  if (used) *used = s.precision();
  // The precision a node ran in is reported: all or none of this one node
  // (tuning may keep it in fp32: the caller checks tf32_nodes then).
  if (tf32_nodes) *tf32_nodes = int(s.tf32_nodes().size());
  else EXPECT_EQ(s.tf32_nodes().size(), s.precision() == runtime::Precision::Tf32 ? 1u : 0u) << c.name;
  if (launches) *launches = s.kernel_launches();
  if (weight_bytes) *weight_bytes = s.weight_bytes();
  EXPECT_TRUE(s.fallback_nodes().empty()) << c.name;
  return s.run(feeds)[0];
}

std::vector<Case> cases() {
  uint32_t seed = 1;
  auto r = [&](Shape s) { return random_tensor(std::move(s), -1, 1, seed++); };
  std::vector<Case> v;
  // VGG-like 3x3 pad 1 with bias: ragged M (70) and N (10x12), K = 45 (a partial slice).
  v.push_back({"conv3x3", "Conv", {r({1, 5, 10, 12}), r({70, 5, 3, 3}), r({70})}, {{"pads", Attribute::of_ints({1, 1, 1, 1})}}});
  // Stem: 7x7 stride 2 (KH*KW > BK: the taps' carries), no bias, batch 2.
  v.push_back({"conv7x7s2", "Conv", {r({2, 3, 21, 19}), r({24, 3, 7, 7})},
               {{"pads", Attribute::of_ints({3, 3, 3, 3})}, {"strides", Attribute::of_ints({2, 2})}}});
  // Grouped and dilated; K = 8 x 9 per group.
  v.push_back({"conv_groups", "Conv", {r({1, 16, 9, 9}), r({32, 8, 3, 3}), r({32})},
               {{"group", Attribute::of_int(2)}, {"dilations", Attribute::of_ints({2, 2})}, {"pads", Attribute::of_ints({2, 2, 2, 2})}}});
  // 1x1: the GEMM kernel with the bias as C.
  v.push_back({"conv1x1", "Conv", {r({1, 40, 7, 9}), r({48, 40, 1, 1}), r({48})}, {}});
  // FusedConv: relu(conv + residual).
  v.push_back({"fused_residual", "FusedConv", {r({1, 12, 8, 8}), r({20, 12, 3, 3}), r({20}), r({1, 20, 8, 8})},
               {{"pads", Attribute::of_ints({1, 1, 1, 1})}, {"program", Attribute::of_strings({"Add x0 x1", "Relu t0"})}}});
  // FusedConvMaxPool 2x2/2 (VGG), odd conv output with ceil_mode: windows past its edge.
  v.push_back({"conv_pool", "FusedConvMaxPool", {r({1, 6, 11, 13}), r({36, 6, 3, 3}), r({36})},
               {{"pads", Attribute::of_ints({1, 1, 1, 1})}, {"program", Attribute::of_strings({"Relu x0"})},
                {"pool_kernel_shape", Attribute::of_ints({2, 2})}, {"pool_strides", Attribute::of_ints({2, 2})}, {"pool_ceil_mode", Attribute::of_int(1)}}});
  // Gemm with both operands transposed, C broadcast along rows, alpha and beta.
  v.push_back({"gemm_tt", "Gemm", {r({50, 33}), r({70, 50}), r({70})},
               {{"transA", Attribute::of_int(1)}, {"transB", Attribute::of_int(1)}}});
  // Batched MatMul with a broadcast batch dim (attention-like).
  v.push_back({"matmul_batched", "MatMul", {r({2, 3, 20, 40}), r({3, 40, 24})}, {}});
  // FusedMatMul with B transposed, bias then Relu (BERT's FFN).
  v.push_back({"fused_matmul", "FusedMatMul", {r({17, 64}), r({96, 64}), r({96})},
               {{"transB", Attribute::of_int(1)}, {"program", Attribute::of_strings({"Add x0 x1", "Relu t0"})}}});
  return v;
}

// The mma emulated (in up to `splits` slices of K where > 0) in the GPU
// lowerings (PoCL's CPU kernels have no tf32 form), with the tf32 `tiles`
// ("": by shape); built unoptimized, which PoCL compiles ten times faster.
lower::KernelChoice emulated(int splits = 0, const std::string& tiles = "") {
  return {.conv = "gpu", .mma = tiles, .tf32_emulation = true, .tf32_splits = splits, .unoptimized_programs = true};
}

}  // namespace

TEST(Tf32, EveryTileVariantMatchesTheReferenceWithinTf32Error) {
  for (const std::string& tiles : lower::mma_tile_variants()) {
    if (tiles.rfind("taps", 0) == 0 || tiles.rfind("wgmma", 0) == 0) continue;  // constant weights only: the next test
    SCOPED_TRACE(tiles);
    for (const Case& c : cases()) {
      HostTensor expected;
      runtime::Precision used;
      HostTensor out = run_case(c, runtime::Precision::Tf32, emulated(0, tiles), expected, &used);
      EXPECT_EQ(used, runtime::Precision::Tf32);
      double e = rel_error(out, expected);
      EXPECT_LE(e, 5e-3) << c.name;  // tf32 keeps 11 significant bits
      EXPECT_GT(e, 1e-6) << c.name << ": no tf32 rounding, so not the tensor-core kernel";
    }
  }
}

// conv2d_mma_taps (the taps tiles) reads weights packed at load, so it runs
// where they are constants: every tile on every conv case, whole and split.
// The session keeps the packed weights alone: [OC][KH x KW][C rounded up to
// 16], and the bias.
TEST(Tf32, TapsTilesOverConstantWeightsMatchTheReference) {
  // Channels over several slices (40: three per tap, the last one part
  // padding), so the slices carry from channels into taps and a split
  // starts its range inside a tap.
  std::vector<Case> convs = cases();
  uint32_t seed = 100;
  auto r = [&](Shape s) { return random_tensor(std::move(s), -1, 1, seed++); };
  convs.push_back({"conv3x3_c40", "Conv", {r({1, 40, 9, 11}), r({70, 40, 3, 3}), r({70})},
                   {{"pads", Attribute::of_ints({1, 1, 1, 1})}}});
  for (const std::string& tiles : lower::mma_tile_variants()) {
    const bool wgmma = tiles.rfind("wgmma", 0) == 0;
    if (tiles.rfind("taps", 0) != 0 && !wgmma) continue;
    SCOPED_TRACE(tiles);
    for (Case c : convs) {
      if (c.op.find("Conv") == std::string::npos || c.name == "conv1x1") continue;  // 1x1: the GEMM
      c.constant_weights = true;
      const Shape& w = c.inputs[1].shape;
      // conv2d_wgmma_taps packs each group's output channels in blocks of 64.
      const int64_t groups = c.name == "conv_groups" ? 2 : 1, OCg = w[0] / groups;
      const int64_t rows = wgmma ? groups * ((OCg + 63) / 64 * 64) : w[0];
      // Slices of 16 input channels, or of 32 for the k32 tiles.
      const int64_t slice = tiles.find("k32") != std::string::npos ? 32 : 16, ICg = w[1];
      const int64_t packed = rows * w[2] * w[3] * ((ICg + slice - 1) / slice * slice) * 4;
      for (int splits : {0, 3}) {
        HostTensor expected;
        int launches = 0;
        int64_t weight_bytes = 0;
        HostTensor out = run_case(c, runtime::Precision::Tf32, emulated(splits, tiles), expected, nullptr, &launches,
                                  nullptr, nullptr, false, nullptr, &weight_bytes);
        double e = rel_error(out, expected);
        EXPECT_LE(e, 5e-3) << c.name << " splits " << splits;
        EXPECT_GT(e, 1e-6) << c.name << ": no tf32 rounding, so not the tensor-core kernel";
        if (splits && c.op != "FusedConvMaxPool") {
          EXPECT_GE(launches, 2) << c.name << ": not split";
        }
        // Split-K adds its semaphores' few bytes at most.
        EXPECT_GE(weight_bytes, packed) << c.name << ": not the packed weights";
        EXPECT_LT(weight_bytes, packed + int64_t(c.inputs[1].shape[0]) * 4 + 4096) << c.name;
      }
    }
    // Forced onto a product or weights fed at run time, it says so.
    for (const Case& c : cases()) {
      if (c.name != "gemm_tt" && c.name != "conv3x3") continue;
      HostTensor expected;
      try {
        run_case(c, runtime::Precision::Tf32, emulated(0, tiles), expected);
        ADD_FAILURE() << c.name << " ran with " << tiles;
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("constant weights only"), std::string::npos) << e.what();
      }
    }
  }
}

TEST(Tf32, TheShapeChoiceRunsToo) {
  for (const Case& c : cases()) {
    HostTensor expected;
    EXPECT_LE(rel_error(run_case(c, runtime::Precision::Tf32, emulated(), expected), expected), 5e-3) << c.name;
  }
}

TEST(Tf32, SplitKMatchesTheReferenceWithinTf32Error) {
  // K in up to 3 slices added into Y (splitk_zero, the slices, splitk_finish's epilogue).
  const lower::KernelChoice split = emulated(3);
  for (const Case& c : cases()) {
    HostTensor expected;
    int launches = 0;
    EXPECT_LE(rel_error(run_case(c, runtime::Precision::Tf32, split, expected, nullptr, &launches), expected), 5e-3)
        << c.name;
    if (c.op != "FusedConvMaxPool") {  // a max does not split
      EXPECT_GE(launches, 2) << c.name << ": not split";
    }
  }
}

// `texplan tune --precision tf32` measures the node's exact fp32 lowering
// among the tiles; where the cache says fp32, the node runs exact fp32.
TEST(Tf32, TuningMayKeepANodeInFp32) {
  auto dev = runtime::open_device("pocl");
  for (const Case& c : cases()) {
    if (c.name != "conv3x3" && c.name != "fused_matmul") continue;  // a conv and a product (PoCL's searches are slow)
    SCOPED_TRACE(c.name);
    lower::TuningCache cache;
    HostTensor expected;
    int nodes = -1;
    run_case(c, runtime::Precision::Tf32, emulated(), expected, nullptr, nullptr, dev, &cache, /*search=*/true, &nodes);
    nlohmann::json& entry = cache.entry("texplan", lower::tuning_device_key(dev->info()));
    std::string key;
    for (const auto& [k, v] : entry.items())
      if (k.find("_tf32") != std::string::npos) key = k;
    ASSERT_FALSE(key.empty()) << entry.dump();
    EXPECT_TRUE(entry[key]["ms"].contains("fp32")) << entry[key].dump();  // measured like a tile
    EXPECT_EQ(nodes, entry[key]["variant"] == "fp32" ? 0 : 1);             // the winner ran
    // The cache says fp32: exact fp32, no node on tensor cores.
    entry[key]["variant"] = "fp32";
    HostTensor out = run_case(c, runtime::Precision::Tf32, emulated(), expected, nullptr, nullptr, dev, &cache, false, &nodes);
    EXPECT_EQ(nodes, 0);
    EXPECT_LE(rel_error(out, expected), 1e-5);
    // It says a tile: tf32, rounded.
    entry[key]["variant"] = lower::mma_tile_variants().front();
    out = run_case(c, runtime::Precision::Tf32, emulated(), expected, nullptr, nullptr, dev, &cache, false, &nodes);
    EXPECT_EQ(nodes, 1);
    EXPECT_GT(rel_error(out, expected), 1e-6);
    EXPECT_LE(rel_error(out, expected), 5e-3);
  }
}

TEST(Tf32, WithoutTensorCoresTheSessionRunsExactFp32) {
  auto dev = runtime::open_device("pocl");
  EXPECT_FALSE(runtime::tf32_supported(*dev));
  for (const Case& c : cases()) {
    HostTensor expected;
    runtime::Precision used;
    HostTensor out = run_case(c, runtime::Precision::Tf32, {}, expected, &used);
    EXPECT_EQ(used, runtime::Precision::Fp32);
    EXPECT_LE(rel_error(out, expected), 1e-5) << c.name;
  }
}

TEST(Tf32, PrecisionNames) {
  EXPECT_EQ(runtime::parse_precision("tf32"), runtime::Precision::Tf32);
  EXPECT_STREQ(runtime::precision_name(runtime::parse_precision("fp32")), "fp32");
  EXPECT_EQ(runtime::parse_precision("fp16"), runtime::Precision::Fp16);
  EXPECT_THROW(runtime::parse_precision("fp8"), Error);
  EXPECT_THROW(lower::check_mma_variant("mma7x7"), Error);
}

// tf32 storage (optimize/tf32_storage.h): an activation that only convs
// read as X is stored rounded by its producer (RoundTf32 at the end of its
// epilogue), and the tap-major kernels reading it skip their own rounding.
// Rounding is idempotent, so a chain FusedConv -> FusedConvMaxPool ->
// FusedConv (+ residual) gives the same bits marked or not; a producer that
// failed to round would not (the emulated products take the local values
// as they are).
TEST(Tf32, ActivationsStoredRoundedGiveTheSameBits) {
  uint32_t seed = 300;
  auto r = [&](Shape s) { return random_tensor(std::move(s), -1, 1, seed++); };
  Graph g;
  g.model_name = "tf32_storage";
  g.opset = 17;
  auto add = [&](const std::string& name, Shape s, const HostTensor* value = nullptr) {
    Tensor t;
    t.name = name;
    t.shape = std::move(s);
    if (value) t.is_constant = t.has_data = true, t.value = *value;
    return g.add_tensor(t);
  };
  auto conv = [&](const std::string& op, std::vector<int> in, int out, std::vector<std::string> program, bool pool) {
    Node n;
    n.name = g.tensors[size_t(out)].name + "_node";
    n.op_type = op;
    n.inputs = std::move(in);
    n.outputs = {out};
    n.attrs["pads"] = Attribute::of_ints({1, 1, 1, 1});
    n.attrs["program"] = Attribute::of_strings(std::move(program));
    if (pool) n.attrs["pool_kernel_shape"] = Attribute::of_ints({2, 2}), n.attrs["pool_strides"] = Attribute::of_ints({2, 2});
    g.tensors[size_t(out)].producer = int(g.nodes.size());
    g.nodes.push_back(n);
  };
  const HostTensor w1 = r({40, 24, 3, 3}), b1 = r({40}), w2 = r({40, 40, 3, 3}), w3 = r({36, 40, 3, 3}), b3 = r({36});
  const int x = add("x", {1, 24, 12, 14}), res = add("res", {1, 36, 6, 7});
  g.tensors[size_t(x)].is_input = g.tensors[size_t(res)].is_input = true;
  g.inputs = {x, res};
  const int t1 = add("t1", {1, 40, 12, 14}), t2 = add("t2", {1, 40, 6, 7}), y = add("y", {1, 36, 6, 7});
  conv("FusedConv", {x, add("w1", w1.shape, &w1), add("b1", b1.shape, &b1)}, t1, {"Relu x0"}, false);
  conv("FusedConvMaxPool", {t1, add("w2", w2.shape, &w2)}, t2, {}, true);
  conv("FusedConv", {t2, add("w3", w3.shape, &w3), add("b3", b3.shape, &b3), res}, y, {"Add x0 x1"}, false);
  g.tensors[size_t(y)].is_output = true;
  g.outputs = {y};
  const std::vector<HostTensor> feeds = {r({1, 24, 12, 14}), r({1, 36, 6, 7})};

  auto run = [&](const Graph& gr, const std::string& tiles) {
    auto dev = runtime::open_device("pocl");
    PlanInput pin = make_usage_records(gr);
    plan::MemoryPlan plan = plan::plan_memory(pin.records, dev->info().profile, "best");
    runtime::SessionOptions opt;
    opt.precision = runtime::Precision::Tf32;
    opt.kernel_choice = emulated(0, tiles);
    runtime::Session s(gr, pin, plan, dev, opt);
    EXPECT_EQ(s.tf32_nodes().size(), 3u) << tiles;
    return s.run(feeds)[0];
  };
  Graph marked = g;
  EXPECT_EQ(mark_tf32_storage(marked), 2);
  EXPECT_TRUE(marked.tensors[size_t(t1)].stored_tf32 && marked.tensors[size_t(t2)].stored_tf32);
  for (const char* tiles : {"wgmma64x64", "wgmma128x64", "taps64x64"}) {
    SCOPED_TRACE(tiles);
    const HostTensor plain = run(g, tiles), rounded = run(marked, tiles);
    ASSERT_EQ(plain.bytes.size(), rounded.bytes.size());
    EXPECT_EQ(plain.bytes, rounded.bytes);
    EXPECT_LE(rel_error(rounded, run(g, "mma64x64")), 5e-3);
  }

  // Not marked: a graph output, a tensor a conv reads as its residual, one
  // another op reads, one a conv with a channel scale reads, one a conv
  // writing a shuffled output reads (its window keeps it off the tf32 tiles).
  Graph other = g;
  other.tensors[size_t(t1)].is_output = true;
  other.outputs.push_back(t1);
  EXPECT_EQ(mark_tf32_storage(other), 1);
  EXPECT_FALSE(other.tensors[size_t(t1)].stored_tf32);
  Graph residual = g;
  residual.nodes[2].inputs[3] = t1;  // the residual's shape does not matter to the pass
  EXPECT_EQ(mark_tf32_storage(residual), 1);
  EXPECT_FALSE(residual.tensors[size_t(t1)].stored_tf32);
  Graph relu = g;
  {
    Node n;
    n.name = "relu";
    n.op_type = "Relu";
    n.inputs = {t2};
    n.outputs = {relu.add_tensor(Tensor{.name = "t2r", .shape = {1, 40, 6, 7}})};
    relu.nodes.push_back(n);
  }
  EXPECT_EQ(mark_tf32_storage(relu), 1);
  EXPECT_FALSE(relu.tensors[size_t(t2)].stored_tf32);
  Graph scaled = g;
  set_channel_scaled(scaled.nodes[2]);
  EXPECT_EQ(mark_tf32_storage(scaled), 1);
  EXPECT_FALSE(scaled.tensors[size_t(t2)].stored_tf32);
  Graph shuffling = g;
  shuffling.nodes[2].decisions.shuffled_output = ShuffledOutput{1};
  EXPECT_EQ(mark_tf32_storage(shuffling), 1);
  EXPECT_FALSE(shuffling.tensors[size_t(t2)].stored_tf32);
}
