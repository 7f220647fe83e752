// ONNX import: static shapes, folding, aliases, usage records, bad input.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "import/onnx_import.h"
#include "lower/lower.h"
#include "onnx_builder.h"
#include "optimize/usage.h"

using namespace texplan;
using texplan::test::OnnxBuilder;
namespace fs = std::filesystem;

namespace {

std::string error_of(const std::string& path, ImportOptions opt = {}) {
  try {
    import_onnx(path, opt);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// x[1,3,8,8] -> Conv(3x3, 4 out) -> Relu -> Shape/Gather/Concat/Reshape to [1, 256] -> output
OnnxBuilder conv_relu_reshape() {
  OnnxBuilder b;
  b.input("x", {1, 3, 8, 8}).output("y");
  b.initializer("w", {4, 3, 3, 3}, std::vector<float>(108, 0.1f));
  auto* c = b.node("Conv", {"x", "w"}, {"c"});
  OnnxBuilder::attr_ints(c, "pads", {1, 1, 1, 1});
  b.node("Relu", {"c"}, {"r"});
  b.node("Shape", {"r"}, {"s"});
  b.initializer_i64("zero", {1}, {0});
  auto* g = b.node("Gather", {"s", "zero"}, {"n"});
  OnnxBuilder::attr_int(g, "axis", 0);
  b.initializer_i64("minus1", {1}, {-1});
  auto* cat = b.node("Concat", {"n", "minus1"}, {"shape"});
  OnnxBuilder::attr_int(cat, "axis", 0);
  b.node("Reshape", {"r", "shape"}, {"y"});
  return b;
}

}  // namespace

TEST(Import, FoldsShapeSubgraphsAndInfersStaticShapes) {
  auto dir = test::temp_dir("import");
  Graph g = import_onnx(conv_relu_reshape().save(dir, "tiny"));
  EXPECT_EQ(g.model_name, "tiny");
  // Shape/Gather/Concat folded away: Conv, Relu, Reshape remain.
  ASSERT_EQ(g.nodes.size(), 3u);
  EXPECT_EQ(g.nodes[0].op_type, "Conv");
  EXPECT_EQ(g.nodes[2].op_type, "Reshape");
  EXPECT_EQ(g.tensors[g.find("c")].shape, (Shape{1, 4, 8, 8}));
  EXPECT_EQ(g.tensors[g.find("y")].shape, (Shape{1, 256}));
  EXPECT_TRUE(g.tensors[g.find("w")].is_constant);
  EXPECT_TRUE(g.tensors[g.find("shape")].has_data);
  EXPECT_EQ(g.tensors[g.find("shape")].value.as_int64(), (std::vector<int64_t>{1, -1}));
}

TEST(Import, FoldsSplitsOfConstantsIntoEveryPart) {
  // A Split whose input is a constant (RAFT's coordinate grid) folds into
  // both parts; each then feeds a node, values as split.
  OnnxBuilder b;
  b.input("x", {2, 3}).output("y").output("z");
  b.initializer("c", {2, 6}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  b.initializer("one", {1}, {1.0f});
  b.node("Add", {"c", "one"}, {"d"});
  b.initializer_i64("sizes", {2}, {3, 3});
  auto* split = b.node("Split", {"d", "sizes"}, {"left", "right"});
  OnnxBuilder::attr_int(split, "axis", -1);
  b.node("Add", {"x", "left"}, {"y"});
  b.node("Mul", {"x", "right"}, {"z"});
  auto dir = test::temp_dir("fold_split");
  Graph g = import_onnx(b.save(dir, "split"));
  ASSERT_EQ(g.nodes.size(), 2u) << "the Add of constants and the Split folded";
  EXPECT_EQ(g.tensors[g.find("left")].value.as_float(), (std::vector<float>{2, 3, 4, 8, 9, 10}));
  EXPECT_EQ(g.tensors[g.find("right")].value.as_float(), (std::vector<float>{5, 6, 7, 11, 12, 13}));
}

TEST(Import, UsageRecordsAliasReshapeAndKeepOutputsLive) {
  auto dir = test::temp_dir("usage");
  Graph g = import_onnx(conv_relu_reshape().save(dir, "tiny"));
  PlanInput p = make_usage_records(g);
  // x, c, r (y aliases r): three records.
  ASSERT_EQ(p.records.size(), 3u);
  int r = g.find("r"), y = g.find("y");
  EXPECT_EQ(p.alias_root[y], r);
  EXPECT_EQ(p.record_of_tensor[y], p.record_of_tensor[r]);
  const auto& rec = p.records[p.record_of_tensor[r]];
  EXPECT_EQ(rec.first, 1);                 // produced by Relu, step 1
  EXPECT_EQ(rec.last, p.steps - 1);        // graph output: live to the end
  const auto& x = p.records[p.record_of_tensor[g.find("x")]];
  EXPECT_EQ(x.first, 0);
  EXPECT_EQ(x.last, 0);                    // last read by Conv
  EXPECT_EQ(x.bytes, 1 * 3 * 8 * 8 * 4);
  EXPECT_EQ(plan::lower_bound_bytes(p.records), 2 * (4 * 64) * 4);  // c and r live at step 1
}

TEST(Import, TexturesMarkInner4DActivations) {
  auto dir = test::temp_dir("tex");
  Graph g = import_onnx(conv_relu_reshape().save(dir, "tiny"));
  plan::DeviceProfile dev;
  Graph tex = g;
  const StorageAssignment sa = assign_storage(tex, dev, TextureMode::Pools, lower::kernel_catalog());
  PlanInput p = make_usage_records(tex, {&sa});
  const auto& c = p.records[p.record_of_tensor[tex.find("c")]];
  EXPECT_EQ(c.storage, plan::Storage::Texture);
  EXPECT_EQ(c.extent.width, 8);
  EXPECT_EQ(c.extent.height, 1 * 1 * 8);  // N * ceil(4/4) * H
  // r is reshaped to 2D, x is a graph input: both stay buffers.
  EXPECT_EQ(p.records[p.record_of_tensor[tex.find("r")]].storage, plan::Storage::Buffer);
  EXPECT_EQ(p.records[p.record_of_tensor[tex.find("x")]].storage, plan::Storage::Buffer);
  dev.max_image2d_width = 4;  // too narrow: stays a buffer
  Graph narrow = g;
  const StorageAssignment sn = assign_storage(narrow, dev, TextureMode::Pools, lower::kernel_catalog());
  PlanInput pn = make_usage_records(narrow, {&sn});
  EXPECT_EQ(pn.records[pn.record_of_tensor[narrow.find("c")]].storage, plan::Storage::Buffer);
}

TEST(ImportErrors, MissingFile) {
  EXPECT_NE(error_of("/nonexistent/model.onnx").find("no such model"), std::string::npos);
}

TEST(ImportErrors, NotOnnxAndTruncated) {
  auto dir = test::temp_dir("bad");
  { std::ofstream(dir / "text.onnx") << "hello, this is not a model\n"; }
  EXPECT_NE(error_of((dir / "text.onnx").string()).find("not an ONNX model"), std::string::npos);
  std::string good = conv_relu_reshape().save(dir, "tiny");
  std::ifstream f(good, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), {});
  { std::ofstream(dir / "cut.onnx", std::ios::binary) << bytes.substr(0, bytes.size() / 2); }
  EXPECT_NE(error_of((dir / "cut.onnx").string()).find("not an ONNX model"), std::string::npos);
  { std::ofstream(dir / "empty.onnx"); }
  EXPECT_NE(error_of((dir / "empty.onnx").string()).find("empty"), std::string::npos);
}

TEST(ImportErrors, UnsupportedOpset) {
  auto dir = test::temp_dir("opset");
  OnnxBuilder b(99);
  b.input("x", {1}).output("y");
  b.node("Relu", {"x"}, {"y"});
  std::string e = error_of(b.save(dir, "future"));
  EXPECT_NE(e.find("opset 99 is not supported"), std::string::npos) << e;
}

TEST(ImportErrors, UnknownOperatorNamesTheNode) {
  auto dir = test::temp_dir("unknown");
  OnnxBuilder b;
  b.input("x", {1, 4}).output("y");
  b.node("FrobnicateV2", {"x"}, {"y"}, "my_node");
  std::string e = error_of(b.save(dir, "frob"));
  EXPECT_NE(e.find("my_node"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown operator 'FrobnicateV2'"), std::string::npos) << e;
  EXPECT_NE(e.find("frob"), std::string::npos) << e;
}

TEST(ImportErrors, ShapeOverflow) {
  auto dir = test::temp_dir("overflow");
  OnnxBuilder b;
  b.input("x", {1LL << 30, 1LL << 30, 1LL << 30}).output("y");
  b.node("Relu", {"x"}, {"y"});
  std::string e = error_of(b.save(dir, "huge"));
  EXPECT_NE(e.find("overflows"), std::string::npos) << e;
}

TEST(ImportErrors, CycleNamesANode) {
  auto dir = test::temp_dir("cycle");
  OnnxBuilder b;
  b.input("x", {1, 4}).output("b");
  b.node("Add", {"x", "b"}, {"a"}, "first");
  b.node("Relu", {"a"}, {"b"}, "second");
  std::string e = error_of(b.save(dir, "loop"));
  EXPECT_NE(e.find("cycle"), std::string::npos) << e;
}

TEST(ImportErrors, DynamicShapeNamesTheTensor) {
  auto dir = test::temp_dir("dynamic");
  OnnxBuilder b;
  b.input("x", {-1, 4}).output("y");
  b.node("Relu", {"x"}, {"y"});
  std::string e = error_of(b.save(dir, "dyn"));
  EXPECT_NE(e.find("input 'x' (Nx4)"), std::string::npos) << e;
  EXPECT_NE(e.find("--dim N=N"), std::string::npos) << e;
  EXPECT_NE(e.find("--input-shape x=Nx4"), std::string::npos) << e;
}

TEST(ImportErrors, ExternalDataConfinedToModelFolder) {
  auto dir = test::temp_dir("escape");
  OnnxBuilder b;
  b.input("x", {1, 4}).output("y");
  auto* w = b.initializer("w", {1, 4}, {});
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* kv = w->add_external_data();
  kv->set_key("location");
  kv->set_value("../../../../etc/passwd");
  b.node("Add", {"x", "w"}, {"y"});
  std::string e = error_of(b.save(dir, "escape"), {.load_weights = true});
  EXPECT_NE(e.find("leaves the model's folder"), std::string::npos) << e;
}

TEST(ImportErrors, MissingWeightsFileOnlyMattersToRun) {
  auto dir = test::temp_dir("noweights");
  OnnxBuilder b;
  b.input("x", {1, 4}).output("y");
  auto* w = b.initializer("w", {1, 4}, {});
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* kv = w->add_external_data();
  kv->set_key("location");
  kv->set_value("nw.onnx.data");
  b.node("Add", {"x", "w"}, {"y"});
  std::string path = b.save(dir, "nw");
  EXPECT_NO_THROW(import_onnx(path));  // planning needs no weights
  std::string e = error_of(path, {.load_weights = true});
  EXPECT_NE(e.find("missing weights file"), std::string::npos) << e;
}

// Every model of the shared zoo imports with a static shape on every tensor.
TEST(ImportZoo, EveryModelHasStaticShapes) {
  fs::path zoo = TEXPLAN_MODELS_DIR;
  if (!fs::is_directory(zoo)) GTEST_SKIP() << "no model zoo at " << zoo << " (../shared/models)";
  int models = 0;
  for (const auto& e : fs::directory_iterator(zoo)) {
    if (!e.is_directory()) continue;
    SCOPED_TRACE(e.path().filename().string());
    Graph g = import_onnx(e.path().string());
    ++models;
    for (const auto& t : g.tensors) EXPECT_GT(t.bytes(), 0) << t.name;
    for (const auto& n : g.nodes) {
      EXPECT_NE(n.op_type, "Shape") << n.name;     // folded
      EXPECT_NE(n.op_type, "Constant") << n.name;  // folded
    }
    PlanInput p = make_usage_records(g);
    EXPECT_GT(plan::lower_bound_bytes(p.records), 0);
  }
  EXPECT_GE(models, 12);
}
