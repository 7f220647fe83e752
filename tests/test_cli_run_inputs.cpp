// `texplan run` on what users bring: a bare .onnx (seeded random inputs), a
// reference output a wrong run could match (all zeros, constant), and nodes
// that fall back to the CPU, named on the terminal.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "import/onnx_import.h"
#include "onnx_builder.h"
#include "runtime/random_inputs.h"
#include "shell.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace texplan {
namespace {

test::ShellResult run_cli(const std::string& args, bool merge_stderr = true) {
  return test::sh(std::string(TEXPLAN_CLI) + " " + args, merge_stderr);
}

void attr_string(onnx::NodeProto* n, const std::string& name, const std::string& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}

// Token ids into a 7-row embedding, plus a float input: y = emb[ids] + x.
test::OnnxBuilder embedding_model() {
  test::OnnxBuilder b(13);
  b.input("ids", {2, 5}, onnx::TensorProto::INT64).input("x", {2, 5, 3});
  std::vector<float> table(7 * 3);
  for (size_t i = 0; i < table.size(); ++i) table[i] = float(i);
  b.initializer("emb", {7, 3}, table);
  b.node("Gather", {"emb", "ids"}, {"e"});
  b.node("Add", {"e", "x"}, {"y"});
  b.output("y");
  return b;
}

std::string file_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

TEST(RandomInputs, AreSeededAndIndexTheirTableInRange) {
  std::string bytes;
  embedding_model().m.SerializeToString(&bytes);
  Graph g = import_onnx_bytes(bytes, "emb");
  const int ids = g.find("ids");
  EXPECT_EQ(runtime::random_integer_bound(g, ids), 7);
  const auto a = runtime::random_inputs(g, 3), b = runtime::random_inputs(g, 3), c = runtime::random_inputs(g, 4);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].bytes, b[0].bytes);
  EXPECT_EQ(a[1].bytes, b[1].bytes);
  EXPECT_NE(a[1].bytes, c[1].bytes);
  EXPECT_EQ(a[0].dtype, DataType::Int64);
  EXPECT_EQ(to_string(a[0].shape), "2x5");
  for (int64_t v : a[0].as_int64()) EXPECT_TRUE(v >= 0 && v < 7) << v;
  for (float v : a[1].as_float()) EXPECT_TRUE(v >= -1 && v < 1) << v;
}

TEST(RandomInputs, IntegersThatIndexNothingAreBelow100) {
  test::OnnxBuilder b(13);
  b.input("n", {64}, onnx::TensorProto::INT32);
  auto* cast = b.node("Cast", {"n"}, {"y"});
  test::OnnxBuilder::attr_int(cast, "to", onnx::TensorProto::FLOAT);
  b.output("y");
  std::string bytes;
  b.m.SerializeToString(&bytes);
  Graph g = import_onnx_bytes(bytes, "ints");
  for (int64_t v : runtime::random_inputs(g, 0)[0].as_int64()) EXPECT_TRUE(v >= 0 && v < 100) << v;
}

TEST(CliRandomInput, ABareModelRunsOnSeededRandomInputsAndSaysSo) {
  const fs::path dir = test::temp_dir("random-input");
  const std::string model = embedding_model().save(dir, "emb");
  test::ShellResult r = run_cli("run " + model + " --output " + (dir / "default").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("emb: no input given and no test_data_set_0 beside the model: random inputs, seed 0"),
            std::string::npos)
      << r.out;
  r = run_cli("run " + model + " --random-input 0 --output " + (dir / "seed0").string() + " --json " +
              (dir / "r.json").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("no input given"), std::string::npos) << r.out;  // asked for: nothing to say
  std::ifstream j(dir / "r.json");
  EXPECT_EQ(json::parse(j)["random_input_seed"], 0);
  ASSERT_EQ(run_cli("run " + model + " --random-input 9 --output " + (dir / "seed9").string()).code, 0);
  const std::string out0 = file_bytes(dir / "default/output_0.pb");
  EXPECT_FALSE(out0.empty());
  EXPECT_EQ(out0, file_bytes(dir / "seed0/output_0.pb"));
  EXPECT_NE(out0, file_bytes(dir / "seed9/output_0.pb"));
}

TEST(CliRandomInput, RefusesInputFilesAndCheck) {
  const fs::path dir = test::temp_dir("random-input-refusals");
  const std::string model = embedding_model().save(dir, "emb");
  test::ShellResult r = run_cli("run " + model + " --check");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("emb: --check compares with test_data_set_0/output_*.pb"), std::string::npos) << r.out;
  r = run_cli("run " + model + " --random-input 3 --input whatever.pb");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("--input and --random-input exclude each other"), std::string::npos) << r.out;
}

// y = relu(x) * scale + shift, with test data whose output is what the
// model gives: all zeros (scale 0, shift 0), constant (scale 0, shift 3), or
// a real reference (scale 1).
std::string model_with_reference(const fs::path& dir, const std::string& name, float scale, float shift) {
  test::OnnxBuilder b(13);
  b.input("x", {2, 4});
  b.initializer("scale", {}, {scale});
  b.initializer("shift", {}, {shift});
  b.node("Relu", {"x"}, {"r"});
  b.node("Mul", {"r", "scale"}, {"m"});
  b.node("Add", {"m", "shift"}, {"logits"});
  b.output("logits");
  const std::string model = b.save(dir, name);
  fs::create_directories(dir / name / "test_data_set_0");
  HostTensor x(DataType::Float32, {2, 4}), y(DataType::Float32, {2, 4});
  for (int i = 0; i < 8; ++i) {
    x.data<float>()[i] = float(i) - 3.5f;
    y.data<float>()[i] = std::max(0.0f, x.data<float>()[i]) * scale + shift;
  }
  save_tensor_pb(x, "x", (dir / name / "test_data_set_0/input_0.pb").string());
  save_tensor_pb(y, "logits", (dir / name / "test_data_set_0/output_0.pb").string());
  return model;
}

TEST(CliCheck, AZeroOrConstantReferenceIsNoPassUnlessAllowed) {
  const fs::path dir = test::temp_dir("trivial-reference");
  const std::string zero = model_with_reference(dir, "zero_head", 0, 0);
  test::ShellResult r = run_cli("run " + zero + " --check");
  EXPECT_EQ(r.code, 5) << r.out;  // --check failed (docs/cli.md)
  EXPECT_NE(r.out.find("check       reference output_0.pb ('logits') is all zeros: it cannot tell a right run from "
                       "a wrong one"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("texplan: error: zero_head: reference output_0.pb ('logits') is all zeros"), std::string::npos)
      << r.out;
  r = run_cli("run " + zero + " --check --allow-trivial-reference");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("is all zeros: accepted (--allow-trivial-reference)"), std::string::npos) << r.out;

  r = run_cli("run " + model_with_reference(dir, "constant_head", 0, 3) + " --check");
  EXPECT_EQ(r.code, 5) << r.out;  // --check failed (docs/cli.md)
  EXPECT_NE(r.out.find("is constant (every element 3)"), std::string::npos) << r.out;

  r = run_cli("run " + model_with_reference(dir, "real_head", 1, 0) + " --check");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("check       reference"), std::string::npos) << r.out;

  // Neither zero nor constant, but the input moves it by 1e-6 of itself:
  // the shift alone, as GoogLeNet's output was its classifier's bias.
  const std::string bias_only = model_with_reference(dir, "bias_only", 1e-6f, 3);
  r = run_cli("run " + bias_only + " --check --json " + (dir / "bias_only.json").string());
  EXPECT_EQ(r.code, 5) << r.out;
  EXPECT_NE(r.out.find("check       reference output_0.pb ('logits') is the same for another input (a second, random "
                       "input moves it by "),
            std::string::npos)
      << r.out;
  std::ifstream report(dir / "bias_only.json");
  EXPECT_EQ(json::parse(report)["trivial_reference"].size(), 1u);
  r = run_cli("run " + bias_only + " --check --device cpu");  // the reference executor probes too
  EXPECT_EQ(r.code, 5) << r.out;
  r = run_cli("run " + bias_only + " --check --allow-trivial-reference");
  EXPECT_EQ(r.code, 0) << r.out;
}

TEST(CliRun, NamesTheNodesThatFallBackToTheCpu) {
  const fs::path dir = test::temp_dir("fallback-names");
  test::OnnxBuilder b(13);
  b.input("x", {3, 3});
  auto* diag = b.node("Einsum", {"x"}, {"d"}, "diagonal");  // a diagonal stays Einsum: the CPU reference runs it
  attr_string(diag, "equation", "ii->i");
  b.node("Relu", {"d"}, {"y"});
  b.output("y");
  test::ShellResult r = run_cli("run " + b.save(dir, "diag") + " --random-input", false);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("cpu fallback 1 node(s): diagonal (Einsum)\n"), std::string::npos) << r.out;
}

TEST(CliRun, InferenceDropoutsLeaveNothingForTheCpu) {
  const fs::path dir = test::temp_dir("dropout-run");
  test::OnnxBuilder b(13);
  b.input("x", {2, 8});
  b.node("Relu", {"x"}, {"r"});
  b.node("Dropout", {"r"}, {"d"});
  b.node("Sigmoid", {"d"}, {"y"});
  b.output("y");
  test::ShellResult r = run_cli("run " + b.save(dir, "dropout") + " --random-input 1", false);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("cpu fallback"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace texplan
