#include "import/newer_schemas.h"

#include <onnx/defs/shape_inference.h>
#include <onnx/defs/tensor_proto_util.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <unordered_set>
#include <vector>

#include "graph/graph.h"
#include "reference/common.h"

namespace texplan {
namespace {

using onnx::AttributeProto;
using onnx::InferenceContext;
using onnx::OpSchema;

const OpSchema& libonnx_schema(const char* op, int version) {
  const OpSchema* s = onnx::OpSchemaRegistry::Schema(op, version, "");
  if (!s) throw Error(std::string("libonnx has no schema ") + op + "-" + std::to_string(version));
  return *s;
}

// libonnx's schema of `base_op` at opset 17 rebuilt under a new name and
// version (not copied: OpSchema::Finalize counts inputs on top of what a
// finalized schema holds), ready for more inputs and attributes, then
// Finalize().
std::unique_ptr<OpSchema> copy_of(const char* base_op, const char* op, int since) {
  const OpSchema& base = libonnx_schema(base_op, 17);
  auto s = std::make_unique<OpSchema>(op, __FILE__, __LINE__);
  s->SetDomain("").SinceVersion(since);
  for (size_t i = 0; i < base.inputs().size(); ++i) {
    const auto& f = base.inputs()[i];
    s->Input(int(i), f.GetName(), "", f.GetTypeStr(), f.GetOption(), f.GetIsHomogeneous(), f.GetMinArity());
  }
  for (size_t i = 0; i < base.outputs().size(); ++i) {
    const auto& f = base.outputs()[i];
    s->Output(int(i), f.GetName(), "", f.GetTypeStr(), f.GetOption(), f.GetIsHomogeneous(), f.GetMinArity());
  }
  for (const auto& [name, a] : base.attributes()) s->Attr(a);
  for (const auto& t : base.typeConstraintParams())
    s->TypeConstraint(t.type_param_str, t.allowed_type_strs, t.description);
  if (base.has_type_and_shape_inference_function())
    s->TypeAndShapeInferenceFunction(base.GetTypeAndShapeInferenceFunction());
  if (base.has_data_propagation_function()) s->PartialDataPropagationFunction(base.GetDataPropagationFunction());
  return s;
}

// The values of a constant integer input (an initializer or a folded
// Constant), or false where they are not known yet.
bool constant_ints(InferenceContext& ctx, size_t i, std::vector<int64_t>& out) {
  if (i >= ctx.getNumInputs()) return false;
  const onnx::TensorProto* t = ctx.getInputData(i);
  if (!t) return false;
  if (t->data_type() == onnx::TensorProto::INT64) out = onnx::ParseData<int64_t>(t);
  else if (t->data_type() == onnx::TensorProto::INT32) {
    auto v = onnx::ParseData<int32_t>(t);
    out.assign(v.begin(), v.end());
  } else {
    fail_shape_inference("input ", i, " must be int32 or int64");
  }
  return true;
}

bool constant_floats(InferenceContext& ctx, size_t i, std::vector<float>& out) {
  if (i >= ctx.getNumInputs()) return false;
  const onnx::TensorProto* t = ctx.getInputData(i);
  if (!t || t->data_type() != onnx::TensorProto::FLOAT) return false;
  out = onnx::ParseData<float>(t);
  return true;
}

bool input_given(InferenceContext& ctx, size_t i) { return i < ctx.getNumInputs() && ctx.getInputType(i); }

int64_t normalized_axis(int64_t a, int64_t rank) {
  if (a < -rank || a >= rank) fail_shape_inference("axis ", a, " is out of range for rank ", rank);
  return a < 0 ? a + rank : a;
}

// The input's dims when all are known, else false.
bool static_dims(InferenceContext& ctx, size_t i, std::vector<int64_t>& dims) {
  if (!onnx::hasInputShape(ctx, i)) return false;
  const auto& s = onnx::getInputShape(ctx, i);
  dims.clear();
  for (const auto& d : s.dim()) {
    if (!d.has_dim_value()) return false;
    dims.push_back(d.dim_value());
  }
  return true;
}

void set_output_dims(InferenceContext& ctx, size_t o, const std::vector<int64_t>& dims) {
  auto* shape = ctx.getOutputType(o)->mutable_tensor_type()->mutable_shape();
  shape->clear_dim();
  for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
}

// Split-18: num_outputs parts, each ceil(dim / num_outputs) but the last.
std::unique_ptr<OpSchema> split18() {
  auto s = copy_of("Split", "Split", 18);
  s->Attr("num_outputs", "", AttributeProto::INT, false);
  s->TypeAndShapeInferenceFunction([base = libonnx_schema("Split", 17).GetTypeAndShapeInferenceFunction()](
                                       InferenceContext& ctx) {
    const auto* n = ctx.getAttribute("num_outputs");
    if (!n || input_given(ctx, 1)) return base(ctx);
    if (n->i() < 1) fail_shape_inference("num_outputs ", n->i(), " must be positive");
    if (size_t(n->i()) != ctx.getNumOutputs())
      fail_shape_inference("num_outputs ", n->i(), " for ", ctx.getNumOutputs(), " outputs");
    for (size_t o = 0; o < ctx.getNumOutputs(); ++o) onnx::propagateElemTypeFromInputToOutput(ctx, 0, o);
    std::vector<int64_t> dims;
    if (!static_dims(ctx, 0, dims)) return;
    const auto* a = ctx.getAttribute("axis");
    const int64_t axis = normalized_axis(a ? a->i() : 0, int64_t(dims.size()));
    const int64_t parts = n->i(), dim = dims[axis], part = (dim + parts - 1) / parts;
    if (part * (parts - 1) >= dim && dim > 0)
      fail_shape_inference("an axis of ", dim, " cannot be cut into ", parts, " parts of ", part);
    for (int64_t o = 0; o < parts; ++o) {
      std::vector<int64_t> out = dims;
      out[axis] = std::min(part, dim - o * part);
      set_output_dims(ctx, size_t(o), out);
    }
  });
  s->Finalize();
  return s;
}

// Pad-18: pads may name only the axes of input 3 (mode "wrap" from 19 is
// a value of the existing attribute).
std::unique_ptr<OpSchema> pad18(int since) {
  auto s = copy_of("Pad", "Pad", since);
  s->Input(3, "axes", "", "Tind", OpSchema::Optional);
  s->TypeConstraint("Tind", {"tensor(int32)", "tensor(int64)"}, "");
  s->TypeAndShapeInferenceFunction([base = libonnx_schema("Pad", 17).GetTypeAndShapeInferenceFunction()](
                                       InferenceContext& ctx) {
    if (!input_given(ctx, 3)) return base(ctx);
    onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
    std::vector<int64_t> dims, pads, axes;
    if (!static_dims(ctx, 0, dims) || !constant_ints(ctx, 1, pads) || !constant_ints(ctx, 3, axes)) return;
    const int64_t r = int64_t(dims.size());
    if (pads.size() != 2 * axes.size())
      fail_shape_inference("pads has ", pads.size(), " values for ", axes.size(), " axes");
    std::vector<int64_t> out = dims;
    std::unordered_set<int64_t> seen;
    for (size_t k = 0; k < axes.size(); ++k) {
      const int64_t a = normalized_axis(axes[k], r);
      if (!seen.insert(a).second) fail_shape_inference("axis ", a, " is listed twice");
      out[a] += pads[k] + pads[k + axes.size()];
      if (out[a] < 0) fail_shape_inference("pads make axis ", a, " negative");
    }
    set_output_dims(ctx, 0, out);
  });
  s->Finalize();
  return s;
}

// Resize-18/19: antialias, axes and keep_aspect_ratio_policy.
std::unique_ptr<OpSchema> resize18(int since) {
  auto s = copy_of("Resize", "Resize", since);
  s->Attr("antialias", "", AttributeProto::INT, int64_t(0));
  s->Attr("axes", "", AttributeProto::INTS, false);
  s->Attr("keep_aspect_ratio_policy", "", AttributeProto::STRING, std::string("stretch"));
  s->TypeAndShapeInferenceFunction([base = libonnx_schema("Resize", 17).GetTypeAndShapeInferenceFunction()](
                                       InferenceContext& ctx) {
    const auto* axes_attr = ctx.getAttribute("axes");
    const auto* policy_attr = ctx.getAttribute("keep_aspect_ratio_policy");
    const std::string policy = policy_attr ? policy_attr->s() : "stretch";
    if (!axes_attr && policy == "stretch") return base(ctx);
    if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
      fail_shape_inference("keep_aspect_ratio_policy '", policy, "' is not stretch, not_larger or not_smaller");
    onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
    std::vector<int64_t> dims;
    if (!static_dims(ctx, 0, dims)) return;
    const int64_t r = int64_t(dims.size());
    std::vector<int64_t> axes;
    if (axes_attr) {
      for (int64_t a : axes_attr->ints()) axes.push_back(normalized_axis(a, r));
    } else {
      for (int64_t a = 0; a < r; ++a) axes.push_back(a);
    }
    std::vector<int64_t> out = dims, sizes;
    std::vector<float> scales;
    if (input_given(ctx, 3) && constant_ints(ctx, 3, sizes) && !sizes.empty()) {
      if (sizes.size() != axes.size()) fail_shape_inference("sizes has ", sizes.size(), " values for ", axes.size(), " axes");
      if (policy == "stretch") {
        for (size_t k = 0; k < axes.size(); ++k) out[axes[k]] = sizes[k];
      } else {  // one scale for all axes, the smallest (not_larger) or largest that fits
        double scale = policy == "not_larger" ? INFINITY : 0;
        for (size_t k = 0; k < axes.size(); ++k) {
          if (dims[axes[k]] == 0) fail_shape_inference("axis ", axes[k], " is empty");
          const double sk = double(sizes[k]) / double(dims[axes[k]]);
          scale = policy == "not_larger" ? std::min(scale, sk) : std::max(scale, sk);
        }
        for (int64_t a : axes) out[a] = int64_t(std::floor(double(dims[a]) * scale + 0.5));
      }
    } else if (input_given(ctx, 2) && constant_floats(ctx, 2, scales) && !scales.empty()) {
      if (scales.size() != axes.size())
        fail_shape_inference("scales has ", scales.size(), " values for ", axes.size(), " axes");
      for (size_t k = 0; k < axes.size(); ++k) {
        if (!reference::is_size_factor(scales[k])) fail_shape_inference("scale ", scales[k], " is not a positive size factor");
        out[axes[k]] = int64_t(std::floor(double(dims[axes[k]]) * double(scales[k])));
      }
    } else {
      return;
    }
    set_output_dims(ctx, 0, out);
  });
  s->Finalize();
  return s;
}

// Cast-19/21 and CastLike-19/21: saturate, which only float8 targets read.
std::unique_ptr<OpSchema> with_saturate(const char* op, int since) {
  auto s = copy_of(op, op, since);
  s->Attr("saturate", "", AttributeProto::INT, int64_t(1));
  s->Finalize();
  return s;
}

// AveragePool-19: dilations, inferred as MaxPool's windows are.
std::unique_ptr<OpSchema> average_pool19() {
  auto s = copy_of("AveragePool", "AveragePool", 19);
  s->Attr("dilations", "", AttributeProto::INTS, false);
  s->TypeAndShapeInferenceFunction(libonnx_schema("MaxPool", 17).GetTypeAndShapeInferenceFunction());
  s->Finalize();
  return s;
}

// Gelu-20: 0.5 x (1 + erf(x / sqrt 2)), or its tanh approximation.
std::unique_ptr<OpSchema> gelu20() {
  auto s = std::make_unique<OpSchema>("Gelu", __FILE__, __LINE__);
  s->SetDomain("").SinceVersion(20);
  s->Attr("approximate", "", AttributeProto::STRING, std::string("none"));
  s->Input(0, "X", "", "T");
  s->Output(0, "Y", "", "T");
  s->TypeConstraint("T", {"tensor(float16)", "tensor(float)", "tensor(double)", "tensor(bfloat16)"}, "");
  s->TypeAndShapeInferenceFunction(onnx::propagateShapeAndTypeFromFirstInput);
  s->Finalize();
  return s;
}

struct Versions {
  std::map<int, std::unique_ptr<OpSchema>> by_since;  // since_version -> schema
};

std::map<std::string, Versions> build_table() {
  std::map<std::string, Versions> t;
  // Reduce* of opset 18 read axes from an optional input, as ReduceSum has
  // since 13 (ReduceMax/ReduceMin 20 add bool, a type change only).
  for (const char* op : {"ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
                         "ReduceLogSumExp", "ReduceSumSquare"})
    t[op].by_since[18] = copy_of("ReduceSum", op, 18), t[op].by_since[18]->Finalize();
  t["Split"].by_since[18] = split18();
  t["Pad"].by_since[18] = pad18(18);
  t["Pad"].by_since[19] = pad18(19);  // mode "wrap"
  t["Pad"].by_since[21] = pad18(21);  // 4-bit types
  t["Resize"].by_since[18] = resize18(18);
  t["Resize"].by_since[19] = resize18(19);  // coordinate_transformation_mode "half_pixel_symmetric"
  for (int v : {19, 21}) {
    t["Cast"].by_since[v] = with_saturate("Cast", v);
    t["CastLike"].by_since[v] = with_saturate("CastLike", v);
  }
  t["AveragePool"].by_since[19] = average_pool19();
  t["Gelu"].by_since[20] = gelu20();
  return t;
}

}  // namespace

const onnx::OpSchema* newer_schema(const std::string& op, int version) {
  static const std::map<std::string, Versions> table = build_table();
  if (version <= 17 || version > kMaxSupportedOpset) return nullptr;
  auto it = table.find(op);
  if (it == table.end()) return nullptr;
  auto v = it->second.by_since.upper_bound(version);  // the newest since_version <= version
  if (v == it->second.by_since.begin()) return nullptr;
  return std::prev(v)->second.get();
}

namespace {

onnx::TensorProto int64_initializer(const std::string& name, const std::vector<int64_t>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::INT64);
  t.add_dims(int64_t(values.size()));
  for (int64_t v : values) t.add_int64_data(v);
  return t;
}

onnx::TensorProto float_initializer(const std::string& name, const std::vector<float>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(int64_t(values.size()));
  for (float v : values) t.add_float_data(v);
  return t;
}

// GroupNormalization(X, scale, bias; num_groups G, epsilon) as ops texplan
// runs: X viewed as N x G x rest, normalized per group by
// InstanceNormalization, then scaled and shifted per channel (opset 21) or
// per group (opset 18, whose scale and bias have G values).
void expand_group_norm(const onnx::NodeProto& n, int64_t opset, onnx::GraphProto& out_graph,
                       google::protobuf::RepeatedPtrField<onnx::NodeProto>& out, const std::string& what) {
  int64_t groups = 0;
  float epsilon = 1e-5f;
  for (const auto& a : n.attribute()) {
    if (a.name() == "num_groups") groups = a.i();
    if (a.name() == "epsilon") epsilon = a.f();
  }
  if (groups < 1) throw Error(what + ": num_groups " + std::to_string(groups) + " must be positive");
  if (n.input_size() != 3 || n.output_size() != 1) throw Error(what + ": needs 3 inputs and 1 output");
  const std::string base = n.output(0) + "/group_norm_";
  auto name = [&](const char* part) { return base + part; };
  auto node = [&](const char* op, std::vector<std::string> ins, const std::string& output) -> onnx::NodeProto& {
    onnx::NodeProto& m = *out.Add();
    m.set_op_type(op);
    m.set_name((n.name().empty() ? n.output(0) : n.name()) + "/" + op);
    for (auto& i : ins) m.add_input(i);
    m.add_output(output);
    return m;
  };
  *out_graph.add_initializer() = int64_initializer(name("grouped_shape"), {0, groups, -1});
  *out_graph.add_initializer() = float_initializer(name("ones"), std::vector<float>(size_t(groups), 1.0f));
  *out_graph.add_initializer() = float_initializer(name("zeros"), std::vector<float>(size_t(groups), 0.0f));
  node("Shape", {n.input(0)}, name("x_shape"));
  node("Reshape", {n.input(0), name("grouped_shape")}, name("grouped"));
  const bool per_group = opset < 21;
  onnx::NodeProto& norm = node("InstanceNormalization",
                               {name("grouped"), per_group ? n.input(1) : name("ones"),
                                per_group ? n.input(2) : name("zeros")},
                               per_group ? n.output(0) + "/group_norm_normalized" : name("normalized"));
  auto* eps = norm.add_attribute();
  eps->set_name("epsilon");
  eps->set_type(AttributeProto::FLOAT);
  eps->set_f(epsilon);
  if (per_group) {
    node("Reshape", {n.output(0) + "/group_norm_normalized", name("x_shape")}, n.output(0));
    return;
  }
  // Per channel: N x C x rest, times scale[C, 1], plus bias[C, 1].
  *out_graph.add_initializer() = int64_initializer(name("zero"), {0});
  *out_graph.add_initializer() = int64_initializer(name("minus_one"), {-1});
  *out_graph.add_initializer() = int64_initializer(name("axis_1"), {1});
  node("Shape", {n.input(1)}, name("c"));
  auto& cat = node("Concat", {name("zero"), name("c"), name("minus_one")}, name("channel_shape"));
  auto* axis = cat.add_attribute();
  axis->set_name("axis");
  axis->set_type(AttributeProto::INT);
  axis->set_i(0);
  node("Reshape", {name("normalized"), name("channel_shape")}, name("channels"));
  node("Unsqueeze", {n.input(1), name("axis_1")}, name("scale"));
  node("Unsqueeze", {n.input(2), name("axis_1")}, name("bias"));
  node("Mul", {name("channels"), name("scale")}, name("scaled"));
  node("Add", {name("scaled"), name("bias")}, name("shifted"));
  node("Reshape", {name("shifted"), name("x_shape")}, n.output(0));
}

}  // namespace

void expand_newer_operators(onnx::ModelProto& model, int64_t opset, const std::string& model_name) {
  if (opset < 18) return;
  auto* g = model.mutable_graph();
  bool any = false;
  for (const auto& n : g->node()) any = any || (n.op_type() == "GroupNormalization" && n.domain().empty());
  if (!any) return;
  google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
  for (int i = 0; i < g->node_size(); ++i) {
    const auto& n = g->node(i);
    if (n.op_type() == "GroupNormalization" && n.domain().empty())
      expand_group_norm(n, opset, *g, kept,
                        model_name + ": node '" + (n.name().empty() ? "GroupNormalization_" + std::to_string(i) : n.name()) +
                            "' (GroupNormalization)");
    else
      *kept.Add() = n;
  }
  g->mutable_node()->Swap(&kept);
}

}  // namespace texplan
