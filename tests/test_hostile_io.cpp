// Hostile files, failing writes, memory shortage and integer extremes (issue
// 26): each ends in one clear line and a non-zero exit (or a Python
// exception), never a hang, a signal, a partial file or a silent wrong
// result. CLI runs go through `timeout`, so a hang shows as exit 124.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>

#include "graph/safe_file.h"
#include "import/onnx_import.h"
#include "onnx_builder.h"
#include "reference/reference_ops.h"
#include "shell.h"

using namespace texplan;
using texplan::test::OnnxBuilder;
namespace fs = std::filesystem;

namespace {

const fs::path kTiny = fs::path(TEXPLAN_SOURCE_DIR) / "examples/models/tiny_cnn";
constexpr int64_t kMin = std::numeric_limits<int64_t>::min(), kMax = std::numeric_limits<int64_t>::max();

// ASan reserves terabytes of address space for its shadow memory at start,
// which no `ulimit -v` allows: the memory-limit cases cannot run under it.
#if defined(__SANITIZE_ADDRESS__)
#define SKIP_UNDER_ADDRESS_SANITIZER() GTEST_SKIP() << "ulimit -v leaves no room for ASan's shadow memory"
#else
#define SKIP_UNDER_ADDRESS_SANITIZER() (void)0
#endif

test::ShellResult cli(const std::string& args, const std::string& limits = "") {
  return test::sh("timeout -k 5 30 sh -c '" + limits + " exec " + TEXPLAN_CLI + " " + args + "'");
}

// Non-zero exit, not a signal or a timeout, one line "texplan: error: ..."
// holding every needle.
void expect_cli_error(const test::ShellResult& r, const std::vector<std::string>& needles) {
  EXPECT_GT(r.code, 0) << "killed by a signal: " << r.out;
  EXPECT_LT(r.code, 124) << "timed out or aborted: " << r.out;
  const size_t at = r.out.find("texplan: error: ");
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string line = r.out.substr(at);
  EXPECT_EQ(std::count(line.begin(), line.end(), '\n'), 1) << r.out;
  for (const auto& n : needles) EXPECT_NE(line.find(n), std::string::npos) << "'" << n << "' not in: " << r.out;
}

// tiny_cnn copied into a fresh folder, so its test data can be replaced.
fs::path tiny_copy(const std::string& tag) {
  const fs::path d = test::temp_dir("hostile-io-" + tag) / "tiny_cnn";
  fs::remove_all(d);
  fs::copy(kTiny, d, fs::copy_options::recursive);
  return d;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), {});
}

// ---- files read ----------------------------------------------------------------

TEST(HostileRead, FifoInputIsRefusedNotWaitedOn) {
  const fs::path d = tiny_copy("fifo-in");
  const fs::path in = d / "test_data_set_0/input_0.pb";
  fs::remove(in);
  ASSERT_EQ(mkfifo(in.c_str(), 0600), 0);
  expect_cli_error(cli("run " + d.string() + " --device cpu"), {"tiny_cnn", "input_0.pb", "is a FIFO"});
  expect_cli_error(cli("run " + d.string() + " --device cpu --input " + in.string()), {"input_0.pb", "is a FIFO"});
  EXPECT_THROW(load_tensor_pb(in.string()), Error);
}

TEST(HostileRead, FifoReferenceOutputIsRefusedByCheck) {
  const fs::path d = tiny_copy("fifo-out");
  const fs::path out = d / "test_data_set_0/output_0.pb";
  fs::remove(out);
  ASSERT_EQ(mkfifo(out.c_str(), 0600), 0);
  expect_cli_error(cli("run " + d.string() + " --device cpu --check"), {"tiny_cnn", "output_0.pb", "is a FIFO"});
}

TEST(HostileRead, SymlinkToDevZeroIsRefused) {
  const fs::path d = tiny_copy("zero");
  const fs::path in = d / "test_data_set_0/input_0.pb";
  fs::remove(in);
  fs::create_symlink("/dev/zero", in);
  expect_cli_error(cli("run " + d.string() + " --device cpu"), {"tiny_cnn", "/dev/zero"});
  // Named by the user it need not be in the folder, but must be a file.
  expect_cli_error(cli("run " + d.string() + " --device cpu --input /dev/zero"),
                   {"'/dev/zero' is a character device, not a regular file"});
}

TEST(HostileRead, SymlinkOutsideTheModelFolderIsRefused) {
  const fs::path d = tiny_copy("outside");
  const fs::path in = d / "test_data_set_0/input_0.pb";
  const fs::path elsewhere = d.parent_path() / "elsewhere.pb";
  fs::rename(in, elsewhere);
  fs::create_symlink(elsewhere, in);
  expect_cli_error(cli("run " + d.string() + " --device cpu"), {"tiny_cnn", "outside the model's folder"});
  // A link that stays inside the folder is followed.
  fs::rename(elsewhere, d / "inside.pb");
  fs::remove(in);
  fs::create_symlink("../inside.pb", in);
  EXPECT_EQ(cli("run " + d.string() + " --device cpu --check").code, 0);
}

TEST(HostileRead, WeightsFileThatIsAFifoIsRefused) {
  const fs::path d = tiny_copy("fifo-weights");
  fs::remove(d / "tiny_cnn.onnx.data");
  ASSERT_EQ(mkfifo((d / "tiny_cnn.onnx.data").c_str(), 0600), 0);
  expect_cli_error(cli("run " + d.string() + " --device cpu"), {"tiny_cnn", "not a regular file"});
}

TEST(HostileRead, ModelFileThatIsAFifoIsRefused) {
  const fs::path d = test::temp_dir("hostile-io-fifo-model");
  const fs::path m = d / "m.onnx";
  fs::remove(m);
  ASSERT_EQ(mkfifo(m.c_str(), 0600), 0);
  expect_cli_error(cli("plan " + m.string()), {"m.onnx"});
}

TEST(HostileRead, SafeFileHelpers) {
  const fs::path d = test::temp_dir("hostile-io-helpers");
  write_file(d / "a.bin", "0123456789");
  RegularFile f(d / "a.bin", "a");
  EXPECT_EQ(f.size(), 10);
  char b[4];
  f.read_at(6, b, 4);
  EXPECT_EQ(std::string(b, 4), "6789");
  EXPECT_THROW(f.read_at(7, b, 4), Error);
  EXPECT_THROW(RegularFile(d / "a.bin", "a", 9), Error);  // over the cap, refused before reading
  EXPECT_THROW(RegularFile("/dev/null", "null"), Error);
  EXPECT_THROW(RegularFile(d / "missing", "missing"), Error);
  EXPECT_EQ(confined_to(d, d / "a.bin", "x"), fs::canonical(d / "a.bin"));
  EXPECT_THROW(confined_to(d, d / ".." / "a.bin", "x"), Error);
}

// A Constant whose 1 GiB value is in external data (a sparse file) is
// planned from its header alone: under a 400 MB address-space limit the
// plan succeeds, which reading the bytes could not.
TEST(HostileRead, ExternalConstantIsNotReadByPlan) {
  const fs::path dir = test::temp_dir("hostile-io-constant");
  const int64_t n = int64_t(1) << 28;  // floats: 1 GiB
  OnnxBuilder b;
  b.input("x", {1});
  auto* c = b.node("Constant", {}, {"big"}, "big_constant");
  auto* a = c->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  auto* t = a->mutable_t();
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(n);
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* kv = t->add_external_data();
  kv->set_key("location");
  kv->set_value("big.bin");
  b.node("Mul", {"big", "x"}, {"y"}, "scale");
  b.output("y");
  const std::string path = b.save(dir, "big_constant");
  {
    std::ofstream f(dir / "big_constant/big.bin", std::ios::binary);
  }
  fs::resize_file(dir / "big_constant/big.bin", uintmax_t(n) * 4);
  SKIP_UNDER_ADDRESS_SANITIZER();
  const auto r = cli("-q plan " + path + " --strategy best", "ulimit -v 400000;");
  EXPECT_EQ(r.code, 0) << r.out;
  Graph g = import_onnx(path, {.load_weights = false});
  bool found = false;
  for (const auto& ten : g.tensors)
    if (ten.name == "big") {
      found = true;
      EXPECT_TRUE(ten.is_constant);
      EXPECT_FALSE(ten.has_data);
      EXPECT_EQ(ten.shape, Shape{n});
    }
  EXPECT_TRUE(found);
}

// ---- writes --------------------------------------------------------------------

TEST(HostileWrite, JsonToAFullDeviceFails) {
  expect_cli_error(cli("-q plan " + kTiny.string() + " --json /dev/full"),
                   {"tiny_cnn", "cannot write '/dev/full'", "No space left on device"});
  expect_cli_error(cli("-q run " + kTiny.string() + " --device cpu --json /dev/full"),
                   {"tiny_cnn", "cannot write '/dev/full'"});
  // A device that takes the bytes is written directly.
  EXPECT_EQ(cli("-q plan " + kTiny.string() + " --json /dev/null").code, 0);
}

TEST(HostileWrite, OutputTensorsToAFullDeviceFail) {
  const fs::path d = test::temp_dir("hostile-io-output");
  fs::create_directories(d / "out");
  fs::create_symlink("/dev/full", d / "out/output_0.pb");
  expect_cli_error(cli("-q run " + kTiny.string() + " --device cpu --output " + (d / "out").string()),
                   {"output_0.pb", "No space left on device"});
  EXPECT_THROW(save_tensor_pb(HostTensor(DataType::Float32, {4}), "t", "/dev/full"), Error);
}

// A write that fails half-way (here: over the file-size limit) leaves the
// old file as it was and no temporary beside it.
TEST(HostileWrite, FailedWriteLeavesNoPartialFile) {
  const fs::path d = test::temp_dir("hostile-io-partial");
  for (const auto& e : fs::directory_iterator(d)) fs::remove_all(e.path());
  const fs::path json = d / "plan.json", svg = d / "plan.svg";
  write_file(json, "old\n");
  expect_cli_error(cli("-q plan " + kTiny.string() + " --json " + json.string(), "trap \"\" XFSZ; ulimit -f 1;"),
                   {"tiny_cnn", "plan.json", "File too large"});
  expect_cli_error(cli("-q plan " + kTiny.string() + " --timeline " + svg.string(), "trap \"\" XFSZ; ulimit -f 1;"),
                   {"timeline", "plan.svg", "File too large"});
  EXPECT_EQ(slurp(json), "old\n");
  EXPECT_FALSE(fs::exists(svg));
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(d)) names.push_back(e.path().filename().string());
  EXPECT_EQ(names, std::vector<std::string>{"plan.json"});
  // The same command without the limit replaces the file whole.
  EXPECT_EQ(cli("-q plan " + kTiny.string() + " --json " + json.string()).code, 0);
  EXPECT_EQ(slurp(json).rfind("{", 0), 0u);
}

TEST(HostileWrite, WriteFileHelper) {
  const fs::path d = test::temp_dir("hostile-io-write");
  EXPECT_THROW(write_file("/dev/full", "x"), Error);
  EXPECT_THROW(write_file(d / "no-such-folder" / "x", "x"), Error);
  EXPECT_THROW(write_file(d, "x"), Error);  // a directory
  write_file(d / "x", "abc");
  EXPECT_EQ(slurp(d / "x"), "abc");
  fs::create_symlink(d / "x", d / "link");
  write_file(d / "link", "defg");  // through the link: the file it names is replaced
  EXPECT_TRUE(fs::is_symlink(d / "link"));
  EXPECT_EQ(slurp(d / "x"), "defg");
}

// ---- memory ----------------------------------------------------------------------

// y = ReduceMax(Expand(x, [2^28])): one 1 GiB activation pool.
std::string one_gib_pool_model(const fs::path& dir) {
  OnnxBuilder b;
  b.input("x", {1});
  b.initializer_i64("shape", {1}, {int64_t(1) << 28});
  b.node("Expand", {"x", "shape"}, {"big"}, "expand");
  OnnxBuilder::attr_int(b.node("ReduceMax", {"big"}, {"y"}, "reduce"), "keepdims", 1);
  b.output("y");
  const std::string path = b.save(dir, "one_gib_pool");
  fs::create_directories(dir / "one_gib_pool/test_data_set_0");
  save_tensor_pb(HostTensor(DataType::Float32, {1}), "x", (dir / "one_gib_pool/test_data_set_0/input_0.pb").string());
  return path;
}

// PoCL's device memory is host memory, allocated lazily: under a ulimit
// that cannot hold the pool, texplan says so instead of PoCL aborting.
TEST(HostileMemory, PoolBeyondTheHostsMemoryIsOutOfMemoryNotAnAbort) {
  const std::string path = one_gib_pool_model(test::temp_dir("hostile-io-pool"));
  SKIP_UNDER_ADDRESS_SANITIZER();
  const auto r = cli("run " + path + " --device pocl", "ulimit -v 1300000;");
  expect_cli_error(r, {"one_gib_pool", "out of memory", "pool 0"});
}

TEST(HostileMemory, ReferenceExecutorOutOfMemoryNamesTheModel) {
  const std::string path = one_gib_pool_model(test::temp_dir("hostile-io-cpu-oom"));
  SKIP_UNDER_ADDRESS_SANITIZER();
  const auto r = cli("run " + path + " --device cpu", "ulimit -v 600000;");
  expect_cli_error(r, {"one_gib_pool", "out of memory"});
  EXPECT_EQ(r.out.find("error: std::bad_alloc"), std::string::npos) << r.out;  // not a bare exception name
}

// ---- integer extremes in the reference -------------------------------------------

HostTensor i64(const std::vector<int64_t>& v) {
  HostTensor t(DataType::Int64, {int64_t(v.size())});
  std::copy(v.begin(), v.end(), t.data<int64_t>());
  return t;
}

HostTensor scalar_i64(int64_t v) {
  HostTensor t(DataType::Int64, {});
  t.data<int64_t>()[0] = v;
  return t;
}

Node node_of(const std::string& op) {
  Node n;
  n.name = op;
  n.op_type = op;
  return n;
}

TEST(HostileIntegers, SliceWithExtremeSteps) {
  const HostTensor x = i64({10, 11, 12, 13, 14});
  auto slice = [&](int64_t start, int64_t end, int64_t step) {
    const HostTensor s = i64({start}), e = i64({end}), a = i64({0}), st = i64({step});
    return reference::evaluate(node_of("Slice"), {&x, &s, &e, &a, &st}).at(0);
  };
  HostTensor y = slice(0, 5, kMax);
  ASSERT_EQ(y.shape, Shape{1});
  EXPECT_EQ(y.data<int64_t>()[0], 10);
  y = slice(-1, kMin, kMin);
  ASSERT_EQ(y.shape, Shape{1});
  EXPECT_EQ(y.data<int64_t>()[0], 14);
  y = slice(kMax, kMin, -2);
  ASSERT_EQ(y.shape, Shape{3});
  EXPECT_EQ(y.data<int64_t>()[2], 10);
  y = slice(kMin, kMax, 3);
  ASSERT_EQ(y.shape, Shape{2});
  EXPECT_EQ(y.data<int64_t>()[1], 13);
}

TEST(HostileIntegers, RangeOverTheWholeInt64) {
  const HostTensor lo = scalar_i64(kMin), hi = scalar_i64(kMax), quarter = scalar_i64(int64_t(1) << 62);
  HostTensor y = reference::evaluate(node_of("Range"), {&lo, &hi, &quarter}).at(0);
  ASSERT_EQ(y.shape, Shape{4});
  EXPECT_EQ(y.data<int64_t>()[0], kMin);
  EXPECT_EQ(y.data<int64_t>()[3], int64_t(1) << 62);
  const HostTensor one = scalar_i64(1), minus = scalar_i64(-1);
  EXPECT_THROW(reference::evaluate(node_of("Range"), {&lo, &hi, &one}), Error);
  EXPECT_THROW(reference::evaluate(node_of("Range"), {&hi, &lo, &minus}), Error);
  y = reference::evaluate(node_of("Range"), {&hi, &lo, &hi}).at(0);  // wrong direction: empty
  EXPECT_EQ(y.shape, Shape{0});
}

TEST(HostileIntegers, PadTileSplitOverflowFailClearly) {
  const HostTensor x(DataType::Float32, {2});
  const HostTensor pads = i64({kMax, 1}), reps = i64({int64_t(1) << 62});
  EXPECT_THROW(reference::evaluate(node_of("Pad"), {&x, &pads}), Error);
  const HostTensor pads_min = i64({kMin + 2, kMax});
  EXPECT_THROW(reference::evaluate(node_of("Pad"), {&x, &pads_min}), Error);
  EXPECT_THROW(reference::evaluate(node_of("Tile"), {&x, &reps}), Error);
  Node split = node_of("Split");
  split.outputs = {0, 1};
  const HostTensor sizes = i64({kMax, 3});
  EXPECT_THROW(reference::evaluate(split, {&x, &sizes}), Error);
}

}  // namespace
