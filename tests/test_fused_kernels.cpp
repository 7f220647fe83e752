// OpenCL kernels of the fused operators (FusedConv on every conv path,
// FusedMatMul, FusedElementwise) and every conv tile variant, against the CPU
// reference on the same node, with tensors placed at odd offsets of one pool
// and, for the in-place cases, the output placed over an input.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <cstdlib>
#include <random>

#include "graph/epilogue.h"
#include "lower/epilogue_cl.h"
#include "lower/mma.h"
#include "lower/ops.h"
#include "lower/tuning.h"
#include "optimize/usage.h"
#include "plan/memory_plan.h"
#include "reference/reference_ops.h"
#include "runtime/profile.h"
#include "runtime/session.h"
#include "test_util.h"

using namespace texplan;
using test::random_tensor;
using test::test_device;
using test::rel_error;

namespace {

struct FusedCase {
  std::string op;
  std::vector<HostTensor> inputs;  // empty shape with no bytes: omitted (-1)
  std::map<std::string, Attribute> attrs;
  int output_over = -1;  // in-place: the output shares this input's storage
  bool tf32 = false;     // --precision tf32's kernels (emulated off NVIDIA: KernelChoice::tf32_emulation)
  bool aligned = false;  // every tensor 16-byte aligned, as a plan places them (the float4 forms)
};

bool omitted(const HostTensor& t) { return t.bytes.empty() && t.shape.empty(); }

// Lowers the node with every tensor at an odd element offset of one pool
// buffer (c.aligned: at multiples of 4 elements), runs its launches, and returns the output (and whether it lowered);
// `kernels` receives the names of the launches; `choice` names variants.
bool run_on_device(const FusedCase& c, HostTensor& out, const Shape& out_shape,
                   std::vector<std::string>* kernels = nullptr, const lower::KernelChoice& choice = {}) {
  auto dev = test_device();
  Graph g;
  g.model_name = "fused_test";
  g.opset = 17;
  Node n;
  n.name = c.op + "_0";
  n.op_type = c.op;
  n.attrs = c.attrs;
  std::vector<int64_t> offset;  // per tensor, in floats
  int64_t next = c.aligned ? 0 : 3;  // odd: offsets are not aligned to anything
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (omitted(c.inputs[i])) {
      n.inputs.push_back(-1);
      continue;
    }
    Tensor t;
    t.name = "in" + std::to_string(i);
    t.shape = c.inputs[i].shape;
    n.inputs.push_back(g.add_tensor(t));
    offset.push_back(next);
    next += std::max<int64_t>(1, c.inputs[i].count()) + 5;
    if (c.aligned) next = (next + 3) / 4 * 4;
  }
  Tensor y;
  y.name = "out";
  y.shape = out_shape;
  n.outputs.push_back(g.add_tensor(y));
  if (c.output_over >= 0) {
    offset.push_back(offset.at(size_t(n.inputs.at(size_t(c.output_over)))));
  } else {
    offset.push_back(next);
    next += element_count(out_shape) + 5;
  }
  g.nodes.push_back(n);

  cl_int s = CL_SUCCESS;
  cl_mem pool = clCreateBuffer(dev->context(), CL_MEM_READ_WRITE, size_t(next) * 4, nullptr, &s);
  EXPECT_EQ(s, CL_SUCCESS);
  std::vector<float> host(size_t(next), NAN);
  for (size_t i = 0; i < c.inputs.size(); ++i)
    if (!omitted(c.inputs[i])) {
      const float* v = c.inputs[i].data<float>();
      std::copy(v, v + c.inputs[i].count(), host.begin() + offset[size_t(n.inputs[i])]);
    }
  clEnqueueWriteBuffer(dev->queue(), pool, CL_TRUE, 0, host.size() * 4, host.data(), 0, nullptr, nullptr);
  bool lowered = false;
  {
    lower::NodeBuilder b(*dev, g, g.nodes[0], [&](int t) { return lower::Location{pool, offset.at(size_t(t)) * 4}; });
    b.kernel_choice = choice;
    b.tf32 = c.tf32;
    // FusedConvMaxPool is not in lower_node's table yet (ops.h says why).
    lowered = c.op == "FusedConvMaxPool" ? lower::lower_fused_conv_maxpool(b) : lower::lower_node(b);
    for (const lower::Launch& l : b.launches) {
      if (kernels) kernels->push_back(l.name);
      s = clEnqueueNDRangeKernel(dev->queue(), l.kernel, l.dims, nullptr, l.global, l.has_local ? l.local : nullptr,
                                 0, nullptr, nullptr);
      EXPECT_EQ(s, CL_SUCCESS) << l.name;
    }
  }
  out = HostTensor(DataType::Float32, out_shape);
  clEnqueueReadBuffer(dev->queue(), pool, CL_TRUE, size_t(offset.back()) * 4, out.bytes.size(), out.bytes.data(), 0,
                      nullptr, nullptr);
  clReleaseMemObject(pool);
  return lowered;
}

// Runs the case on the device with the kernels `choice` names and compares
// with reference::evaluate.
void expect_matches_reference(const lower::KernelChoice& choice, const FusedCase& c, double tol = 1e-4,
                              std::vector<std::string>* kernels = nullptr) {
  Node n;
  n.name = c.op + "_0";
  n.op_type = c.op;
  n.attrs = c.attrs;
  std::vector<const HostTensor*> ins;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    n.inputs.push_back(omitted(c.inputs[i]) ? -1 : int(i));
    ins.push_back(omitted(c.inputs[i]) ? nullptr : &c.inputs[i]);
  }
  n.outputs = {int(c.inputs.size())};
  std::vector<HostTensor> expected = reference::evaluate(n, ins);
  HostTensor out;
  ASSERT_TRUE(run_on_device(c, out, expected[0].shape, kernels, choice)) << c.op << " did not lower to a kernel";
  EXPECT_LE(rel_error(out, expected[0]), tol);
}
// The same with the device's own choice of kernels.
void expect_matches_reference(const FusedCase& c, double tol = 1e-4, std::vector<std::string>* kernels = nullptr) {
  expect_matches_reference(lower::KernelChoice{}, c, tol, kernels);
}

HostTensor none() { return {}; }

// FusedConv: X [x], W [w], bias or not, attrs, program, extra inputs of Y's shape.
FusedCase fused_conv(Shape x, Shape w, std::map<std::string, Attribute> attrs, bool bias,
                     std::vector<std::string> prog, int extras, uint32_t seed = 1) {
  FusedCase c{"FusedConv", {random_tensor(x, -1, 1, seed), random_tensor(w, -1, 1, seed + 1)}, attrs};
  c.inputs.push_back(bias ? random_tensor({w[0]}, -1, 1, seed + 2) : none());
  c.attrs["program"] = Attribute::of_strings(std::move(prog));
  if (extras > 0) {
    // Y's shape from the reference conv.
    Node conv;
    conv.name = "shape";
    conv.op_type = "Conv";
    for (auto& [k, v] : attrs) conv.attrs[k] = v;
    conv.inputs = {0, 1};
    conv.outputs = {2};
    Shape y = reference::evaluate(conv, {&c.inputs[0], &c.inputs[1]})[0].shape;
    for (int k = 0; k < extras; ++k) c.inputs.push_back(random_tensor(y, -1, 1, seed + 10 + uint32_t(k)));
  }
  return c;
}

// texplan's GPU kernels (gemm.cl, conv.cl) with these tiles, on CPU devices
// too, where the lowerings would otherwise take lower/opencl_cpu.
lower::KernelChoice gpu_kernels(const std::string& tiles = "64x64") { return {.conv = tiles}; }

const std::vector<std::string> kResidualRelu = {"Add x0 x1", "Relu t0"};
const std::vector<std::string> kSiLU = {"Sigmoid x0", "Mul x0 t0"};

}  // namespace

// ---------------------------------------------------------------- codegen

TEST(EpilogueCl, EveryOpHasAnOpenClForm) {
  for (const std::string& op : Epilogue::ops()) {
    Epilogue e;
    EpilogueInstr in;
    in.op = op;
    int values = (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Pow" || op == "Max" ||
                  op == "Min")
                     ? 2
                     : 1;
    int params = op == "Clip" || op == "HardSigmoid" ? 2 : op == "LeakyRelu" || op == "Elu" ? 1 : 0;
    for (int k = 0; k < values; ++k) in.args.push_back({EpilogueOperand::Kind::Input, k, 0});
    for (int k = 0; k < params; ++k) in.args.push_back({EpilogueOperand::Kind::Literal, 0, 0.25f});
    e.code.push_back(in);
    std::string cl = lower::epilogue_cl(e, {lower::EpilogueRead::Value, lower::EpilogueRead::Direct});
    EXPECT_NE(cl.find("#define EPI(v, i)"), std::string::npos) << op;
  }
  Epilogue bad;
  bad.code.push_back({"Frobnicate", {{EpilogueOperand::Kind::Input, 0, 0}}});
  EXPECT_THROW(lower::epilogue_cl(bad, {lower::EpilogueRead::Value}), Error);
  Epilogue reads_x2 = Epilogue::parse(std::vector<std::string>{"Add x0 x2"});
  EXPECT_THROW(lower::epilogue_cl(reads_x2, {lower::EpilogueRead::Value, lower::EpilogueRead::Direct}), Error);
}

// Every epilogue op through FusedElementwise, against the reference
// (Epilogue::eval), a few ops per program (each program is one build): each
// op's result is added to the sum with its own weight, so any op's error
// shows.
TEST(FusedKernels, ElementwiseEveryOp) {
  HostTensor a = random_tensor({3, 5, 7}, -3, 3, 1), b = random_tensor({3, 5, 7}, 0.5f, 2, 2);
  HostTensor pos = random_tensor({3, 5, 7}, 0.1f, 4, 3);
  auto instr = [](const std::string& op) -> std::string {
    if (op == "Clip") return "Clip x0 -0.5 0.75";
    if (op == "LeakyRelu") return "LeakyRelu x0 0.1";
    if (op == "HardSigmoid") return "HardSigmoid x0 0.3 0.4";
    if (op == "Elu") return "Elu x0 1.5";
    if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Pow" || op == "Max" || op == "Min")
      return op + " x0 x1";
    return op + " x0";
  };
  std::vector<std::vector<std::string>> groups = {{"Log", "Sqrt", "Pow"}};  // x0 > 0
  for (const std::string& op : Epilogue::ops()) {
    if (op == "Log" || op == "Sqrt" || op == "Pow") continue;
    if (groups.size() == 1 || groups.back().size() == 5) groups.emplace_back();
    groups.back().push_back(op);
  }
  size_t covered = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    std::vector<std::string> prog;
    std::string sum;
    for (size_t k = 0; k < groups[g].size(); ++k) {
      prog.push_back(instr(groups[g][k]));
      prog.push_back("Mul t" + std::to_string(prog.size() - 1) + " " + std::to_string(1 + 0.37 * double(k)));
      std::string t = "t" + std::to_string(prog.size() - 1);
      if (!sum.empty()) {
        prog.push_back("Add " + sum + " " + t);
        t = "t" + std::to_string(prog.size() - 1);
      }
      sum = t;
    }
    covered += groups[g].size();
    SCOPED_TRACE(prog.front());
    expect_matches_reference({"FusedElementwise", {g == 0 ? pos : a, b}, {{"program", Attribute::of_strings(prog)}}});
  }
  EXPECT_EQ(covered, Epilogue::ops().size());
}

TEST(FusedKernels, ElementwiseChainsBroadcastAndInPlace) {
  HostTensor x = random_tensor({2, 8, 16}, -3, 3, 4);
  // BERT's Gelu chain with literals.
  std::vector<std::string> gelu = {"Div x0 1.41421354", "Erf t0", "Add t1 1", "Mul x0 t2", "Mul t3 0.5"};
  expect_matches_reference({"FusedElementwise", {x}, {{"program", Attribute::of_strings(gelu)}}});
  expect_matches_reference({"FusedElementwise", {x}, {{"program", Attribute::of_strings(gelu)}}, 0});  // in place
  // Broadcast: per-channel, scalar, and a middle dim.
  HostTensor a = random_tensor({2, 3, 4, 5}, -2, 2, 5), c = random_tensor({3, 1, 1}, -1, 1, 6);
  HostTensor s = random_tensor({}, -1, 1, 7), m = random_tensor({1, 4, 1}, -1, 1, 8);
  std::vector<std::string> p = {"Mul x0 x1", "Add t0 x2", "Sigmoid t1", "Mul t2 x0", "Sub t3 x3"};
  expect_matches_reference({"FusedElementwise", {a, c, s, m}, {{"program", Attribute::of_strings(p)}}});
  expect_matches_reference({"FusedElementwise", {a, c, s, m}, {{"program", Attribute::of_strings(p)}}, 0});
  // Rows of 8 or more (CPU devices: a row per work-item, fused_elementwise_rows):
  // per-channel and per-row operands constant along the row, a row vector
  // that is not, BatchNormalization's scale and shift over a map.
  HostTensor wide = random_tensor({2, 3, 4, 12}, -2, 2, 9), row = random_tensor({12}, -1, 1, 10);
  expect_matches_reference({"FusedElementwise", {wide, c, s, m}, {{"program", Attribute::of_strings(p)}}});
  expect_matches_reference({"FusedElementwise", {wide, c, row, m}, {{"program", Attribute::of_strings(p)}}, 0});
  HostTensor map = random_tensor({1, 16, 9, 9}, -2, 2, 11), scale = random_tensor({16, 1, 1}, 0.5f, 2, 12),
             shift = random_tensor({16, 1, 1}, -1, 1, 13);
  const std::vector<std::string> bn_relu = {"Mul x0 x1", "Add t0 x2", "Relu t1"};
  expect_matches_reference({"FusedElementwise", {map, scale, shift}, {{"program", Attribute::of_strings(bn_relu)}}});
  // The full-shape operand is not first; output over it.
  expect_matches_reference({"FusedElementwise", {c, a}, {{"program", Attribute::of_strings({"Sub x1 x0", "Tanh t0"})}}, 1});
  // Empty program: a copy of x0.
  expect_matches_reference({"FusedElementwise", {a}, {{"program", Attribute::of_strings({})}}});
}

// ---------------------------------------------------------------- FusedConv

TEST(FusedKernels, ConvGeneralPath) {
  const lower::KernelChoice gpu = gpu_kernels();
  // 3x3 pad 1, residual + Relu, and the same in place over the residual.
  expect_matches_reference(gpu, fused_conv({1, 3, 9, 11}, {5, 3, 3, 3}, {{"pads", Attribute::of_ints({1, 1, 1, 1})}}, true, kResidualRelu, 1));
  FusedCase in_place = fused_conv({1, 3, 9, 11}, {5, 3, 3, 3}, {{"pads", Attribute::of_ints({1, 1, 1, 1})}}, true, kResidualRelu, 1);
  in_place.output_over = 3;
  expect_matches_reference(gpu, in_place);
  // Strides, asymmetric pads, no bias, SiLU.
  expect_matches_reference(gpu, fused_conv({2, 4, 10, 9}, {6, 4, 3, 2}, {{"strides", Attribute::of_ints({2, 1})}, {"pads", Attribute::of_ints({1, 0, 0, 1})}},
                                      false, kSiLU, 0));
  // Dilation, two extra inputs.
  expect_matches_reference(gpu, fused_conv({1, 3, 13, 13}, {7, 3, 3, 3}, {{"dilations", Attribute::of_ints({2, 3})}, {"pads", Attribute::of_ints({2, 2, 2, 2})}},
                                      true, {"Mul x0 x1", "Add t0 x2", "Clip t1 -0.5 0.5"}, 2));
  // Grouped. (Programs repeat: each new one is another build of gemm.cl; the
  // ops themselves are covered by ElementwiseEveryOp.)
  expect_matches_reference(gpu, fused_conv({1, 6, 8, 8}, {4, 3, 3, 3}, {{"group", Attribute::of_int(2)}, {"pads", Attribute::of_ints({1, 1, 1, 1})}}, true,
                                      kSiLU, 0));
  // 1-D.
  expect_matches_reference(gpu, fused_conv({2, 3, 17}, {4, 3, 5}, {{"pads", Attribute::of_ints({2, 2})}}, true, kResidualRelu, 1));
  // Plain (empty program).
  expect_matches_reference(gpu, fused_conv({1, 3, 8, 8}, {4, 3, 3, 3}, {}, true, {}, 0));
}

TEST(FusedKernels, ConvOneByOneAndMatrixVector) {
  const lower::KernelChoice gpu = gpu_kernels();
  expect_matches_reference(gpu, fused_conv({2, 16, 5, 7}, {24, 16, 1, 1}, {}, true, kSiLU, 0));
  FusedCase res = fused_conv({1, 130, 3, 3}, {67, 130, 1, 1}, {}, true, kResidualRelu, 1);  // K and M past a tile
  expect_matches_reference(gpu, res);
  res.output_over = 3;
  expect_matches_reference(gpu, res);
  expect_matches_reference(gpu, fused_conv({1, 8, 5, 5}, {12, 4, 1, 1}, {{"group", Attribute::of_int(2)}}, false, kSiLU, 0));
  // 1x1 spatial, C >= 64: matrix-vector (squeeze-excite), with the product gating an input.
  FusedCase se = fused_conv({2, 96, 1, 1}, {24, 96, 1, 1}, {}, true, kResidualRelu, 1);
  expect_matches_reference(gpu, se);
  se.output_over = 3;
  expect_matches_reference(gpu, se);
}

TEST(FusedKernels, ConvDepthwise) {
  const lower::KernelChoice gpu = gpu_kernels();
  expect_matches_reference(gpu, fused_conv({2, 6, 9, 10}, {6, 1, 3, 3}, {{"group", Attribute::of_int(6)}, {"pads", Attribute::of_ints({1, 1, 1, 1})}}, true,
                                      {"Clip x0 0 6"}, 0));
  FusedCase res = fused_conv({1, 5, 11, 11}, {5, 1, 5, 5}, {{"group", Attribute::of_int(5)}, {"strides", Attribute::of_ints({2, 2})}, {"pads", Attribute::of_ints({2, 2, 2, 2})}},
                             false, kResidualRelu, 1);
  expect_matches_reference(gpu, res);
  res.output_over = 3;
  expect_matches_reference(gpu, res);
  expect_matches_reference(gpu, fused_conv({1, 3, 8, 8}, {6, 1, 3, 3}, {{"group", Attribute::of_int(3)}, {"dilations", Attribute::of_ints({2, 2})}}, true, kSiLU, 0));
}

// Register-tile variants (and the baseline that decodes every tap) on
// shapes with ragged edges in M, N and K, through the general and 1x1 paths.
TEST(FusedKernels, ConvEveryTileVariant) {
  // Representatives (each is a build): scalar and float4 reads, square and
  // both oblong tiles, the baseline; the others differ only in sizes.
  for (const std::string v : {"32x32", "128x64", "64x128v", "128x128v", "taps:64x64"}) {
    SCOPED_TRACE(v);
    const lower::KernelChoice gpu = gpu_kernels(v);
    expect_matches_reference(gpu, fused_conv({1, 20, 12, 13}, {70, 20, 3, 3}, {{"pads", Attribute::of_ints({1, 1, 1, 1})}}, true, kResidualRelu, 1));
    // One program per variant (each is a build): the same epilogue throughout.
    expect_matches_reference(gpu, fused_conv({2, 9, 11, 10}, {140, 9, 3, 3}, {{"strides", Attribute::of_ints({2, 2})}}, false, kResidualRelu, 1));
    if (v.rfind("taps:", 0) != 0) {
      expect_matches_reference(gpu, fused_conv({1, 33, 17, 9}, {130, 33, 1, 1}, {}, true, kResidualRelu, 1));
      expect_matches_reference(gpu, fused_conv({2, 5, 7, 7}, {6, 5, 1, 1}, {}, false, kResidualRelu, 1));
    }
  }
  EXPECT_THROW(lower::check_conv_variant("99x99"), Error);
}

TEST(FusedKernels, ConvExtraInputOfAnotherShapeFallsBack) {
  FusedCase c = fused_conv({1, 3, 8, 8}, {4, 3, 3, 3}, {{"pads", Attribute::of_ints({1, 1, 1, 1})}}, true, kResidualRelu, 0);
  c.inputs.push_back(random_tensor({1, 4, 1, 1}));
  HostTensor out;
  EXPECT_FALSE(run_on_device(c, out, {1, 4, 8, 8}));
}

// ---------------------------------------------------------------- FusedConvMaxPool

namespace {
FusedCase conv_pool(Shape x, Shape w, std::map<std::string, Attribute> conv_attrs, bool bias,
                    std::vector<std::string> prog, std::map<std::string, Attribute> pool_attrs) {
  FusedCase c = fused_conv(x, w, conv_attrs, bias, std::move(prog), 0);
  c.op = "FusedConvMaxPool";
  for (auto& [k, v] : pool_attrs) c.attrs["pool_" + k] = v;
  return c;
}
}  // namespace

TEST(FusedKernels, ConvMaxPool) {
  auto cases = [] {
    std::map<std::string, Attribute> pool2 = {{"kernel_shape", Attribute::of_ints({2, 2})}, {"strides", Attribute::of_ints({2, 2})}};
    std::map<std::string, Attribute> pool2_ceil = pool2;
    pool2_ceil["ceil_mode"] = Attribute::of_int(1);
    return std::vector<FusedCase>{
        // VGG: 3x3 pad 1, Relu, 2x2/2; ragged M and N edges.
        conv_pool({1, 5, 10, 12}, {70, 5, 3, 3}, {{"pads", Attribute::of_ints({1, 1, 1, 1})}}, true, {"Relu x0"}, pool2),
        // Odd conv output, ceil_mode: the last windows run past it.
        conv_pool({2, 3, 9, 11}, {6, 3, 3, 3}, {{"pads", Attribute::of_ints({1, 1, 1, 1})}}, false, kSiLU, pool2_ceil),
        // ResNet stem: 7x7/2 pad 3, then 3x3/2 pad 1 (overlapping windows).
        conv_pool({1, 3, 20, 18}, {8, 3, 7, 7}, {{"strides", Attribute::of_ints({2, 2})}, {"pads", Attribute::of_ints({3, 3, 3, 3})}}, true,
                  {"Relu x0"}, {{"kernel_shape", Attribute::of_ints({3, 3})}, {"strides", Attribute::of_ints({2, 2})}, {"pads", Attribute::of_ints({1, 1, 1, 1})}}),
        // GoogLeNet: 3x3/2 ceil_mode, no pad; grouped conv, dilated pool.
        conv_pool({1, 4, 13, 13}, {6, 2, 3, 3}, {{"group", Attribute::of_int(2)}}, true, {"Clip x0 0 6"},
                  {{"kernel_shape", Attribute::of_ints({3, 3})}, {"strides", Attribute::of_ints({2, 2})}, {"ceil_mode", Attribute::of_int(1)}}),
        conv_pool({1, 3, 12, 12}, {4, 3, 1, 1}, {}, true, {},
                  {{"kernel_shape", Attribute::of_ints({2, 3})}, {"strides", Attribute::of_ints({1, 2})}, {"dilations", Attribute::of_ints({2, 1})}}),
    };
  };
  for (const FusedCase& c : cases()) expect_matches_reference(c);  // the device's own choice
  for (std::string tiles : {"64x64v", "128x128"}) {
    SCOPED_TRACE(tiles);
    for (const FusedCase& c : cases()) expect_matches_reference(gpu_kernels(tiles), c);
  }
  // Epilogue inputs are not part of this op.
  FusedCase extra = cases()[0];
  extra.inputs.push_back(random_tensor({1, 70, 10, 12}));
  HostTensor out;
  EXPECT_FALSE(run_on_device(extra, out, {1, 70, 5, 6}));
}

// Overlapping windows through conv2d_maxpool_tiled (each tile, the choice
// by shape) and the direct kernel it falls back to: ragged tiles and
// channel blocks, ceil_mode, pads, strides and dilations on both sides,
// groups, input channels staged in several chunks; epilogues with negative
// values, so pool padding that won a window would show.
TEST(FusedKernels, ConvMaxPoolTiled) {
  const std::map<std::string, Attribute> stem_pool = {
      {"kernel_shape", Attribute::of_ints({3, 3})}, {"strides", Attribute::of_ints({2, 2})}, {"pads", Attribute::of_ints({1, 1, 1, 1})}};
  // ResNet stem at 40x36, 40 channels: a full and a partial block of 32.
  const FusedCase stem = conv_pool({1, 3, 40, 36}, {40, 3, 7, 7}, {{"strides", Attribute::of_ints({2, 2})}, {"pads", Attribute::of_ints({3, 3, 3, 3})}},
                                   true, {"Relu x0"}, stem_pool);
  const std::vector<FusedCase> cases = {
      stem,
      // Odd sizes, ceil_mode (the last windows run past the conv output), no bias.
      conv_pool({2, 3, 23, 19}, {20, 3, 3, 3}, {{"pads", Attribute::of_ints({1, 1, 1, 1})}}, false, {},
                {{"kernel_shape", Attribute::of_ints({3, 3})}, {"strides", Attribute::of_ints({2, 2})}, {"ceil_mode", Attribute::of_int(1)}}),
      // Asymmetric conv strides, pads and dilations; pool window 3x2, dilated, padded.
      conv_pool({1, 5, 17, 15}, {12, 5, 3, 5},
                {{"strides", Attribute::of_ints({2, 1})}, {"pads", Attribute::of_ints({1, 2, 0, 1})}, {"dilations", Attribute::of_ints({1, 2})}}, true, kSiLU,
                {{"kernel_shape", Attribute::of_ints({3, 2})}, {"strides", Attribute::of_ints({2, 1})}, {"pads", Attribute::of_ints({1, 0, 1, 0})},
                 {"dilations", Attribute::of_ints({1, 2})}}),
      // Grouped, 6 channels per group (a partial block), ceil_mode.
      conv_pool({1, 8, 15, 15}, {12, 4, 3, 3}, {{"group", Attribute::of_int(2)}}, true, {"Clip x0 -0.5 0.5"},
                {{"kernel_shape", Attribute::of_ints({3, 3})}, {"strides", Attribute::of_ints({2, 2})}, {"ceil_mode", Attribute::of_int(1)}}),
      // 64 input channels: staged in chunks.
      conv_pool({1, 64, 12, 12}, {16, 64, 3, 3}, {{"pads", Attribute::of_ints({1, 1, 1, 1})}}, true, {"Relu x0"}, stem_pool),
      // Pool stride 1 (every conv pixel in up to 9 windows).
      conv_pool({1, 3, 11, 13}, {8, 3, 3, 3}, {{"pads", Attribute::of_ints({1, 1, 1, 1})}}, true, {},
                {{"kernel_shape", Attribute::of_ints({3, 3})}, {"strides", Attribute::of_ints({1, 1})}, {"pads", Attribute::of_ints({1, 1, 1, 1})}}),
  };
  std::vector<std::string> kernels;
  auto ran = [&](const char* kernel) {
    EXPECT_EQ(kernels, std::vector<std::string>{kernel});
    kernels.clear();
  };
  // The choice by shape: a tile for every case (PoCL has the local memory).
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(i);
    expect_matches_reference(cases[i], 1e-4, &kernels);
    ran("conv2d_maxpool_tiled");
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(i);
    expect_matches_reference({.conv_maxpool = "direct"}, cases[i], 1e-4, &kernels);
    ran("conv2d_maxpool");
  }
  // Every tile on the dilated case (each is a build per geometry; the 7x7
  // stem's take PoCL seconds: texplan_conv_bench checks every tile on the
  // full-size stems against the unfused pair).
  for (const std::string& v : lower::conv_maxpool_variants()) {
    SCOPED_TRACE(v);
    expect_matches_reference({.conv_maxpool = v}, cases[2], 1e-4, &kernels);
    ran(v == "direct" ? "conv2d_maxpool" : "conv2d_maxpool_tiled");
  }
  EXPECT_THROW(lower::check_conv_maxpool_variant("tiled:1x1x1"), Error);
  // 25x25 taps: one input channel's patch and weights exceed 48 KiB of
  // local memory with every tile, so the direct kernel runs.
  expect_matches_reference(conv_pool({1, 1, 28, 28}, {2, 1, 25, 25}, {{"pads", Attribute::of_ints({2, 2, 2, 2})}}, true, {"Relu x0"},
                                     {{"kernel_shape", Attribute::of_ints({3, 3})}, {"strides", Attribute::of_ints({2, 2})}}),
                           1e-4, &kernels);
  ran("conv2d_maxpool");
}

// The profile's FLOPs of a FusedConvMaxPool: its conv's, at the conv's own
// output size (ResNet's stem: 112x112, pooled to 56x56).
TEST(FusedKernels, ConvMaxPoolFlopsAreTheConvs) {
  Graph g;
  auto add = [&](Shape s) {
    Tensor t;
    t.name = "t" + std::to_string(g.tensors.size());
    t.shape = std::move(s);
    return g.add_tensor(t);
  };
  Node n;
  n.op_type = "FusedConvMaxPool";
  n.inputs = {add({1, 3, 224, 224}), add({64, 3, 7, 7}), add({64})};
  n.outputs = {add({1, 64, 56, 56})};
  n.attrs = {{"strides", Attribute::of_ints({2, 2})}, {"pads", Attribute::of_ints({3, 3, 3, 3})}, {"pool_kernel_shape", Attribute::of_ints({3, 3})},
             {"pool_strides", Attribute::of_ints({2, 2})}, {"pool_pads", Attribute::of_ints({1, 1, 1, 1})}};
  EXPECT_DOUBLE_EQ(runtime::node_cost(g, n).flops, 2.0 * 64 * 112 * 112 * 3 * 7 * 7);
}

// ---------------------------------------------------------------- FusedMatMul

TEST(FusedKernels, MatMul) {
  const lower::KernelChoice gpu = gpu_kernels();
  auto mm = [&](HostTensor a, HostTensor b, std::vector<HostTensor> extra, std::vector<std::string> prog, bool trans_b = false,
               int over = -1) {
    FusedCase c{"FusedMatMul", {std::move(a), std::move(b)}, {{"program", Attribute::of_strings(std::move(prog))}}, over};
    if (trans_b) c.attrs["transB"] = Attribute::of_int(1);
    for (auto& e : extra) c.inputs.push_back(std::move(e));
    expect_matches_reference(gpu, c);
  };
  // Bias broadcast along rows, then Gelu (BERT's FFN).
  mm(random_tensor({2, 65, 33}), random_tensor({33, 17}, -1, 1, 2), {random_tensor({17}, -1, 1, 3)}, {"Add x0 x1", "Gelu t0"});
  // transB (Gemm's layout), full-shape residual, in place over it.
  mm(random_tensor({7, 9}), random_tensor({5, 9}, -1, 1, 2), {random_tensor({7, 5}, -1, 1, 3)}, {"Add x0 x1"}, true);
  mm(random_tensor({7, 9}), random_tensor({5, 9}, -1, 1, 2), {random_tensor({7, 5}, -1, 1, 3)}, {"Add x0 x1"}, true, 2);
  mm(random_tensor({70, 40}), random_tensor({130, 40}, -1, 1, 2), {random_tensor({70, 1}, -1, 1, 3)}, {"Add x0 x1", "Gelu t0"}, true);
  // Batched with broadcasting batch dims and a strided extra.
  mm(random_tensor({2, 3, 5, 8}), random_tensor({3, 8, 6}, -1, 1, 2), {random_tensor({1, 3, 1, 6}, -1, 1, 3)},
     {"Add x0 x1", "Gelu t0"});
  // Matrix-vector: one row, long K; and 1-D A.
  mm(random_tensor({1, 256}), random_tensor({256, 40}, -1, 1, 2), {random_tensor({40}, -1, 1, 3)}, {"Add x0 x1", "Gelu t0"});
  mm(random_tensor({256}), random_tensor({40, 256}, -1, 1, 2), {random_tensor({40}, -1, 1, 3)}, {"Add x0 x1", "Gelu t0"}, true);
  // No extras, empty program: a plain MatMul.
  mm(random_tensor({4, 8}), random_tensor({8, 3}, -1, 1, 2), {}, {});
}

// Matrix-vector products (gemm.cl gemv) over contiguous and strided rows:
// K short of and past the work-group's 64, a multiple of 4 (float4 loads
// where the rows are contiguous: GV_VEC4) or not, outputs along either
// operand, batches, Gemm's alpha, beta and C (a classifier's bias).
TEST(FusedKernels, MatrixVector) {
  const lower::KernelChoice gpu = gpu_kernels();
  auto run = [&](FusedCase c) {
    std::vector<std::string> kernels;
    expect_matches_reference(gpu, c, 1e-4, &kernels);
    EXPECT_EQ(kernels, std::vector<std::string>{"gemv"}) << c.op;
  };
  auto mm = [&](HostTensor a, HostTensor w, bool trans_b, std::vector<std::string> prog, std::vector<HostTensor> extra) {
    FusedCase c{"FusedMatMul", {std::move(a), std::move(w)}, {{"program", Attribute::of_strings(std::move(prog))}}};
    if (trans_b) c.attrs["transB"] = Attribute::of_int(1);
    for (auto& e : extra) c.inputs.push_back(std::move(e));
    return c;
  };
  for (int64_t K : {64, 66, 100, 1000, 4096})
    for (int64_t O : {1, 37}) {
      SCOPED_TRACE("K " + std::to_string(K) + ", O " + std::to_string(O));
      for (bool aligned : {false, true}) {
        FusedCase c = mm(random_tensor({1, K}), random_tensor({O, K}, -1, 1, 2), true, {"Add x0 x1", "Relu t0"},
                         {random_tensor({O}, -1, 1, 3)});
        c.aligned = aligned;
        run(c);
      }
      run(mm(random_tensor({1, K}), random_tensor({K, O}, -1, 1, 2), false, {}, {}));  // strided rows
      run(mm(random_tensor({O, K}), random_tensor({K, 1}, -1, 1, 2), false, {}, {}));  // outputs along M
    }
  run(mm(random_tensor({3, 21, 96}), random_tensor({3, 96, 1}, -1, 1, 2), false, {}, {}));  // batched
  run(FusedCase{"Gemm",
                {random_tensor({1, 512}), random_tensor({45, 512}, -1, 1, 2), random_tensor({45}, -1, 1, 3)},
                {{"transB", Attribute::of_int(1)}, {"alpha", Attribute::of_float(0.5f)}, {"beta", Attribute::of_float(2.0f)}}});
}

// ---------------------------------------------------------------- split-K

namespace {
const std::vector<std::string> kSplitPasses = {"splitk_zero", "conv2d_gemm", "splitk_finish"};
const std::vector<std::string> kSplitGemmPasses = {"splitk_zero", "gemm", "splitk_finish"};

// The case against the reference, and the kernels it ran.
void expect_kernels(const lower::KernelChoice& choice, const FusedCase& c, const std::vector<std::string>& expected) {
  std::vector<std::string> kernels;
  expect_matches_reference(choice, c, 1e-4, &kernels);
  EXPECT_EQ(kernels, expected);
}
}  // namespace

// Split-K (gemm.cl SPLITK, forced: "TILES/sN"), on the portable
// compare-and-swap adds here (PTX reductions on NVIDIA): K not a multiple of
// S x TK, bias or not, Relu, residual Add, grouped, strided, batched; never
// where Y shares an input's storage.
TEST(FusedKernels, ConvSplitK) {
  for (const std::string v : {"32x32/s3", "128x64v/s4"}) {
    SCOPED_TRACE(v);
    const lower::KernelChoice gpu = gpu_kernels(v);
    // K = 180: slices of 64, 64, 52 (s3); 48, 48, 48, 36 (s4).
    expect_kernels(gpu, fused_conv({1, 20, 12, 13}, {70, 20, 3, 3}, {{"pads", Attribute::of_ints({1, 1, 1, 1})}}, true, kResidualRelu, 1),
                   kSplitPasses);
    // No bias, Relu only, strided, two images (K = 81).
    expect_kernels(gpu, fused_conv({2, 9, 11, 10}, {140, 9, 3, 3}, {{"strides", Attribute::of_ints({2, 2})}}, false, {"Relu x0"}, 0),
                   kSplitPasses);
    // 1x1 as gemm (K = 130), residual + Relu.
    expect_kernels(gpu, fused_conv({1, 130, 3, 3}, {67, 130, 1, 1}, {}, true, kResidualRelu, 1), kSplitGemmPasses);
  }
  const lower::KernelChoice gpu = gpu_kernels("64x64/s2");
  // Grouped (K = 3 x 5 x 5 = 75 per group), dilated, SiLU reading the sum.
  expect_kernels(gpu, fused_conv({1, 6, 13, 13}, {8, 3, 5, 5}, {{"group", Attribute::of_int(2)}, {"dilations", Attribute::of_ints({2, 1})}, {"pads", Attribute::of_ints({2, 2, 2, 2})}},
                            true, kSiLU, 0),
                 kSplitPasses);
  // A plain Conv: the bias comes with slice 0, nothing to apply after the slices.
  FusedCase plain{"Conv",
                  {random_tensor({1, 40, 6, 6}), random_tensor({24, 40, 3, 3}, -1, 1, 2), random_tensor({24}, -1, 1, 3)},
                  {}};
  expect_kernels(gpu, plain, {"splitk_zero", "conv2d_gemm"});
  // A FusedConv whose program is the identity (a projection's folded
  // BatchNormalization): no pass after the slices either.
  expect_kernels(gpu, fused_conv({1, 40, 6, 6}, {24, 40, 3, 3}, {{"pads", Attribute::of_ints({1, 1, 1, 1})}}, true, {}, 0),
                 {"splitk_zero", "conv2d_gemm"});
  // Y over the residual (in place, ResNet's blocks): the slices add onto the
  // residual Y already holds, then the rest of the program (Relu) in place.
  FusedCase in_place = fused_conv({1, 20, 12, 13}, {70, 20, 3, 3}, {{"pads", Attribute::of_ints({1, 1, 1, 1})}}, true, kResidualRelu, 1);
  in_place.output_over = 3;
  expect_kernels(gpu, in_place, {"conv2d_gemm", "splitk_finish"});
  // Nothing after the residual Add: the slices alone.
  FusedCase add_only = fused_conv({1, 20, 12, 13}, {70, 20, 3, 3}, {{"pads", Attribute::of_ints({1, 1, 1, 1})}}, true, {"Add x1 x0"}, 1);
  add_only.output_over = 3;
  expect_kernels(gpu, add_only, {"conv2d_gemm"});
  // The residual read again after the Add (Y no longer holds it): not split.
  FusedCase reread = fused_conv({1, 20, 12, 13}, {70, 20, 3, 3}, {{"pads", Attribute::of_ints({1, 1, 1, 1})}}, true, {"Add x0 x1", "Mul t0 x1"}, 1);
  reread.output_over = 3;
  expect_kernels(gpu, reread, {"conv2d_gemm"});
  // K too shallow for two slices (K = 27 < 2 x TK): not split.
  expect_kernels(gpu, fused_conv({1, 3, 8, 8}, {4, 3, 3, 3}, {}, true, {}, 0), {"conv2d_gemm"});
  // More slices asked than K has TK-deep ones (K = 36): 3 of 16, 16, 4.
  const lower::KernelChoice many = gpu_kernels("32x32/s50");
  expect_kernels(many, fused_conv({1, 4, 7, 7}, {5, 4, 3, 3}, {{"pads", Attribute::of_ints({1, 1, 1, 1})}}, true, kResidualRelu, 1),
                 kSplitPasses);
  EXPECT_THROW(lower::check_conv_variant("64x64/x2"), Error);
  EXPECT_THROW(lower::check_conv_variant("taps:64x64/s2"), Error);
}

// tf32's split-K (gemm_mma.cl, the mma emulated here) onto the residual Y
// holds in place, as the fp32 kernels do: no zeroing, the Relu after.
TEST(FusedKernels, Tf32SplitKOntoTheResidual) {
  const lower::KernelChoice gpu = {.conv = "gpu", .tf32_emulation = true, .tf32_splits = 3, .unoptimized_programs = true};
  FusedCase in_place = fused_conv({1, 20, 12, 13}, {70, 20, 3, 3}, {{"pads", Attribute::of_ints({1, 1, 1, 1})}}, true, kResidualRelu, 1);
  in_place.output_over = 3;
  in_place.tf32 = true;
  std::vector<std::string> kernels;
  expect_matches_reference(gpu, in_place, 5e-3, &kernels);
  EXPECT_EQ(kernels, (std::vector<std::string>{"conv2d_gemm", "splitk_finish"}));
  FusedCase apart = in_place;
  apart.output_over = -1;
  kernels.clear();
  expect_matches_reference(gpu, apart, 5e-3, &kernels);
  EXPECT_EQ(kernels, kSplitPasses);
  // A Linear's bias then the residual in place: the first slice adds the bias.
  FusedCase linear{"FusedMatMul",
                   {random_tensor({64, 96}), random_tensor({96, 40}, -1, 1, 2), random_tensor({40}, -1, 1, 3),
                    random_tensor({64, 40}, -1, 1, 4)},
                   {{"program", Attribute::of_strings({"Add x0 x1", "Add t0 x2"})}},
                   3};
  linear.tf32 = true;
  kernels.clear();
  expect_matches_reference(gpu, linear, 5e-3, &kernels);
  EXPECT_EQ(kernels, (std::vector<std::string>{"gemm"}));
}

TEST(FusedKernels, MatMulSplitK) {
  const lower::KernelChoice gpu = gpu_kernels("gpu/s3");
  auto mm = [&](HostTensor a, HostTensor b, std::vector<HostTensor> extra, std::vector<std::string> prog,
               const std::vector<std::string>& kernels, int over = -1) {
    FusedCase c{"FusedMatMul", {std::move(a), std::move(b)}, {{"program", Attribute::of_strings(std::move(prog))}}, over};
    for (auto& e : extra) c.inputs.push_back(std::move(e));
    expect_kernels(gpu, c, kernels);
  };
  // Batched with broadcast batch dims, strided bias, Gelu; K = 75.
  mm(random_tensor({2, 3, 5, 75}), random_tensor({3, 75, 6}, -1, 1, 2), {random_tensor({1, 3, 1, 6}, -1, 1, 3)},
     {"Add x0 x1", "Gelu t0"}, kSplitGemmPasses);
  // Residual of Y's shape; in place over it: the slices add onto it.
  mm(random_tensor({37, 100}), random_tensor({100, 21}, -1, 1, 2), {random_tensor({37, 21}, -1, 1, 3)}, {"Add x0 x1", "Relu t0"},
     kSplitGemmPasses);
  mm(random_tensor({37, 100}), random_tensor({100, 21}, -1, 1, 2), {random_tensor({37, 21}, -1, 1, 3)}, {"Add x0 x1", "Relu t0"},
     {"gemm", "splitk_finish"}, 2);
  // A Linear's bias, then the residual in place (a transformer's MLP output,
  // x0 + b + r): the slices add onto the residual, the finish adds the bias
  // and the Relu; with nothing after the sum but the bias, the first slice
  // adds it as the product's C and no pass follows (batched too).
  mm(random_tensor({37, 100}), random_tensor({100, 21}, -1, 1, 2), {random_tensor({21}, -1, 1, 3), random_tensor({37, 21}, -1, 1, 4)},
     {"Add x0 x1", "Add t0 x2", "Relu t1"}, {"gemm", "splitk_finish"}, 3);
  mm(random_tensor({37, 100}), random_tensor({100, 21}, -1, 1, 2), {random_tensor({21}, -1, 1, 3), random_tensor({37, 21}, -1, 1, 4)},
     {"Add x1 x0", "Add x2 t0"}, {"gemm"}, 3);
  mm(random_tensor({2, 3, 37, 100}), random_tensor({3, 100, 21}, -1, 1, 2),
     {random_tensor({1, 1, 1, 21}, -1, 1, 3), random_tensor({2, 3, 37, 21}, -1, 1, 4)}, {"Add x0 x1", "Add t0 x2"}, {"gemm"}, 3);
  // A bias along another dim than the last: the finishing pass adds it.
  mm(random_tensor({37, 100}), random_tensor({100, 21}, -1, 1, 2), {random_tensor({37, 1}, -1, 1, 3), random_tensor({37, 21}, -1, 1, 4)},
     {"Add x0 x1", "Add t0 x2"}, {"gemm", "splitk_finish"}, 3);
  // The value before the residual read after it: not the residual form, not split.
  mm(random_tensor({37, 100}), random_tensor({100, 21}, -1, 1, 2), {random_tensor({21}, -1, 1, 3), random_tensor({37, 21}, -1, 1, 4)},
     {"Add x0 x1", "Add t0 x2", "Mul t1 t0"}, {"gemm"}, 3);
  // Plain MatMul: no finishing pass.
  FusedCase plain{"MatMul", {random_tensor({9, 64}), random_tensor({64, 11}, -1, 1, 2)}, {}};
  expect_kernels(gpu, plain, {"splitk_zero", "gemm"});
  // Gemm: alpha on the slices, beta * broadcast C with slice 0, transposed A.
  FusedCase gemm{"Gemm", {random_tensor({50, 13}), random_tensor({50, 17}, -1, 1, 2), random_tensor({17}, -1, 1, 3)},
                 {{"alpha", Attribute::of_float(0.75f)}, {"beta", Attribute::of_float(-1.5f)}, {"transA", Attribute::of_int(1)}}};
  expect_kernels(gpu, gemm, {"splitk_zero", "gemm"});
}

// The k-groups forms (gemm_kgroups.cl, forced: "32x32k4", "64x64k2"...):
// groups of work-items share a tile over interleaved K slices. K past several 64-deep
// steps with a ragged end, M and N past a tile, transB, batched with
// broadcast batch dims, in place over a residual, Gemm's alpha, beta and
// transposed A, and a 1x1 convolution; K under 128 keeps the 32x32 tiles.
// Every case for one form of each work-item block (4x4, 8x8, 8x4 in two
// slices); the others, which differ in the count of groups only, the float4
// reads of both layouts (each case is a build: minutes on a cold PoCL).
TEST(FusedKernels, MatMulKGroups) {
  for (const std::string& variant : lower::kgroups_variants()) {
  SCOPED_TRACE(variant);
  const bool every_case = variant == "32x32k2" || variant == "64x64k4" || variant == "32x64k2";
  const lower::KernelChoice gpu = gpu_kernels(variant);
  auto mm = [&](HostTensor a, HostTensor b, std::vector<HostTensor> extra, std::vector<std::string> prog, bool trans_b,
               int over, const std::vector<std::string>& kernels) {
    FusedCase c{"FusedMatMul", {std::move(a), std::move(b)}, {{"program", Attribute::of_strings(std::move(prog))}}, over};
    if (trans_b) c.attrs["transB"] = Attribute::of_int(1);
    for (auto& e : extra) c.inputs.push_back(std::move(e));
    expect_kernels(gpu, c, kernels);
  };
  const std::vector<std::string> kg = {"gemm_kgroups"};
  // A and B read four elements at a time (KG_A4 with KG_B4N or KG_B4K):
  // M, N and K ragged against the tile and the groups' steps.
  mm(random_tensor({37, 260}), random_tensor({260, 44}, -1, 1, 2), {random_tensor({44}, -1, 1, 3)}, kResidualRelu, false,
     -1, kg);
  mm(random_tensor({2, 37, 148}), random_tensor({76, 148}, -1, 1, 2), {random_tensor({76}, -1, 1, 3)}, kResidualRelu,
     true, -1, kg);
  EXPECT_THROW(lower::check_conv_variant(variant + "/s2"), Error);
  if (!every_case) continue;
  // One epilogue throughout (each program is a build).
  mm(random_tensor({70, 200}), random_tensor({200, 45}, -1, 1, 2), {random_tensor({45}, -1, 1, 3)}, kResidualRelu, false, -1,
     kg);
  mm(random_tensor({33, 300}), random_tensor({66, 300}, -1, 1, 2), {random_tensor({33, 66}, -1, 1, 3)}, kResidualRelu, true,
     -1, kg);
  mm(random_tensor({33, 300}), random_tensor({66, 300}, -1, 1, 2), {random_tensor({33, 66}, -1, 1, 3)}, kResidualRelu, true,
     2, kg);
  mm(random_tensor({2, 3, 17, 131}), random_tensor({3, 131, 40}, -1, 1, 2), {random_tensor({1, 3, 1, 40}, -1, 1, 3)},
     kResidualRelu, false, -1, kg);
  mm(random_tensor({20, 64}), random_tensor({64, 20}, -1, 1, 2), {}, {}, false, -1, {"gemm"});
  expect_kernels(gpu, fused_conv({1, 132, 9, 8}, {67, 132, 1, 1}, {}, true, kResidualRelu, 1), kg);
  FusedCase gemm{"Gemm", {random_tensor({150, 13}), random_tensor({150, 37}, -1, 1, 2), random_tensor({37}, -1, 1, 3)},
                 {{"alpha", Attribute::of_float(0.75f)}, {"beta", Attribute::of_float(-1.5f)}, {"transA", Attribute::of_int(1)}}};
  expect_kernels(gpu, gemm, kg);
  expect_kernels(gpu, fused_conv({1, 130, 9, 7}, {67, 130, 1, 1}, {}, true, kResidualRelu, 1), kg);
  }
  EXPECT_THROW(lower::check_conv_variant("64x64k8"), Error);  // 70 KB of local memory
  EXPECT_THROW(lower::check_conv_variant("32x64k8"), Error);  // the form is not offered
  EXPECT_THROW(lower::check_conv_variant("32x64"), Error);    // a tile of the k-groups only
}

// Slices of K 32 and 64 deep (gemm.cl TK, forced: "32x32d64", "64x64vd32"):
// K ragged against the depth and shorter than one slice, M and N past a
// tile, transB, batched with broadcast batch dims, in place over a
// residual, Gemm's transposed A, a 1x1 and a 3x3 convolution (conv2d_gemm
// and its taps baseline), the stride and grouping of a strided conv.
TEST(FusedKernels, DeepSlicesOfK) {
  for (const std::string variant : {"32x32d64", "64x64vd32", "128x64vd32"}) {
    SCOPED_TRACE(variant);
    const lower::KernelChoice gpu = gpu_kernels(variant);
    auto mm = [&](HostTensor a, HostTensor b, std::vector<HostTensor> extra, bool trans_b, int over) {
      FusedCase c{"FusedMatMul", {std::move(a), std::move(b)}, {{"program", Attribute::of_strings(kResidualRelu)}}, over};
      if (trans_b) c.attrs["transB"] = Attribute::of_int(1);
      for (auto& e : extra) c.inputs.push_back(std::move(e));
      expect_kernels(gpu, c, {"gemm"});
    };
    mm(random_tensor({70, 200}), random_tensor({200, 45}, -1, 1, 2), {random_tensor({45}, -1, 1, 3)}, false, -1);
    mm(random_tensor({33, 300}), random_tensor({66, 300}, -1, 1, 2), {random_tensor({33, 66}, -1, 1, 3)}, true, 2);
    mm(random_tensor({9, 7}), random_tensor({7, 150}, -1, 1, 2), {random_tensor({150}, -1, 1, 3)}, false, -1);
    mm(random_tensor({2, 3, 17, 131}), random_tensor({3, 131, 40}, -1, 1, 2), {random_tensor({1, 3, 1, 40}, -1, 1, 3)}, false,
       -1);
    FusedCase gemm{"Gemm", {random_tensor({150, 13}), random_tensor({150, 37}, -1, 1, 2), random_tensor({37}, -1, 1, 3)},
                   {{"alpha", Attribute::of_float(0.75f)}, {"beta", Attribute::of_float(-1.5f)}, {"transA", Attribute::of_int(1)}}};
    expect_kernels(gpu, gemm, {"gemm"});
    expect_kernels(gpu, fused_conv({1, 130, 9, 7}, {67, 130, 1, 1}, {}, true, kResidualRelu, 1), {"gemm"});
    const std::map<std::string, Attribute> pad1 = {{"pads", Attribute::of_ints({1, 1, 1, 1})}};
    expect_kernels(gpu, fused_conv({1, 20, 12, 13}, {70, 20, 3, 3}, pad1, true, kResidualRelu, 1), {"conv2d_gemm"});
    expect_kernels(gpu_kernels(std::string("taps:") + variant), fused_conv({1, 20, 12, 13}, {70, 20, 3, 3}, pad1, true, {}, 0),
                   {"conv2d_gemm_taps"});
    expect_kernels(gpu, fused_conv({2, 12, 15, 11}, {18, 4, 3, 3},
                                   {{"pads", Attribute::of_ints({1, 1, 1, 1})}, {"strides", Attribute::of_ints({2, 2})},
                                    {"group", Attribute::of_int(3)}},
                                   true, {}, 0),
                   {"conv2d_gemm"});
    EXPECT_THROW(lower::check_conv_variant(std::string(variant) + "/s2"), Error);
  }
  EXPECT_THROW(lower::check_conv_variant("32x32d48"), Error);
  EXPECT_THROW(lower::check_conv_variant("128x128vd64"), Error);  // 67 KB of local memory
}

// Tiles under 32 on a side (forced only: "16x16", "16x32", "32x16"): the
// products, split-K, a 1x1 and a 3x3 convolution.
TEST(FusedKernels, NarrowTiles) {
  for (const std::string variant : {"16x16", "16x32", "32x16"}) {
    SCOPED_TRACE(variant);
    const lower::KernelChoice gpu = gpu_kernels(variant);
    FusedCase mm{"FusedMatMul", {random_tensor({33, 300}), random_tensor({66, 300}, -1, 1, 2), random_tensor({33, 66}, -1, 1, 3)},
                 {{"program", Attribute::of_strings(kResidualRelu)}, {"transB", Attribute::of_int(1)}}, 2};
    expect_kernels(gpu, mm, {"gemm"});
    FusedCase split{"FusedMatMul", {random_tensor({37, 100}), random_tensor({100, 21}, -1, 1, 2), random_tensor({21}, -1, 1, 3)},
                    {{"program", Attribute::of_strings({"Add x0 x1", "Relu t0"})}}};
    expect_kernels(gpu_kernels(variant + "/s3"), split, kSplitGemmPasses);
    expect_kernels(gpu, fused_conv({1, 130, 9, 7}, {67, 130, 1, 1}, {}, true, kResidualRelu, 1), {"gemm"});
    expect_kernels(gpu, fused_conv({1, 20, 12, 13}, {70, 20, 3, 3}, {{"pads", Attribute::of_ints({1, 1, 1, 1})}}, true, {}, 0),
                   {"conv2d_gemm"});
  }
}

// `texplan tune` for the GPU kernels: a searching scope times every tile
// variant once and stores the winner; a later scope reads it back.
TEST(FusedKernels, TilesComeFromTheTuningCache) {
  const lower::KernelChoice gpu = gpu_kernels("gpu");
  lower::TuningCache cache;
  FusedCase c = fused_conv({1, 20, 12, 13}, {70, 20, 3, 3}, {{"pads", Attribute::of_ints({1, 1, 1, 1})}}, true, kResidualRelu, 1);
  {
    lower::TuningScope scope(&cache, true, *test_device());
    expect_matches_reference(gpu, c);
    EXPECT_EQ(scope.stats().searched, 1);
  }
  nlohmann::json& entry = cache.entry("texplan", lower::tuning_device_key(test_device()->info()));
  bool found = false;
  for (auto& [key, value] : entry.items())
    if (key.rfind("conv2d_gemm ", 0) == 0) {
      found = true;
      // Every tile variant unsplit (less the taps: and /split names), and
      // split-K ("TILES/sN") for tiles whose grid is small against the
      // compute units: here 128x128 (2 work-groups) on 2 or more.
      size_t tiles = 0, measured = 0, splits = 0;
      for (const std::string& v : lower::conv_tile_variants())
        if (v.find(':') == std::string::npos && v.find('/') == std::string::npos)
          ++tiles, measured += value["ms"].contains(v);
      for (auto& [name, ms] : value["ms"].items()) splits += name.find("/s") != std::string::npos;
      EXPECT_EQ(measured, tiles) << value.dump();
      EXPECT_EQ(value["ms"].size(), tiles + splits);
      if (test_device()->info().compute_units >= 2) {
        EXPECT_TRUE(value["ms"].contains("128x128/s2")) << value.dump();
        EXPECT_NE(key.find(" splitk"), std::string::npos) << key;
      }
    }
  EXPECT_TRUE(found) << entry.dump();
  lower::TuningScope scope(&cache, false, *test_device());
  expect_matches_reference(gpu, c);
  EXPECT_EQ(scope.stats().cached, 1);
  EXPECT_EQ(scope.stats().searched, 0);
}

// The lowerings chosen for the test device (on PoCL: lower/opencl_cpu's kernels).
TEST(FusedKernels, ChosenPathsOfTheDevice) {
  expect_matches_reference(fused_conv({1, 20, 12, 13}, {70, 20, 3, 3}, {{"pads", Attribute::of_ints({1, 1, 1, 1})}}, true, kResidualRelu, 1));
  expect_matches_reference(fused_conv({1, 33, 17, 9}, {130, 33, 1, 1}, {}, true, kSiLU, 0));
  expect_matches_reference(fused_conv({2, 6, 9, 10}, {6, 1, 3, 3}, {{"group", Attribute::of_int(6)}, {"pads", Attribute::of_ints({1, 1, 1, 1})}}, true,
                                      {"Clip x0 0 6"}, 0));
  FusedCase in_place = fused_conv({1, 3, 9, 11}, {5, 3, 3, 3}, {{"pads", Attribute::of_ints({1, 1, 1, 1})}}, true, kResidualRelu, 1);
  in_place.output_over = 3;
  expect_matches_reference(in_place);
}

// The fused ops through a Session (registered lowerings, no CPU fallback).
TEST(FusedKernels, SessionRunsFusedNodesOnKernels) {
  Graph g;
  g.model_name = "fused_session";
  g.opset = 17;
  auto add = [&](std::string name, Shape s, bool input) {
    Tensor t;
    t.name = std::move(name);
    t.shape = std::move(s);
    t.is_input = input;
    int id = g.add_tensor(t);
    if (input) g.inputs.push_back(id);
    return id;
  };
  HostTensor x = random_tensor({1, 4, 6, 6}), r = random_tensor({1, 8, 6, 6}, -1, 1, 2);
  Tensor w;
  w.name = "w";
  w.shape = {8, 4, 3, 3};
  w.is_constant = w.has_data = true;
  w.value = random_tensor(w.shape, -1, 1, 3);
  int xi = add("x", x.shape, true), ri = add("r", r.shape, true), wi = g.add_tensor(w);
  int yi = add("y", r.shape, false), zi = add("z", r.shape, false);
  g.tensors[size_t(zi)].is_output = true;
  Node conv;
  conv.name = "conv";
  conv.op_type = "FusedConv";
  conv.inputs = {xi, wi, -1, ri};
  conv.outputs = {yi};
  conv.attrs = {{"pads", Attribute::of_ints({1, 1, 1, 1})}, {"program", Attribute::of_strings(kResidualRelu)}};
  g.tensors[size_t(yi)].producer = 0;
  Node ew;
  ew.name = "ew";
  ew.op_type = "FusedElementwise";
  ew.inputs = {yi};
  ew.outputs = {zi};
  ew.attrs = {{"program", Attribute::of_strings(kSiLU)}};
  g.tensors[size_t(zi)].producer = 1;
  g.nodes = {conv, ew};
  g.outputs = {zi};

  PlanInput pin = make_usage_records(g);
  plan::MemoryPlan plan = plan::plan_memory(pin.records, test_device()->info().profile, "best");
  runtime::Session s(g, pin, plan, test_device());
  EXPECT_TRUE(s.fallback_nodes().empty());
  std::vector<HostTensor> out = s.run({x, r});
  HostTensor y = reference::evaluate(conv, {&x, &w.value, nullptr, &r})[0];
  HostTensor z = reference::evaluate(ew, {&y})[0];
  ASSERT_EQ(out.size(), 1u);
  EXPECT_LE(rel_error(out[0], z), 1e-4);
}

// The GEMM time model's choices on an H200's 132 compute units, for shapes
// texplan_conv_bench measured there (docs/kernel-choices.md#the-gemm-time-model):
// k-groups where K is long against a grid of few tiles (32x64 tiles for
// transformers' projections and MLPs, ViT-B/16's fc2 included, which split-K
// took before), the 32x32 tiles for the small products, and tiles under 32
// on a side where a 32x32 grid leaves compute units idle.
TEST(FusedKernels, GemmVariantByMeasuredTimes) {
  EXPECT_EQ(lower::gemm_variant_by_shape(197, 2304, 768, 1, 132, true, true, true), "32x64k4");  // ViT qkv
  EXPECT_EQ(lower::gemm_variant_by_shape(196, 1536, 384, 1, 132, true, true, true), "32x64k4");  // Swin-T fc1
  EXPECT_EQ(lower::gemm_variant_by_shape(64, 3136, 256, 1, 132, true, true, false), "32x64k4");  // ResNet-50 1x1 256->64 at 56
  EXPECT_EQ(lower::gemm_variant_by_shape(128, 784, 512, 1, 132, true, true, false), "32x32k4");  // DenseNet 1x1 512->128 at 28
  EXPECT_EQ(lower::gemm_variant_by_shape(96, 12544, 16, 1, 132, true, false, false), "32x32");   // 1x1 16->96 at 112
  EXPECT_EQ(lower::gemm_variant_by_shape(197, 768, 3072, 1, 132, true, true, true), "32x64k4");  // ViT fc2
  // The narrow tiles where a 32x32 grid is one small wave and K short, for
  // products only: 1x1 convs keep to the others.
  EXPECT_EQ(lower::gemm_variant_by_shape(128, 256, 256, 1, 132, true, true, true), "16x16");  // BERT-mini's attention output
  EXPECT_EQ(lower::gemm_variant_by_shape(32, 784, 192, 1, 132, true, true, true), "16x16");   // as a product
  EXPECT_EQ(lower::gemm_variant_by_shape(32, 784, 192, 1, 132, true, true, false), "32x32k8");  // 1x1 192->32 at 28
  // Without k-groups or split-K, tiles only.
  EXPECT_EQ(lower::gemm_variant_by_shape(197, 2304, 768, 1, 132, false, false, true).find_first_of("k/"), std::string::npos);
}

// The model against the measurements it was fitted to
// (bench/data/gemm_times_h200.json, scripts/fit_gemm_times.py): its
// choices among each shape's measured variants sum to what
// docs/kernel-choices.md#the-gemm-time-model says (778 us over 40 shapes,
// the narrow tiles for products only, against 894 us for the build
// measured, whose model had neither the narrow tiles nor the 32x64
// k-groups, and 732 for the best of each), and no choice is more than 1.5x
// its shape's best.
TEST(FusedKernels, GemmTimeModelAgainstItsMeasurements) {
  std::ifstream in(std::string(TEXPLAN_SOURCE_DIR) + "/bench/data/gemm_times_h200.json");
  ASSERT_TRUE(in) << "bench/data/gemm_times_h200.json";
  const nlohmann::json data = nlohmann::json::parse(in);
  double chosen = 0, before = 0, best = 0;
  int shapes = 0;
  for (const nlohmann::json& s : data.at("shapes")) {
    const int64_t M = s.at("M"), N = s.at("N"), K = s.at("K");
    const nlohmann::json& us = s.at("us");
    std::vector<std::string> measured;
    for (const auto& [name, t] : us.items()) measured.push_back(name);
    const bool product = s.at("shape").get<std::string>().rfind("product", 0) == 0;
    const std::string v = lower::gemm_variant_by_shape(M, N, K, 1, 132, true, K >= 128, product, &measured);
    SCOPED_TRACE(s.at("shape").get<std::string>() + ": " + v);
    ASSERT_TRUE(us.contains(v));
    double least = INFINITY;
    for (const auto& [name, t] : us.items())
      if (name != "auto") least = std::min(least, t.get<double>());
    EXPECT_LE(us.at(v).get<double>(), 1.5 * least);
    chosen += us.at(v).get<double>(), before += us.at("auto").get<double>(), best += least, ++shapes;
  }
  EXPECT_EQ(shapes, 40);
  EXPECT_NEAR(chosen, 778, 1);
  EXPECT_NEAR(before, 894, 1);
  EXPECT_NEAR(best, 732, 1);
}
