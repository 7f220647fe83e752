#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <iterator>
#include <optional>
#include <set>
#include <sstream>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/profile_report.h"
#include "cli/trace.h"
#include "cli/usage.h"
#include "device/device.h"
#include "graph/safe_file.h"
#include "import/onnx_import.h"
#include "lower/tuning.h"
#include "offload/offload.h"
#include "pipeline/pipeline.h"
#include "report/progress.h"
#include "report/report.h"
#include "runtime/cpu_executor.h"
#include "runtime/random_inputs.h"
#include "runtime/session.h"

namespace fs = std::filesystem;

namespace texplan::cli {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

namespace {

// The model folder's test_data_set_0/PREFIXn.pb: each a regular file inside
// the model's folder once links are followed (not a FIFO that would hang
// the run, nor a link to /dev/zero or to a file elsewhere).
std::vector<std::string> test_files(const std::string& model_file, const std::string& prefix,
                                    const std::string& model_name, const std::string& set_name = "test_data_set_0") {
  const fs::path dir = fs::path(model_file).parent_path();
  const fs::path set = dir / set_name;
  std::vector<std::string> files;
  std::error_code ec;
  for (int i = 0; fs::exists(fs::symlink_status(set / (prefix + std::to_string(i) + ".pb"), ec)); ++i) {
    const fs::path p = set / (prefix + std::to_string(i) + ".pb");
    const std::string what = model_name + ": test data";
    RegularFile(confined_to(dir, p, what), what);  // refuses before anything reads it
    files.push_back(p.string());
  }
  return files;
}

constexpr uint32_t kProbeSeed = 7;  // the second input's: any seed but --random-input's default

struct Timing {
  double min_ms = 0, median_ms = 0;
  double enqueue_ms = -1;  // median host time of the runs' loops over the nodes (-1: not measured)
};

// `run_once` returns the host time of its loop over the nodes, or -1.
template <class F>
Timing time_runs(int n, F&& run_once) {
  run_once();  // warm-up beyond the first (checked) run
  std::vector<double> ms, enqueue;
  report::Progress progress("timing runs", n);
  for (int i = 0; i < n; ++i) {
    progress.step(i);
    auto t0 = std::chrono::steady_clock::now();
    const double e = run_once();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    if (e >= 0) enqueue.push_back(e);
  }
  std::sort(ms.begin(), ms.end());
  std::sort(enqueue.begin(), enqueue.end());
  return {ms.front(), ms[ms.size() / 2], enqueue.empty() ? -1.0 : enqueue[enqueue.size() / 2]};
}

// Device time of one run spent in CLBlast's nodes and in texplan's (from
// profiling events; the median run of three). With --bench only: 4 more runs.
json time_partitions(const Graph& g, const PlanInput& pin, const plan::MemoryPlan& plan,
                     std::shared_ptr<runtime::Device> device, const std::vector<HostTensor>& inputs,
                     runtime::SessionOptions o) {
  o.profile = true;
  runtime::Session s(g, pin, plan, device, o);
  std::set<std::string> library(s.offloaded_nodes().begin(), s.offloaded_nodes().end());
  s.run(inputs);  // warm-up
  std::vector<std::pair<double, double>> runs;
  for (int i = 0; i < 3; ++i) {
    s.run(inputs);
    double lib = 0, own = 0;
    for (const auto& t : s.node_times()) (library.count(t.node + " (" + t.op + ")") ? lib : own) += t.ms;
    runs.push_back({lib + own, lib});
  }
  std::sort(runs.begin(), runs.end());
  return {{"clblast", runs[1].second}, {"texplan", runs[1].first - runs[1].second}};
}

// Milliseconds since this process started (/proc/self/stat's start time, in
// clock ticks since boot, against CLOCK_BOOTTIME), or -1 where unknown.
double process_age_ms() {
  std::ifstream in("/proc/self/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t comm_end = stat.rfind(')');  // the command name may hold spaces
  timespec now{};
  if (comm_end == std::string::npos || clock_gettime(CLOCK_BOOTTIME, &now) != 0) return -1;
  std::istringstream fields(stat.substr(comm_end + 1));
  std::string field;
  for (int k = 3; k <= 22 && fields >> field; ++k) {  // field 22: starttime
  }
  const long ticks = sysconf(_SC_CLK_TCK);
  char* end = nullptr;
  const double start = std::strtod(field.c_str(), &end);
  if (!fields || ticks <= 0 || end == field.c_str()) return -1;
  const double start_ms = start * 1000.0 / double(ticks);
  return double(now.tv_sec) * 1000.0 + double(now.tv_nsec) / 1e6 - start_ms;
}

}  // namespace

int run_command(const RunArgs& a) {
  const auto t_command = std::chrono::steady_clock::now();
  const double age_at_command_ms = process_age_ms();
  const std::string file = resolve_model_file(a.model);
  auto t_start = std::chrono::steady_clock::now();
  auto ms_text = [](double ms) {  // "12.3 ms", for --verbose
    std::ostringstream o;
    o << std::fixed << std::setprecision(1) << ms << " ms";
    return o.str();
  };
  auto since_ms = [&] {  // since the previous call
    auto now = std::chrono::steady_clock::now();
    const double ms = std::chrono::duration<double, std::milli>(now - t_start).count();
    t_start = now;
    return ms;
  };
  auto since = [&] { return ms_text(since_ms()); };
  ImportOptions import_options{.load_weights = true};
  apply_shape_settings(a.shapes, import_options);
  const std::string stem = fs::path(file).stem().string();
  if (a.random_input && !a.inputs.empty())
    throw Error(stem + ": --input and --random-input exclude each other: give input files or draw random ones");
  std::vector<std::string> input_files =
      a.random_input ? std::vector<std::string>{} : a.inputs.empty() ? test_files(file, "input_", stem) : a.inputs;
  std::vector<HostTensor> inputs;
  for (const auto& f : input_files) inputs.push_back(load_tensor_pb(f));
  // Input files fix the symbolic dimensions of the inputs they feed (in the
  // model's input order) where --dim and --input-shape leave them open.
  fix_open_inputs(read_input_signatures(file), inputs, import_options);
  CompiledModel m = import_model(file, import_options);  // the stages of pipeline/pipeline.h
  Graph& g = m.graph;
  report::verbose_log() << g.model_name << ": imported " << g.nodes.size() << " nodes with weights in " << since() << "\n";
  if (input_files.empty()) {
    // A bare .onnx runs on seeded random inputs, as onnxruntime_perf_test and trtexec do.
    if (a.check)
      throw Error(g.model_name + ": --check compares with test_data_set_0/output_*.pb, which belong to its own " +
                  "inputs, not to random ones: give the model's test data or drop --check");
    if (!a.random_input)
      std::cerr << "texplan: " << g.model_name << ": no input given and no test_data_set_0 beside the model: "
                << "random inputs, seed 0 (--random-input SEED for others, --input FILE.pb for yours)\n";
    inputs = runtime::random_inputs(g, a.random_input.value_or(0));
  }
  runtime::check_inputs(g, inputs);

  const bool on_cpu = a.device == "cpu";
  if (on_cpu && a.io == "device")
    throw Error(g.model_name + ": --io device needs an OpenCL device; --device cpu is the host's reference executor");
  if (on_cpu && (a.profile || !a.trace_path.empty()))
    throw Error(g.model_name + ": --profile and --trace time OpenCL kernels; --device cpu is the host's reference "
                "executor");
  std::shared_ptr<runtime::Device> device;
  plan::DeviceProfile profile;
  if (on_cpu) {
    profile = plan::DeviceProfile::load("pocl");
  } else {
    runtime::DeviceOptions device_options;
    device_options.program_cache = a.program_cache;
    device = runtime::open_device(a.device, device_options);
    profile = device->info().profile;
  }
  // Tf32 only where the device has tensor cores; elsewhere exact fp32, said once.
  runtime::Precision precision = runtime::parse_precision(a.precision);
  if (precision == runtime::Precision::Tf32 && (!device || !runtime::tf32_supported(*device))) {
    std::cerr << "texplan: warning: --precision tf32 needs an NVIDIA GPU with tensor cores (compute capability 8.0+); "
              << (device ? device->info().name : std::string("the reference executor")) << " runs exact fp32\n";
    precision = runtime::Precision::Fp32;
  }
  if (precision == runtime::Precision::Fp16 && on_cpu)
    throw Error(g.model_name + ": --precision fp16 stores tensors on an OpenCL device; --device cpu is the host's "
                "fp32 reference executor");
  if (precision == runtime::Precision::Fp16 && a.offload != "none")
    throw Error(g.model_name + ": --precision fp16 runs texplan's kernels only: CLBlast takes fp32 buffers "
                "(drop --offload)");
  // A quantized model's outputs move by a quantization step wherever a value
  // sits at a rounding boundary and another runtime summed in another order
  // (onnxruntime differs from itself by 1e-2 on a QDQ MobileNet-V2:
  // docs/exporters.md#quantized-models).
  const double tolerance = a.tolerance >= 0                          ? a.tolerance
                           : g.quantized_pairs > 0                   ? 5e-2
                           : precision == runtime::Precision::Fp32 ? 1e-4
                                                                     : 1e-2;
  CompileOptions co;
  co.strategy = a.strategy;
  co.textures = a.textures;
  co.texture_layouts = parse_layout_policy(a.texture_layout);
  co.optimize = a.optimize;
  co.patch = a.patch;
  co.session.precision = precision;
  if (a.recurrent != "auto") co.session.kernel_choice.recurrent = a.recurrent;
  // PatchWrite runs on OpenCL devices only (lower/patch_write.cpp).
  if (on_cpu && a.patch != "off")
    throw Error(g.model_name + ": --patch runs on OpenCL devices; --device cpu is the host's reference executor");
  lower_to_records(m, profile, on_cpu ? "cpu-executor" : device->info().type, co);
  const OptimizeReport& optimized = m.optimized;
  const PatchReport& patched = m.patching;
  const StorageAssignment& storage = m.storage;
  PlanInput& pin = m.usage;
  report::verbose_log() << g.model_name << ": optimized to " << optimized.nodes_after << " nodes in "
                << ms_text(m.times.optimize_ms) << "\n";
  for (const auto& f : storage.fallbacks) report::verbose_log() << "texture fallback: " << f << "\n";
  std::unique_ptr<lower::TuningCache> cache;
  if (!a.tuning_cache.empty()) cache = std::make_unique<lower::TuningCache>(a.tuning_cache);
  // Kernel choices from the cache; only `texplan tune` measures what it lacks.
  std::optional<lower::TuningScope> tuning;
  std::unique_ptr<report::Progress> tuning_progress;
  if (cache && device) {
    tuning.emplace(cache.get(), a.tune, *device);
    if (a.tune) {
      tuning_progress = std::make_unique<report::Progress>("tuning " + g.model_name, 0);
      // Saved after every shape: a tune cut short (a time limit, ^C) keeps
      // what it measured, and the next one measures only the rest.
      tuning->on_search = [&](int n, const std::string& key) {
        tuning_progress->step(n, key);
        cache->save();
      };
    }
  }
  // Offload: the partition adds its scratch records before planning.
  std::shared_ptr<offload::Offloader> offloader;
  // What every session of this run takes (the timed, profiled, guarded and measuring ones).
  auto session_options = [&] {
    runtime::SessionOptions o = co.session;
    o.offload = offloader;
    return o;
  };
  if (!on_cpu && a.offload != "none") {
    offload::OffloadOptions oo;
    oo.only = a.offload_only;
    if (!a.offload_reject.empty()) oo.reject = offload::parse_reject(a.offload_reject);
    offloader = std::make_shared<offload::Offloader>(offload::parse_mode(a.offload), device, cache.get(), std::move(oo));
    if (a.clblast_tune > 0) {
      if (!cache) throw Error("--clblast-tune needs --tuning-cache FILE to keep what it finds");
      if (offloader->report()["tuned_parameters"].get<std::string>().empty()) {
        std::cout << "clblast     " << offloader->tune(a.clblast_tune) << "\n";
        cache->save();
      }
    }
    offloader->partition(g, pin);
  }
  plan_records(m, profile, co);
  const plan::MemoryPlan& plan = m.plan;
  const std::string& strategy = m.strategy;
  if (offloader && offloader->needs_measurement()) {
    // Auto without a cached measurement: a measuring Session times each
    // candidate; then partition and plan again, without the scratch of the
    // nodes texplan keeps (its pools are freed first).
    {
      runtime::SessionOptions mo = session_options();
      runtime::Session measure(g, pin, plan, device, mo);
    }
    pin = usage_records(m, co);
    offloader->partition(g, pin);
    plan_records(m, profile, co);
  }
  if (on_cpu)  // host pools: the same limit as PoCL's, rather than an allocation that takes the machine down
    for (const auto& pool : plan.pools)
      if (profile.max_alloc_bytes > 0 && pool.bytes > profile.max_alloc_bytes)
        throw Error(g.model_name + ": pool " + std::to_string(pool.id) + " of " + human_bytes(pool.bytes) +
                    " exceeds the CPU executor's largest allocation, " + human_bytes(profile.max_alloc_bytes) +
                    " (profile " + profile.name + ")");
  report::verbose_log() << "device opened, " << pin.records.size() << " records planned with " << strategy << " and validated in "
                << ms_text(since_ms() - m.times.optimize_ms) << "\n";
  const int64_t lower_bound = m.lower_bound_bytes, buffer_lower_bound = m.buffer_lower_bound_bytes;

  int64_t weight_bytes = 0;
  for (const auto& t : g.tensors)
    if (t.is_constant) weight_bytes += t.bytes();

  json report{{"model", g.model_name}, {"strategy", strategy}, {"textures", to_string(storage.mode)},
              {"lower_bound_bytes", lower_bound}, {"buffer_lower_bound_bytes", buffer_lower_bound},
              {"plan_bytes", plan.total_bytes()}, {"buffer_bytes", plan.buffer_bytes()},
              {"texture_bytes", plan.texture_bytes()}, {"texture_tensors", int(pin.records.size()) - [&] {
                 int b = 0;
                 for (const auto& r : pin.records) b += r.storage == plan::Storage::Buffer;
                 return b;
               }()},
              {"layout_conversions", storage.conversions}, {"texture_fallbacks", storage.fallbacks},
              {"texture_layouts",
               {{to_string(TextureLayout::Rows), storage.textures_in(TextureLayout::Rows)},
                {to_string(TextureLayout::WideRows), storage.textures_in(TextureLayout::WideRows)}}},
              {"patching", report::patch_json(patched)}};
  std::vector<HostTensor> outputs;
  // --check: the outputs for a second, random input (insensitive_output),
  // or why that run failed (random values an input cannot take).
  std::vector<HostTensor> probe_outputs;
  std::string probe_error;
  auto probe = [&](const std::function<std::vector<HostTensor>(const std::vector<HostTensor>&)>& run) {
    if (!a.check) return;
    try {
      probe_outputs = run(runtime::random_inputs(g, kProbeSeed));
    } catch (const Error& e) {
      probe_error = e.what();
    }
  };
  Timing timing;
  int64_t activation_bytes = 0;
  int guard_violations = 0;
  std::vector<std::string> fallback, offloaded, tf32_nodes, split_k_nodes, half_fallback;
  json partition_ms;

  // From the process's start (the command's, where that is unknown) to the
  // first run's outputs on the host: import, optimization, planning, kernel
  // builds and the run itself.
  double first_inference_ms = -1;
  runtime::ProgramStats programs;  // the kernel programs built until then
  auto first_inference_done = [&] {
    const auto now = std::chrono::steady_clock::now();
    first_inference_ms =
        std::chrono::duration<double, std::milli>(now - t_command).count() + std::max(0.0, age_at_command_ms);
    if (device) programs = device->program_stats();
  };
  if (on_cpu) {
    runtime::CpuExecutor cpu(g, pin, plan);
    outputs = cpu.run(inputs);
    first_inference_done();
    probe([&](const std::vector<HostTensor>& in) { return cpu.run(in); });
    activation_bytes = cpu.activation_bytes();
    if (a.bench > 0) timing = time_runs(a.bench, [&] { return cpu.run(inputs), -1.0; });
    report["device"] = "cpu (reference executor)";
  } else {
    runtime::SessionOptions so = session_options();
    runtime::Session session(g, pin, plan, device, so);
    tuning_progress.reset();
    report::verbose_log() << "session on " << device->info().name << " (pools allocated, weights uploaded, kernels built) in "
                  << since() << "\n";
    // --io device: the inputs uploaded once; every run (the checked one
    // too) copies them and the outputs on the device only.
    std::vector<runtime::DeviceTensor> device_ins, device_outs;
    std::vector<const runtime::DeviceTensor*> in_ptrs;
    std::vector<runtime::DeviceTensor*> out_ptrs;
    if (a.io == "device") {
      for (size_t i = 0; i < inputs.size(); ++i) {
        const Tensor& t = g.tensors[g.inputs[i]];
        device_ins.emplace_back(device, t.dtype, t.shape).write(inputs[i]);
      }
      for (int t : g.outputs) device_outs.emplace_back(device, g.tensors[t].dtype, g.tensors[t].shape);
      for (auto& d : device_ins) in_ptrs.push_back(&d);
      for (auto& d : device_outs) out_ptrs.push_back(&d);
      session.run(in_ptrs, out_ptrs);
      for (auto& d : device_outs) outputs.push_back(d.read());
    } else {
      outputs = session.run(inputs);
    }
    first_inference_done();
    probe([&](const std::vector<HostTensor>& in) { return session.run(in); });
    report::verbose_log() << "first run in " << since() << "\n";
    activation_bytes = session.activation_bytes();
    weight_bytes = session.weight_bytes();
    fallback = session.fallback_nodes();
    half_fallback = session.half_fallback_nodes();
    offloaded = session.offloaded_nodes();
    tf32_nodes = session.tf32_nodes();
    split_k_nodes = session.split_k_nodes();
    if (a.bench > 0 && a.io == "device")
      timing = time_runs(a.bench, [&] { return session.run(in_ptrs, out_ptrs), session.last_enqueue_ms(); });
    else if (a.bench > 0)
      timing = time_runs(a.bench, [&] { return session.run(inputs), session.last_enqueue_ms(); });
    report["device"] = device->info().name + " (" + device->info().platform + ")";
    if (a.profile || !a.trace_path.empty()) {
      runtime::SessionOptions po = session_options();
      po.profile = true;
      runtime::Session profiled(g, pin, plan, device, po);
      profiled.run(inputs);  // warm-up
      std::vector<std::vector<runtime::NodeTime>> runs;
      std::vector<double> spans;
      for (int i = 0; i < 5; ++i) {
        profiled.run(inputs);
        runs.push_back(profiled.node_times());
        spans.push_back(profiled.last_device_span_ms());
      }
      report["profile"] = profile_report(runs, spans, runtime::measure_ceilings(*device));
      if (!a.trace_path.empty())
        write_file(a.trace_path, trace_json(runs, g.model_name, device->info().name).dump() + "\n", g.model_name);
    }
    if (offloader && a.bench > 0) partition_ms = time_partitions(g, pin, plan, device, inputs, session_options());
    if (a.guard) {
      runtime::SessionOptions go = session_options();
      go.guard = true;
      runtime::Session guarded(g, pin, plan, device, go);
      guarded.run(inputs);
      for (const auto& v : guarded.guard_violations()) {
        std::cerr << "guard: " << v << "\n";
        ++guard_violations;
      }
      report["guard_violations"] = guard_violations;
    }
  }
  report["first_inference_ms"] = first_inference_ms;
  if (device)
    report["programs"] = {{"compiled", programs.compiled},
                          {"from_cache", programs.from_cache},
                          {"cache_rejected", programs.rejected},
                          {"cache_dir", programs.cache_dir},
                          {"cache_problem", programs.cache_problem}};
  report["precision"] = runtime::precision_name(precision);
  report["io"] = a.io;
  // The shapes this run was specialized for (symbolic dims fixed by --dim,
  // --input-shape or the input files).
  report["input_shapes"] = json::object();
  for (int id : g.inputs) report["input_shapes"][g.tensors[id].name] = g.tensors[id].shape;
  report["tf32_nodes"] = tf32_nodes;
  // Marked activations are stored rounded only where tf32 ran.
  const int tf32_stored = tf32_nodes.empty() ? 0 : m.tf32_stored_tensors;
  report["tf32_stored_tensors"] = tf32_stored;
  report["split_k_nodes"] = split_k_nodes;  // products split over K for small grids
  report["optimization"] = report::optimize_json(optimized, {});
  report["raw_lower_bound_bytes"] = optimized.raw_lower_bound_bytes;
  if (tuning)
    report["tuning"] = {{"searched", tuning->stats().searched}, {"cached", tuning->stats().cached}, {"file", a.tuning_cache}};
  report["activation_bytes"] = activation_bytes;
  report["weight_bytes"] = weight_bytes;
  report["fallback_nodes"] = fallback;
  if (m.half_range.calibrated || !m.half_range.calibration_error.empty())
    report["half_range"] = {{"scaled_tensors", m.half_range.scaled_tensors},
                            {"min_exponent", m.half_range.min_exponent},
                            {"max_exponent", m.half_range.max_exponent},
                            {"rewritten_nodes", m.half_range.rewritten_nodes},
                            {"copied_weight_bytes", m.half_range.copied_weight_bytes},
                            {"out_of_range", m.half_range.out_of_range},
                            {"calibration_error", m.half_range.calibration_error}};
  report["half_fallback_nodes"] = half_fallback;  // fp16: on the CPU for want of a half-storage kernel
  report["offload"] = a.offload;
  report["offloaded_nodes"] = offloaded;
  if (offloader) {
    report["partition"] = offloader->report();
    if (!partition_ms.is_null()) report["partition_ms"] = partition_ms;
  }
  if (cache && cache->dirty()) cache->save();

  if (!a.output_dir.empty()) {
    fs::create_directories(a.output_dir);
    for (size_t i = 0; i < outputs.size(); ++i)
      save_tensor_pb(outputs[i], g.tensors[g.outputs[i]].name,
                     (fs::path(a.output_dir) / ("output_" + std::to_string(i) + ".pb")).string());
  }
  double rel_error = -1;
  std::vector<std::string> trivial_refs;  // reference outputs a wrong run could match
  std::vector<std::string> below_half;    // fp16: reference outputs smaller than half's normal range
  if (input_files.empty()) report["random_input_seed"] = a.random_input.value_or(0);
  if (a.check) {
    // An input from the model's test_data_set_K is checked against that set's outputs.
    std::string set_name = "test_data_set_0";
    if (!a.inputs.empty()) {
      const fs::path in_dir = fs::path(a.inputs[0]).parent_path();
      std::error_code ec;
      if (in_dir.filename().string().rfind("test_data_set_", 0) == 0 &&
          fs::equivalent(in_dir.parent_path().empty() ? "." : in_dir.parent_path(),
                         fs::path(file).parent_path().empty() ? "." : fs::path(file).parent_path(), ec))
        set_name = in_dir.filename().string();
    }
    std::vector<std::string> refs = test_files(file, "output_", g.model_name, set_name);
    if (refs.empty()) throw Error(g.model_name + ": --check needs " + set_name + "/output_0.pb beside the model");
    rel_error = 0;
    for (size_t i = 0; i < refs.size() && i < outputs.size(); ++i) {
      const HostTensor ref = load_tensor_pb(refs[i]);
      rel_error = std::max(rel_error, relative_error(outputs[i], ref));
      std::string why = trivial_reference(ref);
      if (why.empty() && i < probe_outputs.size()) why = insensitive_output(outputs[i], probe_outputs[i], tolerance);
      if (!why.empty())
        trivial_refs.push_back("output_" + std::to_string(i) + ".pb ('" + g.tensors[g.outputs[i]].name + "') is " + why);
      // An output scaled into half's range (optimize/half_range.h) holds them.
      if (precision == runtime::Precision::Fp16 && ref.dtype == DataType::Float32 && ref.count() > 0 &&
          i < g.outputs.size() && g.tensors[g.outputs[i]].storage_exponent == 0) {
        // Half's smallest normal is 2^-14: values far below it lose their
        // digits (and below 2^-24 become zero) in every tensor that holds them.
        float largest = 0;
        for (float v : ref.as_float()) largest = std::max(largest, std::fabs(v));
        if (largest > 0 && largest < 0x1p-14f) {
          std::ostringstream why;
          why << "output_" << i << ".pb's largest magnitude is " << std::scientific << std::setprecision(2) << largest
              << ", below half's normal range (6.10e-05): fp16 storage cannot hold values this small";
          below_half.push_back(why.str());
        }
      }
    }
    if (precision == runtime::Precision::Fp16) report["below_half_range"] = below_half;
    report["rel_error"] = rel_error;
    report["trivial_reference"] = trivial_refs;
    if (!probe_error.empty()) report["input_probe_error"] = probe_error;
    report["tolerance"] = tolerance;
  }
  if (a.bench > 0) {
    report["median_ms"] = timing.median_ms;
    report["min_ms"] = timing.min_ms;
    report["runs"] = a.bench;
    if (timing.enqueue_ms >= 0) report["enqueue_ms"] = timing.enqueue_ms;
  }

  std::cout << "model       " << g.model_name << " (" << g.nodes.size() << " nodes)\n";
  std::cout << "device      " << report["device"].get<std::string>() << "\n";
  std::cout << "precision   " << runtime::precision_name(precision);
  if (precision == runtime::Precision::Tf32)
    std::cout << ": " << tf32_nodes.size() << " node(s) on tensor cores, inputs rounded to tf32, fp32 sums; the rest exact"
              << (tf32_stored == 0 ? "" : "; " + std::to_string(tf32_stored) + " activation(s) stored rounded")
              << "\n";
  else if (precision == runtime::Precision::Fp16)
    std::cout << ": float activations and weights stored as IEEE half, fp32 arithmetic; inputs and outputs fp32 ("
              << half_fallback.size() << " node(s) on the CPU for want of a half-storage kernel)\n";
  else
    std::cout << " (exact)\n";
  if (const HalfRangeReport& h = m.half_range; h.calibrated || !h.calibration_error.empty()) {
    std::cout << "half range  ";
    if (!h.calibration_error.empty())
      std::cout << "not scaled: the calibration run failed: " << h.calibration_error << "\n";
    else if (h.scaled_tensors == 0)
      std::cout << "every activation within half's range (calibrated on a random input), none scaled\n";
    else
      std::cout << h.scaled_tensors << " activations stored times 2^" << h.min_exponent << " .. 2^" << h.max_exponent
                << " to fit half (calibrated on a random input; " << h.rewritten_nodes
                << " nodes absorb the scales)\n";
    for (const std::string& o : h.out_of_range) std::cout << "half range  left unscaled: " << o << "\n";
  }
  std::cout << "activations " << human_bytes(activation_bytes) << " allocated (" << activation_bytes
            << " B), lower bound " << human_bytes(lower_bound) << " (" << std::fixed << std::setprecision(3)
            << (lower_bound ? double(activation_bytes) / double(lower_bound) : 1.0) << "x), strategy " << strategy
            << "\n";
  if (storage.mode != TextureMode::None)
    std::cout << "textures    " << to_string(storage.mode) << ": " << report["texture_tensors"].get<int>()
              << " tensors (" << storage.textures_in(TextureLayout::WideRows) << " in wide rows), "
              << storage.conversions << " layout conversions; buffers "
              << human_bytes(plan.buffer_bytes()) << ", texture pools " << human_bytes(plan.texture_bytes())
              << ", total " << std::setprecision(3) << double(plan.total_bytes()) / double(std::max<int64_t>(1, buffer_lower_bound))
              << "x the buffer-only lower bound " << human_bytes(buffer_lower_bound) << "\n";
  std::cout << "optimized   " << optimized.nodes_before << " -> " << optimized.nodes_after << " nodes, lower bound "
            << human_bytes(optimized.raw_lower_bound_bytes) << " as imported -> "
            << human_bytes(optimized.lower_bound_bytes) << " (order " << optimized.order
            << (precision == runtime::Precision::Fp16 ? "; fp32 bytes, as the graph's tensors" : "") << ")\n";
  if (patched.mode != "off") report::print_patch_summary(report["patching"], std::cout);
  std::cout << "weights     " << human_bytes(weight_bytes)
            << (fallback.empty() ? "" : " on the device (the CPU fallback nodes read theirs from host memory)") << "\n";
  if (!fallback.empty()) {
    std::cout << "cpu fallback " << fallback.size() << " node(s):";
    const size_t shown = std::min<size_t>(fallback.size(), 10);
    for (size_t i = 0; i < shown; ++i) std::cout << (i ? ", " : " ") << fallback[i];
    if (shown < fallback.size()) std::cout << " and " << fallback.size() - shown << " more (--json lists all)";
    std::cout << "\n";
  }
  if (offloader) {
    offload::print_partition(report["partition"], std::cout);
    if (!partition_ms.is_null())
      std::cout << "partition   device time per run: clblast " << std::setprecision(3)
                << partition_ms["clblast"].get<double>() << " ms, texplan " << partition_ms["texplan"].get<double>()
                << " ms\n";
  }
  std::cout << "startup     first inference " << std::fixed << std::setprecision(2) << first_inference_ms / 1000
            << " s after the process started";
  if (device)
    std::cout << " (kernel programs: " << programs.from_cache << " from the program cache, " << programs.compiled
              << " compiled)";
  std::cout << "\n";
  if (device && !programs.cache_problem.empty())
    report::verbose_log() << "program cache: " << programs.cache_problem << "; programs are compiled each run\n";
  if (a.bench > 0) {
    std::cout << "latency     median " << std::setprecision(3) << timing.median_ms << " ms, min " << timing.min_ms
              << " ms over " << a.bench << " runs"
              << (a.io == "device" ? ", inputs and outputs in device memory" : ", host copies included");
    if (timing.enqueue_ms >= 0) std::cout << " (the host's loop over the nodes: median " << timing.enqueue_ms << " ms)";
    std::cout << "\n";
  }
  if (a.check)
    std::cout << "rel error   " << std::scientific << std::setprecision(2) << rel_error << " (tolerance " << tolerance
              << ", " << runtime::precision_name(precision) << (g.quantized_pairs > 0 ? ", quantized" : "") << ")\n";
  for (const auto& t : trivial_refs)
    std::cout << "check       reference " << t
              << (a.allow_trivial_reference ? ": accepted (--allow-trivial-reference)"
                                            : ": it cannot tell a right run from a wrong one")
              << "\n";
  for (const auto& t : below_half) std::cout << "check       " << t << "\n";
  if (a.guard) std::cout << "guard       " << (guard_violations ? "VIOLATIONS" : "clean") << "\n";
  if (tuning)
    std::cout << "tuning      " << tuning->stats().searched << " node shape(s) measured, " << tuning->stats().cached
              << " from " << a.tuning_cache << "\n";
  if (report.contains("profile")) print_profile(report["profile"], std::cout);
  if (!a.json_path.empty()) {
    write_output(a.json_path, report.dump(1) + "\n", g.model_name);
  }
  if (guard_violations) return kExitGuard;
  if (a.check && !(rel_error <= tolerance)) {
    std::cerr << "texplan: error: " << g.model_name << ": relative error " << rel_error << " exceeds " << tolerance
              << "\n";
    return kExitCheckFailed;
  }
  if (a.check && !trivial_refs.empty() && !a.allow_trivial_reference) {
    std::cerr << "texplan: error: " << g.model_name << ": reference " << trivial_refs.front()
              << ": --check cannot tell a right run from a wrong one against it (--allow-trivial-reference accepts it)\n";
    return kExitCheckFailed;
  }
  return 0;
}

}  // namespace texplan::cli
