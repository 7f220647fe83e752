// Einsum equations ("bhid,bhjd->bhij", "...ij,...jk", "ij->ji") resolved
// against the operands' shapes: one label per dimension of every operand and
// of the result. One reading of the equation for the reference Einsum (a
// direct loop), the importer's shape inference and the import's lowering to
// MatMul, Transpose, Reshape and ReduceSum (import/rewrites.h).
//
// numpy's rules: letters are labels; "..." stands for the leading dimensions
// a term's letters leave, broadcast (right-aligned) across operands; a label
// of extent 1 broadcasts against the same label of a larger extent in
// another operand; without "->" the output is the ellipsis dimensions, then
// the letters that occur once, in ASCII order (uppercase first).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace texplan::reference {

struct EinsumSpec {
  // Labels: a letter is its ASCII code; the k-th dimension of the broadcast
  // ellipsis is kEllipsisLabel + k.
  static constexpr int kEllipsisLabel = 256;
  std::vector<std::vector<int>> operands;  // per operand, one label per dimension
  std::vector<int> output;                 // one label per output dimension
  std::map<int, int64_t> extents;          // label -> extent (the largest seen)
  Shape output_shape;
};

// Throws Error with the reason only (callers name the node) when the
// equation is malformed, its terms do not match the operands' ranks, a label
// repeats in the output or is in no operand, an explicit output omits the
// ellipsis of operands that have ellipsis dimensions, or two extents of one
// label differ and neither is 1 (within one operand they must be equal).
EinsumSpec parse_einsum(const std::string& equation, const std::vector<Shape>& shapes);

// "b", "...": a label as the equation writes it, for messages.
std::string einsum_label_name(int label);

}  // namespace texplan::reference
