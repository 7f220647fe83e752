#include "import/guarded_schemas.h"

#include <onnx/defs/tensor_proto_util.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "import/newer_schemas.h"
#include "import/rewrites.h"
#include "reference/common.h"

namespace texplan::importing {

namespace {

// Preconditions ONNX 1.12's inference functions assume but do not check;
// each was found by fuzzing (fuzz/regressions/shapes). Breaking one raises
// an InferenceError, which ONNX reports naming the node.
bool is_window_op(const std::string& op) {
  return op == "Conv" || op == "ConvTranspose" || op == "MaxPool" || op == "AveragePool" || op == "LpPool" ||
         op == "ConvInteger" || op == "QLinearConv" || op == "MaxUnpool";
}

int rank_of(const onnx::TypeProto* t) {
  return t && t->has_tensor_type() && t->tensor_type().has_shape() ? t->tensor_type().shape().dim_size() : -1;
}

void check_for_inference(const std::string& op, onnx::InferenceContext& c) {
  auto ints = [&](const char* name) -> const onnx::AttributeProto* { return c.getAttribute(name); };
  // A negative size: ConstantOfShape's inference makes one of a negative
  // value in its shape input (refused below), and GatherND's then indexed
  // dims before the first with it.
  for (size_t i = 0; i < c.getNumInputs(); ++i) {
    const onnx::TypeProto* t = c.getInputType(i);
    if (rank_of(t) < 1) continue;
    for (const auto& d : t->tensor_type().shape().dim())
      if (d.has_dim_value() && d.dim_value() < 0)
        fail_shape_inference("input ", i, " has a dimension of size ", d.dim_value());
  }
  if (op == "ConstantOfShape" && c.getNumInputs() > 0) {
    if (const onnx::TensorProto* t = c.getInputData(0); t && t->data_type() == onnx::TensorProto::INT64)
      for (int64_t x : onnx::ParseData<int64_t>(t))
        if (x < 0) fail_shape_inference("shape value ", x, " is negative");
  }
  if (op == "GatherND") {
    const auto* a = c.getAttribute("batch_dims");
    const int64_t b = a ? a->i() : 0;
    if (b < 0) fail_shape_inference("batch_dims ", b, " must be >= 0");
    const int r = rank_of(c.getInputType(0)), q = c.getNumInputs() > 1 ? rank_of(c.getInputType(1)) : -1;
    if (r == 0 || q == 0) fail_shape_inference("data and indices need a rank of 1 or more");
    if (r > 0 && q > 0) {
      if (b >= std::min(r, q)) fail_shape_inference("batch_dims ", b, " must be below both ranks, ", r, " and ", q);
      const auto& last = c.getInputType(1)->tensor_type().shape().dim(q - 1);
      if (last.has_dim_value() && (last.dim_value() < 1 || last.dim_value() > r - b))
        fail_shape_inference("indices' last dimension ", last.dim_value(), " is not in [1, ", r - b, "]");
    }
  }
  if (op == "DepthToSpace" || op == "SpaceToDepth") {  // ONNX squares it: overflow, then a division by 0
    if (const auto* a = c.getAttribute("blocksize"); a && (a->i() < 1 || a->i() > 65536))
      fail_shape_inference("blocksize ", a->i(), " is not in [1, 65536]");
  }
  // Resize and Upsample multiply each dim by its scale and cast the product
  // to int64: a NaN, infinite or huge scale is undefined behaviour there
  // (and became a dim of -2^63 that a later node was blamed for).
  if (op == "Resize" || op == "Upsample") {
    auto check_scale = [](float v) {
      if (!reference::is_size_factor(v)) fail_shape_inference("scale ", v, " is not a positive size factor");
    };
    const size_t at = op == "Upsample" || c.getNumInputs() == 2 ? 1 : 2;
    if (const onnx::TensorProto* t = at < c.getNumInputs() ? c.getInputData(at) : nullptr;
        t && t->data_type() == onnx::TensorProto::FLOAT)
      for (float v : onnx::ParseData<float>(t)) check_scale(v);
    if (const auto* a = c.getAttribute("scales"))
      for (float v : a->floats()) check_scale(v);
  }
  // Inputs whose length becomes a rank (a shape, axes, pads, scales): ONNX
  // makes one dimension per element, so a length of 2^49 exhausts memory.
  static const std::map<std::string, std::vector<size_t>> rank_inputs = {
      {"Expand", {1}}, {"Reshape", {1}}, {"ConstantOfShape", {0}}, {"Tile", {1}}, {"Upsample", {1}},
      {"Resize", {1, 2, 3}}, {"Slice", {1, 2, 3, 4}}, {"Pad", {1}}, {"Squeeze", {1}}, {"Unsqueeze", {1}},
      {"ReduceSum", {1}}, {"ReduceMean", {1}}, {"ReduceMax", {1}}, {"ReduceMin", {1}}, {"ReduceProd", {1}}};
  if (auto it = rank_inputs.find(op); it != rank_inputs.end())
    for (size_t i : it->second) {
      const onnx::TypeProto* t = i < c.getNumInputs() ? c.getInputType(i) : nullptr;
      if (rank_of(t) < 1) continue;
      const auto& d = t->tensor_type().shape().dim(0);
      if (d.has_dim_value() && d.dim_value() > 1024)
        fail_shape_inference("input ", i, " holds ", d.dim_value(), " values where a rank's worth is expected");
    }
  if (!is_window_op(op)) return;
  // Ranks: X is N x C x D1..Dn (n >= 1); a weight has X's rank.
  const int r = rank_of(c.getInputType(0));
  if (r >= 0 && r < 3) fail_shape_inference("input of rank ", r, ": needs N x C x at least one spatial dim");
  const bool weighted = op == "Conv" || op == "ConvTranspose" || op == "ConvInteger";
  const int w = weighted && c.getNumInputs() > 1 ? rank_of(c.getInputType(1)) : -1;
  if (r >= 0 && w >= 0 && w != r) fail_shape_inference("weight of rank ", w, " for an input of rank ", r);
  const int spatial = r >= 0 ? r - 2 : w >= 2 ? w - 2 : -1;
  auto check_list = [&](const char* name, int per_dim, int64_t min) {
    const auto* a = ints(name);
    if (!a) return;
    if (spatial >= 0 && a->ints_size() != per_dim * spatial &&
        !(std::string(name) == "output_shape" && a->ints_size() == spatial + 2))
      fail_shape_inference(name, " has ", a->ints_size(), " values for ", spatial, " spatial dims");
    for (int64_t v : a->ints())
      if (v < min) fail_shape_inference(name, " value ", v, " is below ", min);
  };
  check_list("kernel_shape", 1, 1);
  check_list("strides", 1, 1);
  check_list("dilations", 1, 1);
  check_list("pads", 2, 0);
  check_list("output_padding", 1, 0);
  check_list("output_shape", 1, 0);
  if (const auto* g = c.getAttribute("group"); g && g->i() < 1) fail_shape_inference("group ", g->i(), " must be >= 1");
  if (const auto* p = c.getAttribute("auto_pad")) {
    const std::string& v = p->s();
    if (v != "NOTSET" && v != "SAME_UPPER" && v != "SAME_LOWER" && v != "VALID")
      fail_shape_inference("auto_pad '", v, "' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID");
  }
}

// Data propagation of Add/Sub/Mul reads dim 0 of an empty shape value when
// the other operand has one element: skip propagating such values.
bool propagation_safe(const std::string& op, onnx::DataPropagationContext& c) {
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") {
    for (size_t i = 0; i < c.getNumInputs() && i < 2; ++i)
      if (const onnx::TensorShapeProto* d = c.getInputData(i); d && d->dim_size() == 0) return false;
  }
  return true;
}

// ONNX 1.12's shape inference gives a node's inference function a null type
// for an input whose type is unknown (its producer's inference gave up), and
// some functions dereference it (Shape-15 with start/end, found by fuzzing).
// Inference goes through this registry, which wraps every schema's functions
// so that a node with an unknown required input, or a non-tensor one, is
// skipped (its outputs stay unknown, and the importer refuses them by name),
// and checks the preconditions above.
class GuardedSchemas final : public onnx::ISchemaRegistry {
 public:
  const onnx::OpSchema* GetSchema(const std::string& key, const int version,
                                  const std::string& domain) const override {
    const onnx::OpSchema* s = domain.empty() ? newer_schema(key, version) : nullptr;
    if (!s) s = onnx::OpSchemaRegistry::Instance()->GetSchema(key, version, domain);
    if (!s) return nullptr;
    std::lock_guard<std::mutex> lock(mutex_);
    auto [it, fresh] = guarded_.try_emplace(s);
    if (fresh) it->second = guard(*s);
    return it->second.get();
  }

 private:
  template <class Context>
  static bool inputs_known(const std::vector<onnx::OpSchema::FormalParameter>& formal, Context& ctx) {
    for (size_t i = 0; i < ctx.getNumInputs(); ++i) {
      const onnx::TypeProto* t = ctx.getInputType(i);
      const bool optional = !formal.empty() && formal[std::min(i, formal.size() - 1)].GetOption() ==
                                                   onnx::OpSchema::FormalParameterOption::Optional;
      if (t ? !t->has_tensor_type() : !optional) return false;
    }
    return true;
  }
  static std::unique_ptr<onnx::OpSchema> guard(const onnx::OpSchema& s) {
    auto g = std::make_unique<onnx::OpSchema>(s);
    const auto formal = s.inputs();
    const std::string op = s.Name();
    if (s.has_type_and_shape_inference_function())
      g->TypeAndShapeInferenceFunction(
          [f = s.GetTypeAndShapeInferenceFunction(), formal, op](onnx::InferenceContext& c) {
            if (!inputs_known(formal, c)) return;
            check_for_inference(op, c);
            f(c);
            if (op == "Einsum") infer_einsum_dims(c);  // libonnx 1.12 gives only its rank
          });
    if (s.has_data_propagation_function())
      g->PartialDataPropagationFunction(
          [f = s.GetDataPropagationFunction(), formal, op](onnx::DataPropagationContext& c) {
            if (inputs_known(formal, c) && propagation_safe(op, c)) f(c);
          });
    return g;
  }
  mutable std::mutex mutex_;
  mutable std::unordered_map<const onnx::OpSchema*, std::unique_ptr<onnx::OpSchema>> guarded_;
};

}  // namespace

const onnx::ISchemaRegistry& guarded_schemas() {
  static const GuardedSchemas g;  // copies of schemas: nothing in them refers back to ONNX's registry
  return g;
}


}  // namespace texplan::importing
