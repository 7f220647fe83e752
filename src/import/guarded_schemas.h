// ONNX's schemas with their inference functions guarded (private to src/import):
// preconditions ONNX 1.12 assumes but does not check are checked first, and a
// node whose inputs are not all known tensors is skipped.
#pragma once

#include <onnx/defs/schema.h>

namespace texplan::importing {

// Every schema texplan imports with: ONNX's and import/newer_schemas.h's, guarded.
const onnx::ISchemaRegistry& guarded_schemas();

}  // namespace texplan::importing
