// Depthwise convolutions on CPU devices (lower/opencl_cpu/depthwise.cpp,
// src/kernels/cpu_depthwise.cl) on PoCL against the CPU reference: every
// row block of depthwise_tile_cpu forced through a tuning cache on odd
// widths and heights (cut row and column blocks), strides 1 and 2 (and
// unequal), 3x3, 5x5, 7x7 and 3x5 taps, symmetric, asymmetric and no pads,
// multiplier 2, no bias, batch 2, rows wider than one vector copy, fused
// epilogues (vector, residual Add, one with no vector form), dilated taps,
// and the shapes left to depthwise_cpu (dilations past 4, a tile too large
// for private memory).
// Each variant is a program PoCL compiles: the forced ones are few.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unistd.h>

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

// One Conv/FusedConv node: input 0 fed, input 1 the weights, input 2 the
// bias (an empty shape: none), input 3 a fed residual when given.
struct Case {
  std::string op;
  std::vector<Shape> inputs;
  std::map<std::string, Attribute> attrs;
};

// Runs c on PoCL with the lowering's own choice and then with each of
// `variants` ("OCBxPB") of `kernel` forced through a tuning cache: a search
// run writes the node's key (with every candidate's time), then the entry
// is made to name the variant.
void expect_matches(const Case& c, const std::vector<std::string>& variants = {},
                    const std::string& kernel = "depthwise_tile_cpu ") {
  const test::OneNode one = test::one_node({c.op, c.inputs, c.attrs, {true, false, false, true}}, "cpu_depthwise", 17, 41);
  const Graph& g = one.graph;
  const std::vector<HostTensor>& feeds = one.feeds;
  const HostTensor& want = one.want;

  PlanInput pin = make_usage_records(g);
  plan::MemoryPlan plan = plan::plan_memory(pin.records, pocl()->info().profile, "best");
  auto expect_run_matches = [&](const std::string& variant) {
    runtime::Session s(g, pin, plan, pocl());
    EXPECT_TRUE(s.fallback_nodes().empty());
    const HostTensor got = s.run(feeds).at(0);
    ASSERT_EQ(got.shape, want.shape);
    EXPECT_LE(rel_error(got, want), 1e-5) << c.op << " " << (variant.empty() ? "default" : variant);
  };
  expect_run_matches("");
  if (variants.empty()) return;
  auto path = std::filesystem::temp_directory_path() / ("texplan-depthwise-" + std::to_string(::getpid()) + ".json");
  std::filesystem::remove(path);
  {
    lower::TuningCache cache(path.string());
    lower::TuningScope scope(&cache, true, *pocl());
    runtime::Session s(g, pin, plan, pocl());
    cache.save();
  }
  nlohmann::json j;
  std::ifstream(path) >> j;
  for (const std::string& v : variants) {
    int entries = 0;
    for (auto& [device, keys] : j["texplan"].items())
      for (auto& [key, e] : keys.items()) {
        ASSERT_EQ(key.rfind(kernel, 0), 0u) << key;
        ASSERT_TRUE(e["ms"].contains(v)) << key << " has no variant " << v;
        e["variant"] = v;
        ++entries;
      }
    ASSERT_EQ(entries, 1);
    std::ofstream(path) << j.dump();
    lower::TuningCache cache(path.string());
    lower::TuningScope scope(&cache, false, *pocl());
    expect_run_matches(v);
    EXPECT_EQ(scope.stats().cached, 1);
  }
  std::filesystem::remove(path);
}

Attribute ints(std::vector<int64_t> v) { return Attribute::of_ints(v); }

}  // namespace

TEST(CpuDepthwise, EveryRowBlockOnOddSizes) {
  // 3x3 stride 1 on 19 x 23 (a cut row block for every block size, two
  // column blocks, the second cut) and 3x3 stride 2 with multiplier 2 and
  // no bias on 25 x 31; 7x7 rows exist only where OH % 7 == 0 (21 rows).
  const Case s1{"Conv", {{1, 5, 19, 23}, {5, 1, 3, 3}, {5}}, {{"group", Attribute::of_int(5)}, {"pads", ints({1, 1, 1, 1})}}};
  const Case s2{"Conv", {{1, 3, 25, 31}, {6, 1, 3, 3}},
                {{"group", Attribute::of_int(3)}, {"pads", ints({1, 1, 1, 1})}, {"strides", ints({2, 2})}}};
  const Case r7{"Conv", {{1, 4, 21, 17}, {4, 1, 3, 3}, {4}}, {{"group", Attribute::of_int(4)}, {"pads", ints({1, 1, 1, 1})}}};
  expect_matches(s1, {"2x16", "4x16", "8x16"});
  expect_matches(s2, {"2x16", "4x16", "8x16"});
  expect_matches(r7, {"7x16"});
}

TEST(CpuDepthwise, KernelSizesPadsAndStrides) {
  // 5x5 stride 1 on 14x14 (rows of 7, the small planes of EfficientNet),
  // 5x5 stride 2 with asymmetric pads, 7x7 on 9-wide rows (8-wide vectors),
  // 3x5 taps, no pads, unequal strides, and a 1-D depthwise conv.
  expect_matches({"Conv", {{1, 6, 14, 14}, {6, 1, 5, 5}, {6}}, {{"group", Attribute::of_int(6)}, {"pads", ints({2, 2, 2, 2})}}});
  expect_matches({"Conv", {{1, 4, 13, 15}, {4, 1, 5, 5}, {4}},
                  {{"group", Attribute::of_int(4)}, {"pads", ints({2, 1, 2, 3})}, {"strides", ints({2, 2})}}});
  expect_matches({"Conv", {{1, 3, 9, 9}, {3, 1, 7, 7}, {3}}, {{"group", Attribute::of_int(3)}, {"pads", ints({3, 3, 3, 3})}}});
  expect_matches({"Conv", {{1, 3, 11, 20}, {3, 1, 3, 5}, {3}}, {{"group", Attribute::of_int(3)}, {"pads", ints({1, 2, 1, 2})}}});
  expect_matches({"Conv", {{1, 3, 12, 12}, {3, 1, 3, 3}, {3}}, {{"group", Attribute::of_int(3)}}});
  expect_matches({"Conv", {{1, 3, 17, 18}, {3, 1, 3, 3}, {3}},
                  {{"group", Attribute::of_int(3)}, {"pads", ints({1, 1, 1, 1})}, {"strides", ints({1, 2})}}});
  expect_matches({"Conv", {{1, 4, 37}, {4, 1, 3}, {4}}, {{"group", Attribute::of_int(4)}, {"pads", ints({1, 1})}, {"strides", ints({2})}}});
}

TEST(CpuDepthwise, WideRowsBatchAndEpilogues) {
  // 150-wide rows (vector copies into the tile, ten column blocks), batch 2.
  expect_matches({"Conv", {{2, 3, 9, 150}, {3, 1, 3, 3}, {3}}, {{"group", Attribute::of_int(3)}, {"pads", ints({1, 1, 1, 1})}}});
  // ReLU6 and SiLU on vectors (MobileNet, EfficientNet), a residual Add, and
  // Sign (no vector form: element by element).
  const std::vector<Attribute> programs = {Attribute::of_strings({"Clip x0 0 6"}), Attribute::of_strings({"Sigmoid x0", "Mul x0 t0"}),
                                           Attribute::of_strings({"Sign x0"})};
  for (const Attribute& p : programs)
    expect_matches({"FusedConv", {{1, 8, 15, 13}, {8, 1, 3, 3}, {8}},
                    {{"group", Attribute::of_int(8)}, {"pads", ints({1, 1, 1, 1})}, {"strides", ints({2, 2})}, {"program", p}}});
  expect_matches({"FusedConv", {{1, 6, 14, 14}, {6, 1, 5, 5}, {6}, {1, 6, 14, 14}},
                  {{"group", Attribute::of_int(6)}, {"pads", ints({2, 2, 2, 2})}, {"program", Attribute::of_strings({"Add x0 x1", "Relu t0"})}}});
}

// 7x7 taps, and more than 16 on 16-wide blocks (5x5, 3x7, 7x3), take one
// kernel row's weights at a time (cpu_depthwise.cl): every row block on odd
// sizes, at strides 1 and 2, unequal kernel sides both ways round, and 7x7
// on 8-wide blocks.
TEST(CpuDepthwise, ManyTapsEveryRowBlock) {
  expect_matches({"Conv", {{1, 5, 19, 23}, {5, 1, 5, 5}, {5}}, {{"group", Attribute::of_int(5)}, {"pads", ints({2, 2, 2, 2})}}},
                 {"2x16", "4x16", "8x16"});
  expect_matches({"Conv", {{1, 3, 25, 31}, {6, 1, 5, 5}},
                  {{"group", Attribute::of_int(3)}, {"pads", ints({2, 1, 2, 3})}, {"strides", ints({2, 2})}}},
                 {"2x16", "4x16", "8x16"});
  expect_matches({"Conv", {{1, 4, 21, 17}, {4, 1, 7, 7}, {4}}, {{"group", Attribute::of_int(4)}, {"pads", ints({3, 3, 3, 3})}}},
                 {"7x16", "2x16"});
  expect_matches({"Conv", {{1, 3, 13, 20}, {3, 1, 3, 7}, {3}}, {{"group", Attribute::of_int(3)}, {"pads", ints({1, 3, 1, 3})}}},
                 {"4x16", "8x16"});
  expect_matches({"Conv", {{1, 2, 11, 10}, {2, 1, 7, 7}, {2}}, {{"group", Attribute::of_int(2)}, {"pads", ints({3, 3, 3, 3})}}},
                 {"4x8", "8x8"});
  expect_matches({"Conv", {{1, 3, 13, 30}, {3, 1, 7, 3}, {3}},
                  {{"group", Attribute::of_int(3)}, {"pads", ints({3, 1, 3, 1})}, {"strides", ints({2, 1})}}},
                 {"2x16", "4x16"});
}

// Dilated taps in the tile kernel: 3x3 dilation 2 on 12x12 (every row
// block), 5x5 dilation 2 on 14x14 (the dilated last stage of MobileNet-V3
// in LR-ASPP and DeepLabV3: rows of 7), unequal dilations with a stride of
// 2 along the rows and asymmetric pads.
TEST(CpuDepthwise, DilatedTaps) {
  expect_matches({"Conv", {{1, 4, 12, 12}, {4, 1, 3, 3}, {4}},
                  {{"group", Attribute::of_int(4)}, {"dilations", ints({2, 2})}, {"pads", ints({2, 2, 2, 2})}}},
                 {"2x16", "4x16", "8x16"});
  expect_matches({"Conv", {{1, 6, 14, 14}, {6, 1, 5, 5}, {6}},
                  {{"group", Attribute::of_int(6)}, {"dilations", ints({2, 2})}, {"pads", ints({4, 4, 4, 4})}}},
                 {"7x16", "2x16"});
  expect_matches({"Conv", {{1, 3, 11, 25}, {3, 1, 3, 3}, {3}},
                  {{"group", Attribute::of_int(3)}, {"dilations", ints({3, 2})}, {"strides", ints({1, 2})},
                   {"pads", ints({3, 1, 2, 2})}}},
                 {"2x16", "4x16"});
}

TEST(CpuDepthwise, ShapesLeftToTheGenericKernel) {
  // 7x7 on 2000-wide rows (a tile past private memory's limit), and dilations
  // past 4.
  expect_matches({"Conv", {{1, 2, 9, 2000}, {2, 1, 7, 7}, {2}}, {{"group", Attribute::of_int(2)}, {"pads", ints({3, 3, 3, 3})}}},
                 {"1x16"}, "depthwise_cpu ");
  expect_matches({"Conv", {{1, 4, 12, 12}, {4, 1, 3, 3}, {4}},
                  {{"group", Attribute::of_int(4)}, {"dilations", ints({5, 5})}, {"pads", ints({5, 5, 5, 5})}}},
                 {"1x8"}, "depthwise_cpu ");
}
