// Products and convolutions (MatMul, Gemm, Conv, ConvTranspose), pools,
// normalizations, softmax, the reductions and the recurrent operators (RNN,
// GRU, LSTM).
#include "validate/validate_internal.h"

#include "reference/conv_shapes.h"
#include "reference/recurrent.h"

namespace texplan::validation {
namespace {

void matmul(NodeCheck& c) {
  c.require_same_dtype(1, 0);
  Shape a = c.shape(0), b = c.shape(1);
  if (a.empty() || b.empty()) c.fail("MatMul operands must have rank 1 or more, got " + c.described(a.empty() ? 0 : 1));
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a.insert(a.begin(), 1);
  if (b_vec) b.push_back(1);
  const int64_t K = a.back(), Kb = b[b.size() - 2];
  if (K != Kb)
    c.fail("inner dimensions differ: " + c.described(0) + " has " + std::to_string(K) + " columns, " + c.described(1) +
           " has " + std::to_string(Kb) + " rows");
  const Shape batch_a(a.begin(), a.end() - 2), batch_b(b.begin(), b.end() - 2);
  Shape out = c.reference([&](const OpContext& ctx) { return reference::broadcast_shapes(ctx, {batch_a, batch_b}); });
  if (!a_vec) out.push_back(a[a.size() - 2]);
  if (!b_vec) out.push_back(b.back());
  c.expect(0, out, c.dtype(0));
}

void gemm(NodeCheck& c) {
  c.require_same_dtype(1, 0);
  c.require_rank(0, 2, 2);
  c.require_rank(1, 2, 2);
  const bool ta = c.node().get_int("transA", 0) != 0, tb = c.node().get_int("transB", 0) != 0;
  const Shape &A = c.shape(0), &B = c.shape(1);
  const int64_t M = ta ? A[1] : A[0], K = ta ? A[0] : A[1], Kb = tb ? B[1] : B[0], N = tb ? B[0] : B[1];
  if (K != Kb)
    c.fail("inner dimensions differ: A" + std::string(ta ? "^T" : "") + " is " + std::to_string(M) + "x" +
           std::to_string(K) + ", B" + (tb ? "^T" : "") + " is " + std::to_string(Kb) + "x" + std::to_string(N));
  if (c.has(2)) {
    c.require_same_dtype(2, 0);
    c.require_broadcasts_to(2, {M, N}, "the product's shape");
  }
  c.expect(0, {M, N}, c.dtype(0));
}

void conv_bias(NodeCheck& c, int64_t M) {
  if (!c.has(2)) return;
  c.require_same_dtype(2, 0);
  c.require_rank(2, 1, 1);
  c.require_count(2, M, "one per output channel");
}

void conv(NodeCheck& c) {
  c.require_float(0);
  const Shape &x = c.shape(0), &w = c.shape(1);
  const reference::ConvShapes s = c.reference([&](const OpContext& ctx) {
    return reference::conv_shapes(ctx, ctx.input(0), ctx.input(1), false);
  });
  conv_bias(c, s.M);
  const reference::Window win = c.reference([&](const OpContext& ctx) {
    return reference::forward_window(ctx, Shape(x.begin() + 2, x.end()), Shape(w.begin() + 2, w.end()), false);
  });
  Shape out = {s.N, s.M};
  for (int i = 0; i < win.spatial_rank; ++i) out.push_back(win.out[3 - win.spatial_rank + i]);
  c.expect(0, out, c.dtype(0));
}

void conv_transpose(NodeCheck& c) {
  c.require_float(0);
  const reference::ConvShapes s = c.reference([&](const OpContext& ctx) {
    return reference::conv_shapes(ctx, ctx.input(0), ctx.input(1), true);
  });
  conv_bias(c, s.M);
  const reference::Window win = c.reference([&](const OpContext& ctx) {
    return reference::transposed_window(ctx, ctx.input(0), ctx.input(1));
  });
  for (int64_t k : Shape(c.shape(1).begin() + 2, c.shape(1).end()))
    if (k < 1) c.fail("kernel size " + std::to_string(k) + " of " + c.described(1) + " must be positive");
  Shape out = {s.N, s.M};
  for (int i = 0; i < win.spatial_rank; ++i) out.push_back(win.out[3 - win.spatial_rank + i]);
  c.expect(0, out, c.dtype(0));
}

void pool(NodeCheck& c) {
  if (c.node().op_type == "AveragePool") c.require_float(0);  // MaxPool takes int8 and uint8 too
  c.require_rank(0, 3, 5);
  const Shape& x = c.shape(0);
  const bool ceil_mode = c.node().get_int("ceil_mode", 0) != 0;
  const reference::Window win = c.reference([&](const OpContext& ctx) {
    return reference::forward_window(ctx, Shape(x.begin() + 2, x.end()), {}, ceil_mode);
  });
  Shape out = {x[0], x[1]};
  for (int i = 0; i < win.spatial_rank; ++i) out.push_back(win.out[3 - win.spatial_rank + i]);
  c.expect(0, out, c.dtype(0));
  c.expect(1, out, DataType::Int64);  // MaxPool's Indices
}

void global_pool(NodeCheck& c) {
  c.require_float(0);
  c.require_rank(0, 3, 5);
  Shape out = c.shape(0);
  std::fill(out.begin() + 2, out.end(), 1);
  c.expect(0, out, c.dtype(0));
}

// ---- normalization --------------------------------------------------------------

void batch_norm(NodeCheck& c) {
  c.require_float(0);
  c.require_rank(0, 2, 8);
  const int64_t C = c.shape(0)[1];
  static const char* names[] = {"", "scale", "B", "mean", "var"};
  for (size_t i = 1; i <= 4; ++i) {
    c.require_float(i);
    c.require_count(i, C, std::string(names[i]) + ": one per channel");
  }
  c.expect_like_input(0, 0);
  for (size_t o = 1; o < 3; ++o) c.expect(o, {C}, c.dtype(3));  // running mean and var (training)
}

void instance_norm(NodeCheck& c) {
  c.require_float(0);
  c.require_rank(0, 3, 8);
  const int64_t C = c.shape(0)[1];
  for (size_t i = 1; i <= 2; ++i) {
    c.require_same_dtype(i, 0);
    c.require_count(i, C, std::string(i == 1 ? "scale" : "B") + ": one per channel");
  }
  c.expect_like_input(0, 0);
}

void layer_norm(NodeCheck& c) {
  c.require_float(0);
  const Shape& x = c.shape(0);
  const int64_t r = int64_t(x.size()), a = c.axis(c.node().get_int("axis", -1), r);
  const Shape normalized(x.begin() + a, x.end());
  for (size_t i = 1; i <= 2; ++i)
    if (c.has(i)) {
      c.require_same_dtype(i, 0);
      c.require_broadcasts_to(i, normalized, "the normalized shape");
    }
  c.expect_like_input(0, 0);
  Shape stats(x.begin(), x.begin() + a);
  stats.resize(size_t(r), 1);
  c.expect(1, stats, DataType::Float32);
  c.expect(2, stats, DataType::Float32);
}

void lrn(NodeCheck& c) {
  c.require_float(0);
  c.require_rank(0, 3, 8);
  if (c.node().get_int("size", 0) < 1) c.fail("size must be a positive integer");
  c.expect_like_input(0, 0);
}

void softmax(NodeCheck& c) {
  c.require_float(0);
  c.axis(c.node().get_int("axis", -1), c.rank(0));
  c.expect_like_input(0, 0);
}

void mvn(NodeCheck& c) {
  c.require_float(0);
  c.axes(c.node().get_ints("axes", {0, 2, 3}), c.rank(0));
  c.expect_like_input(0, 0);
}

// ---- reductions -------------------------------------------------------------------

void reduce(NodeCheck& c) {
  const int64_t r = c.rank(0);
  std::optional<std::vector<int64_t>> list;
  if (c.has(1)) {
    list = c.ints(1);
    if (!list) return;  // values not loaded
  } else if (c.node().has("axes")) {
    list = c.node().get_ints("axes");
  }
  const bool keep = c.node().get_int("keepdims", 1) != 0;
  const bool noop = c.node().get_int("noop_with_empty_axes", 0) != 0;
  std::vector<bool> reduced(size_t(r), false);
  if (!list || list->empty()) {
    if (noop) {
      c.expect_like_input(0, 0);
      return;
    }
    reduced.assign(size_t(r), true);
  } else {
    for (int64_t a : c.axes(*list, r)) reduced[a] = true;
  }
  Shape out;
  for (int64_t d = 0; d < r; ++d)
    if (!reduced[d]) out.push_back(c.shape(0)[d]);
    else if (keep) out.push_back(1);
  c.expect(0, out, c.dtype(0));
}

void arg_reduce(NodeCheck& c) {
  const int64_t r = c.rank(0), a = c.axis(c.node().get_int("axis", 0), r);
  Shape out = c.shape(0);
  if (c.node().get_int("keepdims", 1) != 0) out[a] = 1;
  else out.erase(out.begin() + a);
  c.expect(0, out, DataType::Int64);
}

void recurrent(NodeCheck& c) {
  const reference::RecurrentForm f = c.reference([&](const OpContext& ctx) { return reference::recurrent_form(ctx); });
  c.expect(0, f.y_shape(), c.dtype(0));
  c.expect(1, f.state_shape(), c.dtype(0));
  c.expect(2, f.state_shape(), c.dtype(0));
}

// Import makes it from an RNN, GRU or LSTM checked above; its operands are
// checked against its cell as the reference reads them.
void recurrent_steps(NodeCheck& c) {
  const RecurrentCell* cell = recurrent_cell(c.node());
  if (!cell) c.fail("has no recurrent cell");
  if (c.rank(0) != 3 || c.rank(1) != 2) c.fail("XW must have rank 3 and R^T rank 2");
  const int64_t T = c.shape(0)[0], B = c.shape(0)[1], H = c.shape(1)[0];
  if (c.shape(0)[2] != gate_count(cell->kind) * H || c.shape(1)[1] != c.shape(0)[2])
    c.fail("XW " + to_string(c.shape(0)) + " and R^T " + to_string(c.shape(1)) + " do not share their gates");
  c.expect(0, {T, B, H}, c.dtype(0));
  c.expect(1, {B, H}, c.dtype(0));
}

}  // namespace

void add_compute_rules(RuleTable& t) {
  t["MatMul"] = matmul;
  t["Gemm"] = gemm;
  t["Conv"] = conv;
  t["ConvTranspose"] = conv_transpose;
  t["MaxPool"] = pool;
  t["AveragePool"] = pool;
  t["GlobalAveragePool"] = global_pool;
  t["GlobalMaxPool"] = global_pool;
  t["BatchNormalization"] = batch_norm;
  for (const char* op : {"RNN", "GRU", "LSTM"}) t[op] = recurrent;
  t["RecurrentSteps"] = recurrent_steps;
  t["InstanceNormalization"] = instance_norm;
  t["LayerNormalization"] = layer_norm;
  t["LRN"] = lrn;
  t["MeanVarianceNormalization"] = mvn;
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) t[op] = softmax;
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceSumSquare",
                         "ReduceLogSum", "ReduceLogSumExp", "ReduceL1", "ReduceL2"})
    t[op] = reduce;
  t["ArgMax"] = arg_reduce;
  t["ArgMin"] = arg_reduce;
}

}  // namespace texplan::validation
