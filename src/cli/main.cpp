// texplan command line: argument parsing only; the work is in commands.h.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <new>

#include "cli/allocator.h"
#include "cli/commands.h"
#include "cli/usage.h"
#include "device/device.h"
#include "graph/safe_file.h"
#include "report/progress.h"
#include "report/report.h"
#include "report/timeline.h"
#include "runtime/session.h"

using namespace texplan;

namespace {

void write_json(const cli::json& j, const std::string& path) {
  cli::write_output(path, j.dump(1) + "\n", j.value("model", std::string()));
}

// The command a command line names: its first word that is not one of the
// global flags (which take no value), or "" when there is none.
std::string command_word(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (argv[i][0] != '-') return argv[i];
  return "";
}

// One line for a usage error, with where to read more; exit 2.
int usage_error(const std::string& message, const std::string& command) {
  std::cerr << "texplan: error: " << (command.empty() ? "" : command + ": ") << message << " (texplan "
            << (command.empty() ? "" : command + " ") << "--help)\n";
  return cli::kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  // Huge pages for planning (graphs of a million nodes: small heap
  // objects), not for runs, whose weights' hundreds of MB then fault in
  // slowly on some machines (docs/reliability.md#the-allocator).
  cli::tune_allocator(argv, command_word(argc, argv) == "plan");
  CLI::App app{"texplan: run neural networks on OpenCL GPUs in the least device memory"};
  app.require_subcommand(1);
  app.fallthrough();  // global flags also after the subcommand: `texplan plan m.onnx -q`
  bool quiet = false, verbose = false;
  app.add_flag("-q,--quiet", quiet, "print only errors (files asked for are still written)");
  app.add_flag("-v,--verbose", verbose, "say more: stage timings, every test, the OpenCL compiler's messages");
  app.set_version_flag("--version", "texplan " TEXPLAN_VERSION);
  app.footer(
      "Exit status: 0 done; 1 error (model, file or device); 2 usage error (nothing was done); 3 plan: a plan failed "
      "validation; 4 run --guard: a violation; 5 run --check: outputs differ from the reference (docs/cli.md).\n"
      "--json - writes the JSON report to stdout; the table then goes to stderr.");

  // texplan plan
  auto* plan = app.add_subcommand("plan", "plan the memory of a model (or a random graph)");
  std::string model, strategy = "all", target = "pocl", textures = "none", json_path, timeline_path;
  int64_t random_n = 0;
  uint64_t seed = 1;
  plan->add_option("model", model, "model .onnx file or model folder");
  plan->add_option("--strategy", strategy, "strategy name or 'all'")
      ->check(cli::strategy_name(/*allow_all=*/true))
      ->capture_default_str();
  plan->add_option("--target", target, "device profile: pocl, h100, adreno, a .json file, or opencl")
      ->capture_default_str();
  OptimizeOptions plan_optimize;
  cli::add_optimize_options(*plan, plan_optimize);
  plan->add_option("--textures", textures,
                   "none: buffers only; pools: 4D activations as textures in image pools; views: as image views "
                   "over the buffer arena; auto: what the target's profile says pays")
      ->check(CLI::IsMember({"none", "auto", "pools", "views"}))
      ->capture_default_str();
  std::string texture_layout = "cost";
  plan->add_option("--texture-layout", texture_layout,
                   "cost: each texture in the layout of the smallest footprint; rows: NC4HW4 rows (W pixels a row); "
                   "wide: wide rows (W*C/4 pixels a row)")
      ->check(CLI::IsMember({"cost", "rows", "wide"}))
      ->capture_default_str();
  std::string offload = "none";
  plan->add_option("--offload", offload,
                   "none, clblast or auto: partition the nodes between texplan and CLBlast and plan CLBlast's scratch")
      ->check(CLI::IsMember({"none", "clblast", "auto"}))
      ->capture_default_str();
  std::string plan_precision = "fp32";
  plan->add_option("--precision", plan_precision,
                   "fp16: float tensors stored as IEEE half (2-byte elements: plans halve); fp32 and tf32 store fp32")
      ->check(CLI::IsMember({"fp32", "tf32", "fp16"}))
      ->capture_default_str();
  plan->add_option("--json", json_path, "write the report as JSON (-: to stdout, the table to stderr)");
  plan->add_option("--timeline", timeline_path, "draw the plan(s) as a picture: FILE.svg, or FILE.html with hover details")
      ->check(cli::extension_in("timeline", {".svg", ".html", ".htm"}));
  plan->add_option("--random-graph", random_n, "plan a random DAG of N tensors instead of a model")
      ->check(cli::whole_number(1));
  plan->add_option("--seed", seed, "seed of the random graph")->check(cli::whole_number(0))->capture_default_str();
  cli::ShapeSettings plan_shapes;
  cli::add_shape_options(*plan, plan_shapes);
  std::string plan_patch = "off";
  cli::add_patch_option(*plan, plan_patch);

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

  std::vector<std::string> commands;
  for (const CLI::App* c : app.get_subcommands({})) commands.push_back(c->get_name());
  const std::string word = command_word(argc, argv);
  if (!word.empty() && std::find(commands.begin(), commands.end(), word) == commands.end())
    return usage_error(cli::unknown_name("command", word, commands), "");
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);  // --help, --version
  } catch (const CLI::ParseError& e) {
    if (word.empty()) {
      std::string list;
      for (const auto& c : commands) list += (list.empty() ? "" : ", ") + c;
      return usage_error("give a command: " + list, "");
    }
    return usage_error(e.what(), word);
  }

  if (quiet && verbose) return usage_error("--quiet and --verbose exclude each other", "");
  report::set_verbosity(quiet ? report::Verbosity::Quiet : verbose ? report::Verbosity::Verbose : report::Verbosity::Normal);
  report::verbose_log() << "allocator: glibc malloc, " << cli::allocator_pages() << "\n";
  ot_args.verbose = ot_args.verbose || verbose;
  // --json -: stdout carries the JSON alone; the table goes to stderr.
  const bool json_to_stdout = (*plan && cli::is_stdout(json_path)) || (*run && cli::is_stdout(run_args.json_path)) ||
                              (*tune && cli::is_stdout(tune_args.json_path)) ||
                              (*onnx_tests && cli::is_stdout(ot_args.json_path));
  if (json_to_stdout) std::cout.rdbuf(std::cerr.rdbuf());  // before -q's badbit: rdbuf() clears the state
  // Quiet: stdout says nothing, except what was asked of it (devices --json).
  if (quiet && !(*devices && devices_json)) std::cout.setstate(std::ios::badbit);
  // Kernel builds: a progress line on a terminal; the OpenCL compiler's
  // messages only under --verbose, each line prefixed.
  int kernels_built = 0;
  std::unique_ptr<report::Progress> build_progress;
  runtime::KernelBuildScope kernel_builds(
      [&](const std::string& program, runtime::ProgramOrigin origin, bool done) {
        if (done) return build_progress.reset();
        ++kernels_built;
        build_progress = std::make_unique<report::Progress>("building kernels", 0);
        build_progress->step(kernels_built, "#" + std::to_string(kernels_built) + " " + program +
                                                (origin == runtime::ProgramOrigin::Cache ? " (program cache)" : ""));
      },
      verbose ? runtime::KernelBuildScope::MessageSink([&](const std::string& program, const std::string& line) {
        if (build_progress) build_progress->clear();
        std::cerr << "opencl build: " << program << ": " << line << "\n";
      })
              : nullptr);

  try {
    if (*plan) {
      plan::DeviceProfile dev = runtime::load_profile(target);
      report::PlanOptions opt;
      if (strategy != "all") opt.strategies = {strategy};
      opt.offload = offload;
      opt.offload_on_device = target == "opencl";
      opt.textures = parse_texture_mode(textures);
      opt.texture_layouts = parse_layout_policy(texture_layout);
      opt.float_storage = runtime::float_storage(runtime::parse_precision(plan_precision));
      opt.optimize = plan_optimize;
      opt.patch = plan_patch;
      cli::apply_shape_settings(plan_shapes, opt.import);
      cli::json report;
      if (random_n > 0) {
        opt.include_tensors = random_n <= 200000;
        report = report::plan_report("random-" + std::to_string(random_n) + "-seed-" + std::to_string(seed),
                                  plan::random_records(random_n, seed), dev, opt);
      } else {
        if (model.empty()) throw Error("plan: give a model file or folder, or --random-graph N");
        report = report::plan_model(model, dev, opt);
      }
      report::print_plan_table(report, std::cout);
      if (!json_path.empty()) write_json(report, json_path);
      if (!timeline_path.empty()) report::write_timeline(report, timeline_path);
      for (const auto& s : report["strategies"])
        if (!s["valid"].get<bool>() && !s.value("skipped", false)) return cli::kExitPlanInvalid;
      return cli::kExitOk;
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
