// ONNX file -> Graph with a static shape on every tensor.
#pragma once
#include <string>

#include "graph/graph.h"

namespace texplan {

struct ImportOptions {
  // Load initializer bytes (needed to execute, not to plan). When false, a
  // missing .onnx.data file is fine: dims and type come from the .onnx.
  bool load_weights = false;
};

// Accepts a .onnx file or a model folder holding NAME.onnx. Runs ONNX shape
// inference and folds shape-computing subgraphs until every tensor has a
// static shape; throws Error naming the model and tensor/node otherwise.
Graph import_onnx(const std::string& path, const ImportOptions& opt = {});

// Reads a serialized onnx.TensorProto (test_data_set_*/input_0.pb).
HostTensor load_tensor_pb(const std::string& path);
void save_tensor_pb(const HostTensor& t, const std::string& name, const std::string& path);

// The .onnx file inside a model folder (or the path itself if it is a file).
std::string resolve_model_file(const std::string& path);

}  // namespace texplan
