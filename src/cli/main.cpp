// texplan command line: argument parsing only; the work is in commands.h.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <new>

#include "cli/commands.h"
#include "cli/progress.h"
#include "cli/timeline.h"
#include "graph/safe_file.h"

using namespace texplan;

namespace {

void write_json(const cli::json& j, const std::string& path) {
  write_file(path, j.dump(1) + "\n", j.value("model", std::string()));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"texplan: run neural networks on OpenCL GPUs in the least device memory"};
  app.require_subcommand(1);
  app.fallthrough();  // global flags also after the subcommand: `texplan plan m.onnx -q`
  bool quiet = false, verbose = false;
  app.add_flag("-q,--quiet", quiet, "print only errors (files asked for are still written)");
  app.add_flag("-v,--verbose", verbose, "say more: stage timings, every test");

  // texplan plan
  auto* plan = app.add_subcommand("plan", "plan the memory of a model (or a random graph)");
  std::string model, strategy = "all", target = "pocl", textures = "none", json_path, timeline_path;
  int64_t random_n = 0;
  uint64_t seed = 1;
  plan->add_option("model", model, "model .onnx file or model folder");
  plan->add_option("--strategy", strategy, "strategy name or 'all'")->capture_default_str();
  plan->add_option("--target", target, "device profile: pocl, h100, adreno, a .json file, or opencl")
      ->capture_default_str();
  OptimizeOptions plan_optimize;
  cli::add_optimize_options(*plan, plan_optimize);
  plan->add_option("--textures", textures,
                   "none: buffers only; pools: 4D activations as textures in image pools; views: as image views "
                   "over the buffer arena; auto: what the target's profile says pays")
      ->check(CLI::IsMember({"none", "auto", "pools", "views"}))
      ->capture_default_str();
  std::string offload = "none";
  plan->add_option("--offload", offload,
                   "none, clblast or auto: partition the nodes between texplan and CLBlast and plan CLBlast's scratch")
      ->check(CLI::IsMember({"none", "clblast", "auto"}))
      ->capture_default_str();
  plan->add_option("--json", json_path, "write the report as JSON");
  plan->add_option("--timeline", timeline_path, "draw the plan(s) as a picture: FILE.svg, or FILE.html with hover details");
  plan->add_option("--random-graph", random_n, "plan a random DAG of N tensors instead of a model");
  plan->add_option("--seed", seed, "seed of the random graph")->capture_default_str();
  cli::ShapeSettings plan_shapes;
  cli::add_shape_options(*plan, plan_shapes);

  // texplan run / devices / onnx-tests
  cli::RunArgs run_args;
  auto* run = app.add_subcommand("run", "run a model on an OpenCL device with its memory plan");
  cli::add_run_options(*run, run_args);
  cli::RunArgs tune_args;
  auto* tune = app.add_subcommand("tune", "measure kernel variants per node shape once, into --tuning-cache");
  cli::add_tune_options(*tune, tune_args);
  auto* devices = app.add_subcommand("devices", "list OpenCL devices and their profiles");
  bool devices_json = false;
  devices->add_flag("--json", devices_json, "print JSON");
  cli::OnnxTestArgs ot_args;
  auto* onnx_tests = app.add_subcommand("onnx-tests", "run ONNX's backend node tests through the runtime");
  cli::add_onnx_test_options(*onnx_tests, ot_args);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  if (quiet && verbose) {
    std::cerr << "texplan: error: --quiet and --verbose exclude each other\n";
    return 1;
  }
  cli::set_verbosity(quiet ? cli::Verbosity::Quiet : verbose ? cli::Verbosity::Verbose : cli::Verbosity::Normal);
  ot_args.verbose = ot_args.verbose || verbose;
  // Quiet: stdout says nothing, except what was asked of it (devices --json).
  if (quiet && !(*devices && devices_json)) std::cout.setstate(std::ios::badbit);

  try {
    if (*plan) {
      plan::DeviceProfile dev = cli::load_target(target);
      cli::PlanOptions opt;
      if (strategy != "all") opt.strategies = {strategy};
      opt.offload = offload;
      opt.offload_on_device = target == "opencl";
      opt.textures = parse_texture_mode(textures);
      opt.optimize = plan_optimize;
      cli::apply_shape_settings(plan_shapes, opt.import);
      cli::json report;
      if (random_n > 0) {
        opt.include_tensors = random_n <= 200000;
        report = cli::plan_report("random-" + std::to_string(random_n) + "-seed-" + std::to_string(seed),
                                  plan::random_records(random_n, seed), dev, opt);
      } else {
        if (model.empty()) throw Error("plan: give a model file or folder, or --random-graph N");
        report = cli::plan_model(model, dev, opt);
      }
      cli::print_plan_table(report, std::cout);
      if (!json_path.empty()) write_json(report, json_path);
      if (!timeline_path.empty()) cli::write_timeline(report, timeline_path);
      for (const auto& s : report["strategies"])
        if (!s["valid"].get<bool>() && !s.value("skipped", false)) return 3;
      return 0;
    }
    if (*run) return cli::run_command(run_args);
    if (*tune) return cli::tune_command(tune_args);
    if (*devices) return cli::devices_command(devices_json);
    if (*onnx_tests) return cli::onnx_tests_command(ot_args);
  } catch (const std::bad_alloc&) {
    // Wherever a host allocation failed: name the model and the command.
    const std::string& m = *plan ? model : *run ? run_args.model : *tune ? tune_args.model : ot_args.dir;
    const std::string command = *plan ? "planning" : *run ? "running" : *tune ? "tuning" : "testing";
    std::filesystem::path path = std::filesystem::path(m).lexically_normal();
    if (path.filename().empty()) path = path.parent_path();  // "models/tiny_cnn/"
    std::string name = path.filename().string();
    if (name.ends_with(".onnx")) name.resize(name.size() - 5);
    if (*plan && model.empty()) name = "random graph";
    std::cerr << "texplan: error: " << name << ": out of memory: the host could not allocate memory while " << command
              << " (std::bad_alloc)\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "texplan: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
