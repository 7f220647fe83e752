// Epilogue programs (graph/epilogue.h) as OpenCL C: the generated text is the
// `prelude` of a kernel file (ops.h Source) that has a fused-epilogue hook.
// It defines two macros the kernel files use:
//   EPI_PARAMS  extra kernel parameters, appended after the kernel's own;
//   EPI(v, i)   the program's value at output element i (linear index in Y)
//               where v is the kernel's own result there (operand x0).
// Kernel files default to EPI(v, i) = v and no extra parameters. Where the
// kernel is built with -DEPI_VECTOR_WIDTH=n and every op has a vector form,
// also EPI_VEC(v, i, n): the program on floatn v, elements [i, i+n) (only the
// first n real: a cut block), so CPU kernels apply it on whole vectors.
#pragma once
#include <string>
#include <vector>

#include "graph/epilogue.h"

namespace texplan::lower {

// How operand x<k> reaches the program.
enum class EpilogueRead {
  Value,    // the kernel's own result v (x0 of FusedConv, FusedMatMul)
  Direct,   // buffer X<k> at element i (same shape as Y)
  Strided,  // buffer X<k> at strided_offset(i, epi_dims, X<k>s) (numpy broadcast)
};

// OpenCL C for `e`, operand x<k> read as `reads[k]`. Parameters appended, in
// operand order: for each buffer operand `__global const float* X<k>, int
// X<k>o` (buffer, element offset: a TensorArg), then `Dims X<k>s` if Strided;
// last, when any operand is Strided, `Dims epi_dims` (the iteration space).
// Semantics match Epilogue::eval exactly (same formulas, same NaN rules).
// `row_constant[k]`: strided operand k does not change along the innermost
// dim (a per-channel scale), so EPI_R reads it once a row.
// `copied` >= 0: EPI and EPI_R also store operand x<copied> (read Direct)
// with its planes every other one, element i at EPY + EPYo + i + (i / EPYp)
// * EPYp (`__global real_t* EPY, int EPYo, int EPYp`, planes of EPYp
// elements, the last of EPI_PARAMS), and there is no EPI_VEC: a
// ShuffledOutput's other half (graph.h). Every kernel with EPI_PARAMS
// takes it, whatever its own stores.
std::string epilogue_cl(const Epilogue& e, const std::vector<EpilogueRead>& reads,
                        const std::vector<bool>& row_constant = {}, int copied = -1);

// A conv's channel program (ChannelProgram, graph.h) as the prelude of
// gemm.cl: XPRO_PARAMS (`__global const real_t* P<k>, int P<k>o` for
// operands 1..`operands`, each one value per channel) and XPRO(v, c), the
// program at X's element v of channel c. Same semantics as Epilogue::eval.
// With `depthwise` (ChannelProgram::depthwise) XPRO_PARAMS begins with the
// depthwise weights and their dims (`__global const real_t* DW, int DWo,
// Dims xdw`: the input's H, W and the output's width in its last three),
// and XLOAD, XLOAD_TAPS, xdw_fetch(x, E, n, xdw) (the taps of output pixel
// n in E's plane into x) and xdw_sum(x, w) (their sum with a channel's
// weights) are defined, the stage's geometry compiled in (gemm.cl).
//
// With `gate` (ChannelProgram::gate) the last operand is computed, not
// passed: XPRO_PARAMS ends with the gate's `GH, GHo, GW, GWo` (and `GB,
// GBo` with its bias) in its place, and XPRO_SETUP, placed by the kernel at
// its top scope before any XPRO, fills `__local float xgate[C]` with
// G(W h + b) per channel, each work-item some channels, and waits for all.
struct ChannelGateShape {
  Epilogue program;  // over x0
  int64_t channels = 0, inputs = 0;  // C, J
  bool bias = true;
};
std::string channel_program_cl(const Epilogue& e, int operands,
                               const std::optional<ChannelDepthwise>& depthwise = std::nullopt,
                               const std::optional<ChannelGateShape>& gate = std::nullopt);

// `inline float name(float x0)`: a program of x0 alone as an OpenCL C
// function (FusedMlp's hidden activation), placed after epilogue_cl's text
// (whose helpers it may call). Throws Error if it reads another operand.
std::string epilogue_function_cl(const Epilogue& e, const std::string& name);

}  // namespace texplan::lower
