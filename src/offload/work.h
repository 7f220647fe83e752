// Internal to src/offload: a matched node as library calls over its tensors.
#pragma once
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "graph/graph.h"
#include "optimize/usage.h"

namespace texplan::offload {

// The cost rule: below this much work CLBlast's per-call overhead (several
// kernels for im2col+GEMM, host-side argument checks) outweighs its tuned
// GEMM; texplan's single kernel keeps the node.
constexpr double kMinOffloadFlops = 4e6;

// A matrix operand: a tensor of the node (`tensor`), or the node's im2col
// scratch (`col`), at an element offset.
struct Operand {
  int tensor = -1;
  bool col = false;
  int64_t offset = 0;
};

// Row-major C = alpha op(A) op(B) + beta C.
struct GemmCall {
  bool ta = false, tb = false;
  int64_t m = 0, n = 0, k = 0;
  float alpha = 1, beta = 0;
  Operand a, b, c;
  int64_t lda = 0, ldb = 0, ldc = 0;
};

// Caffe's layout: col[(c * kh + i) * kw + j][oh * OW + ow].
struct Im2colCall {
  int64_t channels, height, width, kh, kw, ph, pw, sh, sw, dh, dw;
  Operand image;
};

struct NodeWork {
  std::string routine;  // for reports
  double flops = 0;
  std::vector<std::variant<Im2colCall, GemmCall>> calls;  // in order, on one queue
  int64_t col_elems = 0;                                  // im2col scratch (fp32 elements)
  int64_t temp_bytes = 0;                                 // CLBlast's GEMM scratch
  int col_record = -1, temp_record = -1;                  // their usage records, once partitioned
  // Y first filled with tensor `prefill_src` read at `prefill_src_strides`
  // over Y's dims (bias, Gemm's C): the GEMMs then add with beta = 1.
  int prefill_src = -1;
  std::vector<int64_t> prefill_dims, prefill_src_strides;
  // Applied after the GEMMs in place by texplan's FusedElementwise kernel:
  // x0 = Y, x1.. = `epilogue_inputs`.
  std::vector<std::string> epilogue_program;
  std::vector<int> epilogue_inputs;
};

struct Match {
  bool ok = false;
  std::string reason;  // when not ok
  NodeWork work;
  Match& no(std::string why) {
    ok = false;
    reason = std::move(why);
    return *this;
  }
};

// What a match may use besides the node: the storage decisions, and how
// many bytes of im2col scratch fit in the slack of the node's step (the
// plan's peak minus what is live there): im2col runs in chunks of input
// channels (at least one) that fit, accumulating into Y, so the scratch
// leaves the peak alone wherever one channel fits.
struct MatchContext {
  const PlanInput& pin;
  int64_t col_budget_bytes = INT64_MAX;
};

struct Pattern {
  std::string op;
  std::string conditions;  // for docs and reports
  Match (*match)(const Graph&, const Node&, const MatchContext&);
};
const std::vector<Pattern>& pattern_table();

// Runs the table and the cost rule on one node.
Match match_node(const Graph& g, const MatchContext& cx, int node);

}  // namespace texplan::offload
