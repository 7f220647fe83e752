// The checks of QuantizeLinear and DequantizeLinear, shared by the reference
// operators (quantize.cpp) and the validation stage (src/validate), so a
// quantized model that lies (a zero scale, a per-axis scale of the wrong
// length, a mismatched zero point) is refused at import the way the
// operator would refuse it at run time. Shapes and dtypes are always read;
// scale values only where the tensor holds them (a constant).
#pragma once
#include "reference/common.h"

namespace texplan::reference {

// Checks x, scale and zero point of c's node (QuantizeLinear when
// `dequantize` is false) and returns the output's dtype.
DataType quantize_output_type(const OpContext& c, bool dequantize);

}  // namespace texplan::reference
