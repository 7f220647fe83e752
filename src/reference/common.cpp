#include "reference/common.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include <algorithm>
#include <cmath>

namespace texplan::reference {

// ---- OpContext ----------------------------------------------------------------

OpError OpContext::error(const std::string& reason) const {
  return OpError(node.name + " (" + node.op_type + "): " + reason);
}

const HostTensor& OpContext::input(size_t i) const {
  if (!has_input(i)) fail("input " + std::to_string(i) + " is required but missing");
  return *inputs_[i];
}

std::string OpContext::choice(const std::string& attr, const std::vector<std::string>& allowed) const {
  std::string v = node.get_string(attr, allowed.front());
  if (std::find(allowed.begin(), allowed.end(), v) == allowed.end()) {
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    fail("unsupported " + attr + " '" + v + "' (supported: " + list + ")");
  }
  return v;
}

std::vector<int64_t> OpContext::int_values(size_t index) const {
  const HostTensor& t = input(index);
  switch (t.dtype) {
    case DataType::Int64:
    case DataType::Int32:
    case DataType::Int8:
    case DataType::UInt8: return t.as_int64();
    default:
      fail("input " + std::to_string(index) + " must be an integer tensor, got " + to_string(t.dtype));
  }
}

std::optional<std::vector<int64_t>> OpContext::ints_input_or_attr(size_t index, const std::string& attr) const {
  if (has_input(index)) return int_values(index);
  if (node.has(attr)) return node.get_ints(attr);
  return std::nullopt;
}

double OpContext::scalar_value(size_t index) const {
  const HostTensor& t = input(index);
  if (t.count() != 1) fail("input " + std::to_string(index) + " must hold one value, got shape " + to_string(t.shape));
  if (t.dtype == DataType::Float16) return half_to_float(t.data<uint16_t>()[0]);
  if (t.dtype == DataType::Bool) return t.data<uint8_t>()[0] != 0;
  return dispatch_numeric(*this, t.dtype, [&](auto tag) { return double(t.data<decltype(tag)>()[0]); });
}

std::vector<double> OpContext::doubles(const HostTensor& t) const {
  std::vector<double> v(size_t(t.count()));
  if (t.dtype == DataType::Float16) {
    for (size_t i = 0; i < v.size(); ++i) v[i] = half_to_float(t.data<uint16_t>()[i]);
    return v;
  }
  dispatch_numeric(*this, t.dtype, [&](auto tag) {
    for (size_t i = 0; i < v.size(); ++i) v[i] = double(t.data<decltype(tag)>()[i]);
  });
  return v;
}

// ---- dtypes -------------------------------------------------------------------

DataType dtype_from_onnx(const OpContext& c, int64_t code) {
  switch (code) {
    case 1: return DataType::Float32;
    case 2: return DataType::UInt8;
    case 3: return DataType::Int8;
    case 6: return DataType::Int32;
    case 7: return DataType::Int64;
    case 9: return DataType::Bool;
    case 10: return DataType::Float16;
    case 11: return DataType::Float64;
  }
  static const char* names[] = {"UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32", "INT64", "STRING",
                                "BOOL", "FLOAT16", "DOUBLE", "UINT32", "UINT64", "COMPLEX64", "COMPLEX128",
                                "BFLOAT16"};
  std::string name = code >= 0 && code <= 16 ? names[code] : std::to_string(code);
  c.fail("unsupported data type " + name);
}

float half_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, x;
  if (exp == 0) {
    float f = float(mant) * (1.0f / 16777216.0f);  // zero or subnormal: mant * 2^-24
    return sign ? -f : f;
  }
  if (exp == 31)
    x = sign | 0x7f800000u | (mant << 13);
  else
    x = sign | ((exp + 112) << 23) | (mant << 13);
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000, mant = x & 0x7fffff;
  int32_t exp = int32_t((x >> 23) & 0xff);
  if (exp == 0xff) return uint16_t(sign | 0x7c00 | (mant ? 0x200 | (mant >> 13) : 0));  // inf, nan
  int32_t e = exp - 127 + 15;
  if (e >= 0x1f) return uint16_t(sign | 0x7c00);  // overflow to inf
  if (e <= 0) {                                  // half subnormal or zero
    if (e < -10) return uint16_t(sign);
    mant |= 0x800000;
    uint32_t shift = uint32_t(14 - e), m = mant >> shift, rem = mant & ((1u << shift) - 1),
             halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (m & 1))) ++m;
    return uint16_t(sign | m);
  }
  uint32_t h = sign | uint32_t(e << 10) | (mant >> 13), rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;  // a carry correctly bumps the exponent
  return uint16_t(h);
}

namespace {
#if defined(__x86_64__) && defined(__GNUC__)
// The scalar conversion's rounding branches cost about 16 ns a value; F16C
// converts 8 per instruction.
__attribute__((target("avx,f16c"))) void floats_to_halves_f16c(const float* f, uint16_t* h, size_t n) {
  size_t k = 0;
  for (; k + 8 <= n; k += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(h + k), _mm256_cvtps_ph(_mm256_loadu_ps(f + k), _MM_FROUND_TO_NEAREST_INT));
  for (; k < n; ++k) h[k] = float_to_half(f[k]);
}
__attribute__((target("avx,f16c"))) void halves_to_floats_f16c(const uint16_t* h, float* f, size_t n) {
  size_t k = 0;
  for (; k + 8 <= n; k += 8)
    _mm256_storeu_ps(f + k, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + k))));
  for (; k < n; ++k) f[k] = half_to_float(h[k]);
}
// CPUID leaf 1: ECX bit 29 F16C, 28 AVX, 27 OSXSAVE; XCR0 must enable SSE and AVX state.
bool cpu_has_f16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  if (!(c & (1u << 29)) || !(c & (1u << 28)) || !(c & (1u << 27))) return false;
  unsigned lo = 0, hi = 0;
  __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (lo & 6u) == 6u;
}
bool has_f16c() {
  static const bool yes = cpu_has_f16c();  // a property of the machine, read once
  return yes;
}
#else
bool has_f16c() { return false; }
void floats_to_halves_f16c(const float*, uint16_t*, size_t) {}
void halves_to_floats_f16c(const uint16_t*, float*, size_t) {}
#endif
}  // namespace

void floats_to_halves(const float* f, uint16_t* h, size_t n) {
  if (has_f16c()) return floats_to_halves_f16c(f, h, n);
  for (size_t k = 0; k < n; ++k) h[k] = float_to_half(f[k]);
}

void halves_to_floats(const uint16_t* h, float* f, size_t n) {
  if (has_f16c()) return halves_to_floats_f16c(h, f, n);
  for (size_t k = 0; k < n; ++k) f[k] = half_to_float(h[k]);
}

void require_dtype(const OpContext& c, const HostTensor& t, DataType want, const char* what) {
  if (t.dtype != want)
    c.fail(std::string(what) + " must be " + to_string(want) + ", got " + to_string(t.dtype));
}

void require_same_dtype(const OpContext& c, const HostTensor& a, const HostTensor& b) {
  if (a.dtype != b.dtype)
    c.fail(std::string("inputs have different data types (") + to_string(a.dtype) + " and " + to_string(b.dtype) + ")");
}

// ---- shapes -------------------------------------------------------------------

std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size());
  int64_t acc = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    // Past an overflow the tensor has a 0 dim (element_count refuses the
    // rest): no element is addressed through these strides.
    if (__builtin_mul_overflow(acc, s[i], &acc)) acc = std::numeric_limits<int64_t>::max();
  }
  return st;
}

int64_t product(const Shape& s, size_t begin, size_t end) {
  int64_t p = 1;
  // A shape with a 0 elsewhere can hold dims whose product overflows.
  for (size_t i = begin; i < end && i < s.size(); ++i)
    if (__builtin_mul_overflow(p, s[i], &p)) throw Error("shape " + to_string(s) + ": the product of its dims overflows int64");
  return p;
}

int64_t normalize_axis(const OpContext& c, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    c.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> normalize_axes(const OpContext& c, const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<int64_t> out;
  for (int64_t a : axes) {
    int64_t n = normalize_axis(c, a, rank);
    if (std::find(out.begin(), out.end(), n) != out.end()) c.fail("axis " + std::to_string(a) + " is repeated");
    out.push_back(n);
  }
  return out;
}

Shape broadcast_shapes(const OpContext& c, const std::vector<Shape>& shapes) {
  size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const auto& s : shapes) {
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[rank - s.size() + i];
      int64_t d = s[i];
      if (d == o || d == 1) continue;
      if (o == 1) {
        o = d;
        continue;
      }
      std::string list;
      for (const auto& t : shapes) list += (list.empty() ? "" : ", ") + to_string(t);
      c.fail("shapes " + list + " cannot be broadcast together");
    }
  }
  return out;
}

std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<int64_t> st(out.size(), 0), own = strides_of(in);
  size_t lead = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) st[lead + i] = in[i] == 1 ? 0 : own[i];
  return st;
}

void broadcast_runs(const Shape& out, std::vector<std::vector<int64_t>> strides,
                    const std::function<void(int64_t, const int64_t*, const int64_t*, int64_t)>& f) {
  const size_t nops = strides.size();
  if (element_count(out) == 0) return;
  // Drop size-1 dims and merge dims that are contiguous for every operand.
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> st(nops);
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 1) continue;
    bool merge = !dims.empty();
    for (size_t k = 0; k < nops && merge; ++k) merge = st[k].back() == strides[k][d] * out[d];
    if (merge) {
      dims.back() *= out[d];
      for (size_t k = 0; k < nops; ++k) st[k].back() = strides[k][d];
    } else {
      dims.push_back(out[d]);
      for (size_t k = 0; k < nops; ++k) st[k].push_back(strides[k][d]);
    }
  }
  if (dims.empty()) {
    dims.push_back(1);
    for (auto& s : st) s.push_back(0);
  }
  const size_t nd = dims.size();
  const int64_t inner = dims.back();
  std::vector<int64_t> inner_st(nops), offs(nops, 0), idx(nd, 0);
  for (size_t k = 0; k < nops; ++k) inner_st[k] = st[k].back();
  const int64_t runs = element_count(out) / inner;
  int64_t out_off = 0;
  for (int64_t r = 0; r < runs; ++r) {
    f(out_off, offs.data(), inner_st.data(), inner);
    out_off += inner;
    for (size_t d = nd - 1; d-- > 0;) {
      for (size_t k = 0; k < nops; ++k) offs[k] += st[k][d];
      if (++idx[d] < dims[d]) break;
      for (size_t k = 0; k < nops; ++k) offs[k] -= st[k][d] * dims[d];
      idx[d] = 0;
    }
  }
}

HostTensor strided_copy(const OpContext& c, const HostTensor& x, int64_t offset, const Shape& shape,
                        const std::vector<int64_t>& strides) {
  HostTensor y(x.dtype, shape);
  dispatch_bytes(c, x.dtype, [&](auto tag) {
    using U = decltype(tag);
    const U* src = x.data<U>() + offset;
    U* dst = y.data<U>();
    broadcast_runs(shape, {strides}, [&](int64_t o, const int64_t* off, const int64_t* st, int64_t n) {
      const U* s = src + off[0];
      if (st[0] == 1)
        std::memcpy(dst + o, s, size_t(n) * sizeof(U));
      else
        for (int64_t i = 0; i < n; ++i) dst[o + i] = s[i * st[0]];
    });
  });
  return y;
}

HostTensor broadcast_to(const OpContext& c, const HostTensor& x, const Shape& shape) {
  Shape check = broadcast_shapes(c, {x.shape, shape});
  if (check != shape) c.fail("cannot broadcast shape " + to_string(x.shape) + " to " + to_string(shape));
  return strided_copy(c, x, 0, shape, broadcast_strides(x.shape, shape));
}

const HostTensor& product_operand(const OpContext& c, size_t i, HostTensor& held) {
  const std::optional<OperandView> v = operand_view(c.node, int(i));
  const HostTensor& x = c.input(i);
  if (!v) return x;
  if (v->strides.size() != v->shape.size()) c.fail("operand view " + std::to_string(i) + " is malformed");
  int64_t last = v->offset;
  for (size_t d = 0; d < v->shape.size(); ++d) {
    if (v->strides[d] < 0 || v->shape[d] < 0) c.fail("operand view " + std::to_string(i) + " has a negative stride");
    if (v->shape[d] > 0) last += (v->shape[d] - 1) * v->strides[d];
  }
  if (v->offset < 0 || (element_count(v->shape) > 0 && last >= x.count()))
    c.fail("operand view " + std::to_string(i) + " reads past its input of " + to_string(x.shape));
  held = strided_copy(c, x, v->offset, v->shape, v->strides);
  return held;
}

HostTensor transpose(const OpContext& c, const HostTensor& x, const std::vector<int64_t>& perm) {
  const size_t r = x.shape.size();
  if (perm.size() != r) c.fail("perm has " + std::to_string(perm.size()) + " entries for rank " + std::to_string(r));
  std::vector<int64_t> own = strides_of(x.shape), st(r);
  Shape shape(r);
  std::vector<bool> seen(r, false);
  for (size_t i = 0; i < r; ++i) {
    int64_t p = perm[i];
    if (p < 0 || p >= int64_t(r) || seen[p]) c.fail("perm is not a permutation of 0.." + std::to_string(r - 1));
    seen[p] = true;
    shape[i] = x.shape[p];
    st[i] = own[p];
  }
  return strided_copy(c, x, 0, shape, st);
}

std::string reshape_target(const Shape& x, const std::vector<int64_t>& dims, bool allowzero, Shape& out) {
  out.clear();
  int infer = -1;
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = dims[i];
    if (d == 0 && !allowzero) {
      if (i >= x.size()) return "target shape entry " + std::to_string(i) + " is 0 but the input has no such dim";
      d = x[i];
    } else if (d == -1) {
      if (infer >= 0) return "the target shape has more than one -1";
      infer = int(i);
      d = 1;
    } else if (d < 0) {
      return "invalid target shape entry " + std::to_string(d);
    }
    out.push_back(d);
  }
  const int64_t n = element_count(x), known = element_count(out);
  if (infer >= 0) {
    if (known == 0 || n % known != 0)
      return "cannot infer the -1 of target shape " + to_string(dims) + " for an input of shape " + to_string(x);
    out[infer] = n / known;
  } else if (known != n) {
    return "target shape " + to_string(out) + " holds " + std::to_string(known) + " elements, the input (" +
           to_string(x) + ") " + std::to_string(n) + ": a reshape must keep the element count";
  }
  return "";
}

HostTensor reshaped(const OpContext& c, const HostTensor& x, Shape shape) {
  if (element_count(shape) != x.count())
    c.fail("cannot reshape " + to_string(x.shape) + " to " + to_string(shape));
  HostTensor y;
  y.dtype = x.dtype;
  y.shape = std::move(shape);
  y.bytes = x.bytes;
  return y;
}

// ---- windows ------------------------------------------------------------------

Window forward_window(const OpContext& c, const Shape& in_spatial, std::vector<int64_t> kernel, bool ceil_mode) {
  const int r = int(in_spatial.size());
  if (r < 1 || r > 3) c.fail("supports 1-D, 2-D and 3-D windows, got " + std::to_string(r) + " spatial dims");
  if (kernel.empty()) kernel = c.node.get_ints("kernel_shape");
  if (int(kernel.size()) != r) c.fail("kernel_shape must have " + std::to_string(r) + " entries");
  auto strides = c.node.get_ints("strides", std::vector<int64_t>(r, 1));
  auto dilations = c.node.get_ints("dilations", std::vector<int64_t>(r, 1));
  auto pads = c.node.get_ints("pads", std::vector<int64_t>(2 * r, 0));
  if (int(strides.size()) != r || int(dilations.size()) != r || int(pads.size()) != 2 * r)
    c.fail("strides/dilations/pads do not match " + std::to_string(r) + " spatial dims");
  const std::string auto_pad = c.choice("auto_pad", {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"});

  Window w;
  w.spatial_rank = r;
  for (int i = 0; i < r; ++i) {
    const int j = 3 - r + i;
    const int64_t in = in_spatial[i], k = kernel[i], s = strides[i], d = dilations[i];
    if (k < 1 || s < 1 || d < 1) c.fail("kernel_shape, strides and dilations must be positive");
    const std::string what = "the window of spatial dim " + std::to_string(i);
    const int64_t dk = checked_add(c, checked_mul(c, k - 1, d, what), 1, what);
    int64_t pb = 0, pe = 0, out = 0;
    if (auto_pad == "NOTSET") {
      pb = pads[i];
      pe = pads[i + r];
      if (pb < 0 || pe < 0) c.fail("negative pads are not supported");
      const int64_t span = checked_sub(c, checked_add(c, checked_add(c, in, pb, what), pe, what), dk, what);
      if (span < 0) c.fail("the window (" + std::to_string(dk) + ") is larger than the padded input");
      out = (ceil_mode ? span / s + (span % s != 0) : span / s) + 1;
      // A last window starting in the end padding is dropped (PyTorch and ONNX >= 19).
      if (ceil_mode && (out - 1) * s >= in + pb) --out;
    } else if (auto_pad == "VALID") {
      if (in < dk) c.fail("the window (" + std::to_string(dk) + ") is larger than the input");
      out = (in - dk) / s + 1;
    } else {
      out = in / s + (in % s != 0);
      const int64_t total = std::max<int64_t>(0, checked_sub(c, checked_add(c, (out - 1) * s, dk, what), in, what));
      pb = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pe = total - pb;
    }
    w.in[j] = in;
    w.out[j] = out;
    w.kernel[j] = k;
    w.stride[j] = s;
    w.dilation[j] = d;
    w.pad_begin[j] = pb;
    w.pad_end[j] = pe;
  }
  return w;
}

// ---- gemm ---------------------------------------------------------------------

template <class T>
void gemm_accumulate(int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B, int64_t ldb, T* C,
                     int64_t ldc) {
  // Blocks of B (KB rows x NB columns, ~256 KiB of floats) stay in cache
  // while four rows of C are updated at once; the innermost loop runs over
  // contiguous columns and vectorizes.
  constexpr int64_t NB = 512, KB = 128;
  for (int64_t j0 = 0; j0 < N; j0 += NB) {
    const int64_t nb = std::min(NB, N - j0);
    for (int64_t k0 = 0; k0 < K; k0 += KB) {
      const int64_t kend = std::min(K, k0 + KB);
      int64_t i = 0;
      for (; i + 4 <= M; i += 4) {
        T* __restrict c0 = C + i * ldc + j0;
        T* __restrict c1 = c0 + ldc;
        T* __restrict c2 = c1 + ldc;
        T* __restrict c3 = c2 + ldc;
        for (int64_t k = k0; k < kend; ++k) {
          const T* __restrict b = B + k * ldb + j0;
          const T a0 = A[i * lda + k], a1 = A[(i + 1) * lda + k], a2 = A[(i + 2) * lda + k],
                  a3 = A[(i + 3) * lda + k];
          for (int64_t j = 0; j < nb; ++j) {
            const T bj = b[j];
            c0[j] = wrap_madd(c0[j], a0, bj);
            c1[j] = wrap_madd(c1[j], a1, bj);
            c2[j] = wrap_madd(c2[j], a2, bj);
            c3[j] = wrap_madd(c3[j], a3, bj);
          }
        }
      }
      for (; i < M; ++i) {
        T* __restrict c0 = C + i * ldc + j0;
        for (int64_t k = k0; k < kend; ++k) {
          const T* __restrict b = B + k * ldb + j0;
          const T a0 = A[i * lda + k];
          for (int64_t j = 0; j < nb; ++j) c0[j] = wrap_madd(c0[j], a0, b[j]);
        }
      }
    }
  }
}

template void gemm_accumulate<float>(int64_t, int64_t, int64_t, const float*, int64_t, const float*, int64_t, float*,
                                     int64_t);
template void gemm_accumulate<double>(int64_t, int64_t, int64_t, const double*, int64_t, const double*, int64_t,
                                      double*, int64_t);
template void gemm_accumulate<int64_t>(int64_t, int64_t, int64_t, const int64_t*, int64_t, const int64_t*, int64_t,
                                       int64_t*, int64_t);
template void gemm_accumulate<int32_t>(int64_t, int64_t, int64_t, const int32_t*, int64_t, const int32_t*, int64_t,
                                       int32_t*, int64_t);
template void gemm_accumulate<int8_t>(int64_t, int64_t, int64_t, const int8_t*, int64_t, const int8_t*, int64_t,
                                      int8_t*, int64_t);
template void gemm_accumulate<uint8_t>(int64_t, int64_t, int64_t, const uint8_t*, int64_t, const uint8_t*, int64_t,
                                       uint8_t*, int64_t);

}  // namespace texplan::reference
