// RNN, GRU and LSTM as one description, read once from a node's attributes
// and operand shapes: the reference operators (recurrent.cpp) run it, the
// validation stage states the outputs from it, and the importer lowers a
// recurrent node into products and elementwise steps from it
// (import/recurrent_ops.cpp).
#pragma once
#include <string>
#include <vector>

#include "reference/common.h"

namespace texplan::reference {

// graph.h's: the activations texplan runs in a recurrent cell (ONNX allows more).
using texplan::CellActivation;
using texplan::Recurrence;

struct RecurrentForm {
  Recurrence kind = Recurrence::Lstm;
  int64_t gates = 4;        // RNN 1, GRU 3 (z r h), LSTM 4 (i o f c)
  int64_t directions = 1;   // 2: bidirectional (forward, then reverse)
  bool reverse = false;     // one direction, run from the last step
  int64_t steps = 0, batch = 0, input = 0, hidden = 0;
  bool batch_major = false;  // layout 1: X [B, T, I], Y [B, T, D, H], states [B, D, H]
  float clip = 0;            // 0: none; else gate inputs clipped to [-clip, clip]
  bool input_forget = false;         // LSTM: f = 1 - i
  bool linear_before_reset = false;  // GRU: r multiplies (H R_h + Rb_h)
  // Per direction: RNN f; GRU f, g; LSTM f, g, h.
  std::vector<std::vector<CellActivation>> activations;

  // Whether direction d runs from the last step to the first.
  bool backward(int64_t d) const { return reverse || d == 1; }
  Shape y_shape() const;      // Y
  Shape state_shape() const;  // Y_h, Y_c, initial_h, initial_c
};

// Reads and checks c's node (RNN, GRU or LSTM) against its operands' shapes
// (values are not read): W [D, G*H, I], R [D, G*H, H], B [D, 2*G*H],
// sequence_lens [B], initial states, LSTM's P [D, 3*H]; fails naming the node.
RecurrentForm recurrent_form(const OpContext& c);

}  // namespace texplan::reference
