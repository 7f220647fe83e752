// OpenCL runtime on PoCL: every kernel against the CPU reference on one-node
// graphs, plans proven by guard mode, device selection and error messages.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>

#include "optimize/usage.h"
#include "plan/memory_plan.h"
#include "reference/reference_ops.h"
#include "runtime/session.h"
#include "test_util.h"

using namespace texplan;
using test::random_tensor;
using test::test_device;
using test::rel_error;
using runtime::Session;

namespace {

std::shared_ptr<runtime::Device> pocl() { return runtime::open_device("pocl"); }

HostTensor ints(Shape s, std::vector<int64_t> v, DataType dt = DataType::Int64) {
  HostTensor t(dt, std::move(s));
  for (size_t i = 0; i < v.size(); ++i) {
    if (dt == DataType::Int64) t.data<int64_t>()[i] = v[i];
    else if (dt == DataType::Int32) t.data<int32_t>()[i] = int32_t(v[i]);
    else t.data<uint8_t>()[i] = uint8_t(v[i]);
  }
  return t;
}

HostTensor floats(Shape s, std::vector<float> v) {
  HostTensor t(DataType::Float32, std::move(s));
  std::memcpy(t.bytes.data(), v.data(), v.size() * 4);
  return t;
}

// One input of the node under test: fed at run time, a constant (weight),
// or omitted (optional input left out).
struct Operand {
  HostTensor value;
  enum Kind { Fed, Weight, Omitted } kind = Fed;
};
Operand fed(HostTensor t) { return {std::move(t), Operand::Fed}; }
Operand weight(HostTensor t) { return {std::move(t), Operand::Weight}; }
Operand omitted() { return {{}, Operand::Omitted}; }

struct OpCase {
  OpCase(std::string o, std::vector<Operand> in, std::map<std::string, Attribute> a = {}, int outs = 1)
      : op(std::move(o)), inputs(std::move(in)), attrs(std::move(a)), outputs(outs) {}
  std::string op;
  std::vector<Operand> inputs;
  std::map<std::string, Attribute> attrs;
  int outputs = 1;
};

// A graph of the one node; its outputs get the shapes and types the
// reference computes. `feeds` are the fed inputs, `expected` the reference.
Graph one_node_graph(const OpCase& c, std::vector<HostTensor>& feeds, std::vector<HostTensor>& expected) {
  Graph g;
  g.model_name = "test_" + c.op;
  g.opset = 13;
  Node n;
  n.name = c.op + "_0";
  n.op_type = c.op;
  n.attrs = c.attrs;
  std::vector<const HostTensor*> ref_in;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const Operand& o = c.inputs[i];
    if (o.kind == Operand::Omitted) {
      n.inputs.push_back(-1);
      ref_in.push_back(nullptr);
      continue;
    }
    Tensor t;
    t.name = "in" + std::to_string(i);
    t.dtype = o.value.dtype;
    t.shape = o.value.shape;
    if (o.kind == Operand::Weight) {
      t.is_constant = t.has_data = true;
      t.value = o.value;
    } else {
      t.is_input = true;
      feeds.push_back(o.value);
    }
    int id = g.add_tensor(t);
    if (o.kind == Operand::Fed) g.inputs.push_back(id);
    n.inputs.push_back(id);
    ref_in.push_back(&o.value);
  }
  for (int k = 0; k < c.outputs; ++k) n.outputs.push_back(k);  // placeholders for evaluate()
  expected = reference::evaluate(n, ref_in);
  n.outputs.clear();
  for (size_t k = 0; k < expected.size(); ++k) {
    Tensor t;
    t.name = "out" + std::to_string(k);
    t.dtype = expected[k].dtype;
    t.shape = expected[k].shape;
    t.is_output = true;
    t.producer = 0;
    int id = g.add_tensor(t);
    g.outputs.push_back(id);
    n.outputs.push_back(id);
  }
  g.nodes.push_back(n);
  return g;
}

plan::MemoryPlan best_plan(const PlanInput& pin) {
  return plan::plan_memory(pin.records, test_device()->info().profile, "best");
}

// Runs the case on PoCL and compares every output with the reference.
void expect_matches_reference(const OpCase& c, double tol = 1e-5, bool expect_kernel = true) {
  SCOPED_TRACE(c.op);
  std::vector<HostTensor> feeds, expected;
  Graph g = one_node_graph(c, feeds, expected);
  PlanInput pin = make_usage_records(g);
  plan::MemoryPlan plan = best_plan(pin);
  Session s(g, pin, plan, test_device());
  if (expect_kernel) {
    EXPECT_TRUE(s.fallback_nodes().empty()) << c.op << " fell back to the CPU";
  }
  std::vector<HostTensor> out = s.run(feeds);
  ASSERT_EQ(out.size(), expected.size());
  for (size_t k = 0; k < out.size(); ++k) {
    ASSERT_EQ(out[k].shape, expected[k].shape);
    ASSERT_EQ(out[k].dtype, expected[k].dtype);
    if (expected[k].dtype == DataType::Float32)
      EXPECT_LE(rel_error(out[k], expected[k]), tol) << c.op << " output " << k;
    else
      EXPECT_EQ(out[k].bytes, expected[k].bytes) << c.op << " output " << k;
  }
}

}  // namespace

// ---------------------------------------------------------------- devices

TEST(Device, PoclIsListedAndHasAProfile) {
  auto devices = runtime::list_devices();
  ASSERT_FALSE(devices.empty());
  auto d = pocl();
  EXPECT_EQ(d->info().type, "cpu");
  EXPECT_GT(d->info().compute_units, 0);
  const plan::DeviceProfile& p = d->info().profile;
  EXPECT_GT(p.global_mem_bytes, 0);
  EXPECT_GT(p.max_alloc_bytes, 0);
  EXPECT_GE(p.mem_base_addr_align, 4);
  EXPECT_FALSE(p.fp16);
  EXPECT_EQ(runtime::open_device("pocl").get(), d.get()) << "one Device per physical device";
  EXPECT_EQ(runtime::open_device("opencl:" + std::to_string(d->info().index)).get(), d.get());
}

// POCL_AFFINITY as this process started, before any OpenCL call.
const char* const kInitialPoclAffinity = std::getenv("POCL_AFFINITY");

// Listing devices pins PoCL's worker threads (POCL_AFFINITY=1) unless the
// user chose otherwise: the user's value stays.
TEST(Device, PoclThreadsPinnedUnlessTheUserChose) {
  ASSERT_FALSE(runtime::list_devices().empty());
  const char* now = std::getenv("POCL_AFFINITY");
  ASSERT_NE(now, nullptr);
  EXPECT_STREQ(now, kInitialPoclAffinity ? kInitialPoclAffinity : "1");
}

TEST(Device, SpecsThatMatchNothingListTheDevices) {
  for (std::string spec : {"opencl:99", "nonsense", "opencl:x"}) {
    try {
      runtime::open_device(spec);
      FAIL() << spec << " opened";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(spec), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("opencl:0"), std::string::npos) << e.what();
    }
  }
  bool has_gpu = false;
  for (auto& d : runtime::list_devices()) has_gpu = has_gpu || d.type == "gpu";
  if (!has_gpu) {
    EXPECT_THROW(runtime::open_device("gpu"), Error);
  }
}

// ---------------------------------------------------------------- elementwise

TEST(Kernels, Unary) {
  HostTensor x = random_tensor({2, 3, 5, 7}, -3, 3);
  HostTensor pos = random_tensor({3, 37}, 0.1f, 4);
  for (std::string op : {"Relu", "Sigmoid", "Tanh", "HardSwish", "Erf", "Exp", "Neg", "Abs", "Floor", "Ceil"})
    expect_matches_reference({op, {fed(x)}});
  for (std::string op : {"Log", "Reciprocal", "Sqrt"}) expect_matches_reference({op, {fed(pos)}});
  expect_matches_reference({"LeakyRelu", {fed(x)}, {{"alpha", Attribute::of_float(0.2f)}}});
  expect_matches_reference({"HardSigmoid", {fed(x)}, {{"alpha", Attribute::of_float(0.3f)}, {"beta", Attribute::of_float(0.4f)}}});
  expect_matches_reference({"Clip", {fed(x), weight(floats({}, {0})), weight(floats({}, {6}))}});
  expect_matches_reference({"Clip", {fed(x), omitted(), weight(floats({}, {0.5f}))}});
}

TEST(Kernels, BinaryBroadcasting) {
  HostTensor a = random_tensor({2, 3, 4, 5}, -2, 2, 1);
  for (std::string op : {"Add", "Sub", "Mul", "Div", "Max", "Min"}) {
    expect_matches_reference({op, {fed(a), fed(random_tensor({2, 3, 4, 5}, 0.5f, 2, 2))}});  // same shape
    expect_matches_reference({op, {fed(a), weight(random_tensor({3, 1, 1}, 0.5f, 2, 3))}});  // per channel
    expect_matches_reference({op, {weight(random_tensor({}, 0.5f, 2, 4)), fed(a)}});         // scalar
    expect_matches_reference({op, {fed(random_tensor({2, 1, 4, 1}, 0.5f, 2, 5)), fed(random_tensor({3, 1, 5}, 1, 2, 6))}});
  }
  expect_matches_reference({"Pow", {fed(random_tensor({4, 9}, 0.1f, 3)), weight(floats({}, {2}))}});
  expect_matches_reference({"Pow", {fed(random_tensor({4, 9}, 0.1f, 3)), fed(random_tensor({9}, -2, 2))}}, 1e-5);
  // Six broadcast dims of odd sizes.
  expect_matches_reference(
      {"Add", {fed(random_tensor({2, 1, 3, 1, 5, 1})), fed(random_tensor({1, 3, 1, 2, 1, 7}))}});
  // int64 arithmetic and comparisons.
  HostTensor i = ints({2, 3}, {1, -2, 3, 40, 5, -6}), j = ints({3}, {2, 2, -3});
  expect_matches_reference({"Add", {fed(i), fed(j)}});
  expect_matches_reference({"Mul", {fed(i), weight(j)}});
  expect_matches_reference({"Equal", {fed(i), fed(ints({3}, {1, 5, 3}))}});
  expect_matches_reference({"Less", {fed(a), fed(random_tensor({5}))}});
}

TEST(Kernels, WhereCastExpandTile) {
  HostTensor cond = ints({3, 1}, {1, 0, 1}, DataType::Bool);
  expect_matches_reference({"Where", {fed(cond), fed(random_tensor({3, 4})), fed(random_tensor({4}))}});
  expect_matches_reference({"Where", {fed(cond), fed(ints({1}, {7})), fed(ints({3, 2}, {1, 2, 3, 4, 5, 6}))}});
  OpCase cast{"Cast", {fed(random_tensor({2, 5}, -9, 9))}, {{"to", Attribute::of_int(7)}}};  // float -> int64
  expect_matches_reference(cast);
  expect_matches_reference({"Cast", {fed(ints({4}, {-3, 0, 5, 1 << 20}))}, {{"to", Attribute::of_int(1)}}});  // int64 -> float
  expect_matches_reference({"Expand", {fed(random_tensor({3, 1})), weight(ints({3}, {2, 3, 4}))}});
  expect_matches_reference({"Tile", {fed(random_tensor({2, 3})), weight(ints({2}, {3, 2}))}});
}

// ---------------------------------------------------------------- conv, gemm

namespace {
OpCase conv(Shape x, Shape w, std::map<std::string, Attribute> attrs, bool bias = true, uint32_t seed = 1) {
  OpCase c{"Conv", {fed(random_tensor(x, -1, 1, seed)), weight(random_tensor(w, -1, 1, seed + 1))}, attrs};
  int64_t oc = w[0];
  c.inputs.push_back(bias ? weight(random_tensor({oc}, -1, 1, seed + 2)) : omitted());
  return c;
}
}  // namespace

TEST(Kernels, ConvGeneralGemmPath) {
  expect_matches_reference(conv({1, 3, 9, 11}, {5, 3, 3, 3}, {{"pads", Attribute::of_ints({1, 1, 1, 1})}}));
  expect_matches_reference(conv({2, 4, 10, 9}, {6, 4, 3, 2}, {{"strides", Attribute::of_ints({2, 1})}, {"pads", Attribute::of_ints({1, 0, 0, 1})}}));
  expect_matches_reference(conv({1, 3, 13, 13}, {7, 3, 3, 3}, {{"dilations", Attribute::of_ints({2, 3})}, {"pads", Attribute::of_ints({2, 2, 2, 2})}}, false));
  expect_matches_reference(conv({1, 6, 8, 8}, {4, 3, 3, 3}, {{"group", Attribute::of_int(2)}, {"auto_pad", Attribute::of_string("SAME_UPPER")}}));
  expect_matches_reference(conv({1, 4, 7, 7}, {8, 2, 2, 2}, {{"group", Attribute::of_int(2)}, {"strides", Attribute::of_ints({2, 2})}, {"auto_pad", Attribute::of_string("SAME_LOWER")}}));
  expect_matches_reference(conv({1, 3, 8, 8}, {4, 3, 3, 3}, {{"auto_pad", Attribute::of_string("VALID")}}));
  // Big enough for several 64x64 tiles and K slices: 70 channels, 9x9 taps.
  expect_matches_reference(conv({1, 20, 12, 12}, {70, 20, 3, 3}, {{"pads", Attribute::of_ints({1, 1, 1, 1})}}), 1e-5);
  // 1D convolution.
  expect_matches_reference(conv({2, 3, 17}, {4, 3, 5}, {{"pads", Attribute::of_ints({2, 2})}}));
}

TEST(Kernels, Conv1x1AndDepthwise) {
  expect_matches_reference(conv({2, 16, 5, 7}, {24, 16, 1, 1}, {}));
  expect_matches_reference(conv({1, 8, 5, 5}, {12, 4, 1, 1}, {{"group", Attribute::of_int(2)}}, false));
  expect_matches_reference(conv({1, 130, 3, 3}, {67, 130, 1, 1}, {}));  // K and M past one tile
  expect_matches_reference(conv({2, 96, 1, 1}, {24, 96, 1, 1}, {}));    // squeeze-excite: matrix-vector
  expect_matches_reference(conv({2, 6, 9, 10}, {6, 1, 3, 3}, {{"group", Attribute::of_int(6)}, {"pads", Attribute::of_ints({1, 1, 1, 1})}}));
  expect_matches_reference(
      conv({1, 5, 11, 11}, {5, 1, 5, 5}, {{"group", Attribute::of_int(5)}, {"strides", Attribute::of_ints({2, 2})}, {"pads", Attribute::of_ints({2, 2, 2, 2})}}, false));
  expect_matches_reference(conv({1, 3, 8, 8}, {6, 1, 3, 3}, {{"group", Attribute::of_int(3)}, {"dilations", Attribute::of_ints({2, 2})}}));  // multiplier 2
}

TEST(Kernels, ConvTranspose) {
  auto ct = [](Shape x, Shape w, std::map<std::string, Attribute> attrs, bool bias) {
    OpCase c{"ConvTranspose", {fed(random_tensor(x)), weight(random_tensor(w, -1, 1, 2))}, attrs};
    if (bias) c.inputs.push_back(weight(random_tensor({w[1] * (attrs.count("group") ? attrs["group"].i : 1)})));
    return c;
  };
  expect_matches_reference(ct({1, 4, 5, 5}, {4, 3, 2, 2}, {{"strides", Attribute::of_ints({2, 2})}}, true));
  expect_matches_reference(ct({2, 3, 4, 5}, {3, 5, 3, 3}, {{"strides", Attribute::of_ints({2, 2})}, {"pads", Attribute::of_ints({1, 1, 1, 1})}, {"output_padding", Attribute::of_ints({1, 1})}}, false));
  expect_matches_reference(ct({1, 4, 3, 3}, {4, 2, 3, 3}, {{"group", Attribute::of_int(2)}, {"dilations", Attribute::of_ints({2, 1})}}, true));
  // Stride == kernel: the GEMM path.
  expect_matches_reference(ct({2, 4, 3, 5}, {4, 3, 3, 2}, {{"group", Attribute::of_int(2)}, {"strides", Attribute::of_ints({3, 2})}}, true));
  expect_matches_reference(ct({1, 70, 9, 9}, {70, 20, 2, 2}, {{"strides", Attribute::of_ints({2, 2})}}, false));
}

TEST(Kernels, GemmAndMatMul) {
  expect_matches_reference({"Gemm", {fed(random_tensor({7, 9})), weight(random_tensor({9, 5})), weight(random_tensor({5}))}});
  expect_matches_reference({"Gemm",
                            {fed(random_tensor({9, 70})), weight(random_tensor({67, 9})), weight(random_tensor({70, 1}))},
                            {{"transA", Attribute::of_int(1)}, {"transB", Attribute::of_int(1)}, {"alpha", Attribute::of_float(0.5f)}, {"beta", Attribute::of_float(2)}}});
  expect_matches_reference({"Gemm", {fed(random_tensor({3, 4})), weight(random_tensor({4, 2}))}});
  expect_matches_reference({"MatMul", {fed(random_tensor({2, 65, 33})), weight(random_tensor({33, 17}))}});
  expect_matches_reference({"MatMul", {fed(random_tensor({2, 3, 5, 8})), fed(random_tensor({3, 8, 6}))}});
  expect_matches_reference({"MatMul", {fed(random_tensor({2, 1, 4, 8})), fed(random_tensor({1, 3, 8, 70}))}});
  expect_matches_reference({"MatMul", {fed(random_tensor({8})), fed(random_tensor({2, 8, 3}))}});
  expect_matches_reference({"MatMul", {fed(random_tensor({4, 8})), fed(random_tensor({8}))}});
  // One row or one column with a long K: matrix-vector products.
  expect_matches_reference({"Gemm", {fed(random_tensor({1, 300})), weight(random_tensor({70, 300})), weight(random_tensor({70}))},
                            {{"transB", Attribute::of_int(1)}, {"beta", Attribute::of_float(0.5f)}}});
  expect_matches_reference({"Gemm", {fed(random_tensor({1, 100})), weight(random_tensor({100, 9}))}, {{"alpha", Attribute::of_float(2)}}});
  expect_matches_reference({"MatMul", {fed(random_tensor({3, 5, 129})), fed(random_tensor({129}))}});
  expect_matches_reference({"MatMul", {fed(random_tensor({2, 1, 96})), fed(random_tensor({2, 96, 33}))}});
}

// ---------------------------------------------------------------- pool, reduce, norm

TEST(Kernels, Pooling) {
  HostTensor x = random_tensor({2, 3, 11, 10});
  expect_matches_reference({"MaxPool", {fed(x)}, {{"kernel_shape", Attribute::of_ints({3, 3})}, {"strides", Attribute::of_ints({2, 2})}}});
  expect_matches_reference({"MaxPool", {fed(x)}, {{"kernel_shape", Attribute::of_ints({3, 3})}, {"strides", Attribute::of_ints({2, 2})}, {"pads", Attribute::of_ints({1, 1, 1, 1})}, {"ceil_mode", Attribute::of_int(1)}}});
  expect_matches_reference({"MaxPool", {fed(x)}, {{"kernel_shape", Attribute::of_ints({2, 3})}, {"dilations", Attribute::of_ints({2, 2})}}});
  // The row kernel on CPUs: asymmetric pads with dilation, windows wider
  // than the input (no column inside), and a 1D pool.
  expect_matches_reference({"MaxPool", {fed(x)}, {{"kernel_shape", Attribute::of_ints({3, 2})}, {"strides", Attribute::of_ints({1, 2})}, {"pads", Attribute::of_ints({2, 0, 0, 1})}, {"dilations", Attribute::of_ints({2, 1})}}});
  expect_matches_reference({"MaxPool", {fed(random_tensor({1, 2, 5, 3}))}, {{"kernel_shape", Attribute::of_ints({3, 4})}, {"pads", Attribute::of_ints({1, 1, 1, 1})}}});
  expect_matches_reference({"MaxPool", {fed(random_tensor({2, 3, 17}))}, {{"kernel_shape", Attribute::of_ints({4})}, {"strides", Attribute::of_ints({3})}, {"pads", Attribute::of_ints({1, 2})}}});
  expect_matches_reference({"AveragePool", {fed(x)}, {{"kernel_shape", Attribute::of_ints({3, 3})}, {"pads", Attribute::of_ints({1, 1, 1, 1})}}});
  expect_matches_reference({"AveragePool", {fed(x)}, {{"kernel_shape", Attribute::of_ints({3, 3})}, {"pads", Attribute::of_ints({1, 1, 1, 1})}, {"count_include_pad", Attribute::of_int(1)}}});
  expect_matches_reference({"AveragePool", {fed(x)}, {{"kernel_shape", Attribute::of_ints({3, 2})}, {"strides", Attribute::of_ints({2, 2})}, {"ceil_mode", Attribute::of_int(1)}, {"pads", Attribute::of_ints({0, 1, 1, 0})}, {"count_include_pad", Attribute::of_int(1)}}});
  expect_matches_reference({"AveragePool", {fed(x)}, {{"kernel_shape", Attribute::of_ints({2, 2})}, {"strides", Attribute::of_ints({2, 2})}, {"auto_pad", Attribute::of_string("SAME_UPPER")}}});
  expect_matches_reference({"GlobalAveragePool", {fed(x)}});
  expect_matches_reference({"GlobalMaxPool", {fed(random_tensor({1, 5, 30, 31}))}});
}

TEST(Kernels, Reductions) {
  HostTensor x = random_tensor({2, 3, 4, 5});
  for (std::string op : {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin"}) {
    expect_matches_reference({op, {fed(x)}, {{"axes", Attribute::of_ints({-1})}}});
    expect_matches_reference({op, {fed(x)}, {{"axes", Attribute::of_ints({1})}, {"keepdims", Attribute::of_int(0)}}});
    expect_matches_reference({op, {fed(x)}, {{"axes", Attribute::of_ints({0, 2})}}});
    expect_matches_reference({op, {fed(x)}});  // all axes
  }
  expect_matches_reference({"ReduceSum", {fed(x), weight(ints({2}, {2, 3}))}});  // axes as input (opset 13)
  expect_matches_reference({"ReduceMean", {fed(random_tensor({3, 1000}))}, {{"axes", Attribute::of_ints({1})}}});
}

TEST(Kernels, SoftmaxAndNorms) {
  expect_matches_reference({"Softmax", {fed(random_tensor({2, 4, 130}, -5, 5))}});
  expect_matches_reference({"Softmax", {fed(random_tensor({2, 7, 3}, -5, 5))}, {{"axis", Attribute::of_int(1)}}});
  expect_matches_reference({"LogSoftmax", {fed(random_tensor({3, 9}, -5, 5))}});
  HostTensor x = random_tensor({2, 5, 4, 3});
  expect_matches_reference({"BatchNormalization",
                            {fed(x), weight(random_tensor({5})), weight(random_tensor({5})), weight(random_tensor({5})),
                             weight(random_tensor({5}, 0.5f, 2))},
                            {{"epsilon", Attribute::of_float(1e-3f)}}});
  expect_matches_reference({"LayerNormalization", {fed(random_tensor({2, 3, 100})), weight(random_tensor({100})),
                                                   weight(random_tensor({100}))}});
  expect_matches_reference({"LayerNormalization", {fed(random_tensor({4, 3, 5})), weight(random_tensor({3, 5}))},
                            {{"axis", Attribute::of_int(1)}, {"epsilon", Attribute::of_float(1e-3f)}}});
  expect_matches_reference({"LayerNormalization", {fed(random_tensor({3, 2, 70})), weight(random_tensor({70}))},
                            {{"axis", Attribute::of_int(-1)}}, 3});  // with Mean and InvStdDev
  expect_matches_reference({"Gelu", {fed(random_tensor({3, 50}, -4, 4))}});
  expect_matches_reference({"Gelu", {fed(random_tensor({3, 50}, -4, 4))}, {{"approximate", Attribute::of_string("tanh")}}});
}

// ---------------------------------------------------------------- data movement

TEST(Kernels, ConcatSplitTranspose) {
  expect_matches_reference({"Concat", {fed(random_tensor({2, 3, 4})), fed(random_tensor({2, 5, 4})), weight(random_tensor({2, 1, 4}))}, {{"axis", Attribute::of_int(1)}}});
  expect_matches_reference({"Concat", {fed(random_tensor({2, 3})), fed(random_tensor({2, 2}))}, {{"axis", Attribute::of_int(-1)}}});
  expect_matches_reference({"Concat", {fed(ints({2}, {1, 2})), fed(ints({1}, {3}))}, {{"axis", Attribute::of_int(0)}}});
  expect_matches_reference({"Split", {fed(random_tensor({2, 6, 3}))}, {{"axis", Attribute::of_int(1)}}, 3});
  expect_matches_reference({"Split", {fed(random_tensor({4, 7})), weight(ints({2}, {3, 4}))}, {{"axis", Attribute::of_int(-1)}}, 2});
  expect_matches_reference({"Transpose", {fed(random_tensor({2, 3, 4, 5}))}, {{"perm", Attribute::of_ints({0, 2, 3, 1})}}});
  expect_matches_reference({"Transpose", {fed(random_tensor({3, 5, 7}))}});
  expect_matches_reference({"Transpose", {fed(random_tensor({1, 2, 2, 3, 4}))}, {{"perm", Attribute::of_ints({0, 2, 1, 3, 4})}}});  // channel shuffle
}

TEST(Kernels, SliceGatherPadResize) {
  HostTensor x = random_tensor({4, 6, 5});
  expect_matches_reference({"Slice", {fed(x), weight(ints({2}, {1, 0})), weight(ints({2}, {3, 100})), weight(ints({2}, {0, 2}))}});
  expect_matches_reference({"Slice", {fed(x), weight(ints({1}, {-1})), weight(ints({1}, {-100})), weight(ints({1}, {1})), weight(ints({1}, {-2}))}});
  expect_matches_reference({"Slice", {fed(x), weight(ints({3}, {0, 1, 4})), weight(ints({3}, {4, 6, 0})), weight(ints({3}, {0, 1, 2})), weight(ints({3}, {2, 2, -1}))}});
  // Gather: embedding lookup with int64 indices, int32 indices on axis 1, negative indices.
  expect_matches_reference({"Gather", {weight(random_tensor({50, 16})), fed(ints({1, 7}, {0, 3, 49, 3, 7, 1, 2}))}});
  expect_matches_reference({"Gather", {fed(x), weight(ints({2, 2}, {5, -1, 0, 2}, DataType::Int32))}, {{"axis", Attribute::of_int(1)}}});
  expect_matches_reference({"Gather", {fed(ints({5}, {10, 20, 30, 40, 50})), weight(ints({}, {-2}))}});
  HostTensor img = random_tensor({1, 2, 5, 6});
  for (std::string mode : {"constant", "reflect", "edge"})
    expect_matches_reference({"Pad", {fed(img), weight(ints({8}, {0, 0, 2, 1, 0, 1, 1, 3})), weight(floats({}, {0.5f}))}, {{"mode", Attribute::of_string(mode)}}});
  auto resize = [&](std::string mode, std::string coord, Shape sizes) {
    return OpCase{"Resize",
                  {fed(img), omitted(), omitted(), weight(ints({4}, std::vector<int64_t>(sizes.begin(), sizes.end())))},
                  {{"mode", Attribute::of_string(mode)}, {"coordinate_transformation_mode", Attribute::of_string(coord)}}};
  };
  for (std::string coord : {"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"}) {
    expect_matches_reference(resize("nearest", coord, {1, 2, 10, 12}));
    expect_matches_reference(resize("linear", coord, {1, 2, 9, 13}));
  }
  OpCase scales{"Resize", {fed(img), omitted(), weight(floats({4}, {1, 1, 2, 2}))}, {{"mode", Attribute::of_string("nearest")}}};
  expect_matches_reference(scales);
}

// ---------------------------------------------------------------- session behaviour

namespace {
// x -> Relu -> a -> Neg -> b ; y = Add(a, b): `a` is live while Neg writes `b`.
Graph relu_neg_add() {
  Graph g;
  g.model_name = "relu_neg_add";
  g.opset = 13;
  auto add = [&](const char* name, bool in, bool out) {
    Tensor t;
    t.name = name;
    t.shape = {1, 4, 5, 6};
    t.is_input = in;
    t.is_output = out;
    return g.add_tensor(t);
  };
  int x = add("x", true, false), a = add("a", false, false), b = add("b", false, false), y = add("y", false, true);
  g.inputs = {x};
  g.outputs = {y};
  g.nodes.push_back({"relu", "Relu", {x}, {a}, {}});
  g.nodes.push_back({"neg", "Neg", {a}, {b}, {}});
  g.nodes.push_back({"add", "Add", {a, b}, {y}, {}});
  for (int k = 0; k < 3; ++k) g.tensors[g.nodes[k].outputs[0]].producer = k;
  return g;
}
}  // namespace

TEST(Session, GuardFindsNoViolationInAValidPlan) {
  Graph g = relu_neg_add();
  PlanInput pin = make_usage_records(g);
  plan::MemoryPlan plan = best_plan(pin);
  Session s(g, pin, plan, test_device(), {.guard = true});
  HostTensor x = random_tensor({1, 4, 5, 6});
  auto out = s.run({x});
  EXPECT_TRUE(s.guard_violations().empty()) << s.guard_violations().front();
  for (int64_t i = 0; i < x.count(); ++i) EXPECT_EQ(out[0].data<float>()[i], 0.0f);  // relu(x) - relu(x)
  EXPECT_EQ(s.activation_bytes(), plan.total_bytes());
  EXPECT_EQ(s.kernel_launches(), 3);
}

TEST(Session, GuardReportsTwoLiveTensorsAtOneOffset) {
  Graph g = relu_neg_add();
  PlanInput pin = make_usage_records(g);
  plan::MemoryPlan plan = best_plan(pin);
  int a = pin.record_of_tensor[g.find("a")], b = pin.record_of_tensor[g.find("b")];
  plan.placements[b] = plan.placements[a];  // b overwrites a while a is still needed
  Session s(g, pin, plan, test_device(), {.guard = true});
  s.run({random_tensor({1, 4, 5, 6})});
  ASSERT_EQ(s.guard_violations().size(), 1u);
  const runtime::GuardViolation& v = s.guard_violations()[0];
  EXPECT_EQ(v.node, "neg");
  EXPECT_EQ(v.tensor, "a");
  EXPECT_GE(v.begin, plan.placements[a].offset);
  EXPECT_LE(v.end, plan.placements[a].offset + 4 * 5 * 6 * 4);
}

TEST(Session, AliasesLaunchNothingAndRunsRepeat) {
  // x -> Reshape (alias) -> Relu -> y
  Graph g;
  g.model_name = "alias";
  auto tensor = [](const char* name, DataType t, Shape s) {
    Tensor x;
    x.name = name;
    x.dtype = t;
    x.shape = s;
    return x;
  };
  Tensor x = tensor("x", DataType::Float32, {2, 6}), shape = tensor("shape", DataType::Int64, {2}),
         r = tensor("r", DataType::Float32, {3, 4}), y = tensor("y", DataType::Float32, {3, 4});
  x.is_input = true;
  shape.is_constant = shape.has_data = true;
  shape.value = ints({2}, {3, 4});
  y.is_output = true;
  int xi = g.add_tensor(x), si = g.add_tensor(shape), ri = g.add_tensor(r), yi = g.add_tensor(y);
  g.inputs = {xi};
  g.outputs = {yi};
  g.nodes.push_back({"reshape", "Reshape", {xi, si}, {ri}, {}});
  g.nodes.push_back({"relu", "Relu", {ri}, {yi}, {}});
  PlanInput pin = make_usage_records(g);
  ASSERT_EQ(pin.alias_root[ri], xi);
  Session s(g, pin, best_plan(pin), test_device());
  EXPECT_EQ(s.kernel_launches(), 1);
  EXPECT_EQ(s.weight_bytes(), 0) << "the shape constant is never needed on the device";
  for (int run = 0; run < 2; ++run) {
    HostTensor in = random_tensor({2, 6}, -1, 1, run + 1);
    auto out = s.run({in});
    for (int i = 0; i < 12; ++i) EXPECT_EQ(out[0].data<float>()[i], std::max(0.0f, in.data<float>()[i]));
    EXPECT_GT(s.last_run_ms(), 0);
  }
}

// Outputs read through pinned host buffers (GPUs' default, forced here on
// any device): the same results as direct reads, run after run with new
// inputs, and an input that is also an output comes back as given.
TEST(Session, StagedCopiesMatchDirectOnes) {
  Graph g = relu_neg_add();
  g.tensors[g.find("x")].is_output = true;
  g.outputs.push_back(g.find("x"));
  PlanInput pin = make_usage_records(g);
  plan::MemoryPlan plan = best_plan(pin);
  Session staged(g, pin, plan, test_device(), {.staged_io = true});
  Session direct(g, pin, plan, test_device(), {.staged_io = false});
  for (int run = 0; run < 3; ++run) {
    HostTensor x = random_tensor({1, 4, 5, 6}, -1, 1, uint32_t(run + 7));
    auto a = staged.run({x});
    auto b = direct.run({x});
    ASSERT_EQ(a.size(), 2u);
    EXPECT_EQ(a[0].bytes, b[0].bytes);
    EXPECT_EQ(a[1].bytes, x.bytes);
    for (int64_t i = 0; i < x.count(); ++i) EXPECT_EQ(a[0].data<float>()[i], 0.0f);  // relu(x) - relu(x)
  }
}

// Inputs and outputs as DeviceTensors: the same bytes as the host path, run
// after run with new input values; the caller's input is never written, an
// input that is also an output and a constant output come back as given.
TEST(Session, DeviceTensorsGiveWhatHostCopiesGive) {
  Graph g = relu_neg_add();
  g.tensors[g.find("x")].is_output = true;
  g.outputs.push_back(g.find("x"));
  Tensor c;
  c.name = "c";
  c.shape = {2, 3};
  c.is_constant = c.has_data = c.is_output = true;
  c.value = random_tensor({2, 3}, -1, 1, 99);
  g.outputs.push_back(g.add_tensor(c));
  PlanInput pin = make_usage_records(g);
  plan::MemoryPlan plan = best_plan(pin);
  Session s(g, pin, plan, test_device());
  auto dev = test_device();
  runtime::DeviceTensor x(dev, DataType::Float32, {1, 4, 5, 6});
  std::vector<runtime::DeviceTensor> outs;
  for (int t : g.outputs) outs.emplace_back(dev, g.tensors[t].dtype, g.tensors[t].shape);
  std::vector<runtime::DeviceTensor*> out_ptrs;
  for (auto& o : outs) out_ptrs.push_back(&o);
  for (int run = 0; run < 3; ++run) {
    HostTensor xv = random_tensor({1, 4, 5, 6}, -1, 1, uint32_t(run + 11));
    x.write(xv);
    s.run({&x}, out_ptrs);
    std::vector<HostTensor> host = s.run({xv});
    ASSERT_EQ(host.size(), 3u);
    for (size_t k = 0; k < outs.size(); ++k) EXPECT_EQ(outs[k].read().bytes, host[k].bytes) << "output " << k;
    EXPECT_EQ(outs[1].read().bytes, xv.bytes);
    EXPECT_EQ(outs[2].read().bytes, c.value.bytes);
    EXPECT_EQ(x.read().bytes, xv.bytes) << "the input's device tensor was written";
    for (int64_t i = 0; i < xv.count(); ++i) EXPECT_EQ(outs[0].read().data<float>()[i], 0.0f);  // relu(x) - relu(x)
    EXPECT_GT(s.last_run_ms(), 0);
  }
}

// The other modes take device tensors too: guard mode proves the plan,
// profile mode times the nodes, and a node without a kernel (CPU fallback)
// reads its input from the pool the device copy filled.
TEST(Session, DeviceTensorsRunInGuardProfileAndFallbackModes) {
  auto dev = test_device();
  {
    Graph g = relu_neg_add();
    PlanInput pin = make_usage_records(g);
    plan::MemoryPlan plan = best_plan(pin);
    HostTensor xv = random_tensor({1, 4, 5, 6}, -1, 1, 5);
    runtime::DeviceTensor x(dev, DataType::Float32, {1, 4, 5, 6}), y(dev, DataType::Float32, {1, 4, 5, 6});
    x.write(xv);
    Session guarded(g, pin, plan, dev, {.guard = true});
    guarded.run({&x}, {&y});
    EXPECT_TRUE(guarded.guard_violations().empty()) << guarded.guard_violations().front();
    Session profiled(g, pin, plan, dev, {.profile = true});
    for (int run = 0; run < 2; ++run) {
      profiled.run({&x}, {&y});
      ASSERT_EQ(profiled.node_times().size(), 3u);
      for (const auto& t : profiled.node_times()) EXPECT_GE(t.ms, 0.0) << t.node;
      EXPECT_GT(profiled.last_device_span_ms(), 0.0);
    }
    for (int64_t i = 0; i < xv.count(); ++i) EXPECT_EQ(y.read().data<float>()[i], 0.0f);
    EXPECT_EQ(x.read().bytes, xv.bytes);
  }
  OpCase c{"Hardmax", {fed(random_tensor({3, 7}))}};
  std::vector<HostTensor> feeds, expected;
  Graph g = one_node_graph(c, feeds, expected);
  PlanInput pin = make_usage_records(g);
  Session s(g, pin, best_plan(pin), dev);
  ASSERT_EQ(s.fallback_nodes().size(), 1u);
  runtime::DeviceTensor x(dev, DataType::Float32, {3, 7}), y(dev, expected[0].dtype, expected[0].shape);
  x.write(feeds[0]);
  s.run({&x}, {&y});
  EXPECT_EQ(y.read().bytes, expected[0].bytes);
}

TEST(Session, DeviceTensorErrorsNameTheTensor) {
  Graph g = relu_neg_add();
  PlanInput pin = make_usage_records(g);
  auto dev = test_device();
  Session s(g, pin, best_plan(pin), dev);
  runtime::DeviceTensor x(dev, DataType::Float32, {1, 4, 5, 6}), y(dev, DataType::Float32, {1, 4, 5, 6});
  runtime::DeviceTensor wrong(dev, DataType::Float32, {1, 4, 5, 7});
  auto expect_error = [&](auto&& f, const std::string& says) {
    try {
      f();
      ADD_FAILURE() << "no error; wanted: " << says;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  expect_error([&] { s.run({&wrong}, {&y}); }, "model relu_neg_add: input x must be float32 1x4x5x6, got float32 1x4x5x7");
  expect_error([&] { s.run({&x}, {&wrong}); }, "output y is float32 1x4x5x6, the device tensor given for it float32 1x4x5x7");
  expect_error([&] { s.run({&x}, {}); }, "expected 1 inputs and 1 outputs, got 1 and 0");
  expect_error([&] { s.run({nullptr}, {&y}); }, "input x is null");
  expect_error([&] { x.write(random_tensor({2, 3})); }, "cannot write a float32 2x3 value into it");
  // A tensor no bigger than the device allows can still fail to allocate; a
  // negative dimension is refused before OpenCL sees it.
  expect_error([&] { runtime::DeviceTensor bad(dev, DataType::Float32, {-1, 3}); }, "negative dimension");
  // After the errors the session runs as before.
  HostTensor xv = random_tensor({1, 4, 5, 6}, -1, 1, 3);
  x.write(xv);
  s.run({&x}, {&y});
  EXPECT_EQ(y.read().bytes, s.run({xv})[0].bytes);
}

TEST(Session, OpsWithoutKernelsRunOnTheCpuAndAreListed) {
  OpCase c{"Hardmax", {fed(random_tensor({3, 7}))}};
  expect_matches_reference(c, 0, /*expect_kernel=*/false);
  std::vector<HostTensor> feeds, expected;
  Graph g = one_node_graph(c, feeds, expected);
  PlanInput pin = make_usage_records(g);
  Session s(g, pin, best_plan(pin), test_device());
  ASSERT_EQ(s.fallback_nodes().size(), 1u);
  EXPECT_EQ(s.fallback_nodes()[0], "Hardmax_0 (Hardmax)");
}

TEST(Session, ErrorsNameTheModelAndWhatIsWrong) {
  Graph g = relu_neg_add();
  PlanInput pin = make_usage_records(g);
  plan::MemoryPlan plan = best_plan(pin);
  Session s(g, pin, plan, test_device());
  try {
    s.run({random_tensor({1, 4, 5, 7})});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("input x must be float32 1x4x5x6"), std::string::npos) << e.what();
  }
  EXPECT_THROW(s.run({}), Error);

  Graph unknown = relu_neg_add();
  unknown.nodes[1].op_type = "NoSuchOp";
  try {
    Session bad(unknown, pin, plan, test_device());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model relu_neg_add: node 'neg' (NoSuchOp): unsupported operator: no OpenCL kernel and no CPU reference"),
              std::string::npos)
        << e.what();
  }

  plan::MemoryPlan huge = plan;
  huge.pools[0].bytes = test_device()->info().profile.max_alloc_bytes + 1;
  try {
    Session bad(g, pin, huge, test_device());
    FAIL();
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("relu_neg_add"), std::string::npos) << m;
    EXPECT_NE(m.find("pool 0"), std::string::npos) << m;
  }

  // A texture pool wider than the device's images allow (a plan made for
  // another device) is refused before anything runs, with both sizes.
  const plan::DeviceProfile& profile = test_device()->info().profile;
  plan::MemoryPlan textured = plan;
  textured.pools[0].kind = plan::Storage::Texture;
  textured.pools[0].width = profile.max_image2d_width + 1;
  textured.pools[0].height = 1;
  try {
    Session bad(g, pin, textured, test_device());
    FAIL();
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("relu_neg_add"), std::string::npos) << m;
    EXPECT_NE(m.find("pool 0"), std::string::npos) << m;
    if (profile.image_support)
      EXPECT_NE(m.find("image " + std::to_string(profile.max_image2d_width + 1) + "x1 exceeds the device's limit " +
                       std::to_string(profile.max_image2d_width) + "x" + std::to_string(profile.max_image2d_height)),
                std::string::npos)
          << m;
    else
      EXPECT_NE(m.find("the device has no images"), std::string::npos) << m;
  }
}
