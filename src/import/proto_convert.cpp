#include "import/proto_convert.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <limits>

#include "graph/safe_file.h"

namespace texplan::importing {

bool control_character(char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }

std::string one_line(std::string s, size_t max) {
  if (s.size() > max) s = s.substr(0, max) + "...";
  for (char& c : s)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    else if (control_character(c)) c = '?';
  return s;
}

std::optional<DataType> known_type(int t) {
  switch (t) {
    case onnx::TensorProto::FLOAT: return DataType::Float32;
    case onnx::TensorProto::FLOAT16: return DataType::Float16;
    case onnx::TensorProto::DOUBLE: return DataType::Float64;
    case onnx::TensorProto::INT8: return DataType::Int8;
    case onnx::TensorProto::UINT8: return DataType::UInt8;
    case onnx::TensorProto::INT32: return DataType::Int32;
    case onnx::TensorProto::INT64: return DataType::Int64;
    case onnx::TensorProto::BOOL: return DataType::Bool;
    default: return std::nullopt;
  }
}

DataType from_onnx_type(int t, const std::string& what) {
  if (auto d = known_type(t)) return *d;
  throw Error(what + ": unsupported data type " + onnx::TensorProto_DataType_Name(onnx::TensorProto_DataType(t)));
}

int to_onnx_type(DataType t) {
  switch (t) {
    case DataType::Float32: return onnx::TensorProto::FLOAT;
    case DataType::Float16: return onnx::TensorProto::FLOAT16;
    case DataType::Float64: return onnx::TensorProto::DOUBLE;
    case DataType::Int8: return onnx::TensorProto::INT8;
    case DataType::UInt8: return onnx::TensorProto::UINT8;
    case DataType::Int32: return onnx::TensorProto::INT32;
    case DataType::Int64: return onnx::TensorProto::INT64;
    case DataType::Bool: return onnx::TensorProto::BOOL;
  }
  return 0;
}

std::string read_file(const std::string& path, const std::string& what) {
  return read_regular_file(path, what, kMaxProtobufBytes);  // no FIFO, device, or file protobuf cannot parse
}

fs::path confined_path(const fs::path& dir, const std::string& location, const std::string& what) {
  fs::path rel(location);
  if (rel.empty() || rel.is_absolute())
    throw Error(what + ": external data location '" + location + "' must be a relative path");
  fs::path base = fs::weakly_canonical(dir);
  fs::path full = fs::weakly_canonical(base / rel);
  auto b = base.string(), f = full.string();
  if (f.compare(0, b.size(), b) != 0 || (f.size() > b.size() && f[b.size()] != '/'))
    throw Error(what + ": external data location '" + location + "' leaves the model's folder");
  return full;
}


ExternalRef external_ref(const onnx::TensorProto& t, const std::string& what) {
  ExternalRef r;
  auto number = [&](const std::string& key, const std::string& v) {
    int64_t x = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
    if (ec != std::errc() || end != v.data() + v.size() || x < 0)
      throw Error(what + ": external data " + key + " '" + one_line(v, 40) + "' is not a non-negative integer");
    return x;
  };
  for (const auto& kv : t.external_data()) {
    if (kv.key() == "location") r.location = kv.value();
    else if (kv.key() == "offset") r.offset = number("offset", kv.value());
    else if (kv.key() == "length") r.length = number("length", kv.value());
  }
  return r;
}

fs::path external_file(const fs::path& dir, const ExternalRef& r, const std::string& what) {
  if (dir.empty()) throw Error(what + ": external data, but the model was read from memory (no folder)");
  fs::path p = confined_path(dir, r.location, what);
  std::error_code ec;
  fs::file_status st = fs::status(p, ec);
  if (!fs::exists(st)) return {};
  if (!fs::is_regular_file(st))
    throw Error(what + ": external data location '" + r.location + "' is not a regular file");
  return p;
}

bool is_external(const onnx::TensorProto& t) {
  return t.data_location() == onnx::TensorProto::EXTERNAL;
}

Shape dims_of(const onnx::TensorProto& t) { return Shape(t.dims().begin(), t.dims().end()); }

int64_t checked_count(const Shape& s, const std::string& what) {
  try {
    return element_count(s);
  } catch (const Error& e) {
    throw Error(what + ": " + e.what());
  }
}

HostTensor tensor_from_proto(const onnx::TensorProto& t, const fs::path& dir, const std::string& what) {
  const DataType dtype = from_onnx_type(t.data_type(), what);
  const Shape shape = dims_of(t);
  const int64_t n = checked_count(shape, what);
  const int64_t nbytes = n * int64_t(element_size(dtype));  // element_count leaves room for x8
  auto need = [&](int64_t have) {
    if (have != n)
      throw Error(what + ": holds " + std::to_string(have) + " values, its shape " + to_string(shape) +
                  " needs " + std::to_string(n));
  };
  if (is_external(t)) {
    ExternalRef r = external_ref(t, what);
    fs::path p = external_file(dir, r, what);
    if (p.empty()) throw Error(what + ": missing weights file '" + (dir / r.location).string() + "'");
    int64_t len = r.length < 0 ? nbytes : r.length;
    if (len != nbytes)
      throw Error(what + ": external data length " + std::to_string(len) + " does not match its shape " +
                  to_string(shape) + " (" + std::to_string(nbytes) + " bytes)");
    RegularFile f(p, what);
    const int64_t file_size = f.size();
    if (file_size < 0 || r.offset > file_size || len > file_size - r.offset)
      throw Error(what + ": external data [" + std::to_string(r.offset) + ", +" + std::to_string(len) +
                  ") lies beyond the end of '" + p.filename().string() + "' (" + std::to_string(file_size) +
                  " bytes): truncated weights file?");
    HostTensor h(dtype, shape);
    f.read_at(r.offset, h.bytes.data(), len);
    return h;
  }
  if (t.has_raw_data()) {
    if (int64_t(t.raw_data().size()) != nbytes)
      throw Error(what + ": raw data has " + std::to_string(t.raw_data().size()) + " bytes, its shape " +
                  to_string(shape) + " needs " + std::to_string(nbytes));
    HostTensor h(dtype, shape);
    if (nbytes) std::memcpy(h.bytes.data(), t.raw_data().data(), size_t(nbytes));
    return h;
  }
  switch (dtype) {
    case DataType::Float32: need(t.float_data_size()); break;
    case DataType::Float64: need(t.double_data_size()); break;
    case DataType::Int64: need(t.int64_data_size()); break;
    default: need(t.int32_data_size()); break;
  }
  HostTensor h(dtype, shape);
  switch (dtype) {
    case DataType::Float32:
      std::copy(t.float_data().begin(), t.float_data().end(), h.data<float>());
      break;
    case DataType::Float64:
      std::copy(t.double_data().begin(), t.double_data().end(), h.data<double>());
      break;
    case DataType::Int64:
      std::copy(t.int64_data().begin(), t.int64_data().end(), h.data<int64_t>());
      break;
    case DataType::Int32:
      std::copy(t.int32_data().begin(), t.int32_data().end(), h.data<int32_t>());
      break;
    case DataType::Int8:
    case DataType::UInt8:
    case DataType::Bool:
      for (int64_t i = 0; i < n; ++i) h.bytes[i] = uint8_t(t.int32_data(int(i)));
      break;
    case DataType::Float16:
      for (int64_t i = 0; i < n; ++i) h.data<uint16_t>()[i] = uint16_t(t.int32_data(int(i)));
      break;
  }
  return h;
}

void fill_proto(const HostTensor& h, const std::string& name, onnx::TensorProto* t) {
  t->Clear();
  t->set_name(name);
  t->set_data_type(to_onnx_type(h.dtype));
  for (int64_t d : h.shape) t->add_dims(d);
  t->set_raw_data(h.bytes.data(), h.bytes.size());
}

Attribute attribute_from_proto(const onnx::AttributeProto& a, const fs::path& dir, const std::string& what) {
  Attribute r;
  switch (a.type()) {
    case onnx::AttributeProto::INT: r.kind = Attribute::Kind::Int; r.i = a.i(); break;
    case onnx::AttributeProto::FLOAT: r.kind = Attribute::Kind::Float; r.f = a.f(); break;
    case onnx::AttributeProto::STRING: r.kind = Attribute::Kind::String; r.s = a.s(); break;
    case onnx::AttributeProto::INTS:
      r.kind = Attribute::Kind::Ints;
      r.ints.assign(a.ints().begin(), a.ints().end());
      break;
    case onnx::AttributeProto::FLOATS:
      r.kind = Attribute::Kind::Floats;
      r.floats.assign(a.floats().begin(), a.floats().end());
      break;
    case onnx::AttributeProto::STRINGS:
      r.kind = Attribute::Kind::Strings;
      r.strings.assign(a.strings().begin(), a.strings().end());
      break;
    case onnx::AttributeProto::TENSOR:
      r.kind = Attribute::Kind::Tensor;
      r.tensor = std::make_shared<HostTensor>(tensor_from_proto(a.t(), dir, what + " attribute " + a.name()));
      break;
    default:
      throw Error(what + ": attribute '" + a.name() + "' of kind " +
                  onnx::AttributeProto_AttributeType_Name(a.type()) + " (subgraphs) is not supported");
  }
  return r;
}

std::string printable(const std::string& name) {
  if (std::none_of(name.begin(), name.end(), control_character)) return name;
  std::string out;
  for (char c : name) {
    if (!control_character(c)) {
      out += c;
    } else {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", static_cast<unsigned char>(c));
      out += hex;
    }
  }
  return out;
}

int find_tensor(const Graph& graph, const std::string& name) {
  const bool plain = std::none_of(name.begin(), name.end(), control_character);
  return graph.find(plain ? name : printable(name));
}

std::string node_label(const onnx::NodeProto& n, int index) {
  return n.name().empty() ? n.op_type() + "_" + std::to_string(index) : n.name();
}

bool static_shape(const onnx::ValueInfoProto& v, Shape& out, int& elem_type) {
  if (!v.type().has_tensor_type()) return false;
  const auto& tt = v.type().tensor_type();
  elem_type = tt.elem_type();
  if (!tt.has_shape()) return false;
  out.clear();
  for (const auto& d : tt.shape().dim()) {
    if (!d.has_dim_value() || d.dim_value() < 0) return false;
    out.push_back(d.dim_value());
  }
  return true;
}

InputSignature signature_of(const onnx::ValueInfoProto& v) {
  InputSignature sig;
  sig.name = printable(v.name());
  const auto& tt = v.type().tensor_type();
  sig.dtype = from_onnx_type(tt.elem_type(), "input '" + sig.name + "'");
  sig.has_shape = tt.has_shape();
  for (const auto& d : tt.shape().dim()) {
    sig.dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
    sig.symbols.push_back(d.has_dim_value() ? "" : printable(d.dim_param()));
  }
  return sig;
}


}  // namespace texplan::importing
