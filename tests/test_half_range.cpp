// fp16 storage with activations scaled into half's range
// (optimize/half_range.h): the rewritten graph computes the same values
// times powers of two, an fp16 session on PoCL runs a network whose
// activations shrink far below half's range within 1e-2, outputs come back unscaled on host and device tensors, and a
// network in range or an operator that reads plain values is left alone.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "graph/epilogue.h"
#include "optimize/half_range.h"
#include "optimize/optimize.h"
#include "optimize/usage.h"
#include "pipeline/pipeline.h"
#include "plan/memory_plan.h"
#include "reference/reference_ops.h"
#include "runtime/cpu_executor.h"
#include "runtime/device_tensor.h"
#include "runtime/session.h"
#include "graph_builder.h"
#include "shell.h"
#include "test_util.h"

using namespace texplan;
using test::rel_error;
namespace fs = std::filesystem;

namespace {

std::shared_ptr<runtime::Device> pocl() { return runtime::open_device("pocl"); }

Attribute ints(std::vector<int64_t> v) { return Attribute::of_ints(std::move(v)); }

// Convolutions whose weights are `scale` times smaller than a unit network's:
// each layer shrinks the activations about `scale` times. SiLU, a
// residual Add, squeeze-and-excitation's channel Mul, global pooling and a
// classifier Gemm, as in EfficientNet.
Graph shrinking_network(float scale) {
  test::GraphBuilder b("shrinking");
  const int64_t c = 8;
  int x = b.input({1, c, 12, 12});
  auto conv = [&](int in, int64_t k, bool bias) {
    const Shape s = b.g.tensors[in].shape;
    std::vector<int> ins = {in, b.constant({c, s[1], k, k}, -scale, scale)};
    if (bias) ins.push_back(b.constant({c}, -scale * scale, scale * scale));
    return b.node("Conv", ins, {s[0], c, s[2], s[3]},
                  {{"kernel_shape", ints({k, k})}, {"pads", ints({k / 2, k / 2, k / 2, k / 2})}});
  };
  const Shape map = {1, c, 12, 12};
  int a = b.node("Relu", {conv(x, 3, false)}, map);
  int p = conv(a, 3, true);
  int m = b.node("Mul", {p, b.node("Sigmoid", {p}, map)}, map);  // SiLU
  int r = b.node("Add", {conv(m, 1, false), m}, map);
  int pooled = b.node("GlobalAveragePool", {r}, {1, c, 1, 1});
  int gate = b.node("Sigmoid", {conv(pooled, 1, true)}, {1, c, 1, 1});
  int se = b.node("Mul", {r, gate}, map);  // read by a pool, not a 1x1 conv: stays a Mul
  int v = b.node("Flatten", {b.node("GlobalAveragePool", {se}, {1, c, 1, 1})}, {1, c}, {{"axis", Attribute::of_int(1)}});
  int y = b.node("Gemm", {v, b.constant({10, c}, -scale, scale), b.constant({10}, -scale * 1e-6f, scale * 1e-6f)},
                 {1, 10}, {{"transB", Attribute::of_int(1)}});
  b.output(y);
  return b.g;
}

std::vector<HostTensor> run_reference(const Graph& g, const std::vector<HostTensor>& inputs) {
  const PlanInput pin = make_usage_records(g);
  const plan::MemoryPlan plan = plan::plan_memory(pin.records, plan::DeviceProfile::load("pocl"), "best");
  runtime::CpuExecutor cpu(g, pin, plan);
  return cpu.run(inputs);
}

HostTensor unscaled(HostTensor v, int exponent) {
  for (int64_t i = 0; i < v.count(); ++i) v.data<float>()[i] = std::ldexp(v.data<float>()[i], -exponent);
  return v;
}

std::vector<HostTensor> inputs_of(const Graph& g) { return {test::random_tensor(g.tensors[g.inputs[0]].shape)}; }

// Through the pipeline's records stage (which calibrates and scales in
// fp16) into a guarded fp16 session on PoCL.
struct HalfRun {
  std::shared_ptr<runtime::Device> device = pocl();
  CompiledModel m;
  std::unique_ptr<runtime::Session> session;
};
HalfRun half_session(const Graph& g, const std::string& textures = "none") {
  HalfRun h;
  h.m.graph = g;
  CompileOptions o;
  o.session.precision = runtime::Precision::Fp16;
  o.session.guard = true;
  o.textures = textures;
  const plan::DeviceProfile profile = h.device->info().profile;
  lower_to_records(h.m, profile, h.device->info().type, o);
  plan_records(h.m, profile, o);
  h.session = std::make_unique<runtime::Session>(h.m.graph, h.m.usage, h.m.plan, h.device, o.session);
  return h;
}

TEST(HalfRange, ScaledGraphComputesTheSameValuesTimesPowersOfTwo) {
  Graph g = shrinking_network(1e-3f);
  optimize(g, {});
  const std::vector<HostTensor> in = inputs_of(g);
  const HostTensor plain = run_reference(g, in).at(0);
  const std::vector<float> largest = reference::largest_magnitudes(g, in);
  const float out_largest = largest[g.outputs[0]];
  EXPECT_GT(out_largest, 0.0f);
  EXPECT_LT(out_largest, 0x1p-25f);  // plain half rounds the output to zero
  Graph scaled = g;
  const HalfRangeReport r = fit_half_range(scaled, largest);
  EXPECT_TRUE(r.calibrated);
  EXPECT_GT(r.scaled_tensors, 3);
  EXPECT_GT(r.max_exponent, 30);
  EXPECT_GT(r.rewritten_nodes, 3);
  EXPECT_TRUE(r.out_of_range.empty());
  EXPECT_EQ(scaled.tensors[scaled.inputs[0]].storage_exponent, 0);
  const int e = scaled.tensors[scaled.outputs[0]].storage_exponent;
  EXPECT_GT(e, 30);
  // Each scaled activation lands in half's comfortable range: the largest
  // of the tensors sharing its exponent (a pool's input and output) in
  // [2^-3, 2^5), none far below.
  const std::vector<float> after = reference::largest_magnitudes(scaled, in);
  float top = 0;
  for (size_t t = 0; t < scaled.tensors.size(); ++t) {
    const Tensor& x = scaled.tensors[t];
    if (x.storage_exponent == 0) continue;
    EXPECT_GE(after[t], 0x1p-8f) << x.name;
    EXPECT_LE(after[t], 32.0f) << x.name;
    top = std::max(top, after[t]);
  }
  EXPECT_GE(top, 0.125f);
  const HostTensor got = unscaled(run_reference(scaled, in).at(0), e);
  EXPECT_LT(rel_error(got, plain), 1e-5);
}

TEST(HalfRange, Fp16SessionRunsAShrinkingNetworkWithinTolerance) {
  const Graph g = shrinking_network(1e-3f);
  const std::vector<HostTensor> in = inputs_of(g);
  Graph ref = g;
  optimize(ref, {});
  const HostTensor want = run_reference(ref, in).at(0);

  HalfRun h = half_session(g);
  EXPECT_GT(h.m.half_range.scaled_tensors, 0);
  const HostTensor got = h.session->run(in).at(0);
  EXPECT_TRUE(h.session->guard_violations().empty());
  EXPECT_LT(rel_error(got, want), 1e-2);

  // Device tensors: the output converted and unscaled on the device.
  auto dev = h.device;
  runtime::DeviceTensor x(dev, DataType::Float32, in[0].shape);
  x.write(in[0]);
  runtime::DeviceTensor y(dev, DataType::Float32, want.shape);
  h.session->run({&x}, {&y});
  EXPECT_LT(rel_error(y.read(), want), 1e-2);
}

TEST(HalfRange, TexturesCarryTheScales) {
  const Graph g = shrinking_network(1e-3f);
  const std::vector<HostTensor> in = inputs_of(g);
  Graph ref = g;
  optimize(ref, {});
  const HostTensor want = run_reference(ref, in).at(0);
  for (const char* mode : {"pools", "views"}) {
    HalfRun h = half_session(g, mode);
    EXPECT_GT(h.m.half_range.scaled_tensors, 0) << mode;
    EXPECT_LT(rel_error(h.session->run(in).at(0), want), 1e-2) << mode;
    EXPECT_TRUE(h.session->guard_violations().empty()) << mode;
  }
}

TEST(HalfRange, GrowingActivationsAreScaledDown) {
  // Weights 30x a unit network's: activations pass half's largest value (65504).
  const Graph g = shrinking_network(30.0f);
  const std::vector<HostTensor> in = inputs_of(g);
  Graph ref = g;
  optimize(ref, {});
  const HostTensor want = run_reference(ref, in).at(0);
  HalfRun h = half_session(g);
  EXPECT_LT(h.m.half_range.min_exponent, -8);
  EXPECT_LT(rel_error(h.session->run(in).at(0), want), 1e-2);
}

TEST(HalfRange, ANetworkInRangeIsLeftAlone) {
  Graph g = shrinking_network(0.3f);
  optimize(g, {});
  const Graph before = g;
  const HalfRangeReport r = fit_half_range(g, reference::largest_magnitudes(g, inputs_of(g)));
  EXPECT_EQ(r.scaled_tensors, 0);
  EXPECT_EQ(r.rewritten_nodes, 0);
  ASSERT_EQ(g.nodes.size(), before.nodes.size());
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    EXPECT_EQ(g.nodes[k].op_type, before.nodes[k].op_type);
    EXPECT_EQ(Epilogue::parse(g.nodes[k]).to_strings(), Epilogue::parse(before.nodes[k]).to_strings());
  }
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    EXPECT_EQ(g.tensors[t].storage_exponent, 0);
    EXPECT_EQ(g.tensors[t].value.bytes, before.tensors[t].value.bytes);
  }
}

TEST(HalfRange, AnOperatorThatReadsPlainValuesKeepsItsOperandUnscaledAndSaysSo) {
  test::GraphBuilder b("softmax_reader");
  int x = b.input({1, 16});
  int y = b.node("MatMul", {x, b.constant({16, 16}, -1e-6f, 1e-6f)}, {1, 16});
  int s = b.node("Softmax", {y}, {1, 16}, {{"axis", Attribute::of_int(-1)}});
  b.output(s);
  Graph g = b.g;
  const HalfRangeReport r = fit_half_range(g, reference::largest_magnitudes(g, inputs_of(g)));
  EXPECT_EQ(g.tensors[y].storage_exponent, 0);
  ASSERT_EQ(r.out_of_range.size(), 1u);
  EXPECT_NE(r.out_of_range[0].find("Softmax"), std::string::npos) << r.out_of_range[0];
}

TEST(HalfRange, SharedWeightsAreCopiedBeforeScaling) {
  test::GraphBuilder b("shared");
  int x = b.input({1, 16});
  int w = b.constant({16, 16}, -1e-4f, 1e-4f);
  int y1 = b.node("MatMul", {x, w}, {1, 16});
  int y2 = b.node("MatMul", {y1, w}, {1, 16});
  b.output(y2);
  Graph g = b.g;
  const std::vector<HostTensor> in = inputs_of(g);
  const HostTensor want = run_reference(g, in).at(0);
  const HalfRangeReport r = fit_half_range(g, reference::largest_magnitudes(g, in));
  EXPECT_GT(r.copied_weight_bytes, 0);
  EXPECT_NE(g.nodes[0].inputs[1], g.nodes[1].inputs[1]);
  const HostTensor got = unscaled(run_reference(g, in).at(0), g.tensors[g.outputs[0]].storage_exponent);
  EXPECT_LT(rel_error(got, want), 1e-5);
}

// Zoo models whose activations leave half's range, one test each: with
// PoCL's kernel cache empty, both in one test took more than CTest's 600 s
// beside the rest of the suite.
class HalfRangeZoo : public ::testing::TestWithParam<const char*> {};

TEST_P(HalfRangeZoo, WithWeightsRunsInHalfWithinTolerance) {
  const std::string zoo = TEXPLAN_MODELS_DIR, name = GetParam();
  if (!fs::is_directory(zoo)) {
    std::printf("skipped: no model zoo at %s\n", zoo.c_str());
    GTEST_SKIP();
  }
  const std::string dir = zoo + "/" + name;
  if (!fs::exists(dir + "/" + name + ".onnx.data")) {
    std::printf("skipped: %s has no weights here\n", name.c_str());
    GTEST_SKIP();
  }
  const test::ShellResult r = test::sh(std::string(TEXPLAN_CLI) + " run " + dir + " --precision fp16 --check");
  EXPECT_EQ(r.code, 0) << r.out;  // within the fp16 tolerance, 1e-2
  EXPECT_NE(r.out.find("half range  "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("activations stored times 2^8 .. 2^"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("below half's normal range"), std::string::npos) << r.out;
}

INSTANTIATE_TEST_SUITE_P(Models, HalfRangeZoo, ::testing::Values("mobilenet_v2", "efficientnet_b0"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
