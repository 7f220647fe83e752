// Tests of the fused operators' meaning (docs/fused-ops.md): the epilogue
// parser and each fused op of the CPU reference against the unfused ONNX ops
// on random data.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>

#include "graph/epilogue.h"
#include "reference/reference_ops.h"

using namespace texplan;

namespace {

HostTensor random_f32(Shape s, std::mt19937& rng, float lo = -2, float hi = 2) {
  HostTensor t(DataType::Float32, std::move(s));
  std::uniform_real_distribution<float> d(lo, hi);
  for (int64_t i = 0; i < t.count(); ++i) t.data<float>()[i] = d(rng);
  return t;
}
HostTensor scalar(float v) {
  HostTensor t(DataType::Float32, {});
  t.data<float>()[0] = v;
  return t;
}

Attribute ints(std::vector<int64_t> v) {
  Attribute a;
  a.kind = Attribute::Kind::Ints;
  a.ints = std::move(v);
  return a;
}
Attribute one_int(int64_t v) {
  Attribute a;
  a.kind = Attribute::Kind::Int;
  a.i = v;
  return a;
}
Attribute one_float(float v) {
  Attribute a;
  a.kind = Attribute::Kind::Float;
  a.f = v;
  return a;
}
Attribute program(std::vector<std::string> p) {
  Attribute a;
  a.kind = Attribute::Kind::Strings;
  a.strings = std::move(p);
  return a;
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
    Node n = node("FusedElementwise", {{"program", program(std::move(p))}});
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
  const HostTensor a = random_f32({2, 3, 5}, rng), b = random_f32({3, 1}, rng);
  const HostTensor pos = random_f32({2, 3, 5}, rng, 0.1f, 3.0f);
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
      {"Softplus", {"Softplus x0"}, {}},
      {"Sign", {"Sign x0"}, {}},
      {"HardSwish", {"HardSwish x0"}, {}},
      {"Gelu", {"Gelu x0"}, {}},
      {"LeakyRelu", {"LeakyRelu x0 0.2"}, {{"alpha", one_float(0.2f)}}},
      {"HardSigmoid", {"HardSigmoid x0 0.3 0.4"}, {{"alpha", one_float(0.3f)}, {"beta", one_float(0.4f)}}},
      {"Elu", {"Elu x0 1.5"}, {{"alpha", one_float(1.5f)}}},
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
    const HostTensor got = run("FusedElementwise", in, {{"program", program(c.prog)}});
    expect_close(got, want);
    covered.insert(c.op);
  }
  // Clip with constant bounds (opset 11 inputs).
  const HostTensor lo = scalar(-0.5f), hi = scalar(0.75f);
  expect_close(run("FusedElementwise", {&a}, {{"program", program({"Clip x0 -0.5 0.75"})}}),
               run("Clip", {&a, &lo, &hi}));
  covered.insert("Clip");
  for (const auto& op : Epilogue::ops()) EXPECT_TRUE(covered.count(op)) << op << " has no test";
}

// BERT's erf Gelu chain and SiLU as one FusedElementwise.
TEST(FusedElementwise, ChainsMatchUnfusedOps) {
  std::mt19937 rng(2);
  const HostTensor x = random_f32({4, 16}, rng);
  const HostTensor sqrt2 = scalar(1.4142135f), one = scalar(1.0f), half = scalar(0.5f);
  HostTensor t = run("Div", {&x, &sqrt2});
  t = run("Erf", {&t});
  t = run("Add", {&t, &one});
  t = run("Mul", {&x, &t});
  const HostTensor want = run("Mul", {&t, &half});
  const HostTensor got = run("FusedElementwise", {&x, &sqrt2, &one, &half},
                             {{"program", program({"Div x0 x1", "Erf t0", "Add t1 x2", "Mul x0 t2", "Mul t3 x3"})}});
  expect_close(got, want);

  const HostTensor s = run("Sigmoid", {&x});
  expect_close(run("FusedElementwise", {&x}, {{"program", program({"Sigmoid x0", "Mul x0 t0"})}}),
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
    const HostTensor x = random_f32(k.x, rng), w = random_f32(k.w, rng), bias = random_f32({k.w[0]}, rng);
    std::map<std::string, Attribute> attrs = {{"group", one_int(k.group)},
                                              {"strides", ints({k.stride, k.stride})},
                                              {"pads", ints({k.pad, k.pad, k.pad, k.pad})}};
    const HostTensor conv = run("Conv", {&x, &w, &bias}, attrs);
    const HostTensor residual = random_f32(conv.shape, rng);
    const HostTensor sum = run("Add", {&conv, &residual});
    const HostTensor want = run("Relu", {&sum});

    auto fused_attrs = attrs;
    fused_attrs["program"] = program({"Add x0 x1", "Relu t0"});
    expect_close(run("FusedConv", {&x, &w, &bias, &residual}, fused_attrs), want, 1e-4f);
    // No program: plain conv; no bias (input 2 absent).
    expect_close(run("FusedConv", {&x, &w, &bias}, attrs), conv, 1e-4f);
    const HostTensor nobias = run("Conv", {&x, &w}, attrs);
    const HostTensor zero = scalar(0), six = scalar(6);
    const HostTensor clipped = run("Clip", {&nobias, &zero, &six});
    fused_attrs["program"] = program({"Clip x0 0 6"});
    expect_close(run("FusedConv", {&x, &w, nullptr}, fused_attrs), clipped, 1e-4f);
  }
}

TEST(FusedConv, RejectsAMismatchedEpilogueInput) {
  std::mt19937 rng(4);
  const HostTensor x = random_f32({1, 2, 4, 4}, rng), w = random_f32({3, 2, 1, 1}, rng);
  const HostTensor wrong = random_f32({1, 3, 4, 5}, rng);
  Node n = node("FusedConv", {{"program", program({"Add x0 x1"})}});
  n.name = "conv_fused_3";
  try {
    run(n, {&x, &w, nullptr, &wrong});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("conv_fused_3"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("shape"), std::string::npos) << e.what();
  }
  Node reads_too_much = node("FusedConv", {{"program", program({"Add x0 x2"})}});
  EXPECT_THROW(run(reads_too_much, {&x, &w, nullptr, &wrong}), Error);
}

TEST(FusedMatMul, MatchesMatMulBiasGeluAndGemm) {
  std::mt19937 rng(5);
  const HostTensor a = random_f32({2, 5, 8}, rng), b = random_f32({8, 6}, rng), bias = random_f32({6}, rng);
  const HostTensor mm = run("MatMul", {&a, &b});
  const HostTensor sum = run("Add", {&mm, &bias});
  const HostTensor want = run("Gelu", {&sum});
  expect_close(run("FusedMatMul", {&a, &b, &bias}, {{"program", program({"Add x0 x1", "Gelu t0"})}}), want);
  const HostTensor residual = random_f32(mm.shape, rng);
  expect_close(run("FusedMatMul", {&a, &b, &bias, &residual}, {{"program", program({"Add x0 x1", "Add t0 x2"})}}),
               run("Add", {&sum, &residual}));

  // Gemm(transB=1) + C == FusedMatMul(transB=1) with C as E1.
  const HostTensor a2 = random_f32({3, 8}, rng), bt = random_f32({6, 8}, rng);
  const HostTensor gemm = run("Gemm", {&a2, &bt, &bias}, {{"transB", one_int(1)}});
  expect_close(run("FusedMatMul", {&a2, &bt, &bias}, {{"transB", one_int(1)}, {"program", program({"Add x0 x1"})}}),
               gemm);
  const HostTensor a7 = random_f32({2, 5, 7}, rng);
  EXPECT_THROW(run("FusedMatMul", {&a7, &bt}, {{"transB", one_int(1)}}), Error);  // inner dims differ
}
