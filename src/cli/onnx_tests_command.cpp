// ONNX's backend node tests (Debian's libonnx-testdata) through the runtime:
// each test is a one-node model with inputs and expected outputs.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include "cli/commands.h"
#include "cli/usage.h"
#include "device/device.h"
#include "graph/safe_file.h"
#include "import/onnx_import.h"
#include "pipeline/pipeline.h"
#include "report/progress.h"
#include "runtime/session.h"

namespace fs = std::filesystem;

namespace texplan::cli {

void add_onnx_test_options(CLI::App& app, OnnxTestArgs& a) {
  app.add_option("dir", a.dir, "folder of test folders (model.onnx + test_data_set_0)")->capture_default_str();
  app.add_option("--device", a.device, "pocl, gpu or opencl:N")
      ->check(device_spec({"pocl", "gpu"}))
      ->capture_default_str();
  app.add_option("--filter", a.filter, "only tests whose name contains this");
  app.add_option("--json", a.json_path, "write every test's result as JSON (-: to stdout, the summary to stderr)");
  app.add_flag("--verbose", a.verbose, "print every test");
}

namespace {

// ONNX's backend tolerance: |out - ref| <= atol + rtol * |ref|, NaN == NaN.
std::string compare(const HostTensor& out, const HostTensor& ref) {
  if (out.shape != ref.shape) return "shape " + to_string(out.shape) + " != expected " + to_string(ref.shape);
  std::vector<float> a = out.as_float(), b = ref.as_float();
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(b[i]) && std::isnan(a[i])) continue;
    if (std::isinf(b[i]) && a[i] == b[i]) continue;
    if (!(std::fabs(a[i] - b[i]) <= 1e-5 + 1e-3 * std::fabs(b[i])))
      return "element " + std::to_string(i) + ": " + std::to_string(a[i]) + " != expected " + std::to_string(b[i]);
  }
  return "";
}

bool is_unsupported(const std::string& msg) {
  return msg.find("not supported") != std::string::npos || msg.find("unsupported") != std::string::npos ||
         msg.find("unknown operator") != std::string::npos || msg.find("not implemented") != std::string::npos;
}

}  // namespace

std::vector<HostTensor> load_set(const fs::path& set, const std::string& prefix) {
  std::vector<HostTensor> v;
  for (int i = 0; fs::exists(set / (prefix + std::to_string(i) + ".pb")); ++i)
    v.push_back(load_tensor_pb((set / (prefix + std::to_string(i) + ".pb")).string()));
  return v;
}

int onnx_tests_command(const OnnxTestArgs& a) {
  if (!fs::is_directory(a.dir)) throw Error(a.dir + ": no such folder (apt-get install libonnx-testdata)");
  std::vector<fs::path> tests;
  for (const auto& e : fs::directory_iterator(a.dir))
    if (e.is_directory() && fs::exists(e.path() / "model.onnx") &&
        (a.filter.empty() || e.path().filename().string().find(a.filter) != std::string::npos))
      tests.push_back(e.path());
  std::sort(tests.begin(), tests.end());
  auto device = runtime::open_device(a.device);
  const auto& profile = device->info().profile;
  report::Progress progress("onnx tests", int64_t(tests.size()));
  CompileOptions options;  // the pipeline of texplan run's defaults

  json results = json::array();
  std::map<std::string, int> count;
  std::map<std::string, int> unsupported_ops;
  for (size_t i = 0; i < tests.size(); ++i) {
    const auto& dir = tests[i];
    std::string name = dir.filename().string(), status, reason, ops;
    progress.step(int64_t(i), name);
    try {
      // The inputs fix symbolic dims; one that is no tensor (a sequence) is
      // left to the import, which names what it does not support.
      std::vector<HostTensor> inputs;
      std::string load_error;
      try {
        inputs = load_set(dir / "test_data_set_0", "input_");
      } catch (const Error& e) {
        load_error = e.what();
      }
      ImportOptions io{.load_weights = true};
      if (load_error.empty()) fix_open_inputs(read_input_signatures((dir / "model.onnx").string()), inputs, io);
      CompiledModel m = import_model((dir / "model.onnx").string(), io);
      if (!load_error.empty()) throw Error(load_error);
      for (const auto& n : m.graph.nodes) ops += (ops.empty() ? "" : ",") + n.op_type;  // as the file has them
      std::vector<HostTensor> expected = load_set(dir / "test_data_set_0", "output_");
      lower_to_records(m, profile, device->info().type, options);
      plan_records(m, profile, options);
      runtime::Session session(m.graph, m.usage, m.plan, device, options.session);
      std::vector<HostTensor> outputs = session.run(inputs);
      for (size_t k = 0; k < expected.size() && reason.empty(); ++k)
        reason = k < outputs.size() ? compare(outputs[k], expected[k]) : "missing output";
      bool fell_back = !session.fallback_nodes().empty();
      status = reason.empty() ? (fell_back ? "passed (cpu fallback)" : "passed")
                              : (fell_back ? "failed (cpu fallback)" : "failed");
    } catch (const std::exception& e) {
      reason = e.what();
      status = is_unsupported(reason) ? "unsupported" : "failed";
      if (status == "unsupported") ++unsupported_ops[ops.empty() ? name : ops];
    }
    ++count[status];
    results.push_back({{"test", name}, {"status", status}, {"ops", ops}, {"reason", reason}});
    if (a.verbose || (status.rfind("failed", 0) == 0)) {
      progress.clear();
      std::cout << std::left << std::setw(12) << status << " " << name << (reason.empty() ? "" : ": " + reason.substr(0, 200))
                << "\n";
    }
  }
  progress.clear();
  std::cout << "ONNX node tests on " << device->info().name << ": " << tests.size() << " tests\n";
  for (const auto& [k, v] : count) std::cout << "  " << std::left << std::setw(24) << k << v << "\n";
  if (!a.json_path.empty()) {
    write_output(a.json_path, json{{"device", device->info().name}, {"counts", count}, {"tests", results}}.dump(1) + "\n");
  }
  int failed = count["failed"] + count["failed (cpu fallback)"];
  std::cout << count["passed"] + count["passed (cpu fallback)"] << " passed, " << failed << " failed, "
            << count["unsupported"] << " skipped\n";
  return failed ? 1 : 0;
}

}  // namespace texplan::cli
