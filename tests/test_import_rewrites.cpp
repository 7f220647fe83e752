// Import's last step (import/rewrites.h): inference Dropouts removed,
// Transposes undone after elementwise ops removed, and an operator texplan
// lacks named as such rather than as a shape problem.
#include <gtest/gtest.h>

#include "import/onnx_import.h"
#include "import/rewrites.h"
#include "one_node.h"
#include "onnx_builder.h"

namespace texplan {
namespace {

Graph import(const test::OnnxBuilder& b, const std::string& name = "m") {
  std::string bytes;
  b.m.SerializeToString(&bytes);
  return import_onnx_bytes(bytes, name);
}

int count(const Graph& g, const std::string& op) {
  int n = 0;
  for (const Node& node : g.nodes) n += node.op_type == op;
  return n;
}

void bool_initializer(test::OnnxBuilder& b, const std::string& name, bool v) {
  auto* t = b.m.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::BOOL);
  t->add_int32_data(v);
}

TEST(InferenceDropout, IsRemovedAtEveryOpset) {
  for (int opset : {7, 10, 12, 13, 17}) {
    SCOPED_TRACE(opset);
    test::OnnxBuilder b(opset);
    b.input("x", {2, 8});
    b.node("Relu", {"x"}, {"r"});
    b.node("Dropout", {"r"}, {"d"});
    b.node("Sigmoid", {"d"}, {"y"});
    b.output("y");
    Graph g = import(b);
    EXPECT_EQ(count(g, "Dropout"), 0);
    ASSERT_EQ(g.nodes.size(), 2u);
    EXPECT_EQ(g.nodes[1].inputs[0], g.nodes[0].outputs[0]);  // Sigmoid reads Relu's output
  }
}

TEST(InferenceDropout, TrainingModeFalseOrRatioZeroIsRemovedTrainingIsKept) {
  struct Case {
    bool training;
    float ratio;
    bool removed;
  };
  for (const Case c : {Case{false, 0.5f, true}, Case{true, 0.0f, true}, Case{true, 0.5f, false}}) {
    SCOPED_TRACE(std::to_string(c.training) + " " + std::to_string(c.ratio));
    test::OnnxBuilder b(13);
    b.input("x", {4});
    b.initializer("ratio", {}, {c.ratio});
    bool_initializer(b, "training", c.training);
    b.node("Dropout", {"x", "ratio", "training"}, {"d"});
    b.node("Relu", {"d"}, {"y"});
    b.output("y");
    Graph g = import(b);
    EXPECT_EQ(count(g, "Dropout"), c.removed ? 0 : 1);
  }
}

TEST(InferenceDropout, AReadMaskBecomesAConstantAllTrue) {
  test::OnnxBuilder b(13);
  b.input("x", {2, 3});
  b.node("Dropout", {"x"}, {"d", "mask"});
  auto* cast = b.node("Cast", {"mask"}, {"m"});
  test::OnnxBuilder::attr_int(cast, "to", onnx::TensorProto::FLOAT);
  b.node("Mul", {"d", "m"}, {"y"});
  b.output("y");
  Graph g = import(b);
  EXPECT_EQ(count(g, "Dropout"), 0);
  const Tensor& mask = g.tensors[g.find("mask")];
  EXPECT_TRUE(mask.is_constant && mask.has_data);
  EXPECT_EQ(mask.dtype, DataType::Bool);
  EXPECT_EQ(to_string(mask.shape), "2x3");
  for (uint8_t v : mask.value.bytes) EXPECT_EQ(v, 1);
}

TEST(InferenceDropout, AsAGraphOutputBecomesACopyAndAnOutputMaskKeepsIt) {
  test::OnnxBuilder b(13);
  b.input("x", {4});
  b.node("Dropout", {"x"}, {"y"});
  b.output("y");
  Graph g = import(b);
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].op_type, "Identity");

  test::OnnxBuilder with_mask(13);
  with_mask.input("x", {4});
  with_mask.node("Dropout", {"x"}, {"y", "mask"});
  with_mask.output("y").output("mask");
  EXPECT_EQ(count(import(with_mask), "Dropout"), 1);
}

// x [2, 3, 4, 5] transposed by `perm`, through `ops` (each reading the one
// before; "Clip" with constant bounds), then by `back`, then Sigmoid.
test::OnnxBuilder round_trip(std::vector<int64_t> perm, const std::vector<std::string>& ops, std::vector<int64_t> back) {
  test::OnnxBuilder b(13);
  b.input("x", {2, 3, 4, 5});
  b.initializer("lo", {}, {-0.25f});
  b.initializer("hi", {}, {0.5f});
  test::OnnxBuilder::attr_ints(b.node("Transpose", {"x"}, {"t0"}), "perm", perm);
  std::string at = "t0";
  for (size_t i = 0; i < ops.size(); ++i) {
    const std::string out = "e" + std::to_string(i);
    b.node(ops[i], ops[i] == "Clip" ? std::vector<std::string>{at, "lo", "hi"} : std::vector<std::string>{at}, {out});
    at = out;
  }
  test::OnnxBuilder::attr_ints(b.node("Transpose", {at}, {"t1"}), "perm", back);
  b.node("Sigmoid", {"t1"}, {"y"});
  b.output("y");
  return b;
}

TEST(TransposeRoundTrip, TheElementwiseOpsRunOnTheInputAndBothTransposesGo) {
  const std::vector<HostTensor> x = {test::random_tensor({2, 3, 4, 5}, -1, 1, 3)};
  test::OnnxBuilder plain(13);
  plain.input("x", {2, 3, 4, 5});
  plain.initializer("lo", {}, {-0.25f});
  plain.initializer("hi", {}, {0.5f});
  plain.node("Relu", {"x"}, {"r"});
  plain.node("Clip", {"r", "lo", "hi"}, {"c"});
  plain.node("Sigmoid", {"c"}, {"y"});
  plain.output("y");
  const HostTensor want = test::evaluate_graph(import(plain), x).at(0);
  for (const auto& perm : std::vector<std::vector<int64_t>>{{0, 2, 1, 3}, {3, 0, 1, 2}}) {
    std::vector<int64_t> back(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) back[size_t(perm[i])] = int64_t(i);
    const Graph g = import(round_trip(perm, {"Relu", "Clip"}, back));
    EXPECT_EQ(count(g, "Transpose"), 0);
    EXPECT_EQ(test::max_abs_diff(test::evaluate_graph(g, x).at(0), want), 0.0);
  }
  // No op between: the second Transpose's reader reads x.
  const Graph g = import(round_trip({0, 2, 1, 3}, {}, {0, 2, 1, 3}));
  EXPECT_EQ(count(g, "Transpose"), 0);
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].inputs[0], g.inputs[0]);
}

TEST(TransposeRoundTrip, EveryReaderUndoingItGoes) {
  test::OnnxBuilder b(13);
  b.input("x", {2, 3, 4});
  test::OnnxBuilder::attr_ints(b.node("Transpose", {"x"}, {"t"}), "perm", {1, 0, 2});
  b.node("Relu", {"t"}, {"r"});
  test::OnnxBuilder::attr_ints(b.node("Transpose", {"r"}, {"a"}), "perm", {1, 0, 2});
  test::OnnxBuilder::attr_ints(b.node("Transpose", {"r"}, {"b"}), "perm", {1, 0, 2});
  b.node("Add", {"a", "b"}, {"y"});
  b.output("y");
  const Graph g = import(b);
  EXPECT_EQ(count(g, "Transpose"), 0);
  EXPECT_EQ(to_string(g.tensors[g.find("r")].shape), "2x3x4");
}

TEST(TransposeRoundTrip, KeptWhereTheyDoNotCancel) {
  // Not the inverse; an op read twice in the chain; a non-scalar operand;
  // the chain's value a graph output.
  EXPECT_EQ(count(import(round_trip({0, 2, 1, 3}, {"Relu"}, {0, 1, 3, 2})), "Transpose"), 2);
  test::OnnxBuilder twice = round_trip({0, 2, 1, 3}, {"Relu"}, {0, 2, 1, 3});
  twice.node("Neg", {"e0"}, {"n"});
  twice.output("n");
  EXPECT_EQ(count(import(twice), "Transpose"), 2);
  test::OnnxBuilder add(13);
  add.input("x", {2, 3}).input("z", {3, 2});
  test::OnnxBuilder::attr_ints(add.node("Transpose", {"x"}, {"t"}), "perm", {1, 0});
  add.node("Add", {"t", "z"}, {"s"});
  test::OnnxBuilder::attr_ints(add.node("Transpose", {"s"}, {"y"}), "perm", {1, 0});
  add.output("y");
  EXPECT_EQ(count(import(add), "Transpose"), 2);
  test::OnnxBuilder out = round_trip({0, 2, 1, 3}, {"Relu"}, {0, 2, 1, 3});
  out.output("e0");
  EXPECT_EQ(count(import(out), "Transpose"), 2);
}

// A node texplan has no implementation of is named with its operator, even
// where its output's shape is unknown too (Einsum once said "data-dependent
// shapes").
TEST(UnsupportedOperator, IsNamedWithItsNode) {
  test::OnnxBuilder b(13);
  b.input("x", {3, 3});
  b.node("Det", {"x"}, {"d"}, "the_det");
  b.node("Relu", {"d"}, {"y"});
  b.output("y");
  try {
    import(b, "detmodel");
    FAIL() << "imported";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "detmodel: node 'the_det' (Det): operator Det is not supported by texplan");
  }
}

}  // namespace
}  // namespace texplan
