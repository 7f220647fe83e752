// CPU-device kernels (lower/opencl_cpu/lowerings.h, src/kernels/cpu_conv.cl) on PoCL
// against the CPU reference, on shapes that exercise every path: tails of
// the register blocks, gathers at padded edges, strides, dilations, groups,
// depthwise multipliers, 1-D convolutions, fused epilogues, GEMM strides and
// broadcasts; and kernel tuning (lower/tuning.h): a tuned run computes the
// same outputs, a second search finds every shape in the cache, and on a
// CPU device candidates are measured in interleaved rounds.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "lower/tuning.h"
#include "one_node.h"
#include "optimize/usage.h"
#include "plan/memory_plan.h"
#include "reference/reference_ops.h"
#include "runtime/session.h"
#include "test_util.h"

using namespace texplan;
using test::random_tensor;
using test::rel_error;

namespace {

std::shared_ptr<runtime::Device> pocl() { return runtime::open_device("pocl"); }

// One node: input 0 fed, the others weights (an empty shape: omitted).
using Case = test::NodeCase;

HostTensor run(const Case& c, HostTensor* expected = nullptr) {
  const test::OneNode n = test::one_node(c, "cpu_" + c.op, 13, 17);
  if (expected) *expected = n.want;
  return test::run_one_node(n, pocl()).got;
}

void expect_matches(const Case& c) {
  HostTensor want;
  HostTensor got = run(c, &want);
  ASSERT_EQ(got.shape, want.shape);
  EXPECT_LE(rel_error(got, want), 1e-5);
}

}  // namespace

TEST(CpuKernels, Convolutions) {
  // 3x3 pad 1: OC 10 and 7x7 pixels cut both register blocks; edges gather.
  expect_matches({"Conv", {{1, 5, 7, 7}, {10, 5, 3, 3}, {10}}, {{"pads", Attribute::of_ints({1, 1, 1, 1})}}});
  // Stride 2, asymmetric pads, dilation 2, no bias, batch 2.
  expect_matches({"Conv", {{2, 3, 13, 11}, {9, 3, 3, 3}}, {{"pads", Attribute::of_ints({0, 1, 2, 1})}, {"strides", Attribute::of_ints({2, 2})}}});
  expect_matches({"Conv", {{1, 4, 12, 12}, {6, 4, 3, 3}, {6}}, {{"dilations", Attribute::of_ints({2, 2})}, {"pads", Attribute::of_ints({2, 2, 2, 2})}}});
  // Grouped (not depthwise), 1x1 over 17x17 pixels, 1-D.
  expect_matches({"Conv", {{1, 8, 9, 9}, {12, 4, 3, 3}, {12}}, {{"group", Attribute::of_int(2)}, {"pads", Attribute::of_ints({1, 1, 1, 1})}}});
  expect_matches({"Conv", {{1, 24, 17, 17}, {40, 24, 1, 1}, {40}}, {}});
  expect_matches({"Conv", {{1, 6, 30}, {8, 6, 5}, {8}}, {{"pads", Attribute::of_ints({2, 2})}, {"strides", Attribute::of_ints({2})}}});
  // Depthwise: stride 1 and 2, a multiplier of 2, wide rows (vector loads) and narrow ones.
  expect_matches({"Conv", {{1, 6, 40, 37}, {6, 1, 3, 3}, {6}}, {{"group", Attribute::of_int(6)}, {"pads", Attribute::of_ints({1, 1, 1, 1})}}});
  expect_matches({"Conv", {{1, 4, 15, 15}, {4, 1, 5, 5}, {4}},
                  {{"group", Attribute::of_int(4)}, {"pads", Attribute::of_ints({2, 2, 2, 2})}, {"strides", Attribute::of_ints({2, 2})}}});
  expect_matches({"Conv", {{1, 3, 7, 7}, {6, 1, 3, 3}}, {{"group", Attribute::of_int(3)}, {"pads", Attribute::of_ints({1, 1, 1, 1})}}});
}

TEST(CpuKernels, FusedConvEpilogue) {
  // relu(conv + bias + residual): the epilogue's extra input at the output index.
  expect_matches({"FusedConv", {{1, 5, 9, 9}, {12, 5, 3, 3}, {12}, {1, 12, 9, 9}},
                  {{"pads", Attribute::of_ints({1, 1, 1, 1})}, {"program", Attribute::of_strings({"Add x0 x1", "Relu t0"})}}});
  expect_matches({"FusedConv", {{1, 8, 11, 11}, {8, 1, 3, 3}, {8}},
                  {{"group", Attribute::of_int(8)}, {"pads", Attribute::of_ints({1, 1, 1, 1})}, {"program", Attribute::of_strings({"Clip x0 0 6"})}}});
}

TEST(CpuKernels, DepthwiseRowsAndVectorEpilogue) {
  // depthwise_tile_cpu (more in test_cpu_depthwise.cpp): 5x5 stride 1 on
  // 14-wide rows, 3x3 stride 2 on wide rows, 5x5 stride 2 on 7-wide cut
  // rows; SiLU applied on vectors.
  Attribute silu = Attribute::of_strings({"Sigmoid x0", "Mul x0 t0"});
  expect_matches({"FusedConv", {{1, 6, 14, 14}, {6, 1, 5, 5}, {6}},
                  {{"group", Attribute::of_int(6)}, {"pads", Attribute::of_ints({2, 2, 2, 2})}, {"program", silu}}});
  expect_matches({"FusedConv", {{2, 3, 41, 40}, {3, 1, 3, 3}, {3}},
                  {{"group", Attribute::of_int(3)}, {"pads", Attribute::of_ints({1, 1, 1, 1})}, {"strides", Attribute::of_ints({2, 2})}, {"program", silu}}});
  expect_matches({"Conv", {{1, 4, 13, 13}, {8, 1, 5, 5}},
                  {{"group", Attribute::of_int(4)}, {"pads", Attribute::of_ints({2, 1, 2, 3})}, {"strides", Attribute::of_ints({2, 2})}}});
  // Dilated depthwise stays on depthwise_cpu.
  expect_matches({"Conv", {{1, 4, 12, 12}, {4, 1, 3, 3}, {4}},
                  {{"group", Attribute::of_int(4)}, {"dilations", Attribute::of_ints({2, 2})}, {"pads", Attribute::of_ints({2, 2, 2, 2})}}});
  // The vector forms of the epilogue ops (a 1x1 conv's whole and cut blocks).
  expect_matches({"FusedConv", {{1, 5, 5, 5}, {9, 5, 1, 1}, {9}, {1, 9, 5, 5}},
                  {{"program", Attribute::of_strings({"Add x0 x1", "HardSwish t0", "Max t1 -0.25", "Min t2 2.5", "LeakyRelu t3 0.1",
                                        "Elu t4 0.5", "Softplus t5", "Clip t6 0.1 3", "Relu t7"})}}});
}

TEST(CpuKernels, PerChannelBinaryAndGlobalAveragePool) {
  expect_matches({"Mul", {{1, 6, 7, 7}, {1, 6, 1, 1}}, {}});
  expect_matches({"Div", {{2, 5, 1, 1}, {2, 5, 20, 20}}, {}});
  expect_matches({"Sub", {{1, 3, 4, 5}, {3, 1, 1}}, {}});
  expect_matches({"GlobalAveragePool", {{1, 6, 7, 7}}, {}});
  expect_matches({"GlobalAveragePool", {{2, 3, 20, 21}}, {}});
}

TEST(CpuKernels, ConvTransposeAndGemm) {
  expect_matches({"ConvTranspose", {{1, 6, 5, 7}, {6, 4, 2, 2}, {4}}, {{"strides", Attribute::of_ints({2, 2})}}});
  expect_matches({"ConvTranspose", {{2, 4, 3, 3}, {4, 3, 2, 2}}, {{"strides", Attribute::of_ints({2, 2})}, {"group", Attribute::of_int(2)}}});
  Attribute on = Attribute::of_int(1);
  expect_matches({"Gemm", {{5, 33}, {33, 19}, {19}}, {}});
  expect_matches({"Gemm", {{33, 5}, {19, 33}, {5, 1}}, {{"transA", on}, {"transB", on}}});
  expect_matches({"MatMul", {{2, 3, 7, 20}, {20, 18}}, {}});
  expect_matches({"MatMul", {{2, 3, 7, 20}, {2, 1, 20, 18}}, {}});
}

TEST(CpuKernels, TunedRunMatchesAndSecondSearchFindsEveryShapeCached) {
  // Two shapes of one kernel (each variant is a program PoCL compiles: keep it short).
  const std::vector<Case> cases = {{"Gemm", {{4, 40}, {40, 24}, {24}}, {}}, {"Gemm", {{3, 40}, {40, 24}, {24}}, {}}};
  auto path = std::filesystem::temp_directory_path() / ("texplan-tuning-" + std::to_string(::getpid()) + ".json");
  std::filesystem::remove(path);
  std::vector<HostTensor> plain;
  for (const Case& c : cases) plain.push_back(run(c));

  std::vector<HostTensor> tuned;
  {
    lower::TuningCache cache(path.string());
    lower::TuningScope scope(&cache, true, *pocl());
    for (const Case& c : cases) tuned.push_back(run(c));
    EXPECT_EQ(scope.stats().searched, int(cases.size()));
    EXPECT_EQ(scope.stats().cached, 0);
    EXPECT_TRUE(cache.dirty());
    cache.save();
  }
  for (size_t k = 0; k < cases.size(); ++k) EXPECT_LE(rel_error(tuned[k], plain[k]), 1e-5) << cases[k].op;
  {
    lower::TuningCache cache(path.string());
    lower::TuningScope scope(&cache, true, *pocl());
    for (size_t k = 0; k < cases.size(); ++k) EXPECT_EQ(run(cases[k]).bytes, tuned[k].bytes) << cases[k].op;
    EXPECT_EQ(scope.stats().searched, 0);
    EXPECT_EQ(scope.stats().cached, int(cases.size()));
    EXPECT_FALSE(cache.dirty());
  }
  std::filesystem::remove(path);
}

// On a CPU device every candidate is measured in 3 interleaved rounds and
// keeps its best: a slow moment (here: the first round of candidate 0)
// cannot decide; one that cannot run is not measured again.
TEST(CpuKernels, TuningMeasuresCandidatesInInterleavedRounds) {
  lower::TuningCache cache;  // in memory
  lower::TuningScope scope(&cache, true, *pocl());
  std::vector<int> order;
  const std::vector<std::vector<double>> ms = {{9.0, 1.0, 5.0}, {2.0, 2.5, 3.0}, {-1.0, 0.5, 0.5}};
  std::vector<int> round(3, 0);
  const int chosen = lower::choose_variant("test shape", {"a", "b", "c"}, 1, [&](int i) {
    order.push_back(i);
    return ms[size_t(i)][size_t(round[size_t(i)]++)];
  });
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 0, 1, 0, 1}));
  EXPECT_EQ(chosen, 0) << "a's best (1.0) beats b's (2.0); c could not run";
  const nlohmann::json& e = cache.entry("texplan", lower::tuning_device_key(pocl()->info()))["test shape"];
  EXPECT_EQ(e["variant"], "a");
  EXPECT_DOUBLE_EQ(e["ms"]["a"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(e["ms"]["b"].get<double>(), 2.0);
  EXPECT_FALSE(e["ms"].contains("c"));
}
