// Convolutions with the output channels along the vector lanes
// (conv2d_ocvec_cpu: src/kernels/cpu_conv.cl, lower/opencl_cpu/conv_gemm.cpp),
// AveragePool by rows (pool.cl avg_pool2d_rows) and Pads taken into the
// window ops that read them (optimize/pads.cpp), on PoCL against the CPU
// reference: factorized 1x7 / 7x1 and 1x3 / 3x1 taps, 5x5, strides 2 and
// (2, 1), dilation, groups narrower than a vector, 1x1 with stride 2, 1-D,
// rows narrower than a block, blocks moved back at a row's end, output
// channels cut by the last block, batch 2, no bias, fused epilogues with a
// residual, and every register block the shape rule offers.
#include <gtest/gtest.h>

#include "lower/opencl_cpu/lowerings.h"
#include "one_node.h"
#include "optimize/optimize.h"
#include "runtime/cpu_executor.h"
#include "graph_builder.h"
#include "test_util.h"

using namespace texplan;
using test::rel_error;

namespace {

std::shared_ptr<runtime::Device> pocl() { return runtime::open_device("pocl"); }

Attribute ints(std::vector<int64_t> v) { return Attribute::of_ints(std::move(v)); }

// Runs one node on PoCL (its weights constant, a fourth input fed) with the
// CPU block `block` named ("": the shape rule's), against the reference.
void expect_matches(const test::NodeCase& c, const std::string& block = "") {
  test::NodeCase fed = c;
  fed.fed = {true, false, false, true};
  const test::OneNode one = test::one_node(fed, "cpu_conv_ocvec", 13, 7);
  runtime::SessionOptions o;
  o.kernel_choice.cpu = block;
  const HostTensor got = test::run_one_node(one, pocl(), o).got;
  ASSERT_EQ(got.shape, one.want.shape);
  EXPECT_LE(rel_error(got, one.want), 1e-5) << c.op << " " << (block.empty() ? "shape rule" : block);
}

test::NodeCase conv(Shape x, Shape w, std::vector<int64_t> pads, std::map<std::string, Attribute> more = {},
                    bool bias = true) {
  const Shape b = bias ? Shape{w[0]} : Shape{};
  std::map<std::string, Attribute> a = std::move(more);
  a["pads"] = ints(std::move(pads));
  return {"Conv", {x, w, b}, a};
}

}  // namespace

TEST(CpuConvOcvec, MatchesReferenceOnEveryPath) {
  // Inception's factorized taps on 17x17: 40 output channels cut the last
  // block, 17 columns move the last block of each row back.
  expect_matches(conv({1, 24, 17, 17}, {40, 24, 1, 7}, {0, 3, 0, 3}));
  expect_matches(conv({1, 24, 17, 17}, {40, 24, 7, 1}, {3, 0, 3, 0}));
  expect_matches(conv({1, 32, 8, 8}, {24, 32, 1, 3}, {0, 1, 0, 1}));
  expect_matches(conv({1, 32, 8, 8}, {24, 32, 3, 1}, {1, 0, 1, 0}));
  // 5x5 with padding on an odd plane; 3x3 stride 2 without (every window inside).
  expect_matches(conv({1, 12, 11, 13}, {20, 12, 5, 5}, {2, 2, 2, 2}));
  expect_matches(conv({1, 16, 15, 17}, {33, 16, 3, 3}, {0, 0, 0, 0}, {{"strides", ints({2, 2})}}));
  // Stride 2 with padding, unequal strides, asymmetric pads, dilation, no bias, batch 2.
  expect_matches(conv({2, 9, 13, 12}, {17, 9, 3, 3}, {1, 1, 1, 1}, {{"strides", ints({2, 2})}}, false));
  expect_matches(conv({1, 8, 12, 20}, {16, 8, 3, 3}, {0, 2, 1, 0}, {{"strides", ints({2, 1})}}));
  expect_matches(conv({1, 6, 14, 14}, {10, 6, 3, 3}, {2, 2, 2, 2}, {{"dilations", ints({2, 2})}}));
  // Groups of 8 and 4 channels (RegNet's widths: fewer than a vector).
  expect_matches(conv({1, 48, 14, 14}, {48, 8, 3, 3}, {1, 1, 1, 1}, {{"group", Attribute::of_int(6)}}));
  expect_matches(conv({1, 24, 9, 9}, {24, 4, 3, 3}, {1, 1, 1, 1}, {{"group", Attribute::of_int(6)}, {"strides", ints({2, 2})}}));
  // 1x1 stride 2 (a projection shortcut), rows narrower than a block, 1-D.
  expect_matches(conv({1, 20, 14, 14}, {36, 20, 1, 1}, {0, 0, 0, 0}, {{"strides", ints({2, 2})}}));
  expect_matches(conv({1, 10, 3, 3}, {12, 10, 3, 3}, {1, 1, 1, 1}));
  expect_matches(conv({1, 6, 30}, {8, 6, 5}, {2, 2}, {{"strides", ints({2})}}));
  // relu(conv + bias + residual), and an epilogue with a transcendental op.
  expect_matches({"FusedConv", {{1, 12, 17, 17}, {20, 12, 1, 7}, {20}, {1, 20, 17, 17}},
                  {{"pads", ints({0, 3, 0, 3})}, {"program", Attribute::of_strings({"Add x0 x1", "Relu t0"})}}});
  expect_matches({"FusedConv", {{1, 12, 9, 9}, {15, 4, 3, 3}, {15}},
                  {{"pads", ints({1, 1, 1, 1})}, {"group", Attribute::of_int(3)}, {"program", Attribute::of_strings({"HardSwish x0"})}}});
}

TEST(CpuConvOcvec, EveryCandidateBlockMatches) {
  // Each candidate is a program PoCL builds: two shapes, one wide and one
  // narrow in output channels.
  const int width = pocl()->info().native_float_width;
  struct Shaped {
    test::NodeCase c;
    int64_t OCg, OW;
  };
  for (const Shaped& s : {Shaped{conv({1, 20, 9, 11}, {40, 20, 1, 7}, {0, 3, 0, 3}, {}, false), 40, 11},
                          Shaped{conv({1, 16, 9, 11}, {16, 4, 3, 3}, {1, 1, 1, 1}, {{"group", Attribute::of_int(4)}}), 4, 11}})
    for (const lower::CpuVariant& v : lower::conv_ocvec_candidates(s.OCg, s.OW, width))
      if (v.local == 1) expect_matches(s.c, v.name().substr(0, v.name().find('/')));
}

TEST(CpuConvOcvec, ShapeRuleBlocksNoWiderThanTheRow) {
  // Pixels past the row are computed for nothing and send every tap down the
  // edge path: a 7-pixel row took 24-pixel blocks at a third of the speed.
  const int width = pocl()->info().native_float_width;
  for (const int64_t OW : {int64_t(3), int64_t(7), int64_t(8), int64_t(14), int64_t(17)})
    for (const int64_t OCg : {int64_t(8), int64_t(16), int64_t(384)}) {
      const std::vector<lower::CpuVariant> vs = lower::conv_ocvec_candidates(OCg, OW, width);
      ASSERT_FALSE(vs.empty());
      for (const lower::CpuVariant& v : vs) EXPECT_LE(v.ocb, OW) << v.name() << " OCg " << OCg << " OW " << OW;
    }
  // A 1-pixel row still takes 2-pixel blocks (the kernel's least), and runs right.
  for (const lower::CpuVariant& v : lower::conv_ocvec_candidates(16, 1, width)) EXPECT_EQ(v.ocb, 2) << v.name();
  expect_matches(conv({1, 32, 7, 7}, {32, 16, 3, 3}, {1, 1, 1, 1}, {{"group", Attribute::of_int(2)}}));
  expect_matches(conv({1, 8, 5, 1}, {16, 8, 3, 1}, {1, 0, 1, 0}));
}

namespace {

test::NodeCase pool(Shape x, std::vector<int64_t> k, std::vector<int64_t> s, std::vector<int64_t> pads,
                    int include_pad, int ceil = 0) {
  return {"AveragePool",
          {x},
          {{"kernel_shape", ints(std::move(k))},
           {"strides", ints(std::move(s))},
           {"pads", ints(std::move(pads))},
           {"count_include_pad", Attribute::of_int(include_pad)},
           {"ceil_mode", Attribute::of_int(ceil)}}};
}

}  // namespace

TEST(CpuAveragePool, RowsMatchReference) {
  // Inception's 3x3 stride-1 branch pools, with and without counting the
  // padding, on rows that fill vectors and rows that do not.
  expect_matches(pool({1, 5, 35, 35}, {3, 3}, {1, 1}, {1, 1, 1, 1}, 1));
  expect_matches(pool({1, 5, 17, 17}, {3, 3}, {1, 1}, {1, 1, 1, 1}, 0));
  expect_matches(pool({2, 3, 6, 5}, {3, 3}, {1, 1}, {1, 1, 1, 1}, 1));
  // DenseNet's 2x2 stride 2; stride 2 with padding; ceil_mode cut windows; 1-D.
  expect_matches(pool({1, 4, 28, 28}, {2, 2}, {2, 2}, {0, 0, 0, 0}, 0));
  expect_matches(pool({1, 3, 41, 40}, {3, 3}, {2, 2}, {1, 0, 1, 2}, 1));
  expect_matches(pool({1, 3, 30, 29}, {3, 3}, {2, 2}, {0, 0, 1, 1}, 0, 1));
  expect_matches(pool({1, 4, 37}, {5}, {1}, {2, 2}, 1));
}

namespace {

// x -> Pad(p) -> AveragePool 3x3 (count_include_pad 0), x -> Pad -> Conv 1x7,
// x -> Pad -> MaxPool (zeros are not MaxPool's padding: kept), x -> Pad of
// ones -> AveragePool (kept); the four concatenated.
Graph pads_graph() {
  Graph g;
  g.model_name = "pads";
  g.opset = 13;
  test::NamedGraph w{g};
  const int x = w.tensor("x", {1, 4, 9, 9});
  g.tensors[x].is_input = true;
  g.inputs = {x};
  const int p1 = w.ints("p1", {0, 0, 1, 1, 0, 0, 1, 1}), p2 = w.ints("p2", {0, 0, 0, 3, 0, 0, 0, 3});
  HostTensor ones(DataType::Float32, {1});
  ones.data<float>()[0] = 1.0f;
  const int one = w.constant("one", ones);
  const int a = w.tensor("a", {1, 4, 11, 11}), b = w.tensor("b", {1, 4, 9, 15}), c = w.tensor("c", {1, 4, 11, 11}),
            d = w.tensor("d", {1, 4, 11, 11});
  w.node("Pad", {x, p1}, a);
  w.node("Pad", {x, p2}, b);
  w.node("Pad", {x, p1}, c);
  w.node("Pad", {x, p1, one}, d);
  const int pa = w.tensor("pa", {1, 4, 9, 9}), cb = w.tensor("cb", {1, 4, 9, 9}), mc = w.tensor("mc", {1, 4, 9, 9}),
            pd = w.tensor("pd", {1, 4, 9, 9});
  const std::map<std::string, Attribute> k3 = {{"kernel_shape", ints({3, 3})}};
  w.node("AveragePool", {a}, pa, k3);
  w.node("Conv", {b, w.constant("w", test::random_tensor({4, 4, 1, 7}, -1, 1, 2)), w.constant("bias", test::random_tensor({4}, -1, 1, 3))},
           cb, {{"kernel_shape", ints({1, 7})}});
  w.node("MaxPool", {c}, mc, k3);
  w.node("AveragePool", {d}, pd, k3);
  const int y = w.tensor("y", {1, 16, 9, 9});
  w.node("Concat", {pa, cb, mc, pd}, y, {{"axis", Attribute::of_int(1)}});
  g.tensors[y].is_output = true;
  g.outputs = {y};
  for (size_t k = 0; k < g.nodes.size(); ++k) g.tensors[g.nodes[k].outputs[0]].producer = int(k);
  g.topological_sort();
  return g;
}

HostTensor run_reference(const Graph& g, const HostTensor& x) {
  PlanInput pin = make_usage_records(g);
  plan::MemoryPlan plan = plan::plan_memory(pin.records, plan::DeviceProfile::load("pocl"), "best");
  return runtime::CpuExecutor(g, pin, plan).run({x})[0];
}

}  // namespace

TEST(PadsIntoWindows, ZeroPadsBecomeTheReadersPadding) {
  Graph g = pads_graph();
  const HostTensor x = test::random_tensor({1, 4, 9, 9}, -1, 1, 5);
  const HostTensor want = run_reference(g, x);
  const OptimizeReport r = optimize(g, {});
  EXPECT_EQ(r.folded_pads, 2);
  int pads = 0;
  for (const Node& n : g.nodes) {
    pads += n.op_type == "Pad";
    if (n.op_type == "AveragePool" && n.get_int("count_include_pad", 0) == 1) {
      EXPECT_EQ(n.get_ints("pads"), (std::vector<int64_t>{1, 1, 1, 1}));
    }
  }
  EXPECT_EQ(pads, 2);  // MaxPool's and the ones' stay
  EXPECT_LE(rel_error(run_reference(g, x), want), 1e-6);
  PlanInput pin = make_usage_records(g);
  plan::MemoryPlan plan = plan::plan_memory(pin.records, pocl()->info().profile, "best");
  runtime::Session s(g, pin, plan, pocl());
  EXPECT_LE(rel_error(s.run({x})[0], want), 1e-5);
}
