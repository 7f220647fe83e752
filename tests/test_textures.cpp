// Textures end to end on PoCL: storage assignment, texture kernels against
// the CPU reference (random shapes, channels not a multiple of 4) in image
// pools and in 1D views over the arena, guard mode over images, the fallback
// to buffers beyond the image limits, and the zoo models with textures.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>

#include "graph_builder.h"
#include "import/onnx_import.h"
#include "lower/lower.h"
#include "optimize/storage.h"
#include "optimize/usage.h"
#include "plan/memory_plan.h"
#include "runtime/cpu_executor.h"
#include "runtime/session.h"
#include "test_util.h"

using namespace texplan;
using test::random_tensor;
using test::test_device;
namespace fs = std::filesystem;

namespace {

struct Builder : test::GraphBuilder {
  Builder() : GraphBuilder("textures") {}
};

struct Result {
  std::vector<HostTensor> out;
  StorageAssignment storage;
  plan::MemoryPlan plan;
  std::vector<runtime::GuardViolation> violations;
};

// Runs `g` with `mode` on the device (guarded), after the storage
// assignment; the CPU reference runs on the graph as built.
// Kernel tests keep every region in texture form (memory_aware off): their
// small graphs peak at the input's conversion.
Result run_textures(Graph g, TextureMode mode, const std::vector<HostTensor>& in, bool guard = true,
                    const plan::DeviceProfile* profile = nullptr, bool memory_aware = false) {
  auto dev = test_device();
  const plan::DeviceProfile& p = profile ? *profile : dev->info().profile;
  Result r;
  r.storage = assign_storage(g, p, mode, lower::kernel_catalog(), {.memory_aware = memory_aware});
  PlanInput pin = make_usage_records(g, {&r.storage});
  r.plan = plan::plan_memory(pin.records, p, strategy_for(r.storage.mode, "best"));
  plan::validate(r.plan, pin.records, p);
  runtime::SessionOptions o;
  o.guard = guard;
  runtime::Session s(g, pin, r.plan, dev, o);
  r.out = s.run(in);
  r.violations = s.guard_violations();
  return r;
}

std::vector<HostTensor> reference(const Graph& g, const std::vector<HostTensor>& in) {
  PlanInput pin = make_usage_records(g);
  plan::MemoryPlan plan = plan::plan_memory(pin.records, plan::DeviceProfile::load("pocl"), "best");
  return runtime::CpuExecutor(g, pin, plan).run(in);
}

double max_rel_diff(const HostTensor& a, const HostTensor& b) {
  std::vector<float> x = a.as_float(), y = b.as_float();
  if (x.size() != y.size()) return INFINITY;
  double d = 0, scale = 1e-6;
  for (size_t i = 0; i < y.size(); ++i) scale = std::max(scale, double(std::fabs(y[i])));
  for (size_t i = 0; i < x.size(); ++i) d = std::max(d, std::fabs(double(x[i]) - y[i]));
  return std::isnan(d) ? INFINITY : d / scale;
}

int count_textures(const StorageAssignment& s) {
  int n = 0;
  for (char t : s.texture) n += t;
  return n;
}

// The graph in both texture modes against the reference, guard clean.
void expect_matches(const Builder& b, int min_textures = 1) {
  std::vector<HostTensor> in;
  for (int t : b.g.inputs) in.push_back(random_tensor(b.g.tensors[t].shape, -1, 1, 99 + uint32_t(t)));
  const std::vector<HostTensor> want = reference(b.g, in);
  for (TextureMode mode : {TextureMode::Pools, TextureMode::Views}) {
    SCOPED_TRACE(to_string(mode));
    Result r = run_textures(b.g, mode, in);
    EXPECT_GE(count_textures(r.storage), min_textures);
    ASSERT_EQ(r.out.size(), want.size());
    for (size_t k = 0; k < want.size(); ++k) EXPECT_LT(max_rel_diff(r.out[k], want[k]), 1e-5) << "output " << k;
    for (const auto& v : r.violations) ADD_FAILURE() << v;
    if (mode == TextureMode::Pools) EXPECT_GT(r.plan.texture_bytes(), 0);
    if (mode == TextureMode::Views) EXPECT_EQ(r.plan.texture_bytes(), 0);  // textures live in the arena
  }
}

TEST(TextureKernels, ConvolutionsOfEveryKind) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 4; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    const int64_t C = 1 + rng() % 9, H = 5 + rng() % 7, W = 3 + rng() % 11;
    Builder b;
    int x = b.input({1, C, H, W});
    int c0 = b.conv(x, 5 + rng() % 6, 3, 1, 1);                     // 3x3
    int a = b.node("Relu", {c0}, b.g.tensors[c0].shape);
    int p = b.conv(a, 7, 1);                                        // 1x1
    int d = b.conv(p, 7, 3, 2, 1, 7);                               // depthwise, stride 2
    int q = b.conv(d, 6, 3, 1, 1, 1, false);                        // no bias
    int gr = b.conv(q, 4, 3, 1, 1, 2);                              // grouped: 2 groups of 3 -> 2
    b.output(b.node("Relu", {gr}, b.g.tensors[gr].shape));
    expect_matches(b, 4);
  }
}

TEST(TextureKernels, PoolingElementwiseBroadcastAndConcat) {
  for (int64_t C : {3, 4, 6}) {
    SCOPED_TRACE("C " + std::to_string(C));
    Builder b;
    int x = b.input({1, C, 9, 11});
    int c = b.conv(x, 6, 3, 1, 1);
    int s = b.node("Sigmoid", {c}, b.g.tensors[c].shape);
    int silu = b.node("Mul", {c, s}, b.g.tensors[c].shape);
    int m = b.node("MaxPool", {silu}, {1, 6, 5, 6},
                   {{"kernel_shape", Attribute::of_ints({3, 3})}, {"strides", Attribute::of_ints({2, 2})}, {"pads", Attribute::of_ints({1, 1, 1, 1})}});
    int av = b.node("AveragePool", {m}, {1, 6, 5, 6},
                    {{"kernel_shape", Attribute::of_ints({3, 3})}, {"pads", Attribute::of_ints({1, 1, 1, 1})}});
    int gap = b.node("GlobalAveragePool", {av}, {1, 6, 1, 1});
    int se = b.node("Mul", {av, b.node("Sigmoid", {gap}, {1, 6, 1, 1})}, {1, 6, 5, 6});  // broadcast texture
    int bias = b.node("Add", {se, b.constant({6, 1, 1})}, {1, 6, 5, 6});                 // broadcast constant
    int sub = b.node("Sub", {b.constant({1}), bias}, {1, 6, 5, 6});                       // constant first
    int clip = b.node("Clip", {sub, b.constant({1}, -0.5f, -0.5f), b.constant({1}, 0.5f, 0.5f)}, {1, 6, 5, 6});
    int k = b.conv(clip, C, 1);
    int lanes = b.node("Concat", {clip, k}, {1, 6 + C, 5, 6}, {{"axis", Attribute::of_int(1)}});       // lanes gathered
    int whole = b.node("Concat", {b.conv(lanes, 8, 1), b.conv(lanes, C, 1)}, {1, 8 + C, 5, 6},
                       {{"axis", Attribute::of_int(1)}});                                             // whole slices
    int mx = b.node("GlobalMaxPool", {whole}, {1, 8 + C, 1, 1});
    b.output(b.node("Relu", {mx}, {1, 8 + C, 1, 1}));
    expect_matches(b, 10);
  }
}

TEST(TextureKernels, BatchNormalization) {
  Builder b;
  int x = b.input({1, 5, 6, 7});
  int c = b.conv(x, 5, 3, 1, 1);
  int bn = b.node("BatchNormalization", {c, b.constant({5}), b.constant({5}), b.constant({5}), b.constant({5}, 0.5f, 2)},
                  {1, 5, 6, 7});
  b.output(b.node("Relu", {bn}, {1, 5, 6, 7}));
  expect_matches(b, 2);
}

TEST(TextureKernels, FusedConvWithEpilogueAndResidual) {
  Builder b;
  int x = b.input({1, 6, 8, 8});
  int c = b.conv(x, 6, 3, 1, 1);
  auto fused = [&](std::vector<int> in, std::vector<std::string> program) {
    int w = b.constant({6, 6, 3, 3}), bias = b.constant({6});
    std::vector<int> ins = {in[0], w, bias};
    for (size_t k = 1; k < in.size(); ++k) ins.push_back(in[k]);
    return b.node("FusedConv", ins, {1, 6, 8, 8},
                  {{"kernel_shape", Attribute::of_ints({3, 3})}, {"pads", Attribute::of_ints({1, 1, 1, 1})}, {"program", Attribute::of_strings(program)}});
  };
  int f1 = fused({c}, {"Sigmoid x0", "Mul x0 t0"});
  int f2 = fused({f1, c}, {"Add x0 x1", "Relu t0"});
  b.output(b.node("Relu", {f2}, {1, 6, 8, 8}));
  expect_matches(b, 3);
}

// Views are for memory: a region whose texture form would drop an in-place
// mark that lowers the peak stays in buffers with its mark (reverting the
// region restores it); pools keep the textures and drop the mark.
TEST(StorageAssignment, ViewsKeepInPlaceMarksThatLowerThePeak) {
  Builder b;
  int x = b.input({1, 1, 16, 16});
  int c = b.conv(x, 8, 3, 1, 1);
  int r = b.node("Relu", {c}, {1, 8, 16, 16});
  b.g.nodes.back().decisions.in_place = true;
  b.output(b.node("GlobalAveragePool", {r}, {1, 8, 1, 1}));
  const plan::DeviceProfile pocl = plan::DeviceProfile::load("pocl");
  const int64_t buffer_only = plan::lower_bound_bytes(make_usage_records(b.g).records);

  Graph views = b.g;
  StorageAssignment sv = assign_storage(views, pocl, TextureMode::Views, lower::kernel_catalog());
  EXPECT_EQ(sv.conversions, 0);
  EXPECT_FALSE(sv.is_texture(c));
  EXPECT_TRUE(views.nodes[1].decisions.in_place);
  EXPECT_EQ(plan::lower_bound_bytes(make_usage_records(views, {&sv}).records), buffer_only);

  Graph pools = b.g;
  StorageAssignment sp = assign_storage(pools, pocl, TextureMode::Pools, lower::kernel_catalog());
  EXPECT_TRUE(sp.is_texture(c));
  EXPECT_TRUE(sp.is_texture(r));
  for (const Node& n : pools.nodes) EXPECT_FALSE(n.decisions.in_place) << n.name;
}

// The storage assignment: where conversions go, what stays a buffer.
TEST(StorageAssignment, ConversionsAtBoundariesAndIslandsStayBuffers) {
  Builder b;
  int x = b.input({1, 3, 8, 8});
  int c = b.conv(x, 8, 3, 1, 1);
  int r = b.node("Relu", {c}, {1, 8, 8, 8});
  int t = b.node("Transpose", {r}, {1, 8, 8, 8}, {{"perm", Attribute::of_ints({0, 1, 3, 2})}});  // no texture kernel
  int lone = b.node("Relu", {t}, {1, 8, 8, 8});                                     // an island
  b.output(b.node("Transpose", {lone}, {1, 8, 8, 8}, {{"perm", Attribute::of_ints({0, 1, 3, 2})}}));
  Graph g = b.g;
  StorageAssignment s =
      assign_storage(g, plan::DeviceProfile::load("pocl"), TextureMode::Pools, lower::kernel_catalog());
  std::vector<std::string> ops;
  for (const Node& n : g.nodes) ops.push_back(n.op_type);
  EXPECT_EQ(ops, (std::vector<std::string>{"BufferToTexture", "Conv", "Relu", "TextureToBuffer", "Transpose", "Relu",
                                           "Transpose"}));
  EXPECT_EQ(s.conversions, 2);
  EXPECT_TRUE(s.is_texture(c));
  EXPECT_TRUE(s.is_texture(r));
  EXPECT_FALSE(s.is_texture(x));
  EXPECT_FALSE(s.is_texture(lone));
  // The planner sees the conversions as steps with their own tensors.
  PlanInput pin = make_usage_records(g, {&s});
  EXPECT_EQ(pin.steps, 7);
  int textures = 0;
  for (const auto& rec : pin.records) textures += rec.storage == plan::Storage::Texture;
  EXPECT_EQ(textures, 3);  // x@texture, c, r
  // none: nothing changes; auto on PoCL: the profile says buffers.
  Graph g2 = b.g;
  EXPECT_EQ(assign_storage(g2, plan::DeviceProfile::load("pocl"), TextureMode::Auto, lower::kernel_catalog()).mode,
            TextureMode::None);
  EXPECT_EQ(g2.nodes.size(), b.g.nodes.size());
  EXPECT_EQ(assign_storage(g2, plan::DeviceProfile::load("adreno"), TextureMode::Auto, lower::kernel_catalog()).mode,
            TextureMode::Views);
}

// Beyond the image limits a tensor stays a buffer, and so does every node
// touching it: the documented fallback, listed, with correct results.
TEST(StorageAssignment, ImagesBeyondTheLimitsFallBackToBuffers) {
  auto dev = test_device();
  plan::DeviceProfile p = dev->info().profile;
  p.max_image2d_width = 16;  // the 20-wide tensors do not fit
  Builder b;
  int x = b.input({1, 4, 6, 20});
  int c = b.conv(x, 4, 3, 1, 1);
  int r = b.node("Relu", {c}, {1, 4, 6, 20});
  int pool = b.node("MaxPool", {r}, {1, 4, 3, 10}, {{"kernel_shape", Attribute::of_ints({2, 2})}, {"strides", Attribute::of_ints({2, 2})}});
  int c2 = b.conv(pool, 4, 3, 1, 1);
  b.output(b.node("Relu", {c2}, {1, 4, 3, 10}));
  std::vector<HostTensor> in = {random_tensor({1, 4, 6, 20}, -1, 1, 5)};
  const auto want = reference(b.g, in);
  Result res = run_textures(b.g, TextureMode::Pools, in, true, &p);
  EXPECT_FALSE(res.storage.is_texture(c));
  EXPECT_FALSE(res.storage.is_texture(r));
  EXPECT_TRUE(res.storage.is_texture(c2));  // 10 wide: fits
  ASSERT_EQ(res.storage.fallbacks.size(), 2u);
  EXPECT_NE(res.storage.fallbacks[0].find("exceeds"), std::string::npos) << res.storage.fallbacks[0];
  EXPECT_LT(max_rel_diff(res.out[0], want[0]), 1e-5);
  EXPECT_TRUE(res.violations.empty());
}

// The models of ../shared/models with weights, with textures in pools and
// views: rel error within 1e-4 of PyTorch's output, guard clean.
class ZooTextures : public ::testing::TestWithParam<std::string> {};

double relative_error(const HostTensor& out, const HostTensor& ref) {
  std::vector<float> a = out.as_float(), b = ref.as_float();
  if (a.size() != b.size()) return INFINITY;
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return std::isnan(num) ? INFINITY : std::sqrt(num / std::max(den, 1e-30));
}

TEST_P(ZooTextures, RunsWithTexturesGuardClean) {
  const fs::path dir = fs::path(TEXPLAN_MODELS_DIR) / GetParam();
  if (!fs::exists(dir / (GetParam() + ".onnx.data")))
    GTEST_SKIP() << GetParam() << ": no weights in " << dir << " (regenerate with ../shared/tools/export_models.py)";
  const Graph g = import_onnx(dir.string(), {.load_weights = true});
  std::vector<HostTensor> in = {load_tensor_pb((dir / "test_data_set_0" / "input_0.pb").string())};
  const HostTensor want = load_tensor_pb((dir / "test_data_set_0" / "output_0.pb").string());
  for (TextureMode mode : {TextureMode::Pools, TextureMode::Views}) {
    SCOPED_TRACE(to_string(mode));
    // Guarded where it is quick on 2 cores (the others: `texplan run M
    // --textures views --check --guard`, minutes each); pools are guarded in
    // the kernel tests.
    const bool guard = mode == TextureMode::Views &&
                       (GetParam() == "squeezenet1_1" || GetParam() == "shufflenet_v2_x1_0" || GetParam() == "bert_mini");
    Result r = run_textures(g, mode, in, guard, nullptr, /*memory_aware=*/true);
    EXPECT_LE(relative_error(r.out[0], want), 1e-4);
    for (const auto& v : r.violations) ADD_FAILURE() << v;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, ZooTextures,
                         ::testing::Values("squeezenet1_1", "mobilenet_v2", "shufflenet_v2_x1_0", "efficientnet_b0",
                                           "unet_small", "bert_mini"));

}  // namespace
