// texplan::Session, the one-call API (include/texplan/texplan.h): the same
// bytes as the CLI, correct outputs, one compilation per input shape, and
// a texplan::Error naming the model for every bad argument.
#include <gtest/gtest.h>
#include <texplan/texplan.h>

#include <cstdlib>
#include <filesystem>

#include "test_util.h"

namespace fs = std::filesystem;
using texplan::test::rel_error;

namespace {

const fs::path kSource = TEXPLAN_SOURCE_DIR;
const std::string kTiny = (kSource / "examples" / "models" / "tiny_cnn").string();
const fs::path kDynBatch = kSource / "tests" / "fixtures" / "exported" / "cnn_bn_dynamo_dynbatch";

std::string test_device() {
  const char* spec = std::getenv("TEXPLAN_TEST_DEVICE");
  return spec ? spec : "pocl";
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const texplan::Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(Facade, RunsTinyCnnWithTheCliBytes) {
  texplan::Session s(kTiny, {.device = test_device()});
  ASSERT_EQ(s.inputs().size(), 1u);
  EXPECT_EQ(s.inputs()[0].name, "input");
  EXPECT_EQ(texplan::to_string(s.inputs()[0].dims), "1x3x32x32");
  ASSERT_EQ(s.outputs().size(), 1u);
  EXPECT_EQ(s.outputs()[0].name, "output");

  const texplan::HostTensor x = texplan::load_tensor(kTiny + "/test_data_set_0/input_0.pb");
  const texplan::HostTensor want = texplan::load_tensor(kTiny + "/test_data_set_0/output_0.pb");
  std::vector<texplan::HostTensor> y = s.run({x});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_EQ(texplan::to_string(y[0].shape), "1x10");
  EXPECT_LT(rel_error(y[0], want), 1e-4);

  // `texplan plan examples/models/tiny_cnn` plans 32768 B (test_packaging, docs).
  const texplan::MemoryReport m = s.memory();
  EXPECT_EQ(m.activation_bytes, 32768);
  EXPECT_EQ(m.lower_bound_bytes, 32768);
  EXPECT_EQ(m.buffer_lower_bound_bytes, 32768);
  EXPECT_GT(m.weight_bytes, 0);
  EXPECT_GE(m.pools, 1);
  EXPECT_EQ(s.precision(), "fp32");
  EXPECT_FALSE(s.device_name().empty());
  EXPECT_EQ(s.compilations(), 1);

  std::map<std::string, texplan::HostTensor> named = s.run(std::map<std::string, texplan::HostTensor>{{"input", x}});
  ASSERT_EQ(named.count("output"), 1u);
  EXPECT_EQ(rel_error(named.at("output"), y[0]), 0.0);
  EXPECT_EQ(s.compilations(), 1);
}

TEST(Facade, GuardedRunHoldsThePlan) {
  texplan::Session s(kTiny, {.device = test_device(), .guard = true});
  s.run({texplan::load_tensor(kTiny + "/test_data_set_0/input_0.pb")});
  EXPECT_TRUE(s.guard_violations().empty());
}

TEST(Facade, SymbolicBatchCompilesOncePerShape) {
  texplan::Session s(kDynBatch.string(), {.device = test_device()});
  ASSERT_EQ(s.inputs().size(), 1u);
  EXPECT_LT(s.inputs()[0].dims[0], 0);
  EXPECT_EQ(s.inputs()[0].symbols[0], "batch");
  EXPECT_NE(error_of([&] { s.memory(); }).find("run it once first"), std::string::npos);
  for (const char* set : {"test_data_set_0", "test_data_set_1", "test_data_set_0"}) {
    SCOPED_TRACE(set);
    const fs::path dir = kDynBatch / set;
    std::vector<texplan::HostTensor> y = s.run({texplan::load_tensor((dir / "input_0.pb").string())});
    ASSERT_EQ(y.size(), 1u);
    EXPECT_LT(rel_error(y[0], texplan::load_tensor((dir / "output_0.pb").string())), 1e-4);
  }
  EXPECT_EQ(s.compilations(), 2);  // the two sets have different batches
  EXPECT_GT(s.memory().activation_bytes, 0);

  texplan::Session fixed(kDynBatch.string(), {.device = test_device(), .dims = {{"batch", 2}}});
  EXPECT_EQ(fixed.compilations(), 1);  // static once the batch is given: compiled up front
}

TEST(Facade, BadArgumentsNameTheModelAndTheReason) {
  const std::string dev = test_device();
  EXPECT_NE(error_of([&] { texplan::Session("/nonexistent/model.onnx", {.device = dev}); }).find("no such model file"),
            std::string::npos);
  EXPECT_NE(error_of([&] { texplan::Session(kTiny, {.device = dev, .textures = "bogus"}); }).find("bogus"),
            std::string::npos);
  EXPECT_NE(error_of([&] { texplan::Session(kTiny, {.device = dev, .precision = "fp8"}); }).find("fp8"),
            std::string::npos);
  EXPECT_NE(error_of([&] { texplan::Session(kTiny, {.device = dev, .dims = {{"batch", 2}}}); }).find("'batch'"),
            std::string::npos);
  EXPECT_NE(error_of([&] { texplan::Session(kTiny, {.device = "opencl:999"}); }), "(no error)");

  texplan::Session s(kTiny, {.device = dev});
  const std::string missing = error_of([&] { s.run(std::map<std::string, texplan::HostTensor>{}); });
  EXPECT_NE(missing.find("tiny_cnn"), std::string::npos) << missing;
  EXPECT_NE(missing.find("'input'"), std::string::npos) << missing;
  const std::string unknown = error_of([&] {
    s.run(std::map<std::string, texplan::HostTensor>{
        {"input", texplan::load_tensor(kTiny + "/test_data_set_0/input_0.pb")}, {"extra", texplan::HostTensor()}});
  });
  EXPECT_NE(unknown.find("'extra' is not an input"), std::string::npos) << unknown;
  const std::string shape = error_of([&] { s.run({texplan::HostTensor(texplan::DataType::Float32, {1, 3, 8, 8})}); });
  EXPECT_NE(shape.find("input"), std::string::npos) << shape;
  EXPECT_NE(shape, "(no error)");
}

TEST(Facade, VersionIsTheProjects) { EXPECT_STREQ(texplan::version(), "0.1.0"); }
