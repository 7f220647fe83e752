// FusedAttention (docs/fused-ops.md#fusedattention): the optimizer's
// attention fusion fires on the forms exporters write (BERT's scaled q,
// scaled_dot_product_attention's q and k^T each scaled, a scale after the
// product, additive masks broadcast or full, either operand order) and
// leaves near misses alone; the fused graph computes what the graph as built
// computes, on the reference executor and on the test device (PoCL unless
// TEXPLAN_TEST_DEVICE) through both kernels (cpu_attention.cl, and
// attention.cl forced onto the CPU), in fp32 within 1e-5 and fp16 storage
// within 1e-2; and the plan holds no score matrix any more.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "cli/commands.h"
#include "import/onnx_import.h"
#include "lower/lower.h"
#include "lower/ops.h"
#include "optimize/optimize.h"
#include "optimize/usage.h"
#include "plan/memory_plan.h"
#include "runtime/cpu_executor.h"
#include "runtime/session.h"
#include "graph_builder.h"
#include "test_util.h"

using namespace texplan;
using test::rel_error;

namespace {

enum class Scale { None, DivQuery, MulBoth, MulAfter, DivAfter };
enum class Mask { None, Full, Rows, Square, First, Computed, Wider };

struct Spec {
  Shape batch = {1, 2};  // the dims before [S, D]
  int64_t sq = 7, sk = 9, d = 32, dv = 32;
  Scale scale = Scale::DivQuery;
  bool k_given_transposed = false;  // K^T is the graph's input (else a Transpose of K)
  bool scale_before_transpose = false;  // Mul(K) then Transpose, not Transpose then Mul
  Mask mask = Mask::None;
  // Near misses.
  int64_t axis = -1;
  bool probs_output = false;       // the Softmax's output is a graph output too
  bool scores_read_again = false;  // the scores feed another node
  bool scale_fed = false;          // the scale a graph input, not a constant
  bool probs_on_right = false;     // V @ P^T-like: the probabilities are the right operand
  bool nan_guard = false;  // torch 2's boolean-mask export: Where(IsNaN(P), 0, P) before the product
  bool masked_row = false;  // a Computed mask's first row masks every key
  std::vector<int64_t> output_perm;  // a Transpose of Y after the attention, its output the graph's
  bool output_read_twice = false;    // Y read by another node too
};

struct Built {
  Graph g;
  std::vector<HostTensor> feeds;
};

Shape with(Shape s, std::initializer_list<int64_t> tail) {
  s.insert(s.end(), tail);
  return s;
}

Built build(const Spec& s) {
  Built b;
  Graph& g = b.g;
  test::NamedGraph w{g};
  g.model_name = "attention";
  g.opset = 17;
  std::mt19937 rng(7);
  auto input = [&](const std::string& name, Shape shape, float lo = -1, float hi = 1) {
    const int t = w.tensor(name, shape);
    g.tensors[t].is_input = true;
    g.inputs.push_back(t);
    b.feeds.push_back(test::random_tensor(shape, rng, lo, hi));
    return t;
  };
  auto scalar = [&](const std::string& name, float v) {
    if (s.scale_fed) {
      const int t = input(name, {});
      b.feeds.back().data<float>()[0] = v;
      return t;
    }
    return w.scalar(name, v);
  };
  const Shape scores = with(s.batch, {s.sq, s.sk});
  const int64_t rank = int64_t(scores.size());
  std::vector<int64_t> swap_last;
  for (int64_t d = 0; d < rank; ++d) swap_last.push_back(d);
  std::swap(swap_last[size_t(rank - 2)], swap_last[size_t(rank - 1)]);
  const float scale = 1.0f / std::sqrt(float(s.d));

  int q = input("q", with(s.batch, {s.sq, s.d}), -2, 2);
  int kt = -1;
  if (s.k_given_transposed) {
    kt = input("kt", with(s.batch, {s.d, s.sk}), -2, 2);
  } else {
    int k = input("k", with(s.batch, {s.sk, s.d}), -2, 2);
    if (s.scale == Scale::MulBoth && s.scale_before_transpose) {
      const int ks = w.tensor("k_scaled", with(s.batch, {s.sk, s.d}));
      w.node("Mul", {k, scalar("k_scale", std::sqrt(scale))}, ks);
      k = ks;
    }
    kt = w.tensor("k_t", with(s.batch, {s.d, s.sk}));
    w.node("Transpose", {k}, kt, {{"perm", Attribute::of_ints(swap_last)}});
  }
  const int v = input("v", with(s.batch, {s.sk, s.dv}), -2, 2);
  if (s.scale == Scale::DivQuery) {
    const int qs = w.tensor("q_scaled", with(s.batch, {s.sq, s.d}));
    w.node("Div", {q, scalar("sqrt_d", std::sqrt(float(s.d)))}, qs);
    q = qs;
  } else if (s.scale == Scale::MulBoth) {
    const int qs = w.tensor("q_scaled", with(s.batch, {s.sq, s.d}));
    w.node("Mul", {scalar("q_scale", std::sqrt(scale)), q}, qs);
    q = qs;
    if (!s.scale_before_transpose) {
      const int ks = w.tensor("kt_scaled", with(s.batch, {s.d, s.sk}));
      w.node("Mul", {kt, scalar("k_scale", std::sqrt(scale))}, ks);
      kt = ks;
    }
  }
  int x = w.tensor("scores", scores);
  w.node("MatMul", {q, kt}, x);
  if (s.scale == Scale::MulAfter || s.scale == Scale::DivAfter) {
    const int y = w.tensor("scores_scaled", scores);
    const bool mul = s.scale == Scale::MulAfter;
    w.node(mul ? "Mul" : "Div", {x, scalar("scale", mul ? scale : 1.0f / scale)}, y);
    x = y;
  }
  if (s.mask != Mask::None) {
    Shape ms = scores;
    if (s.mask == Mask::Rows)  // a padding mask: [B, 1, .., 1, Sk]
      for (size_t d = ms.size() > 2 ? 1 : 0; d + 1 < ms.size(); ++d) ms[d] = 1;
    if (s.mask == Mask::Square) ms = {s.sq, s.sk};
    if (s.mask == Mask::Wider) ms[0] = 2;  // batch 1 -> 2: the Add broadcasts the scores
    int m = input("mask", ms, -3, 0);
    if (s.mask == Mask::Square)  // causal: -inf above the diagonal
      for (int64_t i = 0; i < s.sq; ++i)
        for (int64_t j = i + 1; j < s.sk; ++j) b.feeds.back().data<float>()[i * s.sk + j] = -INFINITY;
    if (s.mask == Mask::Computed) {  // a boolean mask made additive at run time: Where(mask, 0, -inf)
      g.tensors[m].dtype = DataType::Bool;
      HostTensor bits(DataType::Bool, ms);
      for (int64_t i = 0; i < bits.count(); ++i) bits.data<uint8_t>()[i] = b.feeds.back().data<float>()[i] > -2.5f;
      if (s.masked_row)
        for (int64_t j = 0; j < ms.back(); ++j) bits.data<uint8_t>()[j] = 0;
      b.feeds.back() = bits;
      const int add = w.tensor("mask_additive", ms);
      w.node("Where", {m, scalar("zero", 0.0f), scalar("minus_inf", -INFINITY)}, add);
      m = add;
    }
    const int y = w.tensor("scores_masked", s.mask == Mask::Wider ? ms : scores);
    w.node("Add", s.mask == Mask::First ? std::vector<int>{m, x} : std::vector<int>{x, m}, y);
    x = y;
  }
  int p = w.tensor("probs", g.tensors[x].shape);
  w.node("Softmax", {x}, p, {{"axis", Attribute::of_int(s.axis)}});
  if (s.nan_guard) {
    const int nan = w.tensor("probs_nan", g.tensors[x].shape), guarded = w.tensor("probs_guarded", g.tensors[x].shape);
    g.tensors[nan].dtype = DataType::Bool;
    w.node("IsNaN", {p}, nan);
    w.node("Where", {nan, scalar("nan_zero", 0.0f), p}, guarded);
    p = guarded;
  }
  Shape ys = g.tensors[x].shape;
  ys.back() = s.dv;
  const int y = w.tensor("y", ys);
  w.node("MatMul", {p, v}, y);
  g.outputs = {y};
  if (!s.output_perm.empty()) {
    Shape ts;
    for (int64_t a : s.output_perm) ts.push_back(ys[size_t(a)]);
    const int t = w.tensor("y_t", ts);
    w.node("Transpose", {y}, t, {{"perm", Attribute::of_ints(s.output_perm)}});
    g.outputs = {t};
  }
  if (s.output_read_twice) {
    const int r = w.tensor("y_relu", ys);
    w.node("Relu", {y}, r);
    g.outputs.push_back(r);
  }
  if (s.probs_output) g.outputs.push_back(p);
  if (s.scores_read_again) {
    const int r = w.tensor("scores_relu", g.tensors[x].shape);
    w.node("Relu", {x}, r);
    g.outputs.push_back(r);
  }
  for (int t : g.outputs) g.tensors[t].is_output = true;
  g.topological_sort();
  return b;
}

std::vector<HostTensor> run_reference(const Graph& g, const std::vector<HostTensor>& feeds) {
  PlanInput pin = make_usage_records(g);
  plan::MemoryPlan plan = plan::plan_memory(pin.records, plan::DeviceProfile::load("pocl"), "best");
  return runtime::CpuExecutor(g, pin, plan).run(feeds);
}

// The graph on the test device: `gpu_kernel` forces attention.cl (the GPU
// kernels) onto a CPU device; fp16 stores every float as half.
// `blocks`: attention.cl's blocks named (KernelChoice::attention), built
// unoptimized. With the GPU kernels and no blocks named, both of
// attention.cl's kernels run (the short one where it fits, and the tiled
// one) and must agree; the first is returned.
std::vector<HostTensor> run_device_with(const Graph& g, const std::vector<HostTensor>& feeds, bool gpu_kernel,
                                        bool fp16, const std::string& blocks);
std::vector<HostTensor> run_device(const Graph& g, const std::vector<HostTensor>& feeds, bool gpu_kernel = false,
                                   bool fp16 = false, const std::string& blocks = "") {
  std::vector<HostTensor> out = run_device_with(g, feeds, gpu_kernel, fp16, blocks);
  if (gpu_kernel && blocks.empty()) {
    const std::vector<HostTensor> tiled = run_device_with(g, feeds, true, fp16, "tiled");
    EXPECT_EQ(tiled.size(), out.size());
    for (size_t i = 0; i < std::min(tiled.size(), out.size()); ++i)
      EXPECT_LE(rel_error(out[i], tiled[i]), fp16 ? 1e-2 : 2e-5) << "the short and tiled kernels, output " << i;
  }
  return out;
}

std::vector<HostTensor> run_device_with(const Graph& g, const std::vector<HostTensor>& feeds, bool gpu_kernel,
                                        bool fp16, const std::string& blocks) {
  UsageOptions uo;
  if (fp16) uo.float_storage = runtime::float_storage(runtime::Precision::Fp16);
  PlanInput pin = make_usage_records(g, uo);
  auto dev = test::test_device();
  plan::MemoryPlan plan = plan::plan_memory(pin.records, dev->info().profile, "best");
  runtime::SessionOptions o;
  if (gpu_kernel) o.kernel_choice.conv = "gpu";
  o.kernel_choice.attention = blocks;
  o.kernel_choice.unoptimized_programs = !blocks.empty();
  if (fp16) o.precision = runtime::Precision::Fp16;
  o.guard = true;
  runtime::Session s(g, pin, plan, dev, o);
  EXPECT_TRUE(s.fallback_nodes().empty());
  std::vector<HostTensor> out = s.run(feeds);
  EXPECT_TRUE(s.guard_violations().empty());
  return out;
}

int count(const Graph& g, const std::string& op) {
  int n = 0;
  for (const Node& node : g.nodes) n += node.op_type == op;
  return n;
}

void expect_close(const std::vector<HostTensor>& got, const std::vector<HostTensor>& want, double tol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t k = 0; k < want.size(); ++k) EXPECT_LE(rel_error(got[k], want[k]), tol) << what << ", output " << k;
}

// Optimizes the spec's graph and checks the result against the graph as
// built on the reference, and on the device through both kernels; returns
// how many FusedAttention nodes it made.
int fused(const Spec& s, bool on_device = true) {
  const Built b = build(s);
  const std::vector<HostTensor> want = run_reference(b.g, b.feeds);
  Graph g = b.g;
  const OptimizeReport r = optimize(g, {});
  EXPECT_EQ(r.fused_attention, count(g, "FusedAttention"));
  expect_close(run_reference(g, b.feeds), want, 1e-5, "reference executor");
  if (on_device) {
    expect_close(run_device(g, b.feeds), want, 1e-5, "device");
    expect_close(run_device(g, b.feeds, true), want, 1e-5, "device, attention.cl");
  }
  if (r.fused_attention > 0) {
    EXPECT_EQ(count(g, "Softmax"), 0);
  }
  return r.fused_attention;
}

const AttentionForm& form_of(const Graph& g) {
  for (const Node& n : g.nodes)
    if (n.op_type == "FusedAttention") return *n.decisions.attention;
  static const AttentionForm none;
  ADD_FAILURE() << "no FusedAttention";
  return none;
}

}  // namespace

TEST(FusedAttention, FiresOnTheExportedForms) {
  Spec s;  // BERT: q / sqrt(d) before the product, K transposed by a node
  EXPECT_EQ(fused(s), 1);
  s.batch = {2};
  s.k_given_transposed = true;  // K^T as the graph has it (BERT's Transpose [S, H, d] -> [H, d, S])
  EXPECT_EQ(fused(s), 1);
  s = {};
  s.scale = Scale::MulBoth;  // scaled_dot_product_attention: q and k^T each times sqrt(scale)
  s.mask = Mask::Full;
  EXPECT_EQ(fused(s), 1);
  s.scale_before_transpose = true;
  s.mask = Mask::Rows;  // padding mask [B, 1, 1, S]
  EXPECT_EQ(fused(s), 1);
  s = {};
  s.scale = Scale::MulAfter;  // (q @ k^T) * scale + causal mask [S, S]
  s.mask = Mask::Square;
  s.sq = s.sk = 12;
  EXPECT_EQ(fused(s), 1);
  s.scale = Scale::DivAfter;
  s.mask = Mask::First;  // mask + scores
  EXPECT_EQ(fused(s), 1);
  s = {};
  s.scale = Scale::None;
  s.mask = Mask::Computed;  // a boolean mask through Where(mask, 0, -inf)
  EXPECT_EQ(fused(s), 1);
  s.masked_row = true;  // a query with every key masked: NaN, as the unfused Softmax gives
  EXPECT_EQ(fused(s), 1);
  s.nan_guard = true;  // torch 2's export zeroes it: Where(IsNaN(P), 0, P)
  EXPECT_EQ(fused(s), 1);
  s.masked_row = false;
  s.scale = Scale::MulBoth;
  EXPECT_EQ(fused(s), 1);
  s.batch = {};  // no batch dims at all
  s.mask = Mask::None;
  EXPECT_EQ(fused(s), 1);
}

TEST(FusedAttention, FormCarriesScaleAndKeyLayout) {
  Spec s;
  s.scale = Scale::MulBoth;
  Built b = build(s);
  optimize(b.g, {});
  EXPECT_NEAR(form_of(b.g).scale, 1.0f / std::sqrt(32.0f), 1e-7);
  EXPECT_FALSE(form_of(b.g).k_transposed) << "the Transpose of K is taken into the form";
  EXPECT_EQ(count(b.g, "Transpose"), 0);
  s.k_given_transposed = true;
  b = build(s);
  optimize(b.g, {});
  EXPECT_TRUE(form_of(b.g).k_transposed);
  s = {};
  s.scale_fed = true;  // a scale known only at run time stays a node before Q
  EXPECT_EQ(fused(s), 1);
  b = build(s);
  optimize(b.g, {});
  EXPECT_EQ(form_of(b.g).scale, 1.0f);
  EXPECT_EQ(count(b.g, "Div"), 1);
}

TEST(FusedAttention, LeavesNearMissesAlone) {
  auto miss = [](const char* what, auto change) {
    SCOPED_TRACE(what);
    Spec s;
    s.mask = Mask::Full;
    change(s);
    EXPECT_EQ(fused(s, false), 0);
  };
  miss("softmax over another axis", [](Spec& s) { s.axis = -2; });
  miss("probabilities also a graph output", [](Spec& s) { s.probs_output = true; });
  miss("scores read elsewhere", [](Spec& s) { s.scores_read_again = true; });
  miss("mask widening the scores", [](Spec& s) { s.mask = Mask::Wider; });
  miss("batch dims beyond two", [](Spec& s) { s.batch = {1, 2, 2}; });
}

TEST(FusedAttention, SwitchedOffByItsOption) {
  Built b = build({});
  OptimizeOptions o;
  o.attention_fusion = false;
  EXPECT_EQ(optimize(b.g, o).fused_attention, 0);
  EXPECT_EQ(count(b.g, "Softmax"), 1);
  Built c = build({});
  o = {};
  o.device_forms = FusedForms{};  // a device whose kernels have no attention form
  EXPECT_EQ(optimize(c.g, o).fused_attention, 0);
}

// Both kernels against the unfused reference over head dims and sequence
// lengths with tails (keys past a 16 or 64 tile, rows past a 4 or 32 block).
TEST(FusedAttention, KernelsMatchTheReference) {
  for (int64_t seq : {1, 7, 129, 1500})
    for (int64_t d : {32, 64, 80, 128}) {
      SCOPED_TRACE("seq " + std::to_string(seq) + " d " + std::to_string(d));
      Spec s;
      s.batch = seq > 500 ? Shape{1, 1} : Shape{1, 3};
      s.sq = s.sk = seq;
      s.d = s.dv = d;
      s.mask = seq % 2 ? Mask::Rows : Mask::None;
      const Built b = build(s);
      const std::vector<HostTensor> want = run_reference(b.g, b.feeds);
      Graph g = b.g;
      ASSERT_EQ(optimize(g, {}).fused_attention, 1);
      expect_close(run_device(g, b.feeds), want, 1e-5, "cpu_attention.cl");
      if (seq < 1500 || d == 64) expect_close(run_device(g, b.feeds, true), want, 1e-5, "attention.cl");
    }
  Spec s;  // K rows contiguous (the Transpose taken into the form), keys unlike queries, Dv unlike D
  s.sq = 33, s.sk = 70, s.d = 80, s.dv = 48;
  EXPECT_EQ(fused(s), 1);
  s.k_given_transposed = true;
  s.sk = 17;
  EXPECT_EQ(fused(s), 1);
}

// The blocks small grids take on GPUs (fewer rows per work-group, more
// items per row: down to one key per item), checked here by name: a ragged
// last block of rows, head dims under and over 64 (key tiles of 64 and 32),
// a mask, keys unlike queries.
TEST(FusedAttention, SmallGridBlocks) {
  for (const std::string blocks : {"16x8", "8x16", "8x32"})
    for (int64_t d : {64, 128}) {
      SCOPED_TRACE(blocks + " d " + std::to_string(d));
      Spec s;
      s.sq = 45, s.sk = 70, s.d = s.dv = d;
      s.mask = d == 64 ? Mask::Rows : Mask::None;
      const Built b = build(s);
      const std::vector<HostTensor> want = run_reference(b.g, b.feeds);
      Graph g = b.g;
      ASSERT_EQ(optimize(g, {}).fused_attention, 1);
      expect_close(run_device(g, b.feeds, true, false, blocks), want, 1e-5, "attention.cl " + blocks);
    }
  // The short kernel past 128 keys, named (the default there too): two keys
  // an item (ViT's 197).
  for (int64_t sk : {129, 197, 256}) {
    SCOPED_TRACE("short, " + std::to_string(sk) + " keys");
    Spec s;
    s.sq = 20, s.sk = sk, s.d = s.dv = 64;
    s.mask = sk == 197 ? Mask::Rows : Mask::None;
    const Built b = build(s);
    const std::vector<HostTensor> want = run_reference(b.g, b.feeds);
    Graph g = b.g;
    ASSERT_EQ(optimize(g, {}).fused_attention, 1);
    expect_close(run_device(g, b.feeds, true, false, "short"), want, 1e-5, "attention.cl short");
  }
  for (const char* bad : {"4x8", "8x3", "32x32", "16", "8x16x2"}) EXPECT_THROW(lower::check_attention_blocks(bad), Error) << bad;
  for (const char* good : {"32x4", "short", "tiled"}) EXPECT_NO_THROW(lower::check_attention_blocks(good)) << good;
}

TEST(FusedAttention, HalfStorageWithinHalfPrecision) {
  for (int64_t d : {32, 80}) {
    Spec s;
    s.sq = 40, s.sk = 50, s.d = s.dv = d;
    s.mask = Mask::Rows;
    const Built b = build(s);
    const std::vector<HostTensor> want = run_reference(b.g, b.feeds);
    Graph g = b.g;
    ASSERT_EQ(optimize(g, {}).fused_attention, 1);
    expect_close(run_device(g, b.feeds, false, true), want, 1e-2, "cpu_attention.cl, fp16");
    expect_close(run_device(g, b.feeds, true, true), want, 1e-2, "attention.cl, fp16");
  }
}

// The score matrix [.., Sq, Sk] leaves the plan: no usage record of its
// size, and the planned bytes drop by at least one of it.
TEST(FusedAttention, PlanHoldsNoScoreMatrix) {
  Spec s;
  s.batch = {1, 2};
  s.sq = s.sk = 512;
  s.d = s.dv = 16;
  s.mask = Mask::Rows;
  const Built b = build(s);
  const int64_t score_bytes = 2 * 512 * 512 * 4;
  auto planned = [&](const Graph& g, bool& has_scores) {
    const PlanInput pin = make_usage_records(g);
    has_scores = false;
    for (const auto& r : pin.records) has_scores = has_scores || r.bytes >= score_bytes;
    return plan::plan_memory(pin.records, plan::DeviceProfile::load("pocl"), "best").total_bytes();
  };
  Graph unfused = b.g, fused = b.g;
  OptimizeOptions off;
  off.attention_fusion = false;
  optimize(unfused, off);
  optimize(fused, {});
  bool before = false, after = true;
  const int64_t bytes_before = planned(unfused, before), bytes_after = planned(fused, after);
  EXPECT_TRUE(before);
  EXPECT_FALSE(after);
  EXPECT_LE(bytes_after + score_bytes, bytes_before);
}

// BERT as torch exports it: q, k and v cut from one projection P, split
// into heads (k^T by a Transpose [S, H, d] -> [H, d, S]). With strided
// operands (GPUs) FusedAttention reads all three through views of P and
// the cuts run nothing; without (CPU devices) it reads their copies. Both
// compute what the graph as built computes, through both kernels.
TEST(FusedAttention, ReadsHeadsThroughOperandViews) {
  const int64_t S = 20, H = 2, dh = 16, D = H * dh;
  Graph g;
  test::NamedGraph w{g};
  g.model_name = "bert_heads";
  g.opset = 13;
  std::mt19937 rng(5);
  const int x = w.tensor("x", {S, D});
  g.tensors[x].is_input = true;
  g.inputs = {x};
  const int p = w.tensor("p", {S, 3 * D});
  w.node("MatMul", {x, w.constant("wqkv", test::random_tensor({D, 3 * D}, rng, -0.5, 0.5))}, p);
  auto head_split = [&](const std::string& n, int64_t from, std::vector<int64_t> perm, Shape out) {
    const int cut = w.tensor(n + "_cut", {S, D}), r = w.tensor(n + "_r", {S, H, dh}), t = w.tensor(n, out);
    w.node("Slice", {p, w.ints(n + "_s", {from}), w.ints(n + "_e", {from + D}), w.ints(n + "_a", {1})}, cut);
    w.node("Reshape", {cut, w.ints(n + "_shape", {S, H, dh})}, r);
    w.node("Transpose", {r}, t, {{"perm", Attribute::of_ints(perm)}});
    return t;
  };
  const int q = head_split("q", 0, {1, 0, 2}, {H, S, dh}), kt = head_split("kt", D, {1, 2, 0}, {H, dh, S}),
            v = head_split("v", 2 * D, {1, 0, 2}, {H, S, dh});
  HostTensor c(DataType::Float32, {});
  c.data<float>()[0] = 4.0f;
  const int qs = w.tensor("q_scaled", {H, S, dh}), sc = w.tensor("scores", {H, S, S}), sm = w.tensor("probs", {H, S, S}),
            o = w.tensor("o", {H, S, dh}), ot = w.tensor("o_t", {S, H, dh}), y = w.tensor("y", {S, D});
  w.node("Div", {q, w.constant("sqrt_d", c)}, qs);
  w.node("MatMul", {qs, kt}, sc);
  w.node("Softmax", {sc}, sm, {{"axis", Attribute::of_int(-1)}});
  w.node("MatMul", {sm, v}, o);
  w.node("Transpose", {o}, ot, {{"perm", Attribute::of_ints({1, 0, 2})}});
  w.node("Reshape", {ot, w.ints("y_shape", {S, D})}, y);
  g.tensors[y].is_output = true;
  g.outputs = {y};
  g.topological_sort();
  const std::vector<HostTensor> feeds = {test::random_tensor({S, D}, rng, -1, 1)};
  const std::vector<HostTensor> want = run_reference(g, feeds);

  Graph viewed = g;
  EXPECT_EQ(optimize(viewed, {}).fused_attention, 1);
  for (const Node& n : viewed.nodes) {
    EXPECT_NE(n.op_type, "Slice");
    if (n.op_type != "FusedAttention") continue;
    for (int slot = 0; slot < 3; ++slot) {
      EXPECT_TRUE(operand_view(n, slot).has_value()) << "operand " << slot;
      EXPECT_EQ(viewed.tensors[size_t(n.inputs[size_t(slot)])].name, "p") << "operand " << slot;
    }
    EXPECT_TRUE(n.decisions.attention->k_transposed);
    EXPECT_EQ(n.decisions.attention->output_perm, (std::vector<int64_t>{1, 0, 2})) << "o_t written by the attention";
  }
  EXPECT_EQ(count(viewed, "Transpose"), 0);
  expect_close(run_reference(viewed, feeds), want, 1e-5, "views, reference");
  expect_close(run_device(viewed, feeds), want, 1e-5, "views, cpu_attention.cl");
  expect_close(run_device(viewed, feeds, true), want, 1e-5, "views, attention.cl");

  Graph copies = g;
  EXPECT_EQ(optimize(copies, {.device_forms = lower::kernel_catalog().fused_for("cpu")}).fused_attention, 1);
  expect_close(run_device(copies, feeds), want, 1e-5, "copies, cpu_attention.cl");
}

// The Transpose after an attention (BERT's heads interleaved again for the
// out-projection) goes into the attention's stores where it keeps the last
// axis last and is the output's only reader: the same outputs on the
// reference, and through both kernels in fp32 and fp16 storage.
TEST(FusedAttention, WritesTheTransposeAfterIt) {
  const std::vector<std::pair<Shape, std::vector<int64_t>>> cases = {
      {{2, 3}, {0, 2, 1, 3}}, {{3}, {1, 0, 2}}, {{2, 3}, {2, 1, 0, 3}}};
  for (const auto& [batch, perm] : cases) {
    SCOPED_TRACE(to_string(Shape(perm.begin(), perm.end())));
    Spec s;
    s.batch = batch;
    s.sq = 45, s.sk = 33, s.d = 32, s.dv = 48;
    s.mask = Mask::Rows;
    s.output_perm = perm;
    const Built b = build(s);
    const std::vector<HostTensor> want = run_reference(b.g, b.feeds);
    Graph g = b.g;
    ASSERT_EQ(optimize(g, {}).fused_attention, 1);
    EXPECT_EQ(count(g, "Transpose"), 0);
    EXPECT_EQ(form_of(g).output_perm, perm);
    expect_close(run_reference(g, b.feeds), want, 1e-5, "reference executor");
    expect_close(run_device(g, b.feeds), want, 1e-5, "cpu_attention.cl");
    expect_close(run_device(g, b.feeds, true), want, 1e-5, "attention.cl");
    if (perm.front() == 0) {  // BERT's form
      expect_close(run_device(g, b.feeds, false, true), want, 1e-2, "cpu_attention.cl, fp16");
      expect_close(run_device(g, b.feeds, true, true), want, 1e-2, "attention.cl, fp16");
    }
    Graph off = b.g;
    optimize(off, {.attention_output_transposes = false});
    EXPECT_EQ(count(off, "Transpose"), 1) << "switched off";
  }
  auto kept_transpose = [](const Spec& s) {
    Graph g = build(s).g;
    EXPECT_EQ(optimize(g, {}).fused_attention, 1);
    EXPECT_TRUE(form_of(g).output_perm.empty());
    return count(g, "Transpose");
  };
  Spec moves_last;  // each query's row would scatter
  moves_last.output_perm = {0, 1, 3, 2};
  EXPECT_EQ(kept_transpose(moves_last), 1);
  Spec read_twice;
  read_twice.output_perm = {0, 2, 1, 3};
  read_twice.output_read_twice = true;
  EXPECT_EQ(kept_transpose(read_twice), 1);
  EXPECT_EQ(fused(read_twice), 1);
}

TEST(FusedAttention, BertMiniFusesEveryLayer) {
  const std::string path = std::string(TEXPLAN_MODELS_DIR) + "/bert_mini";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " absent (the shared model zoo)";
  Graph g = import_onnx(resolve_model_file(path));
  Graph unfused = g;
  OptimizeOptions off;
  off.attention_fusion = false;
  const OptimizeReport before = optimize(unfused, off);
  const OptimizeReport r = optimize(g, {});
  EXPECT_EQ(r.fused_attention, 4);
  EXPECT_EQ(count(g, "Softmax"), 0);
  EXPECT_LT(r.lower_bound_bytes, before.lower_bound_bytes);
  // No activation of the scores' shape [heads, S, S] is planned any more.
  auto scores = [](const Graph& graph) {
    int n = 0;
    for (const auto& rec : make_usage_records(graph).records) {
      const int t = graph.find(rec.name);
      n += t >= 0 && graph.tensors[size_t(t)].shape == Shape{4, 128, 128};
    }
    return n;
  };
  EXPECT_GT(scores(unfused), 0);
  EXPECT_EQ(scores(g), 0);
}
