// The decomposed-LayerNorm rewrite (optimize/layer_norm.cpp): it fires on
// the exact pattern (operands of Mul/Add in either order, with or without
// the bias Add) and the result matches the graph as built, on the reference
// executor and on the test device (PoCL unless TEXPLAN_TEST_DEVICE); near misses are left alone and still compute the
// same values. Then a LayerNormalization taken into the product before it
// (layer_norms_into_products, GPUs), on texplan's GPU kernels.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "cli/commands.h"
#include "import/onnx_import.h"
#include "lower/lower.h"
#include "optimize/optimize.h"
#include "optimize/usage.h"
#include "plan/memory_plan.h"
#include "runtime/cpu_executor.h"
#include "runtime/session.h"
#include "graph_builder.h"
#include "test_util.h"

using namespace texplan;
using test::random_tensor;

namespace {

// What to change in the pattern; the defaults build it exactly.
struct Spec {
  std::vector<int64_t> axes1 = {-1}, axes2 = {2};
  float exponent = 2.0f;
  bool gamma_first = false, beta_first = true, bias = true;
  bool swapped_sub = false, swapped_div = false;
  bool diff_is_output = false;   // Sub's output also a graph output
  bool mean_used_again = false;  // the mean feeds another node too
  bool gamma_is_input = false;   // gamma fed at run time, not a constant
  bool axes_as_input = false;    // opset-18 ReduceMean with axes as an input
};

struct Built {
  Graph g;
  std::vector<HostTensor> feeds;
};

Built build(const Spec& s) {
  Built b;
  Graph& g = b.g;
  test::NamedGraph w{g};
  g.model_name = "layernorm";
  g.opset = s.axes_as_input ? 18 : 13;
  std::mt19937 rng(11);
  const Shape xs = {2, 5, 35};
  auto reduced = [&](const std::vector<int64_t>& axes) {  // keepdims
    Shape r = xs;
    for (int64_t a : axes) r[size_t(a < 0 ? a + 3 : a)] = 1;
    return r;
  };
  auto mean = [&](int in, int out, const std::vector<int64_t>& axes) {
    if (!s.axes_as_input) return w.node("ReduceMean", {in}, out, {{"axes", Attribute::of_ints(axes)}});
    w.node("ReduceMean", {in, w.ints("axes" + std::to_string(out), axes)}, out);
  };

  const int in = w.tensor("in", xs);
  g.tensors[in].is_input = true;
  g.inputs = {in};
  b.feeds.push_back(random_tensor(xs, rng, -2, 3));
  const int x = w.tensor("x", xs);  // x = in * 1.5: the pattern's input is an activation
  w.node("Mul", {in, w.scalar("k", 1.5f)}, x);
  const Shape ms = reduced(s.axes1), vs = reduced(s.axes2);
  const int m = w.tensor("m", ms), d = w.tensor("d", xs), p = w.tensor("p", xs), v = w.tensor("v", vs), e = w.tensor("e", vs),
            sd = w.tensor("sd", vs), q = w.tensor("q", xs), r = w.tensor("r", xs);
  mean(x, m, s.axes1);
  w.node("Sub", s.swapped_sub ? std::vector<int>{m, x} : std::vector<int>{x, m}, d);
  w.node("Pow", {d, w.scalar("two", s.exponent)}, p);
  mean(p, v, s.axes2);
  w.node("Add", {v, w.scalar("eps", 1e-5f)}, e);
  w.node("Sqrt", {e}, sd);
  w.node("Div", s.swapped_div ? std::vector<int>{sd, d} : std::vector<int>{d, sd}, q);
  int gamma;
  if (s.gamma_is_input) {
    gamma = w.tensor("gamma", {35});
    g.tensors[gamma].is_input = true;
    g.inputs.push_back(gamma);
    b.feeds.push_back(random_tensor({35}, rng, -1, 1));
  } else {
    gamma = w.constant("gamma", random_tensor({35}, rng, -1, 1));
  }
  w.node("Mul", s.gamma_first ? std::vector<int>{gamma, q} : std::vector<int>{q, gamma}, r);
  int y = r;
  if (s.bias) {
    y = w.tensor("y", xs);
    const int beta = w.constant("beta", random_tensor({35}, rng, -1, 1));
    w.node("Add", s.beta_first ? std::vector<int>{beta, r} : std::vector<int>{r, beta}, y);
  }
  g.outputs = {y};
  if (s.diff_is_output) g.outputs.push_back(d);
  if (s.mean_used_again) {
    const int m2 = w.tensor("m2", ms);
    w.node("Neg", {m}, m2);
    g.outputs.push_back(m2);
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

std::vector<HostTensor> run_device(const Graph& g, const std::vector<HostTensor>& feeds) {
  PlanInput pin = make_usage_records(g);
  auto dev = test::test_device();
  plan::MemoryPlan plan = plan::plan_memory(pin.records, dev->info().profile, "best");
  runtime::Session s(g, pin, plan, dev);
  EXPECT_TRUE(s.fallback_nodes().empty());
  return s.run(feeds);
}

int count(const Graph& g, const std::string& op) {
  int n = 0;
  for (const Node& node : g.nodes) n += node.op_type == op;
  return n;
}

// Optimizes the spec's graph; checks its outputs against the graph as built
// (reference executor, and the test device) and returns how many LayerNorms it made.
int fused(const Spec& s) {
  const Built b = build(s);
  const std::vector<HostTensor> want = run_reference(b.g, b.feeds);
  Graph g = b.g;
  const OptimizeReport r = optimize(g, {});
  EXPECT_EQ(r.fused_layernorm, count(g, "LayerNormalization"));
  EXPECT_LE(r.lower_bound_bytes, r.raw_lower_bound_bytes);
  for (const auto& got : {run_reference(g, b.feeds), run_device(g, b.feeds)}) {
    EXPECT_EQ(got.size(), want.size());
    for (size_t k = 0; k < std::min(got.size(), want.size()); ++k)
      EXPECT_LE(cli::relative_error(got[k], want[k]), 1e-5) << "output " << k;
  }
  if (r.fused_layernorm > 0) {
    EXPECT_EQ(count(g, "ReduceMean") + count(g, "Pow") + count(g, "Sqrt"), 0);
  }
  return r.fused_layernorm;
}

}  // namespace

TEST(LayerNormFusion, FiresOnTheExactPattern) {
  EXPECT_EQ(fused({}), 1);
  Spec s;
  s.gamma_first = true;
  s.beta_first = false;
  s.axes1 = {2};
  s.axes2 = {-1};
  EXPECT_EQ(fused(s), 1);
  s = {};
  s.bias = false;
  EXPECT_EQ(fused(s), 1);
  s = {};
  s.axes_as_input = true;
  EXPECT_EQ(fused(s), 1);
}

TEST(LayerNormFusion, LeavesNearMissesAlone) {
  auto miss = [](const char* what, auto change) {
    SCOPED_TRACE(what);
    Spec s;
    change(s);
    EXPECT_EQ(fused(s), 0);
  };
  miss("mean over another axis", [](Spec& s) { s.axes1 = {1}; });
  miss("variance over two axes", [](Spec& s) { s.axes2 = {1, 2}; });
  miss("fourth power", [](Spec& s) { s.exponent = 4.0f; });
  miss("m - x", [](Spec& s) { s.swapped_sub = true; });
  miss("sd / d", [](Spec& s) { s.swapped_div = true; });
  miss("centred values are an output", [](Spec& s) { s.diff_is_output = true; });
  miss("mean read again", [](Spec& s) { s.mean_used_again = true; });
  miss("gamma fed at run time", [](Spec& s) { s.gamma_is_input = true; });
}

TEST(LayerNormFusion, BertMiniBoundNoWorse) {
  const std::string path = std::string(TEXPLAN_MODELS_DIR) + "/bert_mini";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " absent";
  Graph g = import_onnx(resolve_model_file(path));
  const OptimizeReport r = optimize(g, {.row_norm_fusion = true});
  EXPECT_EQ(r.fused_layernorm, 8);
  EXPECT_EQ(r.fused_row_norms, 4) << "after the out-projections (K 256); not the MLPs' second products (K 1024)";
  EXPECT_EQ(count(g, "LayerNormalization"), 4);
  EXPECT_EQ(count(g, "ReduceMean"), 0);
  EXPECT_LE(r.lower_bound_bytes, 917504);  // 896 KiB, the bound before this rewrite
}

// A LayerNormalization over the last axis of a product's bias and residual
// sum (BERT's post-norm layers) goes into the product in GPU forms (a
// FusedMatMul's RowNorm): rows of two batches sharing B or each its own,
// rows longer than any tile, odd row counts, with and without beta. The
// same outputs on the reference executor and on texplan's GPU kernels on
// PoCL (every tile family; forced splits and k-groups fall back to whole
// tiles), run twice (the row semaphores left at 0), guarded. Not where the
// sum is read again, nor over two axes, nor after a product whose K passes
// twice its rows (it splits over K instead), nor in CPU forms or switched off.
TEST(LayerNormFusion, IntoTheProductBeforeIt) {
  struct Case {
    int64_t M, K, N;
    bool batched_b, beta, sum_is_output = false;
    int64_t axis = -1;
  };
  const FusedForms gpu = lower::kernel_catalog().fused_for("gpu");
  ASSERT_TRUE(gpu.row_norm_product);
  ASSERT_FALSE(lower::kernel_catalog().fused_for("cpu").row_norm_product);
  auto dev = test::test_device();
  for (const Case& c : {Case{8, 40, 48, false, true}, Case{7, 40, 48, false, true}, Case{33, 24, 300, true, false}, Case{5, 64, 256, false, true},
                        Case{7, 40, 48, false, true, true}, Case{7, 40, 48, false, true, false, 1},
                        Case{7, 100, 48, false, true}}) {
    SCOPED_TRACE(::testing::Message() << c.M << "x" << c.K << "x" << c.N << (c.batched_b ? " batched" : "")
                                      << (c.sum_is_output ? " sum read again" : "") << " axis " << c.axis);
    test::GraphBuilder b("row_norm");
    const Shape ys = {2, c.M, c.N};
    const int x = b.input({2, c.M, c.K}), res = b.input(ys);
    const int w = b.constant(c.batched_b ? Shape{2, c.K, c.N} : Shape{c.K, c.N});
    const int prod = b.node("MatMul", {x, w}, ys);
    const int biased = b.node("Add", {prod, b.constant({c.N})}, ys);
    const int sum = b.node("Add", {biased, res}, ys);
    std::vector<int> ln = {sum, b.constant({c.axis == -1 ? c.N : c.M * c.N}, 0.5f, 1.5f)};
    if (c.beta) ln.push_back(b.constant({c.axis == -1 ? c.N : c.M * c.N}));
    if (c.axis != -1) {  // gamma and beta over [M, N]
      for (size_t k = 1; k < ln.size(); ++k) b.g.tensors[size_t(ln[k])].shape = {c.M, c.N};
      for (size_t k = 1; k < ln.size(); ++k) b.g.tensors[size_t(ln[k])].value.shape = {c.M, c.N};
    }
    const int y = b.node("LayerNormalization", ln, ys,
                         {{"axis", Attribute::of_int(c.axis)}, {"epsilon", Attribute::of_float(1e-5f)}});
    b.output(y);
    if (c.sum_is_output) b.output(sum);
    const std::vector<HostTensor> feeds = {random_tensor({2, c.M, c.K}, -1, 1, 5), random_tensor(ys, -1, 1, 6)};
    const std::vector<HostTensor> want = run_reference(b.g, feeds);
    const bool fuses = !c.sum_is_output && c.axis == -1 && c.K <= 2 * c.N;
    Graph on_cpu = b.g, off = b.g, g = b.g;
    EXPECT_EQ(optimize(on_cpu, {.row_norm_fusion = true, .device_forms = lower::kernel_catalog().fused_for("cpu")})
                  .fused_row_norms,
              0);
    EXPECT_EQ(optimize(off, {.device_forms = gpu}).fused_row_norms, 0) << "opt-in";
    const OptimizeReport r = optimize(g, {.row_norm_fusion = true, .device_forms = gpu});
    EXPECT_EQ(r.fused_row_norms, fuses ? 1 : 0);
    EXPECT_EQ(count(g, "LayerNormalization"), fuses ? 0 : 1);
    EXPECT_LE(r.lower_bound_bytes, r.raw_lower_bound_bytes);
    auto expect_want = [&](const std::vector<HostTensor>& got) {
      ASSERT_EQ(got.size(), want.size());
      for (size_t k = 0; k < want.size(); ++k) EXPECT_LE(cli::relative_error(got[k], want[k]), 1e-5) << "output " << k;
    };
    expect_want(run_reference(g, feeds));
    PlanInput pin = make_usage_records(g);
    plan::MemoryPlan plan = plan::plan_memory(pin.records, dev->info().profile, "best");
    for (const char* variant : {"", "16x16", "32x32", "64x64", "64x128v", "128x128", "32x32k4", "64x64/s3"}) {
      SCOPED_TRACE(variant);
      runtime::SessionOptions o;
      o.guard = true;
      o.kernel_choice = {.conv = variant[0] ? variant : "gpu"};
      runtime::Session s(g, pin, plan, dev, o);
      EXPECT_TRUE(s.fallback_nodes().empty());
      if (fuses) EXPECT_TRUE(s.split_k_nodes().empty()) << "no split under a row normalization";
      for (int run = 0; run < 2; ++run) expect_want(s.run(feeds));
      EXPECT_TRUE(s.guard_violations().empty()) << ::testing::PrintToString(s.guard_violations());
    }
  }
}
