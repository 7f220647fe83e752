#include "lower/epilogue_cl.h"

#include <cmath>
#include <cstdio>
#include <functional>
#include <sstream>

namespace texplan::lower {
namespace {

// Exact float literals: hexadecimal, so no decimal rounding on either side.
std::string literal(float v) {
  if (std::isnan(v)) return "NAN";
  if (std::isinf(v)) return v > 0 ? "INFINITY" : "(-INFINITY)";
  char buf[48];
  std::snprintf(buf, sizeof buf, "(%af)", double(v));
  return buf;
}

// Helpers with std::min/std::max/std::isnan meaning (as in epilogue.cpp),
// not fmin/fmax (which differ on NaN).
// Guarded: a kernel's prelude may hold an epilogue and a channel program.
const char* kHelpers = R"CL(
#ifndef TEXPLAN_EPI_HELPERS
#define TEXPLAN_EPI_HELPERS
inline float epi_std_min(float a, float b) { return b < a ? b : a; }
inline float epi_std_max(float a, float b) { return a < b ? b : a; }
inline float epi_nan_max(float a, float b) { return isnan(a) || a > b ? a : b; }
inline float epi_nan_min(float a, float b) { return isnan(a) || a < b ? a : b; }
inline float epi_round_tf32(float x) { return isfinite(x) ? as_float((as_uint(x) + 0x1000u) & 0xffffe000u) : x; }
inline float epi_sigmoid(float x) {
  if (x >= 0.0f) return 1.0f / (1.0f + exp(-x));
  const float e = exp(x);
  return e / (1.0f + e);
}
inline float epi_softplus(float x) { return x > 0.0f ? x + log1p(exp(-x)) : log1p(exp(x)); }
#endif
)CL";

// OpenCL C for each op, $0 $1 $2 standing for its operands (same formulas
// as Epilogue::eval).
struct OpForm {
  const char* op;
  int operands;
  const char* form;
};
const OpForm kForms[] = {
    {"Relu", 1, "($0 > 0.0f ? $0 : 0.0f)"},
    {"Sigmoid", 1, "epi_sigmoid($0)"},
    {"Tanh", 1, "tanh($0)"},
    {"Exp", 1, "exp($0)"},
    {"Log", 1, "log($0)"},
    {"Sqrt", 1, "sqrt($0)"},
    {"Abs", 1, "fabs($0)"},
    {"Neg", 1, "(-$0)"},
    {"Erf", 1, "erf($0)"},
    {"Reciprocal", 1, "(1.0f / $0)"},
    {"Floor", 1, "floor($0)"},
    {"Round", 1, "rint($0)"},
    {"Ceil", 1, "ceil($0)"},
    {"Softplus", 1, "epi_softplus($0)"},
    {"Sign", 1, "(float)(($0 > 0.0f) - ($0 < 0.0f))"},
    {"HardSwish", 1, "($0 * epi_std_max(0.0f, epi_std_min(1.0f, $0 / 6.0f + 0.5f)))"},
    {"Gelu", 1, "(0.5f * $0 * (1.0f + erf($0 * 0.7071067811865476f)))"},
    {"Add", 2, "($0 + $1)"},
    {"Sub", 2, "($0 - $1)"},
    {"Mul", 2, "($0 * $1)"},
    {"Div", 2, "($0 / $1)"},
    {"Pow", 2, "pow($0, $1)"},
    {"Max", 2, "epi_nan_max($0, $1)"},
    {"Min", 2, "epi_nan_min($0, $1)"},
    {"Clip", 3, "epi_std_min(epi_std_max($0, $1), $2)"},
    {"LeakyRelu", 2, "($0 < 0.0f ? $1 * $0 : $0)"},
    {"HardSigmoid", 3, "epi_std_max(0.0f, epi_std_min(1.0f, $1 * $0 + $2))"},
    {"Elu", 2, "($0 >= 0.0f ? $0 : $1 * (exp($0) - 1.0f))"},
    {"RoundTf32", 1, "epi_round_tf32($0)"},
};

// Forms on float vectors (EPI_VF, all operands vectors) where the scalar
// form does not apply to vectors; same values and NaN rules. An op in
// neither table (Sign) leaves the program scalar-only.
const char* kVectorHelpers = R"CL(
#define EPI_VCAT_(a, b) a##b
#define EPI_VCAT(a, b) EPI_VCAT_(a, b)
#define EPI_VF EPI_VCAT(float, EPI_VECTOR_WIDTH)
#define EPI_VLOAD EPI_VCAT(vload, EPI_VECTOR_WIDTH)
#define epi_v_std_min(a, b) select((a), (b), (b) < (a))
#define epi_v_std_max(a, b) select((a), (b), (a) < (b))
inline EPI_VF epi_v_sigmoid(EPI_VF x) {
  const EPI_VF e = exp(-fabs(x));  /* exp(-x) where x >= 0, exp(x) below */
  const EPI_VF d = 1.0f + e;
  return select(e / d, 1.0f / d, x >= 0.0f);
}
/* erf within 1 ulp before exp's own error (N. Juffa's branch-free float
   erf): an odd polynomial below 0.927734375, 1 - exp(polynomial) above,
   both computed and one selected. PoCL's vector erf runs lane by lane:
   Swin-T's GELU epilogues cost 4x their products
   (docs/cpu-kernels.md#gemm-epilogues-with-erf). */
inline EPI_VF epi_v_erf(EPI_VF a) {
  const EPI_VF t = fabs(a), s = a * a;
  EPI_VF r = fma((EPI_VF)(-1.72853470e-5f), t, (EPI_VF)(3.83197126e-4f));
  r = fma(r, s, fma((EPI_VF)(-3.88396438e-3f), t, (EPI_VF)(2.42546219e-2f)));
  r = fma(r, t, (EPI_VF)(-1.06777877e-1f));
  r = fma(r, t, (EPI_VF)(-6.34846687e-1f));
  r = fma(r, t, (EPI_VF)(-1.28717512e-1f));
  r = fma(r, t, -t);
  const EPI_VF big = copysign(1.0f - exp(r), a);
  EPI_VF p = fma((EPI_VF)(-5.96761703e-4f), s, (EPI_VF)(4.99119423e-3f));
  p = fma(p, s, (EPI_VF)(-2.67681349e-2f));
  p = fma(p, s, (EPI_VF)(1.12819925e-1f));
  p = fma(p, s, (EPI_VF)(-3.76125336e-1f));
  p = fma(p, s, (EPI_VF)(1.28379166e-1f));
  p = fma(p, a, a);
  return select(p, big, t > 0.927734375f);
}
/* Elements [o, o+n) of X (the rest 0 where n < width: a cut block). */
inline EPI_VF epi_v_load(__global const real_t* X, int o, int n) {
  if (n >= EPI_VECTOR_WIDTH) return LDV(EPI_VECTOR_WIDTH, X + o);
  float t[EPI_VECTOR_WIDTH];
  for (int j = 0; j < EPI_VECTOR_WIDTH; ++j) t[j] = j < n ? LD(X, o + j) : 0.0f;
  return EPI_VLOAD(0, t);
}
inline EPI_VF epi_v_gather(__global const real_t* X, int Xo, Dims s, Dims d, int i, int n) {
  /* A whole vector inside one innermost row (a GEMM's bias row, a per-row
     value): one offset, then a broadcast or a vector load, not a walk of
     the dims (divisions) per element. */
  const int w = d.d[MAXR - 1], st = s.d[MAXR - 1];
  if (n >= EPI_VECTOR_WIDTH && i % w + EPI_VECTOR_WIDTH <= w && (st == 0 || st == 1)) {
    const int o = Xo + strided_offset(i, d, s);
    return st == 0 ? (EPI_VF)(LD(X, o)) : LDV(EPI_VECTOR_WIDTH, X + o);
  }
  float t[EPI_VECTOR_WIDTH];
  for (int j = 0; j < EPI_VECTOR_WIDTH; ++j) t[j] = j < n ? LD(X, Xo + strided_offset(i + j, d, s)) : 0.0f;
  return EPI_VLOAD(0, t);
}
)CL";
const OpForm kVectorForms[] = {
    {"Relu", 1, "select((EPI_VF)(0.0f), $0, $0 > 0.0f)"},
    {"Sigmoid", 1, "epi_v_sigmoid($0)"},
    {"Softplus", 1, "select(log1p(exp($0)), $0 + log1p(exp(-$0)), $0 > 0.0f)"},
    {"Sign", 1, nullptr},
    {"HardSwish", 1, "($0 * epi_v_std_max((EPI_VF)(0.0f), epi_v_std_min((EPI_VF)(1.0f), $0 / 6.0f + 0.5f)))"},
    {"Max", 2, "select($1, $0, isnan($0) | ($0 > $1))"},
    {"Min", 2, "select($1, $0, isnan($0) | ($0 < $1))"},
    {"Clip", 3, "epi_v_std_min(epi_v_std_max($0, $1), $2)"},
    {"LeakyRelu", 2, "select($0, $1 * $0, $0 < 0.0f)"},
    {"HardSigmoid", 3, "epi_v_std_max((EPI_VF)(0.0f), epi_v_std_min((EPI_VF)(1.0f), $1 * $0 + $2))"},
    {"Elu", 2, "select($1 * (exp($0) - 1.0f), $0, $0 >= 0.0f)"},
    {"Erf", 1, "epi_v_erf($0)"},
    {"Gelu", 1, "(0.5f * $0 * (1.0f + epi_v_erf($0 * 0.7071067811865476f)))"},
};

std::string substitute(const char* form, const std::vector<std::string>& a) {
  std::string out;
  for (const char* c = form; *c; ++c) {
    if (*c == '$') out += a.at(size_t(*++c - '0'));
    else out += *c;
  }
  return out;
}

// The vector form of `in`, "" when it has none.
std::string vector_expression(const EpilogueInstr& in, const std::vector<std::string>& a) {
  for (const OpForm& f : kVectorForms)
    if (in.op == f.op) return f.form ? substitute(f.form, a) : "";
  for (const OpForm& f : kForms)
    if (in.op == f.op) return substitute(f.form, a);  // arithmetic and math builtins take vectors as they are
  return "";
}

std::string expression(const EpilogueInstr& in, const std::vector<std::string>& a) {
  for (const OpForm& f : kForms) {
    if (in.op != f.op) continue;
    if (int(a.size()) != f.operands)
      throw Error("epilogue: " + in.op + " takes " + std::to_string(f.operands) + " operands");
    return substitute(f.form, a);
  }
  throw Error("epilogue: no OpenCL form for operator '" + in.op + "'");
}

// `inline float NAME(float x0, ..., float x<reads - 1>)`: the program's
// scalar form.
std::string scalar_function(const Epilogue& e, size_t reads, const std::string& name) {
  std::ostringstream o;
  o << "inline float " << name << "(";
  for (size_t k = 0; k < reads; ++k) o << (k ? ", " : "") << "float x" << k;
  o << ") {\n";
  for (size_t k = 0; k < e.code.size(); ++k) {
    std::vector<std::string> args;
    for (const EpilogueOperand& a : e.code[k].args) {
      if (a.kind == EpilogueOperand::Kind::Literal) {
        args.push_back(literal(a.value));
      } else {
        int limit = a.kind == EpilogueOperand::Kind::Input ? int(reads) : int(k);
        if (a.index < 0 || a.index >= limit) throw Error("epilogue: operand out of range in " + e.code[k].op);
        std::string n(1, a.kind == EpilogueOperand::Kind::Input ? 'x' : 't');
        args.push_back(n.append(std::to_string(a.index)));
      }
    }
    o << "  const float t" << k << " = " << expression(e.code[k], args) << ";\n";
  }
  if (e.code.empty())
    o << "  return x0;\n}\n";
  else
    o << "  return t" << e.code.size() - 1 << ";\n}\n";
  return o.str();
}

}  // namespace

std::string epilogue_function_cl(const Epilogue& e, const std::string& name) {
  if (e.inputs() > 1) throw Error("epilogue " + name + " reads x" + std::to_string(e.inputs() - 1) + "; only x0 is bound");
  return scalar_function(e, 1, name);
}

std::string channel_program_cl(const Epilogue& e, int operands, const std::optional<ChannelDepthwise>& depthwise,
                               const std::optional<ChannelGateShape>& gate) {
  if (e.inputs() > operands + 1)
    throw Error("channel program reads x" + std::to_string(e.inputs() - 1) + " but has " + std::to_string(operands) +
                " operands");
  std::ostringstream o;
  o << kHelpers << scalar_function(e, size_t(operands) + 1, "xpro_program");
  if (depthwise) {
    // The taps unrolled (the geometry is compiled in) and loaded without
    // branches (a tap in the padding reads the plane's first element and
    // counts 0), all of a slice's at once; gemm.cl sums them after the
    // multiply before (docs/fused-ops.md#depthwise-input-channelprogramdepthwise).
    const ChannelDepthwise& d = *depthwise;
    const int64_t taps = d.kh * d.kw;
    o << "#define XLOAD 1\n#define XLOAD_TAPS " << taps << "\n"
      << "inline float xdw_fetch(__private float* x, __global const real_t* E, int n, Dims xdw) {\n"
      << "  const int H = xdw.d[MAXR - 3], W = xdw.d[MAXR - 2], OW = xdw.d[MAXR - 1];\n"
      << "  const int oh = n / OW, ow = n - oh * OW;\n"
      << "  const int ih0 = oh * " << d.sh << " - " << d.pads[0] << ", iw0 = ow * " << d.sw << " - " << d.pads[1]
      << ";\n"
      << "  _Pragma(\"unroll\") for (int t = 0; t < " << taps << "; ++t) {\n"
      << "    const int ih = ih0 + (t / " << d.kw << ") * " << d.dh << ", iw = iw0 + (t % " << d.kw << ") * " << d.dw
      << ";\n"
      << "    const bool in = ih >= 0 && ih < H && iw >= 0 && iw < W;\n"
      << "    const float v = LD(E, in ? ih * W + iw : 0);\n"
      << "    x[t] = in ? v : 0.0f;\n"
      << "  }\n"
      << "  return 0.0f;\n"
      << "}\n"
      << "inline float xdw_sum(__private const float* x, __global const real_t* w) {\n"
      << "  float s = 0.0f;\n"
      << "  _Pragma(\"unroll\") for (int t = 0; t < " << taps << "; ++t) s += LD(w, t) * x[t];\n"
      << "  return s;\n"
      << "}\n";
  }
  const int passed = gate ? operands - 1 : operands;  // operands read from buffers
  if (gate) {
    if (operands < 1) throw Error("a channel gate without its operand");
    if (gate->program.inputs() > 1)
      throw Error("channel gate reads x" + std::to_string(gate->program.inputs() - 1) + "; only x0 is bound");
    // A macro, not a function: it declares the kernel's local array, and an
    // OpenCL C function the driver does not inline fails to link on NVIDIA's.
    o << scalar_function(gate->program, 1, "xgate_program") << "#define XPRO_SETUP \\\n"
      << "  __local float xgate[" << gate->channels << "]; \\\n"
      << "  for (int c_ = get_local_id(0) + get_local_size(0) * get_local_id(1); c_ < " << gate->channels
      << "; c_ += get_local_size(0) * get_local_size(1)) { \\\n"
      << "    float s_ = " << (gate->bias ? "LD(GB, GBo + c_)" : "0.0f") << "; \\\n"
      << "    for (int j_ = 0; j_ < " << gate->inputs << "; ++j_) s_ += LD(GW, GWo + c_ * " << gate->inputs
      << " + j_) * LD(GH, GHo + j_); \\\n"
      << "    xgate[c_] = xgate_program(s_); \\\n"
      << "  } \\\n"
      << "  barrier(CLK_LOCAL_MEM_FENCE);\n";
  }
  o << "#define XPRO_PARAMS";
  if (depthwise) o << " , __global const real_t* DW, int DWo, Dims xdw";
  for (int k = 1; k <= passed; ++k) o << " , __global const real_t* P" << k << ", int P" << k << "o";
  if (gate) {
    o << " , __global const real_t* GH, int GHo, __global const real_t* GW, int GWo";
    if (gate->bias) o << " , __global const real_t* GB, int GBo";
  }
  o << "\n#define XPRO(v, c) xpro_program((v)";
  for (int k = 1; k <= passed; ++k) o << ", LD(P" << k << ", P" << k << "o + (c))";
  if (gate) o << ", xgate[(c)]";
  o << ")\n";
  return o.str();
}

std::string epilogue_cl(const Epilogue& e, const std::vector<EpilogueRead>& reads, const std::vector<bool>& row_constant,
                        int copied) {
  if (int(reads.size()) < e.inputs())
    throw Error("epilogue reads x" + std::to_string(e.inputs() - 1) + " but only " + std::to_string(reads.size()) +
                " operands are bound");
  if (copied >= 0 && (size_t(copied) >= reads.size() || reads[size_t(copied)] != EpilogueRead::Direct))
    throw Error("epilogue copies x" + std::to_string(copied) + ", which it does not read at Y's index");
  std::ostringstream o;
  o << kHelpers;
  bool strided = false;
  o << "#define EPI_PARAMS";
  for (size_t k = 0; k < reads.size(); ++k) {
    if (reads[k] == EpilogueRead::Value) continue;
    o << " , __global const real_t* X" << k << ", int X" << k << "o";
    if (reads[k] == EpilogueRead::Strided) o << ", Dims X" << k << "s", strided = true;
  }
  if (strided) o << ", Dims epi_dims";
  const bool copies = copied >= 0;
  const std::string x_copied = "X" + std::to_string(copied);
  if (copies)
    o << " , __global real_t* EPY, int EPYo, int EPYp\n"
      << "inline float epi_stored_with(__global real_t* y, int at, float copy, float v) {\n"
      << "  ST(y, at, copy);\n  return v;\n}";
  o << "\n" << scalar_function(e, reads.size(), "epi_program");
  // `head`(operand 0, operand 1, ...): each operand as `value`, `direct` or
  // `strided` spells it for buffer X<k> ("X" stands for it); where the
  // program copies an operand (no vector form then), wrapped in the store.
  auto call = [&](const std::string& head, const std::string& value, const std::string& direct,
                  const std::function<std::string(size_t)>& strided_operand) {
    if (copies) o << head.substr(0, head.rfind(' ') + 1) << "epi_stored_with(EPY, EPYo + (i) + (i) / EPYp * EPYp, LD(" << x_copied
                  << ", " << x_copied << "o + (i)), " << head.substr(head.rfind(' ') + 1);
    else o << head;
    o << "(";
    for (size_t k = 0; k < reads.size(); ++k) {
      const std::string x = "X" + std::to_string(k);
      std::string form = reads[k] == EpilogueRead::Value    ? value
                         : reads[k] == EpilogueRead::Direct ? direct
                                                            : strided_operand(k);
      for (size_t at; (at = form.find('@')) != std::string::npos;) form.replace(at, 1, x);
      o << (k ? ", " : "") << form;
    }
    o << (copies ? "))\n" : ")\n");
  };
  call("#define EPI(v, i) epi_program", "(v)", "LD(@, @o + (i))",
       [](size_t) { return std::string("LD(@, @o + strided_offset((i), epi_dims, @s))"); });
  // EPI_ROW_SETUP(r, L) and EPI_R(v, i, j): the same over a row of L
  // elements (r the row, i the element, j its place in the row), each
  // strided operand's row start found once instead of per element.
  if (strided) {
    auto constant = [&](size_t k) { return k < row_constant.size() && row_constant[k]; };
    o << "#define EPI_ROW_SETUP(r, L)";
    for (size_t k = 0; k < reads.size(); ++k)
      if (reads[k] == EpilogueRead::Strided)
        o << " const int X" << k << "r = X" << k << "o + strided_offset((r) * (L), epi_dims, X" << k << "s), X" << k
          << "l = X" << k << "s.d[MAXR - 1];" << (constant(k) ? " const float X" + std::to_string(k) + "v = LD(X" +
                                                                   std::to_string(k) + ", X" + std::to_string(k) + "r);"
                                                             : "");
    o << "\n";
    call("#define EPI_R(v, i, j) epi_program", "(v)", "LD(@, @o + (i))",
         [&](size_t k) { return std::string(constant(k) ? "@v" : "LD(@, @r + (j) * @l)"); });
  }

  // EPI_VEC(v, i, n): the program on EPI_VECTOR_WIDTH consecutive elements
  // [i, i+width) at once (only the first n exist: the rest of the result
  // is meaningless), v their vector of kernel results; defined only
  // where the kernel asks (-DEPI_VECTOR_WIDTH) and every op has a vector form.
  std::ostringstream vp;
  bool vectorizable = true;
  for (size_t k = 0; k < e.code.size() && vectorizable; ++k) {
    std::vector<std::string> args;
    for (const EpilogueOperand& a : e.code[k].args) {
      if (a.kind == EpilogueOperand::Kind::Literal) args.push_back("((EPI_VF)" + literal(a.value) + ")");
      else args.push_back((a.kind == EpilogueOperand::Kind::Input ? "x" : "t") + std::to_string(a.index));
    }
    std::string form = vector_expression(e.code[k], args);
    if (form.empty()) vectorizable = false;
    vp << "  const EPI_VF t" << k << " = " << form << ";\n";
  }
  if (!vectorizable || copies) return o.str();
  o << "#ifdef EPI_VECTOR_WIDTH\n" << kVectorHelpers << "inline EPI_VF epi_program_v(";
  for (size_t k = 0; k < reads.size(); ++k) o << (k ? ", " : "") << "EPI_VF x" << k;
  o << ") {\n" << vp.str() << "  return " << (e.code.empty() ? "x0" : "t" + std::to_string(e.code.size() - 1))
    << ";\n}\n";
  call("#define EPI_VEC(v, i, n) epi_program_v", "(v)", "epi_v_load(@, @o + (i), (n))",
       [](size_t) { return std::string("epi_v_gather(@, @o, @s, epi_dims, (i), (n))"); });
  o << "#endif\n";
  return o.str();
}

}  // namespace texplan::lower
