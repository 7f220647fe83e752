// The importer of one ONNX model (private to src/import): parsing and the checks
// before inference (onnx_import.cpp), constant folding (constant_folding.cpp) and
// the graph built from the model (graph_construction.cpp).
#pragma once

#include <onnx/onnx_pb.h>

#include <exception>
#include <filesystem>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "import/onnx_import.h"
#include "import/proto_convert.h"

namespace texplan::importing {

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

  // onnx_import.cpp: the stages, parsing and the checks before inference
  Graph stages();
  static google::protobuf::ArenaOptions arena_options();
  void parse();
  void check_opset();
  void check_operators();
  void check_names();
  void check_input_dims();
  void fix_input_dims();
  static std::string example_shape(const InputSignature& sig);
  void bypass_identities_of_initializers();
  void external_constants_to_initializers();
  void index_initializers();
  void check_value_types();
  void infer_shapes();

  // constant_folding.cpp
  const std::pair<Shape, int>* inferred_shape(const std::string& name);
  bool fold_constants();
  bool try_fold(const onnx::NodeProto& n, int index, std::vector<HostTensor>& outs);
  static int64_t count_or_max(const Shape& s);
  bool is_graph_output(const std::string& name);

  // graph_construction.cpp
  Node to_node(const onnx::NodeProto& n, int index, const Graph* graph, int first_output = -1);
  Skeleton build_skeleton();
  Graph graph_from_model(Skeleton sk);
  void complete_graph(Graph& graph);
  void adopt_opset13_softmax(Graph& graph) const;

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

}  // namespace texplan::importing
