// Patch-based execution (optimize/patch.h, docs/patching.md): receptive
// fields through convolutions and pools, the rewritten graph's bound, and
// patched runs that compute what unpatched ones do.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "import/onnx_import.h"
#include "lower/lower.h"
#include "optimize/optimize.h"
#include "optimize/patch.h"
#include "optimize/usage.h"
#include "pipeline/pipeline.h"
#include "plan/memory_plan.h"
#include "runtime/session.h"
#include "test_util.h"

using namespace texplan;

namespace {

int tensor(Graph& g, const std::string& name, Shape s) {
  Tensor t;
  t.name = name;
  t.shape = std::move(s);
  return g.add_tensor(std::move(t));
}
int weight(Graph& g, const std::string& name, Shape s, std::mt19937& rng) {
  Tensor t;
  t.name = name;
  t.shape = s;
  t.is_constant = true;
  t.has_data = true;
  t.value = test::random_tensor(s, rng, -0.5f, 0.5f);
  return g.add_tensor(std::move(t));
}
void node(Graph& g, const std::string& op, std::vector<int> in, std::vector<int> out,
          std::map<std::string, Attribute> attrs = {}) {
  Node n;
  n.name = op + "_" + std::to_string(g.nodes.size());
  n.op_type = op;
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  n.attrs = std::move(attrs);
  g.nodes.push_back(std::move(n));
}
std::map<std::string, Attribute> conv_attrs(int64_t k, int64_t s, int64_t p, int64_t d = 1, int64_t group = 1) {
  return {{"kernel_shape", Attribute::of_ints({k, k})},
          {"strides", Attribute::of_ints({s, s})},
          {"pads", Attribute::of_ints({p, p, p, p})},
          {"dilations", Attribute::of_ints({d, d})},
          {"group", Attribute::of_int(group)}};
}

// x [1, C, H, W] through convolutions of (kernel, stride, pad, dilation, groups).
struct Chain {
  Graph g;
  std::vector<int> ts;  // x, then each conv's output
};
Chain conv_chain(int64_t C, int64_t H, const std::vector<std::array<int64_t, 5>>& convs) {
  std::mt19937 rng(1);
  Chain c;
  c.g.model_name = "chain";
  int x = tensor(c.g, "x", {1, C, H, H});
  c.g.tensors[x].is_input = true;
  c.g.inputs = {x};
  c.ts.push_back(x);
  int64_t h = H;
  for (size_t i = 0; i < convs.size(); ++i) {
    const auto [k, s, p, d, group] = convs[i];
    h = (h + 2 * p - d * (k - 1) - 1) / s + 1;
    int w = weight(c.g, "w" + std::to_string(i), {C, C / group, k, k}, rng);
    int y = tensor(c.g, "y" + std::to_string(i), {1, C, h, h});
    node(c.g, "Conv", {c.ts.back(), w}, {y}, conv_attrs(k, s, p, d, group));
    c.ts.push_back(y);
  }
  c.g.outputs = {c.ts.back()};
  c.g.tensors[c.ts.back()].is_output = true;
  c.g.topological_sort();
  return c;
}

Region input_of(const Chain& c, const Region& out) {
  auto regs = required_regions(c.g, 0, int(c.g.nodes.size()), {{c.ts.back(), out}});
  return regs[c.ts.front()];
}

}  // namespace

TEST(PatchRegions, OneConv3x3HasHaloOne) {
  Chain c = conv_chain(2, 16, {{3, 1, 1, 1, 1}});
  EXPECT_EQ(input_of(c, {4, 8, 4, 8}), (Region{3, 9, 3, 9}));
  // At the border the window is clamped: the padding stands for the rest.
  EXPECT_EQ(input_of(c, {0, 4, 12, 16}), (Region{0, 5, 11, 16}));
}

TEST(PatchRegions, TwoConvs3x3HaveHaloTwo) {
  Chain c = conv_chain(2, 16, {{3, 1, 1, 1, 1}, {3, 1, 1, 1, 1}});
  EXPECT_EQ(input_of(c, {4, 8, 4, 8}), (Region{2, 10, 2, 10}));
}

TEST(PatchRegions, StrideTwoDoublesTheHaloBeforeIt) {
  // conv 3x3 s1 then conv 3x3 s2: output rows [2, 4) of the 8x8 map read
  // rows [3, 8) of the 16x16 one (2*2-1 .. 2*3-1+2), which read [2, 9).
  Chain c = conv_chain(2, 16, {{3, 1, 1, 1, 1}, {3, 2, 1, 1, 1}});
  auto regs = required_regions(c.g, 0, 2, {{c.ts[2], {2, 4, 2, 4}}});
  EXPECT_EQ(regs[c.ts[1]], (Region{3, 8, 3, 8}));
  EXPECT_EQ(regs[c.ts[0]], (Region{2, 9, 2, 9}));
}

TEST(PatchRegions, DilationAndGroups) {
  // 3x3 dilation 2 pad 2: a halo of 2; grouping changes nothing spatially.
  Chain c = conv_chain(4, 16, {{3, 1, 2, 2, 2}});
  EXPECT_EQ(input_of(c, {4, 8, 4, 8}), (Region{2, 10, 2, 10}));
}

TEST(PatchRegions, GlobalPoolingEndsTheSegment) {
  Chain c = conv_chain(2, 8, {{3, 1, 1, 1, 1}});
  int y = tensor(c.g, "pooled", {1, 2, 1, 1});
  node(c.g, "GlobalAveragePool", {c.ts.back()}, {y});
  c.g.tensors[c.ts.back()].is_output = false;
  c.g.outputs = {y};
  c.g.tensors[y].is_output = true;
  c.g.topological_sort();
  EXPECT_FALSE(patchable(c.g, c.g.nodes[1]));
  EXPECT_THROW(required_regions(c.g, 0, 2, {{y, {0, 1, 0, 1}}}), Error);
}

TEST(PatchOptions, Parse) {
  EXPECT_EQ(parse_patch("off").mode, PatchOptions::Mode::Off);
  EXPECT_EQ(parse_patch("auto").mode, PatchOptions::Mode::Auto);
  PatchOptions o = parse_patch("3x4");
  EXPECT_EQ(o.mode, PatchOptions::Mode::Grid);
  EXPECT_EQ(o.rows, 3);
  EXPECT_EQ(o.cols, 4);
  EXPECT_THROW(parse_patch("1x1"), Error);
  EXPECT_THROW(parse_patch("4x"), Error);
  EXPECT_THROW(parse_patch("17x2"), Error);
}

// A stem that holds the peak: 3 -> 16 channels at 64x64, a 3x3 conv at
// full resolution, then stride-2 convs down to 8x8, global pooling.
Graph stem_model() {
  std::mt19937 rng(2);
  Graph g;
  g.model_name = "stem";
  int x = tensor(g, "x", {1, 3, 64, 64});
  g.tensors[x].is_input = true;
  g.inputs = {x};
  int a = tensor(g, "a", {1, 16, 64, 64});
  node(g, "Conv", {x, weight(g, "w0", {16, 3, 3, 3}, rng), weight(g, "b0", {16}, rng)}, {a}, conv_attrs(3, 1, 1));
  int ar = tensor(g, "ar", {1, 16, 64, 64});
  node(g, "Relu", {a}, {ar});
  int b = tensor(g, "b", {1, 16, 64, 64});
  node(g, "Conv", {ar, weight(g, "w1", {16, 1, 3, 3}, rng)}, {b}, conv_attrs(3, 1, 1, 1, 16));
  int s = tensor(g, "s", {1, 16, 64, 64});
  node(g, "Add", {b, ar}, {s});  // a residual: `ar` is read with and without a halo
  int c = tensor(g, "c", {1, 16, 32, 32});
  node(g, "Conv", {s, weight(g, "w2", {16, 16, 3, 3}, rng)}, {c}, conv_attrs(3, 2, 1));
  int m = tensor(g, "m", {1, 16, 16, 16});
  node(g, "MaxPool", {c}, {m},
       {{"kernel_shape", Attribute::of_ints({3, 3})}, {"strides", Attribute::of_ints({2, 2})},
        {"pads", Attribute::of_ints({1, 1, 1, 1})}});
  int d = tensor(g, "d", {1, 32, 8, 8});
  node(g, "Conv", {m, weight(g, "w3", {32, 16, 3, 3}, rng)}, {d}, conv_attrs(3, 2, 1));
  int p = tensor(g, "p", {1, 32, 1, 1});
  node(g, "GlobalAveragePool", {d}, {p});
  g.outputs = {p};
  g.tensors[p].is_output = true;
  g.topological_sort();
  return g;
}

TEST(PatchPlan, StemBoundDropsAndStaysAboveWhatMustLive) {
  Graph g = stem_model();
  optimize(g, {});
  const int64_t before = graph_lower_bound(g);
  PatchReport r = apply_patching(g, parse_patch("auto"));
  ASSERT_TRUE(r.applied) << r.reason;
  EXPECT_EQ(r.bound_without, before);
  EXPECT_LT(r.bound_with, before / 2);
  EXPECT_EQ(r.bound_with, graph_lower_bound(g));
  // The input stays live through every patch; the segment's output is whole.
  int64_t outputs = 0;
  for (const auto& s : r.segments)
    for (const auto& name : s.outputs) outputs += g.tensors[g.find(name)].bytes();
  EXPECT_GE(r.bound_with, 3 * 64 * 64 * 4 + outputs);
  EXPECT_GT(r.extra_flops_pct(), 0.0);
  EXPECT_LE(r.extra_flops_pct(), 50.0);
  // The planner's records of the rewritten graph validate with `best` at the bound.
  PlanInput pin = make_usage_records(g);
  plan::DeviceProfile dev = plan::DeviceProfile::load("pocl");
  plan::MemoryPlan p = plan::plan_memory(pin.records, dev, "best");
  plan::validate(p, pin.records, dev);
  EXPECT_LE(p.total_bytes(), plan::lower_bound_bytes(pin.records) * 101 / 100);  // alignment
}

TEST(PatchPlan, OffAndUselessGridsLeaveTheGraph) {
  Graph g = stem_model();
  optimize(g, {});
  const size_t nodes = g.nodes.size();
  EXPECT_FALSE(apply_patching(g, parse_patch("off")).applied);
  EXPECT_EQ(g.nodes.size(), nodes);
  Graph h = conv_chain(2, 8, {{1, 1, 0, 1, 1}}).g;  // one node: patching only adds the input's life
  PatchReport r = apply_patching(h, parse_patch("2x2"));
  EXPECT_FALSE(r.applied);
  EXPECT_EQ(h.nodes.size(), 1u);
}

namespace {
std::vector<HostTensor> run_on_pocl(const Graph& g, const HostTensor& x, bool guard) {
  PlanInput pin = make_usage_records(g);
  plan::MemoryPlan p = plan::plan_memory(pin.records, plan::DeviceProfile::load("pocl"), "best");
  runtime::SessionOptions o;
  o.guard = guard;
  runtime::Session s(g, pin, p, "pocl", o);
  std::vector<HostTensor> y = s.run({x});
  for (const auto& v : s.guard_violations()) ADD_FAILURE() << v;
  return y;
}
}  // namespace

// Patched runs compute what the unpatched graph does: uneven tiles (64
// rows in 3), a residual read with and without a halo, a fused pool, and
// the plan's pools guarded.
TEST(PatchRun, PatchedStemMatchesUnpatchedOnPocl) {
  const HostTensor x = test::random_tensor({1, 3, 64, 64}, -1, 1, 7);
  for (const char* grid : {"3x3", "2x5", "auto"}) {
    SCOPED_TRACE(grid);
    Graph g = stem_model();
    optimize(g, {});
    const std::vector<HostTensor> want = run_on_pocl(g, x, false);
    PatchReport r = apply_patching(g, parse_patch(grid));
    ASSERT_TRUE(r.applied) << r.reason;
    const std::vector<HostTensor> got = run_on_pocl(g, x, true);
    ASSERT_EQ(got.size(), want.size());
    const std::vector<float> a = got[0].as_float(), b = want[0].as_float();
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-4f * (1 + std::abs(b[i]))) << i;
  }
}

// Copy-free patches: on the optimized stem every crop (the residual read
// without the halo, the image under each patch) is a window of the tensor it
// crops and every tile is written in place, so nothing is copied; the
// plain graph has a Relu and an Add, whose kernels take no windows, and
// those copy, named in the report. Both compute what the unpatched graph
// does, guarded.
TEST(PatchRun, CropsAndTilesAreWindowsWhereKernelsTakeThem) {
  const HostTensor x = test::random_tensor({1, 3, 64, 64}, -1, 1, 5);
  for (const bool optimized : {true, false}) {
    SCOPED_TRACE(optimized ? "optimized" : "plain");
    Graph g = stem_model();
    if (optimized) optimize(g, {});
    const std::vector<HostTensor> want = run_on_pocl(g, x, false);
    PatchReport r = apply_patching(g, parse_patch("3x3"));
    ASSERT_TRUE(r.applied) << r.reason;
    int views = 0, joins = 0, writes = 0;
    for (const Node& n : g.nodes) {
      views += n.op_type == "Slice" && g.tensors[n.outputs[0]].window.has_value();
      joins += n.op_type == "PatchJoin";
      writes += n.op_type == "PatchWrite";
    }
    EXPECT_GT(views, 0);
    if (optimized) {
      EXPECT_EQ(r.copy_bytes, 0);
      EXPECT_TRUE(r.copies.empty()) << r.copies.front();
      EXPECT_GT(joins, 0);
      EXPECT_EQ(writes, 0);
    } else {
      EXPECT_GT(r.copy_bytes, 0);
      ASSERT_FALSE(r.copies.empty());
      for (const std::string& c : r.copies)
        EXPECT_TRUE(c.find("(Relu)") != std::string::npos || c.find("(Add)") != std::string::npos) << c;
    }
    const std::vector<HostTensor> got = run_on_pocl(g, x, true);
    const std::vector<float> a = got[0].as_float(), b = want[0].as_float();
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-4f * (1 + std::abs(b[i]))) << i;
  }
}

// The zoo's MobileNet-V2 and SqueezeNet patch with nothing copied: every
// crop a window, every segment output written in place.
TEST(PatchPipeline, ZooPatchesCopyNothing) {
  for (const char* name : {"mobilenet_v2", "squeezenet1_1"}) {
    SCOPED_TRACE(name);
    const std::string model = std::string(TEXPLAN_MODELS_DIR) + "/" + name;
    if (!std::filesystem::exists(model)) GTEST_SKIP() << "no model zoo at " << TEXPLAN_MODELS_DIR;
    CompileOptions on;
    on.patch = "auto";
    const CompiledModel m = compile(model, {}, plan::DeviceProfile::load("pocl"), "cpu", on);
    ASSERT_TRUE(m.patching.applied) << m.patching.reason;
    EXPECT_EQ(m.patching.copy_bytes, 0);
    for (const std::string& c : m.patching.copies) ADD_FAILURE() << c;
  }
}

// The C++ pipeline takes the same setting as plan and run: the compiled
// model's records are those of the patched graph.
TEST(PatchPipeline, CompileWithPatchAuto) {
  const std::string model = std::string(TEXPLAN_MODELS_DIR) + "/squeezenet1_1";
  if (!std::filesystem::exists(model)) GTEST_SKIP() << "no model zoo at " << TEXPLAN_MODELS_DIR;
  const plan::DeviceProfile dev = plan::DeviceProfile::load("pocl");
  CompileOptions off, on;
  on.patch = "auto";
  const CompiledModel a = compile(model, {}, dev, "cpu", off), b = compile(model, {}, dev, "cpu", on);
  ASSERT_TRUE(b.patching.applied) << b.patching.reason;
  EXPECT_FALSE(a.patching.applied);
  EXPECT_EQ(b.patching.bound_without, a.lower_bound_bytes);
  EXPECT_EQ(b.lower_bound_bytes, b.patching.bound_with);
  EXPECT_LT(b.lower_bound_bytes, a.lower_bound_bytes * 6 / 10);
  EXPECT_THROW(compile(model, {}, dev, "cpu-executor", on), Error);
}

namespace {
// Random weights for a zoo model without its .onnx.data: He-uniform by fan-in,
// BatchNormalization's scale and variance near 1, its shift and mean near 0.
void fill_random_weights(Graph& g) {
  std::mt19937 rng(11);
  std::vector<std::pair<std::string, size_t>> reader(g.tensors.size());
  for (const Node& n : g.nodes)
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (n.inputs[i] >= 0) reader[n.inputs[i]] = {n.op_type, i};
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    Tensor& x = g.tensors[t];
    if (!x.is_constant || x.has_data || x.dtype != DataType::Float32) continue;
    float lo = -0.1f, hi = 0.1f;
    if (reader[t].first == "BatchNormalization" && (reader[t].second == 1 || reader[t].second == 4)) {
      lo = 0.5f, hi = 1.5f;
    } else if (x.shape.size() >= 2) {
      int64_t fan_in = 1;
      for (size_t k = 1; k < x.shape.size(); ++k) fan_in *= x.shape[k];
      hi = std::sqrt(6.0f / float(std::max<int64_t>(fan_in, 1))), lo = -hi;
    }
    x.value = test::random_tensor(x.shape, rng, lo, hi);
    x.has_data = true;
  }
}
}  // namespace

// The zoo's models without weights (plan-only there) get random ones: the
// patched graph must compute what the unpatched one does on PoCL. Three
// that cover the stem with a fused pool and residual blocks, Inception's
// branches and ceil-mode pools, and dense blocks with unfolded
// BatchNormalization (mnasnet1_0, resnet50 and vgg16 pass too; all six
// take 7 minutes on PoCL, mostly kernel builds for the patch shapes).
// One test per model: with PoCL's kernel cache empty, the three in one test
// took more than CTest's 600 s beside the rest of the suite.
class PatchRunZoo : public ::testing::TestWithParam<const char*> {};

TEST_P(PatchRunZoo, WithoutWeightsMatchesUnpatched) {
  const char* name = GetParam();
  const std::string model = std::string(TEXPLAN_MODELS_DIR) + "/" + name;
  if (!std::filesystem::exists(model)) GTEST_SKIP() << "no model zoo at " << TEXPLAN_MODELS_DIR;
  Graph g = import_onnx(model, {});
  optimize(g, {.device_forms = lower::kernel_catalog().fused_for("cpu")});
  fill_random_weights(g);
  const HostTensor x = test::random_tensor(g.tensors[g.inputs[0]].shape, -1, 1, 3);
  const std::vector<HostTensor> want = run_on_pocl(g, x, false);
  PatchReport r = apply_patching(g, parse_patch("auto"));
  ASSERT_TRUE(r.applied) << r.reason;
  const std::vector<HostTensor> got = run_on_pocl(g, x, false);
  const std::vector<float> a = got[0].as_float(), b = want[0].as_float();
  ASSERT_EQ(a.size(), b.size());
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) num += double(a[i] - b[i]) * (a[i] - b[i]), den += double(b[i]) * b[i];
  EXPECT_LT(std::sqrt(num / std::max(den, 1e-30)), 1e-4);
  EXPECT_GT(den, 0.0);
}

INSTANTIATE_TEST_SUITE_P(Models, PatchRunZoo, ::testing::Values("resnet18", "googlenet", "densenet121"),
                         [](const auto& info) { return std::string(info.param); });

// graph.h's one padding rule, which patching's windows, the lowering and the
// CLBlast partition read: SAME_UPPER puts the odd pixel at the end,
// SAME_LOWER at the beginning, pads as given, VALID none; `prefix` reads a
// fused pool's attributes.
TEST(Patch, AxisPaddingFollowsOnnx) {
  Node n;
  n.op_type = "Conv";
  n.attrs["auto_pad"] = Attribute::of_string("SAME_UPPER");
  EXPECT_EQ(conv_axis_pad(n, 0, 2, 8, 4, 3, 2, 1).begin, 0);  // total 1
  EXPECT_EQ(conv_axis_pad(n, 0, 2, 8, 4, 3, 2, 1).end, 1);
  EXPECT_EQ(conv_axis_pad(n, 1, 2, 7, 4, 3, 2, 1).begin, 1);  // total 2
  EXPECT_EQ(conv_axis_pad(n, 1, 2, 5, 5, 3, 1, 2).end, 2);    // dilation 2: total 4
  n.attrs["auto_pad"] = Attribute::of_string("SAME_LOWER");
  EXPECT_EQ(conv_axis_pad(n, 0, 2, 8, 4, 3, 2, 1).begin, 1);
  EXPECT_EQ(conv_axis_pad(n, 0, 2, 8, 4, 3, 2, 1).end, 0);
  n.attrs["auto_pad"] = Attribute::of_string("NOTSET");
  n.attrs["pads"] = Attribute::of_ints({1, 2, 3, 4});
  EXPECT_EQ(conv_axis_pad(n, 1, 2, 8, 8, 3, 1, 1).begin, 2);
  EXPECT_EQ(conv_axis_pad(n, 1, 2, 8, 8, 3, 1, 1).end, 4);
  n.attrs["auto_pad"] = Attribute::of_string("VALID");
  EXPECT_EQ(conv_axis_pad(n, 1, 2, 8, 6, 3, 1, 1).begin, 0);
  n.attrs["pool_pads"] = Attribute::of_ints({0, 1, 0, 1});
  EXPECT_EQ(conv_axis_pad(n, 1, 2, 8, 5, 2, 2, 1, "pool_").begin, 1);
  n.attrs["pool_auto_pad"] = Attribute::of_string("SAME_UPPER");
  EXPECT_EQ(conv_axis_pad(n, 1, 2, 7, 4, 2, 2, 1, "pool_").end, 1);  // total 1
}
