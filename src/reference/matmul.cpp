// Matrix products: MatMul (numpy matmul: batched, broadcast batch dims, 1-D
// operands) and Gemm (alpha, beta, transA, transB, broadcast C).
#include "reference/ops.h"

namespace texplan::reference {
namespace {

Outputs MatMul(const OpContext& c) {
  HostTensor held_a, held_b;
  const HostTensor &a = product_operand(c, 0, held_a), &b = product_operand(c, 1, held_b);
  require_same_dtype(c, a, b);
  if (a.shape.empty() || b.shape.empty()) c.fail("MatMul does not accept scalars");
  // 1-D operands become matrices (a row for A, a column for B) and the
  // added dimension is dropped from the result.
  Shape sa = a.shape, sb = b.shape;
  const bool a_vec = sa.size() == 1, b_vec = sb.size() == 1;
  if (a_vec) sa.insert(sa.begin(), 1);
  if (b_vec) sb.push_back(1);
  const int64_t M = sa[sa.size() - 2], K = sa.back(), N = sb.back();
  if (sb[sb.size() - 2] != K)
    c.fail("inner dimensions differ: " + to_string(a.shape) + " times " + to_string(b.shape));
  const Shape batch_a(sa.begin(), sa.end() - 2), batch_b(sb.begin(), sb.end() - 2);
  const Shape batch = broadcast_shapes(c, {batch_a, batch_b});

  Shape out = batch;
  out.push_back(M);
  out.push_back(N);
  HostTensor y(a.dtype, out);
  dispatch_numeric(c, a.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T *pa = a.data<T>(), *pb = b.data<T>();
    T* py = y.data<T>();
    broadcast_runs(batch, {broadcast_strides(batch_a, batch), broadcast_strides(batch_b, batch)},
                   [&](int64_t o, const int64_t* off, const int64_t* st, int64_t n) {
                     for (int64_t i = 0; i < n; ++i)
                       gemm_accumulate<T>(M, N, K, pa + (off[0] + i * st[0]) * M * K, K,
                                          pb + (off[1] + i * st[1]) * K * N, N, py + (o + i) * M * N, N);
                   });
  });
  if (a_vec) out.erase(out.end() - 2);
  if (b_vec) out.pop_back();
  y.shape = out;
  return single(std::move(y));
}

Outputs Gemm(const OpContext& c) {
  const HostTensor &a0 = c.input(0), &b0 = c.input(1);
  require_same_dtype(c, a0, b0);
  if (a0.shape.size() != 2 || b0.shape.size() != 2)
    c.fail("A and B must be matrices, got " + to_string(a0.shape) + " and " + to_string(b0.shape));
  const bool ta = c.node.get_int("transA", 0) != 0, tb = c.node.get_int("transB", 0) != 0;
  const double alpha = c.node.get_float("alpha", 1.0f), beta = c.node.get_float("beta", 1.0f);
  const HostTensor a = ta ? transpose(c, a0, {1, 0}) : a0;
  const HostTensor b = tb ? transpose(c, b0, {1, 0}) : b0;
  const int64_t M = a.shape[0], K = a.shape[1], N = b.shape[1];
  if (b.shape[0] != K) c.fail("inner dimensions differ: " + to_string(a.shape) + " times " + to_string(b.shape));

  HostTensor y(a.dtype, {M, N});
  const bool has_c = c.has_input(2) && beta != 0;
  HostTensor bias;
  if (has_c) {
    require_same_dtype(c, a0, c.input(2));
    bias = broadcast_to(c, c.input(2), y.shape);
  }
  dispatch_numeric(c, a.dtype, [&](auto tag) {
    using T = decltype(tag);
    T* py = y.data<T>();
    gemm_accumulate<T>(M, N, K, a.data<T>(), K, b.data<T>(), N, py, N);
    for (int64_t i = 0; i < M * N; ++i) {
      double v = alpha * double(py[i]);
      if (has_c) v += beta * double(bias.data<T>()[i]);
      py[i] = T(v);
    }
  });
  return single(std::move(y));
}

}  // namespace

void register_matmul(OpTable& t) {
  t["MatMul"] = {MatMul, {}};
  t["Gemm"] = {Gemm, {"alpha", "beta", "transA", "transB", "broadcast"}};
}

}  // namespace texplan::reference
