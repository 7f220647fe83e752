// Einsum: the reference's direct loop against hand-computed results, the
// lowering to MatMul/Transpose/Reshape/ReduceSum against the reference on
// many equations (on the host, and on the device), the importer's shape
// inference, and the refusals.
#include <gtest/gtest.h>

#include "import/onnx_import.h"
#include "import/rewrites.h"
#include "one_node.h"
#include "onnx_builder.h"
#include "reference/einsum.h"

namespace texplan {
namespace {

using test::NodeCase;

test::OneNode einsum_node(const std::string& equation, std::vector<Shape> shapes, uint32_t seed = 3) {
  NodeCase c{"Einsum", std::move(shapes), {{"equation", Attribute::of_string(equation)}}, {}};
  c.fed.assign(c.inputs.size(), true);
  return test::one_node(c, "einsum", 13, seed);
}

HostTensor einsum(const std::string& equation, const std::vector<HostTensor>& operands) {
  Node n;
  n.name = "e";
  n.op_type = "Einsum";
  n.attrs["equation"] = Attribute::of_string(equation);
  std::vector<const HostTensor*> ins;
  for (const auto& t : operands) ins.push_back(&t);
  n.outputs = {0};
  return reference::evaluate(n, ins).at(0);
}

HostTensor tensor(Shape s, std::vector<float> v) {
  HostTensor t(DataType::Float32, std::move(s));
  std::copy(v.begin(), v.end(), t.data<float>());
  return t;
}

TEST(EinsumReference, MatchesHandComputedForms) {
  const HostTensor a = tensor({2, 3}, {1, 2, 3, 4, 5, 6}), b = tensor({3, 2}, {1, 0, 0, 1, 1, 1});
  EXPECT_EQ(einsum("ij,jk->ik", {a, b}).as_float(), (std::vector<float>{4, 5, 10, 11}));
  EXPECT_EQ(einsum("ij,jk", {a, b}).as_float(), (std::vector<float>{4, 5, 10, 11}));  // implicit: "ik"
  EXPECT_EQ(einsum("ij->ji", {a}).as_float(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(einsum("ba", {a}).as_float(), (std::vector<float>{1, 4, 2, 5, 3, 6}));  // implicit: "ab"
  EXPECT_EQ(einsum("ij->i", {a}).as_float(), (std::vector<float>{6, 15}));
  EXPECT_EQ(einsum("ij->", {a}).as_float(), (std::vector<float>{21}));
  EXPECT_EQ(einsum("ij,ij->ij", {a, a}).as_float(), (std::vector<float>{1, 4, 9, 16, 25, 36}));
  const HostTensor sq = tensor({2, 2}, {1, 2, 3, 4});
  EXPECT_EQ(einsum("ii->i", {sq}).as_float(), (std::vector<float>{1, 4}));
  EXPECT_EQ(einsum("ii", {sq}).as_float(), (std::vector<float>{5}));  // trace
  // Ellipsis, broadcast across operands: (2 x) 2x3 times 3x2.
  const HostTensor batched = tensor({2, 2, 3}, {1, 2, 3, 4, 5, 6, 0, 0, 0, 1, 1, 1});
  EXPECT_EQ(einsum("...ij,...jk->...ik", {batched, b}).as_float(), (std::vector<float>{4, 5, 10, 11, 0, 0, 2, 2}));
  // A label of extent 1 broadcasts: column [1, 2] times each row.
  EXPECT_EQ(einsum("ij,ij->ij", {tensor({2, 1}, {1, 2}), a}).as_float(),
            (std::vector<float>{1, 2, 3, 8, 10, 12}));
  EXPECT_EQ(to_string(einsum("i,j->ij", {tensor({2}, {1, 2}), tensor({3}, {1, 1, 1})}).shape), "2x3");
}

TEST(EinsumReference, RefusesWhatDoesNotFit) {
  auto refused = [](const std::string& eq, std::vector<Shape> shapes, const std::string& reason) {
    try {
      reference::parse_einsum(eq, shapes);
      ADD_FAILURE() << eq << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << e.what();
    }
  };
  refused("ij,jk->ik", {{2, 3}, {4, 5}}, "label 'j' has extent 3");
  refused("ij,jk->ik", {{2, 3}}, "2 terms for 1 operands");
  refused("ijk->i", {{2, 3}}, "names 3 dimensions, operand 0 has rank 2");
  refused("ij->ii", {{2, 3}}, "repeats");
  refused("ij->iz", {{2, 3}}, "'z' of 'ij->iz' is in no operand");
  refused("...ij->ij", {{4, 2, 3}}, "omits '...'");
  refused("i1->i", {{2, 3}}, "neither a letter");
  refused("ii->i", {{2, 3}}, "repeats in term 0 with extents 2 and 3");
  EXPECT_EQ(to_string(reference::parse_einsum("...ij,...jk", {{7, 2, 3}, {3, 4}}).output_shape), "7x2x4");
  EXPECT_EQ(to_string(reference::parse_einsum("i j , j k -> i k", {{2, 3}, {3, 4}}).output_shape), "2x4");
}

struct EquationCase {
  std::string equation;
  std::vector<Shape> shapes;
  bool lowered = true;  // false: stays an Einsum (a diagonal)
};

const std::vector<EquationCase>& equation_cases() {
  static const std::vector<EquationCase> cases = {
      {"ij,jk->ik", {{3, 4}, {4, 5}}},
      {"ij,jk", {{3, 4}, {4, 5}}},
      {"ij,kj->ik", {{3, 4}, {5, 4}}},
      {"ji,jk->ik", {{4, 3}, {4, 5}}},
      {"ij,jk->ki", {{3, 4}, {4, 5}}},
      {"bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}},
      {"bhid,bhjd->bhij", {{2, 3, 5, 4}, {2, 3, 6, 4}}},
      {"bhij,bhjd->bhid", {{2, 3, 5, 6}, {2, 3, 6, 4}}},
      {"bij,jk->bik", {{2, 3, 4}, {4, 5}}},
      {"ibj,jkb->kib", {{3, 2, 4}, {4, 5, 2}}},
      {"i,i->", {{5}, {5}}},
      {"i,i", {{5}, {5}}},
      {"i,j->ij", {{3}, {4}}},
      {"ij,ij->ij", {{3, 4}, {3, 4}}},
      {"ij,ij->", {{3, 4}, {3, 4}}},
      {"ij,ij->i", {{3, 4}, {3, 4}}},
      {"ijk,ik->j", {{2, 3, 4}, {2, 4}}},
      {"ab,cd->", {{2, 3}, {4, 5}}},
      {"ab,cd->ad", {{2, 3}, {4, 5}}},
      {"abc,cd->", {{2, 3, 4}, {4, 5}}},
      {"Ab,bC->AC", {{3, 4}, {4, 2}}},
      {"ij->ji", {{3, 4}}},
      {"ij->i", {{3, 4}}},
      {"ij->", {{3, 4}}},
      {"ijk->kji", {{2, 3, 4}}},
      {"ijk->ki", {{2, 3, 4}}},
      {"ij->ij", {{3, 4}}},
      {"ba", {{3, 4}}},
      {"...ij,...jk->...ik", {{2, 3, 4}, {2, 4, 5}}},
      {"...ij,...jk", {{2, 3, 3, 4}, {4, 5}}},
      {"...ij,...jk->...ik", {{2, 1, 3, 4}, {5, 4, 2}}},
      {"ij...,jk...->ik...", {{3, 4, 2}, {4, 5, 2}}},
      {"...i->i...", {{2, 3, 4}}},
      {"ij,ij->ij", {{3, 1}, {3, 4}}},
      {"bij,bjk->bik", {{1, 3, 4}, {2, 4, 5}}},
      {"abc,cd,de->abe", {{2, 3, 4}, {4, 5}, {5, 6}}},
      {"ij,jk,kl", {{2, 3}, {3, 4}, {4, 5}}},
      {"i,i,i->i", {{4}, {4}, {4}}},
      {"ii->i", {{3, 3}}, false},
      {"ii", {{3, 3}}, false},
      {"bii->bi", {{2, 3, 3}}, false},
  };
  return cases;
}

TEST(EinsumLowering, EqualsTheReferenceOnManyEquations) {
  for (const auto& c : equation_cases()) {
    SCOPED_TRACE(c.equation);
    test::OneNode n = einsum_node(c.equation, c.shapes);
    Graph g = n.graph;
    EXPECT_EQ(lower_einsums(g), c.lowered ? 1 : 0);
    for (const Node& m : g.nodes) {
      EXPECT_TRUE(m.op_type == "MatMul" || m.op_type == "Transpose" || m.op_type == "Reshape" ||
                  m.op_type == "ReduceSum" || m.op_type == "Identity" || (!c.lowered && m.op_type == "Einsum"))
          << m.op_type;
      for (int t : m.outputs) EXPECT_NO_THROW(element_count(g.tensors[t].shape));
    }
    ASSERT_EQ(g.outputs.size(), 1u);
    EXPECT_EQ(to_string(g.tensors[g.outputs[0]].shape), to_string(n.want.shape));
    EXPECT_LT(test::max_abs_diff(test::evaluate_graph(g, n.feeds).at(0), n.want), 1e-5);
  }
}

TEST(EinsumLowering, LoweredFormsRunOnTheDevice) {
  auto dev = test::test_device();
  for (const auto& c : equation_cases()) {
    if (!c.lowered) continue;
    SCOPED_TRACE(c.equation);
    test::OneNode n = einsum_node(c.equation, c.shapes, 11);
    lower_einsums(n.graph);
    EXPECT_LT(test::max_abs_diff(test::run_one_node(n, dev).got, n.want), 1e-5);
  }
}

TEST(EinsumLowering, ReduceSumTakesAxesAsTheOpsetDoes) {
  for (int opset : {11, 13}) {
    test::OneNode n = einsum_node("ij->i", {{3, 4}});
    n.graph.opset = opset;
    lower_einsums(n.graph);
    ASSERT_EQ(n.graph.nodes.size(), 1u);
    const Node& r = n.graph.nodes[0];
    EXPECT_EQ(r.op_type, "ReduceSum");
    EXPECT_EQ(r.has("axes"), opset < 13);
    EXPECT_EQ(r.inputs.size(), opset < 13 ? 1u : 2u);
    EXPECT_LT(test::max_abs_diff(test::evaluate_graph(n.graph, n.feeds).at(0), n.want), 1e-6);
  }
}

// An attention block as exporters write it: the importer infers the Einsum's
// output dims (libonnx 1.12 gives only the rank), and lowers it.
TEST(EinsumImport, InfersShapesAndLowers) {
  test::OnnxBuilder b(17);
  b.input("q", {2, 3, 5, 4}).input("k", {2, 3, 6, 4}).input("v", {2, 3, 6, 4});
  auto* e1 = b.node("Einsum", {"q", "k"}, {"s"}, "scores");
  auto* a = e1->add_attribute();
  a->set_name("equation");
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s("bhid,bhjd->bhij");
  auto* sm = b.node("Softmax", {"s"}, {"p"});
  test::OnnxBuilder::attr_int(sm, "axis", -1);
  auto* e2 = b.node("Einsum", {"p", "v"}, {"y"}, "mix");
  *e2->add_attribute() = *a;
  e2->mutable_attribute(0)->set_s("bhij,bhjd->bhid");
  b.output("y");
  std::string bytes;
  b.m.SerializeToString(&bytes);
  Graph g = import_onnx_bytes(bytes, "attention");
  // k transposed, two MatMuls over the batch dims as they are: no Reshape.
  std::vector<std::string> ops;
  for (const Node& n : g.nodes) ops.push_back(n.op_type);
  EXPECT_EQ(ops, (std::vector<std::string>{"Transpose", "MatMul", "Softmax", "MatMul"}));
  EXPECT_EQ(to_string(g.tensors[g.find("s")].shape), "2x3x5x6");
  EXPECT_EQ(to_string(g.tensors[g.outputs[0]].shape), "2x3x5x4");
}

// Constant operands: two are folded at import; three are not (the direct
// loop would run over the product of all three sizes), and are lowered.
TEST(EinsumImport, ConstantOperandsFoldOnlyInPairs) {
  for (int operands : {2, 3}) {
    SCOPED_TRACE(operands);
    test::OnnxBuilder b(13);
    b.initializer("a", {4, 4}, std::vector<float>(16, 0.5f));
    b.initializer("b", {4, 4}, std::vector<float>(16, 2.0f));
    b.initializer("c", {4, 4}, std::vector<float>(16, 1.0f));
    std::vector<std::string> in = {"a", "b", "c"};
    in.resize(size_t(operands));
    auto* e = b.node("Einsum", in, {"e"}, "product");
    auto* a = e->add_attribute();
    a->set_name("equation");
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(operands == 2 ? "ij,jk->ik" : "ij,jk,kl->il");
    b.node("Relu", {"e"}, {"y"});
    b.output("y");
    std::string bytes;
    b.m.SerializeToString(&bytes);
    Graph g = import_onnx_bytes(bytes, "constants");
    std::vector<std::string> ops;
    for (const Node& n : g.nodes) ops.push_back(n.op_type);
    const std::vector<std::string> want =
        operands == 2 ? std::vector<std::string>{"Relu"} : std::vector<std::string>{"MatMul", "MatMul", "Relu"};
    EXPECT_EQ(ops, want);
    const std::vector<HostTensor> y = test::evaluate_graph(g, {});
    for (float v : y.at(0).as_float()) EXPECT_FLOAT_EQ(v, operands == 2 ? 4.0f : 16.0f);
  }
}

TEST(EinsumImport, AnEquationThatDoesNotFitNamesTheNode) {
  test::OnnxBuilder b(17);
  b.input("a", {2, 3}).input("b", {4, 5});
  auto* e = b.node("Einsum", {"a", "b"}, {"y"}, "bad_product");
  auto* a = e->add_attribute();
  a->set_name("equation");
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s("ij,jk->ik");
  b.output("y");
  std::string bytes;
  b.m.SerializeToString(&bytes);
  try {
    import_onnx_bytes(bytes, "bad");
    FAIL() << "imported";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("bad_product"), std::string::npos) << m;
    EXPECT_NE(m.find("label 'j' has extent 3"), std::string::npos) << m;
    EXPECT_EQ(m.find("data-dependent"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace texplan
