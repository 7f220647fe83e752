// ONNX file -> Graph with a static shape on every tensor.
#pragma once
#include <map>
#include <string>
#include <string_view>

#include "graph/graph.h"

namespace texplan {

struct ImportOptions {
  // Load initializer bytes (needed to execute, not to plan). When false, a
  // missing .onnx.data file is fine: dims and type come from the .onnx.
  bool load_weights = false;
  // Graphs with more nodes are refused right after parsing (0: no limit),
  // so a hostile file cannot hold texplan for minutes and gigabytes
  // (docs/kernel-choices.md#imports-node-limit).
  int64_t max_nodes = 1000000;
  // Symbolic input dimensions fixed by name ("batch" -> 1), as `--dim
  // batch=1`; a name that no input uses is an error.
  std::map<std::string, int64_t> dims = {};
  // Whole input shapes by input name, as `--input-shape x=1x3x224x224` or
  // the shapes of the tensors a run is given; they must agree with the
  // input's static dims. Every symbolic dimension left unfixed is an error
  // that names it and these two ways to fix it.
  std::map<std::string, Shape> input_shapes = {};
  // RNN, GRU and LSTM with a small state as one RecurrentSteps node per
  // direction (one kernel a step, or all steps in one persistent launch);
  // false: unrolled into a product and elementwise nodes a step, the form
  // of larger states (tests compare the two).
  bool recurrent_steps_nodes = true;
};

// A graph input as the file declares it: dims[k] < 0 where dimension k is
// symbolic, named by symbols[k] ("" where the file gives it no name).
struct InputSignature {
  std::string name;
  DataType dtype = DataType::Float32;
  std::vector<int64_t> dims;
  std::vector<std::string> symbols;
  bool has_shape = true;  // false: the file declares no shape at all
  bool is_static() const;
  std::string to_string() const;  // "batchx3x224x224"
};
// The model's graph inputs (initializers excluded) and outputs as the file
// declares them (dims < 0 where symbolic or not given), read in one parse
// without weights, shape inference or folding.
struct ModelSignatures {
  std::vector<InputSignature> inputs, outputs;
};
ModelSignatures read_signatures(const std::string& path);
std::vector<InputSignature> read_input_signatures(const std::string& path);  // read_signatures(path).inputs

// Fixes, in `import`, the shapes of the inputs that `inputs` feed (in the
// model's input order) where the file leaves a dimension open and neither
// import.dims nor import.input_shapes fixes it: a run's input files decide.
void fix_open_inputs(const std::vector<InputSignature>& signatures, const std::vector<HostTensor>& inputs,
                     ImportOptions& import);

// "batch=1" -> {"batch", 1}; "x=1x3x224x224" -> {"x", {1,3,224,224}};
// throws Error naming the flag on anything else.
std::pair<std::string, int64_t> parse_dim_setting(const std::string& s);
std::pair<std::string, Shape> parse_input_shape_setting(const std::string& s);

// Accepts a .onnx file or a model folder holding NAME.onnx. Runs ONNX shape
// inference and folds shape-computing subgraphs until every tensor has a
// static shape; throws Error naming the model and tensor/node otherwise.
Graph import_onnx(const std::string& path, const ImportOptions& opt = {});
// The same from a serialized onnx.ModelProto in memory. `name` names the
// model in messages; external data is read from folder `dir` (confined to
// it), and refused when `dir` is empty.
Graph import_onnx_bytes(std::string_view bytes, const std::string& name, const std::string& dir = "",
                        const ImportOptions& opt = {});

// Reads a serialized onnx.TensorProto (test_data_set_*/input_0.pb).
HostTensor load_tensor_pb(const std::string& path);
// The same from bytes; `what` names it in messages, external data from `dir`.
HostTensor parse_tensor_pb(std::string_view bytes, const std::string& what, const std::string& dir = "");
void save_tensor_pb(const HostTensor& t, const std::string& name, const std::string& path);

// The .onnx file inside a model folder (or the path itself if it is a file).
std::string resolve_model_file(const std::string& path);

}  // namespace texplan
