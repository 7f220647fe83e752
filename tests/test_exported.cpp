// Models as users export them today (issue 30): PyTorch 2.11's default
// exporter (torch.export, opset 20) and the TorchScript one, with static and
// symbolic batches (tests/fixtures/exported), the schemas of opsets 18-21,
// symbolic dimensions and per-shape specialization.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "import/onnx_import.h"
#include "onnx_builder.h"
#include "pipeline/pipeline.h"
#include "runtime/cpu_executor.h"
#include "shell.h"
#include "test_util.h"

using namespace texplan;
using texplan::test::OnnxBuilder;
namespace fs = std::filesystem;

namespace {

const fs::path kFixtures = fs::path(TEXPLAN_SOURCE_DIR) / "tests/fixtures/exported";

std::vector<fs::path> fixture_dirs() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(kFixtures))
    if (e.is_directory()) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<HostTensor> load_set(const fs::path& set, const std::string& prefix) {
  std::vector<HostTensor> out;
  for (int i = 0; fs::exists(set / (prefix + std::to_string(i) + ".pb")); ++i)
    out.push_back(load_tensor_pb((set / (prefix + std::to_string(i) + ".pb")).string()));
  return out;
}

// The largest error of `got` against PyTorch's outputs in `set`.
double worst_error(const std::vector<HostTensor>& got, const fs::path& set) {
  const std::vector<HostTensor> want = load_set(set, "output_");
  EXPECT_EQ(got.size(), want.size());
  double worst = 0;
  for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
    EXPECT_EQ(to_string(got[i].shape), to_string(want[i].shape)) << set;
    worst = std::max(worst, test::rel_error(got[i], want[i]));
  }
  return worst;
}

// Reference outputs of `path` for `inputs` (the host executor, no OpenCL).
std::vector<HostTensor> reference_run(const std::string& path, const std::vector<HostTensor>& inputs,
                                      const ImportOptions& io = {}) {
  ImportOptions o = io;
  o.load_weights = true;
  CompiledModel m = compile(path, o, plan::DeviceProfile::load("pocl"), "cpu-executor", {});
  runtime::CpuExecutor cpu(m.graph, m.usage, m.plan);
  return cpu.run(inputs);
}

}  // namespace

// Every fixture, every test set, one session per model: PoCL within 1e-4 of
// PyTorch; the symbolic-batch ones run batch 1 then 3 from one session.
TEST(Exported, EveryFixtureRunsOnPoclWithinTolerance) {
  auto device = test::test_device();
  int models = 0;
  for (const fs::path& dir : fixture_dirs()) {
    SCOPED_TRACE(dir.filename().string());
    ModelSession s(dir.string(), device);
    int sets = 0;
    for (int k = 0; fs::exists(dir / ("test_data_set_" + std::to_string(k))); ++k, ++sets) {
      const fs::path set = dir / ("test_data_set_" + std::to_string(k));
      EXPECT_LT(worst_error(s.run(load_set(set, "input_")), set), 1e-4) << set;
    }
    // torch.export specialized attn_block's batch to 1 (its dynbatch file is static).
    const bool symbolic = !s.inputs()[0].is_static();
    EXPECT_EQ(symbolic, dir.filename().string().find("dynbatch") != std::string::npos &&
                            dir.filename().string() != "attn_block_dynamo_dynbatch");
    EXPECT_EQ(sets, symbolic ? 2 : 1);
    EXPECT_EQ(s.compilations(), sets);
    ++models;
  }
  EXPECT_EQ(models, 24);
}

// The exporter's opset-20 forms are what the host reference computes too.
TEST(Exported, DynamoExportsMatchTheReferenceExecutor) {
  for (const fs::path& dir : fixture_dirs()) {
    if (dir.filename().string().find("dynamo_static") == std::string::npos) continue;
    SCOPED_TRACE(dir.filename().string());
    const fs::path set = dir / "test_data_set_0";
    EXPECT_LT(worst_error(reference_run(dir.string(), load_set(set, "input_")), set), 1e-4);
  }
}

TEST(Exported, DynamoExportIsOpset20WithTheNewerForms) {
  const auto path = (kFixtures / "chunk_pad_reduce_dynamo_static").string();
  Graph g = import_onnx(path);
  EXPECT_EQ(g.opset, 20);
  std::set<std::string> ops;
  for (const auto& n : g.nodes) ops.insert(n.op_type);
  for (const char* op : {"Split", "Pad", "ReduceMean", "ReduceMax"}) EXPECT_TRUE(ops.count(op)) << op;
  Graph gelu = import_onnx((kFixtures / "mlp_gelu_ln_dynamo_static").string());
  int gelus = 0;
  for (const auto& n : gelu.nodes) gelus += n.op_type == "Gelu";
  EXPECT_EQ(gelus, 2);
}

// A symbolic batch: refused naming the dimension and both flags; fixed by
// either; a --dim naming nothing is refused naming what there is.
TEST(Exported, SymbolicBatchNeedsAValueAndSaysHow) {
  const auto path = (kFixtures / "cnn_bn_dynamo_dynbatch").string();
  try {
    import_onnx(path);
    FAIL() << "imported with an open batch";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("cnn_bn_dynamo_dynbatch"), std::string::npos) << m;
    EXPECT_NE(m.find("'batch'"), std::string::npos) << m;
    EXPECT_NE(m.find("--dim batch=N"), std::string::npos) << m;
    EXPECT_NE(m.find("--input-shape x=Nx3x32x32"), std::string::npos) << m;
    EXPECT_EQ(m.find("data-dependent"), std::string::npos) << m;
  }
  ImportOptions one, three, whole, wrong;
  one.dims["batch"] = 1;
  three.dims["batch"] = 3;
  whole.input_shapes["x"] = {2, 3, 32, 32};
  EXPECT_EQ(to_string(import_onnx(path, one).tensors[import_onnx(path, one).inputs[0]].shape), "1x3x32x32");
  Graph g3 = import_onnx(path, three);
  EXPECT_EQ(to_string(g3.tensors[g3.outputs[0]].shape), "3x10");
  Graph g2 = import_onnx(path, whole);
  EXPECT_EQ(to_string(g2.tensors[g2.outputs[0]].shape), "2x10");
  wrong.dims["bach"] = 1;
  try {
    import_onnx(path, wrong);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("(it has: batch)"), std::string::npos) << e.what();
  }
  ImportOptions bad_static;
  bad_static.input_shapes["x"] = {1, 4, 32, 32};
  try {
    import_onnx(path, bad_static);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dimension 1 of 3"), std::string::npos) << e.what();
  }
}

TEST(Exported, CliTakesDimsAndInputShapes) {
  const auto dir = (kFixtures / "cnn_bn_dynamo_dynbatch").string();
  auto r = test::sh(std::string(TEXPLAN_CLI) + " plan " + dir + " --strategy best");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("--dim batch=N"), std::string::npos) << r.out;
  r = test::sh(std::string(TEXPLAN_CLI) + " plan -q " + dir + " --strategy best --dim batch=1 --json " +
               (test::temp_dir("exported") / "b1.json").string());
  EXPECT_EQ(r.code, 0) << r.out;
  r = test::sh(std::string(TEXPLAN_CLI) + " plan " + dir + " --strategy best --input-shape x=4x3x32x32");
  EXPECT_EQ(r.code, 0) << r.out;
  r = test::sh(std::string(TEXPLAN_CLI) + " plan " + dir + " --dim batch=x");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("is not a dimension"), std::string::npos) << r.out;
  // run: the input file's shape fixes the batch (3 here), and --check compares.
  const auto report = test::temp_dir("exported") / "run3.json";
  r = test::sh(std::string(TEXPLAN_CLI) + " run " + dir + " --input " + dir + "/test_data_set_1/input_0.pb --output " +
               (test::temp_dir("exported") / "out3").string() + " --json " + report.string());
  EXPECT_EQ(r.code, 0) << r.out;
  std::ifstream rf(report);
  const auto j = nlohmann::json::parse(rf);
  EXPECT_EQ(j["input_shapes"]["x"], nlohmann::json({3, 3, 32, 32})) << j["input_shapes"];
  HostTensor y = load_tensor_pb((test::temp_dir("exported") / "out3/output_0.pb").string());
  EXPECT_LT(test::rel_error(y, load_tensor_pb(dir + "/test_data_set_1/output_0.pb")), 1e-4);
  r = test::sh(std::string(TEXPLAN_CLI) + " run " + dir + " --check");
  EXPECT_EQ(r.code, 0) << r.out;
  // An input of test_data_set_1 is checked against that set's outputs.
  r = test::sh(std::string(TEXPLAN_CLI) + " run " + dir + " --check --input " + dir + "/test_data_set_1/input_0.pb");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("rel error"), std::string::npos) << r.out;
}

// GroupNorm as PyTorch exports it (Reshape, InstanceNormalization) runs on
// OpenCL kernels, nothing on the CPU fallback.
TEST(Exported, GroupNormRunsOnKernels) {
  for (const char* name : {"groupnorm_up_dynamo_static", "groupnorm_up_torchscript_static"}) {
    ModelSession s((kFixtures / name).string(), test::test_device());
    const fs::path set = kFixtures / name / "test_data_set_0";
    EXPECT_LT(worst_error(s.run(load_set(set, "input_")), set), 1e-4) << name;
    EXPECT_TRUE(s.current().fallback_nodes().empty()) << name << ": " << s.current().fallback_nodes()[0];
  }
}

// One session: batch 1, 3, then 1 again is correct each time and plans twice;
// each specialization at its own bound; a cache of one plans three times.
TEST(Exported, OneSessionSpecializesOncePerShape) {
  const fs::path dir = kFixtures / "mlp_gelu_ln_dynamo_dynbatch";
  const auto set1 = dir / "test_data_set_0", set3 = dir / "test_data_set_1";
  auto device = test::test_device();
  ModelSession s(dir.string(), device);
  EXPECT_EQ(s.compilations(), 0);
  ASSERT_EQ(s.inputs().size(), 1u);
  EXPECT_EQ(s.inputs()[0].to_string(), "batchx8x32");
  for (const auto& set : {set1, set3, set1}) EXPECT_LT(worst_error(s.run(load_set(set, "input_")), set), 1e-4);
  EXPECT_EQ(s.compilations(), 2);
  const auto sp = s.specializations();
  ASSERT_EQ(sp.size(), 2u);
  EXPECT_EQ(to_string(sp[0].input_shapes[0]), "1x8x32");  // most recent first
  EXPECT_EQ(sp[0].runs, 2);
  EXPECT_EQ(to_string(sp[1].input_shapes[0]), "3x8x32");
  EXPECT_EQ(sp[1].plan_bytes, sp[1].lower_bound_bytes);
  EXPECT_EQ(sp[1].plan_bytes, 3 * sp[0].plan_bytes);

  ModelSession one(dir.string(), device, {}, {}, 1);
  for (const auto& set : {set1, set3, set1}) EXPECT_LT(worst_error(one.run(load_set(set, "input_")), set), 1e-4);
  EXPECT_EQ(one.compilations(), 3);
  EXPECT_EQ(one.specializations().size(), 1u);

  // A static dimension that does not fit: named, and nothing compiled.
  HostTensor bad(DataType::Float32, {1, 8, 31});
  try {
    s.run({bad});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dimension 2 must be 32"), std::string::npos) << e.what();
  }
  EXPECT_EQ(s.compilations(), 2);
}

// Newer opsets than texplan knows keep their clear refusal.
TEST(Exported, OpsetAboveWhatTexplanKnowsIsRefused) {
  OnnxBuilder b(22);
  b.input("x", {1, 4}).output("y");
  b.node("Relu", {"x"}, {"y"});
  try {
    import_onnx_bytes(b.m.SerializeAsString(), "op22");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("opset 22 is not supported (supported: 7 to 21)"), std::string::npos)
        << e.what();
  }
}

namespace {

// Runs the one-node-or-more model `b` (input x of `shape`) on PoCL and on the
// reference; returns the PoCL output after checking they agree.
HostTensor run_both(const OnnxBuilder& b, const std::string& name, const Shape& shape) {
  const std::string path = b.save(test::temp_dir("newer"), name);
  HostTensor x = test::random_tensor(shape);
  auto ref = reference_run(path, {x});
  ModelSession s(path, test::test_device());
  auto got = s.run({x});
  EXPECT_EQ(got.size(), ref.size());
  EXPECT_LT(test::rel_error(got[0], ref[0]), 1e-5) << name;
  return got[0];
}

}  // namespace

TEST(NewerSchemas, SplitWithNumOutputsCutsUnevenly) {
  OnnxBuilder b(18);
  b.input("x", {1, 7, 2}).output("a").output("b").output("c");
  auto* n = b.node("Split", {"x"}, {"a", "b", "c"});
  OnnxBuilder::attr_int(n, "axis", 1);
  OnnxBuilder::attr_int(n, "num_outputs", 3);
  const std::string path = b.save(test::temp_dir("newer"), "split18");
  Graph g = import_onnx(path);
  EXPECT_EQ(to_string(g.tensors[g.outputs[0]].shape), "1x3x2");
  EXPECT_EQ(to_string(g.tensors[g.outputs[2]].shape), "1x1x2");
  HostTensor x = test::random_tensor({1, 7, 2});
  ModelSession s(path, test::test_device());
  auto out = s.run({x});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[2].data<float>()[0], x.data<float>()[12]);  // channel 6 of 7
  OnnxBuilder bad(18);
  bad.input("x", {1, 7}).output("a").output("b");
  auto* m = bad.node("Split", {"x"}, {"a", "b"});
  OnnxBuilder::attr_int(m, "axis", 1);
  OnnxBuilder::attr_int(m, "num_outputs", 3);
  EXPECT_THROW(import_onnx_bytes(bad.m.SerializeAsString(), "split_count"), Error);
}

TEST(NewerSchemas, ReduceWithAxesInputAndPadWithAxes) {
  OnnxBuilder b(18);
  b.input("x", {2, 3, 4, 5}).output("y").output("p");
  b.initializer_i64("axes", {2}, {2, 3});
  b.node("ReduceMean", {"x", "axes"}, {"y"});
  b.initializer_i64("pads", {4}, {1, 2, 0, 3});
  b.initializer_i64("pad_axes", {2}, {1, 3});
  b.node("Pad", {"x", "pads", "", "pad_axes"}, {"p"});
  const std::string path = b.save(test::temp_dir("newer"), "reduce_pad18");
  Graph g = import_onnx(path);
  EXPECT_EQ(to_string(g.tensors[g.outputs[0]].shape), "2x3x1x1");
  EXPECT_EQ(to_string(g.tensors[g.outputs[1]].shape), "2x4x4x10");
  run_both(b, "reduce_pad18", {2, 3, 4, 5});
}

TEST(NewerSchemas, ResizeWithAxesAndAspectPolicy) {
  OnnxBuilder b(19);
  b.input("x", {1, 2, 4, 6}).output("y");
  b.initializer_i64("sizes", {2}, {8, 8});
  auto* n = b.node("Resize", {"x", "", "", "sizes"}, {"y"});
  OnnxBuilder::attr_ints(n, "axes", {2, 3});
  const std::string path = b.save(test::temp_dir("newer"), "resize19");
  Graph g = import_onnx(path);
  EXPECT_EQ(to_string(g.tensors[g.outputs[0]].shape), "1x2x8x8");
  run_both(b, "resize19", {1, 2, 4, 6});
  // Shapes of the aspect policies are inferred; running them is refused by name.
  auto* p = n->add_attribute();
  p->set_name("keep_aspect_ratio_policy");
  p->set_type(onnx::AttributeProto::STRING);
  p->set_s("not_larger");
  const std::string kept = b.save(test::temp_dir("newer"), "resize19_policy");
  Graph k = import_onnx(kept);
  EXPECT_EQ(to_string(k.tensors[k.outputs[0]].shape), "1x2x5x8");  // scale min(8/4, 8/6)
  try {
    ModelSession s(kept, test::test_device());
    s.run({test::random_tensor({1, 2, 4, 6})});
    FAIL() << "ran keep_aspect_ratio_policy not_larger";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("keep_aspect_ratio_policy"), std::string::npos) << e.what();
  }
}

TEST(NewerSchemas, GeluCastSaturateAndDilatedAveragePool) {
  OnnxBuilder b(20);
  b.input("x", {1, 2, 9, 9}).output("y").output("c").output("p");
  auto* gelu = b.node("Gelu", {"x"}, {"y"});
  auto* a = gelu->add_attribute();
  a->set_name("approximate");
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s("tanh");
  auto* cast = b.node("Cast", {"x"}, {"c"});
  OnnxBuilder::attr_int(cast, "to", onnx::TensorProto::FLOAT);
  OnnxBuilder::attr_int(cast, "saturate", 1);
  auto* pool = b.node("AveragePool", {"x"}, {"p"});
  OnnxBuilder::attr_ints(pool, "kernel_shape", {3, 3});
  OnnxBuilder::attr_ints(pool, "dilations", {2, 2});
  const std::string path = b.save(test::temp_dir("newer"), "gelu20");
  Graph g = import_onnx(path);
  EXPECT_EQ(to_string(g.tensors[g.outputs[2]].shape), "1x2x5x5");  // 9 - 2*(3-1)
  HostTensor y = run_both(b, "gelu20", {1, 2, 9, 9});
  HostTensor x = test::random_tensor({1, 2, 9, 9});
  const float v = x.data<float>()[5];
  EXPECT_NEAR(y.data<float>()[5], 0.5f * v * (1 + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v))), 1e-5);
}

// GroupNormalization of opset 21 (scale and bias per channel) and 18 (per
// group), against the formula.
TEST(NewerSchemas, GroupNormalizationPerChannelAndPerGroup) {
  for (int opset : {18, 21}) {
    SCOPED_TRACE(opset);
    const int64_t C = 6, G = 3, HW = 4 * 5;
    const int64_t P = opset >= 21 ? C : G;
    std::vector<float> scale, bias;
    for (int64_t c = 0; c < P; ++c) scale.push_back(0.5f + float(c)), bias.push_back(float(c) - 1);
    OnnxBuilder b(opset);
    b.input("x", {2, C, 4, 5}).output("y");
    b.initializer("scale", {P}, scale);
    b.initializer("bias", {P}, bias);
    auto* n = b.node("GroupNormalization", {"x", "scale", "bias"}, {"y"});
    OnnxBuilder::attr_int(n, "num_groups", G);
    const std::string name = "group_norm" + std::to_string(opset);
    HostTensor y = run_both(b, name, {2, C, 4, 5});
    HostTensor x = test::random_tensor({2, C, 4, 5});
    const float* xs = x.data<float>();
    const int64_t per = C / G * HW;
    for (int64_t n_ = 0; n_ < 2; ++n_)
      for (int64_t g = 0; g < G; ++g) {
        double mean = 0, var = 0;
        const float* base = xs + (n_ * C + g * (C / G)) * HW;
        for (int64_t i = 0; i < per; ++i) mean += base[i];
        mean /= double(per);
        for (int64_t i = 0; i < per; ++i) var += (base[i] - mean) * (base[i] - mean);
        var /= double(per);
        for (int64_t i = 0; i < per; ++i) {
          const int64_t c = g * (C / G) + i / HW, p = opset >= 21 ? c : g;
          const double want = (base[i] - mean) / std::sqrt(var + 1e-5) * scale[p] + bias[p];
          ASSERT_NEAR(y.data<float>()[(n_ * C + g * (C / G)) * HW + i], want, 1e-4);
        }
      }
  }
}
