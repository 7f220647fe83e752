// Tests of the fused operators' meaning (docs/fused-ops.md): the epilogue
// parser and each fused op of the CPU reference against the unfused ONNX ops
// on random data.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <set>

#include "graph/epilogue.h"
#include "reference/reference_ops.h"
#include "test_util.h"

using namespace texplan;
using test::random_tensor;

namespace {

HostTensor scalar(float v) {
  HostTensor t(DataType::Float32, {});
  t.data<float>()[0] = v;
  return t;
}

Node node(const std::string& op, std::map<std::string, Attribute> attrs = {}) {
  Node n;
  n.name = "n_" + op;
  n.op_type = op;
  n.attrs = std::move(attrs);
  n.outputs = {0};
  return n;
}

HostTensor run(const Node& n, const std::vector<const HostTensor*>& in) { return reference::evaluate(n, in).at(0); }
HostTensor run(const std::string& op, const std::vector<const HostTensor*>& in,
               std::map<std::string, Attribute> attrs = {}) {
  return run(node(op, std::move(attrs)), in);
}

void expect_close(const HostTensor& got, const HostTensor& want, float tol = 1e-5f) {
  ASSERT_EQ(got.shape, want.shape);
  ASSERT_EQ(got.dtype, DataType::Float32);
  for (int64_t i = 0; i < got.count(); ++i) {
    const float a = got.data<float>()[i], b = want.data<float>()[i];
    if (std::isnan(b)) {
      EXPECT_TRUE(std::isnan(a)) << "element " << i;
      continue;
    }
    ASSERT_NEAR(a, b, tol * (1 + std::fabs(b))) << "element " << i;
  }
}

}  // namespace

TEST(Epilogue, ParsesAndPrintsBack) {
  const std::vector<std::string> p = {"Sigmoid x0", "Mul x0 t0", "Clip t1 0 6", "Add t2 x1", "LeakyRelu t3 0.100000001"};
  Epilogue e = Epilogue::parse(p);
  ASSERT_EQ(e.code.size(), 5u);
  EXPECT_EQ(e.inputs(), 2);
  EXPECT_EQ(e.to_strings(), p);
  EXPECT_EQ(Epilogue::parse(e.to_strings()).to_strings(), p);
  EXPECT_EQ(Epilogue{}.inputs(), 1);
  const float x[2] = {3.0f, 7.0f};
  EXPECT_FLOAT_EQ(Epilogue{}.eval(x), 3.0f);
  // sigmoid(3)*3 = 2.857..., clipped to [0, 6], + 7
  EXPECT_NEAR(e.eval(x), 3.0f / (1.0f + std::exp(-3.0f)) + 7.0f, 1e-5);
}

TEST(Epilogue, RejectsBadProgramsNamingTheNode) {
  auto message = [](std::vector<std::string> p) {
    Node n = node("FusedElementwise", {{"program", Attribute::of_strings(std::move(p))}});
    n.name = "fuse_7";
    try {
      Epilogue::parse(n);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({"Frobnicate x0"}).find("fuse_7"), std::string::npos);
  EXPECT_NE(message({"Frobnicate x0"}).find("unknown operator"), std::string::npos);
  EXPECT_NE(message({"Add x0"}).find("takes 2 operands"), std::string::npos);
  EXPECT_NE(message({"Relu t0"}).find("not an earlier instruction"), std::string::npos);
  EXPECT_NE(message({"Relu x0", "Clip t0 x1 6"}).find("must be a number"), std::string::npos);
  EXPECT_NE(message({"Relu y0"}).find("bad operand"), std::string::npos);
  EXPECT_NE(message({""}).find("empty instruction"), std::string::npos);
  EXPECT_EQ(message({"Relu x0", "Add t0 x3", "Mul t1 -1e-3"}), "no error");
}

// Every epilogue op as a one-instruction FusedElementwise equals the ONNX op.
TEST(FusedElementwise, EachOpMatchesOnnx) {
  std::mt19937 rng(1);
  const HostTensor a = random_tensor({2, 3, 5}, rng, -2, 2), b = random_tensor({3, 1}, rng, -2, 2);
  const HostTensor pos = random_tensor({2, 3, 5}, rng, 0.1f, 3.0f);
  struct Case {
    std::string op;
    std::vector<std::string> prog;
    std::map<std::string, Attribute> attrs;
    bool binary = false, positive = false;
  };
  const std::vector<Case> cases = {
      {"Relu", {"Relu x0"}, {}},
      {"Sigmoid", {"Sigmoid x0"}, {}},
      {"Tanh", {"Tanh x0"}, {}},
      {"Exp", {"Exp x0"}, {}},
      {"Log", {"Log x0"}, {}, false, true},
      {"Sqrt", {"Sqrt x0"}, {}, false, true},
      {"Abs", {"Abs x0"}, {}},
      {"Neg", {"Neg x0"}, {}},
      {"Erf", {"Erf x0"}, {}},
      {"Reciprocal", {"Reciprocal x0"}, {}, false, true},
      {"Floor", {"Floor x0"}, {}},
      {"Ceil", {"Ceil x0"}, {}},
      {"Round", {"Round x0"}, {}},
      {"Softplus", {"Softplus x0"}, {}},
      {"Sign", {"Sign x0"}, {}},
      {"HardSwish", {"HardSwish x0"}, {}},
      {"Gelu", {"Gelu x0"}, {}},
      {"LeakyRelu", {"LeakyRelu x0 0.2"}, {{"alpha", Attribute::of_float(0.2f)}}},
      {"HardSigmoid", {"HardSigmoid x0 0.3 0.4"}, {{"alpha", Attribute::of_float(0.3f)}, {"beta", Attribute::of_float(0.4f)}}},
      {"Elu", {"Elu x0 1.5"}, {{"alpha", Attribute::of_float(1.5f)}}},
      {"Add", {"Add x0 x1"}, {}, true},
      {"Sub", {"Sub x0 x1"}, {}, true},
      {"Mul", {"Mul x0 x1"}, {}, true},
      {"Div", {"Div x0 x1"}, {}, true},
      {"Pow", {"Pow x0 x1"}, {}, true, true},
      {"Max", {"Max x0 x1"}, {}, true},
      {"Min", {"Min x0 x1"}, {}, true},
  };
  std::set<std::string> covered;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.op);
    const HostTensor& x = c.positive ? pos : a;
    std::vector<const HostTensor*> in = {&x};
    if (c.binary) in.push_back(&b);
    const HostTensor want = run(c.op, in, c.attrs);
    const HostTensor got = run("FusedElementwise", in, {{"program", Attribute::of_strings(c.prog)}});
    expect_close(got, want);
    covered.insert(c.op);
  }
  // Clip with constant bounds (opset 11 inputs).
  const HostTensor lo = scalar(-0.5f), hi = scalar(0.75f);
  expect_close(run("FusedElementwise", {&a}, {{"program", Attribute::of_strings({"Clip x0 -0.5 0.75"})}}),
               run("Clip", {&a, &lo, &hi}));
  covered.insert("Clip");
  // Round's halves go to even, as ONNX's (QDQ models' pairs, import/quantize_pairs.cpp).
  HostTensor halves = a;
  const float h[] = {0.5f, 1.5f, 2.5f, -0.5f, -2.5f, 3.5f};
  std::copy(std::begin(h), std::end(h), halves.data<float>());
  const std::vector<float> rounded = run("FusedElementwise", {&halves}, {{"program", Attribute::of_strings({"Round x0"})}}).as_float();
  const float even[] = {0.0f, 2.0f, 2.0f, -0.0f, -2.0f, 4.0f};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(rounded[size_t(i)], even[i]) << h[i];
  expect_close(run("FusedElementwise", {&halves}, {{"program", Attribute::of_strings({"Round x0"})}}), run("Round", {&halves}));
  // RoundTf32 (no ONNX op): to the nearest value with 10 mantissa bits,
  // ties away from zero (cvt.rna), infinities and NaN kept.
  HostTensor edge = a;
  float* v = edge.data<float>();
  const float tie = 1.0f + 1.0f / 2048.0f, below = std::nextafter(tie, 0.0f);  // halfway between tf32 neighbours
  v[0] = tie, v[1] = -tie, v[2] = below, v[3] = INFINITY, v[4] = NAN;
  const std::vector<float> r = run("FusedElementwise", {&edge}, {{"program", Attribute::of_strings({"RoundTf32 x0"})}}).as_float();
  EXPECT_EQ(r[0], 1.0f + 1.0f / 1024.0f);
  EXPECT_EQ(r[1], -(1.0f + 1.0f / 1024.0f));
  EXPECT_EQ(r[2], 1.0f);
  EXPECT_EQ(r[3], INFINITY);
  EXPECT_TRUE(std::isnan(r[4]));
  for (size_t i = 5; i < size_t(edge.count()); ++i) {
    uint32_t u;
    std::memcpy(&u, &r[i], 4);
    EXPECT_EQ(u & 0x1fffu, 0u) << i;
    EXPECT_LE(std::fabs(r[i] - v[i]), std::fabs(v[i]) / 2048.0f) << i;
  }
  covered.insert("RoundTf32");
  for (const auto& op : Epilogue::ops()) EXPECT_TRUE(covered.count(op)) << op << " has no test";
}

// BERT's erf Gelu chain and SiLU as one FusedElementwise.
TEST(FusedElementwise, ChainsMatchUnfusedOps) {
  std::mt19937 rng(2);
  const HostTensor x = random_tensor({4, 16}, rng, -2, 2);
  const HostTensor sqrt2 = scalar(1.4142135f), one = scalar(1.0f), half = scalar(0.5f);
  HostTensor t = run("Div", {&x, &sqrt2});
  t = run("Erf", {&t});
  t = run("Add", {&t, &one});
  t = run("Mul", {&x, &t});
  const HostTensor want = run("Mul", {&t, &half});
  const HostTensor got = run("FusedElementwise", {&x, &sqrt2, &one, &half},
                             {{"program", Attribute::of_strings({"Div x0 x1", "Erf t0", "Add t1 x2", "Mul x0 t2", "Mul t3 x3"})}});
  expect_close(got, want);

  const HostTensor s = run("Sigmoid", {&x});
  expect_close(run("FusedElementwise", {&x}, {{"program", Attribute::of_strings({"Sigmoid x0", "Mul x0 t0"})}}),
               run("Mul", {&x, &s}));
}

TEST(FusedConv, MatchesConvBiasActivationResidual) {
  std::mt19937 rng(3);
  struct Case {
    Shape x, w;
    int64_t group, stride, pad;
  };
  for (const Case& k : {Case{{1, 8, 9, 9}, {16, 8, 3, 3}, 1, 1, 1}, Case{{1, 8, 10, 10}, {8, 1, 3, 3}, 8, 2, 1},
                        Case{{2, 6, 7, 7}, {4, 3, 1, 1}, 2, 1, 0}}) {
    const HostTensor x = random_tensor(k.x, rng, -2, 2), w = random_tensor(k.w, rng, -2, 2), bias = random_tensor({k.w[0]}, rng, -2, 2);
    std::map<std::string, Attribute> attrs = {{"group", Attribute::of_int(k.group)},
                                              {"strides", Attribute::of_ints({k.stride, k.stride})},
                                              {"pads", Attribute::of_ints({k.pad, k.pad, k.pad, k.pad})}};
    const HostTensor conv = run("Conv", {&x, &w, &bias}, attrs);
    const HostTensor residual = random_tensor(conv.shape, rng, -2, 2);
    const HostTensor sum = run("Add", {&conv, &residual});
    const HostTensor want = run("Relu", {&sum});

    auto fused_attrs = attrs;
    fused_attrs["program"] = Attribute::of_strings({"Add x0 x1", "Relu t0"});
    expect_close(run("FusedConv", {&x, &w, &bias, &residual}, fused_attrs), want, 1e-4f);
    // No program: plain conv; no bias (input 2 absent).
    expect_close(run("FusedConv", {&x, &w, &bias}, attrs), conv, 1e-4f);
    const HostTensor nobias = run("Conv", {&x, &w}, attrs);
    const HostTensor zero = scalar(0), six = scalar(6);
    const HostTensor clipped = run("Clip", {&nobias, &zero, &six});
    fused_attrs["program"] = Attribute::of_strings({"Clip x0 0 6"});
    expect_close(run("FusedConv", {&x, &w, nullptr}, fused_attrs), clipped, 1e-4f);
  }
}

TEST(FusedConv, RejectsAMismatchedEpilogueInput) {
  std::mt19937 rng(4);
  const HostTensor x = random_tensor({1, 2, 4, 4}, rng, -2, 2), w = random_tensor({3, 2, 1, 1}, rng, -2, 2);
  const HostTensor wrong = random_tensor({1, 3, 4, 5}, rng, -2, 2);
  Node n = node("FusedConv", {{"program", Attribute::of_strings({"Add x0 x1"})}});
  n.name = "conv_fused_3";
  try {
    run(n, {&x, &w, nullptr, &wrong});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("conv_fused_3"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("shape"), std::string::npos) << e.what();
  }
  Node reads_too_much = node("FusedConv", {{"program", Attribute::of_strings({"Add x0 x2"})}});
  EXPECT_THROW(run(reads_too_much, {&x, &w, nullptr, &wrong}), Error);
}

TEST(FusedMatMul, MatchesMatMulBiasGeluAndGemm) {
  std::mt19937 rng(5);
  const HostTensor a = random_tensor({2, 5, 8}, rng, -2, 2), b = random_tensor({8, 6}, rng, -2, 2), bias = random_tensor({6}, rng, -2, 2);
  const HostTensor mm = run("MatMul", {&a, &b});
  const HostTensor sum = run("Add", {&mm, &bias});
  const HostTensor want = run("Gelu", {&sum});
  expect_close(run("FusedMatMul", {&a, &b, &bias}, {{"program", Attribute::of_strings({"Add x0 x1", "Gelu t0"})}}), want);
  const HostTensor residual = random_tensor(mm.shape, rng, -2, 2);
  expect_close(run("FusedMatMul", {&a, &b, &bias, &residual}, {{"program", Attribute::of_strings({"Add x0 x1", "Add t0 x2"})}}),
               run("Add", {&sum, &residual}));

  // Gemm(transB=1) + C == FusedMatMul(transB=1) with C as E1.
  const HostTensor a2 = random_tensor({3, 8}, rng, -2, 2), bt = random_tensor({6, 8}, rng, -2, 2);
  const HostTensor gemm = run("Gemm", {&a2, &bt, &bias}, {{"transB", Attribute::of_int(1)}});
  expect_close(run("FusedMatMul", {&a2, &bt, &bias}, {{"transB", Attribute::of_int(1)}, {"program", Attribute::of_strings({"Add x0 x1"})}}),
               gemm);
  const HostTensor a7 = random_tensor({2, 5, 7}, rng, -2, 2);
  EXPECT_THROW(run("FusedMatMul", {&a7, &bt}, {{"transB", Attribute::of_int(1)}}), Error);  // inner dims differ
}
