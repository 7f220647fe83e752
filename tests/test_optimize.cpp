// Tests of the graph optimizations (docs/optimizations.md) on small graphs:
// the optimized graph computes what the imported one does (CPU executor on
// the planned pools, so shared storage is exercised), and the rewrites happen.
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <set>

#include "cli/commands.h"
#include "graph/epilogue.h"
#include "import/onnx_import.h"
#include "lower/lower.h"
#include "lower/ops.h"
#include "onnx_builder.h"
#include "optimize/optimize.h"
#include "optimize/passes.h"
#include "optimize/sharing.h"
#include "optimize/usage.h"
#include "reference/reference_ops.h"
#include "runtime/cpu_executor.h"
#include "runtime/session.h"
#include "test_util.h"

using namespace texplan;
using test::random_tensor;

namespace {

int tensor(Graph& g, const std::string& name, Shape s) {
  Tensor t;
  t.name = name;
  t.shape = std::move(s);
  return g.add_tensor(std::move(t));
}
int weight(Graph& g, const std::string& name, Shape s, std::mt19937& rng) {
  Tensor t;
  t.name = name;
  t.shape = s;
  t.is_constant = true;
  t.has_data = true;
  t.value = random_tensor(s, rng, -0.5f, 0.5f);
  return g.add_tensor(std::move(t));
}
// A constant float32 scalar of value `v`.
int scalar(Graph& g, const std::string& name, float v) {
  Tensor t;
  t.name = name;
  t.shape = {};
  t.is_constant = t.has_data = true;
  t.value = HostTensor(DataType::Float32, {});
  t.value.data<float>()[0] = v;
  return g.add_tensor(std::move(t));
}
// A constant int64 tensor of `v` (Slice starts, ends, axes; Reshape shapes).
int ints(Graph& g, const std::string& name, const std::vector<int64_t>& v) {
  Tensor t;
  t.name = name;
  t.dtype = DataType::Int64;
  t.shape = {int64_t(v.size())};
  t.is_constant = t.has_data = true;
  t.value = HostTensor(DataType::Int64, t.shape);
  std::copy(v.begin(), v.end(), t.value.data<int64_t>());
  return g.add_tensor(t);
}
void node(Graph& g, const std::string& op, std::vector<int> in, std::vector<int> out,
          std::map<std::string, Attribute> attrs = {}) {
  Node n;
  n.name = op + "_" + std::to_string(g.nodes.size());
  n.op_type = op;
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  n.attrs = std::move(attrs);
  g.nodes.push_back(std::move(n));
}

// A graph named `name` whose one input `x` has `shape`; its id in `x`.
Graph graph_with_input(const std::string& name, Shape shape, int& x) {
  Graph g;
  g.model_name = name;
  x = tensor(g, "x", std::move(shape));
  g.tensors[x].is_input = true;
  g.inputs = {x};
  return g;
}

HostTensor run_cpu(const Graph& g, const HostTensor& input) {
  PlanInput pin = make_usage_records(g);
  plan::DeviceProfile dev = plan::DeviceProfile::load("pocl");
  plan::MemoryPlan plan = plan::plan_memory(pin.records, dev, "best");
  plan::validate(plan, pin.records, dev);
  runtime::CpuExecutor cpu(g, pin, plan);
  return cpu.run({input})[0];
}

// X -> Sigmoid s -> Conv -> BatchNormalization -> Relu -> Add(s) -> Relu -> MaxPool
//   and a second branch s -> Relu r, concat(pool-branch?, no): Concat(a, b) of two
//   elementwise outputs, then Conv.
Graph sample(std::mt19937& rng) {
  int x = 0;
  Graph g = graph_with_input("sample", {1, 4, 8, 8}, x);
  const int s = tensor(g, "s", {1, 4, 8, 8});
  node(g, "Sigmoid", {x}, {s});
  const int c = tensor(g, "c", {1, 4, 8, 8});
  node(g, "Conv", {s, weight(g, "w", {4, 4, 3, 3}, rng), weight(g, "b", {4}, rng)}, {c}, {{"pads", Attribute::of_ints({1, 1, 1, 1})}});
  const int bn = tensor(g, "bn", {1, 4, 8, 8});
  node(g, "BatchNormalization",
       {c, weight(g, "scale", {4}, rng), weight(g, "beta", {4}, rng), weight(g, "mean", {4}, rng),
        [&] {
          int v = weight(g, "var", {4}, rng);
          for (int i = 0; i < 4; ++i) g.tensors[v].value.data<float>()[i] = 0.5f + 0.1f * float(i);
          return v;
        }()},
       {bn});
  const int r1 = tensor(g, "r1", {1, 4, 8, 8});
  node(g, "Relu", {bn}, {r1});
  const int sum = tensor(g, "sum", {1, 4, 8, 8});
  node(g, "Add", {r1, s}, {sum});
  const int r2 = tensor(g, "r2", {1, 4, 8, 8});
  node(g, "Relu", {sum}, {r2});
  const int a = tensor(g, "a", {1, 4, 8, 8}), b = tensor(g, "bb", {1, 4, 8, 8});
  node(g, "Tanh", {r2}, {a});
  node(g, "Neg", {r2}, {b});
  const int cat = tensor(g, "cat", {1, 8, 8, 8});
  node(g, "Concat", {a, b}, {cat}, {{"axis", Attribute::of_int(1)}});
  const int c2 = tensor(g, "c2", {1, 2, 8, 8});
  node(g, "Conv", {cat, weight(g, "w2", {2, 8, 1, 1}, rng)}, {c2});
  const int y = tensor(g, "y", {1, 2, 4, 4});
  node(g, "MaxPool", {c2}, {y}, {{"kernel_shape", Attribute::of_ints({2, 2})}, {"strides", Attribute::of_ints({2, 2})}});
  g.tensors[y].is_output = true;
  g.outputs = {y};
  g.topological_sort();
  return g;
}

void expect_close(const HostTensor& a, const HostTensor& b) {
  ASSERT_EQ(a.shape, b.shape);
  EXPECT_LE(cli::relative_error(a, b), 1e-5);
}

void expect_all_close(const std::vector<HostTensor>& got, const std::vector<HostTensor>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) expect_close(got[i], want[i]);
}

// The outputs of `g` for `input`: on the CPU executor (no `dev`), or in a
// guarded session on `dev` (no violations) with the kernels `kernels` names,
// which `check` then inspects.
std::vector<HostTensor> run_graph(const Graph& g, const HostTensor& input,
                                  const std::shared_ptr<runtime::Device>& dev = nullptr,
                                  const std::function<void(const runtime::Session&)>& check = {},
                                  const lower::KernelChoice& kernels = {}) {
  PlanInput pin = make_usage_records(g);
  if (!dev) {
    plan::MemoryPlan plan = plan::plan_memory(pin.records, plan::DeviceProfile::load("pocl"), "best");
    return runtime::CpuExecutor(g, pin, plan).run({input});
  }
  plan::MemoryPlan plan = plan::plan_memory(pin.records, dev->info().profile, "best");
  runtime::SessionOptions o;
  o.guard = true;
  o.kernel_choice = kernels;
  runtime::Session session(g, pin, plan, dev, o);
  auto out = session.run({input});
  EXPECT_TRUE(session.guard_violations().empty());
  if (check) check(session);
  return out;
}

// run_graph with no node left to the CPU fallback.
std::vector<HostTensor> run_on_device_kernels(const Graph& g, const HostTensor& input,
                                              const std::shared_ptr<runtime::Device>& dev,
                                              const lower::KernelChoice& kernels) {
  return run_graph(
      g, input, dev, [](const runtime::Session& session) { EXPECT_TRUE(session.fallback_nodes().empty()); }, kernels);
}

}  // namespace

TEST(Optimize, EveryCombinationComputesTheSameOutput) {
  std::mt19937 rng(7);
  const Graph g0 = sample(rng);
  const HostTensor input = random_tensor({1, 4, 8, 8}, rng, -2, 2);
  const HostTensor want = run_cpu(g0, input);
  for (int mask = 0; mask < 32; ++mask) {
    OptimizeOptions o;
    o.fuse = mask & 1;
    o.inplace = mask & 2;
    o.concat_elision = mask & 4;
    o.pool_fusion = mask & 8;
    o.order = mask & 16 ? OptimizeOptions::Order::Memory : OptimizeOptions::Order::File;
    SCOPED_TRACE(mask);
    Graph g = g0;
    const OptimizeReport r = optimize(g, o);
    EXPECT_LE(r.lower_bound_bytes, r.raw_lower_bound_bytes);
    expect_close(run_cpu(g, input), want);
  }
}

TEST(Optimize, FusesFoldsShares) {
  std::mt19937 rng(8);
  Graph g = sample(rng);
  const OptimizeReport r = optimize(g, {});
  EXPECT_EQ(r.folded_batchnorm, 1);
  EXPECT_EQ(r.fused_conv, 1);        // conv + bn + relu + add + relu
  EXPECT_EQ(r.fused_pool, 1);        // conv2 + maxpool
  EXPECT_EQ(r.elided_concats, 1);    // tanh and neg write their halves of cat
  EXPECT_GE(r.inplace, 1);           // the residual conv writes over s
  EXPECT_LT(r.lower_bound_bytes, r.raw_lower_bound_bytes);
  int fused_conv = 0;
  for (const auto& n : g.nodes) fused_conv += n.op_type == "FusedConv";
  EXPECT_EQ(fused_conv, 1);
  const StorageSharing s = storage_sharing(g);
  const int a = g.find("a"), b = g.find("bb"), cat = g.find("cat");
  EXPECT_EQ(s.root[a], cat);
  EXPECT_EQ(s.root[b], cat);
  EXPECT_EQ(s.offset[b], g.tensors[a].bytes());
}

// Pool fusion where it can lower the peak only: a conv output under 1/16 of
// the largest activation keeps its MaxPool (on GPUs its conv may split K).
TEST(Optimize, PoolFusesIntoLargeConvsOnly) {
  std::mt19937 rng(3);
  int x = 0;
  Graph g = graph_with_input("pools", {1, 4, 64, 64}, x);
  const Attribute k2 = Attribute::of_ints({2, 2});
  const int c1 = tensor(g, "c1", {1, 4, 64, 64});  // 64 KiB: the largest activation
  node(g, "Conv", {x, weight(g, "w1", {4, 4, 3, 3}, rng)}, {c1}, {{"pads", Attribute::of_ints({1, 1, 1, 1})}});
  const int p1 = tensor(g, "p1", {1, 4, 32, 32});
  node(g, "MaxPool", {c1}, {p1}, {{"kernel_shape", k2}, {"strides", k2}});
  const int c2 = tensor(g, "c2", {1, 1, 16, 16});  // 1 KiB: under 1/16 of it
  node(g, "Conv", {p1, weight(g, "w2", {1, 4, 1, 1}, rng)}, {c2}, {{"strides", k2}});
  const int y = tensor(g, "y", {1, 1, 8, 8});
  node(g, "MaxPool", {c2}, {y}, {{"kernel_shape", k2}, {"strides", k2}});
  g.tensors[y].is_output = true;
  g.outputs = {y};
  g.topological_sort();
  const HostTensor in = random_tensor({1, 4, 64, 64}, rng);
  const HostTensor expected = run_cpu(g, in);
  Graph opt = g;
  EXPECT_EQ(optimize(opt, {}).fused_pool, 1);
  int pools = 0, fused = 0;
  for (const auto& n : opt.nodes) pools += n.op_type == "MaxPool", fused += n.op_type == "FusedConvMaxPool";
  EXPECT_EQ(fused, 1);
  EXPECT_EQ(pools, 1);
  expect_close(run_cpu(opt, in), expected);
}

TEST(Optimize, ElidedConcatThatCannotBeLaidOutIsAnError) {
  std::mt19937 rng(9);
  Graph g = sample(rng);
  for (auto& n : g.nodes)
    if (n.op_type == "Concat") {
      n.inputs = {n.inputs[0], n.inputs[0]};  // the same tensor twice cannot be two slices
      n.decisions.elided = true;
    }
  EXPECT_THROW(storage_sharing(g), Error);
}

// The optimizer's decisions live in Node::decisions, never in attributes: a
// model's attribute spelled like an old mark ("texplan_elided" on a Concat,
// "texplan_view_in0" on a MatMul) is an ordinary unknown attribute. Sharing
// and optimize do not read it, and the reference refuses it as unsupported.
TEST(Optimize, AttributeNamedLikeADecisionIsAnOrdinaryAttribute) {
  std::mt19937 rng(9);
  Graph g = sample(rng);
  auto concat_of = [](const Graph& h) {
    for (size_t k = 0; k < h.nodes.size(); ++k)
      if (h.nodes[k].op_type == "Concat") return k;
    return h.nodes.size();
  };
  const size_t k = concat_of(g);
  ASSERT_LT(k, g.nodes.size());
  g.nodes[k].attrs["texplan_elided"] = Attribute::of_int(1);
  const int cat = g.nodes[k].outputs[0];

  // Not elided: the Concat's output and inputs keep storage of their own.
  Graph same_input_twice = g;
  Node& twice = same_input_twice.nodes[k];
  twice.inputs = {twice.inputs[0], twice.inputs[0]};  // elided, this would throw (test above)
  StorageSharing s;
  ASSERT_NO_THROW(s = storage_sharing(same_input_twice));
  EXPECT_EQ(s.root[size_t(cat)], cat);
  EXPECT_EQ(s.root[size_t(twice.inputs[0])], twice.inputs[0]);
  s = storage_sharing(g);
  for (int t : g.nodes[k].inputs) EXPECT_EQ(s.root[size_t(t)], t);

  // optimize without concat elision elides nothing and leaves the attribute as given.
  OptimizeOptions no_elision;
  no_elision.concat_elision = false;
  Graph opt = g;
  EXPECT_EQ(optimize(opt, no_elision).elided_concats, 0);
  const size_t ko = concat_of(opt);
  ASSERT_LT(ko, opt.nodes.size());
  EXPECT_FALSE(opt.nodes[ko].decisions.elided);
  EXPECT_EQ(opt.nodes[ko].get_int("texplan_elided", 0), 1);

  // The reference knows no such Concat attribute.
  const HostTensor x = random_tensor({1, 4, 8, 8}, rng);
  try {
    reference::evaluate(g.nodes[k], {&x, &x});
    ADD_FAILURE() << "an unknown attribute was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unsupported attribute 'texplan_elided'"), std::string::npos) << e.what();
  }

  // An operand view is not read from an attribute.
  Node mm;
  mm.name = "mm";
  mm.op_type = "MatMul";
  mm.attrs["texplan_view_in0"] = Attribute::of_ints({0, 2, 2, 2, 1});
  EXPECT_FALSE(operand_view(mm, 0).has_value());
}

// Nor can a model file carry one: import checks a node's attributes against
// its operator's schema.
TEST(Optimize, ImportRefusesAnAttributeNamedLikeADecision) {
  test::OnnxBuilder b;
  b.input("a", {1, 2, 4, 4}).input("b", {1, 3, 4, 4});
  onnx::NodeProto* concat = b.node("Concat", {"a", "b"}, {"y"}, "cat");
  test::OnnxBuilder::attr_int(concat, "axis", 1);
  test::OnnxBuilder::attr_int(concat, "texplan_elided", 1);
  b.output("y");
  std::string bytes;
  b.m.SerializeToString(&bytes);
  try {
    import_onnx_bytes(bytes, "decision_attribute");
    ADD_FAILURE() << "a Concat attribute its schema lacks was imported";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("decision_attribute: node 'cat'"), std::string::npos) << what;
    EXPECT_NE(what.find("texplan_elided"), std::string::npos) << what;
  }
}

TEST(Optimize, MemoryOrderIsFastOnALargeGraph) {
  // A chain of 5000 two-branch blocks (10k+ nodes): the order pass must stay
  // cheap (no time asserted: the machine is shared; this guards quadratic blowups).
  Graph g;
  g.model_name = "chain";
  int x = tensor(g, "x", {1, 16});
  g.tensors[x].is_input = true;
  g.inputs = {x};
  for (int i = 0; i < 5000; ++i) {
    // "a" + n, not "a" + std::to_string(i): GCC 12 warns falsely (-Wrestrict) on the latter
    const std::string n = std::to_string(i);
    const int a = tensor(g, "a" + n, {1, 16}), b = tensor(g, "b" + n, {1, 16});
    const int y = tensor(g, "y" + n, {1, 16});
    node(g, "Exp", {x}, {a});
    node(g, "Tanh", {x}, {b});
    node(g, "Mul", {a, b}, {y});
    x = y;
  }
  g.tensors[x].is_output = true;
  g.outputs = {x};
  OptimizeOptions o;
  o.fuse = false;
  const OptimizeReport r = optimize(g, o);
  EXPECT_LE(r.lower_bound_bytes, r.raw_lower_bound_bytes);
  EXPECT_EQ(int(g.nodes.size()), 15000);
}

// A Transpose that moves only size-1 dims ([1, S, D] -> [S, 1, D], as in
// BERT's attention) and a pool of 1x1 windows and stride 1 (VGG's adaptive
// average pool) become Reshapes: views of their input, no storage of their
// own; a Transpose that moves data and a real pool stay. The output is the
// same either way.
TEST(Optimize, NodesThatMoveNoElementBecomeViews) {
  std::mt19937 rng(9);
  int x = 0;
  Graph g = graph_with_input("transposes", {1, 6, 5}, x);
  const int s = tensor(g, "s", {1, 6, 5}), v = tensor(g, "v", {6, 1, 5}), m = tensor(g, "m", {5, 1, 6}),
            y = tensor(g, "y", {5, 1, 6}), a = tensor(g, "a", {5, 1, 6}), p = tensor(g, "p", {5, 1, 3});
  node(g, "Sigmoid", {x}, {s});
  node(g, "Transpose", {s}, {v}, {{"perm", Attribute::of_ints({1, 0, 2})}});  // moves the 1 only
  node(g, "Transpose", {v}, {m}, {{"perm", Attribute::of_ints({2, 1, 0})}});  // moves data
  node(g, "Relu", {m}, {y});
  node(g, "AveragePool", {y}, {a}, {{"kernel_shape", Attribute::of_ints({1})}, {"strides", Attribute::of_ints({1})}});
  node(g, "MaxPool", {a}, {p}, {{"kernel_shape", Attribute::of_ints({2})}, {"strides", Attribute::of_ints({2})}});
  g.tensors[p].is_output = true;
  g.outputs = {p};
  g.topological_sort();
  const HostTensor input = random_tensor({1, 6, 5}, rng, -2, 2);
  const HostTensor want = run_cpu(g, input);
  const OptimizeReport r = optimize(g, {});
  EXPECT_EQ(r.viewed_nodes, 2);
  int transposes = 0, reshapes = 0, pools = 0;
  for (const auto& n : g.nodes)
    transposes += n.op_type == "Transpose", reshapes += n.op_type == "Reshape", pools += n.op_type == "MaxPool";
  EXPECT_EQ(transposes, 1);
  EXPECT_EQ(reshapes, 2);
  EXPECT_EQ(pools, 1);
  const StorageSharing sh = storage_sharing(g);
  EXPECT_EQ(sh.root[g.find("v")], g.find("s"));
  EXPECT_EQ(sh.root[g.find("a")], sh.root[g.find("y")]);
  expect_close(run_cpu(g, input), want);
}

// A scalar Div or Mul on a MatMul's input moves after the product, into
// its epilogue (BERT's q / sqrt(d) before q @ k^T): on either input, the
// scalar on either side of a Mul; not where the scaled tensor has another
// reader. The CPU executor computes the same output.
TEST(Optimize, ScalesOnProductInputsMoveIntoTheEpilogue) {
  std::mt19937 rng(4);
  int x = 0;
  Graph g = graph_with_input("scales", {2, 3, 4}, x);
  const int q = tensor(g, "q", {2, 3, 4}), k = tensor(g, "k", {2, 4, 5}), kk = tensor(g, "kk", {2, 4, 5}),
            s = tensor(g, "s", {2, 3, 5}), d = tensor(g, "d", {2, 3, 4}), t = tensor(g, "t", {2, 3, 5}),
            e = tensor(g, "e", {2, 3, 4}), u = tensor(g, "u", {2, 3, 5}), y = tensor(g, "y", {2, 3, 5});
  node(g, "Div", {x, scalar(g, "c", 2.5f)}, {q});                 // moves: q feeds one MatMul
  node(g, "Mul", {scalar(g, "h", 0.5f), weight(g, "w", {2, 4, 5}, rng)}, {k});  // moves too: scalar first
  node(g, "MatMul", {q, k}, {s});
  node(g, "Mul", {x, scalar(g, "m", 3.0f)}, {d});                 // stays: d is read twice
  node(g, "MatMul", {d, weight(g, "w2", {2, 4, 5}, rng)}, {t});
  node(g, "Neg", {d}, {e});
  node(g, "MatMul", {e, weight(g, "w3", {2, 4, 5}, rng)}, {u});
  node(g, "Add", {s, t}, {kk});
  g.tensors[kk].shape = {2, 3, 5};
  node(g, "Add", {kk, u}, {y});
  g.tensors[y].is_output = true;
  g.outputs = {y};
  g.topological_sort();
  const HostTensor input = random_tensor({2, 3, 4}, rng, -2, 2);
  const HostTensor want = run_cpu(g, input);
  optimize(g, {});
  int divs = 0, muls = 0;
  for (const auto& n : g.nodes) divs += n.op_type == "Div", muls += n.op_type == "Mul";
  EXPECT_EQ(divs, 0);
  EXPECT_EQ(muls, 1) << "the Mul read twice stays";
  int scaled = 0;
  for (const auto& n : g.nodes)
    if (n.op_type == "FusedMatMul")
      for (const std::string& i : n.attrs.at("program").strings) scaled += i.rfind("Div", 0) == 0 || i.rfind("Mul", 0) == 0;
  EXPECT_EQ(scaled, 2) << "both scales of the first product in its epilogue";
  expect_close(run_cpu(g, input), want);
}

// A scalar on a MatMul's input whose other operand is a weight no other
// node reads goes into the weight (GELU's final 0.5 before an MLP's second
// Linear): no Mul left and none in the product's epilogue, which starts with
// the bias and the residual; a Div the same. The CPU executor computes the
// same output.
TEST(Optimize, ScalesBeforeAWeightGoIntoTheWeight) {
  std::mt19937 rng(5);
  for (const char* op : {"Mul", "Div"}) {
    SCOPED_TRACE(op);
    int x = 0;
    Graph g = graph_with_input("scale_into_weight", {3, 8}, x);
    const int c = scalar(g, "half", std::string(op) == "Mul" ? 0.5f : 3.0f);
    const int h = tensor(g, "h", {3, 8}), p = tensor(g, "p", {3, 5}), q = tensor(g, "q", {3, 5}), r = tensor(g, "r", {3, 5}),
              y = tensor(g, "y", {3, 5});
    node(g, op, {x, c}, {h});
    node(g, "MatMul", {h, weight(g, "w", {8, 5}, rng)}, {p});
    node(g, "Add", {p, weight(g, "b", {5}, rng)}, {q});
    node(g, "MatMul", {x, weight(g, "w2", {8, 5}, rng)}, {r});  // the residual
    node(g, "Add", {r, q}, {y});
    g.tensors[y].is_output = true;
    g.outputs = {y};
    g.topological_sort();
    const HostTensor input = random_tensor({3, 8}, rng, -2, 2);
    const HostTensor want = run_cpu(g, input);
    optimize(g, {});
    for (const auto& n : g.nodes) {
      EXPECT_NE(n.op_type, op);
      if (n.op_type == "FusedMatMul") {
        for (const std::string& i : n.attrs.at("program").strings) EXPECT_EQ(i.rfind("Add", 0), 0u) << i;
      }
    }
    expect_close(run_cpu(g, input), want);
  }
}

// PyTorch's attention output: a 2-D Gemm, a Reshape and a Transpose of a
// size-1 dim back to [batch, tokens, width], the residual Add. The Add moves
// before the Reshapes (the residual reshaped instead: a view) into the
// Gemm's epilogue: one FusedMatMul, no Add; and the same outputs on the CPU
// executor and in a guarded PoCL session with texplan's GPU kernels, where
// the product is split over K onto the residual in place.
// A Reshape read by another node too, or a residual of another shape, stays.
TEST(Optimize, ElementwiseAfterAProductsReshapeMovesIntoItsEpilogue) {
  std::mt19937 rng(8);
  auto build = [&](bool second_reader) {
    int x = 0;
    Graph g = graph_with_input("out_proj", {1, 6, 64}, x);
    const int flat = tensor(g, "flat", {6, 64}), p = tensor(g, "p", {6, 5}), r = tensor(g, "r", {6, 1, 5}),
              t = tensor(g, "t", {1, 6, 5}), res = tensor(g, "res", {1, 6, 5}), y = tensor(g, "y", {1, 6, 5});
    node(g, "Reshape", {x, ints(g, "s0", {6, 64})}, {flat});
    node(g, "Gemm", {flat, weight(g, "w", {5, 64}, rng), weight(g, "b", {5}, rng)}, {p}, {{"transB", Attribute::of_int(1)}});
    node(g, "Reshape", {p, ints(g, "s1", {6, 1, 5})}, {r});
    node(g, "Transpose", {r}, {t}, {{"perm", Attribute::of_ints({1, 0, 2})}});
    node(g, "Sigmoid", {weight(g, "pre", {1, 6, 5}, rng)}, {res});  // the residual, an activation
    node(g, "Add", {res, t}, {y});
    g.tensors[y].is_output = true;
    g.outputs = {y};
    if (second_reader) {
      const int z = tensor(g, "z", {6, 1, 5});
      node(g, "Neg", {r}, {z});
      g.tensors[z].is_output = true;
      g.outputs.push_back(z);
    }
    g.topological_sort();
    return g;
  };
  Graph g = build(false);
  const HostTensor input = random_tensor({1, 6, 64}, rng, -2, 2);
  const HostTensor want = run_graph(g, input)[0];
  optimize(g, {});
  int adds = 0, products = 0;
  for (const Node& n : g.nodes) adds += n.op_type == "Add", products += n.op_type == "FusedMatMul";
  EXPECT_EQ(adds, 0);
  EXPECT_EQ(products, 1);
  expect_close(run_graph(g, input)[0], want);
  auto dev = test::test_device();
  expect_close(run_graph(g, input, dev)[0], want);
  expect_close(run_graph(
                   g, input, dev, [](const runtime::Session& s) { EXPECT_EQ(s.split_k_nodes().size(), 1u); },
                   {.conv = "32x32/s2"})[0],
               want);

  Graph kept = build(true);
  EXPECT_EQ(reshapes_after_products(kept), 0);
}

// A convolution over a batch of frames reshaped back to a clip, then its
// activation (volume ops, import/volume_ops.cpp): the Relu moves before
// the Reshape into the conv's epilogue; a Clip with constant bounds too.
TEST(Optimize, ActivationAfterAConvsReshapeMovesIntoItsEpilogue) {
  std::mt19937 rng(9);
  for (const std::string act : {"Relu", "Clip"}) {
    SCOPED_TRACE(act);
    int x = 0;
    Graph g = graph_with_input("frames", {4, 3, 6, 6}, x);
    const int c = tensor(g, "c", {4, 5, 6, 6}), r = tensor(g, "r", {1, 4, 5, 6, 6}), y = tensor(g, "y", {1, 4, 5, 6, 6});
    node(g, "Conv", {x, weight(g, "w", {5, 3, 3, 3}, rng), weight(g, "b", {5}, rng)}, {c},
         {{"pads", Attribute::of_ints({1, 1, 1, 1})}});
    node(g, "Reshape", {c, ints(g, "clip", {1, 4, 5, 6, 6})}, {r});
    std::vector<int> in = {r};
    if (act == "Clip") in.insert(in.end(), {weight(g, "lo", {}, rng), weight(g, "hi", {}, rng)});
    node(g, act, in, {y});
    g.tensors[y].is_output = true;
    g.outputs = {y};
    g.topological_sort();
    const HostTensor input = random_tensor({4, 3, 6, 6}, rng, -2, 2);
    const HostTensor want = run_graph(g, input)[0];
    optimize(g, {});
    ASSERT_EQ(g.nodes.size(), 2u);  // FusedConv, Reshape (a view)
    EXPECT_EQ(g.nodes[0].op_type, "FusedConv");
    EXPECT_EQ(g.nodes[1].op_type, "Reshape");
    expect_close(run_graph(g, input)[0], want);
    expect_close(run_graph(g, input, test::test_device())[0], want);
  }
}

// Products whose operands Slices and Transposes cut from another tensor read
// that tensor through strides (OperandView): t = s transposed as A of one
// product, q and k^T both cut from s as A and B of another; the Slices and
// Transposes are gone, the bound did not rise, and the CPU executor and a
// PoCL session (its CPU GEMM, and texplan's GPU kernels named) compute the
// same outputs.
TEST(Optimize, ProductOperandsReadThroughStrides) {
  std::mt19937 rng(12);
  int x = 0;
  Graph g = graph_with_input("strided", {2, 6, 4}, x);
  const int s = tensor(g, "s", {2, 6, 4}), t = tensor(g, "t", {2, 4, 6}), y1 = tensor(g, "y1", {2, 4, 5}),
            q = tensor(g, "q", {2, 3, 4}), k = tensor(g, "k", {2, 3, 4}), kt = tensor(g, "kt", {2, 4, 3}),
            y2 = tensor(g, "y2", {2, 3, 3});
  node(g, "Sigmoid", {x}, {s});
  node(g, "Transpose", {s}, {t}, {{"perm", Attribute::of_ints({0, 2, 1})}});
  node(g, "MatMul", {t, weight(g, "w", {6, 5}, rng)}, {y1});
  node(g, "Slice", {s, ints(g, "qs", {0}), ints(g, "qe", {3}), ints(g, "qa", {1})}, {q});
  node(g, "Slice", {s, ints(g, "ks", {3}), ints(g, "ke", {6}), ints(g, "ka", {1})}, {k});
  node(g, "Transpose", {k}, {kt}, {{"perm", Attribute::of_ints({0, 2, 1})}});
  node(g, "MatMul", {q, kt}, {y2});
  g.tensors[y1].is_output = g.tensors[y2].is_output = true;
  g.outputs = {y1, y2};
  g.topological_sort();
  const HostTensor input = random_tensor({2, 6, 4}, rng, -2, 2);
  auto run_all = [&](const Graph& gr, const std::shared_ptr<runtime::Device>& dev, const lower::KernelChoice& k = {}) {
    return run_graph(
        gr, input, dev,
        [](const runtime::Session& session) {
          EXPECT_EQ(session.kernel_launches(), 3) << "Sigmoid and the two products";
        },
        k);
  };
  const std::vector<HostTensor> want = run_all(g, nullptr);
  const OptimizeReport rep = optimize(g, {});
  EXPECT_EQ(rep.viewed_nodes, 4);
  EXPECT_LE(rep.lower_bound_bytes, rep.raw_lower_bound_bytes);
  int views = 0;
  for (const auto& n : g.nodes) {
    EXPECT_NE(n.op_type, "Transpose");
    EXPECT_NE(n.op_type, "Slice");
    for (int i = 0; i < 2; ++i) views += operand_view(n, i).has_value();
  }
  EXPECT_EQ(views, 3);
  auto expect_all = [&](const std::vector<HostTensor>& got) {
    ASSERT_EQ(got.size(), 2u);
    expect_close(got[0], want[0]);
    expect_close(got[1], want[1]);
  };
  expect_all(run_all(g, nullptr));
  auto dev = runtime::open_device("pocl");
  expect_all(run_all(g, dev));
  expect_all(run_all(g, dev, {.conv = "gpu"}));  // texplan's GPU kernels on the CPU device
}

// Squeeze-and-excitation: a = Sigmoid(x), s = Sigmoid(Conv(Relu(Conv(GAP(a))))),
// then Mul(a, s) read by a 1x1 conv (fused: the conv scales its input
// channels), by a 3x3 conv (stays) and, as another Mul, by a 1x1 conv and a
// Neg (stays: read twice). 30 pixels, not a multiple of a vector. The
// CPU executor and a PoCL session compute the same outputs; with the GPU
// kernels named on PoCL the scaled conv runs on the CPU fallback; and
// GPUs never get the rewrite (KernelCatalog::fused_for).
TEST(Optimize, ChannelScalesMoveIntoPointwiseConvs) {
  std::mt19937 rng(21);
  int x = 0;
  const int C = 8;
  Graph g = graph_with_input("squeeze_excite", {1, C, 5, 6}, x);
  const int a = tensor(g, "a", {1, C, 5, 6}), p = tensor(g, "p", {1, C, 1, 1}), r = tensor(g, "r", {1, 4, 1, 1}),
            rr = tensor(g, "rr", {1, 4, 1, 1}), e = tensor(g, "e", {1, C, 1, 1}), s = tensor(g, "s", {1, C, 1, 1});
  node(g, "Sigmoid", {x}, {a});
  node(g, "GlobalAveragePool", {a}, {p});
  node(g, "Conv", {p, weight(g, "w1", {4, C, 1, 1}, rng), weight(g, "b1", {4}, rng)}, {r});
  node(g, "Relu", {r}, {rr});
  node(g, "Conv", {rr, weight(g, "w2", {C, 4, 1, 1}, rng)}, {e});
  node(g, "Sigmoid", {e}, {s});
  const int m1 = tensor(g, "m1", {1, C, 5, 6}), y1 = tensor(g, "y1", {1, 12, 5, 6}), y1r = tensor(g, "y1r", {1, 12, 5, 6});
  node(g, "Mul", {a, s}, {m1});
  node(g, "Conv", {m1, weight(g, "w3", {12, C, 1, 1}, rng), weight(g, "b3", {12}, rng)}, {y1});
  node(g, "Relu", {y1}, {y1r});
  const int m2 = tensor(g, "m2", {1, C, 5, 6}), y2 = tensor(g, "y2", {1, 3, 5, 6});
  node(g, "Mul", {s, a}, {m2});  // scale first
  node(g, "Conv", {m2, weight(g, "w4", {3, C, 3, 3}, rng)}, {y2}, {{"pads", Attribute::of_ints({1, 1, 1, 1})}});
  const int m3 = tensor(g, "m3", {1, C, 5, 6}), y3 = tensor(g, "y3", {1, 5, 5, 6}), y4 = tensor(g, "y4", {1, C, 5, 6});
  node(g, "Mul", {a, s}, {m3});
  node(g, "Conv", {m3, weight(g, "w5", {5, C, 1, 1}, rng)}, {y3});
  node(g, "Neg", {m3}, {y4});
  for (int y : {y1r, y2, y3, y4}) g.tensors[y].is_output = true;
  g.outputs = {y1r, y2, y3, y4};
  g.topological_sort();
  const HostTensor input = random_tensor({1, C, 5, 6}, rng, -2, 2);
  auto run_all = [&](const Graph& gr, const std::shared_ptr<runtime::Device>& dev, size_t fallbacks,
                     const lower::KernelChoice& k = {}) {
    return run_graph(
        gr, input, dev, [&](const runtime::Session& session) { EXPECT_EQ(session.fallback_nodes().size(), fallbacks); },
        k);
  };
  const std::vector<HostTensor> want = run_all(g, nullptr, 0);
  EXPECT_FALSE(lower::kernel_catalog().fused_for("gpu").channel_scaled_conv);
  ASSERT_TRUE(lower::kernel_catalog().fused_for("cpu").channel_scaled_conv);
  const OptimizeReport rep = optimize(g, {.device_forms = lower::kernel_catalog().fused_for("cpu")});
  EXPECT_EQ(rep.fused_channel_scales, 1);
  int muls = 0, scaled = 0;
  for (const auto& n : g.nodes) {
    muls += n.op_type == "Mul";
    if (channel_scaled(n)) {
      ++scaled;
      EXPECT_EQ(n.op_type, "FusedConv");
      EXPECT_EQ(g.tensors[n.inputs[0]].name, "a") << "reads the unscaled tensor";
      EXPECT_EQ(g.tensors[n.inputs.back()].name, "s") << "the scale is the last input";
      EXPECT_EQ(g.tensors[n.outputs[0]].name, "y1r") << "the Relu stays its epilogue";
    }
  }
  EXPECT_EQ(scaled, 1);
  EXPECT_EQ(muls, 2) << "the Muls read by a 3x3 conv and read twice stay";
  auto expect_all = [&](const std::vector<HostTensor>& got) { expect_all_close(got, want); };
  expect_all(run_all(g, nullptr, 0));
  auto dev = runtime::open_device("pocl");
  expect_all(run_all(g, dev, 0));
  expect_all(run_all(g, dev, 1, {.conv = "gpu"}));  // texplan's GPU kernels on the CPU device: they refuse the scale
}

// A BatchNormalization + Relu read only by a 1x1 convolution (DenseNet's
// bottleneck) becomes the conv's channel program on GPUs: the conv reads the
// unactivated tensor and the GEMM applies x * s + b and Relu as it loads it.
// Not for a strided or 3x3 conv, an activation read twice, or an operand
// that is not one value per channel. The same outputs on the CPU executor
// and on texplan's GPU kernels (tiles, split-K, k-groups) on the CPU device.
TEST(Optimize, PerChannelProgramsGoIntoOneByOneConvs) {
  // Maps of 30 and 40 pixels: the GEMMs read the conv's input one element
  // at a time, and (the k-groups, KG_B4N: N a multiple of 4) four at a time.
  for (const int W : {6, 8}) {
  SCOPED_TRACE(W);
  std::mt19937 rng(23);
  int x = 0;
  const int C = 160;  // K past two 64-deep steps: k-groups take it
  Graph g = graph_with_input("preactivation", {1, C, 5, W}, x);
  const Shape xs = {1, C, 5, W};
  const int a = tensor(g, "a", xs), bn = tensor(g, "bn", xs), r = tensor(g, "r", xs), y1 = tensor(g, "y1", {1, 12, 5, W}),
            y1r = tensor(g, "y1r", {1, 12, 5, W});
  node(g, "Sigmoid", {x}, {a});
  const int var = weight(g, "var", {C}, rng);
  float* variance = g.tensors[var].value.data<float>();
  for (int c = 0; c < C; ++c) variance[c] = std::abs(variance[c]) + 0.1f;
  node(g, "BatchNormalization",
       {a, weight(g, "gamma", {C}, rng), weight(g, "beta", {C}, rng), weight(g, "mean", {C}, rng), var}, {bn});
  node(g, "Relu", {bn}, {r});
  node(g, "Conv", {r, weight(g, "w1", {12, C, 1, 1}, rng), weight(g, "b1", {12}, rng)}, {y1});
  node(g, "Relu", {y1}, {y1r});
  // Strided, 3x3, read twice, an operand of X's shape: these stay apart.
  const int m2 = tensor(g, "m2", xs), y2 = tensor(g, "y2", {1, 5, 3, (W + 1) / 2});
  node(g, "Mul", {a, weight(g, "s2", {1, C, 1, 1}, rng)}, {m2});
  node(g, "Conv", {m2, weight(g, "w2", {5, C, 1, 1}, rng)}, {y2}, {{"strides", Attribute::of_ints({2, 2})}});
  const int m3 = tensor(g, "m3", xs), y3 = tensor(g, "y3", {1, 3, 5, W});
  node(g, "Mul", {a, weight(g, "s3", {C, 1, 1}, rng)}, {m3});
  node(g, "Conv", {m3, weight(g, "w3", {3, C, 3, 3}, rng)}, {y3}, {{"pads", Attribute::of_ints({1, 1, 1, 1})}});
  const int m4 = tensor(g, "m4", xs), y4 = tensor(g, "y4", {1, 4, 5, W}), y5 = tensor(g, "y5", xs);
  node(g, "Add", {a, weight(g, "s4", {C, 1, 1}, rng)}, {m4});
  node(g, "Conv", {m4, weight(g, "w4", {4, C, 1, 1}, rng)}, {y4});
  node(g, "Neg", {m4}, {y5});
  const int m6 = tensor(g, "m6", xs), y6 = tensor(g, "y6", {1, 4, 5, W});
  node(g, "Mul", {a, x}, {m6});
  node(g, "Conv", {m6, weight(g, "w6", {4, C, 1, 1}, rng)}, {y6});
  // Squeeze-and-excitation's scale, computed in the run, the scale first.
  const int p7 = tensor(g, "p7", {1, C, 1, 1}), s7 = tensor(g, "s7", {1, C, 1, 1}), m7 = tensor(g, "m7", xs),
            y7 = tensor(g, "y7", {1, 6, 5, W});
  node(g, "GlobalAveragePool", {a}, {p7});
  node(g, "Sigmoid", {p7}, {s7});
  node(g, "Mul", {s7, a}, {m7});
  node(g, "Conv", {m7, weight(g, "w7", {6, C, 1, 1}, rng)}, {y7});
  for (int y : {y1r, y2, y3, y4, y5, y6, y7}) g.tensors[y].is_output = true;
  g.outputs = {y1r, y2, y3, y4, y5, y6, y7};
  g.topological_sort();
  const HostTensor input = random_tensor(xs, rng, -2, 2);
  auto run_all = [&](const Graph& gr, const std::shared_ptr<runtime::Device>& dev, const lower::KernelChoice& k = {}) {
    return run_on_device_kernels(gr, input, dev, k);
  };
  const std::vector<HostTensor> want = run_all(g, nullptr);
  Graph on_cpu = g;
  ASSERT_FALSE(lower::kernel_catalog().fused_for("cpu").channel_program_conv);
  EXPECT_EQ(optimize(on_cpu, {.device_forms = lower::kernel_catalog().fused_for("cpu")}).fused_channel_programs, 0);
  ASSERT_TRUE(lower::kernel_catalog().fused_for("gpu").channel_program_conv);
  const OptimizeReport rep = optimize(g, {.device_forms = lower::kernel_catalog().fused_for("gpu")});
  EXPECT_EQ(rep.fused_channel_programs, 2);
  int programs = 0;
  for (const auto& n : g.nodes) {
    const auto cp = channel_program(n);
    if (!cp) continue;
    ++programs;
    if (g.tensors[n.outputs[0]].name == "y7") {
      EXPECT_EQ(g.tensors[n.inputs[0]].name, "a") << "reads the unscaled tensor";
      EXPECT_EQ(cp->operands, 1);
      continue;
    }
    EXPECT_EQ(g.tensors[n.inputs[0]].name, "a") << "reads the tensor before BatchNormalization";
    EXPECT_EQ(g.tensors[n.outputs[0]].name, "y1r") << "the Relu after the conv stays its epilogue";
    EXPECT_EQ(cp->operands, 2) << "the scale and the shift";
    ASSERT_FALSE(cp->program.empty());
    EXPECT_EQ(cp->program.back().rfind("Relu", 0), 0u);
    EXPECT_EQ(operand_inputs_end(n), n.inputs.size() - 2);
  }
  EXPECT_EQ(programs, 2);
  auto expect_all = [&](const std::vector<HostTensor>& got) { expect_all_close(got, want); };
  expect_all(run_all(g, nullptr));
  auto dev = runtime::open_device("pocl");
  // The 40-pixel maps differ only in the k-groups' reads of B (each run
  // builds every kernel: minutes on a cold PoCL).
  const std::vector<const char*> variants =
      W == 6 ? std::vector<const char*>{"", "32x32", "64x64/s3", "32x32k4", "32x64k2", "16x32"}
             : std::vector<const char*>{"32x64k2"};
  for (const char* variant : variants) {
    SCOPED_TRACE(variant);
    expect_all(run_all(g, dev, {.conv = variant}));
  }
  }
}

// Squeeze-and-excitation (GlobalAveragePool, fc1 + SiLU, fc2 + a gate
// activation, the scale Mul, the projection): on GPUs fc2 becomes the
// gate of the projection's channel program, its kernel gone, with a bias
// and Sigmoid (EfficientNet) or without a bias and HardSigmoid
// (MobileNet-V3). Not where fc2's output is read twice, over more channels
// than the kernels hold or more weights than a work-group should read. The same outputs on the CPU
// executor and on texplan's GPU kernels (tiles, split-K, k-groups) on the
// CPU device.
TEST(Optimize, SqueezeExcitationGatesGoIntoTheProjection) {
  std::mt19937 rng(29);
  int x = 0;
  const int C = 72, J = 10, W = 6;  // K past the k-groups' two 32-deep steps
  const Shape xs = {1, C, 5, W};
  Graph g = graph_with_input("squeeze_excite_gates", xs, x);
  const int a = tensor(g, "a", xs), p = tensor(g, "p", {1, C, 1, 1});
  node(g, "Sigmoid", {x}, {a});
  node(g, "GlobalAveragePool", {a}, {p});
  // One block: fc1 + SiLU, fc2 + bias + Sigmoid, the scale, the projection.
  auto block = [&](const std::string& name, bool bias, const char* gate_op, bool read_twice) {
    const int r = tensor(g, name + "_r", {1, J, 1, 1}), rs = tensor(g, name + "_rs", {1, J, 1, 1}),
              h = tensor(g, name + "_h", {1, J, 1, 1}), e = tensor(g, name + "_e", {1, C, 1, 1}),
              sc = tensor(g, name + "_s", {1, C, 1, 1}), m = tensor(g, name + "_m", xs),
              y = tensor(g, name + "_y", {1, 12, 5, W});
    node(g, "Conv", {p, weight(g, name + "_w1", {J, C, 1, 1}, rng), weight(g, name + "_b1", {J}, rng)}, {r});
    node(g, "Sigmoid", {r}, {rs});
    node(g, "Mul", {r, rs}, {h});
    std::vector<int> fc2 = {h, weight(g, name + "_w2", {C, J, 1, 1}, rng)};
    if (bias) fc2.push_back(weight(g, name + "_b2", {C}, rng));
    node(g, "Conv", fc2, {e});
    node(g, gate_op, {e}, {sc});
    node(g, "Mul", {a, sc}, {m});
    node(g, "Conv", {m, weight(g, name + "_w3", {12, C, 1, 1}, rng), weight(g, name + "_b3", {12}, rng)}, {y});
    g.tensors[y].is_output = true;
    g.outputs.push_back(y);
    if (read_twice) {
      g.tensors[sc].is_output = true;
      g.outputs.push_back(sc);
    }
  };
  block("effnet", true, "Sigmoid", false);
  block("mbv3", false, "HardSigmoid", false);
  block("twice", true, "Sigmoid", true);
  g.topological_sort();
  const HostTensor input = random_tensor(xs, rng, -2, 2);
  auto run_all = [&](const Graph& gr, const std::shared_ptr<runtime::Device>& dev, const lower::KernelChoice& k = {}) {
    return run_on_device_kernels(gr, input, dev, k);
  };
  const std::vector<HostTensor> want = run_all(g, nullptr);
  const FusedForms gpu = lower::kernel_catalog().fused_for("gpu");
  ASSERT_GE(gpu.channel_gate_channels, C);
  ASSERT_GE(gpu.channel_gate_weights, C * J);
  {
    Graph few = g;
    FusedForms small = gpu;
    small.channel_gate_channels = C - 1;
    EXPECT_EQ(optimize(few, {.device_forms = small}).fused_channel_gates, 0) << "more channels than the kernels hold";
    Graph heavy = g;
    small = gpu;
    small.channel_gate_weights = C * J - 1;
    EXPECT_EQ(optimize(heavy, {.device_forms = small}).fused_channel_gates, 0) << "more weights than a gate may read";
    Graph off = g;
    EXPECT_EQ(optimize(off, {.channel_gate_fusion = false, .device_forms = gpu}).fused_channel_gates, 0);
  }
  const OptimizeReport rep = optimize(g, {.device_forms = gpu});
  EXPECT_EQ(rep.fused_channel_programs, 3);
  EXPECT_EQ(rep.fused_channel_gates, 2) << "fc2's output read twice keeps its node";
  int gates = 0;
  for (const auto& n : g.nodes) {
    const auto cp = channel_program(n);
    if (!cp || !cp->gate) continue;
    ++gates;
    const std::string y = g.tensors[n.outputs[0]].name;
    const bool bias = y == "effnet_y";
    EXPECT_EQ(cp->gate->bias, bias) << y;
    EXPECT_EQ(cp->operands, 1) << y;
    ASSERT_EQ(n.inputs.size(), operand_inputs_end(n) + (bias ? 3 : 2)) << y;
    const size_t at = operand_inputs_end(n);
    EXPECT_EQ(g.tensors[n.inputs[at]].shape, (Shape{1, J, 1, 1})) << y << ": h, fc1's output";
    EXPECT_EQ(g.tensors[n.inputs[at + 1]].shape, (Shape{C, J, 1, 1})) << y << ": fc2's weights";
    ASSERT_EQ(cp->gate->program.size(), 1u) << y;
    EXPECT_EQ(cp->gate->program[0].rfind(bias ? "Sigmoid" : "HardSigmoid", 0), 0u) << y;
  }
  EXPECT_EQ(gates, 2);
  auto expect_all = [&](const std::vector<HostTensor>& got) { expect_all_close(got, want); };
  expect_all(run_all(g, nullptr));
  auto dev = runtime::open_device("pocl");
  for (const char* variant : {"", "32x32", "64x64/s3", "32x32k4", "32x64k2"}) {
    SCOPED_TRACE(variant);
    expect_all(run_all(g, dev, {.conv = variant}));
  }
}

// A depthwise conv (its BatchNormalization folded, Clip or Relu after) read
// only by a 1x1 convolution becomes that convolution's depthwise input on
// GPUs: the conv reads the depthwise conv's input, its GEMM computes each
// depthwise sum as it loads X, and the depthwise output is never stored
// (a lower bound). 3x3 stride 1 with a bias and 5x5 stride 2 without, on
// odd maps; not a depthwise output read twice, a channel multiplier of 2,
// or a strided 1x1. The same outputs on the CPU executor and on texplan's
// GPU kernels (tiles, split-K, the k-groups' fallback) on the CPU device.
TEST(Optimize, DepthwiseConvsGoIntoOneByOneConvs) {
  std::mt19937 rng(24);
  int x = 0;
  const int C = 24;
  const Shape xs = {1, C, 9, 11};
  Graph g = graph_with_input("separable", xs, x);
  const int a = tensor(g, "a", xs);
  node(g, "Sigmoid", {x}, {a});
  auto dw = [&](const std::string& name, int in, int64_t k, int64_t s, int64_t oh, int64_t ow, bool bias,
                int64_t multiplier = 1) {
    const int out = tensor(g, name, {1, C * multiplier, oh, ow});
    std::vector<int> ins = {in, weight(g, name + "_w", {C * multiplier, 1, k, k}, rng)};
    if (bias) ins.push_back(weight(g, name + "_b", {C * multiplier}, rng));
    node(g, "Conv", ins, {out},
         {{"group", Attribute::of_int(C)}, {"kernel_shape", Attribute::of_ints({k, k})},
          {"strides", Attribute::of_ints({s, s})}, {"pads", Attribute::of_ints({k / 2, k / 2, k / 2, k / 2})}});
    return out;
  };
  // 3x3, stride 1, with bias, then BatchNormalization and Relu6 (Clip).
  const int d1 = dw("d1", a, 3, 1, 9, 11, true), bn1 = tensor(g, "bn1", xs), r1 = tensor(g, "r1", xs),
            y1 = tensor(g, "y1", {1, 16, 9, 11});
  const int var = weight(g, "var", {C}, rng);
  for (int c = 0; c < C; ++c) g.tensors[var].value.data<float>()[c] = std::abs(g.tensors[var].value.data<float>()[c]) + 0.1f;
  node(g, "BatchNormalization",
       {d1, weight(g, "gamma", {C}, rng), weight(g, "beta", {C}, rng), weight(g, "mean", {C}, rng), var}, {bn1});
  node(g, "Clip", {bn1, scalar(g, "lo", 0.0f), scalar(g, "hi", 0.25f)}, {r1});
  node(g, "Conv", {r1, weight(g, "w1", {16, C, 1, 1}, rng), weight(g, "b1", {16}, rng)}, {y1});
  // 5x5, stride 2, no bias, Relu; the 1x1 with a Relu of its own.
  const int d2 = dw("d2", a, 5, 2, 5, 6, false), r2 = tensor(g, "r2", {1, C, 5, 6}),
            y2 = tensor(g, "y2", {1, 40, 5, 6}), y2r = tensor(g, "y2r", {1, 40, 5, 6});
  node(g, "Relu", {d2}, {r2});
  node(g, "Conv", {r2, weight(g, "w2", {40, C, 1, 1}, rng)}, {y2});
  node(g, "Relu", {y2}, {y2r});
  // Read twice; a channel multiplier of 2; a strided 1x1: these stay apart.
  const int d3 = dw("d3", a, 3, 1, 9, 11, true), y3 = tensor(g, "y3", {1, 8, 9, 11}), n3 = tensor(g, "n3", xs);
  node(g, "Conv", {d3, weight(g, "w3", {8, C, 1, 1}, rng)}, {y3});
  node(g, "Neg", {d3}, {n3});
  const int d4 = dw("d4", a, 3, 1, 9, 11, true, 2), y4 = tensor(g, "y4", {1, 8, 9, 11});
  node(g, "Conv", {d4, weight(g, "w4", {8, 2 * C, 1, 1}, rng)}, {y4});
  const int d5 = dw("d5", a, 3, 1, 9, 11, true), y5 = tensor(g, "y5", {1, 8, 5, 6});
  node(g, "Conv", {d5, weight(g, "w5", {8, C, 1, 1}, rng)}, {y5}, {{"strides", Attribute::of_ints({2, 2})}});
  for (int y : {y1, y2r, y3, n3, y4, y5}) g.tensors[y].is_output = true;
  g.outputs = {y1, y2r, y3, n3, y4, y5};
  g.topological_sort();
  const HostTensor input = random_tensor(xs, rng, -2, 2);
  auto run_all = [&](const Graph& gr, const std::shared_ptr<runtime::Device>& dev, const lower::KernelChoice& k = {}) {
    return run_on_device_kernels(gr, input, dev, k);
  };
  const std::vector<HostTensor> want = run_all(g, nullptr);
  Graph on_cpu = g, apart = g;
  ASSERT_FALSE(lower::kernel_catalog().fused_for("cpu").depthwise_input_conv);
  EXPECT_EQ(optimize(on_cpu, {.device_forms = lower::kernel_catalog().fused_for("cpu")}).fused_depthwise_inputs, 0);
  ASSERT_TRUE(lower::kernel_catalog().fused_for("gpu").depthwise_input_conv);
  const OptimizeReport off =
      optimize(apart, {.depthwise_input_fusion = false, .device_forms = lower::kernel_catalog().fused_for("gpu")});
  EXPECT_EQ(off.fused_depthwise_inputs, 0);
  const OptimizeReport rep = optimize(g, {.device_forms = lower::kernel_catalog().fused_for("gpu")});
  EXPECT_EQ(rep.fused_depthwise_inputs, 2);
  EXPECT_EQ(g.nodes.size() + 2, apart.nodes.size());
  int fused = 0;
  for (const auto& n : g.nodes) {
    const auto cp = channel_program(n);
    if (!cp) continue;
    ASSERT_TRUE(cp->depthwise);
    ++fused;
    EXPECT_EQ(g.tensors[n.inputs[0]].name, "a") << "reads the depthwise conv's input";
    const std::string& y = g.tensors[n.outputs[0]].name;
    if (y == "y1") {
      EXPECT_EQ(cp->depthwise->kh, 3);
      EXPECT_EQ(cp->depthwise->sh, 1);
      EXPECT_EQ(cp->operands, 1) << "the depthwise bias (BatchNormalization folded into it)";
      ASSERT_EQ(cp->program.size(), 2u);
      EXPECT_EQ(cp->program[0], "Add x0 x1");
      EXPECT_EQ(cp->program[1].rfind("Clip t0", 0), 0u) << cp->program[1];
      EXPECT_EQ(g.tensors[n.inputs.back()].name.rfind("d1_w", 0), 0u) << "the depthwise weights last";
    } else {
      EXPECT_EQ(y, "y2r") << "the Relu after the 1x1 stays its epilogue";
      EXPECT_EQ(cp->depthwise->kw, 5);
      EXPECT_EQ(cp->depthwise->sw, 2);
      EXPECT_EQ(cp->depthwise->pads[3], 2);
      EXPECT_EQ(cp->operands, 0);
      EXPECT_EQ(cp->program, std::vector<std::string>{"Relu x0"});
    }
    EXPECT_EQ(operand_inputs_end(n), n.inputs.size() - size_t(cp->operands) - 1);
  }
  EXPECT_EQ(fused, 2);
  EXPECT_LT(rep.lower_bound_bytes, off.lower_bound_bytes) << "the depthwise outputs are never stored";
  expect_all_close(run_all(g, nullptr), want);
  expect_all_close(run_all(apart, nullptr), want);
  auto dev = runtime::open_device("pocl");
  for (const char* variant : {"", "32x32", "32x16", "64x64/s3", "32x32k4"}) {
    SCOPED_TRACE(variant);
    expect_all_close(run_all(g, dev, {.conv = variant}), want);
  }
  {
    // Split over K (64 channels) in 3 slices, over poisoned pools: a 1x1
    // whose Relu runs after its sums with no residual under them goes in one
    // launch (gemm.cl SPLITK_ONE), one with nothing after its sums with its
    // zeroing pass. Run twice: the second run finds the semaphores as the
    // first did.
    const Shape ws = {1, 64, 7, 5};
    int wx = 0;
    Graph w = graph_with_input("wide", ws, wx);
    const int wd = tensor(w, "wd", ws), wr = tensor(w, "wr", ws), wy = tensor(w, "wy", {1, 32, 7, 5}),
              wyr = tensor(w, "wyr", {1, 32, 7, 5}), we = tensor(w, "we", ws), wz = tensor(w, "wz", {1, 16, 7, 5});
    node(w, "Conv", {wx, weight(w, "wd_w", {64, 1, 3, 3}, rng)}, {wd},
         {{"group", Attribute::of_int(64)}, {"kernel_shape", Attribute::of_ints({3, 3})},
          {"pads", Attribute::of_ints({1, 1, 1, 1})}});
    node(w, "Relu", {wd}, {wr});
    node(w, "Conv", {wr, weight(w, "wy_w", {32, 64, 1, 1}, rng)}, {wy});
    node(w, "Relu", {wy}, {wyr});
    node(w, "Conv", {wx, weight(w, "we_w", {64, 1, 3, 3}, rng)}, {we},
         {{"group", Attribute::of_int(64)}, {"kernel_shape", Attribute::of_ints({3, 3})},
          {"pads", Attribute::of_ints({1, 1, 1, 1})}});
    node(w, "Conv", {we, weight(w, "wz_w", {16, 64, 1, 1}, rng)}, {wz});
    for (int y : {wyr, wz}) w.tensors[y].is_output = true;
    w.outputs = {wyr, wz};
    w.topological_sort();
    const HostTensor wide_input = random_tensor(ws, rng, -2, 2);
    const std::vector<HostTensor> wide_want = run_graph(w, wide_input);
    EXPECT_EQ(optimize(w, {.device_forms = lower::kernel_catalog().fused_for("gpu")}).fused_depthwise_inputs, 2);
    const PlanInput pin = make_usage_records(w);
    const plan::MemoryPlan plan = plan::plan_memory(pin.records, dev->info().profile, "best");
    runtime::SessionOptions o;
    o.guard = true;
    o.kernel_choice = {.conv = "64x64/s3"};
    runtime::Session split(w, pin, plan, dev, o);
    o.kernel_choice = {.conv = "64x64"};
    const runtime::Session whole(w, pin, plan, dev, o);
    EXPECT_EQ(split.split_k_nodes().size(), 2u) << ::testing::PrintToString(split.split_k_nodes());
    EXPECT_EQ(split.kernel_launches(), whole.kernel_launches() + 1) << "wz's zeroing pass only";
    for (int run = 0; run < 2; ++run) expect_all_close(split.run({wide_input}), wide_want);
    EXPECT_TRUE(split.guard_violations().empty());
  }
  // Half storage: the taps and the depthwise weights read as half.
  UsageOptions uo;
  uo.float_storage = runtime::float_storage(runtime::Precision::Fp16);
  const PlanInput hpin = make_usage_records(g, uo);
  const plan::MemoryPlan hplan = plan::plan_memory(hpin.records, dev->info().profile, "best");
  runtime::SessionOptions ho;
  ho.precision = runtime::Precision::Fp16;
  ho.guard = true;
  ho.kernel_choice = {.conv = "gpu"};
  runtime::Session half(g, hpin, hplan, dev, ho);
  EXPECT_TRUE(half.fallback_nodes().empty());
  const std::vector<HostTensor> got = half.run({input});
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_LE(test::rel_error(got[i], want[i]), 1e-2) << i;
  EXPECT_TRUE(half.guard_violations().empty());
}

// ShuffleNet's channel shuffles (Concat, Reshape, Transpose, Reshape) are
// written by the 1x1 conv computing one of their halves on GPUs: a block
// whose halves are both convs (one of them a depthwise conv into a 1x1, which
// GPUs fuse), and one passing its first half through. Not where the conv's
// half is read by another node too, nor on CPU devices or when switched
// off. The same outputs on the CPU executor and on texplan's GPU kernels
// (on PoCL, every tile family and split-K in one launch, guarded), and no
// higher bound.
TEST(Optimize, ChannelShufflesWrittenByTheirConvs) {
  std::mt19937 rng(31);
  const int64_t C = 64, H = 6, W = 5, half = C / 2;
  const Shape xs = {1, C, H, W}, hs = {1, half, H, W};
  int x = 0;
  Graph g = graph_with_input("shuffles", xs, x);
  auto shuffle = [&](const std::string& name, int a, int b) {
    const int cat = tensor(g, name + "_cat", xs), grouped = tensor(g, name + "_grouped", {1, 2, half, H, W}),
              moved = tensor(g, name + "_moved", {1, half, 2, H, W}), y = tensor(g, name, xs);
    node(g, "Concat", {a, b}, {cat}, {{"axis", Attribute::of_int(1)}});
    node(g, "Reshape", {cat, ints(g, name + "_s1", {1, 2, half, H, W})}, {grouped});
    node(g, "Transpose", {grouped}, {moved}, {{"perm", Attribute::of_ints({0, 2, 1, 3, 4})}});
    node(g, "Reshape", {moved, ints(g, name + "_s2", {1, C, H, W})}, {y});
    return y;
  };
  auto pointwise = [&](const std::string& name, int in, int64_t cin, bool bias) {  // 1x1 conv, Relu
    const int c = tensor(g, name + "_conv", hs), y = tensor(g, name, hs);
    std::vector<int> ins = {in, weight(g, name + "_w", {half, cin, 1, 1}, rng)};
    if (bias) ins.push_back(weight(g, name + "_b", {half}, rng));
    node(g, "Conv", ins, {c});
    node(g, "Relu", {c}, {y});
    return y;
  };
  auto halves = [&](const std::string& name, int in, int& first, int& second) {
    first = tensor(g, name + "_first", hs), second = tensor(g, name + "_second", hs);
    node(g, "Slice", {in, ints(g, name + "_s0", {0}), ints(g, name + "_e0", {half}), ints(g, name + "_a0", {1})}, {first});
    node(g, "Slice", {in, ints(g, name + "_s1", {half}), ints(g, name + "_e1", {C}), ints(g, name + "_a1", {1})}, {second});
  };
  // Both halves computed from the input, the second through a depthwise conv.
  const int a1 = pointwise("a1", x, C, true);
  const int d1 = tensor(g, "d1", xs);
  node(g, "Conv", {x, weight(g, "d1_w", {C, 1, 3, 3}, rng), weight(g, "d1_b", {C}, rng)}, {d1},
       {{"group", Attribute::of_int(C)}, {"kernel_shape", Attribute::of_ints({3, 3})},
        {"pads", Attribute::of_ints({1, 1, 1, 1})}});
  const int s1 = shuffle("s1", a1, pointwise("b1", d1, C, false));
  // The first half passed through, the second through a conv.
  int p1 = 0, p2 = 0;
  halves("p", s1, p1, p2);
  const int s2 = shuffle("s2", p1, pointwise("b2", p2, half, true));
  // The conv's half read by a Neg too: the Transpose stays.
  int q1 = 0, q2 = 0;
  halves("q", s2, q1, q2);
  const int b3 = pointwise("b3", q2, half, true), neg = tensor(g, "neg", hs);
  node(g, "Neg", {b3}, {neg});
  const int s3 = shuffle("s3", q1, b3);
  for (int y : {s2, s3, neg}) g.tensors[y].is_output = true;
  g.outputs = {s2, s3, neg};
  g.topological_sort();
  const HostTensor input = random_tensor(xs, rng, -2, 2);
  const std::vector<HostTensor> want = run_graph(g, input);

  const FusedForms gpu = lower::kernel_catalog().fused_for("gpu");
  ASSERT_TRUE(gpu.shuffled_output_conv);
  ASSERT_FALSE(lower::kernel_catalog().fused_for("cpu").shuffled_output_conv);
  Graph on_cpu = g, off = g;
  EXPECT_EQ(optimize(on_cpu, {.device_forms = lower::kernel_catalog().fused_for("cpu")}).fused_channel_shuffles, 0);
  const OptimizeReport apart = optimize(off, {.channel_shuffle_fusion = false, .device_forms = gpu});
  EXPECT_EQ(apart.fused_channel_shuffles, 0);
  const OptimizeReport rep = optimize(g, {.device_forms = gpu});
  EXPECT_EQ(rep.fused_channel_shuffles, 2);
  EXPECT_EQ(rep.fused_depthwise_inputs, 1);
  EXPECT_LE(rep.lower_bound_bytes, apart.lower_bound_bytes);
  EXPECT_EQ(off.nodes.size(), g.nodes.size() + 8) << "two Concats, Transposes and four Reshapes gone";
  int transposes = 0;
  std::set<std::string> written;
  for (const Node& n : g.nodes) {
    transposes += n.op_type == "Transpose";
    const std::optional<ShuffledOutput> s = shuffled_output(n);
    if (!s) continue;
    const std::string& y = g.tensors[size_t(n.outputs[0])].name;
    written.insert(y);
    EXPECT_EQ(g.tensors[size_t(n.outputs[0])].shape, xs);
    // The other half is the last epilogue input, of the conv's shape.
    const int other = n.inputs[operand_inputs_end(n) - 1];
    EXPECT_EQ(g.tensors[size_t(other)].shape, hs);
    if (y == "s2") {
      EXPECT_EQ(s->slot, 1) << "the conv computes the second half";
      EXPECT_EQ(g.tensors[size_t(other)].name, "p_first");
    } else {
      EXPECT_EQ(y, "s1");
      EXPECT_EQ(g.tensors[size_t(other)].name, s->slot == 1 ? "a1" : "b1");
    }
  }
  EXPECT_EQ(written, (std::set<std::string>{"s1", "s2"}));
  EXPECT_EQ(transposes, 1) << "s3's, whose conv half the Neg reads too";
  expect_all_close(run_graph(g, input), want);
  expect_all_close(run_graph(on_cpu, input), want);
  auto dev = runtime::open_device("pocl");
  std::vector<std::string> writers;
  for (const Node& n : g.nodes)
    if (shuffled_output(n)) writers.push_back(n.name + " (FusedConv)");
  for (const char* variant : {"", "32x32", "32x16", "64x64/s3", "32x32k4"}) {
    SCOPED_TRACE(variant);
    const bool split = std::string(variant).find("/s") != std::string::npos;
    expect_all_close(run_graph(g, input, dev,
                               [&](const runtime::Session& s) {
                                 EXPECT_TRUE(s.fallback_nodes().empty());
                                 // A writer with a depthwise input splits K in one launch where
                                 // forced (and by shape, unforced); forced tiles alone do not.
                                 int split_writers = 0;
                                 for (const std::string& n : s.split_k_nodes())
                                   split_writers += std::count(writers.begin(), writers.end(), n) > 0;
                                 if (*variant) EXPECT_EQ(split_writers > 0, split) << ::testing::PrintToString(s.split_k_nodes());
                               },
                               {.conv = variant}),
                     want);
  }
}

// Squeeze-and-excitation's two fully connected layers (1x1 convs of the
// pooled vector, SiLU between, Sigmoid after) become one FusedMlp whose
// kernel keeps the hidden vector in local memory; not where the hidden
// vector is read twice, nor for a 1x1 conv of a map of more than one pixel.
// The same outputs on the CPU executor, PoCL's kernels and the form for
// other devices (256 items a group), at EfficientNet's smallest shape and at
// one of two images whose layers are longer than a group (300 outputs, 70
// hidden rows, neither a multiple of 4).
TEST(Optimize, FullyConnectedPairsBecomeOneMlp) {
  EXPECT_FALSE(lower::kernel_catalog().fused_for("gpu").mlp);
  ASSERT_TRUE(lower::kernel_catalog().fused_for("cpu").mlp);
  auto dev = runtime::open_device("pocl");
  for (const auto& [N, C, H] : {std::array<int64_t, 3>{1, 12, 5}, std::array<int64_t, 3>{2, 300, 70}}) {
    SCOPED_TRACE(C);
    std::mt19937 rng(22);
    int x = 0;
    Graph g = graph_with_input("excitation", {N, C, 5, 6}, x);
    const int p = tensor(g, "p", {N, C, 1, 1}), r = tensor(g, "r", {N, H, 1, 1}), rs = tensor(g, "rs", {N, H, 1, 1}),
              rm = tensor(g, "rm", {N, H, 1, 1}), e = tensor(g, "e", {N, C, 1, 1}), s = tensor(g, "s", {N, C, 1, 1});
    node(g, "GlobalAveragePool", {x}, {p});
    node(g, "Conv", {p, weight(g, "w1", {H, C, 1, 1}, rng), weight(g, "b1", {H}, rng)}, {r});
    node(g, "Sigmoid", {r}, {rs});
    node(g, "Mul", {r, rs}, {rm});  // SiLU
    node(g, "Conv", {rm, weight(g, "w2", {C, H, 1, 1}, rng), weight(g, "b2", {C}, rng)}, {e});
    node(g, "Sigmoid", {e}, {s});
    // The hidden vector read twice: both convs stay.
    const int r2 = tensor(g, "r2", {N, 3, 1, 1}), e2 = tensor(g, "e2", {N, 7, 1, 1}), n2 = tensor(g, "n2", {N, 3, 1, 1});
    node(g, "Conv", {p, weight(g, "w3", {3, C, 1, 1}, rng)}, {r2});
    node(g, "Conv", {r2, weight(g, "w4", {7, 3, 1, 1}, rng)}, {e2});
    node(g, "Neg", {r2}, {n2});
    // A map of 30 pixels: not fully connected layers.
    const int m = tensor(g, "m", {N, 4, 5, 6}), y = tensor(g, "y", {N, 2, 5, 6});
    node(g, "Conv", {x, weight(g, "w5", {4, C, 1, 1}, rng)}, {m});
    node(g, "Conv", {m, weight(g, "w6", {2, 4, 1, 1}, rng)}, {y});
    for (int t : {s, e2, n2, y}) g.tensors[t].is_output = true;
    g.outputs = {s, e2, n2, y};
    g.topological_sort();
    const HostTensor input = random_tensor({N, C, 5, 6}, rng, -2, 2);
    auto run_all = [&](const Graph& gr, const std::shared_ptr<runtime::Device>& d, const lower::KernelChoice& k = {}) {
      return run_on_device_kernels(gr, input, d, k);
    };
    const std::vector<HostTensor> want = run_all(g, nullptr);
    Graph unfused = g;
    OptimizeOptions off;
    off.mlp_fusion = false;
    EXPECT_EQ(optimize(unfused, off).fused_mlps, 0);
    const OptimizeReport rep = optimize(g, {.device_forms = lower::kernel_catalog().fused_for("cpu")});
    EXPECT_EQ(rep.fused_mlps, 1);
    int mlps = 0, convs = 0;
    for (const auto& n : g.nodes) {
      convs += n.op_type == "Conv" || n.op_type == "FusedConv";
      if (n.op_type != "FusedMlp") continue;
      ++mlps;
      EXPECT_EQ(g.tensors[n.inputs[0]].name, "p");
      EXPECT_EQ(g.tensors[n.inputs[3]].name, "w2");
      EXPECT_EQ(g.tensors[n.outputs[0]].name, "s") << "the Sigmoid stays its program";
      EXPECT_EQ(Epilogue::parse(n).code.size(), 1u);
      Node hidden;
      hidden.attrs["program"] = n.attrs.at("hidden_program");
      EXPECT_EQ(Epilogue::parse(hidden).code.size(), 2u) << "SiLU: Sigmoid, Mul";
    }
    EXPECT_EQ(mlps, 1);
    EXPECT_EQ(convs, 4) << "the pair read twice and the 30-pixel pair stay";
    auto expect_all = [&](const std::vector<HostTensor>& got) { expect_all_close(got, want); };
    expect_all(run_all(g, nullptr));
    expect_all(run_all(g, dev));
    expect_all(run_all(g, dev, {.conv = "gpu"}));
  }
}

// BERT's attention as torch exports it: q, k and v cut from one projection
// P and split into heads. Read through strides back to P, all three would
// keep P alive until the last product (v's, after the softmax) where the
// copies let it die at the cuts: the bound would rise. Decided one operand
// at a time, q and k read P (it dies at their product, before the softmax)
// and v reads its cut: one Slice left of the nine nodes, the bound no
// higher than with no strided operands at all. (With attention fusion on,
// the three products are one FusedAttention: test_fused_attention.cpp.)
TEST(Optimize, StridedOperandsNeverRaiseTheBound) {
  std::mt19937 rng(13);
  int x = 0;
  Graph g = graph_with_input("attention", {8, 4}, x);
  const int p = tensor(g, "p", {8, 12});
  node(g, "MatMul", {x, weight(g, "wqkv", {4, 12}, rng)}, {p});
  auto head_split = [&](const char* name, int64_t from, std::vector<int64_t> perm, Shape out) {
    const std::string n = name;
    const int cut = tensor(g, n + "_cut", {8, 4}), r = tensor(g, n + "_r", {8, 2, 2}), t = tensor(g, n, out);
    node(g, "Slice", {p, ints(g, n + "_s", {from}), ints(g, n + "_e", {from + 4}), ints(g, n + "_a", {1})}, {cut});
    node(g, "Reshape", {cut, ints(g, n + "_shape", {8, 2, 2})}, {r});
    node(g, "Transpose", {r}, {t}, {{"perm", Attribute::of_ints(perm)}});
    return t;
  };
  const int q = head_split("q", 0, {1, 0, 2}, {2, 8, 2}), k = head_split("k", 4, {1, 2, 0}, {2, 2, 8}),
            v = head_split("v", 8, {1, 0, 2}, {2, 8, 2});  // all three cut before the products, as torch orders them
  const int sc = tensor(g, "scores", {2, 8, 8}), sm = tensor(g, "sm", {2, 8, 8}), o = tensor(g, "o", {2, 8, 2});
  node(g, "MatMul", {q, k}, {sc});
  node(g, "Softmax", {sc}, {sm}, {{"axis", Attribute::of_int(-1)}});
  node(g, "MatMul", {sm, v}, {o});
  g.tensors[o].is_output = true;
  g.outputs = {o};
  g.topological_sort();
  const HostTensor input = random_tensor({8, 4}, rng, -2, 2);
  const HostTensor want = run_cpu(g, input);
  Graph unviewed = g, copies = g;
  OptimizeOptions no_strides;
  no_strides.strided_operands = false;
  no_strides.attention_fusion = false;
  optimize(copies, no_strides);
  int copy_transposes = 0;
  for (const auto& n : copies.nodes) copy_transposes += n.op_type == "Transpose";
  EXPECT_EQ(copy_transposes, 3) << "--no-strided-operands keeps the copies";
  EXPECT_TRUE(lower::kernel_catalog().fused_for("gpu").strided_operands);
  EXPECT_FALSE(lower::kernel_catalog().fused_for("cpu").strided_operands);
  const OptimizeReport rep = optimize(g, {.attention_fusion = false});
  int transposes = 0, slices = 0;
  for (const auto& n : g.nodes) {
    transposes += n.op_type == "Transpose";
    slices += n.op_type == "Slice";
    if ((n.op_type != "MatMul" && n.op_type != "FusedMatMul") || g.tensors[n.inputs[0]].name == "x") continue;
    for (int slot = 0; slot < 2; ++slot) {
      const std::string src = g.tensors[n.inputs[size_t(slot)]].name;
      if (src == "sm") continue;  // the softmax is read whole
      EXPECT_TRUE(operand_view(n, slot).has_value()) << n.name << " operand " << slot;
      EXPECT_EQ(src, g.tensors[n.inputs[0]].name == "sm" ? "v_cut" : "p") << n.name << " operand " << slot;
    }
  }
  EXPECT_EQ(transposes, 0);
  EXPECT_EQ(slices, 1);
  EXPECT_LE(rep.lower_bound_bytes, rep.raw_lower_bound_bytes);
  // No higher than with no strided operands at all.
  OptimizeOptions no_fusion;
  no_fusion.fuse = false;
  EXPECT_LE(rep.lower_bound_bytes, optimize(unviewed, no_fusion).lower_bound_bytes);
  expect_close(run_cpu(g, input), want);
  expect_close(run_graph(g, input, runtime::open_device("pocl")).at(0), want);
}

// torch's unbind of q and k (one projection reshaped, its heads' axis moved
// first, then a Gather of one constant index each) read through strides
// straight from the projection: the Reshape, the Transposes and the Gathers
// run no kernel, and the bound falls (the copies of the moved projection
// are gone). Either view alone would raise it (the projection alive beside
// the other's copies): only both at once fit. CPU executor and a guarded
// PoCL session agree with the graph as given.
TEST(Optimize, GathersOfOneIndexBecomeStridedOperands) {
  std::mt19937 rng(21);
  int x = 0;
  Graph g = graph_with_input("unbind", {8, 4}, x);
  const int p = tensor(g, "p", {8, 12}), r = tensor(g, "r", {8, 3, 4}), t = tensor(g, "t", {3, 8, 4});
  node(g, "MatMul", {x, weight(g, "wqkv", {4, 12}, rng)}, {p});
  node(g, "Reshape", {p, ints(g, "shape", {8, 3, 4})}, {r});
  node(g, "Transpose", {r}, {t}, {{"perm", Attribute::of_ints({1, 0, 2})}});
  auto scalar = [&](const char* name, int64_t v) {
    const int i = ints(g, name, {v});
    g.tensors[i].shape = {};
    g.tensors[i].value.shape = {};
    return i;
  };
  const int q = tensor(g, "q", {8, 4}), k = tensor(g, "k", {8, 4}), kt = tensor(g, "kt", {4, 8});
  node(g, "Gather", {t, scalar("i0", 0)}, {q}, {{"axis", Attribute::of_int(0)}});
  node(g, "Gather", {t, scalar("i1", -2)}, {k}, {{"axis", Attribute::of_int(0)}});  // index 1, counted from the end
  node(g, "Transpose", {k}, {kt}, {{"perm", Attribute::of_ints({1, 0})}});
  const int sc = tensor(g, "scores", {8, 8}), y = tensor(g, "y", {8, 8});
  node(g, "MatMul", {q, kt}, {sc});
  node(g, "Tanh", {sc}, {y});
  g.tensors[y].is_output = true;
  g.outputs = {y};
  g.topological_sort();
  const HostTensor input = random_tensor({8, 4}, rng, -2, 2);
  const HostTensor want = run_cpu(g, input);
  const OptimizeReport rep = optimize(g, {});
  int moves = 0, views = 0;
  for (const auto& n : g.nodes) {
    moves += n.op_type == "Transpose" || n.op_type == "Gather" || n.op_type == "Reshape";
    if ((n.op_type != "MatMul" && n.op_type != "FusedMatMul") || g.tensors[n.inputs[0]].name == "x") continue;
    for (int slot = 0; slot < 2; ++slot) {
      views += operand_view(n, slot).has_value();
      EXPECT_EQ(g.tensors[n.inputs[size_t(slot)]].name, "p");
    }
  }
  EXPECT_EQ(moves, 0);
  EXPECT_EQ(views, 2);
  EXPECT_LT(rep.lower_bound_bytes, rep.raw_lower_bound_bytes);
  expect_close(run_cpu(g, input), want);
  expect_close(run_graph(g, input, runtime::open_device("pocl")).at(0), want);
}

// A Slice of a contiguous channel range of a batch-1 tensor becomes a view
// at its byte offset (no kernel, no storage) unless it feeds a Concat (which
// it then writes into, the Concat elided); the bound does not rise, the CPU
// executor and a guarded PoCL session compute the same output.
TEST(Optimize, ContiguousSlicesBecomeViews) {
  std::mt19937 rng(10);
  int x = 0;
  Graph g = graph_with_input("slices", {1, 8, 3, 5}, x);
  const int s = tensor(g, "s", {1, 8, 3, 5}), hi = tensor(g, "hi", {1, 4, 3, 5}), lo = tensor(g, "lo", {1, 4, 3, 5}),
            r = tensor(g, "r", {1, 4, 3, 5}), cat = tensor(g, "cat", {1, 8, 3, 5}), y = tensor(g, "y", {1, 8, 3, 5});
  node(g, "Sigmoid", {x}, {s});
  node(g, "Slice", {s, ints(g, "hs", {4}), ints(g, "he", {8}), ints(g, "ha", {1})}, {hi});  // a view at 4 channels
  node(g, "Slice", {s, ints(g, "ls", {0}), ints(g, "le", {4}), ints(g, "la", {1})}, {lo});  // into the Concat: a kernel
  node(g, "Conv", {hi, weight(g, "w", {4, 4, 3, 3}, rng)}, {r}, {{"pads", Attribute::of_ints({1, 1, 1, 1})}});
  node(g, "Concat", {lo, r}, {cat}, {{"axis", Attribute::of_int(1)}});
  node(g, "Tanh", {cat}, {y});
  g.tensors[y].is_output = true;
  g.outputs = {y};
  g.topological_sort();
  const HostTensor input = random_tensor({1, 8, 3, 5}, rng, -2, 2);
  const HostTensor want = run_cpu(g, input);
  const OptimizeReport rep = optimize(g, {});
  EXPECT_EQ(rep.viewed_nodes, 1);
  EXPECT_LE(rep.lower_bound_bytes, rep.raw_lower_bound_bytes);
  const StorageSharing sh = storage_sharing(g);
  EXPECT_EQ(sh.root[g.find("hi")], sh.root[g.find("s")]);
  EXPECT_EQ(sh.offset[g.find("hi")], sh.offset[g.find("s")] + 4 * 3 * 5 * 4);
  EXPECT_NE(sh.root[g.find("lo")], sh.root[g.find("s")]);
  expect_close(run_cpu(g, input), want);
  PlanInput pin = make_usage_records(g);
  auto dev = runtime::open_device("pocl");
  plan::MemoryPlan plan = plan::plan_memory(pin.records, dev->info().profile, "best");
  runtime::SessionOptions o;
  o.guard = true;
  runtime::Session session(g, pin, plan, dev, o);
  expect_close(session.run({input}).at(0), want);
  EXPECT_TRUE(session.guard_violations().empty());
  EXPECT_EQ(session.kernel_launches(), 4) << "Sigmoid, the Slice into the Concat, Conv, Tanh";
}

// ShuffleNet's blocks: the half a block passes through is a Slice of the
// previous block's channel shuffle into an elided Concat. Its input's storage
// moves into the Concat's output, so the Slice is a view and runs nothing,
// where the other half was read for the last time before the branch's last
// conv writes over it; where something reads it later (`late_reader`), the
// Slice stays a copy. Outputs as the CPU executor's, guard clean.
TEST(Optimize, SlicesThatAConcatPassesThroughBecomeViewsWhereLifetimesAllow) {
  for (const bool late_reader : {false, true}) {
    SCOPED_TRACE(late_reader ? "the shuffled half read again at the end" : "ShuffleNet's blocks");
    std::mt19937 rng(24);
    int x = 0;
    const Shape full = {1, 8, 3, 5}, half = {1, 4, 3, 5};
    Graph g = graph_with_input("shuffle", full, x);
    // One block: lo and hi of `in`, hi through a 1x1 and a 3x3 conv, then Concat(lo, b).
    auto block = [&](int in, const std::string& p) {
      const int hi = tensor(g, p + "hi", half), lo = tensor(g, p + "lo", half), c = tensor(g, p + "c", half),
                b = tensor(g, p + "b", half), cat = tensor(g, p + "cat", full);
      node(g, "Slice", {in, ints(g, p + "hs", {4}), ints(g, p + "he", {8}), ints(g, p + "ha", {1})}, {hi});
      node(g, "Slice", {in, ints(g, p + "ls", {0}), ints(g, p + "le", {4}), ints(g, p + "la", {1})}, {lo});
      node(g, "Conv", {hi, weight(g, p + "w1", {4, 4, 1, 1}, rng)}, {c});
      node(g, "Conv", {c, weight(g, p + "w2", {4, 4, 3, 3}, rng)}, {b}, {{"pads", Attribute::of_ints({1, 1, 1, 1})}});
      node(g, "Concat", {lo, b}, {cat}, {{"axis", Attribute::of_int(1)}});
      return cat;
    };
    const int s = tensor(g, "s", full);
    node(g, "Sigmoid", {x}, {s});
    const int cat = block(s, "a_");
    const int r5 = tensor(g, "r5", {1, 2, 4, 3, 5}), t5 = tensor(g, "t5", {1, 4, 2, 3, 5}),
              shuffled = tensor(g, "shuffled", full);
    node(g, "Reshape", {cat, ints(g, "to5", {1, 2, 4, 3, 5})}, {r5});
    node(g, "Transpose", {r5}, {t5}, {{"perm", Attribute::of_ints({0, 2, 1, 3, 4})}});
    node(g, "Reshape", {t5, ints(g, "to4", {1, 8, 3, 5})}, {shuffled});
    const int cat2 = block(shuffled, "b_");
    const int y = tensor(g, "y", full);
    node(g, "Tanh", {cat2}, {y});
    g.tensors[y].is_output = true;
    g.outputs = {y};
    if (late_reader) {
      const int z = tensor(g, "z", half);
      node(g, "Add", {g.find("b_hi"), g.find("b_b")}, {z});
      g.tensors[z].is_output = true;
      g.outputs.push_back(z);
    }
    g.topological_sort();
    const HostTensor input = random_tensor(full, rng, -2, 2);
    const std::vector<HostTensor> want = run_graph(g, input);
    // The Concats elided whether or not that lowers this small graph's bound.
    OptimizeOptions no_views;
    no_views.concat_slice_views = false;
    optimize(g, no_views);
    for (Node& n : g.nodes)
      if (n.op_type == "Concat") n.decisions.elided = true;
    const int64_t bound = graph_lower_bound(g);
    EXPECT_EQ(slices_into_concats_to_views(g), late_reader ? 1 : 2);
    EXPECT_LE(graph_lower_bound(g), bound);
    const StorageSharing sh = storage_sharing(g);
    EXPECT_EQ(sh.root[g.find("s")], sh.root[g.find("a_cat")]) << "the Sigmoid writes into the first Concat";
    EXPECT_EQ(sh.root[g.find("shuffled")] == sh.root[g.find("b_cat")], !late_reader);
    for (const Node& n : g.nodes) {
      if (n.op_type == "Concat") {
        EXPECT_TRUE(n.decisions.elided) << n.name;
      }
    }
    // Sigmoid, two convs a block, the shuffle's Transpose, Tanh (and the Add,
    // and the second block's Slice copy, where a late reader keeps it).
    expect_all_close(run_graph(g, input, runtime::open_device("pocl"),
                               [&](const runtime::Session& session) {
                                 EXPECT_EQ(session.kernel_launches(), late_reader ? 9 : 7);
                               }),
                     want);
  }
}

// A Gather of one constant index along an axis with only 1s before it (a
// batch-1 sequence's [CLS] row, scalar or one-element index) is a view of
// its input at that row's offset: it runs nothing, and the node after it
// reads the row in place (products read such Gathers through strides
// instead: the test above). A batch of two, or an axis with a dim above 1
// before it, moves data: a kernel, which takes the Sigmoid after it.
TEST(Optimize, GathersOfOneRowAreViews) {
  std::mt19937 rng(7);  // the input's values
  for (auto [shape, axis, index, scalar_index, view] :
       {std::tuple<Shape, int64_t, int64_t, bool, bool>{{1, 5, 8}, 1, 2, true, true},
        {{1, 5, 8}, 1, -1, false, true},
        {{1, 5, 8}, -2, 0, true, true},
        {{2, 5, 8}, 1, 2, true, false},
        {{1, 5, 8}, 2, 3, true, false}}) {
    SCOPED_TRACE("axis " + std::to_string(axis) + " index " + std::to_string(index));
    int x = 0;
    Graph g = graph_with_input("gather_views", shape, x);
    const int r = tensor(g, "r", shape);
    node(g, "Relu", {x}, {r});
    const int64_t a = axis < 0 ? axis + int64_t(shape.size()) : axis;
    Shape row = shape;
    if (scalar_index) row.erase(row.begin() + a);
    else row[size_t(a)] = 1;
    const int idx = ints(g, "idx", {index});
    if (scalar_index) g.tensors[idx].shape = {}, g.tensors[idx].value.shape = {};
    const int picked = tensor(g, "picked", row);
    node(g, "Gather", {r, idx}, {picked}, {{"axis", Attribute::of_int(axis)}});
    const int y = tensor(g, "y", row);
    node(g, "Sigmoid", {picked}, {y});
    g.tensors[y].is_output = true;
    g.outputs = {y};
    g.topological_sort();
    const HostTensor input = random_tensor(shape, rng, -2, 2);
    const std::vector<HostTensor> want = run_graph(g, input);
    optimize(g, OptimizeOptions{});
    // A view stays a Gather; else the Sigmoid joins it (FusedGather).
    const Node* gather = nullptr;
    for (const Node& n : g.nodes)
      if (n.op_type == (view ? "Gather" : "FusedGather")) gather = &n;
    ASSERT_NE(gather, nullptr);
    if (view) {
      const int64_t dim = shape[size_t(a)], i = index < 0 ? index + dim : index;
      int64_t row_bytes = 4;
      for (size_t d = size_t(a) + 1; d < shape.size(); ++d) row_bytes *= shape[d];
      EXPECT_EQ(gather->decisions.view_offset, i * row_bytes);
      const StorageSharing sh = storage_sharing(g);
      EXPECT_EQ(sh.root[size_t(picked)], sh.root[size_t(r)]);
    }
    expect_all_close(run_graph(g, input, runtime::open_device("pocl"),
                               [&](const runtime::Session& session) {
                                 EXPECT_EQ(session.kernel_launches(), 2);  // Relu, Sigmoid or FusedGather
                               }),
                     want);
  }
}

// An embedding lookup with the position embeddings added to it (BERT's
// first nodes) becomes one FusedGather that computes what the nodes did, on
// the CPU executor and on PoCL with its row kernel and with the GPU kernels;
// an index out of range is refused naming the node. A Gather whose output is
// read elsewhere too, or whose data are not floats, stays apart.
TEST(Optimize, GathersTakeTheElementwiseChainAfterThem) {
  std::mt19937 rng(3);
  for (const bool gpu_kernels : {false, true}) {
    SCOPED_TRACE(gpu_kernels ? "GPU kernels" : "PoCL's kernels");
    int ids = 0;
    Graph g = graph_with_input("embedding", {1, 6}, ids);
    g.tensors[ids].dtype = DataType::Int64;
    const int table = weight(g, "table", {10, 32}, rng), pos = weight(g, "pos", {1, 6, 32}, rng);
    const int e = tensor(g, "e", {1, 6, 32}), s = tensor(g, "s", {1, 6, 32}), y = tensor(g, "y", {1, 6, 32});
    node(g, "Gather", {table, ids}, {e});
    node(g, "Add", {e, pos}, {s});
    node(g, "Tanh", {s}, {y});
    g.tensors[y].is_output = true;
    g.outputs = {y};
    g.topological_sort();
    HostTensor input(DataType::Int64, {1, 6});
    const std::vector<int64_t> picks = {3, 0, 9, -1, 5, 3};
    std::copy(picks.begin(), picks.end(), input.data<int64_t>());
    const std::vector<HostTensor> want = run_graph(g, input);
    const OptimizeReport r = optimize(g, OptimizeOptions{});
    EXPECT_EQ(r.fused_gather, 1);
    ASSERT_EQ(g.nodes.size(), 1u);
    EXPECT_EQ(g.nodes[0].op_type, "FusedGather");
    EXPECT_EQ(g.nodes[0].attrs.at("program").strings, (std::vector<std::string>{"Add x0 x1", "Tanh t0"}));
    expect_all_close(run_graph(g, input), want);
    lower::KernelChoice kernels;
    if (gpu_kernels) kernels.conv = "gpu";
    const auto dev = runtime::open_device("pocl");
    expect_all_close(run_graph(
                         g, input, dev,
                         [](const runtime::Session& session) {
                           EXPECT_EQ(session.kernel_launches(), 1);
                           EXPECT_TRUE(session.fallback_nodes().empty());
                         },
                         kernels),
                     want);
    input.data<int64_t>()[2] = 10;
    try {
      run_graph(g, input, dev, {}, kernels);
      ADD_FAILURE() << "index 10 of 10 rows ran";
    } catch (const Error& err) {
      EXPECT_NE(std::string(err.what()).find("index 10 is out of range for axis 0 of size 10"), std::string::npos)
          << err.what();
      EXPECT_NE(std::string(err.what()).find("FusedGather"), std::string::npos) << err.what();
    }
  }
  // Along axis 1 with int32 indices and a broadcast operand.
  for (const bool gpu_kernels : {false, true}) {
    int ids = 0;
    Graph g = graph_with_input("gather_axis1", {3}, ids);
    g.tensors[ids].dtype = DataType::Int32;
    const int data = weight(g, "data", {2, 10, 16}, rng), bias = weight(g, "bias", {16}, rng);
    const int e = tensor(g, "e", {2, 3, 16}), y = tensor(g, "y", {2, 3, 16});
    node(g, "Gather", {data, ids}, {e}, {{"axis", Attribute::of_int(1)}});
    node(g, "Sub", {e, bias}, {y});
    g.tensors[y].is_output = true;
    g.outputs = {y};
    g.topological_sort();
    HostTensor input(DataType::Int32, {3});
    input.data<int32_t>()[0] = 7, input.data<int32_t>()[1] = -10, input.data<int32_t>()[2] = 2;
    const std::vector<HostTensor> want = run_graph(g, input);
    EXPECT_EQ(optimize(g, OptimizeOptions{}).fused_gather, 1);
    lower::KernelChoice kernels;
    if (gpu_kernels) kernels.conv = "gpu";
    expect_all_close(run_on_device_kernels(g, input, runtime::open_device("pocl"), kernels), want);
  }
  for (const bool shared : {true, false}) {
    int ids = 0;
    Graph g = graph_with_input("embedding_apart", {4}, ids);
    g.tensors[ids].dtype = DataType::Int64;
    const int table = shared ? weight(g, "table", {10, 8}, rng) : ints(g, "table", {1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
    const Shape out = shared ? Shape{4, 8} : Shape{4};
    const int e = tensor(g, "e", out), y = tensor(g, "y", out);
    if (!shared) g.tensors[e].dtype = g.tensors[y].dtype = DataType::Int64;
    node(g, "Gather", {table, ids}, {e});
    node(g, "Neg", {e}, {y});
    g.tensors[y].is_output = true;
    g.outputs = {y};
    if (shared) {
      g.tensors[e].is_output = true;  // read outside the chain
      g.outputs.push_back(e);
    }
    g.topological_sort();
    EXPECT_EQ(optimize(g, OptimizeOptions{}).fused_gather, 0) << (shared ? "output read elsewhere" : "int64 data");
    EXPECT_EQ(g.nodes.size(), 2u);
  }
}

// Slices that are not one contiguous run stay kernels: a full axis reversed
// (step -1, same shape), a cut after a dim that is not 1, a cut with step 2.
TEST(Optimize, SlicesThatMoveDataAreNotViews) {
  for (auto [shape, axis, start, end, step] :
       {std::tuple<Shape, int64_t, int64_t, int64_t, int64_t>{{1, 4, 6}, 2, -1, -100, -1},
        {{2, 4, 6}, 1, 0, 2, 1},
        {{1, 4, 6}, 1, 0, 4, 2}}) {
    int x = 0;
    Graph g = graph_with_input("slices", shape, x);
    Shape out = shape;
    out[size_t(axis)] = step == -1 ? shape[size_t(axis)] : (end - start + step - 1) / step;
    const int y = tensor(g, "y", out), z = tensor(g, "z", out);
    node(g, "Slice", {x, ints(g, "s", {start}), ints(g, "e", {end}), ints(g, "a", {axis}), ints(g, "k", {step})}, {y});
    node(g, "Relu", {y}, {z});
    g.tensors[z].is_output = true;
    g.outputs = {z};
    g.topological_sort();
    EXPECT_EQ(slices_to_views(g), 0) << "axis " << axis << " step " << step;
  }
}

