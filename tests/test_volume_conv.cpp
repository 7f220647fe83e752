// Conv over three spatial dims (video models' Conv3d) lowered at import to
// 2-D Convs over frames (import/volume_conv.cpp): the lowered graph against
// the reference's own 3-D Conv on strides, pads (explicit, auto_pad SAME_*,
// depth-only, past the kernel), dilations, groups, batches, one-frame
// kernels and no bias, on the host and on the device with no node left to
// the CPU; the shapes it leaves alone; and a Conv3d as the ONNX file gives it.
#include <gtest/gtest.h>

#include "import/onnx_import.h"
#include "import/rewrites.h"
#include "one_node.h"
#include "onnx_builder.h"

namespace texplan {
namespace {

struct VolumeCase {
  std::string what;
  Shape x, w;
  bool bias = true;
  std::map<std::string, Attribute> attrs;
};

Attribute ints(std::vector<int64_t> v) { return Attribute::of_ints(std::move(v)); }

std::vector<VolumeCase> cases() {
  return {
      {"r3d_18's 3x3x3", {1, 4, 5, 9, 10}, {6, 4, 3, 3, 3}, true, {{"pads", ints({1, 1, 1, 1, 1, 1})}}},
      {"stride 2 in every dim", {1, 3, 8, 11, 12}, {5, 3, 3, 3, 3}, true,
       {{"pads", ints({1, 1, 1, 1, 1, 1})}, {"strides", ints({2, 2, 2})}}},
      {"stem 3x7x7, stride 1x2x2", {1, 3, 6, 16, 15}, {4, 3, 3, 7, 7}, false,
       {{"pads", ints({1, 3, 3, 1, 3, 3})}, {"strides", ints({1, 2, 2})}}},
      {"R(2+1)D's 3x1x1 temporal conv", {1, 6, 7, 5, 6}, {4, 6, 3, 1, 1}, true, {{"pads", ints({1, 0, 0, 1, 0, 0})}}},
      {"one-frame kernel, depth stride 2", {1, 5, 6, 7, 7}, {8, 5, 1, 1, 1}, true, {{"strides", ints({2, 2, 2})}}},
      {"asymmetric pads, depth dilation 2", {1, 3, 9, 8, 8}, {4, 3, 3, 3, 2}, true,
       {{"pads", ints({2, 0, 1, 1, 1, 0})}, {"dilations", ints({2, 1, 2})}}},
      {"groups and batch 2", {2, 6, 4, 6, 6}, {9, 2, 2, 3, 3}, true,
       {{"group", Attribute::of_int(3)}, {"pads", ints({0, 1, 1, 1, 1, 1})}}},
      {"depthwise, auto_pad SAME_UPPER, stride 2", {1, 4, 7, 9, 9}, {4, 1, 3, 3, 3}, true,
       {{"group", Attribute::of_int(4)}, {"auto_pad", Attribute::of_string("SAME_UPPER")}, {"strides", ints({2, 2, 2})}}},
      {"auto_pad SAME_LOWER, even kernel", {1, 2, 5, 6, 7}, {3, 2, 2, 2, 2}, true,
       {{"auto_pad", Attribute::of_string("SAME_LOWER")}}},
      {"auto_pad VALID", {1, 2, 5, 6, 7}, {3, 2, 3, 3, 3}, true, {{"auto_pad", Attribute::of_string("VALID")}}},
      {"depth pads past the kernel: frames of padding alone", {1, 2, 3, 5, 5}, {3, 2, 3, 3, 3}, true,
       {{"pads", ints({4, 1, 1, 5, 1, 1})}}},
  };
}

test::OneNode volume_node(const VolumeCase& c, uint32_t seed) {
  test::NodeCase n{"Conv", {c.x, c.w, c.bias ? Shape{c.w[0]} : Shape{}}, c.attrs, {true, false, false}};
  return test::one_node(n, "volume_conv", 17, seed);
}

int count(const Graph& g, const std::string& op) {
  int n = 0;
  for (const Node& node : g.nodes) n += node.op_type == op;
  return n;
}

TEST(VolumeConvLowering, EqualsTheReferencesThreeDimConv) {
  for (const VolumeCase& c : cases()) {
    SCOPED_TRACE(c.what);
    test::OneNode n = volume_node(c, 5);
    Graph g = n.graph;
    ASSERT_EQ(lower_volume_convs(g), 1);
    for (const Node& m : g.nodes) {
      EXPECT_TRUE(m.op_type == "Transpose" || m.op_type == "Pad" || m.op_type == "Slice" || m.op_type == "Reshape" ||
                  m.op_type == "Conv" || m.op_type == "FusedConv")
          << m.op_type;
      if (m.op_type == "Conv" || m.op_type == "FusedConv") EXPECT_EQ(g.tensors[m.inputs[0]].shape.size(), 4u) << m.name;
    }
    // One conv per tap of the kernel's depth, each after the first adding
    // the sum so far.
    EXPECT_EQ(count(g, "Conv"), 1);
    EXPECT_EQ(count(g, "FusedConv"), c.w[2] - 1);
    EXPECT_LT(test::rel_error(test::evaluate_graph(g, n.feeds).at(0), n.want), 1e-6);
  }
}

TEST(VolumeConvLowering, RunsOnTheDeviceWithNoCpuFallback) {
  auto dev = test::test_device();
  for (const VolumeCase& c : cases()) {
    SCOPED_TRACE(c.what);
    test::OneNode n = volume_node(c, 9);
    ASSERT_EQ(lower_volume_convs(n.graph), 1);
    EXPECT_LT(test::rel_error(test::run_one_node(n, dev).got, n.want), 1e-5);  // run_one_node: no fallback
  }
}

TEST(VolumeConvLowering, LeavesOtherConvsAsTheyAre) {
  // A 2-D conv, a 1-D conv, and a 3-D conv whose weights are an input.
  const std::vector<test::NodeCase> others = {
      {"Conv", {{1, 3, 8, 8}, {4, 3, 3, 3}, {4}}, {}, {true, false, false}},
      {"Conv", {{1, 3, 8}, {4, 3, 3}, {4}}, {}, {true, false, false}},
      {"Conv", {{1, 3, 4, 6, 6}, {4, 3, 3, 3, 3}}, {}, {true, true}},
  };
  for (const auto& c : others) {
    test::OneNode n = test::one_node(c, "other", 17, 1);
    EXPECT_EQ(lower_volume_convs(n.graph), 0);
    EXPECT_EQ(count(n.graph, "Conv"), 1);
  }
}

// Weights not loaded (planning from the .onnx alone): the taps' constants
// have their shapes and no bytes, and the plan is the same graph.
TEST(VolumeConvLowering, WithoutWeightDataGivesShapesOnly) {
  test::OneNode n = volume_node(cases()[0], 3);
  for (Tensor& t : n.graph.tensors)
    if (t.is_constant) t.has_data = false, t.value = HostTensor();
  ASSERT_EQ(lower_volume_convs(n.graph), 1);
  int taps = 0;
  for (const Node& m : n.graph.nodes)
    if (m.op_type == "Conv" || m.op_type == "FusedConv") {
      const Tensor& w = n.graph.tensors[m.inputs[1]];
      EXPECT_TRUE(w.is_constant);
      EXPECT_FALSE(w.has_data);
      EXPECT_EQ(to_string(w.shape), "6x4x3x3");
      ++taps;
    }
  EXPECT_EQ(taps, 3);
}

// A Conv3d as an exporter writes it is lowered by the importer itself.
TEST(VolumeConvImport, TheImporterLowersAConv3d) {
  test::OnnxBuilder b(17);
  b.input("x", {1, 2, 4, 6, 6});
  std::vector<float> w(3 * 2 * 3 * 3 * 3, 0.5f), bias = {1, 2, 3};
  b.initializer("w", {3, 2, 3, 3, 3}, w);
  b.initializer("b", {3}, bias);
  auto* conv = b.node("Conv", {"x", "w", "b"}, {"c"}, "conv3d");
  test::OnnxBuilder::attr_ints(conv, "pads", {1, 1, 1, 1, 1, 1});
  b.node("Relu", {"c"}, {"y"});
  b.output("y");
  std::string bytes;
  b.m.SerializeToString(&bytes);
  const Graph g = import_onnx_bytes(bytes, "video");
  EXPECT_EQ(count(g, "Conv") + count(g, "FusedConv"), 3);
  for (const Node& m : g.nodes)
    if (m.op_type == "Conv" || m.op_type == "FusedConv") EXPECT_EQ(g.tensors[m.inputs[0]].shape.size(), 4u);
  EXPECT_EQ(to_string(g.tensors[g.outputs[0]].shape), "1x3x4x6x6");
}

}  // namespace
}  // namespace texplan
