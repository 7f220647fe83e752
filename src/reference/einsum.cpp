// Einsum: the equation parser (einsum.h) and the reference operator, a
// direct loop over every combination of label values.
#include "reference/einsum.h"

#include <algorithm>
#include <set>

#include "reference/ops.h"

namespace texplan::reference {
namespace {

bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// A term's letters and where its ellipsis is (-1: none).
struct Term {
  std::vector<int> letters;
  int ellipsis_at = -1;  // index into letters before which the ellipsis stands
};

Term parse_term(const std::string& s, const std::string& where) {
  Term t;
  for (size_t i = 0; i < s.size();) {
    if (is_letter(s[i])) {
      t.letters.push_back(static_cast<unsigned char>(s[i]));
      ++i;
    } else if (s.compare(i, 3, "...") == 0) {
      if (t.ellipsis_at >= 0) throw Error(where + " '" + s + "' has two ellipses");
      t.ellipsis_at = int(t.letters.size());
      i += 3;
    } else {
      throw Error(where + " '" + s + "': '" + std::string(1, s[i]) + "' is neither a letter nor part of '...'");
    }
  }
  return t;
}

}  // namespace

std::string einsum_label_name(int label) {
  if (label >= EinsumSpec::kEllipsisLabel) return "...";
  return std::string(1, char(label));
}

EinsumSpec parse_einsum(const std::string& equation, const std::vector<Shape>& shapes) {
  std::string eq;
  for (char c : equation)
    if (c != ' ') eq += c;
  const size_t arrow = eq.find("->");
  const bool explicit_output = arrow != std::string::npos;
  const std::string lhs = explicit_output ? eq.substr(0, arrow) : eq;
  std::vector<Term> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(parse_term(lhs.substr(start, comma - start), "term " + std::to_string(terms.size())));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != shapes.size())
    throw Error("equation '" + equation + "' has " + std::to_string(terms.size()) + " terms for " +
                std::to_string(shapes.size()) + " operands");
  // Ellipsis ranks, and the broadcast ellipsis rank.
  std::vector<int64_t> ellipsis_rank(terms.size(), 0);
  int64_t ellipsis_dims = 0;
  for (size_t k = 0; k < terms.size(); ++k) {
    const int64_t rank = int64_t(shapes[k].size()), letters = int64_t(terms[k].letters.size());
    const int64_t e = rank - letters;
    if (terms[k].ellipsis_at < 0 ? e != 0 : e < 0)
      throw Error("term " + std::to_string(k) + " of '" + equation + "' names " + std::to_string(letters) +
                  " dimensions, operand " + std::to_string(k) + " has rank " + std::to_string(rank));
    ellipsis_rank[k] = e;
    ellipsis_dims = std::max(ellipsis_dims, e);
  }
  EinsumSpec spec;
  std::map<int, int> occurrences;  // label -> terms it appears in (counting repeats)
  for (size_t k = 0; k < terms.size(); ++k) {
    const Term& t = terms[k];
    std::vector<int> labels;
    for (size_t i = 0; i <= t.letters.size(); ++i) {
      if (int(i) == t.ellipsis_at)
        for (int64_t d = 0; d < ellipsis_rank[k]; ++d)
          labels.push_back(EinsumSpec::kEllipsisLabel + int(ellipsis_dims - ellipsis_rank[k] + d));
      if (i < t.letters.size()) labels.push_back(t.letters[i]);
    }
    std::map<int, int64_t> own;  // a label repeated within one operand: equal extents
    for (size_t d = 0; d < labels.size(); ++d) {
      const int l = labels[d];
      const int64_t extent = shapes[k][d];
      if (auto [it, fresh] = own.emplace(l, extent); !fresh && it->second != extent)
        throw Error("label '" + einsum_label_name(l) + "' repeats in term " + std::to_string(k) +
                    " with extents " + std::to_string(it->second) + " and " + std::to_string(extent));
      auto [it, fresh] = spec.extents.emplace(l, extent);
      if (!fresh && it->second != extent) {
        if (it->second != 1 && extent != 1)
          throw Error("label '" + einsum_label_name(l) + "' has extent " + std::to_string(it->second) +
                      " in one operand and " + std::to_string(extent) + " in operand " + std::to_string(k));
        it->second = std::max(it->second, extent);
      }
      if (l < EinsumSpec::kEllipsisLabel) ++occurrences[l];
    }
    spec.operands.push_back(std::move(labels));
  }
  for (int64_t d = 0; d < ellipsis_dims; ++d) spec.extents.emplace(EinsumSpec::kEllipsisLabel + int(d), 1);
  if (explicit_output) {
    const Term out = parse_term(eq.substr(arrow + 2), "the output");
    if (out.ellipsis_at < 0 && ellipsis_dims > 0)
      throw Error("the output of '" + equation + "' omits '...', which stands for " + std::to_string(ellipsis_dims) +
                  " dimension(s) of the operands (summing them away is not supported)");
    std::set<int> seen;
    for (size_t i = 0; i <= out.letters.size(); ++i) {
      if (int(i) == out.ellipsis_at)
        for (int64_t d = 0; d < ellipsis_dims; ++d) spec.output.push_back(EinsumSpec::kEllipsisLabel + int(d));
      if (i == out.letters.size()) break;
      const int l = out.letters[i];
      if (!occurrences.count(l))
        throw Error("output label '" + einsum_label_name(l) + "' of '" + equation + "' is in no operand");
      if (!seen.insert(l).second)
        throw Error("output label '" + einsum_label_name(l) + "' of '" + equation + "' repeats");
      spec.output.push_back(l);
    }
  } else {
    for (int64_t d = 0; d < ellipsis_dims; ++d) spec.output.push_back(EinsumSpec::kEllipsisLabel + int(d));
    for (const auto& [l, n] : occurrences)  // std::map: ASCII order
      if (n == 1) spec.output.push_back(l);
  }
  for (int l : spec.output) spec.output_shape.push_back(spec.extents.at(l));
  return spec;
}

namespace {

Outputs Einsum(const OpContext& c) {
  std::vector<Shape> shapes;
  for (size_t k = 0; k < c.input_count(); ++k) {
    shapes.push_back(c.input(k).shape);
    require_same_dtype(c, c.input(0), c.input(k));
  }
  if (shapes.empty()) c.fail("Einsum needs at least one operand");
  EinsumSpec spec;
  try {
    spec = parse_einsum(c.node.get_string("equation", ""), shapes);
  } catch (const Error& e) {
    c.fail(e.what());
  }
  // Loop order: the output's labels outermost, then the summed ones.
  std::vector<int> labels = spec.output;
  for (const auto& [l, extent] : spec.extents)
    if (std::find(labels.begin(), labels.end(), l) == labels.end()) labels.push_back(l);
  const size_t L = labels.size();
  std::vector<int64_t> extent(L);
  for (size_t i = 0; i < L; ++i) extent[i] = spec.extents.at(labels[i]);
  // strides[k][i]: how far operand k's offset moves per step of label i (the
  // sum over the dimensions it labels: a diagonal; 0 where it broadcasts).
  const size_t operands = shapes.size();
  std::vector<std::vector<int64_t>> strides(operands + 1, std::vector<int64_t>(L, 0));
  for (size_t k = 0; k <= operands; ++k) {
    const Shape& s = k < operands ? shapes[k] : spec.output_shape;
    const std::vector<int>& dims = k < operands ? spec.operands[k] : spec.output;
    const std::vector<int64_t> st = strides_of(s);
    for (size_t d = 0; d < dims.size(); ++d) {
      const size_t i = size_t(std::find(labels.begin(), labels.end(), dims[d]) - labels.begin());
      if (s[d] != 1 || extent[i] == 1) strides[k][i] += st[d];
    }
  }
  const DataType dtype = c.input(0).dtype;
  HostTensor y(dtype, spec.output_shape);
  int64_t total = 1;
  for (int64_t e : extent) {
    if (e > 0 && total > std::numeric_limits<int64_t>::max() / e) c.fail("the loop over every label overflows");
    total *= e;
  }
  dispatch_numeric(c, dtype, [&](auto tag) {
    using T = decltype(tag);
    using Acc = std::conditional_t<std::is_floating_point_v<T>, double, T>;
    std::vector<Acc> sum(size_t(y.count()), Acc(0));
    std::vector<const T*> in(operands);
    for (size_t k = 0; k < operands; ++k) in[k] = c.input(k).template data<T>();
    std::vector<int64_t> index(L, 0), offset(operands + 1, 0);
    for (int64_t step = 0; step < total; ++step) {
      Acc p = Acc(1);
      for (size_t k = 0; k < operands; ++k) p = wrap_mul(p, Acc(in[k][offset[k]]));
      sum[size_t(offset[operands])] = wrap_add(sum[size_t(offset[operands])], p);
      for (size_t i = L; i-- > 0;) {  // odometer over the labels, offsets kept in step
        for (size_t k = 0; k <= operands; ++k) offset[k] += strides[k][i];
        if (++index[i] < extent[i]) break;
        for (size_t k = 0; k <= operands; ++k) offset[k] -= strides[k][i] * extent[i];
        index[i] = 0;
      }
    }
    T* py = y.data<T>();
    for (size_t i = 0; i < sum.size(); ++i) py[i] = T(sum[i]);
  });
  return single(std::move(y));
}

}  // namespace

void register_einsum(OpTable& t) { t["Einsum"] = {Einsum, {"equation"}}; }

}  // namespace texplan::reference
