// The fuzz targets (see targets.h). Inputs are decoded with a small reader
// of our own (not FuzzedDataProvider) so the same decoding runs in the
// ordinary GoogleTest build that replays fuzz/regressions.
#include "targets.h"

#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string_view>

#include "import/onnx_import.h"
#include "lower/lower.h"
#include "optimize/usage.h"
#include "plan/memory_plan.h"

namespace fs = std::filesystem;

namespace texplan::fuzz {

// A scratch folder with a small weights file, so external data in fuzzed
// models resolves to something (locations escaping it must be refused).
const std::string& scratch_dir() {
  static const std::string dir = [] {
    fs::path d = fs::temp_directory_path() / ("texplan-fuzz-" + std::to_string(::getpid()));
    fs::create_directories(d);
    std::ofstream(d / "w.bin", std::ios::binary) << std::string(4096, '\x01');
    std::ofstream(d / "model.onnx.data", std::ios::binary) << std::string(65536, '\x02');
    return d.string();
  }();
  return dir;
}

namespace {

[[noreturn]] void broken(const std::string& what) {
  std::fprintf(stderr, "texplan fuzz: broken promise: %s\n", what.c_str());
  std::abort();
}

// Downstream of a successful import: usage records for both texture
// modes, the lower bound, one plan, validated.
void plan_graph(const Graph& g) {
  static const plan::DeviceProfile adreno = plan::DeviceProfile::load("adreno");
  for (TextureMode mode : {TextureMode::None, TextureMode::Views}) {
    Graph converted = g;
    const StorageAssignment storage = assign_storage(converted, adreno, mode, lower::kernel_catalog());
    PlanInput in = make_usage_records(converted, {&storage});
    if (in.record_of_tensor.size() != converted.tensors.size()) broken("record_of_tensor does not cover the tensors");
    try {
      plan::lower_bound_bytes(in.records);
      plan::MemoryPlan p = plan::plan_memory(in.records, adreno, strategy_for(mode, "best"));
      plan::validate(p, in.records, adreno);
    } catch (const plan::PlanError&) {
    }
  }
}

void import_and_plan(std::string_view bytes, bool load_weights) {
  try {
    Graph g = import_onnx_bytes(bytes, "fuzz", scratch_dir(), {.load_weights = load_weights});
    plan_graph(g);
  } catch (const Error& e) {
    if (std::string_view(e.what()).find('\n') != std::string_view::npos) broken("multi-line error: " + std::string(e.what()));
  } catch (const plan::PlanError&) {
  }
}

// Reads the fuzz input front to back; zeros once it runs out.
class Reader {
 public:
  Reader(const uint8_t* d, size_t n) : d_(d), n_(n) {}
  bool done() const { return i_ >= n_; }
  uint8_t u8() { return i_ < n_ ? d_[i_++] : 0; }
  uint16_t u16() { return uint16_t(u8() | u8() << 8); }
  uint64_t u64() {
    uint64_t v = 0;
    for (int k = 0; k < 8; ++k) v = v << 8 | u8();
    return v;
  }
  size_t below(size_t k) { return k <= 1 ? 0 : (k <= 256 ? u8() % k : u16() % k); }
  bool chance(int percent) { return u8() % 100 < uint8_t(percent); }
  // Integers as models use them: mostly small, sometimes edge values.
  int64_t small_int() {
    switch (u8() % 16) {
      case 0: return -1;
      case 1: return 0;
      case 2: return int64_t(u64());
      case 3: return -int64_t(below(8)) - 2;
      case 4: return int64_t(1) << (u8() % 63);
      default: return int64_t(u8() % 9);
    }
  }
  int64_t dim() {
    switch (u8() % 16) {
      case 0: return 0;
      case 1: return 1 + u16();
      case 2: return -1;  // symbolic
      default: return 1 + u8() % 6;
    }
  }
  template <class T, size_t N>
  const T& pick(const std::array<T, N>& a) {
    return a[below(N)];
  }

 private:
  const uint8_t* d_;
  size_t n_, i_ = 0;
};

// Window: kernel_shape, strides or dilations (1 to 3 small positive values
// mostly, so 3-D windows over 5-D inputs reach the volume rewrite); Pads:
// 2 to 6 small ones. Pick: one of `choices` (an Einsum equation, a mode).
enum class A { Int, Ints, Float, Type, Tensor, Mode, Window, Pads, Pick };
struct AttrSpec {
  const char* name;
  A kind;
  std::vector<const char*> choices = {};
};
struct OpSpec {
  const char* op;
  int min_in, max_in, outs;
  std::vector<AttrSpec> attrs;
};

const std::vector<OpSpec>& ops() {
  static const std::vector<OpSpec> v = {
      {"Shape", 1, 1, 1, {{"start", A::Int}, {"end", A::Int}}},
      {"Size", 1, 1, 1, {}},
      {"Gather", 2, 2, 1, {{"axis", A::Int}}},
      {"GatherElements", 2, 2, 1, {{"axis", A::Int}}},
      {"GatherND", 2, 2, 1, {{"batch_dims", A::Int}}},
      {"ScatterND", 3, 3, 1, {}},
      {"Concat", 1, 4, 1, {{"axis", A::Int}}},
      {"Unsqueeze", 1, 2, 1, {{"axes", A::Ints}}},
      {"Squeeze", 1, 2, 1, {{"axes", A::Ints}}},
      {"Reshape", 2, 2, 1, {{"allowzero", A::Int}}},
      {"Flatten", 1, 1, 1, {{"axis", A::Int}}},
      {"Slice", 1, 5, 1, {{"starts", A::Ints}, {"ends", A::Ints}, {"axes", A::Ints}}},
      {"Expand", 2, 2, 1, {}},
      {"ConstantOfShape", 1, 1, 1, {{"value", A::Tensor}}},
      {"Range", 3, 3, 1, {}},
      {"Cast", 1, 1, 1, {{"to", A::Type}}},
      {"Add", 2, 2, 1, {}},
      {"Sub", 2, 2, 1, {}},
      {"Mul", 2, 2, 1, {}},
      {"Div", 2, 2, 1, {}},
      {"Mod", 2, 2, 1, {{"fmod", A::Int}}},
      {"Pow", 2, 2, 1, {}},
      {"Equal", 2, 2, 1, {}},
      {"Less", 2, 2, 1, {}},
      {"Where", 3, 3, 1, {}},
      {"Max", 1, 3, 1, {}},
      {"Transpose", 1, 1, 1, {{"perm", A::Ints}}},
      {"Split", 1, 2, 2, {{"axis", A::Int}, {"split", A::Ints}}},
      {"Tile", 2, 2, 1, {}},
      {"Pad", 1, 3, 1, {{"pads", A::Ints}, {"mode", A::Mode}}},
      {"Resize", 1, 4, 1, {{"mode", A::Mode}}},
      {"Upsample", 2, 2, 1, {{"mode", A::Mode}}},
      {"ReduceSum", 1, 2, 1, {{"axes", A::Ints}, {"keepdims", A::Int}}},
      {"ReduceMax", 1, 1, 1, {{"axes", A::Ints}, {"keepdims", A::Int}}},
      {"ReduceMean", 1, 1, 1, {{"axes", A::Ints}, {"keepdims", A::Int}}},
      {"ArgMax", 1, 1, 1, {{"axis", A::Int}, {"keepdims", A::Int}}},
      {"Conv", 2, 3, 1,
       {{"kernel_shape", A::Window}, {"pads", A::Pads}, {"strides", A::Window}, {"dilations", A::Window},
        {"group", A::Int}, {"auto_pad", A::Mode}}},
      {"ConvTranspose", 2, 3, 1,
       {{"kernel_shape", A::Ints}, {"pads", A::Ints}, {"strides", A::Ints}, {"output_padding", A::Ints},
        {"output_shape", A::Ints}, {"group", A::Int}}},
      {"MaxPool", 1, 1, 1,
       {{"kernel_shape", A::Window}, {"pads", A::Pads}, {"strides", A::Window}, {"dilations", A::Window},
        {"ceil_mode", A::Int}, {"auto_pad", A::Mode}}},
      {"AveragePool", 1, 1, 1,
       {{"kernel_shape", A::Window}, {"pads", A::Pads}, {"strides", A::Window}, {"ceil_mode", A::Int},
        {"count_include_pad", A::Int}, {"auto_pad", A::Mode}}},
      {"GlobalAveragePool", 1, 1, 1, {}},
      {"LRN", 1, 1, 1, {{"size", A::Int}, {"alpha", A::Float}}},
      {"MatMul", 2, 2, 1, {}},
      {"Gemm", 2, 3, 1, {{"transA", A::Int}, {"transB", A::Int}, {"alpha", A::Float}}},
      {"Relu", 1, 1, 1, {}},
      {"Sqrt", 1, 1, 1, {}},
      {"Neg", 1, 1, 1, {}},
      {"Softmax", 1, 1, 1, {{"axis", A::Int}}},
      {"Identity", 1, 1, 1, {}},
      {"Dropout", 1, 3, 1, {}},
      {"Constant", 0, 0, 1, {{"value", A::Tensor}}},
      {"TopK", 2, 2, 2, {{"axis", A::Int}, {"largest", A::Int}}},
      {"OneHot", 3, 3, 1, {{"axis", A::Int}}},
      {"NonZero", 1, 1, 1, {}},
      {"CumSum", 2, 2, 1, {{"exclusive", A::Int}}},
      {"Trilu", 1, 2, 1, {{"upper", A::Int}}},
      {"Clip", 1, 3, 1, {}},
      {"EyeLike", 1, 1, 1, {{"k", A::Int}}},
      {"BatchNormalization", 5, 5, 1, {{"epsilon", A::Float}}},
      {"InstanceNormalization", 3, 3, 1, {{"epsilon", A::Float}}},
      {"LayerNormalization", 1, 3, 1, {{"axis", A::Int}}},
      {"DepthToSpace", 1, 1, 1, {{"blocksize", A::Int}}},
      {"SpaceToDepth", 1, 1, 1, {{"blocksize", A::Int}}},
      // Quantized ("QDQ") models: scales and zero points from fill_tensor's
      // scalars (0, negative, NaN, inf) and int8/uint8/int32 tensors.
      {"QuantizeLinear", 1, 3, 1, {{"axis", A::Int}}},
      {"DequantizeLinear", 1, 3, 1, {{"axis", A::Int}}},
      {"Round", 1, 1, 1, {}},
      {"Einsum", 1, 3, 1,
       {{"equation", A::Pick,
         {"ij,jk->ik", "bij,bjk->bik", "ii->i", "ij->ji", "i,i->", "...ij,...jk->...ik", "ij,jk", "ij->k",
          "a,b,c->abc", "i->ii", "ij", "...", "...->...", "ij,ij->ij", "i,j->ij", "bn,anm,bm->ba", "a...b,...->",
          "ij,,jk->ik", "i j->j", "ij->", "ab.c->a", "->", ""}}}},
      {"GridSample", 2, 2, 1,
       {{"mode", A::Pick, {"bilinear", "nearest", "linear", "bicubic", "cubic", "zeros"}},
        {"padding_mode", A::Pick, {"zeros", "border", "reflection", "nearest"}},
        {"align_corners", A::Int}}},
  };
  return v;
}

constexpr std::array<int, 7> kTypes = {onnx::TensorProto::FLOAT, onnx::TensorProto::INT64, onnx::TensorProto::INT32,
                                        onnx::TensorProto::BOOL,  onnx::TensorProto::UINT8, onnx::TensorProto::FLOAT16,
                                        onnx::TensorProto::INT8};

// A float as a scale might be: 0, negative, NaN, infinite, tiny, huge.
float scale_value(Reader& r) {
  static const std::array<float, 10> edge = {0.0f, -0.0f, -1.0f, std::numeric_limits<float>::quiet_NaN(),
                                             std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                                             1e-38f, 1e38f, 1e-45f, 0.5f};
  return r.chance(60) ? r.pick(edge) : float(int8_t(r.u8())) / 64;
}

// A small tensor: mostly int64 shape-like vectors, else floats; sometimes a
// quantization parameter (a float scale, an int8/uint8/int32 zero point,
// scalars or short vectors) or a float kernel of rank 3 to 5 (3-D Conv).
void fill_tensor(Reader& r, onnx::TensorProto* t) {
  enum { Ints, Floats, Scale, ZeroPoint, Kernel };
  const uint8_t kind_roll = r.u8() % 100;
  const int kind = kind_roll < 50 ? Ints : kind_roll < 75 ? Floats : kind_roll < 84 ? Scale : kind_roll < 93 ? ZeroPoint : Kernel;
  static const std::array<int, 3> zero_types = {onnx::TensorProto::INT8, onnx::TensorProto::UINT8, onnx::TensorProto::INT32};
  const int type = kind == Ints ? onnx::TensorProto::INT64 : kind == ZeroPoint ? r.pick(zero_types) : onnx::TensorProto::FLOAT;
  t->set_data_type(type);
  size_t rank = 0;
  switch (kind) {
    case Ints: rank = r.below(2); break;
    case Floats: rank = r.below(4); break;
    case Scale: case ZeroPoint: rank = r.chance(60) ? 0 : 1; break;
    case Kernel: rank = 3 + r.below(3); break;
  }
  int64_t n = 1;
  for (size_t k = 0; k < rank; ++k) {
    int64_t d = kind == Ints ? int64_t(r.below(6)) : kind == Kernel ? 1 + int64_t(r.below(3)) : int64_t(r.below(kind == Floats ? 4 : 5));
    t->add_dims(d);
    n *= d;
  }
  if (rank > 0 && r.chance(3)) t->set_dims(0, r.small_int());  // a lie about the data
  for (int64_t i = 0; i < n; ++i) {
    switch (kind) {
      case Ints: t->add_int64_data(r.small_int()); break;
      case Scale: t->add_float_data(scale_value(r)); break;
      case ZeroPoint: {  // int32_data holds int8 and uint8 too; sometimes out of the type's range
        const int64_t v = r.chance(90) ? int64_t(int8_t(r.u8())) + (type == onnx::TensorProto::UINT8 ? 128 : 0) : r.small_int();
        t->add_int32_data(int32_t(v));
        break;
      }
      default: t->add_float_data(float(int8_t(r.u8())) / 8);
    }
  }
  if (r.chance(3)) {  // external data, in or out of the scratch folder
    t->clear_int64_data();
    t->clear_int32_data();
    t->clear_float_data();
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    auto* kv = t->add_external_data();
    kv->set_key("location");
    static const std::array<const char*, 5> where = {"w.bin", "model.onnx.data", "../w.bin", "/etc/hostname", "nope"};
    kv->set_value(r.pick(where));
    if (r.chance(50)) {
      kv = t->add_external_data();
      kv->set_key(r.chance(50) ? "offset" : "length");
      kv->set_value(std::to_string(r.small_int()));
    }
  }
}

void add_attribute(Reader& r, onnx::NodeProto* n, const AttrSpec& spec) {
  auto* a = n->add_attribute();
  a->set_name(spec.name);
  switch (spec.kind) {
    case A::Int:
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(r.small_int());
      break;
    case A::Ints: {
      a->set_type(onnx::AttributeProto::INTS);
      size_t k = r.below(7);
      for (size_t i = 0; i < k; ++i) a->add_ints(r.small_int());
      break;
    }
    case A::Float:
      a->set_type(onnx::AttributeProto::FLOAT);
      a->set_f(float(int8_t(r.u8())) / 16);
      break;
    case A::Type:
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(r.chance(90) ? r.pick(kTypes) : r.small_int());
      break;
    case A::Tensor:
      a->set_type(onnx::AttributeProto::TENSOR);
      fill_tensor(r, a->mutable_t());
      break;
    case A::Window:
    case A::Pads: {
      a->set_type(onnx::AttributeProto::INTS);
      if (r.chance(10)) {  // anything, as A::Ints
        for (size_t i = 0, k = r.below(7); i < k; ++i) a->add_ints(r.small_int());
        break;
      }
      static const std::array<size_t, 6> window = {3, 3, 2, 1, 3, 4}, pads = {6, 6, 4, 2, 6, 3};
      const size_t k = spec.kind == A::Window ? r.pick(window) : r.pick(pads);
      for (size_t i = 0; i < k; ++i)
        a->add_ints(r.chance(95) ? int64_t(r.below(3)) + (spec.kind == A::Window ? 1 : 0) : r.small_int());
      break;
    }
    case A::Pick:
      a->set_type(onnx::AttributeProto::STRING);
      a->set_s(spec.choices[r.below(spec.choices.size())]);
      break;
    case A::Mode: {
      static const std::array<const char*, 8> modes = {"nearest", "linear", "constant", "reflect", "edge",
                                                         "SAME_UPPER", "VALID", "cubic"};
      a->set_type(onnx::AttributeProto::STRING);
      a->set_s(r.pick(modes));
      break;
    }
  }
}

std::string build_model(Reader& r) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* o = m.add_opset_import();
  o->set_version(7 + int64_t(r.below(11)));
  auto* g = m.mutable_graph();
  g->set_name("fuzz");
  std::vector<std::string> names;
  const size_t inputs = 1 + r.below(2);
  for (size_t i = 0; i < inputs; ++i) {
    auto* v = g->add_input();
    v->set_name("in" + std::to_string(i));
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(r.chance(80) ? onnx::TensorProto::FLOAT : r.pick(kTypes));
    auto* shape = tt->mutable_shape();
    const size_t rank = r.below(6);  // up to 5-D: 3-D Conv and pools
    for (size_t k = 0; k < rank; ++k) {
      int64_t d = r.dim();
      if (d < 0) shape->add_dim()->set_dim_param("N");
      else shape->add_dim()->set_dim_value(d);
    }
    names.push_back(v->name());
  }
  const size_t inits = r.below(5);
  for (size_t i = 0; i < inits; ++i) {
    auto* t = g->add_initializer();
    t->set_name("c" + std::to_string(i));
    fill_tensor(r, t);
    names.push_back(t->name());
  }
  const size_t nodes = 1 + r.below(12);
  for (size_t i = 0; i < nodes && !r.done(); ++i) {
    const OpSpec& spec = ops()[r.below(ops().size())];
    auto* n = g->add_node();
    n->set_op_type(spec.op);
    n->set_name("n" + std::to_string(i));
    const int in = spec.min_in + int(r.below(size_t(spec.max_in - spec.min_in + 1)));
    for (int k = 0; k < in; ++k) {
      if (r.chance(3)) n->add_input(r.chance(50) ? "" : "undefined");
      else n->add_input(names[r.below(names.size())]);
    }
    for (int k = 0; k < spec.outs; ++k) {
      std::string out = "t" + std::to_string(i) + "_" + std::to_string(k);
      n->add_output(out);
      names.push_back(out);
    }
    for (const AttrSpec& a : spec.attrs)
      if (r.chance(40)) add_attribute(r, n, a);
  }
  g->add_output()->set_name(names.back());
  if (r.chance(30)) g->add_output()->set_name(names[r.below(names.size())]);
  return m.SerializeAsString();
}

}  // namespace

void import_model(const uint8_t* data, size_t size) {
  // Both modes from one input: planning (small weights only) and running.
  import_and_plan(std::string_view(reinterpret_cast<const char*>(data), size), false);
  import_and_plan(std::string_view(reinterpret_cast<const char*>(data), size), true);
}

void shapes(const uint8_t* data, size_t size) {
  Reader r(data, size);
  const bool load_weights = r.chance(50);
  import_and_plan(build_model(r), load_weights);
}

std::string shapes_model(const uint8_t* data, size_t size) {
  Reader r(data, size);
  r.chance(50);
  return build_model(r);
}

PlannerInput planner_input(const uint8_t* data, size_t size) {
  Reader r(data, size);
  PlannerInput in;
  plan::DeviceProfile& dev = in.device;
  dev.name = "fuzz";
  static const std::array<int64_t, 9> aligns = {0, 1, 4, 16, 64, 128, 256, 3, 4096};
  dev.image_support = r.chance(80);
  dev.max_image2d_width = r.chance(90) ? int64_t(r.u16()) : r.small_int();
  dev.max_image2d_height = r.chance(90) ? int64_t(r.u16()) : r.small_int();
  dev.image2d_from_buffer = r.chance(50);
  dev.image_pitch_alignment = r.chance(90) ? r.pick(aligns) : r.small_int();
  dev.image_base_address_alignment = r.chance(90) ? r.pick(aligns) : r.small_int();
  dev.mem_base_addr_align = r.chance(90) ? r.pick(aligns) : r.small_int();
  std::vector<plan::UsageRecord>& recs = in.records;
  recs.resize(r.below(96));
  const int32_t steps = 1 + int32_t(r.below(64));
  for (size_t i = 0; i < recs.size(); ++i) {
    plan::UsageRecord& x = recs[i];
    x.name = "r" + std::to_string(i);
    x.first = r.chance(98) ? int32_t(r.below(size_t(steps))) : int32_t(r.small_int());
    x.last = r.chance(98) ? int32_t(int64_t(x.first) + int64_t(r.below(8))) : int32_t(r.small_int());
    x.bytes = r.chance(95) ? int64_t(r.u16()) * (1 + r.below(64)) : r.small_int();
    if (r.chance(30)) {
      x.storage = plan::Storage::Texture;
      x.extent.width = r.chance(95) ? 1 + int64_t(r.below(300)) : r.small_int();
      x.extent.height = r.chance(95) ? 1 + int64_t(r.below(300)) : r.small_int();
      x.extent.pixel_bytes = r.chance(95) ? (r.chance(50) ? 16 : 8) : r.small_int();
      x.bytes = r.chance(95) ? int64_t(uint64_t(x.extent.width) * uint64_t(x.extent.height) * uint64_t(x.extent.pixel_bytes))
                             : r.small_int();
    }
  }
  return in;
}

void planner(const uint8_t* data, size_t size) {
  const auto [dev, recs] = planner_input(data, size);
  for (const std::string& s : plan::strategy_names()) {
    plan::MemoryPlan p;
    try {
      p = plan::plan_memory(recs, dev, s);
    } catch (const plan::PlanError&) {
      continue;  // refused: the records or the device make no valid plan
    }
    try {
      plan::validate(p, recs, dev);
    } catch (const plan::PlanError& e) {
      broken(s + " made a plan the validator rejects: " + e.what());
    }
  }
  try {
    plan::lower_bound_bytes(recs);
  } catch (const plan::PlanError&) {
  }
}

void tensor(const uint8_t* data, size_t size) {
  try {
    HostTensor t = parse_tensor_pb(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.pb",
                                   scratch_dir());
    if (int64_t(t.bytes.size()) != t.count() * int64_t(element_size(t.dtype))) broken("tensor bytes do not match its shape");
    t.as_float();
  } catch (const Error&) {
  }
}

const std::vector<Target>& targets() {
  static const std::vector<Target> t = {
      {"import", import_model}, {"shapes", shapes}, {"planner", planner}, {"tensor", tensor}, {"run", run_model}};
  return t;
}

}  // namespace texplan::fuzz
