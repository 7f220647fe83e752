#include "pipeline/pipeline.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <list>
#include <set>

#include "lower/lower.h"
#include "optimize/tf32_storage.h"
#include "reference/reference_ops.h"
#include "runtime/cpu_executor.h"
#include "runtime/random_inputs.h"

namespace texplan {

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

UsageOptions usage_options(const CompileOptions& options) {
  UsageOptions o;
  o.float_storage = runtime::float_storage(options.session.precision);  // fp16: 2-byte records
  return o;
}

// Calibrates on one seeded random input run through the reference: a
// network's scale comes from its weights far more than from its input's
// values. Planning without weights leaves every exponent 0.
// A graph the reference cannot run keeps plain half (the reason is reported).
HalfRangeReport calibrate_half_range(Graph& g) {
  for (const Tensor& t : g.tensors)
    if (t.is_constant && !t.has_data && t.dtype == DataType::Float32) return {};
  std::vector<float> largest;
  try {
    largest = reference::largest_magnitudes(g, runtime::random_inputs(g, 1));
  } catch (const Error& e) {
    HalfRangeReport r;
    r.calibration_error = e.what();
    return r;
  }
  return fit_half_range(g, largest);
}

}  // namespace

CompiledModel import_model(const std::string& model_path, const ImportOptions& import) {
  const auto t0 = std::chrono::steady_clock::now();
  CompiledModel m;
  m.graph = import_onnx(model_path, import);
  m.times.import_ms = ms_since(t0);
  return m;
}

void lower_to_records(CompiledModel& m, const plan::DeviceProfile& profile, const std::string& device_type,
                      const CompileOptions& options) {
  auto t0 = std::chrono::steady_clock::now();
  // The fused forms the device's kernels run (the CPU executor runs every one).
  OptimizeOptions oo = options.optimize;
  if (!device_type.empty() && device_type != "cpu-executor")
    oo.device_forms = lower::kernel_catalog().fused_for(device_type);
  // Half storage rescales programs by their operands' exponents: a gate's
  // computed operand has none, and a shuffled output's copied half goes
  // through no program (half_range.cpp); a row normalization's kernel
  // reads and writes fp32.
  if (options.session.precision == runtime::Precision::Fp16)
    oo.channel_gate_fusion = oo.channel_shuffle_fusion = oo.row_norm_fusion = false;
  // Each share optimizes a copy of the graph as imported; none is made
  // where optimization_shares would give none.
  std::unique_ptr<Graph> imported;
  if (options.optimization_shares && m.graph.nodes.size() <= kMaxShareNodes) imported = std::make_unique<Graph>(m.graph);
  m.times.shares_ms = ms_since(t0);
  t0 = std::chrono::steady_clock::now();
  m.optimized = optimize(m.graph, oo);
  // Before patching and storage, which copy tensors with their exponents.
  if (options.session.precision == runtime::Precision::Fp16 && !device_type.empty() && device_type != "cpu-executor")
    m.half_range = calibrate_half_range(m.graph);
  if (device_type == "cpu-executor" && options.patch != "off")
    throw Error(m.graph.model_name + ": patching runs on OpenCL devices, not on the host's reference executor");
  // Before storage and records: every later stage sees the patch steps.
  m.patching = apply_patching(m.graph, parse_patch(options.patch));
  // After patching, whose copies read tensors too; buffers only (texture
  // conversions would read them).
  if (options.session.precision == runtime::Precision::Tf32 && !device_type.empty() && device_type != "cpu-executor" &&
      parse_texture_mode(options.textures) == TextureMode::None)
    m.tf32_stored_tensors = mark_tf32_storage(m.graph);
  m.times.optimize_ms = ms_since(t0);
  if (imported) {
    t0 = std::chrono::steady_clock::now();
    m.optimization_shares = optimization_shares(*imported, oo, m.optimized);
    imported.reset();
    m.times.shares_ms += ms_since(t0);
  }
  t0 = std::chrono::steady_clock::now();
  const UsageOptions buffers = usage_options(options);
  m.buffer_lower_bound_bytes = plan::lower_bound_bytes(make_usage_records(m.graph, buffers).records);
  // Textures run on OpenCL devices only: the CPU executor plans buffers.
  const TextureMode mode = device_type == "cpu-executor" ? TextureMode::None : parse_texture_mode(options.textures);
  StorageOptions so;
  so.layouts = options.texture_layouts;
  so.element_bytes = int(stored_element_size(DataType::Float32, buffers.float_storage));
  m.storage = assign_storage(m.graph, profile, mode, lower::kernel_catalog(), so);
  m.usage = usage_records(m, options);
  m.times.records_ms = ms_since(t0);
}

PlanInput usage_records(const CompiledModel& m, const CompileOptions& options) {
  UsageOptions uo = usage_options(options);
  uo.storage = &m.storage;
  return make_usage_records(m.graph, uo);
}

void plan_records(CompiledModel& m, const plan::DeviceProfile& profile, const CompileOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  m.strategy = strategy_for(m.storage.mode, options.strategy);
  m.plan = plan::plan_memory(m.usage.records, profile, m.strategy);
  plan::validate(m.plan, m.usage.records, profile);
  m.lower_bound_bytes = plan::lower_bound_bytes(m.usage.records, profile);
  m.times.plan_ms = ms_since(t0);
}

CompiledModel compile(const std::string& model_path, const ImportOptions& import, const plan::DeviceProfile& profile,
                      const std::string& device_type, const CompileOptions& options) {
  CompiledModel m = import_model(model_path, import);
  lower_to_records(m, profile, device_type, options);
  plan_records(m, profile, options);
  return m;
}

namespace {

struct Entry {
  std::vector<Shape> shapes;
  CompiledModel model;
  std::unique_ptr<runtime::Session> session;
  double compile_ms = 0;
  int64_t runs = 0;
};

}  // namespace

struct ModelSession::Impl {
  std::string path, name;
  std::shared_ptr<runtime::Device> device;
  CompileOptions options;
  ImportOptions import;
  size_t cache_size = 4;
  std::vector<InputSignature> inputs, declared_outputs;
  std::list<Entry> cache;  // most recently used first
  int64_t compilations = 0;

  // The shapes a run with `given` specializes for, checked against what the
  // file declares and the dims fixed at construction.
  void check(const std::vector<HostTensor>& given) const {
    if (given.size() != inputs.size())
      throw Error(name + ": " + std::to_string(inputs.size()) + " input(s) expected, " + std::to_string(given.size()) +
                  " given");
    for (size_t i = 0; i < inputs.size(); ++i) {
      const InputSignature& sig = inputs[i];
      const Shape& s = given[i].shape;
      if (given[i].dtype != sig.dtype)
        throw Error(name + ": input '" + sig.name + "' is " + texplan::to_string(given[i].dtype) + ", the model takes " +
                    texplan::to_string(sig.dtype));
      if (sig.has_shape && s.size() != sig.dims.size())
        throw Error(name + ": input '" + sig.name + "' has shape " + to_string(s) + ", the model takes rank " +
                    std::to_string(sig.dims.size()) + " (" + sig.to_string() + ")");
      auto fixed = import.input_shapes.find(sig.name);
      for (size_t k = 0; k < s.size() && sig.has_shape; ++k) {
        int64_t want = sig.dims[k];
        if (fixed != import.input_shapes.end()) want = fixed->second[k];
        else if (want < 0 && import.dims.count(sig.symbols[k])) want = import.dims.at(sig.symbols[k]);
        if (want >= 0 && s[k] != want)
          throw Error(name + ": input '" + sig.name + "' has shape " + to_string(s) + ": dimension " + std::to_string(k) +
                      " must be " + std::to_string(want) + " (" + sig.to_string() + ")");
      }
    }
  }

  Entry& specialize(const std::vector<HostTensor>& given) {
    std::vector<Shape> shapes;
    for (const auto& t : given) shapes.push_back(t.shape);
    for (auto it = cache.begin(); it != cache.end(); ++it)
      if (it->shapes == shapes) {
        cache.splice(cache.begin(), cache, it);
        return cache.front();
      }
    check(given);
    const auto t0 = std::chrono::steady_clock::now();
    ImportOptions io = import;
    io.load_weights = true;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].is_static()) continue;
      io.input_shapes[inputs[i].name] = shapes[i];
    }
    // Dims named by --dim are now given whole by input_shapes.
    for (const auto& sig : inputs)
      if (!sig.is_static())
        for (const auto& sym : sig.symbols) io.dims.erase(sym);
    // Evict first: the old pools are freed before the new ones are allocated.
    while (cache.size() >= cache_size) cache.pop_back();
    Entry e;
    e.shapes = shapes;
    e.model = compile(path, io, device->info().profile, device->info().type, options);
    e.session = std::make_unique<runtime::Session>(e.model.graph, e.model.usage, e.model.plan, device, options.session);
    e.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    ++compilations;
    cache.push_front(std::move(e));
    return cache.front();
  }
};

ModelSession::ModelSession(std::string model_path, std::shared_ptr<runtime::Device> device, CompileOptions options,
                           ImportOptions import, size_t cache_size)
    : impl_(std::make_unique<Impl>()) {
  if (!device) throw Error(model_path + ": no device");
  if (cache_size < 1) throw Error(model_path + ": the specialization cache must hold at least 1 (cache_size 0)");
  impl_->path = resolve_model_file(model_path);
  impl_->device = std::move(device);
  impl_->options = std::move(options);
  impl_->import = std::move(import);
  impl_->cache_size = cache_size;
  ModelSignatures declared = read_signatures(impl_->path);
  impl_->inputs = std::move(declared.inputs);
  impl_->declared_outputs = std::move(declared.outputs);
  // Names that fix nothing are refused now, not at the first run.
  std::set<std::string> symbols, names;
  for (const auto& sig : impl_->inputs) {
    names.insert(sig.name);
    for (const auto& sym : sig.symbols)
      if (!sym.empty()) symbols.insert(sym);
  }
  auto list = [](const std::set<std::string>& s) {
    std::string l;
    for (const auto& x : s) l += (l.empty() ? "" : ", ") + x;
    return l.empty() ? std::string("none") : l;
  };
  const std::string stem = std::filesystem::path(impl_->path).stem().string();
  for (const auto& [dim, value] : impl_->import.dims)
    if (!symbols.count(dim))
      throw Error(stem + ": dims names '" + dim + "', which no input of the model has (it has: " + list(symbols) + ")");
  for (const auto& [input, shape] : impl_->import.input_shapes)
    if (!names.count(input))
      throw Error(stem + ": input_shapes names '" + input + "', which is no input of the model (inputs: " + list(names) +
                  ")");
  // A model without open dims is compiled now, so its errors come first.
  bool open = false;
  for (const auto& sig : impl_->inputs) {
    auto fixed = impl_->import.input_shapes.find(sig.name);
    if (fixed != impl_->import.input_shapes.end()) continue;
    for (size_t k = 0; k < sig.dims.size(); ++k)
      open = open || (sig.dims[k] < 0 && !impl_->import.dims.count(sig.symbols[k]));
    open = open || !sig.has_shape;
  }
  if (!open) {
    const auto t0 = std::chrono::steady_clock::now();
    Entry e;
    ImportOptions io = impl_->import;
    io.load_weights = true;
    e.model = compile(impl_->path, io, impl_->device->info().profile, impl_->device->info().type, impl_->options);
    for (int id : e.model.graph.inputs) e.shapes.push_back(e.model.graph.tensors[id].shape);
    e.session = std::make_unique<runtime::Session>(e.model.graph, e.model.usage, e.model.plan, impl_->device,
                                                   impl_->options.session);
    e.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    impl_->compilations = 1;
    impl_->cache.push_front(std::move(e));
  }
  impl_->name = impl_->cache.empty() ? std::filesystem::path(impl_->path).stem().string() : impl_->cache.front().model.graph.model_name;
}

ModelSession::~ModelSession() = default;

std::vector<HostTensor> ModelSession::run(const std::vector<HostTensor>& inputs) {
  Entry& e = impl_->specialize(inputs);
  runtime::check_inputs(e.model.graph, inputs);
  ++e.runs;
  return e.session->run(inputs);
}

const std::string& ModelSession::model_name() const { return impl_->name; }
const std::vector<InputSignature>& ModelSession::inputs() const { return impl_->inputs; }
const std::vector<InputSignature>& ModelSession::declared_outputs() const { return impl_->declared_outputs; }

std::vector<std::pair<std::string, Shape>> ModelSession::outputs() const {
  std::vector<std::pair<std::string, Shape>> out;
  if (impl_->cache.empty()) return out;
  const Graph& g = impl_->cache.front().model.graph;
  for (int id : g.outputs) out.emplace_back(g.tensors[id].name, g.tensors[id].shape);
  return out;
}

std::vector<DataType> ModelSession::output_dtypes() const {
  std::vector<DataType> out;
  if (impl_->cache.empty()) return out;
  const Graph& g = impl_->cache.front().model.graph;
  for (int id : g.outputs) out.push_back(g.tensors[id].dtype);
  return out;
}

std::vector<ModelSession::Specialization> ModelSession::specializations() const {
  std::vector<Specialization> out;
  for (const auto& e : impl_->cache)
    out.push_back({e.shapes, e.model.plan.total_bytes(), e.model.lower_bound_bytes, e.compile_ms, e.runs});
  return out;
}

int64_t ModelSession::compilations() const { return impl_->compilations; }

const runtime::Session& ModelSession::current() const {
  if (impl_->cache.empty())
    throw Error(impl_->name + ": no specialization yet: the model has symbolic dimensions; run it once first");
  return *impl_->cache.front().session;
}

const CompiledModel& ModelSession::current_model() const {
  if (impl_->cache.empty())
    throw Error(impl_->name + ": no specialization yet: the model has symbolic dimensions; run it once first");
  return impl_->cache.front().model;
}

}  // namespace texplan
