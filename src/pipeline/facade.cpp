// texplan::Session (include/texplan/texplan.h): the one-call API over
// ModelSession, which chains the stages.
#include "texplan/texplan.h"

#include <utility>

#include "device/device.h"
#include "pipeline/pipeline.h"

namespace texplan {

const char* version() { return TEXPLAN_VERSION; }  // the project version, set by CMake

namespace {

ValueInfo value_info(const InputSignature& s) { return {s.name, s.dtype, s.dims, s.symbols}; }

}  // namespace

struct Session::Impl {
  std::unique_ptr<ModelSession> session;
  std::vector<ValueInfo> inputs, outputs;
};

Session::Session(const std::string& model_path, const Options& options) : impl_(std::make_unique<Impl>()) {
  CompileOptions co;
  co.strategy = options.strategy;
  co.textures = to_string(parse_texture_mode(options.textures));  // refused here if unknown
  co.session.precision = runtime::parse_precision(options.precision);
  co.session.guard = options.guard;
  ImportOptions io;
  io.dims = options.dims;
  io.input_shapes = options.input_shapes;
  runtime::DeviceOptions device_options;
  device_options.program_cache = options.program_cache;
  impl_->session = std::make_unique<ModelSession>(model_path, runtime::open_device(options.device, device_options), co,
                                                  io, options.cache_size);
  for (const auto& s : impl_->session->inputs()) impl_->inputs.push_back(value_info(s));
  for (const auto& s : impl_->session->declared_outputs()) impl_->outputs.push_back(value_info(s));
}

Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

std::vector<HostTensor> Session::run(const std::vector<HostTensor>& inputs) { return impl_->session->run(inputs); }

std::map<std::string, HostTensor> Session::run(const std::map<std::string, HostTensor>& feeds) {
  const std::string& model = impl_->session->model_name();
  std::vector<HostTensor> ordered;
  for (const auto& in : impl_->inputs) {
    auto it = feeds.find(in.name);
    if (it == feeds.end()) throw Error(model + ": no value fed for input '" + in.name + "'");
    ordered.push_back(it->second);
  }
  for (const auto& [name, value] : feeds) {
    bool known = false;
    for (const auto& in : impl_->inputs) known = known || in.name == name;
    if (!known) throw Error(model + ": '" + name + "' is not an input of the model");
  }
  std::vector<HostTensor> y = impl_->session->run(ordered);
  std::map<std::string, HostTensor> out;
  const auto names = impl_->session->outputs();
  for (size_t k = 0; k < y.size() && k < names.size(); ++k) out.emplace(names[k].first, std::move(y[k]));
  return out;
}

const std::vector<ValueInfo>& Session::inputs() const { return impl_->inputs; }
const std::vector<ValueInfo>& Session::outputs() const { return impl_->outputs; }

MemoryReport Session::memory() const {
  const CompiledModel& m = impl_->session->current_model();
  const runtime::Session& s = impl_->session->current();
  MemoryReport r;
  r.activation_bytes = s.activation_bytes();
  r.lower_bound_bytes = m.lower_bound_bytes;
  r.buffer_lower_bound_bytes = m.buffer_lower_bound_bytes;
  r.weight_bytes = s.weight_bytes();
  r.pools = int(m.plan.pools.size());
  r.strategy = m.plan.strategy;
  return r;
}

std::string Session::device_name() const { return impl_->session->current().device().info().name; }

std::string Session::precision() const {
  return runtime::precision_name(impl_->session->current().precision());
}

int64_t Session::compilations() const { return impl_->session->compilations(); }

std::vector<std::string> Session::guard_violations() const {
  std::vector<std::string> out;
  for (const auto& v : impl_->session->current().guard_violations()) out.push_back(v.to_string());
  return out;
}

HostTensor load_tensor(const std::string& pb_path) { return load_tensor_pb(pb_path); }

void save_tensor(const HostTensor& tensor, const std::string& name, const std::string& pb_path) {
  save_tensor_pb(tensor, name, pb_path);
}

}  // namespace texplan
