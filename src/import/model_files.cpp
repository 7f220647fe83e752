// The model files around an import: finding the .onnx in a folder, its inputs'
// signatures, shapes given on the command line, and tensor .pb files.
#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <vector>

#include "graph/safe_file.h"
#include "import/onnx_import.h"
#include "import/proto_convert.h"

namespace texplan {

namespace fs = std::filesystem;
using namespace importing;  // the proto conversions

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

