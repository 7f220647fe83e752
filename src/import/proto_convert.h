// Conversions between ONNX protos and texplan values for the importer (private
// to src/import): element types, tensors (external data confined to the model's
// folder), attributes, names as messages and the graph show them.
#pragma once

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <optional>
#include <string>

#include "graph/graph.h"
#include "import/onnx_import.h"

namespace texplan::importing {

namespace fs = std::filesystem;

// One line of printable text, whatever a library or a model's names put in
// a message (names may hold newlines or terminal escape sequences).
std::string one_line(std::string s, size_t max = 400);
std::optional<DataType> known_type(int t);
DataType from_onnx_type(int t, const std::string& what);
int to_onnx_type(DataType t);
std::string read_file(const std::string& path, const std::string& what);
// External data must stay inside the model's folder: a model file may not
// make texplan read /etc/passwd or ../../secret.
fs::path confined_path(const fs::path& dir, const std::string& location, const std::string& what);
struct ExternalRef {
  std::string location;
  int64_t offset = 0, length = -1;
};

ExternalRef external_ref(const onnx::TensorProto& t, const std::string& what);
// The file an external tensor reads: confined to the model's folder (after
// following symlinks) and a regular file (not a FIFO or device that could
// block or never end). Empty path when the file does not exist.
fs::path external_file(const fs::path& dir, const ExternalRef& r, const std::string& what);
bool is_external(const onnx::TensorProto& t);
Shape dims_of(const onnx::TensorProto& t);
// Element count of a declared shape; Error naming `what` if it is negative
// or overflows.
int64_t checked_count(const Shape& s, const std::string& what);
// Reads a TensorProto's values. External data is read from `dir`. Every
// size is checked against the bytes actually present before anything is
// allocated: a header cannot make texplan allocate what its data lacks.
HostTensor tensor_from_proto(const onnx::TensorProto& t, const fs::path& dir, const std::string& what);
void fill_proto(const HostTensor& h, const std::string& name, onnx::TensorProto* t);
Attribute attribute_from_proto(const onnx::AttributeProto& a, const fs::path& dir, const std::string& what);
// A model's name for a tensor or node as the Graph keeps it: control
// characters (newlines, terminal escapes) written as \xNN, so no message or
// table that shows the name can be split or hijacked by it.
std::string printable(const std::string& name);
// A tensor's id by the name the file gives it (the graph holds printable names).
int find_tensor(const Graph& graph, const std::string& name);
std::string node_label(const onnx::NodeProto& n, int index);
// True (and the shape) when a value's shape is fully known.
bool static_shape(const onnx::ValueInfoProto& v, Shape& out, int& elem_type);
InputSignature signature_of(const onnx::ValueInfoProto& v);

}  // namespace texplan::importing
