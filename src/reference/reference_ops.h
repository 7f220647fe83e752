// Plain C++ implementations of every supported ONNX operator over host
// tensors. One definition of each operator's meaning, used by the importer to
// fold constant (shape-computing) subgraphs and by the CPU reference executor
// to check the OpenCL kernels.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace texplan::reference {

// True if `op_type` has a reference implementation.
bool supports(const std::string& op_type);
std::vector<std::string> supported_ops();

// Evaluates one node. `inputs[i]` is null for an omitted optional input.
// Returns one HostTensor per node output (shape and dtype set).
// Throws texplan::Error naming the node on unsupported op/attribute/dtype.
std::vector<HostTensor> evaluate(const Node& node, const std::vector<const HostTensor*>& inputs);

// The reason of evaluate()'s error `message` without its "NAME (OP): "
// prefix, so callers can name the node their own way ("node 'NAME' (OP)").
std::string failure_reason(const Node& node, const std::string& message);

// GridSample's attributes as the reference and the kernel (shape.cl
// grid_sample_f32, which takes the same padding codes) run them; nullopt,
// with the reason in `why`, for a form neither runs (cubic).
struct GridSampleForm {
  bool linear = true, align_corners = false;
  int padding = 0;  // 0 zeros, 1 border, 2 reflection
};
std::optional<GridSampleForm> grid_sample_form(const Node& node, std::string* why = nullptr);

}  // namespace texplan::reference

namespace texplan::reference {

// Runs `g` (nodes in order, every node evaluated, elided or not) on
// `inputs` (g.inputs order) and returns, per tensor id, the largest
// magnitude a float32 activation took (0 for constants, integers and
// tensors no node wrote). Each value is freed after its last reader, so the
// peak is about the graph's lower bound in fp32. For fp16 storage's range
// (optimize/half_range.h).
std::vector<float> largest_magnitudes(const Graph& g, const std::vector<HostTensor>& inputs);

}  // namespace texplan::reference
