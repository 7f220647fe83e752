// The commands behind the CLI and the options they share. The reports they
// print are report/report.h's, shared with the Python module, the
// benchmarks and the tests.
#pragma once
#include <nlohmann/json.hpp>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "import/onnx_import.h"
#include "optimize/optimize.h"
#include "optimize/usage.h"
#include "plan/memory_plan.h"

namespace CLI {
class App;
}

namespace texplan::cli {

using nlohmann::json;

using texplan::human_bytes;  // graph/graph.h

// Symbolic dimensions: --dim NAME=VALUE and --input-shape NAME=DxDx... (both
// repeatable), parsed into `import` (dims, input_shapes) by shape_settings.
struct ShapeSettings {
  std::vector<std::string> dims, input_shapes;
};
void add_shape_options(CLI::App& app, ShapeSettings& s);
// --patch off|auto|RxC (optimize/patch.h parse_patch), checked before any work.
void add_patch_option(CLI::App& app, std::string& patch);
void apply_shape_settings(const ShapeSettings& s, ImportOptions& import);

// --no-fuse, --no-inplace, --no-concat-elision, --order file|memory.
void add_optimize_options(CLI::App& app, OptimizeOptions& o);

// texplan run
struct RunArgs {
  std::string model;
  std::string device = "pocl";  // pocl | gpu | opencl:N | cpu (the reference executor)
  std::vector<std::string> inputs;
  std::string strategy = "best";
  std::string textures = "none";
  std::string texture_layout = "cost";  // cost | rows | wide (optimize/storage.h LayoutPolicy)
  bool check = false;
  bool guard = false;
  int bench = 0;
  double tolerance = -1;  // negative: by precision, 1e-4 for fp32, 1e-2 for tf32 and fp16 (docs/precision.md)
  std::string precision = "fp32";  // fp32 | tf32 | fp16 (runtime::Precision)
  std::string recurrent = "auto";  // auto | steps | persistent (lower::KernelChoice::recurrent)
  std::string json_path;
  std::string output_dir;  // writes output_N.pb there
  bool profile = false;    // per-node device times (cli/profile_report.h)
  std::string trace_path;  // the profiled runs as a Chrome trace (cli/trace.h); implies profile
  std::string io = "host";  // host | device: inputs and outputs as runtime::DeviceTensors
  std::string offload = "none";  // none | clblast | auto (src/offload)
  std::string patch = "off";     // off | auto | RxC: the first stages run by patches (optimize/patch.h)
  // One tuning results file for every part that measures once and reuses
  // (lower/tuning_cache.h): read at start, written back when changed.
  std::string tuning_cache;
  // Tune CLBlast's GEMM kernels over this fraction of their search space
  // first, unless the tuning cache holds them for this device (0: don't).
  double clblast_tune = 0;
  // Testing and debugging the offload (offload::OffloadOptions): offload only
  // nodes whose names contain one of these; make CLBlast reject every call
  // while preparing ("prepare") or during the run ("run").
  std::vector<std::string> offload_only;
  std::string offload_reject;
  OptimizeOptions optimize;  // graph rewrites before planning (optimize/optimize.h)
  ShapeSettings shapes;      // symbolic dimensions; input files fix the rest
  // Seeded random inputs instead of files (--random-input [SEED]); also
  // what a run without inputs or test data gets, with seed 0.
  std::optional<uint32_t> random_input;
  // --check passes against a reference output that is all zeros or
  // constant only when asked: such a reference cannot tell right from wrong.
  bool allow_trivial_reference = false;
  bool tune = false;  // texplan tune: measure kernel variants missing from the tuning cache
  bool program_cache = true;  // built kernels kept on disk (runtime::DeviceOptions); --no-program-cache
};
void add_run_options(CLI::App& app, RunArgs& a);
int run_command(const RunArgs& a);
// texplan tune (tune_command.cpp): run's options, --tuning-cache required.
void add_tune_options(CLI::App& app, RunArgs& a);
int tune_command(RunArgs a);

// texplan devices
int devices_command(bool as_json);

// texplan onnx-tests
struct OnnxTestArgs {
  std::string dir = "/usr/share/libonnx-testdata/data/node";
  std::string device = "pocl";
  std::string filter;  // substring of the test name
  std::string json_path;
  bool verbose = false;
};
void add_onnx_test_options(CLI::App& app, OnnxTestArgs& a);
int onnx_tests_command(const OnnxTestArgs& a);

// A test data set's PREFIX0.pb, PREFIX1.pb, ... ("input_", "output_"), in
// order, up to the first missing.
std::vector<HostTensor> load_set(const std::filesystem::path& set, const std::string& prefix);

// Relative error ||out - ref|| / ||ref|| over all elements (float view).
double relative_error(const HostTensor& out, const HostTensor& ref);
// Why a reference output cannot tell a right run from a wrong one (all
// zeros, or every element equal), or "".
std::string trivial_reference(const HostTensor& ref);
// Why output `out` cannot, although neither zero nor constant: `probe`, its
// value for a second, random input, lies within `tolerance` of it; or "".
std::string insensitive_output(const HostTensor& out, const HostTensor& probe, double tolerance);

// The median of v (the upper middle value of an even count; 0 when empty).
double median(std::vector<double> v);

}  // namespace texplan::cli
