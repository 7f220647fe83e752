#include "optimize/half_range.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

#include "graph/epilogue.h"

namespace texplan {
namespace {

// Magnitudes kept as they are, and the one a scaled class is brought to:
// far from both ends of half (2^-14 smallest normal, 65504 largest), with
// room for inputs 2^10 larger than the calibration's.
constexpr float kLowest = 0x1p-4f, kHighest = 0x1p8f;
constexpr int kTargetLog2 = 5;
// Exponents are multiples of this, so a class's largest magnitude lands in
// [2^-3, 2^5): few distinct scale literals, so few distinct kernels to build
// (each epilogue program is compiled into its kernel's source).
constexpr int kExponentStep = 8;
// Largest magnitude a scaled constant may take in half.
constexpr float kConstantLimit = 0x1p14f;
constexpr float kNormalLimit = 0x1p-14f;  // half's smallest normal

// Nodes that move or combine values without changing their scale: output
// = f(inputs) with f(2^e x) = 2^e f(x). Their data operands and outputs
// share one exponent.
const std::set<std::string> kAllOperands = {"Concat", "Add", "Sub", "Max", "Min", "Sum", "Mean"};
const std::set<std::string> kFirstOperand = {
    "Relu",      "LeakyRelu",    "PRelu",        "MaxPool",      "AveragePool", "GlobalAveragePool",
    "GlobalMaxPool", "Reshape",  "Flatten",      "Squeeze",      "Unsqueeze",   "Transpose",
    "Identity",  "Slice",        "Gather",       "Expand",       "Tile",        "DepthToSpace",
    "SpaceToDepth", "ReduceMean", "ReduceMax",   "ReduceMin",    "ReduceSum",   "Resize",
    "Upsample",  "Split",        "Pad"};

bool is_act(const Graph& g, int t) {
  return t >= 0 && !g.tensors[t].is_constant && g.tensors[t].dtype == DataType::Float32;
}
bool is_float_constant(const Graph& g, int t) {
  return t >= 0 && g.tensors[t].is_constant && g.tensors[t].dtype == DataType::Float32 && g.tensors[t].has_data;
}

struct Classes {
  std::vector<int> parent;
  explicit Classes(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int find(int t) {
    while (parent[t] != t) t = parent[t] = parent[parent[t]];
    return t;
  }
  void join(int a, int b) { parent[find(a)] = find(b); }
};

// Pad keeps scale only where its padding value is 0 (or it copies edges).
bool pad_keeps_scale(const Graph& g, const Node& n) {
  if (n.get_string("mode", "constant") != "constant") return true;
  if (n.get_float("value", 0.0f) != 0.0f) return false;
  if (n.inputs.size() > 2 && n.inputs[2] >= 0) {
    const Tensor& v = g.tensors[n.inputs[2]];
    if (!v.is_constant || !v.has_data) return false;
    for (float x : v.value.as_float())
      if (x != 0.0f) return false;
  }
  return true;
}

enum class Role { Rigid, PassThrough, Linear, Fused, Elementwise };

// ONNX elementwise operators an epilogue instruction spells exactly (no
// attributes); such a node becomes a FusedElementwise where a scale touches it.
const std::set<std::string> kUnaryInstr = {"Sigmoid", "Tanh",       "Exp",   "Log",  "Sqrt",     "Abs",  "Neg",
                                           "Erf",     "Reciprocal", "Floor", "Ceil", "Round", "Softplus", "Sign", "HardSwish"};
const std::set<std::string> kBinaryInstr = {"Mul", "Div", "Pow"};

// Linear: Conv/ConvTranspose/Gemm/MatMul of one activation and constant
// weights (and bias), the exponents folded into the constants. Fused: a
// product or elementwise node with an epilogue program that takes them.
Role role_of(const Graph& g, const Node& n) {
  const std::string& op = n.op_type;
  if (kAllOperands.count(op)) return Role::PassThrough;
  if (kFirstOperand.count(op)) return op == "Pad" && !pad_keeps_scale(g, n) ? Role::Rigid : Role::PassThrough;
  auto constant_or_absent = [&](size_t k) {
    return k >= n.inputs.size() || n.inputs[k] < 0 || is_float_constant(g, n.inputs[k]);
  };
  if (op == "Conv" || op == "ConvTranspose" || op == "MatMul" || op == "Gemm") {
    if (n.inputs.size() < 2 || !is_act(g, n.inputs[0]) || !is_float_constant(g, n.inputs[1]) || !constant_or_absent(2))
      return Role::Rigid;
    return Role::Linear;
  }
  if (op == "FusedConv" || op == "FusedConvMaxPool") {
    if (n.inputs.size() < 2 || !is_float_constant(g, n.inputs[1]) || !constant_or_absent(2)) return Role::Rigid;
    return Role::Fused;
  }
  if (op == "FusedMlp") {
    for (size_t k = 1; k < n.inputs.size(); ++k)
      if (!constant_or_absent(k)) return Role::Rigid;
    return Role::Fused;
  }
  if (op == "FusedMatMul" || op == "FusedElementwise") return Role::Fused;
  const bool unary = kUnaryInstr.count(op) && n.inputs.size() == 1;
  if ((unary || (kBinaryInstr.count(op) && n.inputs.size() == 2)) && n.attrs.empty() && n.outputs.size() == 1) {
    for (int t : n.inputs)
      if (t < 0 || g.tensors[t].dtype != DataType::Float32) return Role::Rigid;
    if (is_act(g, n.outputs[0])) return Role::Elementwise;
  }
  return Role::Rigid;
}

// Inputs of a pass-through node that carry its data.
std::vector<int> data_operands(const Node& n) {
  if (kAllOperands.count(n.op_type)) return n.inputs;
  return {n.inputs.empty() ? -1 : n.inputs[0]};
}

float largest_of(const HostTensor& v) {
  float m = 0;
  for (float x : v.as_float()) m = std::max(m, std::fabs(x));
  return m;
}

class Rewriter {
 public:
  Rewriter(Graph& g, HalfRangeReport& r) : g_(g), r_(r), readers_(g.tensors.size(), 0) {
    for (const Node& n : g.nodes)
      for (int t : n.inputs)
        if (t >= 0) ++readers_[t];
  }

  // Input k of node `node` multiplied by 2^e, copied first where another
  // node reads the same constant. Returns the largest magnitude after.
  float scale_constant(int node, size_t k, int e) {
    int t = g_.nodes[node].inputs[k];
    if (e == 0) return largest_of(g_.tensors[t].value);
    if (readers_[t] > 1 || g_.tensors[t].is_output) {
      Tensor copy = g_.tensors[t];
      copy.name = unique_name(copy.name + "@half_range");
      copy.is_output = false;
      --readers_[t];
      t = g_.add_tensor(std::move(copy));
      readers_.push_back(1);
      g_.nodes[node].inputs[k] = t;
      r_.copied_weight_bytes += g_.tensors[t].bytes();
    }
    HostTensor& v = g_.tensors[t].value;
    float m = 0;
    float* p = v.data<float>();
    for (int64_t i = 0, n = v.count(); i < n; ++i) m = std::max(m, std::fabs(p[i] = std::ldexp(p[i], e)));
    return m;
  }

 private:
  std::string unique_name(const std::string& base) {
    std::string name = base;
    for (int k = 2; g_.find(name) >= 0; ++k) name = base + std::to_string(k);
    return name;
  }

  Graph& g_;
  HalfRangeReport& r_;
  std::vector<int> readers_;
};

// `program` with its operands x<j> taken from 2^-in[j] times themselves
// first and its result multiplied by 2^out last (in.size(): the operands).
std::vector<std::string> rescaled_program(const Epilogue& p, const std::vector<int>& in, int out) {
  Epilogue q;
  std::vector<int> temp_of(in.size(), -1);
  for (size_t j = 0; j < in.size(); ++j) {
    if (in[j] == 0 || (p.code.empty() && j > 0)) continue;  // an empty program reads x0 only
    EpilogueInstr mul{"Mul", {{EpilogueOperand::Kind::Input, int(j), 0}, {EpilogueOperand::Kind::Literal, 0, 0}}};
    mul.args[1].value = std::ldexp(1.0f, -in[j]);
    temp_of[j] = int(q.code.size());
    q.code.push_back(mul);
  }
  const int shift = int(q.code.size());
  for (EpilogueInstr ins : p.code) {
    for (EpilogueOperand& a : ins.args) {
      if (a.kind == EpilogueOperand::Kind::Temp) {
        a.index += shift;
      } else if (a.kind == EpilogueOperand::Kind::Input && a.index < int(in.size()) && temp_of[a.index] >= 0) {
        a = {EpilogueOperand::Kind::Temp, temp_of[a.index], 0};
      }
    }
    q.code.push_back(std::move(ins));
  }
  if (out != 0) {
    EpilogueOperand result{EpilogueOperand::Kind::Input, 0, 0};  // an empty program's value: x0
    if (!p.code.empty()) result = {EpilogueOperand::Kind::Temp, int(q.code.size()) - 1, 0};
    else if (temp_of.size() > 0 && temp_of[0] >= 0) result = {EpilogueOperand::Kind::Temp, temp_of[0], 0};
    EpilogueInstr mul{"Mul", {result, {EpilogueOperand::Kind::Literal, 0, 0}}};
    mul.args[1].value = std::ldexp(1.0f, out);
    q.code.push_back(mul);
  }
  return q.to_strings();
}

// The same for the program in attribute `attr` of n (absent: the identity).
std::vector<std::string> rescaled_program(const Node& n, const char* attr, const std::vector<int>& in, int out) {
  Epilogue p;
  if (auto it = n.attrs.find(attr); it != n.attrs.end()) p = Epilogue::parse(it->second.strings);
  return rescaled_program(p, in, out);
}

int exponent_for(float largest) {
  if (!(largest > 0) || !std::isfinite(largest) || (largest >= kLowest && largest <= kHighest)) return 0;
  int k = 0;
  std::frexp(largest, &k);  // largest in [2^(k-1), 2^k)
  const int e = kTargetLog2 - k;
  const int stepped = int(std::floor(double(e) / kExponentStep)) * kExponentStep;  // down: the largest stays below 2^5
  return std::clamp(stepped, -96, 96);
}

}  // namespace

HalfRangeReport fit_half_range(Graph& g, const std::vector<float>& largest) {
  HalfRangeReport r;
  r.calibrated = true;
  const size_t nt = g.tensors.size();
  if (largest.size() != nt)
    throw Error(g.model_name + ": fp16 range: " + std::to_string(largest.size()) + " magnitudes for " +
                std::to_string(nt) + " tensors");
  Classes classes(nt);
  std::vector<Role> roles(g.nodes.size());
  std::vector<char> pinned(nt, 0);  // read or written as plain values
  std::map<int, std::string> pinned_by;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    roles[k] = role_of(g, n);
    if (roles[k] == Role::PassThrough) {
      int first = -1;
      auto tie = [&](int t) {
        if (!is_act(g, t)) return;
        if (first < 0) first = t;
        else classes.join(t, first);
      };
      std::vector<int> data = data_operands(n);
      for (int t : data) tie(t);
      for (int t : n.outputs) tie(t);
      // A constant operand (a bias Add, an embedding table) holds plain values.
      for (int t : data)
        if (first >= 0 && t >= 0 && !is_act(g, t) && g.tensors[t].dtype == DataType::Float32) pinned[first] = 1;
      for (int t : n.inputs)  // other float operands (Resize's run-time scales): plain
        if (is_act(g, t) && std::find(data.begin(), data.end(), t) == data.end()) pinned[t] = 1;
    } else if (roles[k] == Role::Rigid) {
      for (const auto* list : {&n.inputs, &n.outputs})
        for (int t : *list)
          if (is_act(g, t)) {
            pinned[t] = 1;
            pinned_by.emplace(t, n.op_type + " '" + n.name + "'");
          }
    }
  }
  for (int t : g.inputs) pinned[t] = 1;

  // One exponent per class, from its largest magnitude.
  std::vector<float> class_largest(nt, 0.0f);
  std::vector<char> class_pinned(nt, 0);
  for (size_t t = 0; t < nt; ++t) {
    if (!is_act(g, int(t))) continue;
    const int c = classes.find(int(t));
    class_largest[c] = std::max(class_largest[c], largest[t]);
    if (pinned[t]) class_pinned[c] = 1;
  }
  for (size_t t = 0; t < nt; ++t) {
    if (!is_act(g, int(t))) continue;
    const int c = classes.find(int(t));
    const int e = exponent_for(class_largest[c]);
    if (class_pinned[c]) {
      // Said only where half loses digits (below its normal range) or
      // nears its largest value; between them plain half is fine.
      const bool lossy = largest[t] > 0 && (largest[t] < kNormalLimit || largest[t] > kConstantLimit * 2);
      if (e != 0 && lossy && pinned_by.count(int(t))) {
        std::ostringstream s;
        s.precision(2);
        s << g.tensors[t].name << " (largest " << std::scientific << largest[t] << ", read by " << pinned_by[int(t)]
          << ")";
        r.out_of_range.push_back(s.str());
      }
      continue;
    }
    g.tensors[t].storage_exponent = int8_t(e);
    if (e != 0) {
      r.min_exponent = r.scaled_tensors == 0 ? e : std::min(r.min_exponent, e);
      r.max_exponent = r.scaled_tensors == 0 ? e : std::max(r.max_exponent, e);
      ++r.scaled_tensors;
    }
  }

  Rewriter rw(g, r);
  auto ex = [&](int t) { return is_act(g, t) ? int(g.tensors[t].storage_exponent) : 0; };
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    if (roles[k] != Role::Linear && roles[k] != Role::Fused && roles[k] != Role::Elementwise) continue;
    Node& n = g.nodes[k];
    const int out = n.outputs.empty() || n.outputs[0] < 0 ? 0 : ex(n.outputs[0]);
    bool touched = out != 0;
    for (int t : n.inputs) touched = touched || ex(t) != 0;
    if (!touched) continue;
    ++r.rewritten_nodes;
    const std::string& op = n.op_type;
    if (roles[k] == Role::Linear) {
      // y = W x + b: 2^out y = (2^(out - in) W) (2^in x) + 2^out b.
      float w = rw.scale_constant(int(k), 1, out - ex(n.inputs[0]));
      if (n.inputs.size() > 2 && n.inputs[2] >= 0) w = std::max(w, rw.scale_constant(int(k), 2, out));
      if (w > kConstantLimit) r.out_of_range.push_back("the weights of " + op + " '" + n.name + "' scaled to " +
                                                      std::to_string(w));
      continue;
    }
    if (roles[k] == Role::Elementwise) {
      std::string instr = op + " x0";
      if (n.inputs.size() == 2) instr += " x1";
      n.op_type = "FusedElementwise";
      n.attrs["program"] = Attribute::of_strings({instr});
    }
    if (n.op_type == "FusedElementwise") {
      std::vector<int> in;
      for (int t : n.inputs) in.push_back(ex(t));
      n.attrs["program"] = Attribute::of_strings(rescaled_program(n, "program", in, out));
      continue;
    }
    // A product: x0 = W' (2^a x) + B' with a the exponents of its activation
    // factors. W' = 2^d W keeps the bias in half (B' = 2^(a+d) B), and x0 is
    // taken back to plain by 2^-(a+d) before the program.
    const bool matmul = op == "FusedMatMul";
    int a = ex(n.inputs[0]);
    // A channel program takes X back to plain values before the product.
    if (auto cp = channel_program(n)) {
      // A gate's sums would need h's exponent taken out of W: the pipeline
      // makes none in half storage (lower_to_records).
      if (cp->gate) throw Error(n.name + ": a channel gate in half storage");
      std::vector<int> xin(size_t(cp->operands) + 1, 0);
      xin[0] = a;
      for (int j = 0; j < cp->operands; ++j) xin[size_t(j) + 1] = ex(n.inputs[operand_inputs_end(n) + size_t(j)]);
      cp->program = rescaled_program(Epilogue::parse(cp->program), xin, 0);
      n.decisions.channel_program = cp;
      a = 0;
    }
    if (matmul && n.inputs.size() > 1) a += ex(n.inputs[1]);
    if (op == "FusedConv" && channel_scaled(n)) a += ex(n.inputs.back());
    const bool weights = !matmul || is_float_constant(g, n.inputs[1]);
    const int bias = op == "FusedMlp" || op == "FusedConv" || op == "FusedConvMaxPool" ? 2 : -1;
    int d = 0;
    if (weights && bias >= 0 && size_t(bias) < n.inputs.size() && n.inputs[bias] >= 0) {
      const float b = largest_of(g.tensors[n.inputs[bias]].value);
      if (b > 0 && std::ldexp(b, a) > kConstantLimit) d = int(std::floor(std::log2(kConstantLimit / b))) - a;
      rw.scale_constant(int(k), size_t(bias), a + d);
    }
    if (weights && d != 0) rw.scale_constant(int(k), 1, d);
    if (op == "FusedMlp") {
      n.attrs["hidden_program"] = Attribute::of_strings(rescaled_program(n, "hidden_program", {a + d}, 0));
      n.attrs["program"] = Attribute::of_strings(rescaled_program(n, "program", {0}, out));
      continue;
    }
    // Program operands: x0 the product, x<j> input j + (matmul ? 1 : 2).
    std::vector<int> in = {a + d};
    const size_t first = matmul ? 2 : 3;
    const size_t last = operand_inputs_end(n);
    for (size_t j = first; j < last; ++j) in.push_back(ex(n.inputs[j]));
    n.attrs["program"] = Attribute::of_strings(rescaled_program(n, "program", in, out));
  }
  return r;
}

}  // namespace texplan
