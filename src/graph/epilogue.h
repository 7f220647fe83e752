// Epilogue programs: the elementwise tail of a fused node (FusedConv,
// FusedMatMul, FusedElementwise, FusedGather), as described in docs/fused-ops.md. One
// parser and one scalar meaning, shared by the CPU reference (which evaluates
// it) and the runtime (which turns it into OpenCL C).
#pragma once
#include <string>
#include <vector>

#include "graph/graph.h"

namespace texplan {

struct EpilogueOperand {
  enum class Kind { Input, Temp, Literal } kind = Kind::Input;
  int index = 0;      // x<index> or t<index>
  float value = 0;    // literal
};

struct EpilogueInstr {
  std::string op;                     // "Relu", "Add", "Clip", ...
  std::vector<EpilogueOperand> args;  // operands, then literal parameters
};

struct Epilogue {
  std::vector<EpilogueInstr> code;  // empty: the identity on x0

  // Parses attribute `program` of `n` (absent: empty program). Throws Error
  // naming the node on an unknown op, a wrong operand count, or an operand
  // that refers to a later instruction.
  static Epilogue parse(const Node& n);
  static Epilogue parse(const std::vector<std::string>& program);
  std::vector<std::string> to_strings() const;  // inverse of parse
  // Ops an epilogue may use (docs/fused-ops.md).
  static const std::vector<std::string>& ops();
  // Whether `op` is an epilogue op of one value (and literal parameters):
  // as a graph node, an elementwise op of one tensor (Relu, Clip, ...).
  static bool unary(const std::string& op);
  // Whether node n of g is such an op: one tensor in (input 0), any other
  // input absent or a one-element constant (Clip's bounds), one output.
  static bool unary_node(const Graph& g, const Node& n);
  // Whether an instruction is a transcendental function (Sigmoid, Tanh, Exp,
  // Log, Erf, Gelu, Softplus, Elu, Pow): long inline code in a kernel, which
  // on CPU devices takes registers from its accumulators.
  bool transcendental() const;
  // Largest x<k> index used, plus one (at least 1).
  int inputs() const;
  // The program's value at one element; x[k] is operand x<k>.
  float eval(const float* x) const;
};

// RoundTf32's meaning: x to the nearest tf32 value (10 mantissa bits), ties
// away from zero, as PTX's cvt.rna.tf32.f32; infinities and NaN unchanged.
float round_tf32(float x);

}  // namespace texplan
