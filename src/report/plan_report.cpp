#include "report/report.h"

#include <chrono>
#include <cstdio>
#include <iomanip>
#include <sstream>

#include "device/device.h"
#include "import/onnx_import.h"
#include "offload/offload.h"
#include "pipeline/pipeline.h"
#include "report/progress.h"

namespace texplan::report {

namespace {
std::string ms_text(double ms) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f ms", ms);
  return b;
}
}  // namespace

json plan_report(const std::string& model, const std::vector<plan::UsageRecord>& recs,
                 const plan::DeviceProfile& dev, const PlanOptions& opt) {
  json r;
  r["model"] = model;
  r["target"] = dev.name;
  r["textures"] = to_string(resolve(opt.textures, dev));
  r["records"] = recs.size();
  int64_t textures = 0;
  for (const auto& x : recs) textures += x.storage == plan::Storage::Texture;
  r["texture_records"] = textures;
  // Textures at their footprint on `dev` (row pitch * height): the bound of
  // what the texture plans can reach.
  const int64_t lb = plan::lower_bound_bytes(recs, dev);
  r["lower_bound_bytes"] = lb;
  r["texture_lower_bound_bytes"] = lb;
  std::vector<std::string> names = opt.strategies.empty() ? plan::strategy_names() : opt.strategies;
  r["strategies"] = json::array();
  Progress progress("planning " + std::to_string(recs.size()) + " tensors", int64_t(names.size()));
  for (const auto& name : names) {
    progress.step(int64_t(r["strategies"].size()), name);
    json s;
    s["name"] = name;
    try {
      auto t0 = std::chrono::steady_clock::now();
      plan::MemoryPlan p = plan::plan_memory(recs, dev, name);
      double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      s["plan_ms"] = ms;
      verbose_log() << name << ": " << human_bytes(p.total_bytes()) << " in " << p.pools.size() << " pool(s), planned in "
                    << ms_text(ms) << "\n";
      s["total_bytes"] = p.total_bytes();
      s["buffer_bytes"] = p.buffer_bytes();
      s["texture_bytes"] = p.texture_bytes();
      s["ratio"] = lb > 0 ? double(p.total_bytes()) / double(lb) : 1.0;
      try {
        plan::validate(p, recs, dev);
        s["valid"] = true;
      } catch (const plan::PlanError& e) {
        s["valid"] = false;
        s["error"] = e.what();
      }
      s["pools"] = json::array();
      for (const auto& pool : p.pools) {
        json j{{"id", pool.id}, {"kind", plan::to_string(pool.kind)}, {"bytes", pool.bytes}};
        if (pool.kind == plan::Storage::Texture) j["width"] = pool.width, j["height"] = pool.height;
        s["pools"].push_back(j);
      }
      if (opt.include_tensors) {
        s["tensors"] = json::array();
        for (size_t i = 0; i < recs.size(); ++i) {
          const auto& x = recs[i];
          const auto& pl = p.placements[i];
          json t{{"name", x.name},   {"bytes", x.bytes},   {"first", x.first},   {"last", x.last},
                 {"storage", plan::to_string(x.storage)}, {"pool", pl.pool},   {"offset", pl.offset},
                 {"op", x.op}};
          if (x.storage == plan::Storage::Texture) {
            t["width"] = x.extent.width, t["height"] = x.extent.height;
            if (pl.view) t["row_pitch"] = pl.row_pitch;
          }
          s["tensors"].push_back(t);
        }
      }
    } catch (const plan::PlanError& e) {
      s["valid"] = false;
      s["error"] = e.what();
      s["skipped"] = true;
    }
    if (name == "naive" && s.contains("total_bytes")) r["naive_bytes"] = s["total_bytes"];
    r["strategies"].push_back(s);
  }
  return r;
}

void print_plan_table(const json& r, std::ostream& out) {
  if (r.contains("partition")) offload::print_partition(r["partition"], out);
  if (r.contains("optimization")) print_optimize_summary(r["optimization"], out);
  if (r.contains("patching")) print_patch_summary(r["patching"], out);
  out << "model " << r["model"].get<std::string>() << ": " << r["records"] << " tensors to place";
  if (r["texture_records"].get<int64_t>() > 0) out << " (" << r["texture_records"] << " as textures)";
  out << ", target " << r["target"].get<std::string>();
  if (r.value("precision", "fp32") == "fp16") out << ", fp16 storage (float tensors as 2-byte halves)";
  out << "\n";
  if (r.contains("raw_lower_bound_bytes") && r["raw_lower_bound_bytes"] != r["lower_bound_bytes"])
    out << "lower bound as imported: " << human_bytes(r["raw_lower_bound_bytes"]) << "\n";
  int64_t lb = r["lower_bound_bytes"];
  out << "lower bound: " << human_bytes(lb) << " (" << lb << " B)";
  if (r["texture_records"].get<int64_t>() > 0)
    out << ", textures at their footprint on " << r["target"].get<std::string>();
  out << "\n";
  if (r.contains("buffer_lower_bound_bytes") &&
      (r["texture_records"].get<int64_t>() > 0 || r["buffer_lower_bound_bytes"] != r["lower_bound_bytes"])) {
    const int64_t blb = r["buffer_lower_bound_bytes"];
    std::ostringstream ratio;
    ratio << std::fixed << std::setprecision(3) << double(lb) / double(std::max<int64_t>(1, blb));
    out << "buffer-only lower bound: " << human_bytes(blb) << " (texture bound " << ratio.str() << "x it; "
        << r["layout_conversions"].get<int>() << " layout conversions";
    if (r.contains("texture_layouts"))
      for (const auto& [name, count] : r["texture_layouts"].items())
        if (count.get<int>() > 0) out << "; " << count.get<int>() << " " << name;
    out << ")\n";
  }
  out << std::left << std::setw(20) << "strategy" << std::right << std::setw(14) << "total" << std::setw(16)
      << "bytes" << std::setw(12) << "buffers" << std::setw(12) << "textures" << std::setw(9) << "ratio"
      << std::setw(7) << "pools" << std::setw(11) << "plan ms" << "  valid\n";
  for (const auto& s : r["strategies"]) {
    out << std::left << std::setw(20) << s["name"].get<std::string>() << std::right;
    if (s.contains("total_bytes")) {
      std::ostringstream ratio, ms;
      ratio << std::fixed << std::setprecision(3) << s["ratio"].get<double>();
      ms << std::fixed << std::setprecision(2) << s["plan_ms"].get<double>();
      out << std::setw(14) << human_bytes(s["total_bytes"]) << std::setw(16) << s["total_bytes"].get<int64_t>()
          << std::setw(12) << human_bytes(s["buffer_bytes"]) << std::setw(12) << human_bytes(s["texture_bytes"])
          << std::setw(9) << ratio.str() << std::setw(7) << s["pools"].size() << std::setw(11) << ms.str() << "  "
          << (s["valid"].get<bool>() ? "yes" : "NO: " + s["error"].get<std::string>()) << "\n";
    } else {
      out << "  skipped: " << s["error"].get<std::string>() << "\n";
    }
  }
}

json plan_model(const std::string& model_path, const plan::DeviceProfile& dev, const PlanOptions& opt) {
  CompileOptions co;
  co.textures = to_string(opt.textures);
  co.texture_layouts = opt.texture_layouts;
  co.optimize = opt.optimize;
  co.optimization_shares = opt.optimization_shares;
  co.patch = opt.patch;
  co.session.precision = opt.float_storage == DataType::Float16 ? runtime::Precision::Fp16 : runtime::Precision::Fp32;
  // Up to the usage records (pipeline/pipeline.h): a profile, no device.
  CompiledModel m = import_model(model_path, opt.import);
  lower_to_records(m, dev, dev.device_type, co);  // the fused forms the target's kernels run
  const Graph& g = m.graph;
  PlanInput& in = m.usage;
  // Offload: the partition's scratch records are planned with the tensors.
  const auto t_partition = std::chrono::steady_clock::now();
  std::unique_ptr<offload::Offloader> offloader;
  if (opt.offload != "none") {
    std::shared_ptr<runtime::Device> device;  // the device runtime::load_profile("opencl") read
    if (opt.offload_on_device) {
      for (const auto& d : runtime::list_devices())
        if (!device && d.type == "gpu") device = runtime::open_device("opencl:" + std::to_string(d.index));
      if (!device) device = runtime::open_device("pocl");
    }
    offloader = std::make_unique<offload::Offloader>(offload::parse_mode(opt.offload), device, nullptr);
    offloader->partition(g, in);
  }
  const double partition_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_partition).count();
  verbose_log() << g.model_name << ": imported " << m.optimized.nodes_before << " nodes (" << g.nodes.size()
                << " optimized), " << g.tensors.size() << " tensors in "
                << ms_text(m.times.import_ms + m.times.optimize_ms) << "; " << in.records.size()
                << " usage records over " << in.steps << " steps in " << ms_text(m.times.records_ms + partition_ms)
                << "\n";
  // Per-tensor placements cost about 1 KB of JSON per tensor and strategy:
  // beyond this many the report keeps the totals (as for random graphs).
  constexpr size_t kMaxReportTensors = 200000;
  PlanOptions o = opt;
  if (in.records.size() > kMaxReportTensors) o.include_tensors = false;
  json r;
  try {
    r = plan_report(g.model_name, in.records, dev, o);
  } catch (const plan::PlanError& e) {
    throw Error(g.model_name + ": " + e.what());
  }
  if (opt.include_tensors && !o.include_tensors) r["tensors_omitted"] = true;
  const StorageAssignment& storage = m.storage;
  const int64_t buffer_lower_bound = m.buffer_lower_bound_bytes;
  r["layout_conversions"] = storage.conversions;
  for (TextureLayout l : {TextureLayout::Rows, TextureLayout::WideRows})
    r["texture_layouts"][to_string(l)] = storage.textures_in(l);
  r["buffer_lower_bound_bytes"] = buffer_lower_bound;
  for (auto& s : r["strategies"])
    if (s.contains("total_bytes"))
      s["ratio_to_buffer_lower_bound"] = double(s["total_bytes"].get<int64_t>()) / double(std::max<int64_t>(1, buffer_lower_bound));
  r["texture_fallbacks"] = storage.fallbacks;
  r["nodes"] = g.nodes.size();
  r["optimization"] = optimize_json(m.optimized, m.optimization_shares);
  r["precision"] = opt.float_storage == DataType::Float16 ? "fp16" : "fp32";
  // The optimizations' figures count fp32 bytes: with fp16 the bound as
  // imported is not comparable to the planned one.
  if (opt.float_storage == DataType::Float32) r["raw_lower_bound_bytes"] = m.optimized.raw_lower_bound_bytes;
  r["patching"] = patch_json(m.patching);
  if (offloader) {
    r["partition"] = offloader->report();
    r["partition"]["scratch_sizing"] = opt.offload_on_device
                                           ? "exact: CLBlast sized its GEMM scratch on the device"
                                           : "GEMM scratch as an upper bound (no device: --target opencl asks CLBlast)";
    r["offloaded_nodes"] = r["partition"]["offloaded_nodes"];
  }
  int64_t weights = 0;
  for (const auto& t : g.tensors)
    if (t.is_constant) weights += t.bytes();
  r["weight_bytes"] = weights;
  return r;
}

}  // namespace texplan::report
