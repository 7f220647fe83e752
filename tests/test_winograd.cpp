// Winograd F(2x2, 3x3) convolutions (src/kernels/conv_winograd.cl, named
// by KernelChoice::conv "winograd...", on CPU devices too) against the CPU
// reference: ragged tile and channel edges, pads 0..2, bias or none, fused
// epilogues with a residual, split over the input channels (also in place
// over the residual), and the 2x2 max pool of FusedConvMaxPool.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "lower/mma.h"
#include "lower/ops.h"
#include "one_node.h"
#include "reference/reference_ops.h"
#include "runtime/session.h"
#include "test_util.h"

using namespace texplan;
using test::random_tensor;
using test::rel_error;
using test::test_device;

namespace {

// One node lowered with the kernels `choice` names: inputs (an empty
// tensor: omitted), the output over input `over` (-1: its own storage),
// tensors in one buffer from offset `first`; the result of its launches, and
// their kernel names in `kernels`.
HostTensor run_node(const lower::KernelChoice& choice, const std::string& op, const std::vector<HostTensor>& inputs,
                    std::map<std::string, Attribute> attrs, const Shape& out_shape, int over,
                    std::vector<std::string>& kernels, bool tf32 = false, int64_t first = 3) {
  auto dev = test_device();
  Graph g;
  g.model_name = "winograd_test";
  g.opset = 17;
  Node n;
  n.name = op + "_0";
  n.op_type = op;
  n.attrs = std::move(attrs);
  std::vector<int64_t> offset;
  int64_t next = first;  // X's offset: odd unless a test asks for an even one
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].shape.empty()) {
      n.inputs.push_back(-1);
      continue;
    }
    Tensor t;
    t.name = "in" + std::to_string(i);
    t.shape = inputs[i].shape;
    if (i == 1) t.is_constant = t.has_data = true, t.value = inputs[i];  // the weights: Winograd packs them
    n.inputs.push_back(g.add_tensor(t));
    offset.push_back(next);
    next += inputs[i].count() + 5;
  }
  Tensor y;
  y.name = "out";
  y.shape = out_shape;
  n.outputs.push_back(g.add_tensor(y));
  offset.push_back(over >= 0 ? offset.at(size_t(n.inputs.at(size_t(over)))) : next);
  next += element_count(out_shape) + 5;
  g.nodes.push_back(n);
  cl_int s = CL_SUCCESS;
  cl_mem pool = clCreateBuffer(dev->context(), CL_MEM_READ_WRITE, size_t(next) * 4, nullptr, &s);
  EXPECT_EQ(s, CL_SUCCESS);
  std::vector<float> host(size_t(next), NAN);
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].shape.empty())
      std::copy(inputs[i].data<float>(), inputs[i].data<float>() + inputs[i].count(),
                host.begin() + offset[size_t(n.inputs[i])]);
  clEnqueueWriteBuffer(dev->queue(), pool, CL_TRUE, 0, host.size() * 4, host.data(), 0, nullptr, nullptr);
  {
    lower::NodeBuilder b(*dev, g, g.nodes[0], [&](int t) { return lower::Location{pool, offset.at(size_t(t)) * 4}; });
    b.kernel_choice = choice;
    b.tf32 = tf32;
    bool lowered = op == "FusedConvMaxPool" ? lower::lower_fused_conv_maxpool(b) : lower::lower_node(b);
    EXPECT_TRUE(lowered);
    for (const lower::Launch& l : b.launches) {
      kernels.push_back(l.name);
      s = clEnqueueNDRangeKernel(dev->queue(), l.kernel, l.dims, nullptr, l.global, l.has_local ? l.local : nullptr, 0,
                                 nullptr, nullptr);
      EXPECT_EQ(s, CL_SUCCESS) << l.name;
    }
  }
  HostTensor out(DataType::Float32, out_shape);
  clEnqueueReadBuffer(dev->queue(), pool, CL_TRUE, size_t(offset.back()) * 4, out.bytes.size(), out.bytes.data(), 0,
                      nullptr, nullptr);
  clReleaseMemObject(pool);
  return out;
}

// Conv X [x] W [oc, x[1], 3, 3] with `pad`, bias or not; `prog`: FusedConv
// with that program and `extras` inputs of Y's shape; `pool`: FusedConvMaxPool
// 2x2/2 (ceil_mode `ceil`); `tf32` with the mma `emulated`. Checks the named
// `variant` against the reference and that it ran conv2d_winograd (and
// split-K's passes for "/s" variants).
void expect_winograd(const std::string& variant, Shape x, int64_t oc, int64_t pad, bool bias,
                     std::vector<std::string> prog = {}, int extras = 0, bool pool = false, bool ceil = false,
                     bool in_place = false, bool tf32 = false, bool emulated = false) {
  SCOPED_TRACE(variant + " x " + std::to_string(x[1]) + "x" + std::to_string(x[2]) + "x" + std::to_string(x[3]) +
               " oc " + std::to_string(oc) + " pad " + std::to_string(pad));
  std::vector<HostTensor> in = {random_tensor(x, -1, 1, 1), random_tensor({oc, x[1], 3, 3}, -1, 1, 2),
                                bias ? random_tensor({oc}, -1, 1, 3) : HostTensor{}};
  std::map<std::string, Attribute> conv = {{"pads", Attribute::of_ints({pad, pad, pad, pad})},
                                           {"kernel_shape", Attribute::of_ints({3, 3})}};
  Node ref;
  ref.name = "ref";
  ref.op_type = "Conv";
  ref.attrs = conv;
  ref.inputs = {0, 1, bias ? 2 : -1};
  ref.outputs = {3};
  HostTensor expected = reference::evaluate(ref, {&in[0], &in[1], bias ? &in[2] : nullptr})[0];
  for (int k = 0; k < extras; ++k) in.push_back(random_tensor(expected.shape, -1, 1, 10 + uint32_t(k)));
  // The epilogue on the host: Add of the extra input, Relu (the programs used here).
  std::map<std::string, Attribute> attrs = conv;
  std::string op = "Conv";
  if (!prog.empty()) {
    op = "FusedConv";
    attrs["program"] = Attribute::of_strings(prog);
    float* y = expected.data<float>();
    for (int64_t i = 0; i < expected.count(); ++i) {
      float v = y[i] + (extras ? in[3].data<float>()[i] : 0.0f);
      y[i] = prog.back().rfind("Relu", 0) == 0 ? std::max(v, 0.0f) : v;
    }
  }
  if (pool) {
    op = "FusedConvMaxPool";
    attrs["pool_kernel_shape"] = Attribute::of_ints({2, 2});
    attrs["pool_strides"] = Attribute::of_ints({2, 2});
    if (ceil) attrs["pool_ceil_mode"] = Attribute::of_int(1);
    Node mp;
    mp.name = "pool";
    mp.op_type = "MaxPool";
    mp.attrs = {{"kernel_shape", Attribute::of_ints({2, 2})}, {"strides", Attribute::of_ints({2, 2})}};
    if (ceil) mp.attrs["ceil_mode"] = Attribute::of_int(1);
    mp.inputs = {0};
    mp.outputs = {1};
    expected = reference::evaluate(mp, {&expected})[0];
  }
  std::vector<std::string> kernels;
  HostTensor out;
  // Winograd reads X's rows as float2s (WG_PAIRS) only from an even
  // offset: odd for the forms without, else even.
  const int64_t first = variant.find(":nopairs") != std::string::npos ? 3 : 4;
  out = run_node({.conv = variant, .tf32_emulation = emulated, .unoptimized_programs = emulated}, op, in, attrs, expected.shape, in_place ? 3 : -1,
                 kernels, tf32, first);
  const double e = rel_error(out, expected);
  if (tf32 && (emulated || runtime::tf32_supported(*test_device()))) {  // the products on tensor cores: tf32's rounding
    EXPECT_LE(e, 5e-3);
    EXPECT_GT(e, 1e-6) << "no tf32 rounding, so not the tensor-core build";
  } else {
    EXPECT_LE(e, 1e-5);
  }
  EXPECT_NE(std::find(kernels.begin(), kernels.end(), "conv2d_winograd"), kernels.end());
  // Split-K zeroes Y first, except over the residual, and applies the rest
  // of the program after, where there is one.
  const bool nothing_around = in_place && prog.size() == 1;
  if (variant.find("/s") != std::string::npos && variant != "winograd/s1" && !pool && !nothing_around) {
    EXPECT_GE(kernels.size(), 2u) << "split-K's passes";
  }
}

}  // namespace

TEST(Winograd, ConvMatchesTheReference) {
  // Ragged edges: tiles (odd sizes), 32-channel blocks, 8-channel chunks.
  expect_winograd("winograd", {1, 5, 9, 11}, 7, 1, true);
  expect_winograd("winograd", {1, 13, 16, 16}, 40, 1, false);
  expect_winograd("winograd", {2, 9, 7, 6}, 33, 0, true);  // no pad, batch 2
  expect_winograd("winograd", {1, 3, 5, 8}, 4, 2, true);   // pad 2: output larger than the input
  expect_winograd("winograd", {1, 64, 14, 14}, 64, 1, true);
  // Output channels past a block and channels past a chunk (the packed
  // weights' zero fill), split over the channels, with and without bias.
  expect_winograd("winograd", {1, 13, 16, 16}, 70, 1, true);
  expect_winograd("winograd/s2", {1, 40, 9, 9}, 36, 1, false, {"Relu x0"});
  expect_winograd("winograd/s3", {1, 21, 9, 9}, 36, 1, true, {"Add x0 x1", "Relu t0"}, 1);
  expect_winograd("winograd", {1, 6, 10, 12}, 35, 1, true, {"Relu x0"}, 0, true);
  EXPECT_THROW(lower::check_conv_variant("winograd:x"), Error);
}

// The weights packed untransformed (":raw", a measurement's form): the
// kernel transforms them per chunk, with the same results.
TEST(Winograd, RawPackedWeights) {
  expect_winograd("winograd:raw", {1, 5, 9, 11}, 7, 1, true);
  expect_winograd("winograd:raw", {1, 13, 16, 16}, 70, 1, true);
  expect_winograd("winograd:raw/s3", {1, 21, 9, 9}, 36, 1, true, {"Add x0 x1", "Relu t0"}, 1);
  expect_winograd("winograd:raw", {1, 6, 10, 12}, 35, 1, true, {"Relu x0"}, 0, true);
  // Two chunks in flight in the fp32 build (":pf2", a measurement's form).
  expect_winograd("winograd:pf2", {1, 13, 16, 16}, 70, 1, true);
  expect_winograd("winograd:pf2/s2", {1, 40, 9, 9}, 36, 1, false, {"Relu x0"});
}

// Measured forms of the fp32 build: 16 tiles per 128-item work-group
// (":t16"), 4-channel chunks in two buffers with two items per input patch
// (":db"), both, and 16 tiles with 8-channel chunks in two buffers
// (":t16:db8"), and rows read a float at a time from an odd offset
// (":nopairs", as where W or X's offset is odd); ragged tiles, channels and
// output-channel blocks, split, pooled, a residual in place.
TEST(Winograd, TileAndBufferForms) {
  for (const std::string v :
       {"winograd:t16", "winograd:db", "winograd:t16:db", "winograd:t16:db8", "winograd:nopairs", "winograd:t16:db:nopairs"}) {
    expect_winograd(v, {1, 5, 9, 11}, 7, 1, true);
    expect_winograd(v, {1, 13, 16, 16}, 70, 1, true);
    expect_winograd(v, {2, 9, 7, 6}, 33, 0, true);
    expect_winograd(v, {1, 3, 5, 8}, 4, 2, true);
    expect_winograd(v, {1, 12, 10, 10}, 12, 1, true, {"Add x0 x1", "Relu t0"}, 1);
    expect_winograd(v + "/s3", {1, 21, 9, 9}, 36, 1, true, {"Add x0 x1", "Relu t0"}, 1);
    expect_winograd(v + "/s4", {1, 32, 7, 7}, 32, 1, true, {"Add x0 x1", "Relu t0"}, 1, false, false, true);
    expect_winograd(v, {1, 6, 10, 12}, 35, 1, true, {"Relu x0"}, 0, true);
    expect_winograd(v, {1, 6, 9, 11}, 8, 1, false, {"Relu x0"}, 0, true, true);
  }
  EXPECT_THROW(lower::check_conv_variant("winograd:raw:db"), Error);
  EXPECT_THROW(lower::check_conv_variant("winograd:db8"), Error);
}

// The form by shape on the H100's 132 compute units: the 16-tile form where
// whole groups leave the last wave half empty and halves fill theirs
// (VGG's 56x56 convs: 200 groups of 32 tiles, 392 of 16), never in tf32;
// whole where waves fill (224x224, 112x112) or halves would not help
// (28x28: 112 groups); split where under half a wave (14x14: 32 groups).
TEST(Winograd, FormByShape) {
  EXPECT_EQ(lower::winograd_variant_by_shape(256, 256, 56, 56, 1, 132, true, true), "winograd:t16:db");
  EXPECT_EQ(lower::winograd_variant_by_shape(128, 256, 56, 56, 1, 132, true, true), "winograd:t16:db");
  EXPECT_EQ(lower::winograd_variant_by_shape(256, 256, 56, 56, 1, 132, true, false), "winograd");
  EXPECT_EQ(lower::winograd_variant_by_shape(64, 64, 224, 224, 1, 132, true, true), "winograd");
  EXPECT_EQ(lower::winograd_variant_by_shape(128, 128, 112, 112, 1, 132, true, true), "winograd");
  EXPECT_EQ(lower::winograd_variant_by_shape(512, 512, 28, 28, 1, 132, true, true), "winograd");
  EXPECT_EQ(lower::winograd_variant_by_shape(512, 512, 14, 14, 1, 132, true, true), "winograd/s4");
  // Unsplittable under a wave: halves run more groups at once (0.078 ms
  // against 0.084).
  EXPECT_EQ(lower::winograd_variant_by_shape(512, 512, 14, 14, 1, 132, false, true), "winograd:t16:db");
  // Unsplit, as the 2x2-pooled convs take it: VGG's pooled 256->256 at
  // 56x56 in 16 tiles, its others whole.
  EXPECT_EQ(lower::winograd_variant_by_shape(256, 256, 56, 56, 1, 132, false, true), "winograd:t16:db");
  EXPECT_EQ(lower::winograd_variant_by_shape(64, 64, 224, 224, 1, 132, false, true), "winograd");
  EXPECT_EQ(lower::winograd_variant_by_shape(128, 128, 112, 112, 1, 132, false, true), "winograd");
  EXPECT_EQ(lower::winograd_variant_by_shape(512, 512, 28, 28, 1, 132, false, true), "winograd");
}

// In a session the packed weights replace the originals, which are never
// uploaded: G g G^T's 16 values per filter, output channels rounded up to
// 32 and input channels to 8, then the bias as it is.
TEST(Winograd, PackedWeightsReplaceTheOriginals) {
  test::NodeCase c{"Conv", {{1, 13, 10, 10}, {40, 13, 3, 3}, {40}}, {{"pads", Attribute::of_ints({1, 1, 1, 1})}}};
  c.fed = {true, false, false};
  const test::OneNode n = test::one_node(c, "winograd_weights", 17, 5);
  for (auto [variant, taps] : {std::pair{"winograd", 16}, std::pair{"winograd:raw", 9}}) {
    const test::OneNodeRun r = test::run_one_node(n, test_device(), {.kernel_choice = {.conv = variant}});
    EXPECT_LE(rel_error(r.got, n.want), 1e-5) << variant;
    EXPECT_EQ(r.weight_bytes, (2 * 16 * taps * 32 + 40) * 4) << variant;
  }
  EXPECT_EQ(test::run_one_node(n, test_device(), {.kernel_choice = {.conv = "32x32"}}).weight_bytes, (40 * 13 * 9 + 40) * 4);
}

TEST(Winograd, FusedEpilogueAndResidual) {
  expect_winograd("winograd", {1, 12, 10, 10}, 20, 1, true, {"Relu x0"});
  expect_winograd("winograd", {1, 12, 10, 10}, 12, 1, true, {"Add x0 x1", "Relu t0"}, 1);
}

TEST(Winograd, SplitOverInputChannels) {
  expect_winograd("winograd/s3", {1, 40, 9, 9}, 36, 1, true);
  expect_winograd("winograd/s2", {1, 16, 12, 12}, 16, 1, false, {"Relu x0"});
  expect_winograd("winograd/split", {1, 64, 6, 6}, 32, 1, true, {"Add x0 x1", "Relu t0"}, 1);
  // In place over the residual: the slices add onto it, no zeroing.
  expect_winograd("winograd/s4", {1, 32, 7, 7}, 32, 1, true, {"Add x0 x1", "Relu t0"}, 1, false, false, true);
  expect_winograd("winograd/s2", {1, 16, 12, 12}, 16, 1, false, {"Add x0 x1"}, 1, false, false, true);  // Add alone
  // Several blocks per slice along the tiles, the output channels and the
  // batch; an uneven last slice.
  expect_winograd("winograd/s3", {2, 44, 14, 13}, 70, 1, true, {"Relu x0"});
  expect_winograd("winograd:t16:db/s4", {2, 30, 12, 16}, 40, 0, false, {"Relu x0"});
}

TEST(Winograd, MaxPoolOfTheTiles) {
  expect_winograd("winograd", {1, 6, 10, 12}, 35, 1, true, {"Relu x0"}, 0, true);
  expect_winograd("winograd", {1, 6, 9, 11}, 8, 1, false, {"Relu x0"}, 0, true, true);  // ceil_mode: ragged windows
  expect_winograd("winograd", {1, 6, 9, 11}, 8, 1, true, {}, 0, true);                    // floor: last row dropped
}

// --precision tf32: Winograd multiplies its transforms on the tensor cores
// (WG_MMA), the mma emulated here on CPU devices: tf32's rounding in the
// result, within its error, in every form (whole with ragged channel and
// tile edges, split, in place over a residual, 2x2-pooled). Without tensor
// cores (nothing emulated) it stays exact fp32.
TEST(Winograd, Tf32ProductsOnTensorCores) {
  expect_winograd("winograd", {1, 16, 12, 12}, 64, 1, true, {"Relu x0"}, 0, false, false, false, true);
  expect_winograd("winograd", {1, 16, 12, 12}, 64, 1, true, {"Relu x0"}, 0, false, false, false, true, true);
  expect_winograd("winograd", {1, 13, 9, 11}, 40, 1, false, {}, 0, false, false, false, true, true);
  // One chunk only: the second chunk in flight is never loaded (it would
  // read past the packed weights of the last output-channel block).
  expect_winograd("winograd", {1, 8, 9, 9}, 40, 1, true, {}, 0, false, false, false, true, true);
  expect_winograd("winograd", {1, 128, 8, 8}, 64, 1, true, {"Relu x0"}, 0, true, false, false, true, true);
  expect_winograd("winograd", {1, 6, 9, 11}, 8, 1, false, {"Relu x0"}, 0, true, true, false, true, true);
  expect_winograd("winograd/s3", {1, 40, 9, 9}, 36, 1, true, {"Add x0 x1", "Relu t0"}, 1, false, false, false, true, true);
  expect_winograd("winograd/s4", {1, 32, 7, 7}, 32, 1, true, {"Add x0 x1", "Relu t0"}, 1, false, false, true, true, true);
}

// The choice by shape: Winograd is never taken on CPU devices unforced, nor
// for convs it cannot do (stride 2 runs the GPU kernels' tiles).
TEST(Winograd, ForcedOnlyWhereItApplies) {
  auto dev = test_device();
  std::vector<HostTensor> in = {random_tensor({1, 8, 9, 9}, -1, 1, 1), random_tensor({8, 8, 3, 3}, -1, 1, 2)};
  std::vector<std::string> kernels;
  run_node({.conv = "winograd"}, "Conv", in, {{"strides", Attribute::of_ints({2, 2})}, {"pads", Attribute::of_ints({1, 1, 1, 1})}}, {1, 8, 5, 5},
           -1, kernels);
  EXPECT_EQ(std::find(kernels.begin(), kernels.end(), "conv2d_winograd"), kernels.end());
}
