// The CPU-device forms of data movement, Softmax, reductions, LayerNorm,
// Gather and scalar binaries (copy_runs / transpose_tiles in shape.cl,
// reduce.cl's and norm.cl's *_cpu kernels) on PoCL (TEXPLAN_TEST_DEVICE:
// another device, whose kernels then run) against the CPU reference, on odd
// shapes: sizes off the 16-wide vectors, negative axes, Slice steps
// (negative too), 1-element dims, several outputs. Each case also runs with
// the GPU kernels named (KernelChoice::conv "gpu"), so both forms stay correct.
#include <gtest/gtest.h>

#include "lower/ops.h"
#include "optimize/usage.h"
#include "plan/memory_plan.h"
#include "reference/reference_ops.h"
#include "runtime/session.h"
#include "test_util.h"

using namespace texplan;
using test::random_tensor;
using test::rel_error;

namespace {

HostTensor ints(std::vector<int64_t> v) {
  HostTensor t(DataType::Int64, {int64_t(v.size())});
  std::copy(v.begin(), v.end(), t.data<int64_t>());
  return t;
}

// One node: input 0 fed (float, of `shape`), the others constants with the
// values given; `outputs` outputs.
struct Case {
  std::string op;
  Shape shape;
  std::vector<HostTensor> constants;
  std::map<std::string, Attribute> attrs;
  int outputs = 1;
};

// Runs `c` on the test device and on the reference; each output's relative error.
void expect_matches(const Case& c) {
  SCOPED_TRACE(c.op + " " + to_string(c.shape));
  Graph g;
  g.model_name = "cpu_shape_" + c.op;
  g.opset = 13;
  Node n;
  n.name = c.op;
  n.op_type = c.op;
  n.attrs = c.attrs;
  const HostTensor x = random_tensor(c.shape, -3, 3, 5);
  std::vector<const HostTensor*> ref = {&x};
  Tensor in;
  in.name = "x";
  in.shape = c.shape;
  in.is_input = true;
  n.inputs.push_back(g.add_tensor(in));
  g.inputs = {n.inputs[0]};
  for (size_t i = 0; i < c.constants.size(); ++i) {
    Tensor t;
    t.name = "c" + std::to_string(i);
    t.dtype = c.constants[i].dtype;
    t.shape = c.constants[i].shape;
    t.is_constant = t.has_data = true;
    t.value = c.constants[i];
    n.inputs.push_back(g.add_tensor(t));
    ref.push_back(&c.constants[i]);
  }
  n.outputs.assign(size_t(c.outputs), 0);
  const std::vector<HostTensor> want = reference::evaluate(n, ref);
  n.outputs.clear();
  for (int k = 0; k < c.outputs; ++k) {
    Tensor y;
    y.name = "y" + std::to_string(k);
    y.dtype = want.at(size_t(k)).dtype;
    y.shape = want[size_t(k)].shape;
    y.is_output = true;
    y.producer = 0;
    n.outputs.push_back(g.add_tensor(y));
  }
  g.outputs = n.outputs;
  g.nodes.push_back(n);
  for (const char* variant : {"", "gpu"}) {
    SCOPED_TRACE(*variant ? "GPU kernels named" : "CPU kernels");
    PlanInput pin = make_usage_records(g);
    auto dev = test::test_device();
    plan::MemoryPlan plan = plan::plan_memory(pin.records, dev->info().profile, "best");
    runtime::Session s(g, pin, plan, dev, {.kernel_choice = {.conv = variant}});
    EXPECT_TRUE(s.fallback_nodes().empty());
    const std::vector<HostTensor> got = s.run({x});
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k) {
      ASSERT_EQ(got[k].shape, want[k].shape);
      EXPECT_LE(rel_error(got[k], want[k]), 1e-6) << "output " << k;
    }
  }
}

Attribute perm(std::vector<int64_t> p) { return Attribute::of_ints(std::move(p)); }

}  // namespace

TEST(CpuShapeOps, Transposes) {
  // bert's head split (runs of 64), its K transpose (a 2-D tile transpose
  // of 133x37: tails in both tile dims), shufflenet's channel shuffle (runs
  // of a whole 7x9 plane), a full reversal (no run: tiles over two dims
  // with the rest outer), 1-element dims, a transpose of dims under 4.
  expect_matches({"Transpose", {129, 4, 64}, {}, {{"perm", perm({1, 0, 2})}}});
  expect_matches({"Transpose", {133, 1, 37}, {}, {{"perm", perm({1, 2, 0})}}});
  expect_matches({"Transpose", {1, 2, 29, 7, 9}, {}, {{"perm", perm({0, 2, 1, 3, 4})}}});
  expect_matches({"Transpose", {3, 5, 17, 19}, {}, {}});
  expect_matches({"Transpose", {1, 20, 1, 33}, {}, {{"perm", perm({3, 1, 2, 0})}}});
  expect_matches({"Transpose", {2, 3, 300}, {}, {{"perm", perm({2, 0, 1})}}});
  expect_matches({"Transpose", {5, 1}, {}, {{"perm", perm({1, 0})}}});
}

TEST(CpuShapeOps, Slices) {
  // A channel split (one flat run), the last axis with a negative index, a
  // step of 2 and a negative step on the last axis (no run), steps on an
  // outer axis (runs), a slice of a 1-element dim.
  expect_matches({"Slice", {1, 116, 7, 9}, {ints({0}), ints({58}), ints({1})}});
  expect_matches({"Slice", {128, 1, 771}, {ints({-514}), ints({-257}), ints({-1})}});
  expect_matches({"Slice", {6, 37}, {ints({1}), ints({37}), ints({-1}), ints({2})}});
  expect_matches({"Slice", {6, 37}, {ints({-2}), ints({-40}), ints({1}), ints({-3})}});
  expect_matches({"Slice", {9, 5, 40}, {ints({8, 1}), ints({0, 5}), ints({0, -2}), ints({-3, 1})}});
  expect_matches({"Slice", {1, 3, 18}, {ints({0}), ints({1}), ints({0})}});
}

TEST(CpuShapeOps, ConcatSplitExpandTileGather) {
  expect_matches({"Concat", {2, 3, 17}, {random_tensor({2, 5, 17}, -1, 1, 3)}, {{"axis", Attribute::of_int(-2)}}});
  expect_matches({"Split", {3, 50, 7}, {ints({13, 37})}, {{"axis", Attribute::of_int(1)}}, 2});
  expect_matches({"Expand", {3, 1, 5}, {ints({2, 3, 4, 5})}});
  expect_matches({"Tile", {3, 21}, {ints({2, 3})}});
  // Embedding-style rows (inner 35 and 256, indices negative too) and a scalar index.
  HostTensor idx = ints({3, -1, 0, 7, 2});
  expect_matches({"Gather", {9, 35}, {idx}, {}});
  expect_matches({"Gather", {2, 8, 256}, {idx}, {{"axis", Attribute::of_int(1)}}});
  HostTensor one(DataType::Int64, {});
  one.data<int64_t>()[0] = 4;
  expect_matches({"Gather", {1, 6, 40}, {one}, {{"axis", Attribute::of_int(1)}}});
}

// Pad on CPU devices runs a row of the last dim per work-item (pad_rows_f32):
// rows wholly padding (pads on outer dims), borders on both sides, reflect
// and edge through outer dims, a row shorter than its pads.
TEST(CpuShapeOps, PadRows) {
  HostTensor value(DataType::Float32, {});
  value.data<float>()[0] = 0.5f;
  auto pad = [&](Shape shape, std::vector<int64_t> pads, const char* mode) {
    expect_matches({"Pad", shape, {ints(pads), value}, {{"mode", Attribute::of_string(mode)}}});
  };
  pad({1, 3, 11, 13}, {0, 1, 2, 0, 0, 0, 1, 3}, "constant");
  pad({2, 3, 9, 12}, {0, 0, 2, 3, 0, 0, 1, 2}, "reflect");
  pad({1, 2, 5, 20}, {1, 0, 0, 4, 0, 1, 3, 0}, "edge");
  pad({4, 7, 30}, {0, 0, 9, 0, 2, 17}, "constant");
  pad({3, 10}, {1, 12, 0, 1}, "constant");
  pad({2, 4, 9}, {0, 2, 3, 1, 1, 5}, "reflect");
}

// Constant pads on one axis with only 1s before it (a clip padded with
// frames) move X as one run (pad_flat_f32): both ends, one end, runs off
// the 16-element blocks, the padding value; and one where a dim before the
// padded axis is not 1 (the general kernel).
TEST(CpuShapeOps, PadOneAxisAsARun) {
  HostTensor value(DataType::Float32, {});
  value.data<float>()[0] = -0.5f;
  auto pad = [&](Shape shape, std::vector<int64_t> pads) { expect_matches({"Pad", shape, {ints(pads), value}}); };
  pad({1, 5, 3, 6, 7}, {0, 1, 0, 0, 0, 0, 1, 0, 0, 0});
  pad({1, 1, 4, 33}, {0, 0, 3, 0, 0, 0, 0, 0});
  pad({7, 13}, {2, 0, 5, 0});
  pad({1, 2, 5}, {0, 0, 0, 0, 0, 17});
  pad({2, 5, 3, 4}, {0, 1, 0, 0, 0, 2, 0, 0});
}

TEST(CpuShapeOps, SoftmaxAndReductions) {
  // Rows of 128 (bert's attention), 37 (a tail only) and 1; LogSoftmax; a
  // softmax over a middle axis (the strided kernel).
  expect_matches({"Softmax", {4, 9, 128}, {}, {{"axis", Attribute::of_int(-1)}}});
  expect_matches({"Softmax", {5, 37}, {}, {}});
  expect_matches({"Softmax", {6, 1}, {}, {}});
  expect_matches({"LogSoftmax", {3, 53}, {}, {{"axis", Attribute::of_int(1)}}});
  expect_matches({"Softmax", {3, 7, 5}, {}, {{"axis", Attribute::of_int(1)}}});
  // Contiguous rows of 49 (shufflenet's spatial mean), 256 and 3, every op;
  // long rows, whose GPU groups grow past 64 items (3136: 256 items, 12
  // elements each), and 1003 (64 items, four loads in flight and a tail).
  for (const char* op : {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin"}) {
    expect_matches({op, {1, 24, 7, 7}, {}, {{"axes", perm({2, 3})}, {"keepdims", Attribute::of_int(0)}}});
    expect_matches({op, {1, 13, 256}, {}, {{"axes", perm({-1})}}});
    expect_matches({op, {11, 3}, {}, {{"axes", perm({1})}}});
    expect_matches({op, {2, 3, 56, 56}, {}, {{"axes", perm({2, 3})}}});
    expect_matches({op, {5, 1003}, {}, {{"axes", perm({-1})}}});
  }
  expect_matches({"GlobalMaxPool", {1, 19, 5, 7}, {}, {}});
  // EfficientNet-B0's first squeeze: rows of 12544, 1024 items a group.
  expect_matches({"GlobalAveragePool", {1, 3, 112, 112}, {}, {}});
  expect_matches({"GlobalMaxPool", {1, 2, 112, 112}, {}, {}});
}

// MaxPool's CPU kernels. Three-row windows, strides 1 and 2, undilated
// (max_pool2d_planes: blocks of 16 or 8 inside columns walking down the
// plane, the last block overlapping the one before, the other columns one
// at a time): SqueezeNet's 3x3/2 with ceil_mode, ShuffleNet's padded 3x3/2,
// GoogLeNet's 3x3/1 and 3x3/2 with ceil_mode, rows of 7 (no block), 12 (8s)
// and 23 (16s), a 3x5 window, strides 1x2 and 2x1, a window past the last
// row. The rest (max_pool2d_rows): 2x2/2, 5x5/3 and dilated windows.
TEST(CpuShapeOps, MaxPoolRows) {
  auto pool = [](std::vector<int64_t> k, std::vector<int64_t> s, std::vector<int64_t> pads, int ceil = 0,
                 std::vector<int64_t> d = {1, 1}) {
    return std::map<std::string, Attribute>{{"kernel_shape", perm(k)}, {"strides", perm(s)}, {"pads", perm(pads)},
                                            {"ceil_mode", Attribute::of_int(ceil)}, {"dilations", perm(d)}};
  };
  expect_matches({"MaxPool", {1, 5, 111, 111}, {}, pool({3, 3}, {2, 2}, {0, 0, 0, 0}, 1)});
  expect_matches({"MaxPool", {2, 3, 40, 67}, {}, pool({3, 3}, {2, 2}, {1, 1, 1, 1})});
  expect_matches({"MaxPool", {1, 6, 14, 14}, {}, pool({3, 3}, {1, 1}, {1, 1, 1, 1}, 1)});
  expect_matches({"MaxPool", {1, 3, 112, 112}, {}, pool({3, 3}, {2, 2}, {0, 0, 0, 0}, 1)});
  expect_matches({"MaxPool", {2, 3, 7, 7}, {}, pool({3, 3}, {1, 1}, {1, 1, 1, 1})});
  expect_matches({"MaxPool", {1, 3, 12, 12}, {}, pool({3, 3}, {1, 1}, {1, 1, 1, 1})});
  expect_matches({"MaxPool", {1, 3, 23, 23}, {}, pool({3, 3}, {1, 1}, {0, 0, 0, 0})});
  expect_matches({"MaxPool", {1, 3, 17, 30}, {}, pool({3, 5}, {1, 1}, {1, 2, 1, 2})});
  expect_matches({"MaxPool", {1, 3, 17, 40}, {}, pool({3, 3}, {1, 2}, {0, 1, 0, 1})});
  expect_matches({"MaxPool", {1, 3, 18, 21}, {}, pool({3, 3}, {2, 1}, {1, 0, 0, 0}, 1)});
  expect_matches({"MaxPool", {1, 4, 12, 64}, {}, pool({2, 2}, {2, 2}, {0, 0, 0, 0})});
  expect_matches({"MaxPool", {1, 3, 9, 50}, {}, pool({3, 3}, {1, 1}, {1, 1, 1, 1})});
  expect_matches({"MaxPool", {1, 2, 20, 90}, {}, pool({5, 5}, {3, 3}, {2, 2, 2, 2})});
  expect_matches({"MaxPool", {1, 2, 20, 61}, {}, pool({3, 3}, {1, 2}, {0, 2, 0, 2}, 0, {2, 1})});
  expect_matches({"MaxPool", {1, 2, 20, 61}, {}, pool({3, 3}, {1, 1}, {0, 2, 0, 2}, 0, {1, 2})});
}

// Resize by rows on CPU devices (resize_rows_cpu) and by element (resize_f32):
// a segmentation head's 8x bilinear upsample, nearest with integer and
// fractional scales, a bilinear downsample (align_corners: test_runtime.cpp,
// whose tolerance takes its coordinates' float rounding).
TEST(CpuShapeOps, Resize) {
  const HostTensor roi(DataType::Float32, {0});
  auto scales = [](float h, float w) {
    HostTensor s(DataType::Float32, {4});
    float* v = s.data<float>();
    v[0] = v[1] = 1.0f, v[2] = h, v[3] = w;
    return s;
  };
  auto attrs = [](const char* mode, const char* coord) {
    return std::map<std::string, Attribute>{{"mode", Attribute::of_string(mode)},
                                            {"coordinate_transformation_mode", Attribute::of_string(coord)}};
  };
  expect_matches({"Resize", {1, 3, 28, 28}, {roi, scales(8, 8)}, attrs("linear", "half_pixel")});
  expect_matches({"Resize", {1, 2, 7, 9}, {roi, scales(2, 3)}, attrs("nearest", "asymmetric")});
  expect_matches({"Resize", {1, 2, 7, 9}, {roi, scales(1.5f, 2.5f)}, attrs("nearest", "half_pixel")});
  expect_matches({"Resize", {2, 3, 20, 30}, {roi, scales(0.5f, 0.5f)}, attrs("linear", "asymmetric")});
  expect_matches({"Resize", {1, 4, 5, 6}, {roi, scales(3, 2)}, attrs("linear", "pytorch_half_pixel")});
}

TEST(CpuShapeOps, LayerNormAndScalarBinary) {
  // Rows of 256 and of 35 (a tail only), with and without bias.
  expect_matches({"LayerNormalization", {1, 7, 256}, {random_tensor({256}, -1, 1, 8), random_tensor({256}, -1, 1, 9)},
                  {{"epsilon", Attribute::of_float(1e-5f)}}});
  expect_matches({"LayerNormalization", {10, 35}, {random_tensor({35}, -1, 1, 8)}, {{"axis", Attribute::of_int(-1)}}});
  HostTensor eight(DataType::Float32, {});
  eight.data<float>()[0] = 8.0f;
  expect_matches({"Div", {4, 13, 64}, {eight}});
  expect_matches({"Sub", {37}, {eight}});
}
