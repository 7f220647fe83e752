// ONNX import: protobuf parsing, external data, shape inference and folding.
//
// Shapes come from ONNX's own shape inference (with data propagation). What
// it cannot resolve (a Reshape whose target is computed by Shape -> Gather ->
// Concat, as PyTorch exports it) is folded: every node whose inputs are all
// known constants is evaluated with the reference operators, its outputs
// become initializers, and inference runs again, until nothing changes.
#include "import/onnx_import.h"

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <mutex>
#include <sstream>
#include <system_error>
#include <unordered_map>
#include <unordered_set>

#include "graph/safe_file.h"
#include "import/newer_schemas.h"
#include "import/rewrites.h"
#include "reference/reference_ops.h"
#include "validate/validate.h"

namespace fs = std::filesystem;

namespace texplan {
namespace {

constexpr int64_t kMinOpset = 7;
constexpr int64_t kMaxOpset = kMaxSupportedOpset;  // libonnx 1.12 knows 17; import/newer_schemas.h the rest
constexpr int64_t kFoldLimitElements = 1 << 24;  // never materialise huge constants
// Operators whose cost grows faster than their inputs and outputs (windows,
// matrix products): folded only when every operand is this small, so a
// hostile model cannot make import compute for hours.
constexpr int64_t kFoldHeavyLimitElements = 4096;
bool is_heavy_op(const std::string& op) {
  return op == "Conv" || op == "ConvTranspose" || op == "MatMul" || op == "Gemm" || op == "MaxPool" ||
         op == "AveragePool" || op == "LRN" || op == "LpPool" || op == "Einsum";
}

bool control_character(char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }

// One line of printable text, whatever a library or a model's names put in
// a message (names may hold newlines or terminal escape sequences).
std::string one_line(std::string s, size_t max = 400) {
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

// Preconditions ONNX 1.12's inference functions assume but do not check;
// each was found by fuzzing (fuzz/regressions/shapes). Breaking one raises
// an InferenceError, which ONNX reports naming the node.
bool is_window_op(const std::string& op) {
  return op == "Conv" || op == "ConvTranspose" || op == "MaxPool" || op == "AveragePool" || op == "LpPool" ||
         op == "ConvInteger" || op == "QLinearConv" || op == "MaxUnpool";
}

int rank_of(const onnx::TypeProto* t) {
  return t && t->has_tensor_type() && t->tensor_type().has_shape() ? t->tensor_type().shape().dim_size() : -1;
}

void check_for_inference(const std::string& op, onnx::InferenceContext& c) {
  auto ints = [&](const char* name) -> const onnx::AttributeProto* { return c.getAttribute(name); };
  if (op == "GatherND") {
    if (const auto* a = c.getAttribute("batch_dims"); a && a->i() < 0)
      fail_shape_inference("batch_dims ", a->i(), " must be >= 0");
  }
  if (op == "DepthToSpace" || op == "SpaceToDepth") {  // ONNX squares it: overflow, then a division by 0
    if (const auto* a = c.getAttribute("blocksize"); a && (a->i() < 1 || a->i() > 65536))
      fail_shape_inference("blocksize ", a->i(), " is not in [1, 65536]");
  }
  // Inputs whose length becomes a rank (a shape, axes, pads, scales): ONNX
  // makes one dimension per element, so a length of 2^49 exhausts memory.
  static const std::map<std::string, std::vector<size_t>> rank_inputs = {
      {"Expand", {1}}, {"Reshape", {1}}, {"ConstantOfShape", {0}}, {"Tile", {1}}, {"Upsample", {1}},
      {"Resize", {1, 2, 3}}, {"Slice", {1, 2, 3, 4}}, {"Pad", {1}}, {"Squeeze", {1}}, {"Unsqueeze", {1}},
      {"ReduceSum", {1}}, {"ReduceMean", {1}}, {"ReduceMax", {1}}, {"ReduceMin", {1}}, {"ReduceProd", {1}}};
  if (auto it = rank_inputs.find(op); it != rank_inputs.end())
    for (size_t i : it->second) {
      const onnx::TypeProto* t = i < c.getNumInputs() ? c.getInputType(i) : nullptr;
      if (rank_of(t) < 1) continue;
      const auto& d = t->tensor_type().shape().dim(0);
      if (d.has_dim_value() && d.dim_value() > 1024)
        fail_shape_inference("input ", i, " holds ", d.dim_value(), " values where a rank's worth is expected");
    }
  if (!is_window_op(op)) return;
  // Ranks: X is N x C x D1..Dn (n >= 1); a weight has X's rank.
  const int r = rank_of(c.getInputType(0));
  if (r >= 0 && r < 3) fail_shape_inference("input of rank ", r, ": needs N x C x at least one spatial dim");
  const bool weighted = op == "Conv" || op == "ConvTranspose" || op == "ConvInteger";
  const int w = weighted && c.getNumInputs() > 1 ? rank_of(c.getInputType(1)) : -1;
  if (r >= 0 && w >= 0 && w != r) fail_shape_inference("weight of rank ", w, " for an input of rank ", r);
  const int spatial = r >= 0 ? r - 2 : w >= 2 ? w - 2 : -1;
  auto check_list = [&](const char* name, int per_dim, int64_t min) {
    const auto* a = ints(name);
    if (!a) return;
    if (spatial >= 0 && a->ints_size() != per_dim * spatial &&
        !(std::string(name) == "output_shape" && a->ints_size() == spatial + 2))
      fail_shape_inference(name, " has ", a->ints_size(), " values for ", spatial, " spatial dims");
    for (int64_t v : a->ints())
      if (v < min) fail_shape_inference(name, " value ", v, " is below ", min);
  };
  check_list("kernel_shape", 1, 1);
  check_list("strides", 1, 1);
  check_list("dilations", 1, 1);
  check_list("pads", 2, 0);
  check_list("output_padding", 1, 0);
  check_list("output_shape", 1, 0);
  if (const auto* g = c.getAttribute("group"); g && g->i() < 1) fail_shape_inference("group ", g->i(), " must be >= 1");
  if (const auto* p = c.getAttribute("auto_pad")) {
    const std::string& v = p->s();
    if (v != "NOTSET" && v != "SAME_UPPER" && v != "SAME_LOWER" && v != "VALID")
      fail_shape_inference("auto_pad '", v, "' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID");
  }
}

// Data propagation of Add/Sub/Mul reads dim 0 of an empty shape value when
// the other operand has one element: skip propagating such values.
bool propagation_safe(const std::string& op, onnx::DataPropagationContext& c) {
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") {
    for (size_t i = 0; i < c.getNumInputs() && i < 2; ++i)
      if (const onnx::TensorShapeProto* d = c.getInputData(i); d && d->dim_size() == 0) return false;
  }
  return true;
}

// ONNX 1.12's shape inference gives a node's inference function a null type
// for an input whose type is unknown (its producer's inference gave up), and
// some functions dereference it (Shape-15 with start/end, found by fuzzing).
// Inference goes through this registry, which wraps every schema's functions
// so that a node with an unknown required input, or a non-tensor one, is
// skipped (its outputs stay unknown, and the importer refuses them by name),
// and checks the preconditions above.
class GuardedSchemas final : public onnx::ISchemaRegistry {
 public:
  const onnx::OpSchema* GetSchema(const std::string& key, const int version,
                                  const std::string& domain) const override {
    const onnx::OpSchema* s = domain.empty() ? newer_schema(key, version) : nullptr;
    if (!s) s = onnx::OpSchemaRegistry::Instance()->GetSchema(key, version, domain);
    if (!s) return nullptr;
    std::lock_guard<std::mutex> lock(mutex_);
    auto [it, fresh] = guarded_.try_emplace(s);
    if (fresh) it->second = guard(*s);
    return it->second.get();
  }

 private:
  template <class Context>
  static bool inputs_known(const std::vector<onnx::OpSchema::FormalParameter>& formal, Context& ctx) {
    for (size_t i = 0; i < ctx.getNumInputs(); ++i) {
      const onnx::TypeProto* t = ctx.getInputType(i);
      const bool optional = !formal.empty() && formal[std::min(i, formal.size() - 1)].GetOption() ==
                                                   onnx::OpSchema::FormalParameterOption::Optional;
      if (t ? !t->has_tensor_type() : !optional) return false;
    }
    return true;
  }
  static std::unique_ptr<onnx::OpSchema> guard(const onnx::OpSchema& s) {
    auto g = std::make_unique<onnx::OpSchema>(s);
    const auto formal = s.inputs();
    const std::string op = s.Name();
    if (s.has_type_and_shape_inference_function())
      g->TypeAndShapeInferenceFunction(
          [f = s.GetTypeAndShapeInferenceFunction(), formal, op](onnx::InferenceContext& c) {
            if (!inputs_known(formal, c)) return;
            check_for_inference(op, c);
            f(c);
            if (op == "Einsum") infer_einsum_dims(c);  // libonnx 1.12 gives only its rank
          });
    if (s.has_data_propagation_function())
      g->PartialDataPropagationFunction(
          [f = s.GetDataPropagationFunction(), formal, op](onnx::DataPropagationContext& c) {
            if (inputs_known(formal, c) && propagation_safe(op, c)) f(c);
          });
    return g;
  }
  mutable std::mutex mutex_;
  mutable std::unordered_map<const onnx::OpSchema*, std::unique_ptr<onnx::OpSchema>> guarded_;
};

const GuardedSchemas& guarded_schemas() {
  static const GuardedSchemas g;  // copies of schemas: nothing in them refers back to ONNX's registry
  return g;
}

std::string read_file(const std::string& path, const std::string& what) {
  return read_regular_file(path, what, kMaxProtobufBytes);  // no FIFO, device, or file protobuf cannot parse
}

// External data must stay inside the model's folder: a model file may not
// make texplan read /etc/passwd or ../../secret.
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

struct ExternalRef {
  std::string location;
  int64_t offset = 0, length = -1;
};

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

// The file an external tensor reads: confined to the model's folder (after
// following symlinks) and a regular file (not a FIFO or device that could
// block or never end). Empty path when the file does not exist.
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

// Element count of a declared shape; Error naming `what` if it is negative
// or overflows.
int64_t checked_count(const Shape& s, const std::string& what) {
  try {
    return element_count(s);
  } catch (const Error& e) {
    throw Error(what + ": " + e.what());
  }
}

// Reads a TensorProto's values. External data is read from `dir`. Every
// size is checked against the bytes actually present before anything is
// allocated: a header cannot make texplan allocate what its data lacks.
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

// A model's name for a tensor or node as the Graph keeps it: control
// characters (newlines, terminal escapes) written as \xNN, so no message or
// table that shows the name can be split or hijacked by it.
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

// A tensor's id by the name the file gives it (the graph holds printable names).
int find_tensor(const Graph& graph, const std::string& name) {
  const bool plain = std::none_of(name.begin(), name.end(), control_character);
  return graph.find(plain ? name : printable(name));
}

std::string node_label(const onnx::NodeProto& n, int index) {
  return n.name().empty() ? n.op_type() + "_" + std::to_string(index) : n.name();
}

// True (and the shape) when a value's shape is fully known.
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

// Drops the nodes `keep(node, index)` refuses, keeping the order, by moving
// pointers: a graph may have a million nodes, and its messages live on the
// importer's arena, where a copy into another container would be deep.
template <class Keep>
void keep_nodes_if(google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes, Keep keep) {
  const int n = nodes.size();
  int kept = 0;
  for (int i = 0; i < n; ++i) {
    if (!keep(*nodes.Mutable(i), i)) continue;
    if (kept != i) nodes.SwapElements(kept, i);
    ++kept;
  }
  if (kept < n) nodes.DeleteSubrange(kept, n - kept);
}

// Runs `work` on a second thread (or at get(), where no thread can be
// started), so an import step that only reads what another step leaves alone
// overlaps it: a million-node graph keeps two cores busy (docs/reliability.md).
// The destructor waits: nothing outlives the step that started it.
template <class T>
class Beside {
 public:
  explicit Beside(std::function<T()> work) : work_(std::move(work)) {
    try {
      future_ = std::async(std::launch::async, work_);
    } catch (const std::system_error&) {
      // no thread to be had: the work runs at get()
    }
  }
  T get() { return future_.valid() ? future_.get() : work_(); }

 private:
  std::function<T()> work_;
  std::future<T> future_;
};

class Importer {
 public:
  Importer(const std::string& path, const ImportOptions& opt) : opt_(opt) {
    file_ = resolve_model_file(path);
    dir_ = fs::path(file_).parent_path();
    if (dir_.empty()) dir_ = ".";
    name_ = one_line(fs::path(file_).stem().string(), 200);
  }
  Importer(std::string_view bytes, const std::string& name, const std::string& dir, const ImportOptions& opt)
      : opt_(opt), file_("<memory>"), name_(one_line(name, 200)), dir_(dir), bytes_(bytes), from_memory_(true) {}

  // Every Error names the model, whatever stage raised it.
  Graph run() {
    try {
      return stages();
    } catch (const Error& e) {
      std::string m = e.what();
      if (!m.starts_with(name_ + ":")) m = name_ + ": " + m;
      throw Error(one_line(m, 2000));
    }
  }

 private:
  Graph stages() {
    parse();
    check_opset();
    check_operators();
    check_input_dims();
    // Names are checked beside the first inference where the skeleton is
    // built there (inference keeps to its own maps when a name repeats; the
    // names error then wins), else here.
    if (has_subgraphs_) check_names();
    check_value_types();  // a sequence input is refused as such, before its dims are asked for
    fix_input_dims();
    bypass_identities_of_initializers();
    external_constants_to_initializers();
    index_initializers();
    // ONNX's inference writes only value_info and the outputs' types (and
    // subgraphs, where there are any): the graph's skeleton is built from the
    // rest beside it, and kept if folding then changes nothing.
    std::optional<Skeleton> skeleton;
    for (int round = 0; round < 64; ++round) {
      std::optional<Beside<Skeleton>> side;
      if (!has_subgraphs_)
        side.emplace([this, names = round == 0] {
          Skeleton sk;
          try {
            if (names) check_names();
          } catch (...) {
            sk.names_error = std::current_exception();
            return sk;
          }
          return build_skeleton();
        });
      std::exception_ptr inference_error;
      try {
        infer_shapes();
      } catch (...) {
        inference_error = std::current_exception();
      }
      if (side) {
        skeleton = side->get();
        if (skeleton->names_error) std::rethrow_exception(skeleton->names_error);
      }
      if (inference_error) std::rethrow_exception(inference_error);
      check_value_types();
      if (!fold_constants()) break;
      skeleton.reset();
    }
    if (!skeleton) skeleton = build_skeleton();
    Graph graph = graph_from_model(std::move(*skeleton));
    Beside<void> release([this] { arena_.Reset(); });  // the model is read no more: freed beside the checks
    complete_graph(graph);
    validate_graph(graph);  // src/validate: every node checked before optimize or a kernel sees it
    release.get();
    return graph;
  }

  std::string what() const { return name_; }

  static google::protobuf::ArenaOptions arena_options() {
    google::protobuf::ArenaOptions o;
    o.max_block_size = 1 << 20;
    return o;
  }

  void parse() {
    std::string file_bytes;
    if (!from_memory_) {
      std::error_code ec;
      if (!fs::is_regular_file(file_, ec)) throw Error(file_ + ": no such model file");
      file_bytes = read_file(file_, name_);
      bytes_ = file_bytes;
    }
    if (bytes_.empty()) throw Error(name_ + ": '" + file_ + "' is empty");
    // Protobuf refuses messages nested deeper than 100 levels, so parsing
    // cannot exhaust the stack.
    if (bytes_.size() > size_t(std::numeric_limits<int>::max()) ||
        !model_.ParseFromArray(bytes_.data(), int(bytes_.size())))
      throw Error(name_ + ": '" + file_ + "' is not an ONNX model (protobuf parse failed: truncated or another format)");
    bytes_ = {};
    if (model_.ir_version() <= 0 || !model_.has_graph() || model_.opset_import_size() == 0)
      throw Error(name_ + ": '" + file_ + "' is not an ONNX model (no IR version, graph or opset)");
    if (!model_.graph().name().empty() && name_.empty()) name_ = one_line(model_.graph().name(), 200);
    const auto& g = model_.graph();
    if (opt_.max_nodes > 0 && g.node_size() > opt_.max_nodes)
      throw Error(name_ + ": the graph has " + std::to_string(g.node_size()) + " nodes, more than the " +
                  std::to_string(opt_.max_nodes) + " texplan accepts (ImportOptions::max_nodes)");
  }

  void check_opset() {
    bool has_default = false;
    for (const auto& o : model_.opset_import()) {
      if (o.domain().empty() || o.domain() == "ai.onnx") opset_ = o.version(), has_default = true;
    }
    if (!has_default) throw Error(name_ + ": imports no opset of the default ONNX domain (ai.onnx): other domains are not supported");
    if (opset_ < kMinOpset || opset_ > kMaxOpset)
      throw Error(name_ + ": opset " + std::to_string(opset_) + " is not supported (supported: " +
                  std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset) + ")");
    expand_newer_operators(model_, opset_, name_);
  }

  // Every node's operator is known at the opset, and its inputs, outputs and
  // attributes are as the schema says: ONNX's shape inference trusts them.
  void check_operators() {
    const auto& g = model_.graph();
    for (int i = 0; i < g.node_size(); ++i) {
      const auto& n = g.node(i);
      for (const auto& a : n.attribute())
        has_subgraphs_ |= a.type() == onnx::AttributeProto::GRAPH || a.type() == onnx::AttributeProto::GRAPHS;
      std::string domain = n.domain() == "ai.onnx" ? "" : n.domain();
      const onnx::OpSchema* schema =
          domain.empty() ? guarded_schemas().GetSchema(n.op_type(), int(opset_), domain) : nullptr;
      if (!schema)
        throw Error(name_ + ": node '" + one_line(node_label(n, i), 200) + "': unknown operator '" +
                    one_line((domain.empty() ? "" : domain + ".") + n.op_type(), 200) + "' at opset " +
                    std::to_string(opset_));
      try {
        schema->Verify(n);
      } catch (const std::exception& e) {
        throw Error(name_ + ": node '" + one_line(node_label(n, i), 200) + "' (" + n.op_type() +
                    "): " + one_line(e.what()));
      }
    }
  }

  // Every tensor name is defined once: by an initializer, a graph input or
  // one node output. (An initializer may also be listed as a graph input:
  // before IR 4 that was how weights were declared; it stays a constant.)
  void check_names() {
    const auto& g = model_.graph();
    // Definer of each name: -2 an initializer, -1 a graph input, else the node's index.
    constexpr int kInitializer = -2, kGraphInput = -1;
    auto definer = [&](int who) -> std::string {
      if (who == kInitializer) return "an initializer";
      if (who == kGraphInput) return "a graph input";
      return "node '" + one_line(node_label(g.node(who), who), 200) + "'";
    };
    std::unordered_map<std::string_view, int> defined;
    defined.reserve(size_t(g.initializer_size() + g.input_size() + g.node_size()));
    auto define = [&](const std::string& n, int who) {
      if (n.empty()) throw Error(name_ + ": " + definer(who) + " has no name");
      auto [it, fresh] = defined.emplace(n, who);
      if (!fresh)
        throw Error(name_ + ": tensor '" + one_line(n, 200) + "' is defined twice, by " + definer(it->second) +
                    " and by " + definer(who));
    };
    for (const auto& t : g.initializer()) define(t.name(), kInitializer);
    for (const auto& v : g.input()) {
      auto it = defined.find(v.name());
      if (it == defined.end() || it->second != kInitializer) define(v.name(), kGraphInput);
    }
    for (int i = 0; i < g.node_size(); ++i)
      for (const auto& out : g.node(i).output())
        if (!out.empty()) define(out, i);
  }

  // Graph inputs declare no negative dimension.
  void check_input_dims() {
    const auto& g = model_.graph();
    for (const auto& v : g.input())
      if (v.type().has_tensor_type())
        for (const auto& d : v.type().tensor_type().shape().dim())
          if (d.has_dim_value() && d.dim_value() < 0)
            throw Error(name_ + ": graph input '" + v.name() + "': negative dimension " + std::to_string(d.dim_value()));
  }

  // Symbolic input dimensions get the values the user gave (ImportOptions
  // dims, input_shapes); every one left open is named in one error, with
  // the two flags that fix it.
  void fix_input_dims() {
    auto* g = model_.mutable_graph();
    std::unordered_set<std::string> inits;
    for (const auto& t : g->initializer()) inits.insert(t.name());
    std::set<std::string> dims_used, inputs_seen;
    std::vector<std::string> open;
    for (auto& v : *g->mutable_input()) {
      if (inits.count(v.name()) || !v.type().has_tensor_type()) continue;
      inputs_seen.insert(v.name());
      auto* tt = v.mutable_type()->mutable_tensor_type();
      const std::string what = "input '" + one_line(v.name(), 200) + "'";
      auto given = opt_.input_shapes.find(v.name());
      if (given != opt_.input_shapes.end()) {
        const Shape& want = given->second;
        if (tt->has_shape() && tt->shape().dim_size() != int(want.size()))
          throw Error(name_ + ": " + what + " has rank " + std::to_string(tt->shape().dim_size()) + ", the shape given (" +
                      texplan::to_string(want) + ") rank " + std::to_string(want.size()));
        for (size_t k = 0; k < want.size(); ++k) {
          if (want[k] < 1)
            throw Error(name_ + ": " + what + ": dimension " + std::to_string(k) + " given as " +
                        std::to_string(want[k]) + " (must be at least 1)");
          if (tt->has_shape() && tt->shape().dim(int(k)).has_dim_value() &&
              tt->shape().dim(int(k)).dim_value() != want[k])
            throw Error(name_ + ": " + what + " has dimension " + std::to_string(k) + " of " +
                        std::to_string(tt->shape().dim(int(k)).dim_value()) + "; the shape given is " +
                        texplan::to_string(want));
        }
        auto* shape = tt->mutable_shape();
        shape->clear_dim();
        for (int64_t d : want) shape->add_dim()->set_dim_value(d);
        continue;
      }
      if (!tt->has_shape()) {
        open.push_back(what + " declares no shape: give it with --input-shape " + v.name() + "=DxDx...");
        continue;
      }
      std::string missing;
      for (auto& d : *tt->mutable_shape()->mutable_dim()) {
        if (d.has_dim_value()) continue;
        auto it = d.has_dim_param() ? opt_.dims.find(d.dim_param()) : opt_.dims.end();
        if (it != opt_.dims.end()) {
          dims_used.insert(it->first);
          d.set_dim_value(it->second);  // replaces the dim_param (one of)
          continue;
        }
        if (!missing.empty()) missing += ", ";
        missing += d.dim_param().empty() ? std::string("an unnamed one") : "'" + one_line(d.dim_param(), 100) + "'";
      }
      if (!missing.empty()) {
        InputSignature sig = signature_of(v);
        std::string fix;
        for (size_t k = 0; k < sig.dims.size(); ++k)
          if (sig.dims[k] < 0 && !sig.symbols[k].empty() && fix.find("--dim " + sig.symbols[k] + "=") == std::string::npos)
            fix += "--dim " + sig.symbols[k] + "=N or ";
        open.push_back(what + " (" + sig.to_string() + ") has the symbolic dimension(s) " + missing + ": fix them with " +
                       fix + "--input-shape " + v.name() + "=" + example_shape(sig));
      }
    }
    for (const auto& [dim, value] : opt_.dims) {
      if (value < 1)
        throw Error(name_ + ": --dim " + dim + "=" + std::to_string(value) + ": a dimension must be at least 1");
      if (!dims_used.count(dim)) {
        std::set<std::string> names;
        for (const auto& v : g->input())
          if (v.type().has_tensor_type())
            for (const auto& d : v.type().tensor_type().shape().dim())
              if (d.has_dim_param()) names.insert(d.dim_param());
        std::string list;
        for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
        // Dims already fixed above by --input-shape are not listed as open.
        throw Error(name_ + ": --dim " + one_line(dim, 100) + ": no input of the model has a symbolic dimension of that name" +
                    (list.empty() ? std::string(" (it has none)") : " (it has: " + list + ")"));
      }
    }
    for (const auto& [input, shape] : opt_.input_shapes)
      if (!inputs_seen.count(input)) {
        std::string list;
        for (const auto& n : inputs_seen) list += (list.empty() ? "" : ", ") + n;
        throw Error(name_ + ": --input-shape " + one_line(input, 100) + ": the model has no input of that name (inputs: " +
                    list + ")");
      }
    if (!open.empty()) {
      std::string m = name_ + ": ";
      for (size_t i = 0; i < open.size(); ++i) m += (i ? "; " : "") + open[i];
      throw Error(m);
    }
  }

  static std::string example_shape(const InputSignature& sig) {
    std::string s;
    for (size_t k = 0; k < sig.dims.size(); ++k)
      s += (k ? "x" : "") + (sig.dims[k] >= 0 ? std::to_string(sig.dims[k]) : std::string("N"));
    return s;
  }

  // PyTorch exports shared weights as Identity(initializer): consumers read
  // the initializer directly (no node, no copy, weights stay weights).
  void bypass_identities_of_initializers() {
    auto* g = model_.mutable_graph();
    if (g->initializer_size() == 0) return;
    std::unordered_set<std::string> inits, outputs;
    for (const auto& t : g->initializer()) inits.insert(t.name());
    for (const auto& o : g->output()) outputs.insert(o.name());
    std::unordered_map<std::string, std::string> rename;
    keep_nodes_if(*g->mutable_node(), [&](const onnx::NodeProto& n, int) {
      if (n.op_type() == "Identity" && n.input_size() == 1 && inits.count(n.input(0)) &&
          !outputs.count(n.output(0))) {
        rename[n.output(0)] = n.input(0);
        return false;
      }
      return true;
    });
    if (!rename.empty())
      for (auto& n : *g->mutable_node())
        for (auto& in : *n.mutable_input()) {
          auto it = rename.find(in);
          if (it != rename.end()) in = it->second;
        }
  }

  // A Constant whose value lives in external data is an initializer by
  // another name: made one, its bytes are read only when weights are (plan
  // reads none of a 3 GiB Constant).
  void external_constants_to_initializers() {
    auto* g = model_.mutable_graph();
    keep_nodes_if(*g->mutable_node(), [&](onnx::NodeProto& n, int) {
      const bool external_value = n.op_type() == "Constant" && (n.domain().empty() || n.domain() == "ai.onnx") &&
                                  n.output_size() == 1 && n.attribute_size() == 1 && n.attribute(0).name() == "value" &&
                                  n.attribute(0).type() == onnx::AttributeProto::TENSOR &&
                                  is_external(n.attribute(0).t()) && !is_graph_output(n.output(0));
      if (!external_value) return true;
      onnx::TensorProto* t = g->add_initializer();
      t->Swap(n.mutable_attribute(0)->mutable_t());
      t->set_name(n.output(0));
      return false;
    });
  }

  void index_initializers() {
    // Small initializers are always read when their bytes are at hand: shape
    // computations may need them even when only planning.
    for (auto& t : *model_.mutable_graph()->mutable_initializer()) {
      std::string w = name_ + ": initializer '" + t.name() + "'";
      from_onnx_type(t.data_type(), w);
      bool small = checked_count(dims_of(t), w) <= 4096;
      // Planning reads no big weights, but refuses a location that leaves the
      // model's folder just as running does.
      bool bytes_at_hand = !is_external(t) || !external_file(dir_, external_ref(t, w), w).empty();
      if (opt_.load_weights || (small && bytes_at_hand)) {
        HostTensor& h = constants_[t.name()] = tensor_from_proto(t, dir_, w);  // throws on a missing weights file
        // ONNX's inference reads shape operands (Reshape's shape, axes)
        // only from tensors held in the file: small external ones move in.
        if (small && is_external(t)) fill_proto(h, std::string(t.name()), &t);
      } else if (small && is_external(t)) {
        missing_small_.insert(t.name());
      }
    }
  }

  // Sequences, optionals and maps have no static tensor shape: refuse them by name.
  void check_value_types() {
    const auto& g = model_.graph();
    auto check = [&](const onnx::ValueInfoProto& v) {
      if (!v.has_type() || v.type().has_tensor_type() || v.type().value_case() == onnx::TypeProto::VALUE_NOT_SET)
        return;
      const auto& t = v.type();
      throw Error(name_ + ": value '" + one_line(v.name(), 200) + "' is a " +
                  (t.has_sequence_type() ? "sequence" : t.has_optional_type() ? "optional" : t.has_map_type() ? "map"
                   : t.has_sparse_tensor_type()                               ? "sparse tensor"
                                                                              : "non-tensor value") +
                  ", which is not supported (tensors only)");
    };
    for (const auto& v : g.input()) check(v);
    for (const auto& v : g.output()) check(v);
    for (const auto& v : g.value_info()) check(v);
  }

  // Errors are raised (error_mode 1), naming the node: a node whose shapes
  // ONNX finds inconsistent is refused here rather than left unknown.
  void infer_shapes() {
    onnx::ShapeInferenceOptions o(/*check_type=*/false, /*error_mode=*/1, /*data_prop=*/true);
    try {
      onnx::shape_inference::InferShapes(model_, &guarded_schemas(), o);
    } catch (const std::exception& e) {
      const std::string m = e.what();
      for (const auto& t : missing_small_)
        if (m.find("external tensors") != std::string::npos && m.find("tensor: " + t) != std::string::npos)
          throw Error(name_ + ": initializer '" + one_line(t, 200) +
                      "' is held in an external data file that is not beside the model, and shape inference needs "
                      "its values: keep the .onnx.data file beside the .onnx (or save small tensors inside it)");
      throw Error(name_ + ": ONNX shape inference failed: " + one_line(m));
    }
    shapes_.clear();
    shapes_indexed_ = false;
  }

  // The static shape and element type inference gave `name`, or null. The
  // index is built on the first question after inference: a graph with
  // nothing to fold never asks.
  const std::pair<Shape, int>* inferred_shape(const std::string& name) {
    if (!shapes_indexed_) {
      const auto& g = model_.graph();
      auto note = [&](const onnx::ValueInfoProto& v) {
        Shape s;
        int et = 0;
        if (static_shape(v, s, et)) shapes_[v.name()] = {s, et};
      };
      for (const auto& v : g.input()) note(v);
      for (const auto& v : g.value_info()) note(v);
      for (const auto& v : g.output()) note(v);
      for (const auto& t : g.initializer()) shapes_[t.name()] = {dims_of(t), t.data_type()};
      shapes_indexed_ = true;
    }
    auto it = shapes_.find(name);
    return it == shapes_.end() ? nullptr : &it->second;
  }

  // With `graph`, inputs and outputs become its tensor ids (all defined by
  // then); `first_output`, when known, is the id of the node's first
  // non-empty output, the others following it.
  Node to_node(const onnx::NodeProto& n, int index, const Graph* graph, int first_output = -1) {
    Node r;
    r.name = n.name().empty() ? node_label(n, index) : printable(n.name());
    r.op_type = n.op_type();
    if (n.attribute_size() > 0) {
      const std::string w = name_ + ": node '" + r.name + "' (" + n.op_type() + ")";
      for (const auto& a : n.attribute()) r.attrs[a.name()] = attribute_from_proto(a, dir_, w);
    }
    if (graph) {
      r.inputs.reserve(size_t(n.input_size()));
      r.outputs.reserve(size_t(n.output_size()));
      // Most operands are the previous node's output, the tensor just before
      // this node's first: one comparison instead of a hash lookup.
      const int previous = first_output - 1;
      for (const auto& in : n.input())
        r.inputs.push_back(in.empty()                                                   ? -1
                           : previous >= 0 && graph->tensors[size_t(previous)].name == in ? previous
                                                                                          : find_tensor(*graph, in));
      for (const auto& out : n.output())
        r.outputs.push_back(out.empty() ? -1 : first_output >= 0 ? first_output++ : find_tensor(*graph, out));
    }
    return r;
  }

  // One pass over the nodes; returns true if anything was folded.
  bool fold_constants() {
    auto* g = model_.mutable_graph();
    bool folded = false;
    keep_nodes_if(*g->mutable_node(), [&](const onnx::NodeProto& n, int i) {
      std::vector<HostTensor> outs;
      if (!try_fold(n, i, outs)) return true;
      for (int k = 0; k < n.output_size() && k < int(outs.size()); ++k) {
        if (n.output(k).empty()) continue;
        fill_proto(outs[k], n.output(k), g->add_initializer());
        constants_[n.output(k)] = std::move(outs[k]);
      }
      folded = true;
      return false;
    });
    if (folded) {
      // Folded values now live as initializers; drop stale value_info for them.
      std::unordered_set<std::string> inits;
      for (const auto& t : g->initializer()) inits.insert(t.name());
      google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> vi;
      for (const auto& v : g->value_info())
        if (!inits.count(v.name())) *vi.Add() = v;
      g->mutable_value_info()->Swap(&vi);
    }
    return folded;
  }

  bool try_fold(const onnx::NodeProto& n, int index, std::vector<HostTensor>& outs) {
    for (const auto& o : n.output())
      if (is_graph_output(o)) return false;  // outputs are computed at run time
    if (n.op_type() == "Shape") {
      const auto* known = inferred_shape(n.input(0));
      if (!known) return false;
      Node node = to_node(n, index, nullptr);
      int64_t rank = int64_t(known->first.size());
      int64_t start = node.get_int("start", 0), end = node.get_int("end", rank);
      if (start < 0) start += rank;
      if (end < 0) end += rank;
      start = std::clamp<int64_t>(start, 0, rank);
      end = std::clamp<int64_t>(end, start, rank);
      HostTensor s(DataType::Int64, {end - start});
      for (int64_t k = start; k < end; ++k) s.data<int64_t>()[k - start] = known->first[k];
      outs.push_back(std::move(s));
      return true;
    }
    if (n.op_type() == "Size") {
      const auto* known = inferred_shape(n.input(0));
      if (!known) return false;
      if (count_or_max(known->first) == std::numeric_limits<int64_t>::max()) return false;
      HostTensor s(DataType::Int64, {});
      s.data<int64_t>()[0] = element_count(known->first);
      outs.push_back(std::move(s));
      return true;
    }
    std::vector<const HostTensor*> ins;
    for (const auto& in : n.input()) {
      if (in.empty()) {
        ins.push_back(nullptr);
        continue;
      }
      auto it = constants_.find(in);
      if (it == constants_.end()) return false;
      ins.push_back(&it->second);
    }
    if (n.op_type() == "RandomNormal" || n.op_type() == "RandomUniform" || n.op_type().find("Random") == 0)
      return false;
    if (!reference::supports(n.op_type())) return false;
    // Einsum's direct loop runs over the product of its operands' sizes:
    // folded with two at most, each within the heavy limit below.
    if (n.op_type() == "Einsum" && n.input_size() > 2) return false;
    // Skip folding whose result would be huge (e.g. Expand to a big tensor).
    const bool heavy = is_heavy_op(n.op_type());
    for (const auto& o : n.output()) {
      const auto* known = inferred_shape(o);
      if (known && count_or_max(known->first) > kFoldLimitElements) return false;
      if (heavy && (!known || count_or_max(known->first) > kFoldHeavyLimitElements)) return false;
    }
    if (heavy) {
      for (const HostTensor* t : ins)
        if (t && t->count() > kFoldHeavyLimitElements) return false;
      for (const auto& a : n.attribute())  // window sizes
        if (a.name() == "kernel_shape" || a.name() == "size") {
          int64_t k = 1;
          for (int64_t d : a.ints()) {
            if (d <= 0 || d > kFoldHeavyLimitElements / k) return false;
            k *= d;
          }
          if (a.i() > kFoldHeavyLimitElements) return false;
        }
    }
    Node node = to_node(n, index, nullptr);
    // Outputs whose shapes inference could not give are bounded here: a
    // tensor beyond the fold limit is not folded (it stays a node).
    HostTensorLimit limit(kFoldLimitElements * 8);
    try {
      outs = reference::evaluate(node, ins);
    } catch (const Error& e) {
      if (limit.exceeded()) return false;
      throw Error(name_ + ": folding constants: node " + one_line(e.what()));
    }
    return true;
  }

  static int64_t count_or_max(const Shape& s) {
    try {
      return element_count(s);
    } catch (const Error&) {
      return std::numeric_limits<int64_t>::max();
    }
  }

  // A set, built on first use (the outputs are fixed by then): folding asks
  // for every node, and a model may have 40,000 outputs.
  bool is_graph_output(const std::string& name) {
    if (graph_output_names_.empty())
      for (const auto& o : model_.graph().output()) graph_output_names_.insert(o.name());
    return graph_output_names_.count(name) > 0;
  }

  // The graph before any shape is known: tensors by name (initializers,
  // inputs, then node outputs in node order) and nodes with their attributes
  // and operand ids. It reads only nodes, initializers and input names. An
  // error is kept, not thrown: it is raised where the serial import met it.
  struct Skeleton {
    Graph graph;
    int node_outputs_from = 0;
    std::exception_ptr error;
    std::exception_ptr names_error;  // check_names', raised before any other
  };
  Skeleton build_skeleton() {
    const auto& g = model_.graph();
    Skeleton sk;
    Graph& graph = sk.graph;
    try {
      graph.model_name = name_;
      graph.model_path = file_;
      graph.opset = opset_;
      // Tensor ids by name live in the graph's own index (one map, not two).
      graph.tensors.reserve(size_t(g.initializer_size() + g.input_size() + g.node_size()));
      graph.nodes.reserve(size_t(g.node_size()));
      auto add = [&](const std::string& n, bool constant) -> int {
        Tensor t;
        t.name = printable(n);
        t.is_constant = constant;
        return graph.add_tensor(std::move(t));  // names are unique (check_names)
      };
      std::unordered_set<std::string_view> init_names;
      init_names.reserve(size_t(g.initializer_size()));
      for (const auto& t : g.initializer()) {
        init_names.insert(t.name());
        add(t.name(), true);
      }
      for (const auto& v : g.input()) {
        if (init_names.count(v.name())) continue;  // old-style: initializer listed as input
        int id = add(v.name(), false);
        graph.tensors[id].is_input = true;
        graph.inputs.push_back(id);
      }
      // Every output is named before any node reads it: a cycle is reported as one.
      sk.node_outputs_from = int(graph.tensors.size());
      for (const auto& proto : g.node())
        for (const auto& out : proto.output())
          if (!out.empty()) add(out, false);
      int first_output = sk.node_outputs_from;
      for (int i = 0; i < g.node_size(); ++i) {
        const auto& proto = g.node(i);
        graph.nodes.push_back(to_node(proto, i, &graph, first_output));
        first_output += int(std::count_if(proto.output().begin(), proto.output().end(),
                                          [](const std::string& o) { return !o.empty(); }));
        const Node& node = graph.nodes.back();
        for (size_t k = 0; k < node.inputs.size(); ++k)
          if (node.inputs[k] < 0 && !proto.input(int(k)).empty())
            throw Error(name_ + ": node '" + node_label(proto, i) + "' reads '" + proto.input(int(k)) +
                        "', which nothing produces");
      }
    } catch (...) {
      sk.error = std::current_exception();
    }
    return sk;
  }

  // The skeleton with the constants' values, the shapes inference left and
  // the graph outputs: the last step that reads the model.
  Graph graph_from_model(Skeleton sk) {
    const auto& g = model_.graph();
    Graph graph = std::move(sk.graph);
    // Initializers are the first tensors, in file order.
    for (int i = 0; i < g.initializer_size() && !sk.error; ++i)
      if (auto c = constants_.find(g.initializer(i).name()); c != constants_.end()) {
        Tensor& t = graph.tensors[size_t(i)];
        t.value = std::move(c->second);
        t.dtype = t.value.dtype;
        t.shape = t.value.shape;
        t.has_data = true;
      }
    // Shapes as inference left them (initializers' own dims over a value_info's).
    // Inference lists values in node order: the next node output is tried
    // before the name index.
    std::vector<char> known(graph.tensors.size(), 0);
    int next = sk.node_outputs_from;
    auto locate = [&](const std::string& name) {
      if (next < int(graph.tensors.size()) && graph.tensors[size_t(next)].name == name) return next++;
      const int id = find_tensor(graph, name);
      if (id >= 0) next = id + 1;
      return id;
    };
    // Tensor `id` (named `name` in the file) gets `dims` and element type `type` (0: unknown).
    auto give_shape = [&](int id, Shape dims, int type, const std::string& name) {
      Tensor& t = graph.tensors[size_t(id)];
      t.shape = std::move(dims);
      if (type != 0) t.dtype = known_type(type) ? *known_type(type) : from_onnx_type(type, name_ + ": tensor '" + name + "'");
      known[size_t(id)] = 1;
    };
    auto note = [&](const onnx::ValueInfoProto& v) {
      const int id = locate(v.name());
      Shape dims;
      int type = 0;
      if (id < 0 || graph.tensors[id].has_data || !static_shape(v, dims, type)) return;
      give_shape(id, std::move(dims), type, v.name());
    };
    if (!sk.error) {
      for (const auto& v : g.input()) note(v);
      for (const auto& v : g.value_info()) note(v);
      for (const auto& v : g.output()) note(v);
      for (int i = 0; i < g.initializer_size(); ++i) {
        const auto& init = g.initializer(i);
        if (graph.tensors[size_t(i)].has_data) known[size_t(i)] = 1;
        else give_shape(i, dims_of(init), init.data_type(), init.name());
      }
    }
    // Checked after dead nodes are gone: an unused value may stay unknown.
    unknown_.clear();
    for (size_t t = 0; t < known.size(); ++t)
      if (!known[t] && !graph.tensors[t].has_data) unknown_.push_back(graph.tensors[t].name);
    if (sk.error) std::rethrow_exception(sk.error);
    for (const auto& v : g.output()) {
      const int id = find_tensor(graph, v.name());
      if (id < 0) throw Error(name_ + ": graph output '" + v.name() + "' is produced by no node");
      graph.tensors[id].is_output = true;
      graph.outputs.push_back(id);
    }
    return graph;
  }

  // Order, dead nodes, operators texplan runs, static shapes everywhere.
  void complete_graph(Graph& graph) {
    graph.topological_sort();
    graph.remove_dead_nodes();
    adopt_opset13_softmax(graph);
    // An operator texplan lacks is named as such, before any shape it left unknown.
    for (const auto& n : graph.nodes)
      if (!reference::supports(n.op_type))
        throw Error(name_ + ": node '" + n.name + "' (" + n.op_type + "): operator " + n.op_type +
                    " is not supported by texplan");
    // Every tensor needs a concrete shape and a known type.
    for (const std::string& name : unknown_) {
      const int id = graph.find(name);
      if (id < 0) continue;  // dead, and gone
      const Tensor& t = graph.tensors[id];
      std::string who = t.producer >= 0 ? " (output of node '" + graph.nodes[t.producer].name + "', " +
                                              graph.nodes[t.producer].op_type + ")"
                                        : "";
      throw Error(name_ + ": cannot make the shape of tensor '" + t.name + "'" + who +
                  " static: it depends on values only known at run time (data-dependent shapes are not supported)");
    }
    for (const auto& t : graph.tensors) try {
        element_count(t.shape);
      } catch (const Error& e) {
        throw Error(name_ + ": tensor '" + t.name + "': " + e.what());
      }
    for (auto& t : graph.tensors)
      if (t.is_constant && !t.has_data && opt_.load_weights)
        throw Error(name_ + ": weights of '" + t.name + "' are not loaded");
    rewrite_imported_graph(graph);
  }

  // Before opset 13, Softmax/LogSoftmax/Hardmax flatten the input to 2-D at
  // `axis` (default 1); the reference and kernels implement opset 13 (one
  // axis). The two agree when the axis is the last one; otherwise refuse.
  void adopt_opset13_softmax(Graph& graph) const {
    if (opset_ >= 13) return;
    for (auto& n : graph.nodes) {
      if (n.op_type != "Softmax" && n.op_type != "LogSoftmax" && n.op_type != "Hardmax") continue;
      int64_t rank = int64_t(graph.tensors[n.inputs[0]].shape.size());
      int64_t axis = n.get_int("axis", 1);
      if (axis < 0) axis += rank;
      if (axis != rank - 1)
        throw Error(name_ + ": node '" + n.name + "' (" + n.op_type + ", opset " + std::to_string(opset_) +
                    "): coercion to 2-D at axis " + std::to_string(axis) + " of a rank-" + std::to_string(rank) +
                    " input is not supported (only the last axis)");
      n.attrs["axis"] = Attribute::of_int(-1);
    }
  }

  ImportOptions opt_;
  std::string file_, name_;
  fs::path dir_;
  std::string_view bytes_;
  bool from_memory_ = false;
  // The model's messages on one arena: a million-node graph is parsed
  // without a million separate allocations, and freed at once.
  google::protobuf::Arena arena_{arena_options()};
  onnx::ModelProto& model_ = *google::protobuf::Arena::CreateMessage<onnx::ModelProto>(&arena_);
  int64_t opset_ = 0;
  std::unordered_map<std::string, HostTensor> constants_;
  std::unordered_set<std::string> graph_output_names_;  // is_graph_output
  std::unordered_map<std::string, std::pair<Shape, int>> shapes_;  // inferred_shape's index
  bool shapes_indexed_ = false;
  std::set<std::string> missing_small_;  // small initializers whose external file is absent
  bool has_subgraphs_ = false;           // a node holds a graph attribute, which inference writes into
  std::vector<std::string> unknown_;     // tensors inference left without a static shape
};

}  // namespace

std::string resolve_model_file(const std::string& path) {
  std::error_code ec;
  fs::path p(path);
  if (fs::is_directory(p, ec)) {
    fs::path named = p / (p.filename().string() + ".onnx");
    if (p.filename().empty()) named = p / (p.parent_path().filename().string() + ".onnx");
    if (fs::is_regular_file(named, ec)) return named.string();
    std::vector<fs::path> found;
    for (const auto& e : fs::directory_iterator(p, ec))
      if (e.path().extension() == ".onnx") found.push_back(e.path());
    if (found.size() == 1) return found[0].string();
    throw Error(path + ": folder holds " + std::to_string(found.size()) + " .onnx files; name one");
  }
  if (!fs::exists(p, ec)) throw Error(path + ": no such model file or folder");
  return p.string();
}

bool InputSignature::is_static() const {
  return has_shape && std::all_of(dims.begin(), dims.end(), [](int64_t d) { return d >= 0; });
}

std::string InputSignature::to_string() const {
  if (!has_shape) return "?";
  std::string s;
  for (size_t k = 0; k < dims.size(); ++k)
    s += (k ? "x" : "") + (dims[k] >= 0 ? std::to_string(dims[k]) : symbols[k].empty() ? std::string("?") : symbols[k]);
  return s.empty() ? "scalar" : s;
}

namespace {
onnx::ModelProto read_model_without_weights(const std::string& path) {
  const std::string file = resolve_model_file(path);
  const std::string name = one_line(fs::path(file).stem().string(), 200);
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) throw Error(file + ": no such model file");
  const std::string bytes = read_file(file, name);
  onnx::ModelProto m;
  if (bytes.size() > size_t(std::numeric_limits<int>::max()) || !m.ParseFromArray(bytes.data(), int(bytes.size())))
    throw Error(name + ": '" + file + "' is not an ONNX model (protobuf parse failed: truncated or another format)");
  return m;
}
}  // namespace

ModelSignatures read_signatures(const std::string& path) {
  const onnx::ModelProto m = read_model_without_weights(path);
  std::unordered_set<std::string> inits;
  for (const auto& t : m.graph().initializer()) inits.insert(t.name());
  ModelSignatures s;
  for (const auto& v : m.graph().input())
    if (!inits.count(v.name()) && v.type().has_tensor_type()) s.inputs.push_back(signature_of(v));
  for (const auto& v : m.graph().output())
    if (v.type().has_tensor_type()) s.outputs.push_back(signature_of(v));
  return s;
}

std::vector<InputSignature> read_input_signatures(const std::string& path) { return read_signatures(path).inputs; }

void fix_open_inputs(const std::vector<InputSignature>& signatures, const std::vector<HostTensor>& inputs,
                     ImportOptions& import) {
  for (size_t i = 0; i < inputs.size() && i < signatures.size(); ++i) {
    const InputSignature& sig = signatures[i];
    bool fixed = sig.has_shape || import.input_shapes.count(sig.name);
    for (size_t k = 0; k < sig.dims.size(); ++k)
      fixed = fixed && (sig.dims[k] >= 0 || import.dims.count(sig.symbols[k]));
    if (!fixed) import.input_shapes[sig.name] = inputs[i].shape;
  }
}

namespace {
int64_t parse_dim_value(const std::string& text, const std::string& flag) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 1)
    throw Error(flag + ": '" + one_line(text, 100) + "' is not a dimension (a whole number of at least 1)");
  return v;
}
}  // namespace

std::pair<std::string, int64_t> parse_dim_setting(const std::string& s) {
  const size_t eq = s.rfind('=');
  if (eq == std::string::npos || eq == 0)
    throw Error("--dim " + one_line(s, 100) + ": expected NAME=VALUE, e.g. --dim batch=1");
  return {s.substr(0, eq), parse_dim_value(s.substr(eq + 1), "--dim " + one_line(s, 100))};
}

std::pair<std::string, Shape> parse_input_shape_setting(const std::string& s) {
  const size_t eq = s.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
    throw Error("--input-shape " + one_line(s, 100) + ": expected NAME=DxDx..., e.g. --input-shape input=1x3x224x224");
  Shape shape;
  std::string rest = s.substr(eq + 1);
  for (size_t start = 0;;) {
    const size_t x = rest.find_first_of("x,", start);
    shape.push_back(parse_dim_value(rest.substr(start, x - start), "--input-shape " + one_line(s, 100)));
    if (x == std::string::npos) break;
    start = x + 1;
  }
  return {s.substr(0, eq), shape};
}

Graph import_onnx(const std::string& path, const ImportOptions& opt) {
  return Importer(path, opt).run();
}

Graph import_onnx_bytes(std::string_view bytes, const std::string& name, const std::string& dir,
                        const ImportOptions& opt) {
  return Importer(bytes, name, dir, opt).run();
}

HostTensor parse_tensor_pb(std::string_view bytes, const std::string& what, const std::string& dir) {
  onnx::TensorProto t;
  if (bytes.size() > size_t(std::numeric_limits<int>::max()) || !t.ParseFromArray(bytes.data(), int(bytes.size())))
    throw Error(what + ": not a serialized onnx.TensorProto");
  return tensor_from_proto(t, dir, what);
}

HostTensor load_tensor_pb(const std::string& path) {
  std::string dir = fs::path(path).parent_path().string();
  return parse_tensor_pb(read_regular_file(path, ""), path, dir.empty() ? "." : dir);
}

void save_tensor_pb(const HostTensor& h, const std::string& name, const std::string& path) {
  onnx::TensorProto t;
  fill_proto(h, name, &t);
  std::string bytes;
  if (!t.SerializeToString(&bytes)) throw Error(path + ": cannot serialize tensor '" + name + "'");
  write_file(path, bytes);
}

}  // namespace texplan
