// Einsum lowered to MatMul, Transpose, Reshape and ReduceSum, and its shape
// inference (rewrites.h).
//
// Two operands A and B and the labels still needed after them (`keep`: the
// output's, and the later operands'):
//   summed-away labels (in one operand only, not kept): ReduceSum first;
//   batch (in both, kept), contracted (in both, not kept), free-A (A only),
//   free-B (B only): A transposed to [batch, free-A, contracted] and reshaped
//   to [batch, M, K], B to [batch, contracted, free-B] as [batch, K, N], one
//   MatMul, the result reshaped to [batch, free-A, free-B].
// Three or more operands are contracted left to right; at the end, labels
// not in the output are summed and the result is transposed to the output's
// order. A dimension of extent 1 whose label is larger elsewhere (numpy
// broadcasting) is dropped first by a Reshape.
#include <onnx/defs/shape_inference.h>

#include <algorithm>
#include <numeric>

#include "import/rewrites.h"
#include "reference/einsum.h"

namespace texplan {
namespace {

using reference::EinsumSpec;

// A tensor during lowering, with the label of each dimension.
struct Operand {
  int tensor = -1;
  std::vector<int> labels;
};

bool contains(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

class EinsumLowering {
 public:
  EinsumLowering(Graph& g, const Node& n, const EinsumSpec& spec, RewriteNodes& r) : g_(g), n_(n), spec_(spec), r_(r) {}

  // Adds to r the nodes that compute n's output in its place.
  void lower() {
    std::vector<Operand> operands;
    for (size_t k = 0; k < n_.inputs.size(); ++k) operands.push_back(drop_broadcast_dims({n_.inputs[k], spec_.operands[k]}));
    Operand acc = operands[0];
    for (size_t k = 1; k < operands.size(); ++k) {
      std::vector<int> keep = spec_.output;
      for (size_t later = k + 1; later < operands.size(); ++later)
        keep.insert(keep.end(), operands[later].labels.begin(), operands[later].labels.end());
      acc = contract(acc, operands[k], keep);
    }
    std::vector<int> summed;
    for (int l : acc.labels)
      if (!contains(spec_.output, l)) summed.push_back(l);
    acc = transpose(reduce_sum(acc, summed), spec_.output);
    const int out = n_.outputs[0];
    if (r_.empty()) {
      r_.add("Identity", {acc.tensor}, {out});
    } else {
      // The last node writes the Einsum's own output tensor.
      r_.back().outputs[0] = out;
    }
  }

 private:
  Shape shape_of(const std::vector<int>& labels) const {
    Shape s;
    for (int l : labels) s.push_back(spec_.extents.at(l));
    return s;
  }
  int64_t extent_product(const std::vector<int>& labels) const {
    int64_t p = 1;
    for (int l : labels) p *= spec_.extents.at(l);
    return p;
  }
  DataType dtype() const { return g_.tensors[n_.inputs[0]].dtype; }

  // Dimensions of extent 1 whose label is larger in another operand.
  Operand drop_broadcast_dims(const Operand& x) {
    Operand r{x.tensor, {}};
    const Shape& s = g_.tensors[x.tensor].shape;
    for (size_t d = 0; d < s.size(); ++d)
      if (!(s[d] == 1 && spec_.extents.at(x.labels[d]) != 1)) r.labels.push_back(x.labels[d]);
    r.tensor = r_.reshape(x.tensor, shape_of(r.labels));
    return r;
  }

  Operand reduce_sum(const Operand& x, const std::vector<int>& labels) {
    if (labels.empty()) return x;
    std::vector<int64_t> axes;
    Operand r{-1, {}};
    for (size_t d = 0; d < x.labels.size(); ++d)
      if (contains(labels, x.labels[d])) axes.push_back(int64_t(d));
      else r.labels.push_back(x.labels[d]);
    r.tensor = r_.tensor(shape_of(r.labels), dtype());
    // Axes as an input from opset 13, as an attribute before.
    std::vector<int> inputs = {x.tensor};
    if (g_.opset >= 13) inputs.push_back(r_.int64_constant(axes));
    Node& m = r_.add("ReduceSum", inputs, {r.tensor});
    if (g_.opset < 13) m.attrs["axes"] = Attribute::of_ints(axes);
    m.attrs["keepdims"] = Attribute::of_int(0);
    return r;
  }

  Operand transpose(const Operand& x, const std::vector<int>& order) {
    if (x.labels == order) return x;
    std::vector<int64_t> perm;
    for (int l : order) perm.push_back(std::find(x.labels.begin(), x.labels.end(), l) - x.labels.begin());
    Operand r{r_.tensor(shape_of(order), dtype()), order};
    r_.add("Transpose", {x.tensor}, {r.tensor}).attrs["perm"] = Attribute::of_ints(perm);
    return r;
  }

  Operand contract(Operand a, Operand b, const std::vector<int>& keep) {
    auto summed_away = [&](const Operand& x, const Operand& other) {
      std::vector<int> s;
      for (int l : x.labels)
        if (!contains(other.labels, l) && !contains(keep, l)) s.push_back(l);
      return s;
    };
    a = reduce_sum(a, summed_away(a, b));
    b = reduce_sum(b, summed_away(b, a));
    std::vector<int> batch, contracted, free_a, free_b;
    for (int l : a.labels)
      (contains(b.labels, l) ? (contains(keep, l) ? batch : contracted) : free_a).push_back(l);
    for (int l : b.labels)
      if (!contains(a.labels, l)) free_b.push_back(l);
    auto concat = [](std::initializer_list<const std::vector<int>*> parts) {
      std::vector<int> r;
      for (const auto* p : parts) r.insert(r.end(), p->begin(), p->end());
      return r;
    };
    a = transpose(a, concat({&batch, &free_a, &contracted}));
    b = transpose(b, concat({&batch, &contracted, &free_b}));
    const int64_t m = extent_product(free_a), k = extent_product(contracted), n = extent_product(free_b);
    // Batch dims stay as they are (MatMul broadcasts over leading dims), so
    // attention's [b, h, i, d] x [b, h, d, j] needs no Reshape.
    auto matrix = [&](int64_t rows, int64_t cols) {
      Shape s = shape_of(batch);
      s.push_back(rows);
      s.push_back(cols);
      return s;
    };
    const int a3 = r_.reshape(a.tensor, matrix(m, k)), b3 = r_.reshape(b.tensor, matrix(k, n));
    const int product = r_.tensor(matrix(m, n), dtype());
    r_.add("MatMul", {a3, b3}, {product});
    Operand r{-1, concat({&batch, &free_a, &free_b})};
    r.tensor = r_.reshape(product, shape_of(r.labels));
    return r;
  }

  Graph& g_;
  const Node& n_;
  const EinsumSpec& spec_;
  RewriteNodes& r_;
};

// Diagonals and empty dimensions stay with the reference's direct loop.
bool lowerable(const Graph& g, const Node& n, const EinsumSpec& spec) {
  for (const auto& labels : spec.operands) {
    std::vector<int> sorted = labels;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) return false;
  }
  for (const auto& [l, extent] : spec.extents)
    if (extent == 0) return false;
  return n.outputs.size() == 1 && n.outputs[0] >= 0 && !n.inputs.empty() &&
         std::all_of(n.inputs.begin(), n.inputs.end(), [&](int t) { return t >= 0; });
}

}  // namespace

int lower_einsums(Graph& g) {
  if (std::none_of(g.nodes.begin(), g.nodes.end(), [](const Node& n) { return n.op_type == "Einsum"; })) return 0;
  return replace_nodes(
      g,
      [&](const Node& n, RewriteNodes& r) {
        if (n.op_type != "Einsum") return false;
        std::vector<Shape> shapes;
        for (int t : n.inputs) shapes.push_back(t >= 0 ? g.tensors[t].shape : Shape{});
        EinsumSpec spec;
        try {
          spec = reference::parse_einsum(n.get_string("equation", ""), shapes);
        } catch (const Error& e) {
          throw Error("node '" + n.name + "' (Einsum): " + e.what());
        }
        if (!lowerable(g, n, spec)) return false;
        EinsumLowering(g, n, spec, r).lower();
        return true;
      },
      "einsum");
}

void infer_einsum_dims(onnx::InferenceContext& ctx) {
  std::vector<Shape> shapes;
  for (size_t i = 0; i < ctx.getNumInputs(); ++i) {
    const onnx::TypeProto* t = ctx.getInputType(i);
    if (!t || !t->has_tensor_type() || !t->tensor_type().has_shape()) return;
    Shape s;
    for (const auto& d : t->tensor_type().shape().dim()) {
      if (!d.has_dim_value()) return;
      s.push_back(d.dim_value());
    }
    shapes.push_back(std::move(s));
  }
  const onnx::AttributeProto* eq = ctx.getAttribute("equation");
  if (!eq || shapes.empty()) return;
  reference::EinsumSpec spec;
  try {
    spec = reference::parse_einsum(eq->s(), shapes);
  } catch (const Error& e) {
    fail_shape_inference(e.what());
  }
  auto* shape = ctx.getOutputType(0)->mutable_tensor_type()->mutable_shape();
  shape->clear_dim();
  for (int64_t d : spec.output_shape) shape->add_dim()->set_dim_value(d);
}

}  // namespace texplan
