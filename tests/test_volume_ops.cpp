// Conv, MaxPool and AveragePool over three spatial dims (video models'
// Conv3d, MaxPool3d, AvgPool3d) lowered at import to their 2-D forms over
// frames (import/volume_ops.cpp): the lowered graphs against the
// reference's own 3-D operators on strides, pads (explicit, auto_pad SAME_*,
// depth-only, past the kernel), dilations, groups, batches, one-frame
// kernels, no bias, ceil_mode and count_include_pad, on the host and on the
// device with no node left to the CPU; the nodes it leaves alone; and a
// Conv3d as the ONNX file gives it.
#include <gtest/gtest.h>

#include <set>

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

// n lowered on the host: the frames' data movement and `ops` only, the 2-D
// ops (`two_d`) on 4-D images, and the reference's value. Returns the graph.
Graph expect_lowered(const test::OneNode& n, const std::set<std::string>& ops, const std::set<std::string>& two_d) {
  Graph g = n.graph;
  EXPECT_EQ(lower_volume_ops(g), 1);
  static const std::set<std::string> frames = {"Transpose", "Expand", "Concat", "Pad", "Slice", "Reshape"};
  for (const Node& m : g.nodes) {
    EXPECT_TRUE(frames.count(m.op_type) || ops.count(m.op_type)) << m.op_type;
    if (two_d.count(m.op_type)) {
      EXPECT_EQ(g.tensors[m.inputs[0]].shape.size(), 4u) << m.name;
    }
  }
  EXPECT_LT(test::rel_error(test::evaluate_graph(g, n.feeds).at(0), n.want), 1e-6);
  return g;
}

TEST(VolumeConvLowering, EqualsTheReferencesThreeDimConv) {
  for (const VolumeCase& c : cases()) {
    SCOPED_TRACE(c.what);
    const Graph g = expect_lowered(volume_node(c, 5), {"Conv", "FusedConv"}, {"Conv", "FusedConv"});
    // One conv per tap of the kernel's depth, each after the first adding
    // the sum so far.
    EXPECT_EQ(count(g, "Conv"), 1);
    EXPECT_EQ(count(g, "FusedConv"), c.w[2] - 1);
  }
}

// One node lowered and run on the device (run_one_node: nothing on the CPU).
void expect_lowered_on_device(const std::string& what, test::OneNode n, const std::shared_ptr<runtime::Device>& dev,
                              double tolerance) {
  SCOPED_TRACE(what);
  ASSERT_EQ(lower_volume_ops(n.graph), 1);
  EXPECT_LT(test::rel_error(test::run_one_node(n, dev).got, n.want), tolerance);
}

TEST(VolumeConvLowering, RunsOnTheDeviceWithNoCpuFallback) {
  auto dev = test::test_device();
  for (const VolumeCase& c : cases()) expect_lowered_on_device(c.what, volume_node(c, 9), dev, 1e-5);
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
    EXPECT_EQ(lower_volume_ops(n.graph), 0);
    EXPECT_EQ(count(n.graph, "Conv"), 1);
  }
}

// Weights not loaded (planning from the .onnx alone): the taps' constants
// have their shapes and no bytes, and the plan is the same graph.
TEST(VolumeConvLowering, WithoutWeightDataGivesShapesOnly) {
  test::OneNode n = volume_node(cases()[0], 3);
  for (Tensor& t : n.graph.tensors)
    if (t.is_constant) t.has_data = false, t.value = HostTensor();
  ASSERT_EQ(lower_volume_ops(n.graph), 1);
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

struct PoolCase {
  std::string what, op;
  Shape x;
  std::map<std::string, Attribute> attrs;
};

std::vector<PoolCase> pool_cases() {
  return {
      {"C3D's 1x2x2 max", "MaxPool", {1, 3, 4, 8, 8}, {{"kernel_shape", ints({1, 2, 2})}, {"strides", ints({1, 2, 2})}}},
      {"I3D's 3x3x3 max, stride 2, pads", "MaxPool", {1, 4, 7, 9, 10},
       {{"kernel_shape", ints({3, 3, 3})}, {"strides", ints({2, 2, 2})}, {"pads", ints({1, 1, 1, 1, 1, 1})}}},
      {"max rounding up, depth dilation 2", "MaxPool", {2, 2, 8, 7, 7},
       {{"kernel_shape", ints({2, 3, 3})}, {"strides", ints({2, 2, 2})}, {"dilations", ints({2, 1, 1})},
        {"ceil_mode", Attribute::of_int(1)}}},
      {"max auto_pad SAME_UPPER", "MaxPool", {1, 2, 5, 6, 6},
       {{"kernel_shape", ints({3, 3, 3})}, {"strides", ints({2, 2, 2})}, {"auto_pad", Attribute::of_string("SAME_UPPER")}}},
      {"S3D's 2x7x7 average", "AveragePool", {1, 3, 2, 7, 7}, {{"kernel_shape", ints({2, 7, 7})}}},
      {"average with pads, not counting them", "AveragePool", {1, 3, 5, 6, 7},
       {{"kernel_shape", ints({3, 3, 3})}, {"strides", ints({1, 2, 2})}, {"pads", ints({1, 1, 1, 1, 1, 1})}}},
      {"average with pads, counting them", "AveragePool", {2, 2, 5, 6, 6},
       {{"kernel_shape", ints({3, 2, 2})}, {"strides", ints({2, 1, 1})}, {"pads", ints({1, 0, 1, 1, 1, 0})},
        {"count_include_pad", Attribute::of_int(1)}}},
  };
}

test::OneNode pool_node(const PoolCase& c, uint32_t seed) {
  return test::one_node({c.op, {c.x}, c.attrs, {true}}, "volume_pool", 17, seed);
}

TEST(VolumePoolLowering, EqualsTheReferencesThreeDimPools) {
  for (const PoolCase& c : pool_cases()) {
    SCOPED_TRACE(c.what);
    const Graph g = expect_lowered(pool_node(c, 7), {c.op, "Max", "Add", "Mul"}, {c.op});
    EXPECT_EQ(count(g, c.op), c.attrs.at("kernel_shape").ints[0]);  // one per depth tap
  }
}

TEST(VolumePoolLowering, RunsOnTheDeviceWithNoCpuFallback) {
  auto dev = test::test_device();
  for (const PoolCase& c : pool_cases()) expect_lowered_on_device(c.what, pool_node(c, 13), dev, 1e-6);
}

// MaxPool whose Indices are read, and AveragePool rounding up (whose
// windows past the end count differently), stay with the reference.
TEST(VolumePoolLowering, LeavesIndicesAndAveragesRoundingUpAlone) {
  test::OneNode avg = test::one_node(
      {"AveragePool", {{1, 2, 5, 6, 6}}, {{"kernel_shape", ints({2, 2, 2})}, {"strides", ints({2, 2, 2})}, {"ceil_mode", Attribute::of_int(1)}}, {true}},
      "avg", 17, 1);
  EXPECT_EQ(lower_volume_ops(avg.graph), 0);
  test::OneNode max = test::one_node({"MaxPool", {{1, 2, 4, 6, 6}}, {{"kernel_shape", ints({2, 2, 2})}}, {true}}, "max", 17, 1);
  Tensor indices;
  indices.name = "indices";
  indices.dtype = DataType::Int64;
  indices.shape = {1, 2, 3, 5, 5};
  max.graph.nodes[0].outputs.push_back(max.graph.add_tensor(indices));
  EXPECT_EQ(lower_volume_ops(max.graph), 0);
}

// Empty volumes (a 0 channel, batch or frame count) stay with the reference:
// the rewrite's Reshape to [N * OD, 0, H, W] would copy a dim where the 0 is
// (ONNX's Reshape rule), and import then refused a valid model blaming its
// own 'pool/Reshape_2'. The model imports, plans and runs.
TEST(VolumePoolLowering, LeavesEmptyVolumesAlone) {
  test::OneNode max = test::one_node({"MaxPool", {{1, 0, 4, 4, 4}}, {{"kernel_shape", ints({2, 2, 2})}}, {true}}, "max", 17, 1);
  EXPECT_EQ(lower_volume_ops(max.graph), 0);
  test::OneNode avg = test::one_node({"AveragePool", {{0, 2, 4, 4, 4}}, {{"kernel_shape", ints({2, 2, 2})}}, {true}}, "avg", 17, 1);
  EXPECT_EQ(lower_volume_ops(avg.graph), 0);
  test::OnnxBuilder b(17);
  b.input("x", {1, 0, 4, 4, 4});
  test::OnnxBuilder::attr_ints(b.node("MaxPool", {"x"}, {"y"}, "pool"), "kernel_shape", {2, 2, 2});
  b.output("y");
  const Graph g = import_onnx_bytes(b.m.SerializeAsString(), "empty_volume");
  EXPECT_EQ(g.tensors[g.outputs[0]].shape, (Shape{1, 0, 3, 3, 3}));
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
    if (m.op_type == "Conv" || m.op_type == "FusedConv") {
      EXPECT_EQ(g.tensors[m.inputs[0]].shape.size(), 4u);
    }
  EXPECT_EQ(to_string(g.tensors[g.outputs[0]].shape), "1x3x4x6x6");
}

// Two in a row with a Relu between: the Relu runs frames-major, and of the
// four Transposes only the first's in and the last's out are left.
TEST(VolumeConvImport, ConsecutiveConvsKeepOneTransposeInAndOneOut) {
  test::OnnxBuilder b(17);
  b.input("x", {1, 2, 4, 6, 6});
  b.initializer("w", {3, 2, 3, 3, 3}, std::vector<float>(3 * 2 * 27, 0.25f));
  b.initializer("v", {2, 3, 1, 3, 3}, std::vector<float>(2 * 3 * 9, -0.5f));
  test::OnnxBuilder::attr_ints(b.node("Conv", {"x", "w"}, {"c"}), "pads", {1, 1, 1, 1, 1, 1});
  b.node("Relu", {"c"}, {"r"});
  test::OnnxBuilder::attr_ints(b.node("Conv", {"r", "v"}, {"y"}), "pads", {0, 1, 1, 0, 1, 1});
  b.output("y");
  std::string bytes;
  b.m.SerializeToString(&bytes);
  const Graph g = import_onnx_bytes(bytes, "video");
  EXPECT_EQ(count(g, "Transpose"), 2);
  const HostTensor x = test::random_tensor({1, 2, 4, 6, 6}, -1, 1, 2);
  // Against the reference's 3-D convs on the graph as written.
  Graph direct;
  direct.opset = 17;
  auto tensor = [&](const std::string& name, Shape s, const HostTensor* v) {
    Tensor t;
    t.name = name;
    t.shape = std::move(s);
    if (v) t.is_constant = t.has_data = true, t.value = *v;
    return direct.add_tensor(t);
  };
  HostTensor w(DataType::Float32, {3, 2, 3, 3, 3}), v(DataType::Float32, {2, 3, 1, 3, 3});
  std::fill(w.data<float>(), w.data<float>() + w.count(), 0.25f);
  std::fill(v.data<float>(), v.data<float>() + v.count(), -0.5f);
  const int xi = tensor("x", {1, 2, 4, 6, 6}, nullptr), c = tensor("c", {1, 3, 4, 6, 6}, nullptr),
            r = tensor("r", {1, 3, 4, 6, 6}, nullptr), y = tensor("y", {1, 2, 4, 6, 6}, nullptr);
  direct.inputs = {xi};
  direct.outputs = {y};
  Node c1, relu, c2;
  c1.name = "c1", c1.op_type = "Conv", c1.inputs = {xi, tensor("w", w.shape, &w)}, c1.outputs = {c};
  c1.attrs["pads"] = Attribute::of_ints({1, 1, 1, 1, 1, 1});
  relu.name = "relu", relu.op_type = "Relu", relu.inputs = {c}, relu.outputs = {r};
  c2.name = "c2", c2.op_type = "Conv", c2.inputs = {r, tensor("v", v.shape, &v)}, c2.outputs = {y};
  c2.attrs["pads"] = Attribute::of_ints({0, 1, 1, 0, 1, 1});
  direct.nodes = {c1, relu, c2};
  EXPECT_LT(test::rel_error(test::evaluate_graph(g, {x}).at(0), test::evaluate_graph(direct, {x}).at(0)), 1e-6);
}

}  // namespace
}  // namespace texplan
