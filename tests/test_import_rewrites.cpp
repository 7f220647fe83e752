// Import's last step (import/rewrites.h): inference Dropouts removed, and an
// operator texplan lacks named as such rather than as a shape problem.
#include <gtest/gtest.h>

#include "import/onnx_import.h"
#include "import/rewrites.h"
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
