// The op_type -> implementation table and evaluate(), the one entry point.
#include <algorithm>

#include "reference/ops.h"
#include "reference/reference_ops.h"

namespace texplan::reference {
namespace {

const OpTable& table() {
  static const OpTable t = [] {
    OpTable t;
    register_elementwise(t);
    register_matmul(t);
    register_einsum(t);
    register_conv(t);
    register_pool(t);
    register_reduce(t);
    register_normalization(t);
    register_shape_ops(t);
    register_indexing(t);
    register_resize(t);
    register_quantize(t);
    register_recurrent(t);
    register_fused(t);
    return t;
  }();
  return t;
}

}  // namespace

bool supports(const std::string& op_type) { return table().count(op_type) != 0; }

std::vector<std::string> supported_ops() {
  std::vector<std::string> ops;
  for (const auto& [name, fn] : table()) ops.push_back(name);
  return ops;
}

std::vector<HostTensor> evaluate(const Node& node, const std::vector<const HostTensor*>& inputs) {
  const OpContext c(node, inputs);
  auto it = table().find(node.op_type);
  if (it == table().end()) c.fail("no reference implementation for operator " + node.op_type);
  // Shape and Size read only the shape, so a tensor without bytes (a weight
  // imported for planning only, an activation's shape) is fine for them.
  const bool reads_values = node.op_type != "Shape" && node.op_type != "Size";
  for (size_t i = 0; i < inputs.size() && reads_values; ++i) {
    const HostTensor* t = inputs[i];
    if (t && t->bytes.size() != size_t(t->count()) * element_size(t->dtype))
      c.fail("input " + std::to_string(i) + " (" + to_string(t->shape) + " " + to_string(t->dtype) +
             ") has no data or the wrong number of bytes");
  }
  const std::vector<std::string>& known = it->second.attrs;
  for (const auto& [name, value] : node.attrs)
    if (std::find(known.begin(), known.end(), name) == known.end())
      c.fail("unsupported attribute '" + name + "'");
  std::vector<HostTensor> out;
  try {
    out = it->second.fn(c);
  } catch (const OpError&) {
    throw;
  } catch (const std::exception& e) {  // Error from graph helpers, bad_alloc, out_of_range...
    throw c.error(e.what());
  }
  if (out.size() < c.output_count()) {
    for (size_t i = out.size(); i < c.output_count(); ++i)
      if (c.output_wanted(i)) c.fail("output " + std::to_string(i) + " is not supported");
    out.resize(c.output_count());
  }
  return out;
}

std::string failure_reason(const Node& node, const std::string& message) {
  const std::string prefix = node.name + " (" + node.op_type + "): ";
  return message.starts_with(prefix) ? message.substr(prefix.size()) : message;
}

}  // namespace texplan::reference
