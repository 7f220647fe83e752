// make bench: memory planning over the model zoo (every strategy against the
// lower bound), planning time from 1k to 1M tensors, and latency on PoCL
// against onnxruntime (when bench/peers is installed), as tables and JSON.
#include <CLI/CLI.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>

#include "cli/commands.h"

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
  cli::PlanOptions opt;
  opt.textures = textures;
  opt.include_tensors = false;
  std::vector<std::string> names = plan::strategy_names();
  std::cout << "\nMemory plans (" << (textures == TextureMode::Auto ? "textures auto" : "buffers only") << ", target "
            << dev.name << "): bytes, and ratio to the lower bound\n";
  std::cout << std::left << std::setw(20) << "model" << std::right << std::setw(8) << "tensors" << std::setw(12)
            << "lower bound";
  for (const auto& n : names) std::cout << std::setw(24) << n;
  std::cout << "\n";
  for (const auto& d : dirs) {
    json r;
    try {
      r = cli::plan_model(d.string(), dev, opt);
    } catch (const std::exception& e) {
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
  for (int64_t n = 1000; n <= max_n; n *= 10) {
    auto recs = plan::random_records(n, 7);
    auto t0 = std::chrono::steady_clock::now();
    plan::MemoryPlan p = plan::plan_memory(recs, dev, "best");
    auto t1 = std::chrono::steady_clock::now();
    plan::validate(p, recs, dev);
    auto t2 = std::chrono::steady_clock::now();
    double plan_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    double val_ms = std::chrono::duration<double, std::milli>(t2 - t1).count();
    double ratio = double(p.total_bytes()) / double(plan::lower_bound_bytes(recs));
    std::cout << std::left << std::setw(10) << n << std::right << std::fixed << std::setprecision(1) << std::setw(12)
              << plan_ms << std::setw(14) << val_ms << std::setprecision(4) << std::setw(10) << ratio << "\n";
    rows.push_back({{"tensors", n}, {"plan_ms", plan_ms}, {"validate_ms", val_ms}, {"ratio", ratio}});
  }
  return rows;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"texplan benchmarks"};
  std::string models = "../shared/models", json_path = "bench.json", target = "pocl";
  int64_t max_n = 1000000;
  app.add_option("--models", models, "model zoo folder")->capture_default_str();
  app.add_option("--json", json_path, "where to write the results")->capture_default_str();
  app.add_option("--target", target, "device profile for planning")->capture_default_str();
  app.add_option("--max-tensors", max_n, "largest random graph to plan")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    plan::DeviceProfile dev = cli::load_target(target);
    json out;
    if (fs::is_directory(models)) {
      out["plans"] = plan_zoo(models, dev, TextureMode::None);
      plan::DeviceProfile adreno = plan::DeviceProfile::load("adreno");
      out["plans_textures_adreno"] = plan_zoo(models, adreno, TextureMode::Auto);
    } else {
      std::cout << "no model zoo at " << models << ": skipping model plans\n";
    }
    out["planning_time"] = planning_time(dev, max_n);
    std::ofstream(json_path) << out.dump(1) << "\n";
    std::cout << "\nwrote " << json_path << "\n";
  } catch (const std::exception& e) {
    std::cerr << "texplan_bench: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
