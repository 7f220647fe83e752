// The GEMM family on CPU devices (lower/opencl_cpu/conv_gemm.cpp, src/kernels/cpu_gemm.cl)
// on PoCL against the CPU reference: register blocks cut by M and N (the
// last block moved back inside), M = 1 and N = 1 as matrix-vector products
// (K not a multiple of the vector), transposed constant B packed once,
// constant B whose rows alias in the caches packed one line longer,
// transposed B that is computed (gathered), batched and broadcast MatMul,
// 1x1 convolutions as GEMMs (groups, batch, one pixel), fused epilogues,
// and every register block the tuner may pick.
#include <gtest/gtest.h>

#include "lower/opencl_cpu/common.h"
#include "one_node.h"
#include "optimize/usage.h"
#include "plan/memory_plan.h"
#include "reference/reference_ops.h"
#include "runtime/session.h"
#include "test_util.h"

using namespace texplan;
using test::random_tensor;
using test::rel_error;

namespace {

std::shared_ptr<runtime::Device> pocl() { return runtime::open_device("pocl"); }

// One node; `fed` inputs are graph inputs, the others constants (weights).
using Case = test::NodeCase;

struct Result {
  HostTensor got, want;
  int64_t weight_bytes = 0;
};

// `block`: the register block named (KernelChoice::cpu; "": by shape).
// Named blocks check their indexing, built unoptimized (PoCL generates code
// for an optimized stem block in 10-20 s); the choice by shape runs as users
// get it.
Result run(const Case& c, const std::string& block = "") {
  const test::OneNode n = test::one_node(c, "cpu_gemm_" + c.op, 13, 31);
  const test::OneNodeRun r =
      test::run_one_node(n, pocl(), {.kernel_choice = {.cpu = block, .unoptimized_programs = !block.empty()}});
  return {r.got, n.want, r.weight_bytes};
}

void expect_matches(const Case& c, const std::string& what, const std::string& block = "") {
  const Result r = run(c, block);
  ASSERT_EQ(r.got.shape, r.want.shape) << what;
  EXPECT_LE(rel_error(r.got, r.want), 1e-5) << what;
}

const Attribute on = Attribute::of_int(1);

}  // namespace

TEST(CpuGemm, OddShapesCutEveryBlock) {
  // M, N, K prime: the last row and column blocks are moved back inside.
  expect_matches({"Gemm", {{13, 37}, {37, 29}, {29}}, {}, {true}}, "13x37x29 + bias");
  expect_matches({"Gemm", {{53, 11}, {11, 71}}, {}, {true}}, "53x11x71");
  // Fewer columns than a vector (B gathered, columns clamped) and than rows.
  expect_matches({"Gemm", {{40, 9}, {9, 5}, {40, 1}}, {}, {true}}, "N=5, C per row");
  // transA (A read down its columns), alpha and beta, a full C.
  expect_matches({"Gemm", {{19, 23}, {19, 33}, {23, 33}},
                  {{"transA", on}, {"alpha", Attribute::of_float(0.5f)}, {"beta", Attribute::of_float(-2.0f)}}, {true}},
                 "transA alpha beta");
}

TEST(CpuGemm, TransposedBConstantPackedComputedGathered) {
  // Constant [N, K] weights (BERT's Gemm): packed once as [K, N]; the copy
  // counts in the session's weights, and replaces the original (which the
  // lowering uploaded, but no launch reads: the session releases it).
  const Case packed{"Gemm", {{21, 40}, {35, 40}, {35}}, {{"transB", on}}, {true}};
  const Result r = run(packed);
  EXPECT_LE(rel_error(r.got, r.want), 1e-5);
  EXPECT_EQ(r.weight_bytes, int64_t(35 * 40 + 35) * 4) << "the packed copy and the bias, only";
  // The same with B fed (computed): gathered, nothing packed.
  expect_matches({"Gemm", {{21, 40}, {35, 40}, {35}}, {{"transB", on}}, {true, true}}, "transB fed");
  expect_matches({"FusedMatMul", {{2, 9, 24}, {17, 24}}, {{"transB", on}, {"program", Attribute::of_strings({"Relu x0"})}}, {true}},
                 "FusedMatMul transB batched A");
}

TEST(CpuGemm, WeightRowsThatAliasRepackedOneLineLonger) {
  // Constant B [160, 512]: rows of 32 cache lines, 5 of the 160 in each set
  // of a 1024-set cache, repacked 528 floats apart (the padding counts in the
  // weights; the original is released).
  const Case rows{"MatMul", {{37, 160}, {160, 512}}, {}, {true}};
  const Result r = run(rows);
  ASSERT_EQ(r.got.shape, r.want.shape);
  EXPECT_LE(rel_error(r.got, r.want), 1e-5);
  EXPECT_EQ(r.weight_bytes, int64_t(160 * 528) * 4) << "only the repacked copy";
  // Transposed [1024, 80] weights: packed as [80, 1024] rows 1040 apart.
  const Case packed{"Gemm", {{21, 80}, {1024, 80}, {1024}}, {{"transB", on}}, {true}};
  const Result t = run(packed);
  EXPECT_LE(rel_error(t.got, t.want), 1e-5);
  EXPECT_EQ(t.weight_bytes, int64_t(80 * 1040 + 1024) * 4) << "the repacked copy and the bias";
  // Too few rows to share a set 5 times (24 of 512 floats), or rows that
  // start at varying offsets in their lines (500 floats): as they are.
  for (const int64_t n : {int64_t(512), int64_t(500)}) {
    const Result u = run({"MatMul", {{37, 24}, {24, n}}, {}, {true}});
    EXPECT_LE(rel_error(u.got, u.want), 1e-5) << n;
    EXPECT_EQ(u.weight_bytes, 24 * n * 4) << n;
  }
  // Every register block over the padded rows, the last column block moved back inside.
  for (const char* block : {"8x16x3", "4x16x2", "1x8"})
    expect_matches({"MatMul", {{13, 80}, {80, 1024}}, {}, {true}}, std::string("K=80 N=1024 ") + block, block);
}

TEST(CpuGemm, MatrixVectorProducts) {
  // M = 1 with transB (FC layers): rows of B dotted with A, K cut by the
  // vector (37, 300) or shorter than it, C per column.
  expect_matches({"Gemm", {{1, 300}, {77, 300}, {77}}, {{"transB", on}}, {true}}, "M=1 transB K=300");
  expect_matches({"Gemm", {{1, 37}, {2, 37}, {2}}, {{"transB", on}}, {true}}, "M=1 N=2 K=37");
  expect_matches({"Gemm", {{1, 20}, {5, 20}}, {{"transB", on}}, {true, true}}, "M=1 transB fed");
  // M = 1 without transB: one row block over B's contiguous rows.
  expect_matches({"Gemm", {{1, 50}, {50, 90}, {90}}, {}, {true}}, "M=1");
  // N = 1: rows of A dotted with B's column.
  expect_matches({"Gemm", {{30, 45}, {45, 1}}, {}, {true}}, "N=1");
  // alpha and beta on the matrix-vector form.
  expect_matches({"Gemm", {{1, 64}, {10, 64}, {10}},
                  {{"transB", on}, {"alpha", Attribute::of_float(2.0f)}, {"beta", Attribute::of_float(0.25f)}}, {true}},
                 "M=1 alpha beta");
}

TEST(CpuGemm, BatchedMatMul) {
  // Attention's shapes in small: per-head products, both operands computed.
  expect_matches({"MatMul", {{3, 17, 20}, {3, 20, 33}}, {}, {true, true}}, "batched");
  expect_matches({"MatMul", {{2, 3, 7, 20}, {2, 1, 20, 18}}, {}, {true, true}}, "broadcast batch of B");
  // Constant B shared by the batch: one tall GEMM.
  expect_matches({"MatMul", {{2, 3, 7, 20}, {20, 18}}, {}, {true}}, "shared B");
  // A row vector times a batch.
  expect_matches({"MatMul", {{40}, {3, 40, 21}}, {}, {true, true}}, "1-D A");
}

TEST(CpuGemm, FusedEpilogues) {
  // Bias then Gelu on the vectors (BERT's FFN), cut rows and columns.
  expect_matches({"FusedMatMul", {{2, 19, 33}, {33, 40}, {40}}, {{"program", Attribute::of_strings({"Add x0 x1", "Gelu t0"})}}, {true}},
                 "bias gelu");
  // Erf on the vectors (epi_v_erf: a polynomial below 0.93, 1 - exp above)
  // over both ranges, tails to 1 and NaN-free large inputs.
  expect_matches({"FusedMatMul", {{2, 19, 33}, {33, 40}, {40}}, {{"program", Attribute::of_strings({"Add x0 x1", "Mul t0 3", "Erf t1"})}}, {true}},
                 "bias erf");
  // A full-shape residual (scalar stores of moved blocks read it by index).
  expect_matches({"FusedMatMul", {{13, 24}, {24, 37}, {13, 37}}, {{"program", Attribute::of_strings({"Add x0 x1", "Relu t0"})}},
                  {true, false, true}},
                 "residual relu");
  // A matrix-vector product with an epilogue.
  expect_matches({"FusedMatMul", {{1, 48}, {48, 1}, {1}}, {{"program", Attribute::of_strings({"Add x0 x1", "Sigmoid t0"})}}, {true}},
                 "N=1 epilogue");
}

TEST(CpuGemm, PointwiseConvolutions) {
  // OC and pixels cut (13 -> 21 channels over 7x7), bias.
  expect_matches({"Conv", {{1, 13, 7, 7}, {21, 13, 1, 1}, {21}}, {}}, "1x1 7x7");
  // Groups and a batch of 2, no bias.
  expect_matches({"Conv", {{2, 12, 9, 10}, {18, 6, 1, 1}}, {{"group", Attribute::of_int(2)}}}, "1x1 grouped batch 2");
  // Squeeze-excitation: one pixel (a matrix-vector product), fused Sigmoid.
  expect_matches({"FusedConv", {{1, 40, 1, 1}, {24, 40, 1, 1}, {24}}, {{"program", Attribute::of_strings({"Sigmoid x0"})}}},
                 "1x1 one pixel");
  expect_matches({"Conv", {{2, 20, 1, 1}, {30, 20, 1, 1}, {30}}, {}}, "1x1 one pixel batch 2");
  // Residual and ReLU6 (MobileNet), 1-D.
  expect_matches({"FusedConv", {{1, 24, 14, 14}, {24, 24, 1, 1}, {24}, {1, 24, 14, 14}},
                  {{"program", Attribute::of_strings({"Add x0 x1", "Clip t0 0 6"})}}, {true, false, false, true}},
                 "1x1 residual");
  expect_matches({"Conv", {{1, 8, 50}, {16, 8, 1}, {16}}, {}}, "1-D 1x1");
  // Padding or stride: not a GEMM, the direct kernel runs it.
  expect_matches({"Conv", {{1, 8, 9, 9}, {16, 8, 1, 1}}, {{"strides", Attribute::of_ints({2, 2})}}}, "1x1 stride 2");
}

TEST(CpuGemm, EveryRegisterBlock) {
  // 13 x 45 x 19 cuts every block's rows and columns; each block the
  // tuner may pick computes the reference.
  const Case c{"Gemm", {{13, 19}, {19, 45}, {45}}, {}, {true}};
  std::vector<std::string> names;
  for (const lower::CpuVariant& v :
       lower::cpu_gemm_candidates(13, 45, 1, pocl()->info().native_float_width))
    names.push_back(v.name());
  ASSERT_GE(names.size(), 8u);
  for (const std::string& name : names) expect_matches(c, name, name);
  EXPECT_THROW(run(c, "no-such-block"), Error);
}

// The shape rule sizes the register block by the device's SIMD width:
// 16-float registers (AVX-512) take 8 rows of two 16-wide vectors; 8-float
// ones (AVX2, 16 registers) no block past 12 accumulator registers, 6x16 on
// large shapes.
TEST(CpuGemm, ShapeRuleFitsTheRegisterFile) {
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{128, 1024}, {512, 784}, {1000, 169}, {16, 3025}}) {
    SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols));
    const lower::CpuVariant avx2 = lower::cpu_gemm_candidates(rows, cols, 1, 8)[0];
    EXPECT_LE(avx2.ocb * avx2.nv * avx2.pb / 8, 12) << avx2.name();
    EXPECT_EQ(avx2.ocb, 6) << avx2.name();
    const lower::CpuVariant avx512 = lower::cpu_gemm_candidates(rows, cols, 1, 16)[0];
    EXPECT_LE(avx512.ocb, 8) << avx512.name();
    EXPECT_GE(avx512.ocb * avx512.nv, 8) << avx512.name();
  }
  // AVX-512 (interleaved tuning rounds, docs/cpu-kernels.md): more than 8
  // accumulator vectors pay up to 24; 7x7 planes (17-64 columns) walk
  // columns first, larger ones rows first.
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1000, 169}, {64, 196}, {1280, 49}, {96, 3136}}) {
    SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols) + " avx512");
    const lower::CpuVariant v = lower::cpu_gemm_candidates(rows, cols, 1, 16)[0];
    EXPECT_GT(v.ocb * v.nv, 8) << v.name();
    EXPECT_LE(v.ocb * v.nv, 24) << v.name();
    EXPECT_EQ(v.cols_first, cols <= 64) << v.name();
  }
  // Fewer rows than 6: a thinner block, still within the registers.
  const lower::CpuVariant thin = lower::cpu_gemm_candidates(4, 1024, 1, 8)[0];
  EXPECT_LE(thin.ocb, 4);
  EXPECT_LE(thin.ocb * thin.nv * thin.pb / 8, 12) << thin.name();
  // A transcendental epilogue (SiLU) leaves registers to its inline exp on
  // 8-float devices: at most 10 accumulators, 5x16 on the zoo's SiLU shapes;
  // AVX-512's rule does not change.
  for (auto [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{{96, 12544}, {240, 784}, {672, 196}, {1280, 49}}) {
    SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols) + " transcendental");
    const lower::CpuVariant avx2 = lower::cpu_gemm_candidates(rows, cols, 1, 8, true)[0];
    EXPECT_EQ(avx2.name().substr(0, 4), "5x16");
    EXPECT_EQ(lower::cpu_gemm_candidates(rows, cols, 1, 16, true)[0].name(),
              lower::cpu_gemm_candidates(rows, cols, 1, 16, false)[0].name());
  }
}

TEST(CpuGemm, TranscendentalEpilogueOnEveryBlockHeight) {
  // SiLU on 1x1 convs whose rows cut 5-row and 6-row blocks alike.
  for (int64_t oc : {23, 30, 96}) {
    SCOPED_TRACE(oc);
    expect_matches({"FusedConv", {{1, 17, 9, 11}, {oc, 17, 1, 1}, {oc}},
                    {{"program", Attribute::of_strings({"Sigmoid x0", "Mul x0 t0"})}}},
                   "1x1 silu " + std::to_string(oc));
  }
}

TEST(CpuGemm, DirectConvStrideTwoInsideRows) {
  // Stems (3 input channels: conv2d_rows_cpu, a block of one output row per
  // work-item) and conv2d_cpu (8 channels): 32-wide output rows, stride 2
  // reads two vectors and their even lanes; left-edge taps still gather the
  // padding. The 16-channel block (7x7 stems on 16-float SIMD devices) is
  // named too, so AVX2 machines run it.
  for (const char* block : {"", "16x16"}) {
    expect_matches({"Conv", {{1, 3, 20, 64}, {20, 3, 3, 3}, {20}},
                    {{"strides", Attribute::of_ints({2, 2})}, {"pads", Attribute::of_ints({1, 1, 1, 1})}}},
                   std::string("3x3 s2 stem ") + block, block);
    expect_matches({"Conv", {{1, 3, 38, 64}, {18, 3, 7, 7}, {18}},
                    {{"strides", Attribute::of_ints({2, 2})}, {"pads", Attribute::of_ints({3, 3, 3, 3})}}},
                   std::string("7x7 s2 stem ") + block, block);
  }
  // conv2d_rows_cpu's edges: rows cut short of a vector (37 and 9 wide),
  // the right edge's taps past the input,
  // stride 1, no padding, dilation 2, batch 2, channel blocks cut (20 of 4,
  // 8 and 16: the packed weights' zeros), 4 input channels and a fused
  // epilogue. Every block shape runs two of these cases and every case two
  // or three blocks (each pair is a program PoCL builds: all 20 took minutes
  // with its cache cold).
  const std::vector<std::pair<test::NodeCase, std::vector<std::string>>> cases = {
      {{"Conv", {{2, 3, 21, 37}, {20, 3, 3, 3}, {20}}, {{"pads", Attribute::of_ints({1, 1, 1, 1})}}},
       {"", "16x16", "4x8"}},
      {{"Conv", {{1, 3, 19, 19}, {20, 3, 3, 3}, {}}, {{"strides", Attribute::of_ints({2, 2})}}}, {"", "8x16", "8x8"}},
      {{"Conv", {{1, 4, 19, 40}, {9, 4, 3, 3}, {9}},
        {{"dilations", Attribute::of_ints({2, 2})}, {"pads", Attribute::of_ints({2, 1, 2, 3})}}},
       {"16x16", "8x8"}},
      {{"FusedConv", {{1, 3, 32, 70}, {24, 3, 3, 3}, {24}},
        {{"strides", Attribute::of_ints({2, 2})}, {"pads", Attribute::of_ints({1, 1, 1, 1})},
         {"program", Attribute::of_strings({"Sigmoid x0", "Mul x0 t0"})}}},
       {"8x16", "4x8"}},
  };
  const char* const names[] = {"3x3 s1 stem ", "3x3 s2 p0 stem ", "3x3 d2 stem ", "3x3 s2 silu stem "};
  for (size_t i = 0; i < cases.size(); ++i)
    for (const std::string& b : cases[i].second) expect_matches(cases[i].first, names[i] + b, b);
  // The stem's weights are packed per block of output channels (zeros up
  // to a whole block) and replace the originals, which are never uploaded:
  // 20 channels in blocks of 16, then the bias.
  const Result packed =
      run({"Conv", {{1, 3, 20, 64}, {20, 3, 3, 3}, {20}}, {{"strides", Attribute::of_ints({2, 2})}}}, "16x16");
  EXPECT_LE(rel_error(packed.got, packed.want), 1e-5);
  EXPECT_EQ(packed.weight_bytes, (32 * 27 + 20) * 4);
  expect_matches({"FusedConv", {{1, 8, 16, 64}, {12, 8, 3, 3}, {12}},
                  {{"strides", Attribute::of_ints({2, 2})}, {"pads", Attribute::of_ints({1, 1, 1, 1})},
                   {"program", Attribute::of_strings({"Relu x0"})}}},
                 "3x3 s2 fused");
}
