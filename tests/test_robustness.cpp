// Hostile input (issue 9): every named case gets one clear line that names
// the model and the node or tensor, and the CLI a non-zero exit; never a
// crash, a hang, a read outside the model's folder or a huge allocation.
// Cases already covered elsewhere (tests/test_import.cpp: opset 99, unknown
// operator, 2^90-element input, two-node cycle, dynamic dims, `..` with
// load_weights, missing weights file; tests/test_cli.cpp: junk file, wrong
// input shape) are not repeated here.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <filesystem>
#include <fstream>
#include <typeinfo>

#include "import/onnx_import.h"
#include "onnx_builder.h"
#include "optimize/usage.h"
#include "plan/memory_plan.h"
#include "runtime/cpu_executor.h"
#include "shell.h"

using namespace texplan;
using texplan::test::OnnxBuilder;
namespace fs = std::filesystem;

namespace {

const fs::path kTiny = fs::path(TEXPLAN_SOURCE_DIR) / "examples/models/tiny_cnn";

// The message of the texplan::Error import throws ("" if none); any other
// exception is a test failure: users must get texplan's one-line errors.
std::string import_error(const std::string& path, ImportOptions opt = {}) {
  try {
    import_onnx(path, opt);
  } catch (const Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << path << ": " << typeid(e).name() << " escaped: " << e.what();
    return e.what();
  }
  return "";
}

// An error message a user can act on: one line, naming the model and `what`.
// TEXPLAN_SHOW_ERRORS=1 prints every message checked (for the robustness report).
void show(const std::string& msg) {
  if (std::getenv("TEXPLAN_SHOW_ERRORS")) std::cout << "  message: " << msg << (msg.ends_with('\n') ? "" : "\n");
}

void expect_named(const std::string& msg, const std::string& model, const std::string& what) {
  show(msg);
  EXPECT_FALSE(msg.empty()) << "no error for " << model << " / " << what;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  EXPECT_NE(msg.find(model), std::string::npos) << "model not named: " << msg;
  EXPECT_NE(msg.find(what), std::string::npos) << "'" << what << "' not named: " << msg;
}

using Result = test::ShellResult;

// Runs the CLI under `timeout`: a hang shows as exit 124, never as a stuck suite.
Result cli(const std::string& args, int timeout_s = 120) {
  return test::sh("timeout -k 5 " + std::to_string(timeout_s) + " " + TEXPLAN_CLI + " " + args);
}

// Non-zero exit, not a crash (signal) or a hang (124), and one line
// "texplan: error: ..." holding every needle.
void expect_cli_error(const Result& r, const std::vector<std::string>& needles) {
  show(r.out);
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_NE(r.code, 124) << "timed out: " << r.out;
  EXPECT_GT(r.code, 0) << "killed by a signal: " << r.out;
  EXPECT_LT(r.code, 124) << r.out;
  EXPECT_EQ(r.out.rfind("texplan: error: ", 0), 0u) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  for (const auto& n : needles) EXPECT_NE(r.out.find(n), std::string::npos) << "'" << n << "' not in: " << r.out;
}

// A named case through the CLI too: `texplan plan` exits 1 with the import's
// message as its one line, and the message names the model and `what`.
void expect_plan_refuses(const std::string& path, const std::string& model, const std::string& what) {
  const std::string e = import_error(path);
  expect_named(e, model, what);
  expect_cli_error(cli("plan " + path), {"texplan: error: " + e + "\n"});
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), {});
}

void write_file(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary);
  f << bytes;
}

onnx::TensorProto* external(OnnxBuilder& b, const std::string& name, const std::vector<int64_t>& dims,
                            const std::string& location) {
  auto* w = b.initializer(name, dims, {});
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* kv = w->add_external_data();
  kv->set_key("location");
  kv->set_value(location);
  return w;
}

// y = x + w with w [1, n] in external data at `location`; writes an input
// beside it so `texplan run` has something to feed.
std::string external_model(const fs::path& dir, const std::string& name, const std::string& location,
                           int64_t n = 5000) {
  OnnxBuilder b;
  b.input("x", {1, n}).output("y");
  external(b, "w", {1, n}, location);
  b.node("Add", {"x", "w"}, {"y"}, "add");
  std::string path = b.save(dir, name);
  fs::create_directories(dir / name / "test_data_set_0");
  save_tensor_pb(HostTensor(DataType::Float32, {1, n}), "x", (dir / name / "test_data_set_0/input_0.pb").string());
  return path;
}

std::string input_pb(const fs::path& dir, const std::string& file, DataType t, Shape s) {
  std::string p = (dir / file).string();
  save_tensor_pb(HostTensor(t, std::move(s)), "x", p);
  return p;
}

}  // namespace

// ---- truncated and corrupted protobuf ---------------------------------------

// Every byte of a real model flipped, and the model cut at every length:
// each import either succeeds (then the graph plans and runs on the CPU
// reference, or fails cleanly) or throws one line naming the model.
TEST(HostileProtobuf, EveryByteFlippedAndEveryTruncationOfTinyCnn) {
  const std::string good = slurp(kTiny / "tiny_cnn.onnx");
  ASSERT_GT(good.size(), 1000u);
  const fs::path dir = test::temp_dir("flip") / "tiny_cnn";
  fs::create_directories(dir);
  fs::copy_file(kTiny / "tiny_cnn.onnx.data", dir / "tiny_cnn.onnx.data", fs::copy_options::overwrite_existing);
  const HostTensor input = load_tensor_pb((kTiny / "test_data_set_0/input_0.pb").string());
  const std::string path = (dir / "tiny_cnn.onnx").string();
  int imported = 0, refused = 0;
  auto attempt = [&](const std::string& bytes, const std::string& what) {
    write_file(path, bytes);
    std::string e = import_error(path, {.load_weights = true});
    if (!e.empty()) {
      ++refused;
      SCOPED_TRACE(what);
      EXPECT_EQ(e.find('\n'), std::string::npos) << e;
      EXPECT_NE(e.find("tiny_cnn"), std::string::npos) << e;
      return;
    }
    ++imported;
    try {  // a corrupted but valid model plans and runs, or fails cleanly
      Graph g = import_onnx(path, {.load_weights = true});
      PlanInput pin = make_usage_records(g);
      plan::DeviceProfile dev = plan::DeviceProfile::load("pocl");
      plan::MemoryPlan p = plan::plan_memory(pin.records, dev, "best");
      plan::validate(p, pin.records, dev);
      if (g.inputs.size() == 1 && g.tensors[g.inputs[0]].shape == input.shape) {
        runtime::CpuExecutor cpu(g, pin, p);
        cpu.run({input});
      }
    } catch (const Error&) {
    } catch (const plan::PlanError&) {
    } catch (const std::exception& e) {
      ADD_FAILURE() << what << ": " << typeid(e).name() << " escaped: " << e.what();
    }
  };
  for (size_t k = 0; k < good.size(); ++k) {
    std::string bad = good;
    bad[k] = char(bad[k] ^ (k % 2 ? 0xFF : 0x80));
    attempt(bad, "byte " + std::to_string(k) + " flipped");
  }
  for (size_t len = 0; len < good.size(); len += 3) attempt(good.substr(0, len), "cut at " + std::to_string(len));
  EXPECT_GT(refused, 1000);
  EXPECT_GT(imported, 10);  // names, doc strings, weights: many flips leave a valid model
  // Through the CLI, cut and corrupted: exit 1 and one line, from plan and run alike.
  for (const auto& [bytes, what] : std::vector<std::pair<std::string, std::string>>{
           {good.substr(0, good.size() / 2), "cut in half"}, {"\x88" + good.substr(1), "first byte flipped"}}) {
    SCOPED_TRACE(what);
    write_file(path, bytes);
    expect_cli_error(cli("plan " + path), {"tiny_cnn", "is not an ONNX model (protobuf parse failed"});
    expect_cli_error(cli("run " + path + " --device cpu"), {"tiny_cnn", "is not an ONNX model (protobuf parse failed"});
  }
}

// Subgraphs nested a thousand deep (If inside If...): protobuf refuses
// nesting beyond 100 levels, so parsing cannot exhaust the stack; shallower
// subgraphs are refused by name (texplan runs no control flow).
TEST(HostileProtobuf, DeepNestingIsRefused) {
  auto dir = test::temp_dir("deep");
  auto nest = [](int levels) {
    OnnxBuilder b;
    b.input("c", {}, onnx::TensorProto::BOOL).output("y");
    onnx::GraphProto inner;
    inner.set_name("leaf");
    for (int i = 0; i < levels; ++i) {
      onnx::GraphProto outer;
      outer.set_name("level" + std::to_string(i));
      auto* n = outer.add_node();
      n->set_op_type("If");
      n->add_input("c");
      n->add_output("y");
      auto* then_branch = n->add_attribute();  // the nesting goes down this branch only
      then_branch->set_name("then_branch");
      then_branch->set_type(onnx::AttributeProto::GRAPH);
      then_branch->mutable_g()->Swap(&inner);
      auto* else_branch = n->add_attribute();
      else_branch->set_name("else_branch");
      else_branch->set_type(onnx::AttributeProto::GRAPH);
      else_branch->mutable_g()->set_name("leaf");
      inner = std::move(outer);
    }
    *b.m.mutable_graph()->add_node() = inner.node(0);
    return b;
  };
  std::string e = import_error(nest(1000).save(dir, "deep"));
  expect_named(e, "deep", "is not an ONNX model (protobuf parse failed");
  e = import_error(nest(3).save(dir, "shallow"));
  show(e);
  EXPECT_FALSE(e.empty());
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
}

// ---- opsets and operators ---------------------------------------------------

TEST(HostileModel, WrongOrFutureOpsetAndForeignDomains) {
  auto dir = test::temp_dir("opsets");
  auto relu = [](int64_t opset) {
    OnnxBuilder b(opset);
    b.input("x", {1, 4}).output("y");
    b.node("Relu", {"x"}, {"y"});
    return b;
  };
  expect_plan_refuses(relu(6).save(dir, "old"), "old", "opset 6 is not supported (supported: 7 to 21)");
  expect_plan_refuses(relu(22).save(dir, "next"), "next", "opset 22 is not supported");
  expect_plan_refuses(relu(-3).save(dir, "negative"), "negative", "opset -3 is not supported");
  OnnxBuilder foreign = relu(13);
  foreign.m.mutable_opset_import(0)->set_domain("com.example");
  expect_plan_refuses(foreign.save(dir, "foreign"), "foreign", "imports no opset of the default ONNX domain");
  OnnxBuilder custom;
  custom.m.add_opset_import()->set_domain("com.microsoft");
  custom.input("x", {1, 4}).output("y");
  custom.node("FusedGelu", {"x"}, {"y"}, "gelu7")->set_domain("com.microsoft");
  expect_plan_refuses(custom.save(dir, "custom"), "custom", "node 'gelu7': unknown operator 'com.microsoft.FusedGelu'");
  // An operator used with inputs or attributes its schema does not have.
  OnnxBuilder arity;
  arity.input("x", {1, 4}).output("y");
  arity.node("Relu", {"x", "x"}, {"y"}, "two_in");
  expect_plan_refuses(arity.save(dir, "arity"), "arity", "node 'two_in' (Relu)");
  OnnxBuilder attr;
  attr.input("x", {1, 4}).output("y");
  OnnxBuilder::attr_int(attr.node("Relu", {"x"}, {"y"}, "odd_attr"), "alpha", 2);
  expect_plan_refuses(attr.save(dir, "attr"), "attr", "node 'odd_attr' (Relu)");
}

TEST(HostileModel, TooManyNodesIsRefusedRightAfterParsing) {
  auto dir = test::temp_dir("maxnodes");
  OnnxBuilder b;
  b.input("x", {1, 4}).output("t10");
  for (int i = 0; i < 10; ++i) b.node("Relu", {i ? "t" + std::to_string(i) : "x"}, {"t" + std::to_string(i + 1)});
  std::string path = b.save(dir, "ten");
  ImportOptions opt;
  opt.max_nodes = 9;
  expect_named(import_error(path, opt), "ten", "the graph has 10 nodes, more than the 9 texplan accepts");
  opt.max_nodes = 10;
  EXPECT_EQ(import_error(path, opt), "");
}

// ---- graph structure ----------------------------------------------------------

TEST(HostileModel, MissingGraphInputAndDanglingNames) {
  auto dir = test::temp_dir("dangling");
  OnnxBuilder undeclared;  // reads "x", which no input declares
  undeclared.input("other", {1, 4}).output("y");
  undeclared.node("Add", {"other", "x"}, {"y"}, "adder");
  expect_plan_refuses(undeclared.save(dir, "undeclared"), "undeclared", "node 'adder' reads 'x', which nothing produces");
  OnnxBuilder later;  // an intermediate nothing produces
  later.input("x", {1, 4}).output("y");
  later.node("Relu", {"x"}, {"a"}, "first");
  later.node("Add", {"a", "ghost"}, {"y"}, "second");
  expect_plan_refuses(later.save(dir, "ghost"), "ghost", "node 'second' reads 'ghost'");
  OnnxBuilder no_out;  // a graph output nothing produces
  no_out.input("x", {1, 4}).output("y").output("z");
  no_out.node("Relu", {"x"}, {"y"});
  expect_plan_refuses(no_out.save(dir, "noout"), "noout", "graph output 'z' is produced by no node");
}

TEST(HostileModel, SelfLoopIsACycle) {
  auto dir = test::temp_dir("selfloop");
  OnnxBuilder b;
  b.input("x", {1, 4}).output("y");
  b.node("Add", {"x", "a"}, {"a"}, "ouroboros");
  b.node("Relu", {"a"}, {"y"});
  const std::string path = b.save(dir, "selfloop");
  expect_plan_refuses(path, "selfloop", "ouroboros");
  EXPECT_NE(import_error(path).find("cycle"), std::string::npos);
}

TEST(HostileModel, DuplicateTensorNames) {
  auto dir = test::temp_dir("dups");
  struct Case {
    std::string model, message;
    std::function<void(OnnxBuilder&)> build;
  };
  std::vector<Case> cases = {
      {"two_producers", "tensor 'a' is defined twice, by node 'n1' and by node 'n2'",
       [](OnnxBuilder& b) {
         b.input("x", {1, 4}).output("y");
         b.node("Relu", {"x"}, {"a"}, "n1");
         b.node("Neg", {"x"}, {"a"}, "n2");
         b.node("Relu", {"a"}, {"y"});
       }},
      {"overwrites_input", "tensor 'x' is defined twice, by a graph input and by node 'n1'",
       [](OnnxBuilder& b) {
         b.input("x", {1, 4}).output("y");
         b.node("Relu", {"x"}, {"x"}, "n1");
         b.node("Relu", {"x"}, {"y"});
       }},
      {"overwrites_weight", "tensor 'w' is defined twice, by an initializer and by node 'n1'",
       [](OnnxBuilder& b) {
         b.input("x", {1, 4}).output("y");
         b.initializer("w", {1, 4}, {1, 2, 3, 4});
         b.node("Relu", {"x"}, {"w"}, "n1");
         b.node("Add", {"x", "w"}, {"y"});
       }},
      {"two_inputs", "tensor 'x' is defined twice, by a graph input and by a graph input",
       [](OnnxBuilder& b) {
         b.input("x", {1, 4}).input("x", {1, 4}).output("y");
         b.node("Relu", {"x"}, {"y"});
       }},
      {"two_weights", "tensor 'w' is defined twice, by an initializer and by an initializer",
       [](OnnxBuilder& b) {
         b.input("x", {1, 4}).output("y");
         b.initializer("w", {1, 4}, {1, 2, 3, 4});
         b.initializer("w", {1, 4}, {5, 6, 7, 8});
         b.node("Add", {"x", "w"}, {"y"});
       }},
      {"one_node_twice", "tensor 'a' is defined twice, by node 'split' and by node 'split'",
       [](OnnxBuilder& b) {
         b.input("x", {2, 4}).output("a");
         b.node("Split", {"x"}, {"a", "a"}, "split");
       }},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.model);
    OnnxBuilder b;
    c.build(b);
    expect_plan_refuses(b.save(dir, c.model), c.model, c.message);
  }
  // An initializer that is also a graph input (how weights were declared
  // before IR 4) is one tensor: a constant, not an input to feed.
  OnnxBuilder old;
  old.input("x", {1, 4}).input("w", {1, 4}).output("y");
  old.initializer("w", {1, 4}, {1, 2, 3, 4});
  old.node("Add", {"x", "w"}, {"y"});
  Graph g = import_onnx(old.save(dir, "old_style"));
  ASSERT_EQ(g.inputs.size(), 1u);
  EXPECT_TRUE(g.tensors[g.find("w")].is_constant);
}

// ---- dims ---------------------------------------------------------------------

TEST(HostileModel, NegativeDims) {
  auto dir = test::temp_dir("negdims");
  OnnxBuilder in;
  in.input("x", {1, 4}).output("y");
  in.m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1)->set_dim_value(-4);
  in.node("Relu", {"x"}, {"y"});
  expect_plan_refuses(in.save(dir, "neg_input"), "neg_input", "graph input 'x': negative dimension -4");
  OnnxBuilder w;
  w.input("x", {1, 4}).output("y");
  w.initializer("w", {-1, 4}, {1, 2, 3, 4});
  w.node("Add", {"x", "w"}, {"y"});
  expect_plan_refuses(w.save(dir, "neg_weight"), "neg_weight", "initializer 'w': negative dimension in shape -1x4");
  EXPECT_NE(import_error(dir / "neg_weight", {.load_weights = true}).find("negative dimension"), std::string::npos);
  // A negative size made by ConstantOfShape, alone and read by GatherND,
  // whose ONNX inference indexed dimensions before the first with it
  // (fuzz/regressions/shapes/onnx-gathernd-negative-index-depth).
  OnnxBuilder fill;
  fill.input("x", {1}).output("y");
  fill.initializer_i64("shape", {1}, {-1});
  fill.node("ConstantOfShape", {"shape"}, {"y"}, "fill");
  expect_plan_refuses(fill.save(dir, "neg_fill"), "neg_fill", "node 'fill' (ConstantOfShape): shape value -1 is negative");
  OnnxBuilder gnd;
  gnd.input("x", {1}).output("y");
  gnd.initializer_i64("shape", {1}, {-1});
  gnd.node("ConstantOfShape", {"shape"}, {"k"}, "fill");
  OnnxBuilder::attr_int(gnd.node("Cast", {"k"}, {"i"}, "cast"), "to", onnx::TensorProto::INT64);
  gnd.node("GatherND", {"k", "i"}, {"y"}, "gather");
  expect_plan_refuses(gnd.save(dir, "neg_gathernd"), "neg_gathernd", "shape value -1 is negative");
}

// GatherND's index depth (the indices' last dimension) must lie in
// [1, rank of data - batch_dims], and both ranks be 1 or more: ONNX's
// inference assumed it.
TEST(HostileModel, GatherNdIndexDepth) {
  auto dir = test::temp_dir("gathernd");
  auto model = [&](const std::string& name, const std::vector<int64_t>& data, const std::vector<int64_t>& indices) {
    OnnxBuilder b;
    b.input("x", data).output("y");
    int64_t n = 1;
    for (int64_t d : indices) n *= d;
    b.initializer_i64("i", indices, std::vector<int64_t>(size_t(n), 0));
    b.node("GatherND", {"x", "i"}, {"y"}, "gather");
    return b.save(dir, name);
  };
  expect_plan_refuses(model("too_deep", {2, 3}, {4, 3}), "too_deep", "indices' last dimension 3 is not in [1, 2]");
  expect_plan_refuses(model("zero_deep", {2, 3}, {4, 0}), "zero_deep", "indices' last dimension 0 is not in [1, 2]");
  expect_plan_refuses(model("scalar_indices", {2, 3}, {}), "scalar_indices", "rank of 1 or more");
  EXPECT_EQ(cli("plan " + model("fine", {2, 3}, {4, 2})).code, 0);
}

// A zero-sized tensor is legal: it plans to zero bytes and runs.
TEST(HostileModel, ZeroDimsPlanAndRun) {
  auto dir = test::temp_dir("zerodims");
  OnnxBuilder b;
  b.input("x", {1, 0, 4}).output("y");
  b.node("Relu", {"x"}, {"a"});
  b.node("Neg", {"a"}, {"y"});
  std::string path = b.save(dir, "zero");
  Result p = cli("plan " + path);
  EXPECT_EQ(p.code, 0) << p.out;
  EXPECT_NE(p.out.find("lower bound: 0 B"), std::string::npos) << p.out;
  std::string in = input_pb(dir, "x.pb", DataType::Float32, {1, 0, 4});
  for (const char* device : {"cpu", "pocl"}) {
    Result r = cli("run " + path + " --device " + device + " --input " + in);
    EXPECT_EQ(r.code, 0) << device << ": " << r.out;
  }
}

// Sizes that overflow 64 bits, or that a header claims without the bytes
// behind them, are refused before anything is allocated.
TEST(HostileModel, OverflowingAndUnbackedSizesAllocateNothing) {
  auto dir = test::temp_dir("hugedims");
  OnnxBuilder over;  // 2^80 elements
  over.input("x", {1, 4}).output("y");
  over.initializer("w", {1LL << 40, 1LL << 40}, {});
  over.node("Add", {"x", "w"}, {"y"});
  expect_plan_refuses(over.save(dir, "over"), "over", "initializer 'w': shape 1099511627776x1099511627776 overflows");
  OnnxBuilder bytes_max;  // just under 2^59 int64s (2^62 bytes): a legal size, but no data behind it
  bytes_max.input("x", {1, 4}, onnx::TensorProto::INT64).output("y");
  bytes_max.initializer_i64("w", {1LL << 29, (1LL << 30) - 1}, {});
  bytes_max.node("Add", {"x", "w"}, {"y"});
  std::string e = import_error(bytes_max.save(dir, "bytes_max"), {.load_weights = true});
  expect_named(e, "bytes_max", "initializer 'w': holds 0 values, its shape 536870912x1073741823 needs 576460751766552576");
  OnnxBuilder raw;  // 2^33 floats declared, 4 bytes present
  raw.input("x", {1}).output("y");
  auto* w = raw.m.mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(1LL << 33);
  w->set_raw_data(std::string(4, '\0'));
  raw.node("Add", {"x", "w"}, {"y"});
  expect_named(import_error(raw.save(dir, "raw"), {.load_weights = true}), "raw",
               "initializer 'w': raw data has 4 bytes, its shape 8589934592 needs 34359738368");
  OnnxBuilder attr;  // a Constant node's tensor attribute claims 2^35 floats
  attr.input("x", {1}).output("y");
  auto* c = attr.node("Constant", {}, {"k"}, "konst");
  auto* a = c->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  a->mutable_t()->add_dims(1LL << 35);
  a->mutable_t()->add_float_data(1);
  attr.node("Add", {"x", "k"}, {"y"});
  e = import_error(attr.save(dir, "attr"));
  EXPECT_FALSE(e.empty());
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  EXPECT_NE(e.find("attr"), std::string::npos) << e;
  // A legal but huge activation (ConstantOfShape to 2^40 floats): planned
  // (4 TiB), never materialised while importing, refused by run.
  OnnxBuilder big;
  big.input("x", {1}).output("y");
  big.initializer_i64("shape", {2}, {1LL << 20, 1LL << 20});
  big.node("ConstantOfShape", {"shape"}, {"k"}, "fill");
  big.node("Add", {"x", "k"}, {"y"}, "add");
  std::string path = big.save(dir, "big");
  Result p = cli("plan " + path + " --strategy best");
  EXPECT_EQ(p.code, 0) << p.out;
  EXPECT_NE(p.out.find("TiB"), std::string::npos) << p.out;
  std::string in = input_pb(dir, "x1.pb", DataType::Float32, {1});
  expect_cli_error(cli("run " + path + " --device pocl --input " + in), {"big", "pool 0", "exceeds"});
  expect_cli_error(cli("run " + path + " --device cpu --input " + in), {"big", "pool 0", "exceeds"});
}

// Folding evaluates constant subgraphs at import: it must stay cheap and small.
TEST(HostileModel, FoldingNeverComputesOrAllocatesWithoutBound) {
  auto dir = test::temp_dir("fold");
  // A MatMul of two 2048x2048 constants (8.6 GFLOP) stays a node.
  OnnxBuilder mm;
  mm.input("x", {2048, 2048}).output("y");
  mm.initializer("a", {2048, 2048}, std::vector<float>(2048 * 2048, 1.0f));
  mm.initializer("b", {2048, 2048}, std::vector<float>(2048 * 2048, 1.0f));
  mm.node("MatMul", {"a", "b"}, {"ab"}, "heavy");
  mm.node("Add", {"x", "ab"}, {"y"});
  auto t0 = std::chrono::steady_clock::now();
  Graph g = import_onnx(mm.save(dir, "matmul"));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 60.0);
  EXPECT_EQ(g.nodes.size(), 2u);
  // OneHot's depth sets its output size, which ONNX's inference does not
  // compute: folding would make 2^40 floats. It stays a node instead, and
  // the import refuses the unknown shape.
  OnnxBuilder hot;
  hot.input("x", {1}).output("y");
  hot.initializer_i64("indices", {1}, {0});
  hot.initializer_i64("depth", {}, {1LL << 40});
  hot.initializer("values", {2}, {0, 1});
  hot.node("OneHot", {"indices", "depth", "values"}, {"h"}, "hot");
  hot.node("Add", {"x", "h"}, {"y"});
  t0 = std::chrono::steady_clock::now();
  std::string e = import_error(hot.save(dir, "onehot"));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 60.0);
  expect_named(e, "onehot", "cannot make the shape of tensor 'h' (output of node 'hot', OneHot) static");
}

// ---- external data -------------------------------------------------------------

TEST(HostileExternalData, MissingIsFineForPlanAndAnErrorForRun) {
  auto dir = test::temp_dir("extmissing");
  std::string path = external_model(dir, "absent", "absent.onnx.data");
  Result p = cli("plan " + path);
  EXPECT_EQ(p.code, 0) << p.out;
  expect_cli_error(cli("run " + path + " --device cpu"), {"absent", "initializer 'w'", "missing weights file"});
}

TEST(HostileExternalData, ShorterThanItsTensors) {
  auto dir = test::temp_dir("extshort");
  std::string path = external_model(dir, "short", "short.onnx.data");
  write_file(dir / "short" / "short.onnx.data", std::string(5000 * 4 - 1, '\0'));  // one byte short
  EXPECT_EQ(cli("plan " + path).code, 0);  // planning does not read big weights
  expect_cli_error(cli("run " + path + " --device cpu"), {"short", "initializer 'w'", "lies beyond the end", "(19999 bytes)"});
  // Offsets and lengths that do not fit, or are not numbers.
  for (auto [key, value, message] : std::vector<std::array<std::string, 3>>{
           {"offset", "9223372036854775807", "lies beyond the end"},
           {"offset", "-4", "offset '-4' is not a non-negative integer"},
           {"length", "12abc", "length '12abc' is not a non-negative integer"},
           {"length", "4", "external data length 4 does not match its shape"}}) {
    SCOPED_TRACE(key + "=" + value);
    OnnxBuilder b;
    b.input("x", {1, 4}).output("y");
    auto* kv = external(b, "w", {1, 4}, "w.bin")->add_external_data();
    kv->set_key(key);
    kv->set_value(value);
    b.node("Add", {"x", "w"}, {"y"});
    std::string m = b.save(dir, "bad_" + key);
    write_file(dir / ("bad_" + key) / "w.bin", std::string(16, '\0'));
    expect_named(import_error(m, {.load_weights = true}), "bad_" + key, message);
  }
}

// A location may not leave the model's folder, whether by an absolute path,
// by `..`, or by a symlink: refused by `plan` (which does not even read big
// weights) and by `run`. Nor may it name a FIFO or a folder (a read that
// blocks or never ends).
TEST(HostileExternalData, LocationsEscapingTheFolderAreRefusedByPlanAndRun) {
  auto dir = test::temp_dir("extescape");
  fs::create_directories(dir / "outside");
  const fs::path secret = dir / "outside" / "secret.bin";
  write_file(secret, std::string(5000 * 4, 'S'));
  struct Case {
    std::string model, location, message;
  };
  std::vector<Case> cases = {
      {"absolute", secret.string(), "must be a relative path"},
      {"dotdot", "../../outside/secret.bin", "leaves the model's folder"},
      {"inner_dotdot", "sub/../../../outside/secret.bin", "leaves the model's folder"},
      {"symlink", "link.bin", "leaves the model's folder"},
      {"symlinked_dir", "linkdir/secret.bin", "leaves the model's folder"},
      {"fifo", "pipe", "is not a regular file"},
      {"folder", "sub", "is not a regular file"},
      {"empty", "", "must be a relative path"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.model);
    std::string path = external_model(dir, c.model, c.location);
    const fs::path folder = dir / c.model;
    fs::create_directories(folder / "sub");
    if (c.model == "symlink") fs::create_symlink(secret, folder / "link.bin");
    if (c.model == "symlinked_dir") fs::create_directory_symlink(dir / "outside", folder / "linkdir");
    if (c.model == "fifo") {
      ASSERT_EQ(mkfifo((folder / "pipe").c_str(), 0600), 0);
    }
    expect_cli_error(cli("plan " + path, 60), {c.model, "initializer 'w'", c.message});
    expect_cli_error(cli("run " + path + " --device cpu", 60), {c.model, "initializer 'w'", c.message});
  }
  // A symlink that stays inside the folder is fine.
  std::string inside = external_model(dir, "inside", "alias.bin");
  write_file(dir / "inside" / "real.bin", std::string(5000 * 4, '\0'));
  fs::create_symlink("real.bin", dir / "inside" / "alias.bin");
  Result r = cli("run " + inside + " --device cpu");
  EXPECT_EQ(r.code, 0) << r.out;
}

// ---- scale ---------------------------------------------------------------------

namespace {

// A Relu chain of n nodes, serialized node by node (the model is never held
// as one ModelProto here, so the test itself stays small).
void write_relu_chain(const fs::path& file, int64_t n) {
  auto varint = [](std::string& s, uint64_t v) {
    do {
      uint8_t b = v & 0x7F;
      v >>= 7;
      s.push_back(char(v ? b | 0x80 : b));
    } while (v);
  };
  auto name = [](int64_t i) { return i ? "t" + std::to_string(i) : std::string("x"); };
  OnnxBuilder b;
  b.input("x", {1, 16}).output(name(n));
  std::string graph;
  b.m.graph().SerializeToString(&graph);
  onnx::NodeProto node;
  node.set_op_type("Relu");
  node.add_input();
  node.add_output();
  std::string one;
  for (int64_t i = 0; i < n; ++i) {
    node.set_name("n" + std::to_string(i));
    node.set_input(0, name(i));
    node.set_output(0, name(i + 1));
    node.SerializeToString(&one);
    graph.push_back(char(0x0A));  // GraphProto.node, field 1, length-delimited
    varint(graph, one.size());
    graph += one;
  }
  b.m.clear_graph();
  std::string model;
  b.m.SerializeToString(&model);
  model.push_back(char(0x3A));  // ModelProto.graph, field 7, length-delimited
  varint(model, graph.size());
  model += graph;
  write_file(file, model);
}

}  // namespace

// Two million nodes: refused right after parsing (ImportOptions::max_nodes),
// in bounded time and memory. A quarter million: planned, and the plan is
// the obvious one (two tensors alternate).
TEST(HostileScale, MillionsOfNodes) {
  auto dir = test::temp_dir("scale");
  fs::create_directories(dir / "chain2m");
  write_relu_chain(dir / "chain2m" / "chain2m.onnx", 2000000);
  expect_cli_error(cli("plan " + (dir / "chain2m").string(), 300),
                   {"chain2m", "the graph has 2000000 nodes, more than the 1000000 texplan accepts"});
  fs::remove_all(dir / "chain2m");

  fs::create_directories(dir / "chain250k");
  write_relu_chain(dir / "chain250k" / "chain250k.onnx", 250000);
  std::string json = (dir / "chain250k.json").string();
  // As imported (unfused, out of place, file order): fusion and in-place
  // would leave 3 tensors of the chain, and the point is planning 250k.
  Result r = cli("plan " + (dir / "chain250k").string() + " --strategy best --no-fuse --no-inplace --order file --json " + json,
                 300);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("250001 tensors to place"), std::string::npos) << r.out;
  std::string report = slurp(json);
  EXPECT_NE(report.find("\"tensors_omitted\": true"), std::string::npos);
  EXPECT_NE(report.find("\"total_bytes\": 256"), std::string::npos);  // two 64-byte tensors, 128-byte aligned
  EXPECT_LT(report.size(), 100000u);
}

// ---- inputs ---------------------------------------------------------------------

TEST(HostileInputs, WrongTypeCountOrFile) {
  auto dir = test::temp_dir("inputs");
  const std::string tiny = kTiny.string();
  std::string as_int = input_pb(dir, "int.pb", DataType::Int64, {1, 3, 32, 32});
  for (const char* device : {"cpu", "pocl"}) {
    SCOPED_TRACE(device);
    std::string d = std::string(" --device ") + device;
    expect_cli_error(cli("run " + tiny + d + " --input " + as_int),
                     {"tiny_cnn", "input 'input' must be float32 1x3x32x32, got int64 1x3x32x32"});
    expect_cli_error(cli("run " + tiny + d + " --input " + as_int + " --input " + as_int),
                     {"tiny_cnn", "expects 1 input(s), got 2"});
  }
  // An input file that is not a tensor, or claims more than it holds.
  write_file(dir / "junk.pb", std::string("\x08\x01\x08", 3));
  expect_cli_error(cli("run " + tiny + " --device cpu --input " + (dir / "junk.pb").string()),
                   {"junk.pb", "not a serialized onnx.TensorProto"});
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : {1LL, 3LL, 1LL << 20, 1LL << 20}) t.add_dims(d);
  t.set_raw_data(std::string(16, '\0'));
  write_file(dir / "liar.pb", t.SerializeAsString());
  expect_cli_error(cli("run " + tiny + " --device cpu --input " + (dir / "liar.pb").string()),
                   {"liar.pb", "raw data has 16 bytes"});
}

// Sizes asked for on the command line are bounded too.
TEST(HostileInputs, RandomGraphOfAHundredBillionTensorsIsRefused) {
  expect_cli_error(cli("plan --random-graph 100000000000", 60),
                   {"random graphs are limited to 20000000 tensors, asked for 100000000000"});
}
