// Session's public methods: construction (the plan checked, then pools and steps), the two runs' copies in
// and out (host memory or DeviceTensors), precision names and the accessors; Session::Impl is in session_impl.h.
#include "runtime/session.h"

#include <chrono>
#include <cstring>
#include <exception>

#include "runtime/session_impl.h"

namespace texplan::runtime {

std::string GuardViolation::to_string() const {
  return "node " + node + " changed bytes [" + std::to_string(begin) + ", " + std::to_string(end) + ") of pool " +
         std::to_string(pool) + " holding live tensor " + tensor;
}

std::ostream& operator<<(std::ostream& o, const GuardViolation& v) { return o << v.to_string(); }

Session::Session(const Graph& g, const PlanInput& pin, const plan::MemoryPlan& plan, const std::string& spec,
                 SessionOptions options)
    : Session(g, pin, plan, open_device(spec), options) {}

Session::Session(const Graph& g, const PlanInput& pin, const plan::MemoryPlan& plan, std::shared_ptr<Device> device,
                 SessionOptions options)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.dev = std::move(device);
  m.opt = options;
  m.graph.model_name = g.model_name;
  try {
    lower::check_kernel_choice(options.kernel_choice);
  } catch (const Error& e) {
    throw Error(m.model() + ": " + e.what());
  }
  const bool tf32 = tf32_supported(*m.dev) || options.kernel_choice.tf32_emulation;
  m.precision = options.precision == Precision::Tf32 && tf32 ? Precision::Tf32
                : options.precision == Precision::Fp16      ? Precision::Fp16
                                                            : Precision::Fp32;
  m.half = m.precision == Precision::Fp16;
  m.q = options.profile ? m.dev->profiling_queue() : m.dev->queue();
  m.pin = pin;
  m.plan = plan;
  if (plan.placements.size() != pin.records.size())
    throw Error(m.model() + ": the plan places " + std::to_string(plan.placements.size()) + " records, the graph has " +
                std::to_string(pin.records.size()));
  if (pin.record_of_tensor.size() != g.tensors.size())
    throw Error(m.model() + ": the usage records describe another graph");
  if (m.half && options.offload)
    throw Error(m.model() + ": --precision fp16 runs texplan's kernels only: the offloaded library (CLBlast) takes "
                            "fp32 buffers (drop --offload, or run fp32)");
  // Buffer records must be as large as the tensors are stored: fp32 records
  // under an fp16 session waste half, fp16 records under fp32 overflow.
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    const int r = pin.record_of_tensor[t];
    if (r < 0 || m.root(int(t)) != int(t) || g.tensors[t].dtype != DataType::Float32 ||
        pin.records[size_t(r)].storage != plan::Storage::Buffer || pin.records[size_t(r)].bytes == m.stored(g.tensors[t]))
      continue;
    throw Error(m.model() + ": usage record " + pin.records[size_t(r)].name + " has " +
                std::to_string(pin.records[size_t(r)].bytes) + " bytes, the tensor is stored in " +
                std::to_string(m.stored(g.tensors[t])) + " with precision " + precision_name(m.precision) +
                " (make the usage records with UsageOptions::float_storage = float_storage(precision))");
  }
  m.keep_metadata(g);
  m.find_scratch_records(g);
  m.allocate_pools();
  m.prepare(g);
  m.keep_host_constants(g);
}

Session::~Session() = default;

Precision Session::precision() const { return impl_->precision; }

Precision parse_precision(const std::string& s) {
  if (s == "fp32") return Precision::Fp32;
  if (s == "tf32") return Precision::Tf32;
  if (s == "fp16") return Precision::Fp16;
  throw Error("unknown precision '" + s + "': fp32, tf32 or fp16");
}

const char* precision_name(Precision p) {
  return p == Precision::Tf32 ? "tf32" : p == Precision::Fp16 ? "fp16" : "fp32";
}

DataType float_storage(Precision p) { return p == Precision::Fp16 ? DataType::Float16 : DataType::Float32; }

namespace {
// Input writes and output reads are asynchronous: when anything in a run
// throws (a lost device, a failed enqueue), wait for the queue before the
// caller's host memory may go, or the device would use freed memory.
struct DrainOnThrow {
  cl_command_queue q;
  int pending = std::uncaught_exceptions();
  ~DrainOnThrow() {
    if (std::uncaught_exceptions() > pending) clFinish(q);
  }
};
}  // namespace

std::vector<HostTensor> Session::run(const std::vector<HostTensor>& inputs) {
  Impl& m = *impl_;
  const Graph& g = m.graph;
  if (inputs.size() != g.inputs.size())
    throw Error(m.model() + ": expected " + std::to_string(g.inputs.size()) + " inputs, got " +
                std::to_string(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i)
    m.check_input(i, inputs[i].dtype, inputs[i].shape, int64_t(inputs[i].bytes.size()));
  auto start = std::chrono::steady_clock::now();
  cl_command_queue q = m.q;
  std::vector<HostTensor> outs;
  DrainOnThrow drain{q};
  m.begin_run();
  // fp16: Float32 inputs converted here, outputs read as half and converted
  // after the queue is done; both buffers live until then.
  std::vector<std::vector<uint8_t>> halves(inputs.size() + g.outputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    int t = g.inputs[i];
    if (m.pin.record_of_tensor[m.root(t)] < 0 || inputs[i].bytes.empty()) continue;  // unused input
    lower::Location l = m.locate(g, t);
    if (m.stored_as_half(g.tensors[t])) halves[i] = to_half(inputs[i]);
    const std::vector<uint8_t>& value = halves[i].empty() ? inputs[i].bytes : halves[i];
    m.check(clEnqueueWriteBuffer(q, l.mem, CL_FALSE, size_t(l.byte_offset), value.size(), value.data(), 0, nullptr,
                                 nullptr),
            m.model() + ": writing input " + g.tensors[t].name);
  }
  m.inputs_written();
  m.run_steps();

  outs.reserve(g.outputs.size());  // reads land in these buffers until clFinish
  std::vector<std::pair<size_t, const void*>> staged;  // outputs read into pinned memory: index, where
  for (int t : g.outputs) {
    const Tensor& meta = g.tensors[t];
    if (g.tensors[m.root(t)].is_constant) {
      outs.push_back(g.tensors[m.root(t)].value);
      outs.back().shape = meta.shape;
      continue;
    }
    outs.emplace_back(meta.dtype, meta.shape);
    if (outs.back().bytes.empty()) continue;
    lower::Location l = m.locate(g, t);
    size_t bytes = outs.back().bytes.size();
    void* into = outs.back().bytes.data();
    if (m.stored_as_half(meta)) {
      std::vector<uint8_t>& h = halves[inputs.size() + outs.size() - 1];
      h.resize(bytes /= 2);
      into = h.data();
    } else if (void* pinned = m.stage(t, bytes)) {
      staged.emplace_back(outs.size() - 1, into = pinned);
    }
    m.check(clEnqueueReadBuffer(q, l.mem, CL_FALSE, size_t(l.byte_offset), bytes, into, 0, nullptr, nullptr),
            m.model() + ": reading output " + meta.name);
  }
  m.end_run(start);
  for (auto [k, pinned] : staged) std::memcpy(outs[k].bytes.data(), pinned, outs[k].bytes.size());
  for (size_t k = 0; k < outs.size(); ++k)
    if (!halves[inputs.size() + k].empty())
      from_half(halves[inputs.size() + k], outs[k], g.tensors[g.outputs[k]].storage_exponent);
  return outs;
}

void Session::run(const std::vector<const DeviceTensor*>& inputs, const std::vector<DeviceTensor*>& outputs) {
  Impl& m = *impl_;
  const Graph& g = m.graph;
  if (inputs.size() != g.inputs.size() || outputs.size() != g.outputs.size())
    throw Error(m.model() + ": expected " + std::to_string(g.inputs.size()) + " inputs and " +
                std::to_string(g.outputs.size()) + " outputs, got " + std::to_string(inputs.size()) + " and " +
                std::to_string(outputs.size()));
  auto on_this_device = [&](const DeviceTensor* d, int t, const char* role) {
    if (!d) throw Error(m.model() + ": " + role + " " + g.tensors[t].name + " is null");
    if (&d->device() != m.dev.get())
      throw Error(m.model() + ": " + role + " " + g.tensors[t].name + " lives on " + d->device().info().name +
                  ", not on this session's device " + m.dev->info().name);
  };
  for (size_t i = 0; i < inputs.size(); ++i) {
    on_this_device(inputs[i], g.inputs[i], "input");
    m.check_input(i, inputs[i]->dtype(), inputs[i]->shape(), inputs[i]->bytes());
  }
  for (size_t k = 0; k < outputs.size(); ++k) {
    const Tensor& t = g.tensors[g.outputs[k]];
    on_this_device(outputs[k], g.outputs[k], "output");
    if (outputs[k]->dtype() != t.dtype || outputs[k]->shape() != t.shape)
      throw Error(m.model() + ": output " + t.name + " is " + to_string(t.dtype) + " " + to_string(t.shape) +
                  ", the device tensor given for it " + to_string(outputs[k]->dtype()) + " " +
                  to_string(outputs[k]->shape()));
  }
  auto start = std::chrono::steady_clock::now();
  cl_command_queue q = m.q;
  DrainOnThrow drain{q};
  m.begin_run();
  for (size_t i = 0; i < inputs.size(); ++i) {
    int t = g.inputs[i];
    if (m.pin.record_of_tensor[m.root(t)] < 0 || inputs[i]->bytes() == 0) continue;  // unused input
    lower::Location l = m.locate(g, t);
    if (m.stored_as_half(g.tensors[t])) {
      m.convert_on_device(inputs[i]->buffer(), 0, l.mem, l.byte_offset / 2, g.tensors[t].shape, true, 0,
                          m.model() + ": converting input " + g.tensors[t].name + " to half");
      continue;
    }
    m.check(clEnqueueCopyBuffer(q, inputs[i]->buffer(), l.mem, 0, size_t(l.byte_offset), size_t(inputs[i]->bytes()),
                                0, nullptr, nullptr),
            m.model() + ": copying input " + g.tensors[t].name);
  }
  m.inputs_written();
  m.run_steps();
  for (size_t k = 0; k < outputs.size(); ++k) {
    const int t = g.outputs[k];
    const int64_t bytes = outputs[k]->bytes();
    if (bytes == 0) continue;
    const std::string what = m.model() + ": copying output " + g.tensors[t].name;
    if (g.tensors[m.root(t)].is_constant)  // the host keeps the value of constants that are outputs
      m.check(clEnqueueWriteBuffer(q, outputs[k]->buffer(), CL_FALSE, 0, size_t(bytes),
                                   g.tensors[m.root(t)].value.bytes.data(), 0, nullptr, nullptr),
              what);
    else if (m.stored_as_half(g.tensors[t])) {
      lower::Location l = m.locate(g, t);
      m.convert_on_device(l.mem, l.byte_offset / 2, outputs[k]->buffer(), 0, g.tensors[t].shape, false,
                          g.tensors[t].storage_exponent, what);
    } else {
      lower::Location l = m.locate(g, t);
      m.check(clEnqueueCopyBuffer(q, l.mem, outputs[k]->buffer(), size_t(l.byte_offset), 0, size_t(bytes), 0,
                                  nullptr, nullptr),
              what);
    }
  }
  m.end_run(start);
}

double Session::last_run_ms() const { return impl_->last_ms; }
double Session::last_enqueue_ms() const { return impl_->last_enqueue_ms; }
double Session::last_device_span_ms() const { return impl_->last_span_ms; }
int64_t Session::activation_bytes() const { return impl_->pool_bytes; }
int64_t Session::weight_bytes() const { return impl_->weight_bytes; }
int Session::kernel_launches() const { return impl_->launches; }
const std::vector<std::string>& Session::fallback_nodes() const { return impl_->fallback; }
const std::vector<std::string>& Session::offloaded_nodes() const { return impl_->offloaded; }
const std::vector<std::string>& Session::tf32_nodes() const { return impl_->tf32_nodes; }
const std::vector<std::string>& Session::split_k_nodes() const { return impl_->split_k_nodes; }
const std::vector<std::string>& Session::half_fallback_nodes() const { return impl_->half_fallback; }
const std::vector<GuardViolation>& Session::guard_violations() const { return impl_->violations; }
const std::vector<NodeTime>& Session::node_times() const { return impl_->times; }
const Device& Session::device() const { return *impl_->dev; }

}  // namespace texplan::runtime
