// make bench: memory planning over the model zoo (every strategy against the
// lower bound), planning time from 1k to 1M tensors, and latency on PoCL
// against onnxruntime (when bench/peers is installed), as tables and JSON.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <optional>
#include <thread>

#include "cli/commands.h"
#include "device/device.h"
#include "import/onnx_import.h"
#include "lower/ops.h"
#include "lower/tuning.h"
#include "pipeline/pipeline.h"
#include "report/progress.h"
#include "report/report.h"
#include "runtime/session.h"

namespace fs = std::filesystem;
using namespace texplan;
using cli::json;

namespace {

json plan_zoo(const std::string& models, const plan::DeviceProfile& dev, TextureMode textures) {
  json rows = json::array();
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(models))
    if (e.is_directory()) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  report::PlanOptions opt;
  opt.textures = textures;
  opt.include_tensors = false;
  std::vector<std::string> names = plan::strategy_names();
  std::cout << "\nMemory plans (" << (textures == TextureMode::Auto ? "textures auto" : "buffers only") << ", target "
            << dev.name << "): bytes, and ratio to the lower bound\n";
  std::cout << std::left << std::setw(20) << "model" << std::right << std::setw(8) << "tensors" << std::setw(12)
            << "lower bound";
  for (const auto& n : names) std::cout << std::setw(24) << n;
  std::cout << "\n";
  report::Progress progress("planning the zoo", int64_t(dirs.size()));
  for (const auto& d : dirs) {
    json r;
    progress.step(int64_t(rows.size()), d.filename().string());
    try {
      r = report::plan_model(d.string(), dev, opt);
      progress.clear();
    } catch (const std::exception& e) {
      progress.clear();
      std::cout << std::left << std::setw(20) << d.filename().string() << " error: " << e.what() << "\n";
      continue;
    }
    std::cout << std::left << std::setw(20) << r["model"].get<std::string>() << std::right << std::setw(8)
              << r["records"].get<int64_t>() << std::setw(12) << cli::human_bytes(r["lower_bound_bytes"]);
    for (const auto& s : r["strategies"]) {
      std::ostringstream cell;
      if (s.contains("total_bytes"))
        cell << cli::human_bytes(s["total_bytes"]) << " " << std::fixed << std::setprecision(3)
             << s["ratio"].get<double>() << (s["valid"].get<bool>() ? "" : "!");
      else
        cell << "n/a";
      std::cout << std::setw(24) << cell.str();
    }
    std::cout << "\n";
    rows.push_back(r);
  }
  return rows;
}

json planning_time(const plan::DeviceProfile& dev, int64_t max_n) {
  json rows = json::array();
  std::cout << "\nPlanning time of `best` on random graphs (validated)\n";
  std::cout << std::left << std::setw(10) << "tensors" << std::right << std::setw(12) << "plan ms" << std::setw(14)
            << "validate ms" << std::setw(10) << "ratio" << "\n";
  report::Progress progress("planning random graphs", 0);
  for (int64_t n = 1000; n <= max_n; n *= 10) {
    progress.step(0, std::to_string(n) + " tensors");
    auto recs = plan::random_records(n, 7);
    auto t0 = std::chrono::steady_clock::now();
    plan::MemoryPlan p = plan::plan_memory(recs, dev, "best");
    auto t1 = std::chrono::steady_clock::now();
    plan::validate(p, recs, dev);
    auto t2 = std::chrono::steady_clock::now();
    double plan_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    double val_ms = std::chrono::duration<double, std::milli>(t2 - t1).count();
    double ratio = double(p.total_bytes()) / double(plan::lower_bound_bytes(recs));
    progress.clear();
    std::cout << std::left << std::setw(10) << n << std::right << std::fixed << std::setprecision(1) << std::setw(12)
              << plan_ms << std::setw(14) << val_ms << std::setprecision(4) << std::setw(10) << ratio << "\n";
    rows.push_back({{"tensors", n}, {"plan_ms", plan_ms}, {"validate_ms", val_ms}, {"ratio", ratio}});
  }
  return rows;
}

struct Latency {
  double median_ms = 0, min_ms = 0, rel_error = 0;
  std::string precision;  // what the session used (tf32 only where the device has tensor cores)
};

lower::TuningCache* kernel_choices = nullptr;  // --tuning-cache: what texplan tune measured
runtime::Precision precision = runtime::Precision::Fp32;  // --precision
lower::KernelChoice kernel_choice;                      // --kernels

Latency time_texplan(const fs::path& dir, const std::string& device, int runs) {
  auto dev = runtime::open_device(device);
  CompileOptions co;  // texplan run's defaults
  co.session.precision = precision;
  co.session.kernel_choice = kernel_choice;
  const CompiledModel m = compile(dir.string(), {.load_weights = true}, dev->info().profile, dev->info().type, co);
  std::optional<lower::TuningScope> tuning;  // kernel choices, read as the session builds its kernels
  if (kernel_choices) tuning.emplace(kernel_choices, false, *dev);
  runtime::Session s(m.graph, m.usage, m.plan, dev, co.session);
  const std::vector<HostTensor> in = cli::load_set(dir / "test_data_set_0", "input_");  // in the model's input order
  Latency l;
  l.precision = runtime::precision_name(s.precision());
  l.rel_error = cli::relative_error(s.run(in)[0], load_tensor_pb((dir / "test_data_set_0" / "output_0.pb").string()));
  s.run(in);
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    s.run(in);
    ms.push_back(s.last_run_ms());
  }
  std::sort(ms.begin(), ms.end());
  l.median_ms = ms[ms.size() / 2];
  l.min_ms = ms.front();
  return l;
}

// texplan on PoCL against onnxruntime's CPU provider with as many threads as
// PoCL uses (every core), same models, same inputs, in one run. Per model,
// `rounds` rounds alternate the two (texplan first in odd rounds, onnxruntime
// in even ones), each round timing `runs` runs of both; a side's figure is
// the median of its rounds' medians. A shared 2-core machine drifts by tens
// of percent within minutes, so timing all of one peer and then all of the
// other measured the drift as much as the two.

json latency_vs_onnxruntime(const std::string& models, const std::string& device, int runs, int rounds) {
  json rows = json::array();
  std::vector<std::string> names;
  // The zoo's layout: NAME/NAME.onnx, its weights in NAME.onnx.data or in
  // itself, test_data_set_0/input_K.pb and output_0.pb; other folders (the
  // zoo's models without weights) are named as skipped, with the reason.
  for (const auto& e : fs::directory_iterator(models)) {
    if (!e.is_directory()) continue;
    const std::string name = e.path().filename().string();
    const fs::path data = e.path() / "test_data_set_0", model = e.path() / (name + ".onnx");
    if (!fs::exists(model)) continue;
    if (!fs::exists(data / "input_0.pb") || !fs::exists(data / "output_0.pb")) {
      std::cout << "skipped " << name << ": no test_data_set_0/input_0.pb and output_0.pb\n";
      continue;
    }
    if (!fs::exists(e.path() / (name + ".onnx.data"))) {
      try {  // weights inside the .onnx, or none to be found
        import_onnx(model.string(), {.load_weights = true});
      } catch (const Error& err) {
        std::cout << "skipped " << err.what() << "\n";  // "NAME: why"
        continue;
      }
    }
    names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  const int threads = int(std::thread::hardware_concurrency());
  fs::path peers = fs::path(TEXPLAN_SOURCE_DIR) / "bench" / "peers";
  // On a GPU the peer is PyTorch (bench/peers/torch_bench.py), run beside us.
  const bool with_ort = device == "pocl" && fs::exists(peers / "node_modules" / "onnxruntime-node");
  if (device == "pocl" && !with_ort) std::cout << "\n(onnxruntime peer not installed: cd bench/peers && npm install)\n";
  auto time_ort = [&](const std::string& name) -> std::optional<double> {  // one round, one model
    fs::path out = fs::temp_directory_path() / "texplan-ort-bench.json";
    std::string cmd = "node " + (peers / "ort_bench.mjs").string() + " --models " + models + " --threads " +
                      std::to_string(threads) + " --runs " + std::to_string(runs) + " --json " + out.string() +
                      " --no-load-warning " +
                      name + " > /dev/null";
    if (std::system(cmd.c_str()) != 0) return std::nullopt;
    for (const auto& o : json::parse(std::ifstream(out)))
      if (o["model"] == name && o.contains("median_ms")) return o["median_ms"].get<double>();
    return std::nullopt;
  };
  // The load average counts our own runs once they start: read it once, before.
  if (double load = 0; std::ifstream("/proc/loadavg") >> load && load > 0.5)
    std::cout << "\nwarning: load average " << load << " before the runs: other work shares the CPU, timings will be noisy\n";
  std::cout << "\nLatency on " << device << " (" << runtime::precision_name(precision) << " requested)"
            << " against onnxruntime CPU (" << threads << " threads, as many as PoCL uses): " << rounds
            << " alternating rounds of " << runs << " runs each, median of the rounds' medians\n";
  std::cout << std::left << std::setw(20) << "model" << std::right << std::setw(14) << "texplan ms" << std::setw(14)
            << "ort ms" << std::setw(16) << "texplan/ort" << std::setw(14) << "rel error" << "\n";
  report::Progress progress("latency", int64_t(names.size()));
  for (const auto& name : names) {
    json r{{"model", name}, {"threads", threads}, {"rounds", rounds}};
    progress.step(int64_t(rows.size()), name);
    std::vector<double> own, own_min, peer;
    try {
      for (int round = 0; round < rounds; ++round) {
        if (with_ort && round % 2 == 1)
          if (auto ms = time_ort(name)) peer.push_back(*ms);
        Latency l = time_texplan(fs::path(models) / name, device, runs);
        own.push_back(l.median_ms);
        own_min.push_back(l.min_ms);
        r["rel_error"] = l.rel_error;
        r["precision"] = l.precision;
        if (with_ort && round % 2 == 0)
          if (auto ms = time_ort(name)) peer.push_back(*ms);
      }
      r["texplan_median_ms"] = cli::median(own);
      r["texplan_min_ms"] = *std::min_element(own_min.begin(), own_min.end());
      r["texplan_round_ms"] = own;
    } catch (const std::exception& e) {
      r["error"] = e.what();
    }
    if (!peer.empty()) {
      r["ort_median_ms"] = cli::median(peer);
      r["ort_round_ms"] = peer;
    }
    progress.clear();
    std::cout << std::left << std::setw(20) << name << std::right << std::fixed << std::setprecision(2);
    if (r.contains("texplan_median_ms")) std::cout << std::setw(14) << r["texplan_median_ms"].get<double>();
    else std::cout << std::setw(14) << "error";
    if (r.contains("ort_median_ms")) {
      std::cout << std::setw(14) << r["ort_median_ms"].get<double>();
      if (r.contains("texplan_median_ms")) {
        r["ratio_vs_ort"] = r["texplan_median_ms"].get<double>() / r["ort_median_ms"].get<double>();
        std::cout << std::setw(16) << r["ratio_vs_ort"].get<double>();
      }
    } else {
      std::cout << std::setw(14) << "-" << std::setw(16) << "-";
    }
    if (r.contains("rel_error")) std::cout << std::setw(14) << std::scientific << std::setprecision(2) << r["rel_error"].get<double>();
    std::cout << "\n";
    rows.push_back(r);
  }
  return rows;
}
// Issue 5: what the graph rewrites buy. Per model the lower bound as
// imported (file order, no optimization), the optimized bound, the best
// plan, best / raw, and each optimization's share (bytes its absence costs).
json optimization_table(const json& plans) {
  json rows = json::array();
  std::cout << "\nGraph optimizations (buffers): best plan against the lower bound as imported\n";
  std::cout << std::left << std::setw(20) << "model" << std::right << std::setw(12) << "raw bound" << std::setw(12)
            << "optimized" << std::setw(12) << "best plan" << std::setw(10) << "best/raw" << "  saved by each alone\n";
  double log_sum = 0;
  int n = 0;
  for (const auto& r : plans) {
    if (!r.contains("optimization")) continue;
    const json& o = r["optimization"];
    int64_t best = 0;
    for (const auto& s : r["strategies"])
      if (s["name"] == "best" && s.contains("total_bytes")) best = s["total_bytes"];
    const int64_t raw = std::max<int64_t>(1, r["raw_lower_bound_bytes"].get<int64_t>());
    const double ratio = double(best) / double(raw);
    log_sum += std::log(ratio);
    ++n;
    std::ostringstream shares;
    for (const auto& s : o["shares"])
      shares << " " << s["name"].get<std::string>() << " " << cli::human_bytes(s["bytes_saved"].get<int64_t>());
    std::cout << std::left << std::setw(20) << r["model"].get<std::string>() << std::right << std::setw(12)
              << cli::human_bytes(raw) << std::setw(12) << cli::human_bytes(o["lower_bound_bytes"]) << std::setw(12)
              << cli::human_bytes(best) << std::setw(10) << std::fixed << std::setprecision(3) << ratio << " "
              << shares.str() << "\n";
    rows.push_back({{"model", r["model"]}, {"raw_lower_bound_bytes", raw}, {"lower_bound_bytes", o["lower_bound_bytes"]},
                    {"best_bytes", best}, {"best_over_raw", ratio}, {"optimization", o}});
  }
  const double geomean = n ? std::exp(log_sum / n) : 1.0;
  std::cout << "geometric mean of best/raw: " << std::setprecision(3) << geomean << "\n";
  return {{"models", rows}, {"geomean_best_over_raw", geomean}};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"texplan benchmarks"};
  std::string models = "../shared/models", json_path = "bench.json", target = "pocl", device = "pocl";
  int64_t max_n = 1000000;
  int runs = 10, rounds = 3;
  bool no_latency = false;
  app.add_option("--models", models, "model zoo folder")->capture_default_str();
  app.add_option("--json", json_path, "where to write the results")->capture_default_str();
  app.add_option("--target", target, "device profile for planning")->capture_default_str();
  app.add_option("--max-tensors", max_n, "largest random graph to plan")->capture_default_str();
  app.add_option("--runs", runs, "timed runs per model for latency")->capture_default_str();
  app.add_option("--rounds", rounds, "alternating rounds of texplan and onnxruntime per model")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  app.add_flag("--no-latency", no_latency, "plans and planning time only");
  app.add_option("--device", device, "device for the latency table")->capture_default_str();
  std::string kernels, tuning_cache;
  bool latency_only = false;
  app.add_option("--kernels", kernels, "gpu: texplan's GPU kernels on every device, PoCL's CPU kernels off (a before/after)");
  app.add_option("--tuning-cache", tuning_cache, "kernel choices measured by texplan tune");
  app.add_flag("--latency-only", latency_only, "only the latency table");
  std::string precision_arg = "fp32";
  app.add_option("--precision", precision_arg, "fp32 (exact) or tf32 (tensor cores on NVIDIA GPUs; fp32 elsewhere)")
      ->check(CLI::IsMember({"fp32", "tf32"}))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    precision = runtime::parse_precision(precision_arg);
    if (precision == runtime::Precision::Tf32 && !no_latency && !runtime::tf32_supported(*runtime::open_device(device)))
      std::cerr << "texplan_bench: warning: --precision tf32 needs an NVIDIA GPU with tensor cores; " << device
                << " runs exact fp32\n";
    kernel_choice.conv = kernels;
    lower::check_kernel_choice(kernel_choice);
    std::unique_ptr<lower::TuningCache> cache;
    if (!tuning_cache.empty()) kernel_choices = (cache = std::make_unique<lower::TuningCache>(tuning_cache)).get();
    plan::DeviceProfile dev = runtime::load_profile(target);
    json out;
    if (latency_only) {
    } else if (fs::is_directory(models)) {
      out["plans"] = plan_zoo(models, dev, TextureMode::None);
      out["optimization"] = optimization_table(out["plans"]);
      plan::DeviceProfile adreno = plan::DeviceProfile::load("adreno");
      out["plans_textures_adreno"] = plan_zoo(models, adreno, TextureMode::Auto);
    } else {
      std::cout << "no model zoo at " << models << ": skipping model plans\n";
    }
    if (!latency_only) out["planning_time"] = planning_time(dev, max_n);
    if (!no_latency && fs::is_directory(models)) out["latency"] = latency_vs_onnxruntime(models, device, runs, rounds);
    else if (!no_latency) std::cout << "no model zoo at " << models << " (--models): skipping the latency table\n";
    std::ofstream(json_path) << out.dump(1) << "\n";
    std::cout << "\nwrote " << json_path << "\n";
  } catch (const std::exception& e) {
    std::cerr << "texplan_bench: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
