// Winograd convolutions on CPU devices (lower/opencl_cpu/winograd.cpp,
// src/kernels/cpu_winograd.cl) on PoCL against the CPU reference: every
// variant (F(2x2) and F(4x4), register blocks, tile blocks of 8 and 16)
// named on odd sizes, pads 0, 1 and asymmetric, channel counts that cut
// the blocks and chunks, no bias, batch 2, fused epilogues (a residual Add,
// one with no vector form); the transformed weights counted in the
// session's weights; and the shape rule's own choice.
#include <gtest/gtest.h>

#include "lower/opencl_cpu/lowerings.h"
#include "lower/tuning.h"
#include "one_node.h"
#include "optimize/usage.h"
#include "plan/memory_plan.h"
#include "reference/reference_ops.h"
#include "runtime/session.h"
#include "test_util.h"

using namespace texplan;
using test::random_tensor;
using test::rel_error;

namespace {

// One Conv/FusedConv node: input 0 fed, input 1 the weights, input 2 the
// bias (an empty shape: none), input 3 a fed residual when given.
struct Case {
  std::string op;
  std::vector<Shape> inputs;
  std::map<std::string, Attribute> attrs;
};

struct Result {
  HostTensor got, want;
  int64_t weight_bytes = 0;
};

// `variant`: KernelChoice::cpu_winograd ("": the shape rule's choice).
Result run(const Case& c, const std::string& variant = "") {
  const test::OneNode n =
      test::one_node({c.op, c.inputs, c.attrs, {true, false, false, true}}, "cpu_winograd", 17, 31);
  const test::OneNodeRun r =
      test::run_one_node(n, runtime::open_device("pocl"), {.kernel_choice = {.cpu_winograd = variant}});
  return {r.got, n.want, r.weight_bytes};
}

std::map<std::string, Attribute> pads(std::vector<int64_t> p) { return {{"pads", Attribute::of_ints(p)}}; }

void expect_matches(const Case& c, const std::string& variant) {
  SCOPED_TRACE(variant);
  Result r = run(c, variant);
  ASSERT_EQ(r.got.shape, r.want.shape);
  EXPECT_LE(rel_error(r.got, r.want), 1e-5);
}

// Small blocks (16 output channels a work-group, 4 input channels a chunk)
// so the test shapes cut every one of them.
std::vector<std::string> variants() {
  std::vector<std::string> v;
  for (const char* m : {"f2", "f4"})
    for (const char* block : {"4x8", "16x16"}) v.push_back(std::string(m) + " " + block + " w16 c4");
  v.push_back("f4 8x8 w16 c4");
  v.push_back("f2 8x8 w16 c4");  // 8-float SIMD's (AVX2) shape rule
  v.push_back("f4 4x16 w16 c4");
  v.push_back("f4 8x16 w64 c32");
  return v;
}

}  // namespace

TEST(CpuWinograd, EveryVariantOnOddShapesAndPads) {
  // 13x11 with pad 1: ragged tiles in both directions; C 5 cuts the chunk of
  // 4, OC 20 the group of 16 and the register blocks.
  const Case pad1{"Conv", {{1, 5, 13, 11}, {20, 5, 3, 3}, {20}}, pads({1, 1, 1, 1})};
  // No padding: OH, OW = 7, 9.
  const Case pad0{"Conv", {{1, 6, 9, 11}, {7, 6, 3, 3}, {7}}, {}};
  // Asymmetric (top 0, left 1, bottom 2, right 1), no bias, batch 2.
  const Case asym{"Conv", {{2, 9, 10, 37}, {18, 9, 3, 3}}, pads({0, 1, 2, 1})};
  for (const std::string& v : variants()) {
    expect_matches(pad1, v);
    expect_matches(pad0, v);
    expect_matches(asym, v);
  }
}

TEST(CpuWinograd, WideRowsAndFusedEpilogues) {
  // 70 columns: several tile blocks a row, the last cut; relu(conv + bias + residual).
  const Case residual{"FusedConv",
                      {{1, 12, 19, 70}, {24, 12, 3, 3}, {24}, {1, 24, 19, 70}},
                      {{"pads", Attribute::of_ints({1, 1, 1, 1})}, {"program", Attribute::of_strings({"Add x0 x1", "Relu t0"})}}};
  // Sign has no vector form: the epilogue runs element by element.
  const Case scalar{"FusedConv",
                    {{1, 8, 15, 21}, {16, 8, 3, 3}, {16}},
                    {{"pads", Attribute::of_ints({1, 1, 1, 1})}, {"program", Attribute::of_strings({"Sign x0"})}}};
  for (const std::string v : {"f2 8x16 w16 c4", "f4 8x16 w16 c4", "f4 4x8 w64 c32", "direct"}) {
    expect_matches(residual, v);
    expect_matches(scalar, v);
  }
}

// The direct kernel's weights (conv2d_ocvec_cpu, its shape rule's block for
// OC output channels on W columns): packed by block of output channels, zeros
// up to a whole block and one block of zeros after them; then the bias.
int64_t direct_weight_bytes(int64_t OC, int64_t C, int64_t W) {
  const lower::CpuVariant v =
      lower::conv_ocvec_candidates(OC, W, runtime::open_device("pocl")->info().native_float_width)[0];
  const int64_t ocv = int64_t(v.pb) * v.nv;
  return ((OC + ocv - 1) / ocv * ocv * C * 9 + ocv + OC) * 4;
}

TEST(CpuWinograd, TransformedWeightsCountAsWeights) {
  const Case c{"Conv", {{1, 16, 16, 16}, {20, 16, 3, 3}, {20}}, pads({1, 1, 1, 1})};
  EXPECT_EQ(run(c, "direct").weight_bytes, direct_weight_bytes(20, 16, 16));
  // In place of the originals (never uploaded): 16 (F(2x2)) or 36 (F(4x4))
  // values per filter, OC rounded up to 16; the bias as it is.
  for (auto [variant, points] : {std::pair{"f2 8x16 w16 c4", 16}, std::pair{"f4 8x16 w16 c4", 36}}) {
    Result r = run(c, variant);
    EXPECT_EQ(r.weight_bytes, int64_t(points) * 32 * 16 * 4 + 20 * 4) << variant;
    EXPECT_LE(rel_error(r.got, r.want), 1e-5);
  }
}

// Tuning times every variant, the direct kernel (its own packed copy) and
// F(2x2) and F(4x4) (each its own transformed copy): the
// session keeps the one copy the chosen variant reads, whichever it is.
TEST(CpuWinograd, TuningKeepsOnlyTheChosenWeights) {
  lower::TuningCache cache;  // in memory
  auto dev = runtime::open_device("pocl");
  lower::TuningScope scope(&cache, true, *dev);
  Result r = run({"Conv", {{1, 32, 16, 16}, {32, 32, 3, 3}, {32}}, pads({1, 1, 1, 1})});
  EXPECT_LE(rel_error(r.got, r.want), 1e-5);
  const int64_t bias = 32 * 4;
  EXPECT_TRUE(r.weight_bytes == direct_weight_bytes(32, 32, 16) || r.weight_bytes == 16 * 32 * 32 * 4 + bias ||
              r.weight_bytes == 36 * 32 * 32 * 4 + bias)
      << r.weight_bytes << " bytes: more than one copy of the weights";
}

TEST(CpuWinograd, ShapeRuleChoiceMatchesAndBadNamesAreRejected) {
  // A U-Net-like layer (Winograd by the shape rule) and a thin one (direct:
  // 4 output channels of 16 would be computed).
  Result unet = run({"Conv", {{1, 32, 32, 32}, {32, 32, 3, 3}, {32}}, pads({1, 1, 1, 1})});
  EXPECT_LE(rel_error(unet.got, unet.want), 1e-5);
  EXPECT_EQ(unet.weight_bytes, (36 * 32 * 32 + 32) * 4);  // F(4x4)'s weights: Winograd ran
  Result thin = run({"Conv", {{1, 3, 12, 12}, {4, 3, 3, 3}, {4}}, pads({1, 1, 1, 1})});
  EXPECT_LE(rel_error(thin.got, thin.want), 1e-5);
  EXPECT_EQ(thin.weight_bytes, (4 * 3 * 9 + 4) * 4);  // the original weights: the direct kernel ran
  EXPECT_THROW(lower::check_cpu_winograd_variant("f3 8x16 w64 c32"), Error);
  EXPECT_THROW(lower::check_cpu_winograd_variant("f4 8x16 w60 c32"), Error);
  EXPECT_THROW(run({"Conv", {{1, 3, 12, 12}, {4, 3, 3, 3}, {4}}, pads({1, 1, 1, 1})}, "f4 8x16"), Error);  // the session checks
}
