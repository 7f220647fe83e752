// Texture layouts (optimize/storage.h): a texture's footprint on a device
// (row pitch * height; views start at the base alignment), the layout chosen per tensor by that
// footprint, texture kernels in both layouts (and mixed) against the CPU
// reference on PoCL, and the texture lower bound beside the buffer one in
// the plan report.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "graph_builder.h"
#include "import/onnx_import.h"
#include "lower/lower.h"
#include "optimize/storage.h"
#include "optimize/usage.h"
#include "plan/memory_plan.h"
#include "report/report.h"
#include "runtime/cpu_executor.h"
#include "runtime/session.h"
#include "test_util.h"

using namespace texplan;
using test::random_tensor;
using test::test_device;
namespace fs = std::filesystem;

namespace {

plan::DeviceProfile pitched(int64_t pitch, int64_t base) {
  plan::DeviceProfile p = plan::DeviceProfile::load("adreno");
  p.image_pitch_alignment = pitch;
  p.image_base_address_alignment = base;
  return p;
}

TEST(TextureFootprint, RowPitchTimesHeightRoundedToTheBaseAlignment) {
  const plan::DeviceProfile adreno = plan::DeviceProfile::load("adreno");  // pitch 1024 B, base 1024 B
  // 7 RGBA fp32 pixels (112 B) a row pay a whole 1024-byte pitch.
  EXPECT_EQ(plan::texture_footprint_bytes({7, 896, 16}, adreno), 1024 * 896);
  EXPECT_EQ(plan::texture_footprint_bytes({64, 10, 16}, adreno), 1024 * 10);   // exactly one pitch
  EXPECT_EQ(plan::texture_footprint_bytes({65, 10, 16}, adreno), 2048 * 10);   // one pixel over
  // fp16 pixels: the pitch is 64 pixels, 512 bytes.
  EXPECT_EQ(plan::texture_footprint_bytes({7, 896, 8}, adreno), 512 * 896);
  EXPECT_EQ(plan::texture_footprint_bytes({128, 3, 8}, adreno), 1024 * 3);
  // The base alignment places a view, it does not size it: 3 rows of 256 B.
  EXPECT_EQ(plan::texture_footprint_bytes({5, 3, 16}, pitched(256, 4096)), 768);
  EXPECT_EQ(plan::texture_footprint_bytes({5, 3, 16}, pitched(64, 4096)), 3 * 128);
  // Without image2d_from_buffer (PoCL, NVIDIA: 1D views), rows are tight.
  const plan::DeviceProfile pocl = plan::DeviceProfile::load("pocl");
  EXPECT_EQ(plan::texture_footprint_bytes({7, 896, 16}, pocl), 7 * 896 * 16);
  EXPECT_EQ(plan::texture_view_bytes({7, 896, 16}, adreno), 1024 * 896);
}

TEST(TextureFootprint, LowerBoundCountsTexturesAtTheirFootprint) {
  plan::UsageRecord t;
  t.name = "t";
  t.storage = plan::Storage::Texture;
  t.extent = {7, 4, 16};
  t.bytes = t.extent.tight_bytes();
  t.first = 0, t.last = 1;
  plan::UsageRecord b;
  b.name = "b", b.bytes = 100, b.first = 1, b.last = 1;
  const std::vector<plan::UsageRecord> recs = {t, b};
  EXPECT_EQ(plan::lower_bound_bytes(recs), 7 * 4 * 16 + 100);
  EXPECT_EQ(plan::lower_bound_bytes(recs, plan::DeviceProfile::load("adreno")), 1024 * 4 + 100);
  EXPECT_EQ(plan::lower_bound_bytes(recs, plan::DeviceProfile::load("pocl")), 7 * 4 * 16 + 100);
  // Views start at the base alignment: the plan pays it, the bound does not.
  const plan::DeviceProfile far = pitched(256, 4096);
  const plan::MemoryPlan views = plan::plan_memory(recs, far, "texture-views");
  plan::validate(views, recs, far);
  EXPECT_EQ(views.placements[0].offset % 4096, 0);
  EXPECT_EQ(views.placements[0].row_pitch, 256);
  EXPECT_GE(views.total_bytes(), plan::lower_bound_bytes(recs, far));
  // Texture pools count the footprint too, so no plan is below the bound.
  const plan::DeviceProfile adreno = plan::DeviceProfile::load("adreno");
  for (const char* s : {"naive", "best", "tvm-texture-pools", "texture-views"}) {
    const plan::MemoryPlan p = plan::plan_memory(recs, adreno, s);
    plan::validate(p, recs, adreno);
    EXPECT_GE(p.total_bytes(), plan::lower_bound_bytes(recs, adreno)) << s;
  }
}

TEST(TextureLayout, Extents) {
  const plan::TextureExtent rows = texture_extent({2, 10, 7, 5}, 4, TextureLayout::Rows);
  EXPECT_EQ(rows.width, 5);
  EXPECT_EQ(rows.height, 2 * 3 * 7);
  EXPECT_EQ(rows.pixel_bytes, 16);
  const plan::TextureExtent wide = texture_extent({2, 10, 7, 5}, 2, TextureLayout::WideRows);
  EXPECT_EQ(wide.width, 5 * 3);
  EXPECT_EQ(wide.height, 2 * 7);
  EXPECT_EQ(wide.pixel_bytes, 8);
  EXPECT_EQ(rows.width * rows.height, wide.width * wide.height);  // same pixels, other rows
}

// A graph of one Conv between two Relus, the middle tensors `shape`d.
struct Chain {
  Graph g;
  int mid = -1;
  explicit Chain(Shape shape) {
    g.model_name = "layouts";
    g.opset = 13;
    auto tensor = [&](const std::string& name, Shape s) {
      Tensor t;
      t.name = name;
      t.shape = std::move(s);
      return g.add_tensor(t);
    };
    const int x = tensor("x", shape);
    g.tensors[x].is_input = true;
    g.inputs.push_back(x);
    Tensor w;
    w.name = "w";
    w.shape = {shape[1], shape[1], 1, 1};
    w.value = random_tensor(w.shape, -1, 1, 3);
    w.is_constant = w.has_data = true;
    const int wt = g.add_tensor(w);
    const int a = tensor("a", shape);
    mid = tensor("mid", shape);
    const int y = tensor("y", shape);
    g.tensors[y].is_output = true;
    g.outputs.push_back(y);
    g.nodes.push_back({"relu_a", "Relu", {x}, {a}, {}});
    g.nodes.push_back({"conv", "Conv", {a, wt}, {mid}, {{"kernel_shape", Attribute::of_ints({1, 1})}}});
    g.nodes.push_back({"relu_y", "Relu", {mid}, {y}, {}});
    g.rebuild_index();
    for (size_t k = 0; k < g.nodes.size(); ++k) g.tensors[g.nodes[k].outputs[0]].producer = int(k);
  }
};

TEST(TextureLayout, ShortRowsGoWideLongRowsStay) {
  const plan::DeviceProfile adreno = plan::DeviceProfile::load("adreno");
  const StorageOptions no_revert{.memory_aware = false};
  {  // 7x7x512: a 7-pixel row pays 9.1x as NC4HW4 rows; 896 pixels a row as wide rows, no padding.
    Chain c({1, 512, 7, 7});
    const StorageAssignment sa = assign_storage(c.g, adreno, TextureMode::Views, lower::kernel_catalog(), no_revert);
    ASSERT_TRUE(sa.is_texture(c.mid));
    EXPECT_EQ(sa.layout_of(c.mid), TextureLayout::WideRows);
    const plan::TextureExtent e = texture_extent(c.g.tensors[c.mid].shape, 4, sa.layout_of(c.mid));
    EXPECT_EQ(plan::texture_footprint_bytes(e, adreno), 7 * 7 * 512 * 4);
    const PlanInput pin = make_usage_records(c.g, {&sa});
    EXPECT_EQ(pin.texture_layout[c.mid], TextureLayout::WideRows);
    EXPECT_EQ(pin.records[pin.record_of_tensor[c.mid]].extent.width, 7 * 128);
  }
  {  // 73 x 16 slices = 1168 pixels a row pay 4.1%; 4 rows of H side by side (4672 pixels) none.
    Chain c({1, 64, 72, 73});
    const StorageAssignment sa = assign_storage(c.g, adreno, TextureMode::Views, lower::kernel_catalog(), no_revert);
    ASSERT_TRUE(sa.is_texture(c.mid));
    EXPECT_EQ(sa.layout_of(c.mid), TextureLayout::WideRows);
    EXPECT_EQ(sa.fold_of(c.mid), 4);
    const plan::TextureExtent e = texture_extent(c.g.tensors[c.mid].shape, 4, TextureLayout::WideRows, 4);
    EXPECT_EQ(e.width, 4 * 73 * 16);
    EXPECT_EQ(e.height, 18);
    EXPECT_EQ(plan::texture_footprint_bytes(e, adreno), 72 * 73 * 64 * 4);  // no padding
    const PlanInput pin = make_usage_records(c.g, {&sa});
    EXPECT_EQ(pin.texture_fold[c.mid], 4);
    EXPECT_EQ(pin.records[pin.record_of_tensor[c.mid]].extent.width, 4 * 73 * 16);
  }
  {  // 256 pixels a row: whole pitches either way, NC4HW4 rows kept.
    Chain c({1, 32, 16, 256});
    const StorageAssignment sa = assign_storage(c.g, adreno, TextureMode::Views, lower::kernel_catalog(), no_revert);
    ASSERT_TRUE(sa.is_texture(c.mid));
    EXPECT_EQ(sa.layout_of(c.mid), TextureLayout::Rows);
  }
  {  // 1000 x 32 slices is beyond the 16384-pixel width: NC4HW4 rows, padded 2.4%.
    Chain c({1, 128, 2, 1000});
    const StorageAssignment sa = assign_storage(c.g, adreno, TextureMode::Views, lower::kernel_catalog(), no_revert);
    ASSERT_TRUE(sa.is_texture(c.mid));
    EXPECT_EQ(sa.layout_of(c.mid), TextureLayout::Rows);
  }
  {  // Forced rows on 7x7x512: the views' bound rises 9.1x on that tensor, so memory-aware views keep buffers.
    Chain c({1, 512, 7, 7});
    const StorageAssignment sa =
        assign_storage(c.g, adreno, TextureMode::Views, lower::kernel_catalog(), {.layouts = LayoutPolicy::Rows});
    EXPECT_FALSE(sa.is_texture(c.mid));
    Chain d({1, 512, 7, 7});
    const StorageAssignment sd = assign_storage(d.g, adreno, TextureMode::Views, lower::kernel_catalog());
    EXPECT_TRUE(sd.is_texture(d.mid));  // by cost: wide rows, no dearer than a buffer
  }
  // Without pitched rows (PoCL's 1D views) the layouts tie: NC4HW4 rows.
  Chain c({1, 512, 7, 7});
  const StorageAssignment sa =
      assign_storage(c.g, plan::DeviceProfile::load("pocl"), TextureMode::Views, lower::kernel_catalog(), no_revert);
  ASSERT_TRUE(sa.is_texture(c.mid));
  EXPECT_EQ(sa.layout_of(c.mid), TextureLayout::Rows);
}

// ---- texture kernels in both layouts on PoCL ----

struct Builder : test::GraphBuilder {
  Builder() : GraphBuilder("layouts") {}
};

// Every texture kernel once: dense, depthwise and grouped convolutions,
// pooling, global pooling, a broadcast product with a [N,C,1,1] texture, a
// constant operand, BatchNormalization, Concat of whole slices and of lanes.
Builder every_kernel() {
  Builder b;
  int x = b.input({2, 6, 10, 9});
  int c1 = b.conv(x, 12, 3, 1, 1);
  int r1 = b.node("Relu", {c1}, {2, 12, 10, 9});
  int dw = b.conv(r1, 12, 3, 2, 1, 12);  // 5x5
  int gr = b.conv(dw, 12, 1, 1, 0, 3);
  int mp = b.node("MaxPool", {gr}, {2, 12, 4, 4},
                  {{"kernel_shape", Attribute::of_ints({2, 2})}, {"strides", Attribute::of_ints({1, 1})}});
  int ap = b.node("AveragePool", {dw}, {2, 12, 4, 4},
                  {{"kernel_shape", Attribute::of_ints({2, 2})}, {"strides", Attribute::of_ints({1, 1})}});
  int gp = b.node("GlobalAveragePool", {mp}, {2, 12, 1, 1});
  int sg = b.node("Sigmoid", {gp}, {2, 12, 1, 1});
  int se = b.node("Mul", {ap, sg}, {2, 12, 4, 4});
  int sum = b.node("Add", {se, mp}, {2, 12, 4, 4});
  int bias = b.node("Add", {sum, b.constant({1, 12, 1, 1})}, {2, 12, 4, 4});
  int bn = b.node("BatchNormalization",
                  {bias, b.constant({12}), b.constant({12}), b.constant({12}), b.constant({12}, 0.5f, 2.0f)},
                  {2, 12, 4, 4});
  int slices = b.node("Concat", {bn, mp}, {2, 24, 4, 4}, {{"axis", Attribute::of_int(1)}});
  int odd = b.conv(slices, 5, 1);
  int lanes = b.node("Concat", {odd, bn}, {2, 17, 4, 4}, {{"axis", Attribute::of_int(1)}});
  int last = b.conv(lanes, 8, 3, 1, 1);
  b.output(b.node("Relu", {last}, {2, 8, 4, 4}));
  return b;
}

struct TextureRun {
  std::vector<HostTensor> out;
  StorageAssignment storage;
  std::vector<runtime::GuardViolation> violations;
};

TextureRun run(Graph g, TextureMode mode, const plan::DeviceProfile& profile, LayoutPolicy layouts,
        const std::vector<HostTensor>& in) {
  auto dev = test_device();
  TextureRun r;
  r.storage = assign_storage(g, profile, mode, lower::kernel_catalog(), {.memory_aware = false, .layouts = layouts});
  const PlanInput pin = make_usage_records(g, {&r.storage});
  const plan::MemoryPlan plan = plan::plan_memory(pin.records, profile, strategy_for(r.storage.mode, "best"));
  plan::validate(plan, pin.records, profile);
  runtime::SessionOptions o;
  o.guard = true;
  runtime::Session s(g, pin, plan, dev, o);
  r.out = s.run(in);
  r.violations = s.guard_violations();
  return r;
}

std::vector<HostTensor> reference(const Graph& g, const std::vector<HostTensor>& in) {
  PlanInput pin = make_usage_records(g);
  plan::MemoryPlan plan = plan::plan_memory(pin.records, plan::DeviceProfile::load("pocl"), "best");
  return runtime::CpuExecutor(g, pin, plan).run(in);
}

int count(const StorageAssignment& s, TextureLayout l) {
  int n = 0;
  for (size_t t = 0; t < s.texture.size(); ++t) n += s.texture[t] && s.layout_of(int(t)) == l;
  return n;
}

TEST(TextureLayoutKernels, EveryKernelInEitherLayoutMatchesTheReference) {
  const Builder b = every_kernel();
  std::vector<HostTensor> in;
  for (int t : b.g.inputs) in.push_back(random_tensor(b.g.tensors[t].shape, -1, 1, 7));
  const std::vector<HostTensor> want = reference(b.g, in);
  const plan::DeviceProfile pocl = test_device()->info().profile;
  for (LayoutPolicy layouts : {LayoutPolicy::Rows, LayoutPolicy::WideRows}) {
    for (TextureMode mode : {TextureMode::Pools, TextureMode::Views}) {
      SCOPED_TRACE(std::string(to_string(mode)) + (layouts == LayoutPolicy::Rows ? " rows" : " wide rows"));
      const TextureRun r = run(b.g, mode, pocl, layouts, in);
      const TextureLayout l = layouts == LayoutPolicy::Rows ? TextureLayout::Rows : TextureLayout::WideRows;
      EXPECT_GE(count(r.storage, l), 15);
      ASSERT_EQ(r.out.size(), want.size());
      EXPECT_LT(test::rel_error(r.out[0], want[0]), 1e-5);
      for (const auto& v : r.violations) ADD_FAILURE() << v;
    }
  }
}

// Pitched rows of 16 pixels: the footprint picks wide rows for the narrow
// tensors and keeps NC4HW4 rows for the 16-wide ones, so kernels read one
// layout and write the other.
TEST(TextureLayoutKernels, MixedLayoutsMatchTheReference) {
  Builder b;
  int x = b.input({1, 5, 16, 16});
  int c1 = b.conv(x, 8, 3, 1, 1);      // 16 wide: whole pitches as rows
  int r1 = b.node("Relu", {c1}, {1, 8, 16, 16});
  int c2 = b.conv(r1, 8, 3, 2, 1);     // 8 wide: wide rows (16 pixels)
  int r2 = b.node("Relu", {c2}, {1, 8, 8, 8});
  int up = b.conv(r2, 8, 1);
  int sum = b.node("Add", {up, r2}, {1, 8, 8, 8});
  int gp = b.node("GlobalAveragePool", {sum}, {1, 8, 1, 1});
  b.output(b.node("Relu", {gp}, {1, 8, 1, 1}));
  std::vector<HostTensor> in = {random_tensor({1, 5, 16, 16}, -1, 1, 11)};
  const std::vector<HostTensor> want = reference(b.g, in);
  plan::DeviceProfile p = test_device()->info().profile;
  // Pools (dedicated images) on PoCL, planned as for a device pitching rows to 16 pixels.
  p.image2d_from_buffer = true;
  p.image_pitch_alignment = 256;
  p.image_base_address_alignment = 256;
  const TextureRun r = run(b.g, TextureMode::Pools, p, LayoutPolicy::Cost, in);
  EXPECT_TRUE(r.storage.is_texture(r1));
  EXPECT_EQ(r.storage.layout_of(r1), TextureLayout::Rows);
  EXPECT_EQ(r.storage.layout_of(r2), TextureLayout::WideRows);
  EXPECT_GE(count(r.storage, TextureLayout::Rows), 2);
  EXPECT_GE(count(r.storage, TextureLayout::WideRows), 3);
  EXPECT_LT(test::rel_error(r.out[0], want[0]), 1e-5);
  for (const auto& v : r.violations) ADD_FAILURE() << v;
}

// Pitched rows of 16 pixels in pools: wide rows fold rows of H together
// where that saves padding (and only there: 1D views never fold).
TEST(TextureLayoutKernels, FoldedWideRowsMatchTheReference) {
  const Builder b = every_kernel();
  std::vector<HostTensor> in;
  for (int t : b.g.inputs) in.push_back(random_tensor(b.g.tensors[t].shape, -1, 1, 13));
  const std::vector<HostTensor> want = reference(b.g, in);
  plan::DeviceProfile p = test_device()->info().profile;
  p.image2d_from_buffer = true;
  p.image_pitch_alignment = 256;
  p.image_base_address_alignment = 256;
  const TextureRun r = run(b.g, TextureMode::Pools, p, LayoutPolicy::WideRows, in);
  int folded = 0;
  for (size_t t = 0; t < r.storage.texture.size(); ++t)
    folded += r.storage.is_texture(int(t)) && r.storage.fold_of(int(t)) > 1;
  EXPECT_GE(folded, 3);
  EXPECT_LT(test::rel_error(r.out[0], want[0]), 1e-5);
  for (const auto& v : r.violations) ADD_FAILURE() << v;
}

// tiny_cnn with weights, every texture in wide rows, against its reference output.
TEST(TextureLayoutKernels, TinyCnnInWideRows) {
  const fs::path dir = fs::path(TEXPLAN_SOURCE_DIR) / "examples" / "models" / "tiny_cnn";
  Graph g = import_onnx(dir.string(), {.load_weights = true});
  std::vector<HostTensor> in = {load_tensor_pb((dir / "test_data_set_0" / "input_0.pb").string())};
  const HostTensor want = load_tensor_pb((dir / "test_data_set_0" / "output_0.pb").string());
  for (TextureMode mode : {TextureMode::Pools, TextureMode::Views}) {
    SCOPED_TRACE(to_string(mode));
    const TextureRun r = run(g, mode, test_device()->info().profile, LayoutPolicy::WideRows, in);
    EXPECT_GT(count(r.storage, TextureLayout::WideRows), 0);
    EXPECT_LT(test::rel_error(r.out[0], want), 1e-4);
    for (const auto& v : r.violations) ADD_FAILURE() << v;
  }
}

// ---- the report ----

fs::path zoo(const std::string& name) { return fs::path(TEXPLAN_MODELS_DIR) / name; }

TEST(TextureBoundReport, BothBoundsAndViewsAtTheBufferBound) {
  if (!fs::is_directory(zoo("googlenet"))) GTEST_SKIP() << "no model zoo at " << TEXPLAN_MODELS_DIR;
  const plan::DeviceProfile adreno = plan::DeviceProfile::load("adreno");
  report::PlanOptions opt;
  opt.include_tensors = false;
  opt.optimization_shares = false;
  opt.strategies = {"tvm-texture-pools", "texture-views"};
  // NC4HW4 rows in pools: 7- and 14-wide rows make the texture bound the larger.
  opt.textures = TextureMode::Pools;
  opt.texture_layouts = LayoutPolicy::Rows;
  report::json rows = report::plan_model(zoo("googlenet").string(), adreno, opt);
  EXPECT_GT(rows["texture_lower_bound_bytes"].get<int64_t>(), rows["buffer_lower_bound_bytes"].get<int64_t>() * 3 / 2);
  std::ostringstream text;
  report::print_plan_table(rows, text);
  EXPECT_NE(text.str().find("buffer-only lower bound"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("textures at their footprint"), std::string::npos) << text.str();
  // By cost, views: within 5% of the buffer-only bound, and not above the pools.
  opt.textures = TextureMode::Auto;
  opt.texture_layouts = LayoutPolicy::Cost;
  report::json cost = report::plan_model(zoo("googlenet").string(), adreno, opt);
  const double buffer_bound = double(cost["buffer_lower_bound_bytes"].get<int64_t>());
  EXPECT_GT(cost["texture_records"].get<int>(), 50);
  EXPECT_GT(cost["texture_layouts"].value("wide-rows", 0), 50);
  EXPECT_LE(double(cost["texture_lower_bound_bytes"].get<int64_t>()), 1.05 * buffer_bound);
  int64_t views = 0, pools = 0;
  for (const auto& s : cost["strategies"]) (s["name"] == "texture-views" ? views : pools) = s["total_bytes"];
  EXPECT_LE(double(views), 1.05 * buffer_bound);
  EXPECT_LE(views, pools);
}

// Every zoo model on the Adreno profile: texture-views within 5% of the
// buffer-only bound and never above tvm-texture-pools.
class ZooTextureBound : public ::testing::TestWithParam<std::string> {};

TEST_P(ZooTextureBound, ViewsWithinFivePercentOfTheBufferBoundAndNotAbovePools) {
  if (!fs::is_directory(zoo(GetParam()))) GTEST_SKIP() << "no model zoo at " << TEXPLAN_MODELS_DIR;
  const plan::DeviceProfile adreno = plan::DeviceProfile::load("adreno");
  report::PlanOptions opt;
  opt.include_tensors = false;
  opt.optimization_shares = false;
  opt.textures = TextureMode::Auto;
  opt.strategies = {"texture-views"};
  const report::json views = report::plan_model(zoo(GetParam()).string(), adreno, opt);
  opt.textures = TextureMode::Pools;
  opt.strategies = {"tvm-texture-pools"};
  const report::json pools = report::plan_model(zoo(GetParam()).string(), adreno, opt);
  const int64_t buffer_bound = views["buffer_lower_bound_bytes"];
  const int64_t v = views["strategies"][0]["total_bytes"], p = pools["strategies"][0]["total_bytes"];
  EXPECT_TRUE(views["strategies"][0]["valid"].get<bool>());
  EXPECT_LE(double(views["texture_lower_bound_bytes"].get<int64_t>()), 1.05 * double(buffer_bound));
  EXPECT_LE(double(v), 1.05 * double(buffer_bound));
  EXPECT_LE(v, p);
}

INSTANTIATE_TEST_SUITE_P(Models, ZooTextureBound,
                         ::testing::Values("squeezenet1_1", "mobilenet_v2", "shufflenet_v2_x1_0", "efficientnet_b0",
                                           "unet_small", "bert_mini", "resnet18", "resnet50", "googlenet",
                                           "densenet121", "mnasnet1_0", "vgg16"));

}  // namespace
