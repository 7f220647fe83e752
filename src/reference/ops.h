// Internal: how the operator families register their implementations.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "reference/common.h"

namespace texplan::reference {

using OpFn = Outputs (*)(const OpContext&);

// An implementation and the attributes it understands (honours, or may
// safely ignore like the legacy consumed_inputs). evaluate() rejects any
// other attribute, so an attribute added by a later opset is an error, not a
// silently wrong result.
struct OpEntry {
  OpFn fn = nullptr;
  std::vector<std::string> attrs;
};
using OpTable = std::map<std::string, OpEntry>;

void register_elementwise(OpTable& t);    // elementwise.cpp: math, activations, compare, logic, Cast
void register_matmul(OpTable& t);         // matmul.cpp: MatMul, Gemm
void register_einsum(OpTable& t);         // einsum.cpp: Einsum (a direct loop)
void register_conv(OpTable& t);           // conv.cpp: Conv, ConvTranspose
void register_pool(OpTable& t);           // pool.cpp: MaxPool, AveragePool, global pools
void register_reduce(OpTable& t);         // reduce.cpp: Reduce*, ArgMax/ArgMin
void register_normalization(OpTable& t);  // normalization.cpp: *Normalization, Softmax family, LRN
void register_shape_ops(OpTable& t);      // shape_ops.cpp: data movement and shape computation
void register_indexing(OpTable& t);       // indexing.cpp: Gather*, Scatter*, OneHot, NonZero, TopK
void register_resize(OpTable& t);         // resize.cpp: Resize, Upsample
void register_quantize(OpTable& t);       // quantize.cpp: QuantizeLinear, DequantizeLinear
void register_recurrent(OpTable& t);      // recurrent.cpp: RNN, GRU, LSTM
void register_fused(OpTable& t);          // fused.cpp: FusedConv, FusedMatMul, FusedElementwise, FusedGather... (docs/fused-ops.md)

}  // namespace texplan::reference
