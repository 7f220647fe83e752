// Operator schemas of opsets 18 to 21 that Debian's libonnx (1.12, opset 17)
// lacks, for the operators texplan runs. The importer's shape inference and
// node checks look here first; the reference operators and kernels already
// implement the newer forms (axes as an input, Split's num_outputs, Pad's
// axes, Resize's new attributes), so the graph keeps the model's own form.
#pragma once
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include <string>

namespace texplan {

// Newest opset of the default domain texplan imports.
constexpr int64_t kMaxSupportedOpset = 21;

// texplan's schema of `op` at `version` of the default domain where that
// version is newer than libonnx's, or null where libonnx's own applies (or
// the operator is unknown). Built once; never changes.
const onnx::OpSchema* newer_schema(const std::string& op, int version);

// Operators added in opsets 18-21 that texplan runs by rewriting them into
// older ones before shape inference (GroupNormalization into
// InstanceNormalization): rewrites every such node of `model` in place.
void expand_newer_operators(onnx::ModelProto& model, int64_t opset, const std::string& model_name);

}  // namespace texplan
