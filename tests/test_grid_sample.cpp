// GridSample (reference/resize.cpp and shape.cl grid_sample_f32) against
// PyTorch's grid_sample on the same X and grid: every mode, padding and
// align_corners it runs (tests/fixtures/grid_sample/cases.json, written by
// scripts/grid_sample_cases.py), on the CPU reference and on PoCL; modes it
// does not run end in the reference's error naming them.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "one_node.h"

using namespace texplan;
using nlohmann::json;

namespace {

json cases() {
  std::ifstream f(std::string(TEXPLAN_SOURCE_DIR) + "/tests/fixtures/grid_sample/cases.json");
  return json::parse(f);
}

HostTensor tensor(const json& shape, const json& values) {
  HostTensor t(DataType::Float32, shape.get<Shape>());
  const std::vector<float> v = values.get<std::vector<float>>();
  EXPECT_EQ(int64_t(v.size()), t.count());
  std::copy(v.begin(), v.end(), t.data<float>());
  return t;
}

test::NodeCase grid_case(const json& j, const json& c) {
  return {"GridSample",
          {j["x_shape"].get<Shape>(), j["grid_shape"].get<Shape>()},
          {{"mode", Attribute::of_string(c["mode"].get<std::string>())},
           {"padding_mode", Attribute::of_string(c["padding_mode"].get<std::string>())},
           {"align_corners", Attribute::of_int(c["align_corners"].get<int64_t>())}},
          {true, true}};
}

std::string what(const json& c) {
  return c["mode"].get<std::string>() + " " + c["padding_mode"].get<std::string>() + " align_corners " +
         std::to_string(c["align_corners"].get<int>());
}

}  // namespace

TEST(GridSample, ReferenceMatchesPyTorch) {
  const json j = cases();
  const HostTensor x = tensor(j["x_shape"], j["x"]), grid = tensor(j["grid_shape"], j["grid"]);
  ASSERT_EQ(j["cases"].size(), 12u);
  for (const json& c : j["cases"]) {
    Node n;
    n.name = "gs";
    n.op_type = "GridSample";
    n.attrs = grid_case(j, c).attrs;
    n.outputs = {0};
    const HostTensor got = reference::evaluate(n, {&x, &grid}).at(0);
    const HostTensor want = tensor(j["y_shape"], c["y"]);
    ASSERT_EQ(got.shape, want.shape) << what(c);
    EXPECT_LE(test::rel_error(got, want), 1e-5) << what(c);
  }
}

TEST(GridSample, KernelOnPoclMatchesPyTorch) {
  const json j = cases();
  for (const json& c : j["cases"]) {
    test::OneNode n = test::one_node(grid_case(j, c), "grid_sample", 16, 5);
    n.feeds = {tensor(j["x_shape"], j["x"]), tensor(j["grid_shape"], j["grid"])};
    const test::OneNodeRun r = test::run_one_node(n, runtime::open_device("pocl"), {});
    const HostTensor want = tensor(j["y_shape"], c["y"]);
    ASSERT_EQ(r.got.shape, want.shape) << what(c);
    EXPECT_LE(test::rel_error(r.got, want), 1e-5) << what(c);
  }
}

TEST(GridSample, OpsetTwentyLinearIsBilinear) {
  // Opset 20 renamed bilinear to linear: the same kernel and values.
  const json j = cases();
  for (const json& c : j["cases"]) {
    if (c["mode"] != "bilinear") continue;
    test::NodeCase nc = grid_case(j, c);
    nc.attrs["mode"] = Attribute::of_string("linear");
    test::OneNode n = test::one_node(nc, "grid_sample_20", 20, 5);
    n.feeds = {tensor(j["x_shape"], j["x"]), tensor(j["grid_shape"], j["grid"])};
    const test::OneNodeRun r = test::run_one_node(n, runtime::open_device("pocl"), {});
    EXPECT_LE(test::rel_error(r.got, tensor(j["y_shape"], c["y"])), 1e-5) << what(c);
  }
}

TEST(GridSample, FormsItDoesNotRunAreNamed) {
  const json j = cases();
  const HostTensor x = tensor(j["x_shape"], j["x"]), grid = tensor(j["grid_shape"], j["grid"]);
  Node n;
  n.name = "gs";
  n.op_type = "GridSample";
  n.outputs = {0};
  for (const char* mode : {"bicubic", "cubic"}) {  // opsets 16 and 20
    n.attrs = {{"mode", Attribute::of_string(mode)}};
    try {
      reference::evaluate(n, {&x, &grid});
      FAIL() << mode << " ran";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("mode '" + std::string(mode) + "' is not supported"), std::string::npos)
          << e.what();
    }
  }
  n.attrs = {};
  const HostTensor flat(DataType::Float32, {2, 4, 7});
  try {
    reference::evaluate(n, {&x, &flat});
    FAIL() << "a 3-D grid ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("grid must be [N, Ho, Wo, 2]"), std::string::npos) << e.what();
  }
}
