// texplan tune and run --tuning-cache / --profile through the CLI, on PoCL:
// a tuned run gives the reference's outputs, a second tune finds every shape
// cached, the profile names its operators with rates. Tuning builds every
// candidate of every shape (tiny_cnn's 7 shapes are 60 programs, minutes with
// PoCL's caches cold), so the tuning test takes one depthwise convolution.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "import/onnx_import.h"
#include "onnx_builder.h"
#include "shell.h"

namespace {

const std::string kModel = std::string(TEXPLAN_SOURCE_DIR) + "/examples/models/tiny_cnn";

texplan::test::ShellResult cli(const std::string& args) {
  return texplan::test::sh(std::string(TEXPLAN_CLI) + " " + args + " 2>&1");
}

nlohmann::json read_json(const std::filesystem::path& p) { return nlohmann::json::parse(std::ifstream(p)); }

// x[1,16,9,9] -> depthwise 3x3 Conv (pads 1) -> Relu: one shape to tune
// (3 candidates on PoCL), with its test data (the output computed here).
std::string depthwise_model(const std::filesystem::path& dir) {
  const int C = 16, H = 9, W = 9;
  texplan::test::OnnxBuilder b;
  b.input("x", {1, C, H, W}).output("y");
  std::vector<float> w(C * 9), bias(C);
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(int(i * 7 % 13) - 6) / 16.0f;
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = float(i % 5) / 8.0f;
  b.initializer("w", {C, 1, 3, 3}, w);
  b.initializer("b", {C}, bias);
  auto* conv = b.node("Conv", {"x", "w", "b"}, {"c"});
  texplan::test::OnnxBuilder::attr_int(conv, "group", C);
  texplan::test::OnnxBuilder::attr_ints(conv, "pads", {1, 1, 1, 1});
  b.node("Relu", {"c"}, {"y"});
  b.save(dir, "depthwise");
  texplan::HostTensor x(texplan::DataType::Float32, {1, C, H, W}), y(texplan::DataType::Float32, {1, C, H, W});
  const float* xv = x.data<float>();
  for (int i = 0; i < C * H * W; ++i) x.data<float>()[i] = float(i * 5 % 17) / 8.0f - 1.0f;
  for (int c = 0; c < C; ++c)
    for (int r = 0; r < H; ++r)
      for (int q = 0; q < W; ++q) {
        float a = bias[c];
        for (int kr = 0; kr < 3; ++kr)
          for (int kq = 0; kq < 3; ++kq) {
            const int ir = r + kr - 1, iq = q + kq - 1;
            if (ir >= 0 && ir < H && iq >= 0 && iq < W) a += w[c * 9 + kr * 3 + kq] * xv[(c * H + ir) * W + iq];
          }
        y.data<float>()[(c * H + r) * W + q] = a > 0 ? a : 0;
      }
  const std::filesystem::path data = dir / "depthwise" / "test_data_set_0";
  std::filesystem::create_directories(data);
  texplan::save_tensor_pb(x, "x", (data / "input_0.pb").string());
  texplan::save_tensor_pb(y, "y", (data / "output_0.pb").string());
  return (dir / "depthwise").string();
}

}  // namespace

TEST(CliTune, SecondTuneFindsEverythingCachedAndTunedRunsMatch) {
  auto dir = std::filesystem::temp_directory_path() / ("texplan-tune-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string cache = (dir / "tuning.json").string();
  const std::string model = depthwise_model(dir);

  auto first = cli("tune " + model + " --tuning-cache " + cache + " --check --json " + (dir / "t1.json").string());
  ASSERT_EQ(first.code, 0) << first.out;
  nlohmann::json t1 = read_json(dir / "t1.json");
  EXPECT_GT(t1["tuning"]["searched"].get<int>(), 0) << first.out;
  EXPECT_LE(t1["rel_error"].get<double>(), 1e-4);
  nlohmann::json c = read_json(cache);
  EXPECT_EQ(c["format"], "texplan-tuning-cache-1");
  ASSERT_TRUE(c.contains("texplan"));

  auto second = cli("tune " + model + " --tuning-cache " + cache + " --json " + (dir / "t2.json").string());
  ASSERT_EQ(second.code, 0) << second.out;
  nlohmann::json t2 = read_json(dir / "t2.json");
  EXPECT_EQ(t2["tuning"]["searched"].get<int>(), 0) << second.out;
  EXPECT_EQ(t2["tuning"]["cached"].get<int>(), t1["tuning"]["searched"].get<int>());

  auto run = cli("run " + model + " --tuning-cache " + cache + " --check --output " + (dir / "tuned").string());
  ASSERT_EQ(run.code, 0) << run.out;
  EXPECT_NE(run.out.find("0 node shape(s) measured"), std::string::npos) << run.out;
  auto plain = cli("run " + model + " --check --output " + (dir / "plain").string());
  ASSERT_EQ(plain.code, 0) << plain.out;

  auto missing = cli("tune " + model);
  EXPECT_NE(missing.code, 0);
  EXPECT_NE(missing.out.find("--tuning-cache"), std::string::npos) << missing.out;
  std::filesystem::remove_all(dir);
}

TEST(CliTune, ProfileReportsOperatorsWithRates) {
  auto dir = std::filesystem::temp_directory_path() / ("texplan-profile-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto r = cli("run " + kModel + " --profile --json " + (dir / "p.json").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("GFLOP/s"), std::string::npos) << r.out;
  nlohmann::json p = read_json(dir / "p.json")["profile"];
  EXPECT_GT(p["ceilings"]["gbps"].get<double>(), 0);
  EXPECT_GT(p["ceilings"]["gflops"].get<double>(), 0);
  EXPECT_GT(p["launches"].get<int>(), 0);
  // The span holds every kernel: at least their sum, the rest idle.
  EXPECT_GE(p["span_ms"].get<double>(), p["device_ms"].get<double>() * (1 - 1e-6)) << p.dump(1);
  EXPECT_NEAR(p["idle_ms"].get<double>(), p["span_ms"].get<double>() - p["device_ms"].get<double>(), 1e-6);
  ASSERT_FALSE(p["ops"].empty());
  double share = 0, last = 1e300;
  bool conv_flops = false;
  for (const auto& o : p["ops"]) {
    share += o["share"].get<double>();
    EXPECT_LE(o["ms"].get<double>(), last);  // sorted, longest first
    last = o["ms"].get<double>();
    if (o["op"].get<std::string>().find("Conv") != std::string::npos) conv_flops = o["flops"].get<double>() > 0;
  }
  EXPECT_NEAR(share, 1.0, 1e-6);
  EXPECT_TRUE(conv_flops) << p.dump(1);
  std::filesystem::remove_all(dir);
}
