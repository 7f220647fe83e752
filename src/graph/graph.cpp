#include "graph/graph.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <queue>
#include <sstream>

namespace texplan {

size_t element_size(DataType t) {
  switch (t) {
    case DataType::Float32: return 4;
    case DataType::Float16: return 2;
    case DataType::Float64: return 8;
    case DataType::Int8: return 1;
    case DataType::UInt8: return 1;
    case DataType::Int32: return 4;
    case DataType::Int64: return 8;
    case DataType::Bool: return 1;
  }
  return 0;
}

const char* to_string(DataType t) {
  switch (t) {
    case DataType::Float32: return "float32";
    case DataType::Float16: return "float16";
    case DataType::Float64: return "float64";
    case DataType::Int8: return "int8";
    case DataType::UInt8: return "uint8";
    case DataType::Int32: return "int32";
    case DataType::Int64: return "int64";
    case DataType::Bool: return "bool";
  }
  return "?";
}

int64_t element_count(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) {
    if (d < 0) throw Error("negative dimension in shape " + to_string(s));
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / 16 / d)
      throw Error("shape " + to_string(s) + " overflows 64-bit sizes");
    n *= d;
  }
  return n;
}

std::string to_string(const Shape& s) {
  if (s.empty()) return "scalar";
  std::ostringstream o;
  for (size_t i = 0; i < s.size(); ++i) o << (i ? "x" : "") << s[i];
  return o.str();
}

std::string human_bytes(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = double(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  char s[32];
  std::snprintf(s, sizeof s, u == 0 ? "%.0f %s" : "%.2f %s", v, units[u]);
  return s;
}

namespace {
thread_local int64_t host_tensor_limit = 0;
thread_local uint64_t host_tensor_refusals = 0;
}

HostTensorLimit::HostTensorLimit(int64_t bytes)
    : previous_(host_tensor_limit), refusals_at_start_(host_tensor_refusals) {
  host_tensor_limit = bytes;
}
HostTensorLimit::~HostTensorLimit() { host_tensor_limit = previous_; }
int64_t HostTensorLimit::current() { return host_tensor_limit; }
bool HostTensorLimit::exceeded() const { return host_tensor_refusals != refusals_at_start_; }

HostTensor::HostTensor(DataType t, Shape s) : dtype(t), shape(std::move(s)) {
  const int64_t n = element_count(shape) * int64_t(element_size(dtype));  // element_count leaves room for x8
  if (host_tensor_limit > 0 && n > host_tensor_limit) {
    ++host_tensor_refusals;
    throw Error("a " + std::string(to_string(dtype)) + " tensor of shape " + to_string(shape) + " (" +
                std::to_string(n) + " bytes) exceeds the limit of " + std::to_string(host_tensor_limit) + " bytes");
  }
  bytes.assign(size_t(n), 0);
}

namespace {
// A float read as an integer (an axis, a count, a bound) must be one int64
// holds: casting NaN, an infinity or a value beyond 2^63 is undefined.
int64_t float_as_int64(double x) {
  if (!(x >= -9223372036854775808.0 && x < 9223372036854775808.0))
    throw Error("value " + std::to_string(x) + " is not an integer an int64 can hold");
  return int64_t(x);
}
}  // namespace

std::vector<int64_t> HostTensor::as_int64() const {
  int64_t n = count();
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    switch (dtype) {
      case DataType::Int64: v[i] = data<int64_t>()[i]; break;
      case DataType::Int32: v[i] = data<int32_t>()[i]; break;
      case DataType::Int8: v[i] = data<int8_t>()[i]; break;
      case DataType::UInt8: v[i] = data<uint8_t>()[i]; break;
      case DataType::Bool: v[i] = data<uint8_t>()[i] != 0; break;
      case DataType::Float32: v[i] = float_as_int64(data<float>()[i]); break;
      case DataType::Float64: v[i] = float_as_int64(data<double>()[i]); break;
      default: throw Error(std::string("cannot read ") + to_string(dtype) + " as integers");
    }
  }
  return v;
}

namespace {
// IEEE half -> float, for reading fp16 tensors (test data, Cast results).
float half_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exp = 127 - 15 + 1;
      while (!(mant & 0x400)) mant <<= 1, --exp;
      bits = sign | (exp << 23) | ((mant & 0x3ff) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000 | (mant << 13);
  } else {
    bits = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
}  // namespace

std::vector<float> HostTensor::as_float() const {
  int64_t n = count();
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    switch (dtype) {
      case DataType::Float32: v[i] = data<float>()[i]; break;
      case DataType::Float64: v[i] = float(data<double>()[i]); break;
      case DataType::Int64: v[i] = float(data<int64_t>()[i]); break;
      case DataType::Int32: v[i] = float(data<int32_t>()[i]); break;
      case DataType::Int8: v[i] = data<int8_t>()[i]; break;
      case DataType::UInt8: v[i] = data<uint8_t>()[i]; break;
      case DataType::Bool: v[i] = data<uint8_t>()[i] != 0; break;
      case DataType::Float16: v[i] = half_to_float(data<uint16_t>()[i]); break;
    }
  }
  return v;
}

Attribute Attribute::of_int(int64_t v) {
  Attribute a;
  a.i = v;  // kind Int is the default
  return a;
}
Attribute Attribute::of_float(float v) {
  Attribute a;
  a.kind = Kind::Float, a.f = v;
  return a;
}
Attribute Attribute::of_string(std::string v) {
  Attribute a;
  a.kind = Kind::String, a.s = std::move(v);
  return a;
}
Attribute Attribute::of_ints(std::vector<int64_t> v) {
  Attribute a;
  a.kind = Kind::Ints, a.ints = std::move(v);
  return a;
}
Attribute Attribute::of_floats(std::vector<float> v) {
  Attribute a;
  a.kind = Kind::Floats, a.floats = std::move(v);
  return a;
}
Attribute Attribute::of_strings(std::vector<std::string> v) {
  Attribute a;
  a.kind = Kind::Strings, a.strings = std::move(v);
  return a;
}
Attribute Attribute::of_tensor(HostTensor v) {
  Attribute a;
  a.kind = Kind::Tensor, a.tensor = std::make_shared<HostTensor>(std::move(v));
  return a;
}

int64_t Node::get_int(const std::string& a, int64_t dflt) const {
  auto it = attrs.find(a);
  return it == attrs.end() ? dflt : it->second.i;
}
float Node::get_float(const std::string& a, float dflt) const {
  auto it = attrs.find(a);
  return it == attrs.end() ? dflt : it->second.f;
}
std::string Node::get_string(const std::string& a, const std::string& dflt) const {
  auto it = attrs.find(a);
  return it == attrs.end() ? dflt : it->second.s;
}
std::vector<int64_t> Node::get_ints(const std::string& a, std::vector<int64_t> dflt) const {
  auto it = attrs.find(a);
  return it == attrs.end() ? dflt : it->second.ints;
}
std::vector<float> Node::get_floats(const std::string& a, std::vector<float> dflt) const {
  auto it = attrs.find(a);
  return it == attrs.end() ? dflt : it->second.floats;
}

std::vector<std::string> Node::get_strings(const std::string& a) const {
  auto it = attrs.find(a);
  return it == attrs.end() ? std::vector<std::string>{} : it->second.strings;
}

Tensor without_value(const Tensor& t) {
  Tensor m;
  m.name = t.name, m.dtype = t.dtype, m.shape = t.shape;
  m.is_input = t.is_input, m.is_output = t.is_output, m.is_constant = t.is_constant;
  m.storage_exponent = t.storage_exponent, m.stored_tf32 = t.stored_tf32;
  m.has_data = t.has_data;
  m.producer = t.producer;
  m.window = t.window;
  return m;
}

int Graph::add_tensor(Tensor t) {
  const int id = int(tensors.size());
  // A caller that reserved tensors (the importer: a million) gets the index
  // sized once, not rehashed at every doubling.
  if (index_.bucket_count() < tensors.capacity()) index_.reserve(tensors.capacity());
  if (!index_.try_emplace(t.name, id).second) throw Error(model_name + ": duplicate tensor name '" + t.name + "'");
  tensors.push_back(std::move(t));
  return id;
}

int Graph::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? -1 : it->second;
}

void Graph::rebuild_index() {
  index_.clear();
  for (size_t i = 0; i < tensors.size(); ++i) index_[tensors[i].name] = int(i);
}

std::vector<std::vector<int>> Graph::consumers() const {
  std::vector<std::vector<int>> c(tensors.size());
  for (size_t n = 0; n < nodes.size(); ++n)
    for (int t : nodes[n].inputs)
      if (t >= 0 && (c[t].empty() || c[t].back() != int(n))) c[t].push_back(int(n));
  return c;
}

bool channel_scaled(const Node& n) { return n.op_type == "FusedConv" && n.decisions.channel_scaled; }
void set_channel_scaled(Node& n) { n.decisions.channel_scaled = true; }

std::optional<ChannelProgram> channel_program(const Node& n) {
  if (n.op_type != "FusedConv") return std::nullopt;
  return n.decisions.channel_program;
}

std::optional<ShuffledOutput> shuffled_output(const Node& n) {
  if (n.op_type != "FusedConv") return std::nullopt;
  return n.decisions.shuffled_output;
}

std::optional<RowNorm> row_norm(const Node& n) {
  if (n.op_type != "FusedMatMul") return std::nullopt;
  return n.decisions.row_norm;
}

size_t operand_inputs_end(const Node& n) {
  size_t trailing = channel_scaled(n) ? 1 : 0;
  if (const auto p = channel_program(n)) trailing += p->trailing_inputs();
  if (row_norm(n)) trailing += 2;
  return n.inputs.size() - std::min(trailing, n.inputs.size());
}

std::vector<int64_t> transpose_perm(const Node& n, size_t rank) {
  std::vector<int64_t> perm = n.get_ints("perm");
  if (perm.empty())
    for (size_t d = rank; d-- > 0;) perm.push_back(int64_t(d));
  return perm;
}

int64_t conv_out_extent(int64_t in, int64_t pad_total, int64_t k, int64_t stride, int64_t dilation) {
  return (in + pad_total - dilation * (k - 1) - 1) / std::max<int64_t>(1, stride) + 1;
}

int64_t conv_out_extent(const Node& n, size_t axis, size_t rank, int64_t in, int64_t k, int64_t stride,
                        int64_t dilation) {
  const std::string auto_pad = n.get_string("auto_pad", "NOTSET");
  stride = std::max<int64_t>(1, stride);
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") return (in + stride - 1) / stride;
  const std::vector<int64_t> pads = n.get_ints("pads");
  const int64_t total = auto_pad == "VALID" || pads.size() != 2 * rank ? 0 : pads[axis] + pads[rank + axis];
  return conv_out_extent(in, total, k, stride, dilation);
}

SpatialPad conv_axis_pad(const Node& n, size_t axis, size_t rank, int64_t in, int64_t out, int64_t k, int64_t stride,
                         int64_t dilation, const std::string& prefix) {
  const std::string auto_pad = n.get_string(prefix + "auto_pad", "NOTSET");
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    const int64_t total = std::max<int64_t>(0, (out - 1) * stride + (k - 1) * dilation + 1 - in);
    const int64_t begin = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    return {begin, total - begin};
  }
  const std::vector<int64_t> pads = n.get_ints(prefix + "pads");
  if (auto_pad == "VALID" || pads.size() != 2 * rank) return {0, 0};
  return {pads[axis], pads[rank + axis]};
}

std::optional<AttentionForm> attention_form(const Node& n) {
  if (n.op_type != "FusedAttention") return std::nullopt;
  return n.decisions.attention;
}

const RecurrentCell* recurrent_cell(const Node& n) {
  if (n.op_type != "RecurrentSteps" || !n.decisions.recurrent_cell) return nullptr;
  return &*n.decisions.recurrent_cell;
}

std::optional<OperandView> operand_view(const Node& n, int input) {
  auto it = n.decisions.operand_views.find(input);
  if (it == n.decisions.operand_views.end()) return std::nullopt;
  return it->second;
}

void set_operand_view(Node& n, int input, const OperandView& v) { n.decisions.operand_views[input] = v; }

void clear_operand_view(Node& n, int input) { n.decisions.operand_views.erase(input); }

void Graph::topological_sort() {
  // An order that is already valid is kept as is (file order is the user's
  // order). One pass finds the producers and whether it is: a tensor read
  // before any node wrote it, by a node at or before its producer, makes it
  // invalid.
  std::vector<int> producer(tensors.size(), -1);
  std::vector<int> early_reader(tensors.size(), std::numeric_limits<int>::max());
  for (size_t n = 0; n < nodes.size(); ++n) {
    for (int t : nodes[n].inputs)
      if (t >= 0 && producer[t] < 0) early_reader[t] = std::min(early_reader[t], int(n));
    for (int t : nodes[n].outputs)
      if (t >= 0) {
        if (producer[t] >= 0)
          throw Error(model_name + ": tensor '" + tensors[t].name + "' is produced by both node '" +
                      nodes[producer[t]].name + "' and node '" + nodes[n].name + "'");
        producer[t] = int(n);
      }
  }
  bool valid = true;
  for (size_t t = 0; t < producer.size() && valid; ++t) valid = producer[t] < 0 || early_reader[t] > producer[t];
  if (valid) {
    for (size_t t = 0; t < producer.size(); ++t) tensors[t].producer = producer[t];
    return;
  }
  // Kahn's algorithm with a min-heap on the original position: the valid
  // order nearest the given one.
  std::vector<int> pending(nodes.size(), 0);
  std::vector<std::vector<int>> users(nodes.size());
  for (size_t n = 0; n < nodes.size(); ++n)
    for (int t : nodes[n].inputs)
      if (t >= 0 && producer[t] >= 0) {
        ++pending[n];
        users[producer[t]].push_back(int(n));
      }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (size_t n = 0; n < nodes.size(); ++n)
    if (pending[n] == 0) ready.push(int(n));
  std::vector<int> order;
  order.reserve(nodes.size());
  while (!ready.empty()) {
    int n = ready.top();
    ready.pop();
    order.push_back(n);
    for (int u : users[n])
      if (--pending[u] == 0) ready.push(u);
  }
  if (order.size() != nodes.size()) {
    for (size_t n = 0; n < nodes.size(); ++n)
      if (pending[n] > 0)
        throw Error(model_name + ": the graph has a cycle through node '" + nodes[n].name + "' (" +
                    nodes[n].op_type + ")");
  }
  bool already_sorted = true;
  for (size_t k = 0; k < order.size() && already_sorted; ++k) already_sorted = order[k] == int(k);
  if (!already_sorted) {
    std::vector<Node> sorted;
    sorted.reserve(nodes.size());
    for (int n : order) sorted.push_back(std::move(nodes[n]));
    nodes = std::move(sorted);
  }
  for (auto& t : tensors) t.producer = -1;
  for (size_t n = 0; n < nodes.size(); ++n)
    for (int t : nodes[n].outputs)
      if (t >= 0) tensors[t].producer = int(n);
}

void Graph::erase_nodes(const std::vector<char>& erased) {
  std::vector<Node> kept;
  for (size_t k = 0; k < nodes.size(); ++k)
    if (!erased[k]) kept.push_back(std::move(nodes[k]));
  nodes = std::move(kept);
  topological_sort();
  remove_dead_nodes();
}

void Graph::remove_dead_nodes() {
  std::vector<char> needed(tensors.size(), 0), keep(nodes.size(), 0);
  for (int t : outputs) needed[t] = 1;
  for (size_t k = nodes.size(); k-- > 0;) {
    bool used = false;
    for (int t : nodes[k].outputs) used |= (t >= 0 && needed[t]);
    if (!used) continue;
    keep[k] = 1;
    for (int t : nodes[k].inputs)
      if (t >= 0) needed[t] = 1;
  }
  for (int t : inputs) needed[t] = 1;
  if (!std::all_of(keep.begin(), keep.end(), [](char k) { return k; })) {
    std::vector<Node> live;
    for (size_t k = 0; k < nodes.size(); ++k)
      if (keep[k]) live.push_back(std::move(nodes[k]));
    nodes = std::move(live);
  }
  // Outputs of kept nodes stay (an unused optional output still needs a home).
  for (auto& n : nodes)
    for (int t : n.outputs)
      if (t >= 0) needed[t] = 1;
  // A window's base holds its bytes.
  for (size_t t = 0; t < tensors.size(); ++t)
    if (needed[t] && tensors[t].window) needed[tensors[t].window->base] = 1;
  // Nothing dead (the usual case): ids, and the name index, stay as they are.
  if (std::all_of(needed.begin(), needed.end(), [](char k) { return k; })) {
    for (auto& t : tensors) t.producer = -1;
    for (size_t n = 0; n < nodes.size(); ++n)
      for (int t : nodes[n].outputs)
        if (t >= 0) tensors[t].producer = int(n);
    return;
  }
  std::vector<int> remap(tensors.size(), -1);
  std::vector<Tensor> kept;
  for (size_t t = 0; t < tensors.size(); ++t)
    if (needed[t]) {
      remap[t] = int(kept.size());
      kept.push_back(std::move(tensors[t]));
    }
  tensors = std::move(kept);
  auto fix = [&](std::vector<int>& ids) {
    for (int& t : ids)
      if (t >= 0) t = remap[t];
  };
  for (auto& n : nodes) {
    fix(n.inputs);
    fix(n.outputs);
  }
  fix(inputs);
  fix(outputs);
  for (auto& t : tensors)
    if (t.window) t.window->base = remap[t.window->base];
  rebuild_index();
  for (auto& t : tensors) t.producer = -1;
  for (size_t n = 0; n < nodes.size(); ++n)
    for (int t : nodes[n].outputs)
      if (t >= 0) tensors[t].producer = int(n);
}

}  // namespace texplan
