// ONNX import: the importer's stages, parsing, and the checks before shape
// inference (importer.h names the files that hold folding and graph construction).
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
#include <mutex>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <system_error>
#include <unordered_map>
#include <unordered_set>

#include "graph/safe_file.h"
#include "import/guarded_schemas.h"
#include "import/importer.h"
#include "import/newer_schemas.h"
#include "import/rewrites.h"
#include "reference/reference_ops.h"
#include "validate/validate.h"

namespace fs = std::filesystem;

namespace texplan::importing {

namespace {

constexpr int64_t kMinOpset = 7;
constexpr int64_t kMaxOpset = kMaxSupportedOpset;  // libonnx 1.12 knows 17; import/newer_schemas.h the rest

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

}  // namespace

Graph Importer::stages() {
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

google::protobuf::ArenaOptions Importer::arena_options() {
  google::protobuf::ArenaOptions o;
  o.max_block_size = 1 << 20;
  return o;
}

void Importer::parse() {
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

void Importer::check_opset() {
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
void Importer::check_operators() {
  const auto& g = model_.graph();
  const onnx::NodeProto* last = nullptr;  // the previous node of the same operator shares its schema
  const onnx::OpSchema* schema = nullptr;
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    for (const auto& a : n.attribute())
      has_subgraphs_ |= a.type() == onnx::AttributeProto::GRAPH || a.type() == onnx::AttributeProto::GRAPHS;
    const std::string domain = n.domain() == "ai.onnx" ? "" : n.domain();
    if (!last || last->op_type() != n.op_type() || last->domain() != n.domain())
      schema = domain.empty() ? guarded_schemas().GetSchema(n.op_type(), int(opset_), domain) : nullptr;
    last = &n;
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
void Importer::check_names() {
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
void Importer::check_input_dims() {
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
void Importer::fix_input_dims() {
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

std::string Importer::example_shape(const InputSignature& sig) {
  std::string s;
  for (size_t k = 0; k < sig.dims.size(); ++k) {
    if (k) s += 'x';
    s += sig.dims[k] >= 0 ? std::to_string(sig.dims[k]) : std::string("N");
  }
  return s;
}

// PyTorch exports shared weights as Identity(initializer): consumers read
// the initializer directly (no node, no copy, weights stay weights).
void Importer::bypass_identities_of_initializers() {
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
void Importer::external_constants_to_initializers() {
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

void Importer::index_initializers() {
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
void Importer::check_value_types() {
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
void Importer::infer_shapes() {
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
    // ONNX names the node "(op_type:OP, node name: NAME): [ShapeInferenceError] why";
    // said as every other node error is.
    static const std::regex node_error(R"(\(op_type:([^,]*), node name: ([^)]*)\): (?:\[ShapeInferenceError\] )?(.*))");
    std::smatch at;
    const std::string line = one_line(m);
    if (std::regex_search(line, at, node_error))
      throw Error(name_ + ": node '" + at[2].str() + "' (" + at[1].str() + "): " +
                  at[3].str().substr(0, at[3].str().find_last_not_of(' ') + 1) + " (ONNX shape inference)");
    throw Error(name_ + ": ONNX shape inference failed: " + line);
  }
  shapes_.clear();
  shapes_indexed_ = false;
}

}  // namespace texplan::importing

namespace texplan {

Graph import_onnx(const std::string& path, const ImportOptions& opt) {
  return importing::Importer(path, opt).run();
}

Graph import_onnx_bytes(std::string_view bytes, const std::string& name, const std::string& dir,
                        const ImportOptions& opt) {
  return importing::Importer(bytes, name, dir, opt).run();
}

}  // namespace texplan
