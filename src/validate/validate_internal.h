// What the validation stage's rule files share (validate.h for the stage):
// NodeCheck, the one node under check that every rule reads and states its
// outputs to, and the hooks that put each family's rules in the table
// validate.cpp looks nodes up in.
#pragma once
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "reference/common.h"

namespace texplan::validation {

using reference::OpContext;
using reference::OpError;

// A failure already naming model and node (other exceptions get them added).
struct NodeError : Error {
  using Error::Error;
};

inline bool is_int(DataType t) {
  return t == DataType::Int64 || t == DataType::Int32 || t == DataType::Int8 || t == DataType::UInt8;
}
inline std::string count_text(int64_t n) { return std::to_string(n) + (n == 1 ? " value" : " values"); }

// One node under check: its operands, the reference helpers' context and
// the expected outputs the rule states.
class NodeCheck {
 public:
  NodeCheck(const Graph& g, const Node& n) : g_(g), n_(n) {
    views_.resize(n.inputs.size());
    ptrs_.assign(n.inputs.size(), nullptr);
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const int id = n.inputs[i];
      if (id < 0) continue;
      if (id >= int(g.tensors.size())) fail("input " + std::to_string(i) + " names no tensor");
      const Tensor& t = g.tensors[id];
      // A shape-only view (no bytes) unless the values are at hand: the
      // reference helpers used here read dtypes and shapes only.
      if (t.has_data) {
        ptrs_[i] = &t.value;
      } else {
        views_[i].dtype = t.dtype;
        views_[i].shape = t.shape;
        ptrs_[i] = &views_[i];
      }
    }
    expected_.resize(n.outputs.size());
  }

  const Node& node() const { return n_; }
  OpContext context() const { return OpContext(n_, ptrs_); }

  [[noreturn]] void fail(const std::string& reason) const {
    throw NodeError(g_.model_name + ": node '" + n_.name + "' (" + n_.op_type + "): " + reason);
  }

  size_t inputs() const { return n_.inputs.size(); }
  bool has(size_t i) const { return i < n_.inputs.size() && n_.inputs[i] >= 0; }
  const Tensor& in(size_t i) const {
    if (!has(i)) fail("input " + std::to_string(i) + " is required but missing");
    return g_.tensors[n_.inputs[i]];
  }
  const Shape& shape(size_t i) const { return in(i).shape; }
  const Tensor* out(size_t o) const {
    return o < n_.outputs.size() && n_.outputs[o] >= 0 ? &g_.tensors[n_.outputs[o]] : nullptr;
  }
  DataType dtype(size_t i) const { return in(i).dtype; }
  int64_t rank(size_t i) const { return int64_t(shape(i).size()); }
  int64_t count(size_t i) const { return element_count(shape(i)); }
  std::string label(size_t i) const { return "input " + std::to_string(i) + " '" + in(i).name + "'"; }
  std::string described(size_t i) const {
    return label(i) + " (" + to_string(shape(i)) + " " + to_string(dtype(i)) + ")";
  }

  void require_float(size_t i) const {
    if (!is_float(dtype(i))) fail(label(i) + " is " + to_string(dtype(i)) + ", expected a float type");
  }
  void require_int(size_t i) const {
    if (dtype(i) != DataType::Int64 && dtype(i) != DataType::Int32)
      fail(label(i) + " is " + to_string(dtype(i)) + ", expected int64 or int32");
  }
  void require_dtype(size_t i, DataType t) const {
    if (dtype(i) != t) fail(label(i) + " is " + to_string(dtype(i)) + ", expected " + to_string(t));
  }
  void require_same_dtype(size_t i, size_t j) const {
    if (dtype(i) != dtype(j))
      fail(label(i) + " is " + to_string(dtype(i)) + " but " + label(j) + " is " + to_string(dtype(j)) +
           ": they must have one type");
  }
  void require_rank(size_t i, int64_t lo, int64_t hi) const {
    if (rank(i) < lo || rank(i) > hi)
      fail(described(i) + " has rank " + std::to_string(rank(i)) + ", expected " +
           (lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi)));
  }
  void require_count(size_t i, int64_t want, const std::string& why) const {
    if (count(i) != want)
      fail(label(i) + " has " + count_text(count(i)) + " (shape " + to_string(shape(i)) + "), expected " +
           std::to_string(want) + " (" + why + ")");
  }
  // `i` broadcasts to `target` one way (numpy rules, rank at most target's).
  void require_broadcasts_to(size_t i, const Shape& target, const std::string& what) const {
    const Shape& s = shape(i);
    bool ok = s.size() <= target.size();
    for (size_t k = 0; ok && k < s.size(); ++k) {
      const int64_t d = s[s.size() - 1 - k], t = target[target.size() - 1 - k];
      ok = d == t || d == 1;
    }
    if (!ok) fail(label(i) + " of shape " + to_string(s) + " does not broadcast to " + what + " " + to_string(target));
  }

  // Values of an integer input that decides a shape; nullopt when they are
  // not known before the run: bytes not loaded (planning without weights),
  // or computed at run time (a graph input, as ONNX's backend tests feed
  // Reshape's shape). Then the rule checks what the declared shapes allow,
  // and the runtime checks the value: an OpenCL lowering falls back to the
  // CPU reference for such a node (lower/shape.cpp), which compares
  // its result with the planned shape before anything is written.
  std::optional<std::vector<int64_t>> ints(size_t i) const {
    const Tensor& t = in(i);
    if (!is_int(t.dtype)) fail(label(i) + " is " + to_string(t.dtype) + ", expected an integer type");
    if (!t.is_constant || !t.has_data) return std::nullopt;
    return t.value.as_int64();
  }
  std::optional<std::vector<double>> floats(size_t i) const {
    const Tensor& t = in(i);
    if (!t.is_constant || !t.has_data) return std::nullopt;
    return context().doubles(t.value);
  }
  // A one-value input that is a scalar parameter (Clip's min, Pad's value).
  void require_scalar(size_t i, const std::string& what) const {
    if (has(i) && count(i) != 1)
      fail(label(i) + " (" + what + ") has " + count_text(count(i)) + " (shape " + to_string(shape(i)) +
           "), expected 1");
  }

  int64_t axis(int64_t a, int64_t r, const std::string& what = "axis") const {
    if (a < -r || a >= r)
      fail(what + " " + std::to_string(a) + " is out of range for rank " + std::to_string(r) + " (expected " +
           std::to_string(-r) + " to " + std::to_string(r - 1) + ")");
    return a < 0 ? a + r : a;
  }
  std::vector<int64_t> axes(const std::vector<int64_t>& list, int64_t r) const {
    std::vector<int64_t> out;
    for (int64_t a : list) {
      const int64_t v = axis(a, r, "axis");
      if (std::find(out.begin(), out.end(), v) != out.end()) fail("axis " + std::to_string(a) + " is listed twice");
      out.push_back(v);
    }
    return out;
  }

  void expect(size_t o, Shape s, DataType t) {
    if (o < expected_.size()) expected_[o] = {std::move(s), t};
  }
  void expect_like_input(size_t o, size_t i) { expect(o, shape(i), dtype(i)); }

  // Every declared output against what the rule computed.
  void compare_outputs() const {
    for (size_t o = 0; o < n_.outputs.size(); ++o) {
      const int id = n_.outputs[o];
      if (id < 0 || !expected_[o]) continue;
      const Tensor& t = g_.tensors[id];
      const auto& [s, dt] = *expected_[o];
      if (t.shape != s || t.dtype != dt)
        fail("output " + std::to_string(o) + " '" + t.name + "' is declared " + to_string(t.shape) + " " +
             to_string(t.dtype) + ", but the operator computes " + to_string(s) + " " + to_string(dt) +
             " from its inputs (a lying value_info or shape)");
    }
  }

  // Runs a reference shape helper, turning its error into this node's.
  template <class F> auto reference(F&& f) const {
    try {
      return f(context());
    } catch (const OpError& e) {
      fail(reference::failure_reason(n_, e.what()));
    }
  }

 private:
  const Graph& g_;
  const Node& n_;
  std::vector<HostTensor> views_;
  std::vector<const HostTensor*> ptrs_;
  std::vector<std::optional<std::pair<Shape, DataType>>> expected_;
};

using Rule = void (*)(NodeCheck&);
using RuleTable = std::map<std::string, Rule>;

// Each family's rules, by operator name (elementwise_rules.cpp,
// compute_rules.cpp, shape_rules.cpp).
void add_elementwise_rules(RuleTable& t);
void add_compute_rules(RuleTable& t);
void add_shape_rules(RuleTable& t);

}  // namespace texplan::validation
