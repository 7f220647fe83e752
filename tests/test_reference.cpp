// Tests of the CPU reference operators (src/reference): hand-computed results
// per op family, int64 shape folding, broadcasting, error messages, a direct
// convolution cross-check, speed, and ONNX's own backend node tests
// (/usr/share/libonnx-testdata) read straight from their protobuf files.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include "reference/common.h"  // half_to_float for float16 outputs
#include "reference/reference_ops.h"
#include "test_util.h"

using namespace texplan;
using test::random_tensor;
namespace fs = std::filesystem;

namespace {

// ---- helpers ----------------------------------------------------------------

HostTensor f32(Shape s, std::vector<float> v) {
  HostTensor t(DataType::Float32, std::move(s));
  EXPECT_EQ(size_t(t.count()), v.size());
  std::copy(v.begin(), v.end(), t.data<float>());
  return t;
}
HostTensor i64(Shape s, std::vector<int64_t> v) {
  HostTensor t(DataType::Int64, std::move(s));
  EXPECT_EQ(size_t(t.count()), v.size());
  std::copy(v.begin(), v.end(), t.data<int64_t>());
  return t;
}
HostTensor i64v(std::vector<int64_t> v) { return i64({int64_t(v.size())}, v); }
HostTensor i64s(int64_t v) { return i64({}, {v}); }
HostTensor boolean(Shape s, std::vector<int> v) {
  HostTensor t(DataType::Bool, std::move(s));
  for (size_t i = 0; i < v.size(); ++i) t.data<uint8_t>()[i] = uint8_t(v[i]);
  return t;
}

Node make_node(const std::string& op, std::map<std::string, Attribute> attrs = {}, int outputs = 1) {
  Node n;
  n.name = "n_" + op;
  n.op_type = op;
  n.attrs = std::move(attrs);
  for (int i = 0; i < outputs; ++i) n.outputs.push_back(i);
  return n;
}

// Evaluates and returns the outputs; `inputs` may hold "absent" as nullptr
// via the overload taking pointers.
std::vector<HostTensor> eval(const Node& n, const std::vector<const HostTensor*>& in) {
  return reference::evaluate(n, in);
}
std::vector<HostTensor> eval(const Node& n, const std::vector<HostTensor>& in) {
  std::vector<const HostTensor*> p;
  for (const auto& t : in) p.push_back(&t);
  return reference::evaluate(n, p);
}
HostTensor eval1(const std::string& op, const std::vector<HostTensor>& in, std::map<std::string, Attribute> attrs = {}) {
  auto out = eval(make_node(op, std::move(attrs)), in);
  EXPECT_EQ(out.size(), 1u);
  return out.at(0);
}

std::vector<float> floats(const HostTensor& t) {
  EXPECT_EQ(t.dtype, DataType::Float32);
  return std::vector<float>(t.data<float>(), t.data<float>() + t.count());
}
std::vector<int64_t> ints(const HostTensor& t) {
  EXPECT_EQ(t.dtype, DataType::Int64);
  return std::vector<int64_t>(t.data<int64_t>(), t.data<int64_t>() + t.count());
}
std::vector<int> bools(const HostTensor& t) {
  EXPECT_EQ(t.dtype, DataType::Bool);
  return std::vector<int>(t.data<uint8_t>(), t.data<uint8_t>() + t.count());
}

#define EXPECT_FLOATS(tensor, ...)                                          \
  do {                                                                      \
    std::vector<float> want_ = __VA_ARGS__;                                 \
    std::vector<float> got_ = floats(tensor);                               \
    ASSERT_EQ(got_.size(), want_.size());                                   \
    for (size_t i_ = 0; i_ < want_.size(); ++i_)                            \
      EXPECT_NEAR(got_[i_], want_[i_], 1e-5 + 1e-5 * std::fabs(want_[i_])) \
          << "at " << i_;                                                   \
  } while (0)

// The message of the Error that `f` throws ("" if none).
template <class F> std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// ---- elementwise ------------------------------------------------------------

TEST(ReferenceElementwise, AddBroadcastsLikeNumpy) {
  HostTensor y = eval1("Add", {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({3}, {10, 20, 30})});
  EXPECT_EQ(y.shape, (Shape{2, 3}));
  EXPECT_FLOATS(y, {11, 22, 33, 14, 25, 36});
  // Both sides broadcast: [2,1] + [1,3] -> [2,3].
  y = eval1("Sub", {f32({2, 1}, {1, 2}), f32({1, 3}, {1, 2, 3})});
  EXPECT_EQ(y.shape, (Shape{2, 3}));
  EXPECT_FLOATS(y, {0, -1, -2, 1, 0, -1});
  // Channel bias [1,C,1,1] on [1,C,H,W], and a scalar.
  y = eval1("Mul", {f32({1, 2, 1, 2}, {1, 2, 3, 4}), f32({1, 2, 1, 1}, {10, 100})});
  EXPECT_FLOATS(y, {10, 20, 300, 400});
  y = eval1("Div", {f32({}, {1}), f32({2}, {2, 4})});
  EXPECT_EQ(y.shape, (Shape{2}));
  EXPECT_FLOATS(y, {0.5f, 0.25f});
}

TEST(ReferenceElementwise, IntegerArithmeticForFolding) {
  EXPECT_EQ(ints(eval1("Add", {i64v({1, 2}), i64s(10)})), (std::vector<int64_t>{11, 12}));
  EXPECT_EQ(ints(eval1("Sub", {i64v({1, 2}), i64v({3, 3})})), (std::vector<int64_t>{-2, -1}));
  EXPECT_EQ(ints(eval1("Mul", {i64v({3, -2}), i64s(4)})), (std::vector<int64_t>{12, -8}));
  // Integer division truncates toward zero.
  EXPECT_EQ(ints(eval1("Div", {i64v({7, -7, 224}), i64v({2, 2, 32})})), (std::vector<int64_t>{3, -3, 7}));
  EXPECT_EQ(ints(eval1("Mod", {i64v({7, -7, 7}), i64v({3, 3, -3})})), (std::vector<int64_t>{1, 2, -2}));
  EXPECT_EQ(ints(eval1("Mod", {i64v({7, -7}), i64v({3, 3})}, {{"fmod", Attribute::of_int(1)}})),
            (std::vector<int64_t>{1, -1}));
  EXPECT_EQ(ints(eval1("Max", {i64v({1, 5}), i64s(3), i64v({0, 0})})), (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(ints(eval1("Min", {i64v({1, 5}), i64s(3)})), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(ints(eval1("Sum", {i64v({1, 5}), i64s(3)})), (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(ints(eval1("Pow", {i64v({2, 3}), i64s(3)})), (std::vector<int64_t>{8, 27}));
  EXPECT_EQ(ints(eval1("Neg", {i64v({2, -3})})), (std::vector<int64_t>{-2, 3}));
  EXPECT_EQ(ints(eval1("Abs", {i64v({2, -3})})), (std::vector<int64_t>{2, 3}));
  EXPECT_NE(error_of([] { eval1("Div", {i64v({1}), i64v({0})}); }).find("division by zero"), std::string::npos);
}

TEST(ReferenceElementwise, ComparisonsLogicWhere) {
  EXPECT_EQ(bools(eval1("Equal", {i64v({1, 2, 3}), i64s(2)})), (std::vector<int>{0, 1, 0}));
  EXPECT_EQ(bools(eval1("Greater", {f32({3}, {1, 2, 3}), f32({}, {2})})), (std::vector<int>{0, 0, 1}));
  EXPECT_EQ(bools(eval1("Less", {f32({3}, {1, 2, 3}), f32({}, {2})})), (std::vector<int>{1, 0, 0}));
  EXPECT_EQ(bools(eval1("GreaterOrEqual", {i64v({1, 2, 3}), i64s(2)})), (std::vector<int>{0, 1, 1}));
  EXPECT_EQ(bools(eval1("Equal", {boolean({2}, {1, 0}), boolean({2}, {1, 1})})), (std::vector<int>{1, 0}));
  EXPECT_EQ(bools(eval1("Not", {boolean({3}, {1, 0, 1})})), (std::vector<int>{0, 1, 0}));
  EXPECT_EQ(bools(eval1("And", {boolean({2}, {1, 0}), boolean({}, {1})})), (std::vector<int>{1, 0}));
  // Where broadcasts all three: the classic "replace -1 in a shape" fold.
  HostTensor shape = i64v({1, -1, 64});
  HostTensor is_neg = eval1("Equal", {shape, i64s(-1)});
  EXPECT_EQ(ints(eval1("Where", {is_neg, i64s(49), shape})), (std::vector<int64_t>{1, 49, 64}));
  HostTensor y = eval1("Where", {boolean({2, 1}, {1, 0}), f32({3}, {1, 2, 3}), f32({}, {-1})});
  EXPECT_EQ(y.shape, (Shape{2, 3}));
  EXPECT_FLOATS(y, {1, 2, 3, -1, -1, -1});
}

TEST(ReferenceElementwise, Activations) {
  HostTensor x = f32({4}, {-2, -0.5f, 0, 3});
  EXPECT_FLOATS(eval1("Relu", {x}), {0, 0, 0, 3});
  EXPECT_FLOATS(eval1("LeakyRelu", {x}, {{"alpha", Attribute::of_float(0.1f)}}), {-0.2f, -0.05f, 0, 3});
  EXPECT_FLOATS(eval1("Sigmoid", {x}), {0.11920292f, 0.37754067f, 0.5f, 0.95257413f});
  EXPECT_FLOATS(eval1("Tanh", {x}), {-0.96402758f, -0.46211716f, 0, 0.99505475f});
  EXPECT_FLOATS(eval1("HardSigmoid", {x}), {0.1f, 0.4f, 0.5f, 1});
  EXPECT_FLOATS(eval1("HardSwish", {x}), {-0.33333333f, -0.20833333f, 0, 3});
  EXPECT_FLOATS(eval1("Elu", {x}), {-0.86466472f, -0.39346934f, 0, 3});
  EXPECT_FLOATS(eval1("Softplus", {x}), {0.12692801f, 0.47407698f, 0.69314718f, 3.04858735f});
  EXPECT_FLOATS(eval1("Gelu", {x}), {-0.04550026f, -0.15426877f, 0, 2.99595031f});
  EXPECT_FLOATS(eval1("Gelu", {x}, {{"approximate", Attribute::of_string("tanh")}}), {-0.04540231f, -0.15428599f, 0, 2.99636261f});
  EXPECT_FLOATS(eval1("Selu", {f32({2}, {-1, 1})}), {-1.11133074f, 1.05070102f});
  EXPECT_FLOATS(eval1("Erf", {f32({2}, {0.5f, -1})}), {0.52049988f, -0.84270079f});
  EXPECT_FLOATS(eval1("Abs", {x}), {2, 0.5f, 0, 3});
  EXPECT_FLOATS(eval1("Neg", {x}), {2, 0.5f, 0, -3});
  EXPECT_FLOATS(eval1("Floor", {x}), {-2, -1, 0, 3});
  EXPECT_FLOATS(eval1("Ceil", {x}), {-2, 0, 0, 3});
  EXPECT_FLOATS(eval1("Reciprocal", {f32({2}, {2, -4})}), {0.5f, -0.25f});
  EXPECT_FLOATS(eval1("Sqrt", {f32({2}, {4, 2})}), {2, 1.41421356f});
  EXPECT_FLOATS(eval1("Exp", {f32({2}, {0, 1})}), {1, 2.71828183f});
  EXPECT_FLOATS(eval1("Log", {f32({2}, {1, 2.71828183f})}), {0, 1});
  EXPECT_FLOATS(eval1("Pow", {f32({2}, {2, 9}), f32({2}, {3, 0.5f})}), {8, 3});
  EXPECT_FLOATS(eval1("Mean", {f32({2}, {1, 2}), f32({2}, {3, 6})}), {2, 4});
  EXPECT_FLOATS(eval1("Max", {f32({2}, {1, 7}), f32({2}, {3, 6})}), {3, 7});
  EXPECT_FLOATS(eval1("Sum", {f32({2}, {1, 7})}), {1, 7});
}

TEST(ReferenceElementwise, ClipBoundsAsInputsOrAttributes) {
  HostTensor x = f32({4}, {-2, -0.5f, 0.5f, 3});
  EXPECT_FLOATS(eval1("Clip", {x, f32({}, {-1}), f32({}, {1})}), {-1, -0.5f, 0.5f, 1});
  EXPECT_FLOATS(eval1("Clip", {x}, {{"min", Attribute::of_float(0)}, {"max", Attribute::of_float(6)}}), {0, 0, 0.5f, 3});
  auto out = eval(make_node("Clip"), std::vector<const HostTensor*>{&x, nullptr, nullptr});
  EXPECT_FLOATS(out[0], {-2, -0.5f, 0.5f, 3});
  HostTensor hi = f32({}, {0});
  out = eval(make_node("Clip"), std::vector<const HostTensor*>{&x, nullptr, &hi});
  EXPECT_FLOATS(out[0], {-2, -0.5f, 0, 0});
}

TEST(ReferenceElementwise, Cast) {
  HostTensor y = eval1("Cast", {f32({4}, {-1.7f, 0, 2.9f, 3})}, {{"to", Attribute::of_int(7)}});
  EXPECT_EQ(ints(y), (std::vector<int64_t>{-1, 0, 2, 3}));
  y = eval1("Cast", {i64v({1, 0, 5})}, {{"to", Attribute::of_int(1)}});
  EXPECT_FLOATS(y, {1, 0, 5});
  y = eval1("Cast", {i64v({1, 0, 5})}, {{"to", Attribute::of_int(9)}});
  EXPECT_EQ(bools(y), (std::vector<int>{1, 0, 1}));
  y = eval1("Cast", {boolean({2}, {1, 0})}, {{"to", Attribute::of_int(6)}});
  EXPECT_EQ(y.dtype, DataType::Int32);
  EXPECT_EQ(y.data<int32_t>()[0], 1);
  y = eval1("Cast", {f32({1}, {1.5f})}, {{"to", Attribute::of_int(11)}});
  EXPECT_EQ(y.dtype, DataType::Float64);
  EXPECT_EQ(y.data<double>()[0], 1.5);
  y = eval1("Cast", {f32({2}, {1.5f, -65504})}, {{"to", Attribute::of_int(10)}});
  EXPECT_EQ(y.dtype, DataType::Float16);
  EXPECT_EQ(y.data<uint16_t>()[0], 0x3e00);
  EXPECT_EQ(y.data<uint16_t>()[1], 0xfbff);
  EXPECT_NE(error_of([] { eval1("Cast", {i64v({1})}, {{"to", Attribute::of_int(8)}}); }).find("unsupported data type STRING"),
            std::string::npos);
}

// ---- matrix products --------------------------------------------------------

TEST(ReferenceMatMul, PlainBatchedAndVectors) {
  HostTensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6}), b = f32({3, 2}, {1, 0, 0, 1, 1, 1});
  HostTensor y = eval1("MatMul", {a, b});
  EXPECT_EQ(y.shape, (Shape{2, 2}));
  EXPECT_FLOATS(y, {4, 5, 10, 11});
  // Batch dims broadcast: [2,1,2,3] x [3,2] -> [2,1,2,2].
  HostTensor a4 = f32({2, 1, 2, 3}, {1, 2, 3, 4, 5, 6, 0, 0, 1, 1, 0, 0});
  y = eval1("MatMul", {a4, b});
  EXPECT_EQ(y.shape, (Shape{2, 1, 2, 2}));
  EXPECT_FLOATS(y, {4, 5, 10, 11, 1, 1, 1, 0});
  // Vector cases: [3] x [3,2] -> [2]; [2,3] x [3] -> [2]; [3] x [3] -> [].
  y = eval1("MatMul", {f32({3}, {1, 1, 1}), b});
  EXPECT_EQ(y.shape, (Shape{2}));
  EXPECT_FLOATS(y, {2, 2});
  y = eval1("MatMul", {a, f32({3}, {1, 0, 1})});
  EXPECT_EQ(y.shape, (Shape{2}));
  EXPECT_FLOATS(y, {4, 10});
  y = eval1("MatMul", {f32({3}, {1, 2, 3}), f32({3}, {1, 2, 3})});
  EXPECT_EQ(y.shape, (Shape{}));
  EXPECT_FLOATS(y, {14});
  EXPECT_NE(error_of([&] { eval1("MatMul", {a, a}); }).find("inner dimensions"), std::string::npos);
}

TEST(ReferenceMatMul, LargeMatchesNaive) {
  std::mt19937 rng(1);
  HostTensor a = random_tensor({37, 300}, rng), b = random_tensor({300, 70}, rng);
  HostTensor y = eval1("MatMul", {a, b});
  for (int i = 0; i < 37; ++i)
    for (int j = 0; j < 70; ++j) {
      double s = 0;
      for (int k = 0; k < 300; ++k) s += double(a.data<float>()[i * 300 + k]) * b.data<float>()[k * 70 + j];
      ASSERT_NEAR(y.data<float>()[i * 70 + j], s, 1e-4);
    }
}

TEST(ReferenceMatMul, Gemm) {
  HostTensor a = f32({3, 2}, {1, 4, 2, 5, 3, 6});  // A^T of [[1,2,3],[4,5,6]]
  HostTensor b = f32({2, 3}, {1, 0, 1, 0, 1, 1});  // B^T of [[1,0],[0,1],[1,1]]
  HostTensor y = eval1("Gemm", {a, b, f32({2}, {100, 200})},
                       {{"transA", Attribute::of_int(1)}, {"transB", Attribute::of_int(1)}, {"alpha", Attribute::of_float(2)}, {"beta", Attribute::of_float(0.5f)}});
  EXPECT_EQ(y.shape, (Shape{2, 2}));
  EXPECT_FLOATS(y, {2 * 4 + 50, 2 * 5 + 100, 2 * 10 + 50, 2 * 11 + 100});
  // No C, scalar C, and column C [M,1].
  EXPECT_FLOATS(eval1("Gemm", {f32({1, 2}, {1, 2}), f32({2, 1}, {3, 4})}), {11});
  EXPECT_FLOATS(eval1("Gemm", {f32({1, 2}, {1, 2}), f32({2, 1}, {3, 4}), f32({}, {1})}), {12});
  EXPECT_FLOATS(eval1("Gemm", {f32({2, 1}, {1, 2}), f32({1, 2}, {1, 1}), f32({2, 1}, {10, 20})}), {11, 11, 22, 22});
}

// ---- convolution ------------------------------------------------------------

TEST(ReferenceConv, HandComputed) {
  // 3x3 input, 2x2 kernel of ones: sums of 2x2 windows.
  HostTensor x = f32({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  HostTensor w = f32({1, 1, 2, 2}, {1, 1, 1, 1});
  HostTensor y = eval1("Conv", {x, w});
  EXPECT_EQ(y.shape, (Shape{1, 1, 2, 2}));
  EXPECT_FLOATS(y, {12, 16, 24, 28});
  // Padding 1 and stride 2 with a bias.
  y = eval1("Conv", {x, w, f32({1}, {0.5f})}, {{"pads", Attribute::of_ints({1, 1, 1, 1})}, {"strides", Attribute::of_ints({2, 2})}});
  EXPECT_EQ(y.shape, (Shape{1, 1, 2, 2}));
  EXPECT_FLOATS(y, {1.5f, 5.5f, 11.5f, 28.5f});
  // SAME_UPPER keeps the size; the extra padding goes at the end.
  y = eval1("Conv", {x, w}, {{"auto_pad", Attribute::of_string("SAME_UPPER")}});
  EXPECT_EQ(y.shape, (Shape{1, 1, 3, 3}));
  EXPECT_FLOATS(y, {12, 16, 9, 24, 28, 15, 15, 17, 9});
  y = eval1("Conv", {x, w}, {{"auto_pad", Attribute::of_string("SAME_LOWER")}});
  EXPECT_FLOATS(y, {1, 3, 5, 5, 12, 16, 11, 24, 28});
  // Dilation 2: the four corners.
  y = eval1("Conv", {x, w}, {{"dilations", Attribute::of_ints({2, 2})}});
  EXPECT_EQ(y.shape, (Shape{1, 1, 1, 1}));
  EXPECT_FLOATS(y, {20});
  // Depthwise (group = channels), 1-D.
  y = eval1("Conv", {f32({1, 2, 3}, {1, 2, 3, 10, 20, 30}), f32({2, 1, 2}, {1, -1, 1, 1})}, {{"group", Attribute::of_int(2)}});
  EXPECT_EQ(y.shape, (Shape{1, 2, 2}));
  EXPECT_FLOATS(y, {-1, -1, 30, 50});
}

// Direct 2-D convolution, the textbook loop nest, to cross-check im2col+gemm.
std::vector<float> naive_conv(const HostTensor& x, const HostTensor& w, const std::vector<int64_t>& s,
                              const std::vector<int64_t>& d, const std::vector<int64_t>& p, int64_t group,
                              Shape& out) {
  const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3], M = w.shape[0], KH = w.shape[2],
                KW = w.shape[3], Cg = C / group, Mg = M / group;
  const int64_t OH = (H + p[0] + p[2] - (KH - 1) * d[0] - 1) / s[0] + 1,
                OW = (W + p[1] + p[3] - (KW - 1) * d[1] - 1) / s[1] + 1;
  out = {N, M, OH, OW};
  std::vector<float> y(size_t(N * M * OH * OW), 0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double acc = 0;
          const int64_t g = m / Mg;
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t ih = oh * s[0] - p[0] + kh * d[0], iw = ow * s[1] - p[1] + kw * d[1];
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                acc += double(x.data<float>()[((n * C + g * Cg + c) * H + ih) * W + iw]) *
                       w.data<float>()[((m * Cg + c) * KH + kh) * KW + kw];
              }
          y[((n * M + m) * OH + oh) * OW + ow] = float(acc);
        }
  return y;
}

TEST(ReferenceConv, MatchesDirectLoopsOverManyConfigurations) {
  std::mt19937 rng(7);
  struct Case {
    int64_t N, C, H, W, M, KH, KW, group;
    std::vector<int64_t> s, d, p;
  };
  const std::vector<Case> cases = {
      {1, 3, 9, 11, 4, 3, 3, 1, {1, 1}, {1, 1}, {1, 1, 1, 1}},  {2, 4, 8, 8, 6, 3, 3, 2, {2, 2}, {1, 1}, {1, 0, 2, 1}},
      {1, 6, 10, 7, 6, 3, 3, 6, {1, 2}, {2, 1}, {2, 2, 2, 2}},  {1, 5, 7, 9, 8, 1, 1, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}},
      {1, 4, 13, 13, 2, 5, 2, 2, {3, 1}, {1, 3}, {0, 1, 2, 0}}, {1, 3, 16, 16, 5, 7, 7, 1, {2, 2}, {1, 1}, {3, 3, 3, 3}},
      {1, 4, 6, 6, 4, 1, 1, 1, {2, 2}, {1, 1}, {0, 0, 0, 0}},
  };
  for (const Case& k : cases) {
    HostTensor x = random_tensor({k.N, k.C, k.H, k.W}, rng), w = random_tensor({k.M, k.C / k.group, k.KH, k.KW}, rng);
    Shape want_shape;
    std::vector<float> want = naive_conv(x, w, k.s, k.d, k.p, k.group, want_shape);
    HostTensor y = eval1("Conv", {x, w},
                         {{"strides", Attribute::of_ints(k.s)}, {"dilations", Attribute::of_ints(k.d)}, {"pads", Attribute::of_ints(k.p)},
                          {"group", Attribute::of_int(k.group)}, {"kernel_shape", Attribute::of_ints({k.KH, k.KW})}});
    ASSERT_EQ(y.shape, want_shape);
    for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(y.data<float>()[i], want[i], 1e-4) << "at " << i;
  }
}

TEST(ReferenceConv, TransposeHandComputed) {
  // Stride 2, 2x2 kernel: every input value paints its own 2x2 block.
  HostTensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  HostTensor w = f32({1, 1, 2, 2}, {1, 10, 100, 1000});
  HostTensor y = eval1("ConvTranspose", {x, w}, {{"strides", Attribute::of_ints({2, 2})}});
  EXPECT_EQ(y.shape, (Shape{1, 1, 4, 4}));
  EXPECT_FLOATS(y, {1, 10, 2, 20, 100, 1000, 200, 2000, 3, 30, 4, 40, 300, 3000, 400, 4000});
  // Stride 1 overlaps add up; pads trim; output_padding extends; bias adds.
  HostTensor ones = f32({1, 1, 2, 2}, {1, 1, 1, 1});
  y = eval1("ConvTranspose", {x, ones});
  EXPECT_EQ(y.shape, (Shape{1, 1, 3, 3}));
  EXPECT_FLOATS(y, {1, 3, 2, 4, 10, 6, 3, 7, 4});
  y = eval1("ConvTranspose", {x, ones, f32({1}, {1})}, {{"pads", Attribute::of_ints({1, 1, 0, 0})}});
  EXPECT_EQ(y.shape, (Shape{1, 1, 2, 2}));
  EXPECT_FLOATS(y, {11, 7, 8, 5});
  y = eval1("ConvTranspose", {x, ones}, {{"strides", Attribute::of_ints({2, 2})}, {"output_padding", Attribute::of_ints({1, 0})}});
  EXPECT_EQ(y.shape, (Shape{1, 1, 5, 4}));
  // Groups: two channels, each with its own 1x1 kernel, two outputs per group.
  y = eval1("ConvTranspose", {f32({1, 2, 1, 1}, {1, 2}), f32({2, 2, 1, 1}, {1, 2, 3, 4})}, {{"group", Attribute::of_int(2)}});
  EXPECT_EQ(y.shape, (Shape{1, 4, 1, 1}));
  EXPECT_FLOATS(y, {1, 2, 6, 8});
}

TEST(ReferenceConv, TransposeIsTheAdjointOfConv) {
  // <conv(x), y> == <x, convT(y)> for the same weights and geometry.
  std::mt19937 rng(3);
  const std::map<std::string, Attribute> geo = {
      {"strides", Attribute::of_ints({2, 3})}, {"pads", Attribute::of_ints({1, 0, 2, 1})}, {"dilations", Attribute::of_ints({2, 1})}, {"group", Attribute::of_int(2)}};
  HostTensor x = random_tensor({2, 4, 11, 13}, rng), w = random_tensor({6, 2, 3, 2}, rng);
  HostTensor cx = eval1("Conv", {x, w}, geo);
  HostTensor y = random_tensor(cx.shape, rng);
  // The same weights read as ConvTranspose's [C_in = 6, M/g = 2, 3, 2];
  // output_padding makes the transpose come back to x's 11 x 13.
  auto tgeo = geo;
  tgeo["output_padding"] = Attribute::of_ints({1, 0});
  HostTensor ty = eval1("ConvTranspose", {y, w}, tgeo);
  // x has 4 channels = group(2) * M/g(2): the adjoint maps back to x's shape.
  ASSERT_EQ(ty.shape, x.shape);
  double lhs = 0, rhs = 0;
  for (int64_t i = 0; i < cx.count(); ++i) lhs += double(cx.data<float>()[i]) * y.data<float>()[i];
  for (int64_t i = 0; i < x.count(); ++i) rhs += double(x.data<float>()[i]) * ty.data<float>()[i];
  EXPECT_NEAR(lhs, rhs, 1e-3 * std::fabs(lhs) + 1e-3);
}

TEST(ReferenceConv, LargeConvIsFast) {
  std::mt19937 rng(5);
  HostTensor x = random_tensor({1, 64, 224, 224}, rng), w = random_tensor({64, 64, 3, 3}, rng);
  auto t0 = std::chrono::steady_clock::now();
  HostTensor y = eval1("Conv", {x, w}, {{"pads", Attribute::of_ints({1, 1, 1, 1})}});
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(y.shape, (Shape{1, 64, 224, 224}));
  std::printf("Conv 1x64x224x224, 64 3x3 filters (1.85 GMAC): %.2f s\n", s);
  EXPECT_LT(s, 15.0);
}

// ---- pooling ----------------------------------------------------------------

TEST(ReferencePool, MaxAndAverage) {
  HostTensor x = f32({1, 1, 4, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16});
  HostTensor y = eval1("MaxPool", {x}, {{"kernel_shape", Attribute::of_ints({2, 2})}, {"strides", Attribute::of_ints({2, 2})}});
  EXPECT_EQ(y.shape, (Shape{1, 1, 2, 2}));
  EXPECT_FLOATS(y, {6, 8, 14, 16});
  // ceil_mode keeps the partial last window.
  y = eval1("MaxPool", {x}, {{"kernel_shape", Attribute::of_ints({3, 3})}, {"strides", Attribute::of_ints({2, 2})}, {"ceil_mode", Attribute::of_int(1)}});
  EXPECT_EQ(y.shape, (Shape{1, 1, 2, 2}));
  EXPECT_FLOATS(y, {11, 12, 15, 16});
  // Padding: padded cells never win a max and count in the average only with count_include_pad.
  y = eval1("MaxPool", {f32({1, 1, 2, 2}, {-1, -2, -3, -4})}, {{"kernel_shape", Attribute::of_ints({2, 2})}, {"pads", Attribute::of_ints({1, 1, 0, 0})}});
  EXPECT_FLOATS(y, {-1, -1, -1, -1});
  y = eval1("AveragePool", {x}, {{"kernel_shape", Attribute::of_ints({2, 2})}, {"strides", Attribute::of_ints({2, 2})}});
  EXPECT_FLOATS(y, {3.5f, 5.5f, 11.5f, 13.5f});
  const std::map<std::string, Attribute> padded = {{"kernel_shape", Attribute::of_ints({2, 2})}, {"pads", Attribute::of_ints({1, 1, 0, 0})},
                                                   {"strides", Attribute::of_ints({2, 2})}};
  EXPECT_FLOATS(eval1("AveragePool", {x}, padded), {1, 2.5f, 7, 8.5f});
  auto incl = padded;
  incl["count_include_pad"] = Attribute::of_int(1);
  EXPECT_FLOATS(eval1("AveragePool", {x}, incl), {0.25f, 1.25f, 3.5f, 8.5f});
  y = eval1("GlobalAveragePool", {x});
  EXPECT_EQ(y.shape, (Shape{1, 1, 1, 1}));
  EXPECT_FLOATS(y, {8.5f});
  EXPECT_FLOATS(eval1("GlobalMaxPool", {x}), {16});
}

TEST(ReferencePool, MaxPoolIndices) {
  HostTensor x = f32({1, 2, 2, 2}, {1, 4, 3, 2, 5, 6, 8, 7});
  auto out = eval(make_node("MaxPool", {{"kernel_shape", Attribute::of_ints({2, 2})}}, 2), {x});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_FLOATS(out[0], {4, 8});
  EXPECT_EQ(ints(out[1]), (std::vector<int64_t>{1, 6}));
  out = eval(make_node("MaxPool", {{"kernel_shape", Attribute::of_ints({2, 2})}, {"storage_order", Attribute::of_int(1)}}, 2), {x});
  EXPECT_EQ(ints(out[1]), (std::vector<int64_t>{2, 5}));
}

// ---- reductions -------------------------------------------------------------

TEST(ReferenceReduce, AxesKeepdimsAndForms) {
  HostTensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  // Opset 13 ReduceSum: axes as input.
  HostTensor y = eval1("ReduceSum", {x, i64v({1})}, {{"keepdims", Attribute::of_int(0)}});
  EXPECT_EQ(y.shape, (Shape{2}));
  EXPECT_FLOATS(y, {6, 15});
  // Attribute axes (ReduceMean before opset 18), negative axis, keepdims.
  y = eval1("ReduceMean", {x}, {{"axes", Attribute::of_ints({-2})}});
  EXPECT_EQ(y.shape, (Shape{1, 3}));
  EXPECT_FLOATS(y, {2.5f, 3.5f, 4.5f});
  // No axes: everything.
  y = eval1("ReduceMax", {x});
  EXPECT_EQ(y.shape, (Shape{1, 1}));
  EXPECT_FLOATS(y, {6});
  y = eval1("ReduceMin", {x}, {{"keepdims", Attribute::of_int(0)}});
  EXPECT_EQ(y.shape, (Shape{}));
  EXPECT_FLOATS(y, {1});
  // noop_with_empty_axes with empty axes: the identity.
  y = eval1("ReduceSum", {x, i64v({})}, {{"noop_with_empty_axes", Attribute::of_int(1)}});
  EXPECT_EQ(y.shape, (Shape{2, 3}));
  // Integer folding: the element count of a shape.
  EXPECT_EQ(ints(eval1("ReduceProd", {i64v({2, 3, 7})}, {{"keepdims", Attribute::of_int(0)}})), (std::vector<int64_t>{42}));
  EXPECT_FLOATS(eval1("ReduceL2", {f32({2}, {3, 4})}), {5});
  EXPECT_FLOATS(eval1("ReduceSumSquare", {f32({2}, {3, 4})}), {25});
  EXPECT_EQ(ints(eval1("ArgMax", {x}, {{"axis", Attribute::of_int(1)}})), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(ints(eval1("ArgMin", {x}, {{"axis", Attribute::of_int(0)}, {"keepdims", Attribute::of_int(0)}})), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_NE(error_of([&] { eval1("ReduceSum", {x, i64v({2})}); }).find("out of range"), std::string::npos);
}

// ---- shape and data movement ------------------------------------------------

TEST(ReferenceShape, ShapeSizeReshapeFlatten) {
  HostTensor x(DataType::Float32, {2, 3, 4});
  EXPECT_EQ(ints(eval1("Shape", {x})), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(ints(eval1("Shape", {x}, {{"start", Attribute::of_int(1)}})), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(ints(eval1("Shape", {x}, {{"start", Attribute::of_int(-2)}, {"end", Attribute::of_int(-1)}})), (std::vector<int64_t>{3}));
  EXPECT_EQ(ints(eval1("Size", {x})), (std::vector<int64_t>{24}));
  HostTensor shape_only;  // a shape without bytes: enough for Shape and Size
  shape_only.shape = {5, 7};
  EXPECT_EQ(ints(eval1("Shape", {shape_only})), (std::vector<int64_t>{5, 7}));
  EXPECT_EQ(ints(eval1("Size", {shape_only})), (std::vector<int64_t>{35}));
  EXPECT_EQ(eval1("Size", {x}).shape, (Shape{}));
  EXPECT_EQ(eval1("Reshape", {x, i64v({0, -1})}).shape, (Shape{2, 12}));
  EXPECT_EQ(eval1("Reshape", {x, i64v({-1, 2, 2})}).shape, (Shape{6, 2, 2}));
  HostTensor empty(DataType::Float32, {0, 3});
  EXPECT_EQ(eval1("Reshape", {empty, i64v({3, 0})}, {{"allowzero", Attribute::of_int(1)}}).shape, (Shape{3, 0}));
  EXPECT_NE(error_of([&] { eval1("Reshape", {x, i64v({5, -1})}); }).find("cannot infer"), std::string::npos);
  EXPECT_EQ(eval1("Flatten", {x}).shape, (Shape{2, 12}));
  EXPECT_EQ(eval1("Flatten", {x}, {{"axis", Attribute::of_int(0)}}).shape, (Shape{1, 24}));
  EXPECT_EQ(eval1("Flatten", {x}, {{"axis", Attribute::of_int(-1)}}).shape, (Shape{6, 4}));
}

TEST(ReferenceShape, SqueezeUnsqueezeTranspose) {
  HostTensor x = f32({1, 3, 1}, {1, 2, 3});
  EXPECT_EQ(eval1("Squeeze", {x}).shape, (Shape{3}));
  EXPECT_EQ(eval1("Squeeze", {x, i64v({-1})}).shape, (Shape{1, 3}));
  EXPECT_EQ(eval1("Squeeze", {x}, {{"axes", Attribute::of_ints({0})}}).shape, (Shape{3, 1}));
  EXPECT_NE(error_of([&] { eval1("Squeeze", {x, i64v({1})}); }).find("cannot squeeze"), std::string::npos);
  EXPECT_EQ(eval1("Unsqueeze", {i64s(5), i64v({0})}).shape, (Shape{1}));
  EXPECT_EQ(eval1("Unsqueeze", {x, i64v({0, -1})}).shape, (Shape{1, 1, 3, 1, 1}));
  EXPECT_EQ(eval1("Unsqueeze", {x}, {{"axes", Attribute::of_ints({2})}}).shape, (Shape{1, 3, 1, 1}));
  HostTensor m = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  HostTensor t = eval1("Transpose", {m});
  EXPECT_EQ(t.shape, (Shape{3, 2}));
  EXPECT_FLOATS(t, {1, 4, 2, 5, 3, 6});
  HostTensor c = f32({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  t = eval1("Transpose", {c}, {{"perm", Attribute::of_ints({1, 2, 0})}});
  EXPECT_EQ(t.shape, (Shape{2, 2, 2}));
  EXPECT_FLOATS(t, {0, 4, 1, 5, 2, 6, 3, 7});
}

TEST(ReferenceShape, ConcatSplitSlice) {
  EXPECT_EQ(ints(eval1("Concat", {i64v({1}), i64v({-1, 3}), i64v({})}, {{"axis", Attribute::of_int(0)}})),
            (std::vector<int64_t>{1, -1, 3}));
  HostTensor y = eval1("Concat", {f32({2, 1}, {1, 2}), f32({2, 2}, {3, 4, 5, 6})}, {{"axis", Attribute::of_int(-1)}});
  EXPECT_EQ(y.shape, (Shape{2, 3}));
  EXPECT_FLOATS(y, {1, 3, 4, 2, 5, 6});

  HostTensor x = f32({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  auto parts = eval(make_node("Split", {{"axis", Attribute::of_int(1)}}, 2), {x});
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_FLOATS(parts[1], {3, 4, 7, 8});
  parts = eval(make_node("Split", {{"axis", Attribute::of_int(1)}}, 2), {x, i64v({1, 3})});
  EXPECT_EQ(parts[1].shape, (Shape{2, 3}));
  EXPECT_FLOATS(parts[0], {1, 5});
  parts = eval(make_node("Split", {{"split", Attribute::of_ints({1, 1})}}, 2), {x});
  EXPECT_FLOATS(parts[1], {5, 6, 7, 8});

  HostTensor v = i64v({0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  auto slice = [&](std::vector<int64_t> s, std::vector<int64_t> e, std::vector<int64_t> st) {
    return ints(eval1("Slice", {v, i64v(s), i64v(e), i64v({0}), i64v(st)}));
  };
  EXPECT_EQ(slice({2}, {5}, {1}), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(slice({-3}, {INT64_MAX}, {1}), (std::vector<int64_t>{7, 8, 9}));
  EXPECT_EQ(slice({1}, {100}, {3}), (std::vector<int64_t>{1, 4, 7}));
  EXPECT_EQ(slice({-1}, {INT64_MIN}, {-1}), (std::vector<int64_t>{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}));
  EXPECT_EQ(slice({8}, {1}, {-3}), (std::vector<int64_t>{8, 5, 2}));
  EXPECT_EQ(slice({5}, {2}, {1}), (std::vector<int64_t>{}));
  EXPECT_EQ(slice({-100}, {2}, {1}), (std::vector<int64_t>{0, 1}));
  // 2-D with axes and opset-1 attribute form.
  y = eval1("Slice", {x, i64v({1}), i64v({-1}), i64v({-1})});
  EXPECT_EQ(y.shape, (Shape{2, 2}));
  EXPECT_FLOATS(y, {2, 3, 6, 7});
  y = eval1("Slice", {x}, {{"starts", Attribute::of_ints({1, 0})}, {"ends", Attribute::of_ints({2, 1})}});
  EXPECT_FLOATS(y, {5});
}

TEST(ReferenceShape, GatherExpandTile) {
  HostTensor shape = i64v({1, 3, 224, 224});
  EXPECT_EQ(ints(eval1("Gather", {shape, i64s(0)})), (std::vector<int64_t>{1}));
  EXPECT_EQ(eval1("Gather", {shape, i64s(-1)}).shape, (Shape{}));
  EXPECT_EQ(ints(eval1("Gather", {shape, i64v({2, -3})})), (std::vector<int64_t>{224, 3}));
  HostTensor m = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  HostTensor y = eval1("Gather", {m, i64({2, 2}, {0, 2, 1, 1})}, {{"axis", Attribute::of_int(1)}});
  EXPECT_EQ(y.shape, (Shape{2, 2, 2}));
  EXPECT_FLOATS(y, {1, 3, 2, 2, 4, 6, 5, 5});
  EXPECT_NE(error_of([&] { eval1("Gather", {shape, i64s(4)}); }).find("out of range"), std::string::npos);
  y = eval1("Expand", {f32({3, 1}, {1, 2, 3}), i64v({2, 1, 2})});
  EXPECT_EQ(y.shape, (Shape{2, 3, 2}));
  EXPECT_FLOATS(y, {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3});
  EXPECT_EQ(eval1("Expand", {f32({3, 1}, {1, 2, 3}), i64v({1})}).shape, (Shape{3, 1}));
  y = eval1("Tile", {f32({2, 2}, {1, 2, 3, 4}), i64v({1, 2})});
  EXPECT_EQ(y.shape, (Shape{2, 4}));
  EXPECT_FLOATS(y, {1, 2, 1, 2, 3, 4, 3, 4});
  y = eval1("Tile", {f32({2}, {1, 2}), i64v({3})});
  EXPECT_FLOATS(y, {1, 2, 1, 2, 1, 2});
}

TEST(ReferenceIndexing, ScatterTopKNonZeroOneHot) {
  HostTensor y = eval1("ScatterND", {f32({4}, {1, 2, 3, 4}), i64({2, 1}, {3, -4}), f32({2}, {10, 20})});
  EXPECT_FLOATS(y, {20, 2, 3, 10});
  y = eval1("ScatterElements", {f32({2, 2}, {0, 0, 0, 0}), i64({1, 2}, {1, 0}), f32({1, 2}, {5, 6})},
            {{"axis", Attribute::of_int(0)}});
  EXPECT_FLOATS(y, {0, 6, 5, 0});
  y = eval1("GatherND", {f32({2, 2}, {1, 2, 3, 4}), i64({2, 2}, {0, 1, 1, 0})});
  EXPECT_FLOATS(y, {2, 3});
  auto out = eval(make_node("TopK", {}, 2), {f32({2, 3}, {1, 3, 3, 5, 4, 6}), i64v({2})});
  EXPECT_FLOATS(out[0], {3, 3, 6, 5});
  EXPECT_EQ(ints(out[1]), (std::vector<int64_t>{1, 2, 2, 0}));
  y = eval1("NonZero", {boolean({2, 2}, {1, 0, 0, 1})});
  EXPECT_EQ(y.shape, (Shape{2, 2}));
  EXPECT_EQ(ints(y), (std::vector<int64_t>{0, 1, 0, 1}));
  y = eval1("OneHot", {i64v({0, 2, -1, 5}), i64s(3), f32({2}, {0, 1})});
  EXPECT_EQ(y.shape, (Shape{4, 3}));
  EXPECT_FLOATS(y, {1, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0});
}

TEST(ReferenceShape, PadModes) {
  HostTensor x = f32({1, 3}, {1, 2, 3});
  HostTensor pads = i64v({0, 2, 0, 1});
  HostTensor y = eval1("Pad", {x, pads, f32({}, {9})});
  EXPECT_EQ(y.shape, (Shape{1, 6}));
  EXPECT_FLOATS(y, {9, 9, 1, 2, 3, 9});
  EXPECT_FLOATS(eval1("Pad", {x, pads}, {{"mode", Attribute::of_string("reflect")}}), {3, 2, 1, 2, 3, 2});
  EXPECT_FLOATS(eval1("Pad", {x, pads}, {{"mode", Attribute::of_string("edge")}}), {1, 1, 1, 2, 3, 3});
  // Opset-2 attribute form, 2-D, and negative pads crop.
  y = eval1("Pad", {f32({2, 2}, {1, 2, 3, 4})}, {{"pads", Attribute::of_ints({1, 0, 0, 0})}, {"value", Attribute::of_float(-1)}});
  EXPECT_EQ(y.shape, (Shape{3, 2}));
  EXPECT_FLOATS(y, {-1, -1, 1, 2, 3, 4});
  EXPECT_FLOATS(eval1("Pad", {x, i64v({0, -1, 0, 0})}), {2, 3});
  EXPECT_NE(error_of([&] { eval1("Pad", {x, pads}, {{"mode", Attribute::of_string("mirror")}}); }).find("unsupported mode 'mirror'"),
            std::string::npos);
}

TEST(ReferenceShape, ConstantsAndRange) {
  EXPECT_EQ(ints(eval1("Constant", {}, {{"value", Attribute::of_tensor(i64v({4, 5}))}})), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(ints(eval1("Constant", {}, {{"value_ints", Attribute::of_ints({1, 2})}})), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(eval1("Constant", {}, {{"value_int", Attribute::of_int(3)}}).shape, (Shape{}));
  EXPECT_FLOATS(eval1("Constant", {}, {{"value_float", Attribute::of_float(2.5f)}}), {2.5f});
  EXPECT_FLOATS(eval1("Constant", {}, {{"value_floats", Attribute::of_floats({1, 2})}}), {1, 2});
  HostTensor y = eval1("ConstantOfShape", {i64v({2, 3})});
  EXPECT_EQ(y.shape, (Shape{2, 3}));
  EXPECT_FLOATS(y, {0, 0, 0, 0, 0, 0});
  y = eval1("ConstantOfShape", {i64v({2})}, {{"value", Attribute::of_tensor(i64({1}, {7}))}});
  EXPECT_EQ(ints(y), (std::vector<int64_t>{7, 7}));
  EXPECT_EQ(eval1("ConstantOfShape", {i64v({})}).shape, (Shape{}));
  EXPECT_EQ(ints(eval1("Range", {i64s(0), i64s(10), i64s(3)})), (std::vector<int64_t>{0, 3, 6, 9}));
  EXPECT_EQ(ints(eval1("Range", {i64s(10), i64s(4), i64s(-2)})), (std::vector<int64_t>{10, 8, 6}));
  EXPECT_EQ(ints(eval1("Range", {i64s(3), i64s(1), i64s(1)})), (std::vector<int64_t>{}));
  EXPECT_FLOATS(eval1("Range", {f32({}, {1}), f32({}, {2}), f32({}, {0.25f})}), {1, 1.25f, 1.5f, 1.75f});
  HostTensor x = f32({2}, {1, 2});
  EXPECT_FLOATS(eval1("Identity", {x}), {1, 2});
  auto out = eval(make_node("Dropout", {}, 2), {x});
  EXPECT_FLOATS(out[0], {1, 2});
  EXPECT_EQ(bools(out[1]), (std::vector<int>{1, 1}));
}

// ---- normalization and softmax ----------------------------------------------

TEST(ReferenceNormalization, BatchLayerInstance) {
  HostTensor x = f32({1, 2, 1, 2}, {1, 2, 3, 4});
  HostTensor y = eval1("BatchNormalization", {x, f32({2}, {1, 2}), f32({2}, {0, 1}), f32({2}, {1, 3}), f32({2}, {4, 1})},
                       {{"epsilon", Attribute::of_float(0)}});
  EXPECT_FLOATS(y, {0, 0.5f, 1, 3});
  // LayerNormalization over the last axis, with the Mean and InvStdDev outputs.
  auto out = eval(make_node("LayerNormalization", {{"epsilon", Attribute::of_float(0)}}, 3),
                  {f32({2, 2}, {1, 3, 2, 4}), f32({2}, {1, 2}), f32({2}, {0, 1})});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_FLOATS(out[0], {-1, 3, -1, 3});
  EXPECT_EQ(out[1].shape, (Shape{2, 1}));
  EXPECT_FLOATS(out[1], {2, 3});
  EXPECT_FLOATS(out[2], {1, 1});
  EXPECT_FLOATS(eval1("InstanceNormalization", {x, f32({2}, {1, 1}), f32({2}, {0, 10})}, {{"epsilon", Attribute::of_float(0)}}),
                {-1, 1, 9, 11});
  EXPECT_NE(error_of([&] {
              eval1("BatchNormalization", {x, x, x, x, x}, {{"training_mode", Attribute::of_int(1)}});
            }).find("n_BatchNormalization (BatchNormalization): training_mode=1 is not supported"),
            std::string::npos);
}

TEST(ReferenceNormalization, SoftmaxAxes) {
  HostTensor x = f32({2, 2}, {0, std::log(3.0f), 1, 1});
  EXPECT_FLOATS(eval1("Softmax", {x}), {0.25f, 0.75f, 0.5f, 0.5f});
  HostTensor y = eval1("Softmax", {f32({2, 1}, {0, std::log(3.0f)})}, {{"axis", Attribute::of_int(0)}});
  EXPECT_FLOATS(y, {0.25f, 0.75f});
  EXPECT_FLOATS(eval1("LogSoftmax", {x}), {std::log(0.25f), std::log(0.75f), std::log(0.5f), std::log(0.5f)});
  // Large inputs stay finite.
  EXPECT_FLOATS(eval1("Softmax", {f32({2}, {1000, 1000})}), {0.5f, 0.5f});
}

// ---- resize -----------------------------------------------------------------

TEST(ReferenceResize, NearestAndLinear) {
  HostTensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  HostTensor scales = f32({4}, {1, 1, 2, 2});
  auto run = [&](std::map<std::string, Attribute> attrs, const HostTensor* sc, const HostTensor* sz) {
    return eval(make_node("Resize", std::move(attrs)), std::vector<const HostTensor*>{&x, nullptr, sc, sz}).at(0);
  };
  HostTensor y = run({{"mode", Attribute::of_string("nearest")}, {"coordinate_transformation_mode", Attribute::of_string("asymmetric")},
                      {"nearest_mode", Attribute::of_string("floor")}},
                     &scales, nullptr);
  EXPECT_EQ(y.shape, (Shape{1, 1, 4, 4}));
  EXPECT_FLOATS(y, {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});
  HostTensor sizes = i64v({1, 1, 1, 3});
  y = run({{"mode", Attribute::of_string("linear")}, {"coordinate_transformation_mode", Attribute::of_string("align_corners")}}, nullptr, &sizes);
  EXPECT_EQ(y.shape, (Shape{1, 1, 1, 3}));
  EXPECT_FLOATS(y, {1, 1.5f, 2});
  // half_pixel bilinear 2x: x_in = (x_out + 0.5) / 2 - 0.5, clamped at the edges.
  y = run({{"mode", Attribute::of_string("linear")}}, &scales, nullptr);
  EXPECT_FLOATS(y, {1, 1.25f, 1.75f, 2, 1.5f, 1.75f, 2.25f, 2.5f, 2.5f, 2.75f, 3.25f, 3.5f, 3, 3.25f, 3.75f, 4});
  EXPECT_NE(error_of([&] { run({{"coordinate_transformation_mode", Attribute::of_string("bogus")}}, &scales, nullptr); })
                .find("unsupported coordinate_transformation_mode 'bogus'"),
            std::string::npos);
}

// ---- errors -----------------------------------------------------------------

TEST(ReferenceErrors, NameTheNodeAndTheReason) {
  HostTensor x = f32({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}), w = f32({1, 1, 2, 2}, {1, 1, 1, 1});
  Node n = make_node("Conv", {{"auto_pad", Attribute::of_string("SAME_SIDEWAYS")}});
  n.name = "conv7";
  EXPECT_EQ(error_of([&] { eval(n, {x, w}); }),
            "conv7 (Conv): unsupported auto_pad 'SAME_SIDEWAYS' (supported: NOTSET, SAME_UPPER, SAME_LOWER, VALID)");
  EXPECT_EQ(error_of([] { eval1("Det", {}); }), "n_Det (Det): no reference implementation for operator Det");
  EXPECT_FALSE(reference::supports("Det"));
  EXPECT_TRUE(reference::supports("Conv"));
  EXPECT_EQ(error_of([] { eval1("Add", {f32({2}, {1, 2}), f32({3}, {1, 2, 3})}); }),
            "n_Add (Add): shapes 2, 3 cannot be broadcast together");
  EXPECT_EQ(error_of([] { eval1("Add", {f32({2}, {1, 2}), i64v({1, 2})}); }),
            "n_Add (Add): inputs have different data types (float32 and int64)");
  EXPECT_EQ(error_of([] { eval1("Relu", {}); }), "n_Relu (Relu): input 0 is required but missing");
  // Attributes an implementation does not know are refused, not ignored.
  EXPECT_EQ(error_of([&] { eval1("Conv", {x, w}, {{"groups", Attribute::of_int(2)}}); }),
            "n_Conv (Conv): unsupported attribute 'groups'");
  EXPECT_EQ(error_of([] { eval1("Add", {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({2}, {1, 2})}, {{"broadcast", Attribute::of_int(1)}, {"axis", Attribute::of_int(0)}}); }),
            "n_Add (Add): legacy broadcast with axis=0 (opset < 7) is not supported");
  EXPECT_FLOATS(eval1("Add", {f32({2, 2}, {1, 2, 3, 4}), f32({2}, {1, 2})}, {{"broadcast", Attribute::of_int(1)}, {"axis", Attribute::of_int(1)}}),
                {2, 4, 4, 6});
  EXPECT_EQ(error_of([&] { eval1("Gelu", {x}, {{"approximate", Attribute::of_string("erf")}}); }),
            "n_Gelu (Gelu): unsupported approximate 'erf' (supported: none, tanh)");
  EXPECT_EQ(error_of([] { eval1("Sqrt", {i64v({4})}); }),
            "n_Sqrt (Sqrt): unsupported data type int64 (expects float32 or float64)");
  // Constant weights without bytes (planning-only import) must not crash.
  HostTensor hollow;
  hollow.shape = {2};
  EXPECT_NE(error_of([&] { eval1("Relu", {hollow}); }).find("n_Relu (Relu): input 0 (2 float32) has no data"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              eval(make_node("Resize", {{"antialias", Attribute::of_int(1)}}),
                   std::vector<const HostTensor*>{&x, nullptr, &x, nullptr});
            }).find("antialias=1 is not supported"),
            std::string::npos);
  const auto ops = reference::supported_ops();
  for (const char* op : {"Conv", "ConvTranspose", "Gemm", "MatMul", "BatchNormalization", "Relu", "LeakyRelu", "Clip",
                         "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Erf", "Gelu", "Exp", "Log", "Neg", "Abs",
                         "Reciprocal", "Floor", "Ceil", "Softplus", "Elu", "Selu", "Mul", "Add", "Sub", "Div", "Pow",
                         "Sqrt", "Max", "Min", "Sum", "Mean", "Equal", "Greater", "Less", "Where", "Not", "MaxPool",
                         "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "ReduceMean", "ReduceSum", "ReduceMax",
                         "ReduceMin", "ReduceProd", "Concat", "Split", "Flatten", "Reshape", "Transpose", "Slice",
                         "Gather", "Shape", "Size", "Squeeze", "Unsqueeze", "Expand", "Tile", "Softmax", "LogSoftmax",
                         "Pad", "Identity", "Constant", "ConstantOfShape", "Range", "Cast", "LayerNormalization",
                         "InstanceNormalization", "Resize", "Dropout"})
    EXPECT_NE(std::find(ops.begin(), ops.end(), op), ops.end()) << op;
}

// Every op, fed inputs and attributes that make no sense for it, returns or
// throws texplan::Error: no crash, no other exception.
TEST(ReferenceErrors, EveryOpFailsCleanlyOnNonsense) {
  std::mt19937 rng(11);
  const std::vector<std::vector<HostTensor>> input_sets = {
      {},
      {random_tensor({2, 3}, rng)},
      {random_tensor({2, 3}, rng), random_tensor({3}, rng)},
      {random_tensor({1, 1, 4, 4}, rng), random_tensor({1, 1, 2, 2}, rng)},
      {random_tensor({1, 2, 3, 3}, rng), random_tensor({2, 2, 1, 1}, rng), random_tensor({2}, rng), random_tensor({2}, rng),
       random_tensor({2}, rng)},
      {i64v({1, 2, 3})},
      {i64v({2, 1}), i64v({2, 1}), i64v({2, 1})},
      {i64s(2), i64s(-1), i64s(3)},
      {boolean({2}, {1, 0}), boolean({2}, {0, 0})},
      {random_tensor({2, 3}, rng), i64v({2, -1})},
      {HostTensor(DataType::Float32, {0, 3}), i64v({0})},
      {f32({}, {1.5f})},
      {HostTensor(DataType::Float16, {2, 2}), HostTensor(DataType::Float16, {2, 2})},
  };
  const std::vector<std::map<std::string, Attribute>> attr_sets = {
      {},
      {{"axis", Attribute::of_int(7)}},
      {{"axes", Attribute::of_ints({-9})}},
      {{"perm", Attribute::of_ints({0, 0})}},
      {{"kernel_shape", Attribute::of_ints({9, 9})}},
      {{"kernel_shape", Attribute::of_ints({1})}, {"strides", Attribute::of_ints({0})}},
      {{"pads", Attribute::of_ints({-1, -1, -1, -1})}, {"kernel_shape", Attribute::of_ints({2, 2})}},
      {{"to", Attribute::of_int(100)}, {"mode", Attribute::of_string("x")}},
      {{"group", Attribute::of_int(0)}},
      {{"split", Attribute::of_ints({5, -2})}},
  };
  int ran = 0, threw = 0;
  for (const std::string& op : reference::supported_ops())
    for (const auto& in : input_sets)
      for (const auto& attrs : attr_sets)
        for (int outputs : {1, 2}) {
          Node n = make_node(op, attrs, outputs);
          try {
            ++ran;
            eval(n, in);
          } catch (const Error&) {
            ++threw;
          } catch (const std::exception& e) {
            ADD_FAILURE() << op << " threw a non-texplan exception: " << e.what();
          }
        }
  std::printf("%d nonsense evaluations, %d refused with texplan::Error\n", ran, threw);
}

// ---- ONNX backend node tests ------------------------------------------------

const char* kOnnxNodeTests = "/usr/share/libonnx-testdata/data/node";

// Raised by the loader for files texplan cannot represent (string, uint16...).
struct NotLoadable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

DataType onnx_dtype(int t) {
  switch (t) {
    case onnx::TensorProto::FLOAT: return DataType::Float32;
    case onnx::TensorProto::DOUBLE: return DataType::Float64;
    case onnx::TensorProto::FLOAT16: return DataType::Float16;
    case onnx::TensorProto::INT64: return DataType::Int64;
    case onnx::TensorProto::INT32: return DataType::Int32;
    case onnx::TensorProto::INT8: return DataType::Int8;
    case onnx::TensorProto::UINT8: return DataType::UInt8;
    case onnx::TensorProto::BOOL: return DataType::Bool;
  }
  throw NotLoadable("tensor type " + onnx::TensorProto::DataType_Name(onnx::TensorProto::DataType(t)));
}

// `dir` is where external data files (NAME.onnx.data) live.
HostTensor tensor_from_proto(const onnx::TensorProto& p, const fs::path& dir = {}) {
  Shape shape(p.dims().begin(), p.dims().end());
  HostTensor t(onnx_dtype(p.data_type()), shape);
  const size_t n = size_t(t.count()), es = element_size(t.dtype);
  if (p.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string location;
    size_t offset = 0;
    for (const auto& kv : p.external_data()) {
      if (kv.key() == "location") location = kv.value();
      if (kv.key() == "offset") offset = std::stoull(kv.value());
    }
    std::ifstream f(dir / location, std::ios::binary);
    f.seekg(std::streamoff(offset));
    if (!f.read(reinterpret_cast<char*>(t.bytes.data()), std::streamsize(n * es)))
      throw NotLoadable("external data of " + p.name() + " in " + (dir / location).string());
    return t;
  }
  if (p.has_raw_data()) {
    if (p.raw_data().size() != n * es) throw std::runtime_error("raw_data size mismatch");
    if (n > 0) std::memcpy(t.bytes.data(), p.raw_data().data(), n * es);
    return t;
  }
  const int have = t.dtype == DataType::Float32   ? p.float_data_size()
                   : t.dtype == DataType::Float64 ? p.double_data_size()
                   : t.dtype == DataType::Int64   ? p.int64_data_size()
                                                  : p.int32_data_size();
  if (size_t(have) != n)
    throw std::runtime_error("tensor " + p.name() + " holds " + std::to_string(have) + " values for shape " +
                             to_string(shape));
  for (size_t i = 0; i < n; ++i) switch (t.dtype) {
      case DataType::Float32: t.data<float>()[i] = p.float_data(int(i)); break;
      case DataType::Float64: t.data<double>()[i] = p.double_data(int(i)); break;
      case DataType::Int64: t.data<int64_t>()[i] = p.int64_data(int(i)); break;
      case DataType::Int32: t.data<int32_t>()[i] = p.int32_data(int(i)); break;
      case DataType::Float16: t.data<uint16_t>()[i] = uint16_t(p.int32_data(int(i))); break;
      case DataType::Int8: t.data<int8_t>()[i] = int8_t(p.int32_data(int(i))); break;
      case DataType::UInt8:
      case DataType::Bool: t.data<uint8_t>()[i] = uint8_t(p.int32_data(int(i))); break;
    }
  return t;
}

HostTensor load_pb(const fs::path& path) {
  onnx::TensorProto p;
  std::ifstream f(path, std::ios::binary);
  if (!p.ParseFromIstream(&f)) throw NotLoadable("not a TensorProto: " + path.filename().string());
  return tensor_from_proto(p);
}

Node node_from_proto(const onnx::NodeProto& p, size_t index) {
  Node n;
  n.op_type = p.op_type();
  n.name = p.name().empty() ? p.op_type() + "_" + std::to_string(index) : p.name();
  if (!p.domain().empty() && p.domain() != "ai.onnx") throw NotLoadable("domain " + p.domain());
  for (const auto& a : p.attribute()) {
    Attribute v;
    if (!a.ref_attr_name().empty()) throw NotLoadable("attribute reference");
    switch (a.type()) {
      case onnx::AttributeProto::INT: v.kind = Attribute::Kind::Int; v.i = a.i(); break;
      case onnx::AttributeProto::FLOAT: v.kind = Attribute::Kind::Float; v.f = a.f(); break;
      case onnx::AttributeProto::STRING: v.kind = Attribute::Kind::String; v.s = a.s(); break;
      case onnx::AttributeProto::INTS:
        v.kind = Attribute::Kind::Ints;
        v.ints.assign(a.ints().begin(), a.ints().end());
        break;
      case onnx::AttributeProto::FLOATS:
        v.kind = Attribute::Kind::Floats;
        v.floats.assign(a.floats().begin(), a.floats().end());
        break;
      case onnx::AttributeProto::STRINGS:
        v.kind = Attribute::Kind::Strings;
        v.strings.assign(a.strings().begin(), a.strings().end());
        break;
      case onnx::AttributeProto::TENSOR:
        v.kind = Attribute::Kind::Tensor;
        v.tensor = std::make_shared<HostTensor>(tensor_from_proto(a.t()));
        break;
      default: throw NotLoadable("attribute type " + onnx::AttributeProto::AttributeType_Name(a.type()));
    }
    n.attrs[a.name()] = std::move(v);
  }
  return n;
}

// Compares with rtol 1e-4, atol 1e-5 (exact for integers and bool); returns
// "" or what differs.
std::string compare(const HostTensor& got, const HostTensor& want, double rtol = 1e-4) {
  if (got.dtype != want.dtype)
    return std::string("dtype ") + to_string(got.dtype) + " instead of " + to_string(want.dtype);
  if (got.shape != want.shape) return "shape " + to_string(got.shape) + " instead of " + to_string(want.shape);
  for (int64_t i = 0; i < want.count(); ++i) {
    double g, w;
    switch (want.dtype) {
      case DataType::Float32: g = got.data<float>()[i], w = want.data<float>()[i]; break;
      case DataType::Float64: g = got.data<double>()[i], w = want.data<double>()[i]; break;
      case DataType::Float16:
        g = reference::half_to_float(got.data<uint16_t>()[i]), w = reference::half_to_float(want.data<uint16_t>()[i]);
        break;
      default: {
        const auto gi = got.as_int64(), wi = want.as_int64();
        if (gi[i] != wi[i]) return "value " + std::to_string(gi[i]) + " instead of " + std::to_string(wi[i]) + " at " + std::to_string(i);
        continue;
      }
    }
    if (std::isnan(w) && std::isnan(g)) continue;
    if (g == w) continue;  // also equal infinities
    if (!(std::fabs(g - w) <= 1e-5 + rtol * std::fabs(w)))
      return "value " + std::to_string(g) + " instead of " + std::to_string(w) + " at " + std::to_string(i);
  }
  return "";
}

// Tests whose stored outputs are themselves off by more than 1e-4: the
// *window_expanded graphs' expected values were made by a float32 reference
// (e.g. hann(10)[8] is stored as 0.345562; exactly it is 0.5 - 0.5 cos(1.6 pi)
// = 0.345492, which is what the reference computes). They are held to ONNX's
// own backend-test tolerance, rtol 1e-3.
double rtol_for(const std::string& test) {
  static const std::set<std::string> loose = {
      "test_blackmanwindow_expanded", "test_blackmanwindow_symmetric_expanded", "test_hammingwindow_expanded",
      "test_hammingwindow_symmetric_expanded", "test_hannwindow_expanded", "test_hannwindow_symmetric_expanded"};
  return loose.count(test) ? 1e-3 : 1e-4;
}

// Evaluates the graph's nodes in file order (ONNX requires a topological
// one) with reference::evaluate; `values` holds inputs and initializers and
// receives every node output.
void run_graph(const onnx::GraphProto& g, const std::vector<Node>& nodes, std::map<std::string, HostTensor>& values) {
  for (size_t k = 0; k < nodes.size(); ++k) {
    const auto& np = g.node(int(k));
    Node n = nodes[k];
    std::vector<const HostTensor*> in;
    for (const auto& name : np.input()) {
      if (name.empty()) {
        in.push_back(nullptr);
        continue;
      }
      auto it = values.find(name);
      if (it == values.end()) throw NotLoadable("no value for input '" + name + "'");
      in.push_back(&it->second);
    }
    while (!in.empty() && !in.back()) in.pop_back();
    for (int o = 0; o < np.output_size(); ++o) n.outputs.push_back(np.output(o).empty() ? -1 : o);
    std::vector<HostTensor> out = reference::evaluate(n, in);
    if (out.size() != size_t(np.output_size()))
      throw std::runtime_error(n.name + ": " + std::to_string(out.size()) + " outputs instead of " +
                               std::to_string(np.output_size()));
    for (int o = 0; o < np.output_size(); ++o)
      if (!np.output(o).empty()) values[np.output(o)] = std::move(out[o]);
  }
}

onnx::ModelProto load_model(const fs::path& file) {
  onnx::ModelProto model;
  std::ifstream f(file, std::ios::binary);
  if (!model.ParseFromIstream(&f)) throw NotLoadable(file.filename().string() + " does not parse");
  return model;
}

std::vector<Node> nodes_of(const onnx::GraphProto& g) {
  std::vector<Node> nodes;
  for (int i = 0; i < g.node_size(); ++i) nodes.push_back(node_from_proto(g.node(i), size_t(i)));
  return nodes;
}

enum class Outcome { Passed, Failed, Unsupported, NotLoadable, OpMissing };

// Runs one backend test folder: every node in order, every data set.
Outcome run_onnx_test(const fs::path& dir, std::string& detail) {
  try {
    const onnx::ModelProto model = load_model(dir / "model.onnx");
    const auto& g = model.graph();
    for (const auto& n : g.node())
      if (!reference::supports(n.op_type())) {
        detail = n.op_type();
        return Outcome::OpMissing;
      }
    const std::vector<Node> nodes = nodes_of(g);
    std::map<std::string, HostTensor> init;
    for (const auto& t : g.initializer()) init[t.name()] = tensor_from_proto(t, dir);
    int sets = 0;
    for (const auto& set : fs::directory_iterator(dir)) {
      if (!set.is_directory() || set.path().filename().string().rfind("test_data_set_", 0) != 0) continue;
      ++sets;
      std::map<std::string, HostTensor> values = init;
      for (int i = 0; i < g.input_size(); ++i) {
        if (!g.input(i).type().has_tensor_type()) throw NotLoadable("a sequence or optional input");
        const fs::path f = set.path() / ("input_" + std::to_string(i) + ".pb");
        if (fs::exists(f)) values[g.input(i).name()] = load_pb(f);
      }
      run_graph(g, nodes, values);
      for (int i = 0; i < g.output_size(); ++i) {
        const fs::path f = set.path() / ("output_" + std::to_string(i) + ".pb");
        if (!fs::exists(f)) continue;
        HostTensor want = load_pb(f);
        auto it = values.find(g.output(i).name());
        if (it == values.end()) {
          detail = "output " + g.output(i).name() + " was not produced";
          return Outcome::Failed;
        }
        std::string diff = compare(it->second, want, rtol_for(dir.filename().string()));
        if (!diff.empty()) {
          detail = set.path().filename().string() + " output " + std::to_string(i) + ": " + diff;
          return Outcome::Failed;
        }
      }
    }
    if (sets == 0) {
      detail = "no test data sets";
      return Outcome::NotLoadable;
    }
  } catch (const NotLoadable& e) {
    detail = e.what();
    return Outcome::NotLoadable;
  } catch (const Error& e) {
    detail = e.what();
    const bool unsupported = detail.find("unsupported") != std::string::npos ||
                             detail.find("not supported") != std::string::npos;
    return unsupported ? Outcome::Unsupported : Outcome::Failed;
  } catch (const std::exception& e) {
    detail = std::string("exception (not texplan::Error): ") + e.what();
    return Outcome::Failed;
  }
  return Outcome::Passed;
}

TEST(ReferenceOnnxConformance, BackendNodeTests) {
  if (!fs::exists(kOnnxNodeTests)) GTEST_SKIP() << "libonnx-testdata is not installed";
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(kOnnxNodeTests))
    if (e.is_directory()) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  std::map<Outcome, std::vector<std::string>> by;
  std::map<std::string, int> missing_ops;
  for (const auto& d : dirs) {
    std::string detail;
    Outcome o = run_onnx_test(d, detail);
    if (o == Outcome::OpMissing) {
      ++missing_ops[detail];
      continue;
    }
    by[o].push_back(d.filename().string() + (detail.empty() ? "" : ": " + detail));
  }
  auto print = [&](const char* title, Outcome o) {
    std::printf("%s (%zu)\n", title, by[o].size());
    for (const auto& s : by[o]) std::printf("  %s\n", s.c_str());
  };
  print("FAILED", Outcome::Failed);
  print("UNSUPPORTED (evaluate names an unsupported feature)", Outcome::Unsupported);
  print("NOT LOADABLE (types or attributes texplan's HostTensor/Node cannot hold)", Outcome::NotLoadable);
  int missing = 0;
  std::string missing_list;
  for (const auto& [op, n] : missing_ops) {
    missing += n;
    missing_list += " " + op;
  }
  std::printf("Ops of the remaining tests, without a reference implementation:%s\n", missing_list.c_str());
  std::printf("ONNX node tests: %zu passed, %zu failed, %zu unsupported, %zu not loadable, %d use ops without a "
              "reference (%zu ops), of %zu\n",
              by[Outcome::Passed].size(), by[Outcome::Failed].size(), by[Outcome::Unsupported].size(),
              by[Outcome::NotLoadable].size(), missing, missing_ops.size(), dirs.size());
  EXPECT_EQ(by[Outcome::Failed].size(), 0u);
  EXPECT_GT(by[Outcome::Passed].size(), 400u);
}

// ---- whole models -----------------------------------------------------------

// The model zoo's networks with weights, run node by node on the reference
// and compared with what PyTorch computed. Exercises the exporters' real
// patterns (Shape/Gather/Concat chains, Identity on shared weights, int64).
TEST(ReferenceModels, ZooModelsMatchPyTorch) {
  const fs::path zoo = TEXPLAN_MODELS_DIR;
  int ran = 0;
  for (const char* name :
       {"squeezenet1_1", "mobilenet_v2", "shufflenet_v2_x1_0", "efficientnet_b0", "unet_small", "bert_mini",
        "resnet18", "resnet50", "googlenet", "densenet121", "mnasnet1_0"}) {
    const fs::path dir = zoo / name, file = dir / (std::string(name) + ".onnx");
    if (!fs::exists(file) || !fs::exists(dir / (std::string(name) + ".onnx.data"))) {
      std::printf("%-20s skipped: no weights here\n", name);
      continue;
    }
    SCOPED_TRACE(name);
    const auto t0 = std::chrono::steady_clock::now();
    const onnx::ModelProto model = load_model(file);
    const auto& g = model.graph();
    std::map<std::string, HostTensor> values;
    for (const auto& t : g.initializer()) values[t.name()] = tensor_from_proto(t, dir);
    values[g.input(0).name()] = load_pb(dir / "test_data_set_0" / "input_0.pb");
    ASSERT_NO_THROW(run_graph(g, nodes_of(g), values));
    const HostTensor want = load_pb(dir / "test_data_set_0" / "output_0.pb");
    const HostTensor& got = values.at(g.output(0).name());
    ASSERT_EQ(got.shape, want.shape);
    double max_diff = 0, max_ref = 0;
    for (int64_t i = 0; i < want.count(); ++i) {
      max_diff = std::max(max_diff, double(std::fabs(got.data<float>()[i] - want.data<float>()[i])));
      max_ref = std::max(max_ref, double(std::fabs(want.data<float>()[i])));
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%-20s %4d nodes  %.2f s  max |diff| %.2e  (max |output| %.2e)\n", name, g.node_size(), s, max_diff,
                max_ref);
    EXPECT_LE(max_diff, 1e-4 * max_ref + 1e-5);
    ++ran;
  }
  if (ran == 0) GTEST_SKIP() << "no model weights in " << zoo;
}

}  // namespace
