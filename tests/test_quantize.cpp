// Quantized ("QDQ") models: QuantizeLinear and DequantizeLinear in the
// reference (per tensor and per axis, int8 and uint8, rounding halves to
// even, saturation, the refusals), a QDQ convolution imported with its
// weights' DequantizeLinear folded and its activation pairs lowered to
// float ops, equal to the pairs' own arithmetic on the host, and run on the
// device with nothing left to the CPU.
#include <gtest/gtest.h>

#include "import/onnx_import.h"
#include "import/rewrites.h"
#include "one_node.h"
#include "onnx_builder.h"

namespace texplan {
namespace {

HostTensor floats(Shape s, std::vector<float> v) {
  HostTensor t(DataType::Float32, std::move(s));
  std::copy(v.begin(), v.end(), t.data<float>());
  return t;
}
template <class T>
HostTensor ints_of(DataType dt, Shape s, std::vector<int> v) {
  HostTensor t(dt, std::move(s));
  for (size_t i = 0; i < v.size(); ++i) t.data<T>()[i] = T(v[i]);
  return t;
}

HostTensor run(const std::string& op, const std::vector<const HostTensor*>& in, int64_t axis = 1) {
  Node n;
  n.name = op;
  n.op_type = op;
  n.attrs["axis"] = Attribute::of_int(axis);
  n.outputs = {0};
  return reference::evaluate(n, in).at(0);
}

TEST(QuantizeReference, RoundsHalvesToEvenAndSaturates) {
  const HostTensor x = floats({8}, {0.5f, 1.5f, 2.5f, -2.5f, 100.0f, -100.0f, 0.24f, 3.0f}), s = floats({}, {0.5f});
  const HostTensor z8 = ints_of<int8_t>(DataType::Int8, {}, {1});
  // x / s: 1, 3, 5, -5, 200, -200, 0.48, 6; + 1; saturated to int8.
  const HostTensor q = run("QuantizeLinear", {&x, &s, &z8});
  ASSERT_EQ(q.dtype, DataType::Int8);
  const std::vector<int> want = {2, 4, 6, -4, 127, -128, 1, 7};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(q.data<int8_t>()[i], want[i]) << i;
  // Halves to even: 2.5 / 1 -> 2, 3.5 -> 4, -0.5 -> -0; no zero point: uint8, negatives to 0.
  const HostTensor h = floats({4}, {2.5f, 3.5f, -0.5f, 300.0f}), one = floats({}, {1.0f});
  const HostTensor u = run("QuantizeLinear", {&h, &one, nullptr});
  ASSERT_EQ(u.dtype, DataType::UInt8);
  EXPECT_EQ(u.data<uint8_t>()[0], 2);
  EXPECT_EQ(u.data<uint8_t>()[1], 4);
  EXPECT_EQ(u.data<uint8_t>()[2], 0);
  EXPECT_EQ(u.data<uint8_t>()[3], 255);
  // And back: (q - z) * s.
  const HostTensor d = run("DequantizeLinear", {&q, &s, &z8});
  EXPECT_FLOAT_EQ(d.data<float>()[0], 0.5f);
  EXPECT_FLOAT_EQ(d.data<float>()[4], 63.0f);
  EXPECT_FLOAT_EQ(d.data<float>()[5], -64.5f);
}

TEST(QuantizeReference, PerAxisScalesAndZeroPoints) {
  // [2, 3] on axis 0: row r scaled by s[r] around z[r]; then axis 1.
  const HostTensor q = ints_of<uint8_t>(DataType::UInt8, {2, 3}, {10, 20, 30, 10, 20, 30});
  const HostTensor s0 = floats({2}, {0.5f, 2.0f}), z0 = ints_of<uint8_t>(DataType::UInt8, {2}, {10, 0});
  const HostTensor d0 = run("DequantizeLinear", {&q, &s0, &z0}, 0);
  const std::vector<float> want0 = {0, 5, 10, 20, 40, 60};
  for (size_t i = 0; i < want0.size(); ++i) EXPECT_FLOAT_EQ(d0.data<float>()[i], want0[i]) << i;
  const HostTensor s1 = floats({3}, {1, 2, 4});
  const HostTensor d1 = run("DequantizeLinear", {&q, &s1, nullptr}, -1);
  const std::vector<float> want1 = {10, 40, 120, 10, 40, 120};
  for (size_t i = 0; i < want1.size(); ++i) EXPECT_FLOAT_EQ(d1.data<float>()[i], want1[i]) << i;
  const HostTensor back = run("QuantizeLinear", {&d0, &s0, &z0}, 0);
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(back.data<uint8_t>()[i], q.data<uint8_t>()[i]) << i;
}

TEST(QuantizeReference, RefusesWhatItCannotMean) {
  const HostTensor x = floats({2, 3}, {1, 2, 3, 4, 5, 6});
  const HostTensor zero = floats({}, {0.0f}), two = floats({2}, {1, 1}), wrong = floats({4}, {1, 1, 1, 1});
  const HostTensor z16(DataType::Int64, {});
  EXPECT_THROW(run("QuantizeLinear", {&x, &zero, nullptr}), Error);        // scale 0
  EXPECT_THROW(run("QuantizeLinear", {&x, &wrong, nullptr}, 1), Error);    // 4 scales for an axis of 3
  EXPECT_THROW(run("QuantizeLinear", {&x, &two, nullptr}, 1), Error);      // 2 scales for an axis of 3
  EXPECT_THROW(run("QuantizeLinear", {&x, &zero, &z16}), Error);           // an int64 zero point
  EXPECT_NO_THROW(run("QuantizeLinear", {&x, &two, nullptr}, 0));
}

// x -> Q -> DQ -> Conv (weights int8, per output channel, through DQ) ->
// Q -> DQ -> Relu, as onnxruntime's quantizer writes QDQ models.
test::OnnxBuilder qdq_conv() {
  test::OnnxBuilder b(13);
  b.input("x", {1, 3, 7, 7});
  b.initializer("xs", {}, {0.02f});
  b.initializer("ys", {}, {0.05f});
  b.initializer("ws", {4}, {0.01f, 0.02f, 0.015f, 0.03f});
  b.initializer("bias", {4}, {0.1f, -0.2f, 0.05f, 0.0f});
  auto* xz = b.m.mutable_graph()->add_initializer();
  xz->set_name("xz");
  xz->set_data_type(onnx::TensorProto::UINT8);
  xz->add_int32_data(128);
  auto* yz = b.m.mutable_graph()->add_initializer();
  yz->set_name("yz");
  yz->set_data_type(onnx::TensorProto::INT8);
  yz->add_int32_data(-3);
  auto* w = b.m.mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::INT8);
  for (int64_t d : {4, 3, 3, 3}) w->add_dims(d);
  for (int i = 0; i < 4 * 27; ++i) w->add_int32_data((i * 37) % 255 - 127);
  auto* wz = b.m.mutable_graph()->add_initializer();
  wz->set_name("wz");
  wz->set_data_type(onnx::TensorProto::INT8);
  wz->add_dims(4);
  for (int i = 0; i < 4; ++i) wz->add_int32_data(0);
  b.node("QuantizeLinear", {"x", "xs", "xz"}, {"xq"});
  b.node("DequantizeLinear", {"xq", "xs", "xz"}, {"xd"});
  test::OnnxBuilder::attr_int(b.node("DequantizeLinear", {"w", "ws", "wz"}, {"wd"}), "axis", 0);
  test::OnnxBuilder::attr_ints(b.node("Conv", {"xd", "wd", "bias"}, {"c"}), "pads", {1, 1, 1, 1});
  b.node("QuantizeLinear", {"c", "ys", "yz"}, {"cq"});
  b.node("DequantizeLinear", {"cq", "ys", "yz"}, {"cd"});
  b.node("Relu", {"cd"}, {"y"});
  b.output("y");
  return b;
}

Graph import(const test::OnnxBuilder& b) {
  std::string bytes;
  b.m.SerializeToString(&bytes);
  return import_onnx_bytes(bytes, "qdq", "", {.load_weights = true});
}

// The pairs' own arithmetic, step by step in the reference.
HostTensor qdq_conv_by_steps(const HostTensor& x) {
  auto f = [](float v) { return floats({}, {v}); };
  const HostTensor xs = f(0.02f), ys = f(0.05f), ws = floats({4}, {0.01f, 0.02f, 0.015f, 0.03f});
  const HostTensor bias = floats({4}, {0.1f, -0.2f, 0.05f, 0.0f});
  const HostTensor xz = ints_of<uint8_t>(DataType::UInt8, {}, {128}), yz = ints_of<int8_t>(DataType::Int8, {}, {-3});
  std::vector<int> wv;
  for (int i = 0; i < 4 * 27; ++i) wv.push_back((i * 37) % 255 - 127);
  const HostTensor w = ints_of<int8_t>(DataType::Int8, {4, 3, 3, 3}, wv), wz = ints_of<int8_t>(DataType::Int8, {4}, {0, 0, 0, 0});
  const HostTensor xq = run("QuantizeLinear", {&x, &xs, &xz}), xd = run("DequantizeLinear", {&xq, &xs, &xz});
  const HostTensor wd = run("DequantizeLinear", {&w, &ws, &wz}, 0);
  Node conv;
  conv.name = "conv";
  conv.op_type = "Conv";
  conv.attrs["pads"] = Attribute::of_ints({1, 1, 1, 1});
  conv.outputs = {0};
  const HostTensor c = reference::evaluate(conv, {&xd, &wd, &bias}).at(0);
  const HostTensor cq = run("QuantizeLinear", {&c, &ys, &yz}), cd = run("DequantizeLinear", {&cq, &ys, &yz});
  Node relu;
  relu.name = "relu";
  relu.op_type = "Relu";
  relu.outputs = {0};
  return reference::evaluate(relu, {&cd}).at(0);
}

int count(const Graph& g, const std::string& op) {
  int n = 0;
  for (const Node& m : g.nodes) n += m.op_type == op;
  return n;
}

TEST(QuantizedModel, ImportsWithNoQuantizeOrDequantizeLeft) {
  const Graph g = import(qdq_conv());
  EXPECT_EQ(count(g, "QuantizeLinear"), 0);
  EXPECT_EQ(count(g, "DequantizeLinear"), 0);
  EXPECT_EQ(count(g, "Round"), 2);  // one per activation pair
  EXPECT_EQ(g.quantized_pairs, 2);   // pairs, not the nodes they replaced
  const HostTensor x = test::random_tensor({1, 3, 7, 7}, -2, 2, 4);
  const HostTensor got = test::evaluate_graph(g, {x}).at(0), want = qdq_conv_by_steps(x);
  // Every value on the output's grid of 0.05, and equal to the steps'.
  for (float v : got.as_float()) EXPECT_NEAR(v / 0.05f, std::nearbyint(v / 0.05f), 1e-3);
  EXPECT_EQ(test::max_abs_diff(got, want), 0.0);
}

TEST(QuantizedModel, RunsOnTheDeviceWithNothingOnTheCpu) {
  test::OneNode n;
  n.graph = import(qdq_conv());
  n.feeds = {test::random_tensor({1, 3, 7, 7}, -2, 2, 6)};
  n.want = qdq_conv_by_steps(n.feeds[0]);
  const HostTensor got = test::run_one_node(n, test::test_device()).got;
  // A conv summed in another order can put a value on the other side of a
  // rounding half: at most one step of 0.05 there, none elsewhere.
  EXPECT_LE(test::max_abs_diff(got, n.want), 0.05 + 1e-6);
  EXPECT_LT(test::rel_error(got, n.want), 1e-2);
}

// A pair whose Dequantize has another scale, or whose quantized tensor is
// read by something else, stays (the reference runs it).
TEST(QuantizedModel, PairsThatDoNotUndoEachOtherStay) {
  test::OnnxBuilder b(13);
  b.input("x", {2, 3});
  b.initializer("s", {}, {0.1f});
  b.initializer("t", {}, {0.2f});
  b.node("QuantizeLinear", {"x", "s"}, {"q"});
  b.node("DequantizeLinear", {"q", "t"}, {"y"});
  b.output("y");
  EXPECT_EQ(count(import(b), "QuantizeLinear"), 1);
  test::OnnxBuilder c(13);
  c.input("x", {2, 3});
  c.initializer("s", {}, {0.1f});
  c.node("QuantizeLinear", {"x", "s"}, {"q"});
  c.node("DequantizeLinear", {"q", "s"}, {"y"});
  c.output("y").output("q");
  EXPECT_EQ(count(import(c), "QuantizeLinear"), 1);
}

}  // namespace
}  // namespace texplan
