#include "graph/epilogue.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace texplan {
namespace {

// What each op takes: `values` operands (x, t or literal), then `params`
// literal parameters.
struct OpSignature {
  const char* name;
  int values;
  int params;
};

const OpSignature kOps[] = {
    {"Relu", 1, 0},    {"Sigmoid", 1, 0},    {"Tanh", 1, 0},   {"Exp", 1, 0},      {"Log", 1, 0},
    {"Sqrt", 1, 0},    {"Abs", 1, 0},        {"Neg", 1, 0},    {"Erf", 1, 0},      {"Reciprocal", 1, 0},
    {"Floor", 1, 0},   {"Ceil", 1, 0},       {"Softplus", 1, 0}, {"Sign", 1, 0},   {"HardSwish", 1, 0},
    {"Gelu", 1, 0},    {"Add", 2, 0},        {"Sub", 2, 0},    {"Mul", 2, 0},      {"Div", 2, 0},
    {"Pow", 2, 0},     {"Max", 2, 0},        {"Min", 2, 0},    {"Clip", 1, 2},     {"LeakyRelu", 1, 1},
    {"HardSigmoid", 1, 2}, {"Elu", 1, 1}, {"RoundTf32", 1, 0}, {"Round", 1, 0},
};
constexpr int kOpCount = int(sizeof(kOps) / sizeof(kOps[0]));

int op_index(const std::string& op) {
  for (int i = 0; i < kOpCount; ++i)
    if (op == kOps[i].name) return i;
  return -1;
}

bool parse_literal(const std::string& s, float& v) {
  if (s.empty()) return false;
  char* end = nullptr;
  v = std::strtof(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

bool parse_index(const std::string& digits, int& k) {
  if (digits.empty() || digits.size() > 6 || !std::all_of(digits.begin(), digits.end(), ::isdigit)) return false;
  k = std::stoi(digits);
  return true;
}

std::string literal_string(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", double(v));
  return buf;
}

float sigmoid(float x) {
  if (x >= 0) return 1.0f / (1.0f + std::exp(-x));
  const float e = std::exp(x);
  return e / (1.0f + e);
}
float nan_max(float a, float b) { return std::isnan(a) || a > b ? a : b; }
float nan_min(float a, float b) { return std::isnan(a) || a < b ? a : b; }

// ONNX semantics in float, the same formulas as src/reference/elementwise.cpp.
float apply(int op, const float* a, const float* p) {
  const float x = a[0];
  switch (op) {
    case 0: return x > 0 ? x : 0.0f;
    case 1: return sigmoid(x);
    case 2: return std::tanh(x);
    case 3: return std::exp(x);
    case 4: return std::log(x);
    case 5: return std::sqrt(x);
    case 6: return std::fabs(x);
    case 7: return -x;
    case 8: return std::erf(x);
    case 9: return 1.0f / x;
    case 10: return std::floor(x);
    case 11: return std::ceil(x);
    case 12: return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
    case 13: return float((x > 0) - (x < 0));
    case 14: return x * std::max(0.0f, std::min(1.0f, x / 6.0f + 0.5f));
    case 15: return 0.5f * x * (1.0f + std::erf(x * 0.7071067811865476f));
    case 16: return x + a[1];
    case 17: return x - a[1];
    case 18: return x * a[1];
    case 19: return x / a[1];
    case 20: return std::pow(x, a[1]);
    case 21: return nan_max(x, a[1]);
    case 22: return nan_min(x, a[1]);
    case 23: return std::min(std::max(x, p[0]), p[1]);
    case 24: return x < 0 ? p[0] * x : x;
    case 25: return std::max(0.0f, std::min(1.0f, p[0] * x + p[1]));
    case 26: return x >= 0 ? x : p[0] * (std::exp(x) - 1.0f);
    case 27: return round_tf32(x);
    case 28: return std::nearbyint(x);  // halves to even
  }
  return x;
}

}  // namespace

float round_tf32(float x) {
  if (!std::isfinite(x)) return x;
  uint32_t u;
  std::memcpy(&u, &x, 4);
  u = (u + 0x1000u) & 0xffffe000u;
  std::memcpy(&x, &u, 4);
  return x;
}

namespace {

std::string operand_string(const EpilogueOperand& o) {
  switch (o.kind) {
    case EpilogueOperand::Kind::Input: return "x" + std::to_string(o.index);
    case EpilogueOperand::Kind::Temp: return "t" + std::to_string(o.index);
    case EpilogueOperand::Kind::Literal: return literal_string(o.value);
  }
  return "?";
}

}  // namespace

Epilogue Epilogue::parse(const std::vector<std::string>& program) {
  Epilogue e;
  for (size_t k = 0; k < program.size(); ++k) {
    auto fail = [&](const std::string& why) -> void {
      throw Error("program instruction " + std::to_string(k) + " '" + program[k] + "': " + why);
    };
    // Split on whitespace as `>>` would, without a stream per instruction
    // (fusion parses every fused node's program).
    std::vector<std::string> tokens;
    const std::string& text = program[k];
    for (size_t i = 0; i < text.size();) {
      if (std::isspace(static_cast<unsigned char>(text[i]))) {
        ++i;
        continue;
      }
      size_t j = i;
      while (j < text.size() && !std::isspace(static_cast<unsigned char>(text[j]))) ++j;
      tokens.emplace_back(text, i, j - i);
      i = j;
    }
    if (tokens.empty()) fail("empty instruction");
    const int op = op_index(tokens[0]);
    if (op < 0) fail("unknown operator '" + tokens[0] + "'");
    const OpSignature& sig = kOps[op];
    if (int(tokens.size()) - 1 != sig.values + sig.params)
      fail(tokens[0] + " takes " + std::to_string(sig.values + sig.params) + " operands, got " +
           std::to_string(tokens.size() - 1));
    EpilogueInstr instr;
    instr.op = tokens[0];
    for (size_t j = 1; j < tokens.size(); ++j) {
      const std::string& t = tokens[j];
      const bool is_param = int(j) > sig.values;
      EpilogueOperand o;
      int idx = 0;
      if (!is_param && t[0] == 'x' && parse_index(t.substr(1), idx)) {
        o.kind = EpilogueOperand::Kind::Input;
        o.index = idx;
      } else if (!is_param && t[0] == 't' && parse_index(t.substr(1), idx)) {
        if (idx >= int(k)) fail("operand " + t + " is not an earlier instruction's result");
        o.kind = EpilogueOperand::Kind::Temp;
        o.index = idx;
      } else if (parse_literal(t, o.value)) {
        o.kind = EpilogueOperand::Kind::Literal;
      } else {
        fail(is_param ? "parameter '" + t + "' of " + tokens[0] + " must be a number"
                      : "bad operand '" + t + "' (expects x<k>, t<k> or a number)");
      }
      instr.args.push_back(o);
    }
    e.code.push_back(std::move(instr));
  }
  return e;
}

Epilogue Epilogue::parse(const Node& n) {
  auto it = n.attrs.find("program");
  if (it == n.attrs.end()) return {};
  if (it->second.kind != Attribute::Kind::Strings)
    throw Error(n.name + " (" + n.op_type + "): attribute 'program' must be a list of strings");
  try {
    return parse(it->second.strings);
  } catch (const Error& e) {
    throw Error(n.name + " (" + n.op_type + "): " + e.what());
  }
}

std::vector<std::string> Epilogue::to_strings() const {
  std::vector<std::string> out;
  for (const auto& instr : code) {
    std::string s = instr.op;
    for (const auto& a : instr.args) s += " " + operand_string(a);
    out.push_back(std::move(s));
  }
  return out;
}

const std::vector<std::string>& Epilogue::ops() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& s : kOps) v.push_back(s.name);
    return v;
  }();
  return names;
}

bool Epilogue::unary(const std::string& op) {
  const int i = op_index(op);
  return i >= 0 && kOps[i].values == 1;
}

bool Epilogue::unary_node(const Graph& g, const Node& n) {
  if (!unary(n.op_type) || n.inputs.empty() || n.inputs[0] < 0 || n.outputs.size() != 1 || n.outputs[0] < 0)
    return false;
  for (size_t i = 1; i < n.inputs.size(); ++i) {
    const int t = n.inputs[i];
    if (t >= 0 && !(g.tensors[size_t(t)].is_constant && element_count(g.tensors[size_t(t)].shape) == 1)) return false;
  }
  return true;
}

bool Epilogue::transcendental() const {
  static const std::vector<std::string> kMath = {"Sigmoid", "Tanh", "Exp",      "Log", "Erf",
                                                 "Gelu",    "Softplus", "Elu", "Pow"};
  for (const auto& instr : code)
    if (std::find(kMath.begin(), kMath.end(), instr.op) != kMath.end()) return true;
  return false;
}

int Epilogue::inputs() const {
  int n = 1;
  for (const auto& instr : code)
    for (const auto& a : instr.args)
      if (a.kind == EpilogueOperand::Kind::Input) n = std::max(n, a.index + 1);
  return n;
}

float Epilogue::eval(const float* x) const {
  if (code.empty()) return x[0];
  float small[32];
  std::vector<float> large(code.size() > 32 ? code.size() : 0);
  float* t = code.size() > 32 ? large.data() : small;
  for (size_t k = 0; k < code.size(); ++k) {
    const EpilogueInstr& instr = code[k];
    const int op = op_index(instr.op);
    if (op < 0) throw Error("epilogue: unknown operator '" + instr.op + "'");
    const OpSignature& sig = kOps[op];
    if (int(instr.args.size()) != sig.values + sig.params)
      throw Error("epilogue: " + instr.op + " has the wrong number of operands");
    float vals[2] = {0, 0}, params[2] = {0, 0};
    for (size_t j = 0; j < instr.args.size(); ++j) {
      const EpilogueOperand& o = instr.args[j];
      float v = o.kind == EpilogueOperand::Kind::Input ? x[o.index]
                : o.kind == EpilogueOperand::Kind::Temp ? t[o.index]
                                                        : o.value;
      if (int(j) < sig.values)
        vals[j] = v;
      else
        params[j - sig.values] = v;
    }
    t[k] = apply(op, vals, params);
  }
  return t[code.size() - 1];
}

}  // namespace texplan
