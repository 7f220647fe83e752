// --precision fp16 (docs/precision.md): float tensors stored as IEEE half,
// arithmetic in fp32. On PoCL against the fp32 CPU reference: single nodes
// through each half-storage kernel family, whole models (tiny_cnn, the
// exported fixtures, a zoo model when /work/shared/models is there) within
// a relative error of 1e-2 with --guard's checks, plans at half the fp32
// bytes, and the CLI's defaults (1e-2 tolerance, said on the rel error line).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <filesystem>

#include "import/onnx_import.h"
#include "lower/lower.h"
#include "lower/ops.h"
#include "one_node.h"
#include "optimize/optimize.h"
#include "optimize/usage.h"
#include "pipeline/pipeline.h"
#include "plan/memory_plan.h"
#include "reference/common.h"
#include "runtime/cpu_executor.h"
#include "runtime/session.h"
#include "shell.h"
#include "test_util.h"

using namespace texplan;
using test::rel_error;

namespace fs = std::filesystem;

namespace {

std::shared_ptr<runtime::Device> pocl() { return runtime::open_device("pocl"); }

PlanInput half_records(const Graph& g) {
  UsageOptions uo;
  uo.float_storage = runtime::float_storage(runtime::Precision::Fp16);
  return make_usage_records(g, uo);
}

// One node in an fp16 session, with the kernels `kernels` names: every node
// on the device's half kernels; `launched` gets the OpenCL kernels it ran.
HostTensor run_half(const test::OneNode& n, const lower::KernelChoice& kernels = {},
                    std::vector<std::string>* launched = nullptr) {
  const PlanInput pin = half_records(n.graph);
  const plan::MemoryPlan plan = plan::plan_memory(pin.records, pocl()->info().profile, "best");
  runtime::SessionOptions o;
  o.precision = runtime::Precision::Fp16;
  o.guard = true;
  o.kernel_choice = kernels;
  o.profile = launched != nullptr;
  runtime::Session s(n.graph, pin, plan, pocl(), o);
  EXPECT_EQ(s.precision(), runtime::Precision::Fp16);
  EXPECT_TRUE(s.fallback_nodes().empty()) << n.graph.nodes[0].op_type;
  HostTensor got = s.run(n.feeds).at(0);
  if (launched)
    for (const runtime::NodeTime& t : s.node_times())
      for (const runtime::NodeTime::Kernel& k : t.kernels) launched->push_back(k.name);
  EXPECT_TRUE(s.guard_violations().empty());
  return got;
}

Attribute ints(std::vector<int64_t> v) { return Attribute::of_ints(std::move(v)); }

struct Case {
  test::NodeCase node;
  const char* what;
};

// The bulk conversions (F16C where the CPU has it) give the scalar ones'
// bits: ties to even, subnormals, overflow to infinity, signed zeros.
TEST(Fp16, BulkConversionsMatchTheScalarOnes) {
  std::vector<float> f = {0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, 65520.0f, 1e6f, -1e6f, 6.1e-5f, 5.96e-8f, 2.98e-8f,
                          2.99e-8f, 1e-10f, 1.0009765625f, 1.00048828125f, 1.00146484375f,
                          std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()};
  std::mt19937 rng(3);
  std::uniform_int_distribution<uint32_t> bits;
  while (f.size() < 4099) {  // not a multiple of 8: the tail runs too
    uint32_t b = bits(rng);
    float x;
    std::memcpy(&x, &b, 4);
    if (!std::isnan(x)) f.push_back(x);
  }
  std::vector<uint16_t> h(f.size());
  reference::floats_to_halves(f.data(), h.data(), f.size());
  for (size_t k = 0; k < f.size(); ++k) ASSERT_EQ(h[k], reference::float_to_half(f[k])) << f[k];
  std::vector<float> back(h.size());
  reference::halves_to_floats(h.data(), back.data(), h.size());
  for (size_t k = 0; k < h.size(); ++k) {
    const float want = reference::half_to_float(h[k]);
    ASSERT_TRUE(back[k] == want || (std::isnan(back[k]) && std::isnan(want))) << h[k];
  }
}

TEST(Fp16, SingleNodesWithinHalfPrecision) {
  const std::vector<Case> cases = {
      {{"Conv", {{1, 8, 13, 11}, {16, 8, 3, 3}, {16}}, {{"pads", ints({1, 1, 1, 1})}}, {true, false, false}},
       "3x3 conv"},
      {{"Conv", {{1, 3, 17, 19}, {8, 3, 3, 3}, {8}}, {{"strides", ints({2, 2})}}, {true, false, false}},
       "stem conv (3 channels, stride 2)"},
      {{"Conv", {{1, 24, 9, 9}, {40, 24, 1, 1}, {40}}, {}, {true, false, false}}, "1x1 conv"},
      {{"Conv",
        {{1, 16, 14, 14}, {16, 1, 3, 3}, {16}},
        {{"group", Attribute::of_int(16)}, {"pads", ints({1, 1, 1, 1})}},
        {true, false, false}},
       "depthwise conv"},
      {{"Conv",
        {{1, 16, 15, 15}, {16, 1, 5, 5}, {}},
        {{"group", Attribute::of_int(16)}, {"pads", ints({2, 2, 2, 2})}, {"strides", ints({2, 2})}},
        {true, false}},
       "depthwise conv 5x5 stride 2"},
      {{"FusedConv",
        {{1, 8, 15, 13}, {8, 1, 3, 3}, {8}},
        {{"group", Attribute::of_int(8)},
         {"pads", ints({1, 1, 1, 1})},
         {"program", Attribute::of_strings({"Clip x0 0 6"})}},
        {true, false, false}},
       "depthwise conv + ReLU6"},
      {{"FusedConv",
        {{1, 12, 10, 10}, {16, 12, 1, 1}, {16}, {1, 16, 10, 10}},
        {{"program", Attribute::of_strings({"Add x0 x1"})}},
        {true, false, false, true}},
       "1x1 conv + residual Add"},
      {{"FusedConv",
        {{1, 16, 10, 10}, {16, 16, 3, 3}, {16}},
        {{"pads", ints({1, 1, 1, 1})}, {"program", Attribute::of_strings({"Sigmoid x0", "Mul x0 t0"})}},
        {true, false, false}},
       "3x3 conv + SiLU"},
      {{"Gemm", {{2, 64}, {10, 64}, {10}}, {{"transB", Attribute::of_int(1)}}, {true, false, false}}, "Gemm"},
      {{"MatMul", {{3, 20, 32}, {32, 24}}, {}, {true, false}}, "MatMul"},
      {{"MaxPool", {{1, 4, 12, 12}}, {{"kernel_shape", ints({3, 3})}, {"strides", ints({2, 2})}}}, "MaxPool"},
      {{"AveragePool", {{1, 4, 12, 12}}, {{"kernel_shape", ints({2, 2})}, {"strides", ints({2, 2})}}}, "AveragePool"},
      {{"GlobalAveragePool", {{1, 32, 7, 7}}, {}}, "GlobalAveragePool"},
      {{"Relu", {{2, 3, 5, 7}}, {}}, "Relu"},
      {{"Sigmoid", {{2, 3, 5, 7}}, {}}, "Sigmoid"},
      {{"Add", {{2, 3, 5, 7}, {3, 1, 7}}, {}, {true, true}}, "broadcast Add"},
      {{"Mul", {{2, 16, 5, 5}, {2, 16, 1, 1}}, {}, {true, true}}, "per-channel Mul"},
      {{"Softmax", {{4, 37}}, {{"axis", Attribute::of_int(-1)}}}, "Softmax"},
      {{"ReduceMean", {{2, 6, 33}}, {{"axes", ints({-1})}}}, "ReduceMean"},
      {{"Transpose", {{2, 3, 17, 5}}, {{"perm", ints({0, 2, 3, 1})}}}, "Transpose"},
      {{"Concat", {{1, 3, 4, 4}, {1, 5, 4, 4}}, {{"axis", Attribute::of_int(1)}}, {true, true}}, "Concat"},
  };
  for (const Case& c : cases) {
    const test::NodeCase& n = c.node;
    const test::OneNode one = test::one_node(n, "fp16", 17, 5);
    const HostTensor got = run_half(one);
    EXPECT_LE(rel_error(got, one.want), 1e-2) << c.what;
  }
}

// The GPU kernels (gemm.cl, conv.cl, conv_maxpool.cl: what the H100 runs)
// named on PoCL. Winograd and split-K are off in fp16: direct tiles run.
TEST(Fp16, GpuKernelsWithinHalfPrecision) {
  const std::vector<Case> cases = {
      {{"Conv", {{1, 32, 12, 12}, {64, 32, 3, 3}, {64}}, {{"pads", ints({1, 1, 1, 1})}}, {true, false, false}},
       "3x3 conv (Winograd's shape)"},
      {{"Conv", {{1, 24, 9, 9}, {40, 24, 1, 1}, {40}}, {}, {true, false, false}}, "1x1 conv"},
      {{"Conv",
        {{1, 16, 14, 14}, {16, 1, 3, 3}, {16}},
        {{"group", Attribute::of_int(16)}, {"pads", ints({1, 1, 1, 1})}},
        {true, false, false}},
       "depthwise conv"},
      {{"FusedConvMaxPool",
        {{1, 8, 16, 16}, {16, 8, 3, 3}, {16}},
        {{"pads", ints({1, 1, 1, 1})},
         {"pool_kernel_shape", ints({2, 2})},
         {"pool_strides", ints({2, 2})},
         {"pool_pads", ints({0, 0, 0, 0})},
         {"pool_dilations", ints({1, 1})}},
        {true, false, false}},
       "conv + 2x2 max pool"},
      {{"Gemm", {{4, 256}, {64, 256}, {64}}, {{"transB", Attribute::of_int(1)}}, {true, false, false}}, "Gemm"},
      {{"Gemm", {{1, 256}, {64, 256}, {64}}, {{"transB", Attribute::of_int(1)}}, {true, false, false}}, "GEMV"},
      {{"MatMul", {{2, 40, 64}, {64, 48}}, {}, {true, false}}, "batched MatMul"},
  };
  for (const Case& c : cases) {
    const test::OneNode one = test::one_node(c.node, "fp16", 17, 9);
    EXPECT_LE(rel_error(run_half(one, {.conv = "gpu"}), one.want), 1e-2) << c.what;
  }
}

// gemm_kgroups.cl's k-groups named on PoCL over half storage: their float4
// reads (A along K, B along N or K) go through ldv_half4 (one form: each
// case is a build, a minute and a half for two forms on a cold PoCL).
TEST(Fp16, KGroupsWithinHalfPrecision) {
  const std::vector<Case> cases = {
      {{"MatMul", {{37, 260}, {260, 44}}, {}, {true, false}}, "MatMul, B along N"},
      {{"Gemm", {{33, 300}, {66, 300}, {66}}, {{"transB", Attribute::of_int(1)}}, {true, false, false}}, "Gemm, B along K"},
      {{"Conv", {{1, 132, 9, 8}, {40, 132, 1, 1}, {40}}, {}, {true, false, false}}, "1x1 conv"},
      {{"MatMul", {{2, 17, 131}, {131, 40}}, {}, {true, false}}, "batched MatMul, K odd: element reads"},
  };
  for (const Case& c : cases) {
    const test::OneNode one = test::one_node(c.node, "fp16", 17, 9);
    std::vector<std::string> launched;
    EXPECT_LE(rel_error(run_half(one, {.conv = "32x64k2"}, &launched), one.want), 1e-2) << c.what;
    EXPECT_EQ(launched, std::vector<std::string>{"gemm_kgroups"}) << c.what;
  }
}

// Textures as CL_HALF_FLOAT images: texture pools, and views (image1d_buffer
// over the arena on PoCL), in both layouts, guarded: conv -> depthwise conv
// -> Relu -> conv, against the fp32 CPU executor.
TEST(Fp16, TexturesInPoolsAndViews) {
  Graph g;
  g.model_name = "fp16_textures";
  g.opset = 13;
  uint32_t seed = 11;
  auto add = [&](Tensor t) { return g.add_tensor(std::move(t)); };
  auto constant = [&](Shape s) {
    Tensor t;
    t.name = "w" + std::to_string(g.tensors.size());
    t.value = test::random_tensor(s, -0.5f, 0.5f, seed++);
    t.shape = std::move(s);
    t.is_constant = t.has_data = true;
    return add(t);
  };
  auto node = [&](const std::string& op, std::vector<int> in, Shape out, std::map<std::string, Attribute> attrs) {
    Tensor t;
    t.name = "t" + std::to_string(g.tensors.size());
    t.shape = std::move(out);
    t.producer = int(g.nodes.size());
    const int id = add(t);
    g.nodes.push_back({op + std::to_string(g.nodes.size()), op, std::move(in), {id}, std::move(attrs)});
    return id;
  };
  Tensor x;
  x.name = "x";
  x.shape = {1, 8, 9, 11};
  x.is_input = true;
  const int xi = add(x);
  g.inputs = {xi};
  const std::map<std::string, Attribute> same = {{"kernel_shape", ints({3, 3})}, {"pads", ints({1, 1, 1, 1})}};
  std::map<std::string, Attribute> dw = same;
  dw["group"] = Attribute::of_int(12);
  const int c1 = node("Conv", {xi, constant({12, 8, 3, 3}), constant({12})}, {1, 12, 9, 11}, same);
  const int c2 = node("Conv", {c1, constant({12, 1, 3, 3}), constant({12})}, {1, 12, 9, 11}, dw);
  const int r = node("Relu", {c2}, {1, 12, 9, 11}, {});
  const int y = node("Conv", {r, constant({4, 12, 3, 3})}, {1, 4, 9, 11}, same);
  g.tensors[y].is_output = true;
  g.outputs = {y};

  const std::vector<HostTensor> in = {test::random_tensor({1, 8, 9, 11}, -1, 1, 5)};
  const plan::DeviceProfile& dev = pocl()->info().profile;
  const PlanInput ref_pin = make_usage_records(g);
  const HostTensor want =
      runtime::CpuExecutor(g, ref_pin, plan::plan_memory(ref_pin.records, dev, "best")).run(in).at(0);
  for (TextureMode mode : {TextureMode::Pools, TextureMode::Views})
    for (LayoutPolicy layouts : {LayoutPolicy::Rows, LayoutPolicy::WideRows}) {
      SCOPED_TRACE(std::string(to_string(mode)) + (layouts == LayoutPolicy::WideRows ? " wide" : " rows"));
      Graph h = g;
      StorageOptions so;
      so.memory_aware = false;
      so.layouts = layouts;
      so.element_bytes = 2;
      const StorageAssignment storage = assign_storage(h, dev, mode, lower::kernel_catalog(), so);
      EXPECT_GE(std::count(storage.texture.begin(), storage.texture.end(), 1), 3);
      UsageOptions uo;
      uo.storage = &storage;
      uo.float_storage = DataType::Float16;
      const PlanInput pin = make_usage_records(h, uo);
      const plan::MemoryPlan plan = plan::plan_memory(pin.records, dev, strategy_for(storage.mode, "best"));
      plan::validate(plan, pin.records, dev);
      runtime::SessionOptions o;
      o.precision = runtime::Precision::Fp16;
      o.guard = true;
      runtime::Session s(h, pin, plan, pocl(), o);
      EXPECT_LE(rel_error(s.run(in).at(0), want), 1e-2);
      EXPECT_TRUE(s.guard_violations().empty());
      EXPECT_TRUE(s.fallback_nodes().empty());
    }
}

// A model file planned in fp32 and in fp16: the fp16 plan and bound are at
// most 0.51x the fp32 ones.
void expect_plan_halves(const std::string& model, const std::string& textures = "none",
                        const std::string& target = "pocl") {
  Graph g = import_onnx(model, {});
  optimize(g, {});
  const plan::DeviceProfile dev = plan::DeviceProfile::load(target);
  const StorageAssignment storage = assign_storage(g, dev, parse_texture_mode(textures), lower::kernel_catalog());
  int64_t bytes[2], bound[2];
  for (int h = 0; h < 2; ++h) {
    UsageOptions uo;
    uo.storage = &storage;
    uo.float_storage = h ? DataType::Float16 : DataType::Float32;
    const PlanInput pin = make_usage_records(g, uo);
    const plan::MemoryPlan plan = plan::plan_memory(pin.records, dev, strategy_for(storage.mode, "best"));
    plan::validate(plan, pin.records, dev);
    bytes[h] = plan.total_bytes();
    bound[h] = plan::lower_bound_bytes(pin.records);
  }
  EXPECT_LE(double(bytes[1]), 0.51 * double(bytes[0])) << model << " textures " << textures;
  EXPECT_LE(double(bound[1]), 0.51 * double(bound[0])) << model << " textures " << textures;
}

// A model with its test data through an fp16 ModelSession (guarded): the
// outputs within 1e-2 of the reference outputs (PyTorch's fp32).
double half_run_error(const std::string& dir) {
  std::string file;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".onnx") file = e.path().string();
  std::vector<HostTensor> inputs, refs;
  for (int i = 0; fs::exists(dir + "/test_data_set_0/input_" + std::to_string(i) + ".pb"); ++i)
    inputs.push_back(load_tensor_pb(dir + "/test_data_set_0/input_" + std::to_string(i) + ".pb"));
  for (int i = 0; fs::exists(dir + "/test_data_set_0/output_" + std::to_string(i) + ".pb"); ++i)
    refs.push_back(load_tensor_pb(dir + "/test_data_set_0/output_" + std::to_string(i) + ".pb"));
  CompileOptions o;
  o.session.precision = runtime::Precision::Fp16;
  o.session.guard = true;
  ModelSession s(file, pocl(), o);
  const std::vector<HostTensor> outs = s.run(inputs);
  EXPECT_TRUE(s.current().guard_violations().empty()) << dir;
  EXPECT_TRUE(s.current().half_fallback_nodes().empty()) << dir;
  double worst = 0;
  for (size_t k = 0; k < refs.size() && k < outs.size(); ++k)
    if (refs[k].dtype == DataType::Float32) worst = std::max(worst, rel_error(outs[k], refs[k]));
  return worst;
}

TEST(Fp16, TinyCnnPlansAtHalfAndRunsWithinTolerance) {
  const std::string dir = std::string(TEXPLAN_SOURCE_DIR) + "/examples/models/tiny_cnn";
  expect_plan_halves(dir + "/tiny_cnn.onnx");
  EXPECT_LE(half_run_error(dir), 1e-2);
}

TEST(Fp16, ExportedFixturesRunWithinTolerance) {
  const std::string root = std::string(TEXPLAN_SOURCE_DIR) + "/tests/fixtures/exported";
  int ran = 0;
  for (const auto& e : fs::directory_iterator(root)) {
    if (!e.is_directory() || e.path().filename().string().find("_torchscript_static") == std::string::npos) continue;
    const double err = half_run_error(e.path().string());
    EXPECT_LE(err, 1e-2) << e.path().filename();
    ++ran;
  }
  EXPECT_GT(ran, 0);
}

TEST(Fp16, ZooPlansAtHalf) {
  const std::string zoo = TEXPLAN_MODELS_DIR;
  if (!fs::is_directory(zoo)) {
    std::printf("skipped: no model zoo at %s\n", zoo.c_str());
    GTEST_SKIP();
  }
  int planned = 0;
  for (const auto& e : fs::directory_iterator(zoo)) {
    const fs::path onnx = e.path() / (e.path().filename().string() + ".onnx");
    if (!fs::exists(onnx)) continue;
    expect_plan_halves(onnx.string());
    expect_plan_halves(onnx.string(), "auto", "adreno");  // textures at their pitched footprint
    ++planned;
  }
  std::printf("%d zoo models planned\n", planned);
  EXPECT_GT(planned, 0);
}

TEST(Fp16, ZooModelRunsWithinTolerance) {
  const std::string dir = std::string(TEXPLAN_MODELS_DIR) + "/squeezenet1_1";
  if (!fs::exists(dir + "/squeezenet1_1.onnx.data")) {
    std::printf("skipped: %s with weights is absent\n", dir.c_str());
    GTEST_SKIP();
  }
  EXPECT_LE(half_run_error(dir), 1e-2);
}

TEST(Fp16, RecordsOfAnotherPrecisionAreRefused) {
  const test::OneNode one = test::one_node({"Relu", {{1, 8}}, {}}, "fp16", 17, 1);
  const PlanInput pin = make_usage_records(one.graph);  // fp32 records
  const plan::MemoryPlan plan = plan::plan_memory(pin.records, pocl()->info().profile, "best");
  runtime::SessionOptions o;
  o.precision = runtime::Precision::Fp16;
  try {
    runtime::Session s(one.graph, pin, plan, pocl(), o);
    FAIL() << "fp32 records accepted by an fp16 session";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("float_storage"), std::string::npos) << e.what();
  }
}

TEST(Fp16, CliChecksAtOneInAHundredAndSaysSo) {
  const std::string model = std::string(TEXPLAN_SOURCE_DIR) + "/examples/models/tiny_cnn";
  const test::ShellResult r = test::sh(std::string(TEXPLAN_CLI) + " run " + model + " --precision fp16 --check --guard");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("tolerance 1.00e-02, fp16"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("precision   fp16"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("guard       clean"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("half range  every activation within half's range (calibrated on a random input), none scaled"),
            std::string::npos)
      << r.out;
  const test::ShellResult d =
      test::sh(std::string(TEXPLAN_CLI) + " run " + model + " --precision fp16 --io device --check");  // DeviceTensors
  EXPECT_EQ(d.code, 0) << d.out;
  const test::ShellResult p = test::sh(std::string(TEXPLAN_CLI) + " plan " + model + " --precision fp16 --json -", false);
  EXPECT_EQ(p.code, 0) << p.out;
  EXPECT_NE(p.out.find("\"precision\": \"fp16\""), std::string::npos);
}

}  // namespace
