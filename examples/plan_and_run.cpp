// Plans a model's activation memory with every strategy, then runs it on
// PoCL (or the device given) with the best plan and prints its output.
//
//   plan_and_run MODEL_DIR [DEVICE]      e.g. plan_and_run examples/models/tiny_cnn pocl
//
// MODEL_DIR is a model-zoo folder: NAME.onnx, NAME.onnx.data and
// test_data_set_0/input_0.pb (and output_0.pb, to compare against).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "device/device.h"
#include "import/onnx_import.h"
#include "pipeline/pipeline.h"
#include "plan/memory_plan.h"
#include "runtime/session.h"

using namespace texplan;
namespace fs = std::filesystem;

int main(int argc, char** argv) try {
  if (argc < 2) {
    std::cerr << "usage: plan_and_run MODEL_DIR [DEVICE]\n";
    return 2;
  }
  const fs::path dir = argv[1];
  const std::string device_spec = argc > 2 ? argv[2] : "pocl";

  // 1. Open the device; import the model with weights, optimize it for the
  //    device and turn it into usage records (one per activation: bytes,
  //    first and last step): the stages of pipeline/pipeline.h up to the
  //    records, as texplan::Session and `texplan run` chain them.
  std::shared_ptr<runtime::Device> device = runtime::open_device(device_spec);
  const plan::DeviceProfile& profile = device->info().profile;
  CompileOptions options;  // every activation a buffer, strategy "best"
  CompiledModel m = import_model(dir.string(), {.load_weights = true});
  lower_to_records(m, profile, device->info().type, options);
  const PlanInput& pin = m.usage;

  // 2. Plan with every strategy; each plan is checked by the validator.
  const int64_t lower_bound = plan::lower_bound_bytes(pin.records);
  std::printf("model %s: %zu nodes, %zu activations, lower bound %lld B\n", m.graph.model_name.c_str(),
              m.graph.nodes.size(), pin.records.size(), (long long)lower_bound);
  for (const std::string& name : plan::strategy_names()) {
    try {
      plan::MemoryPlan p = plan::plan_memory(pin.records, profile, name);
      plan::validate(p, pin.records, profile);
      std::printf("  %-18s %8lld B  %.3fx  %zu pool(s)\n", name.c_str(), (long long)p.total_bytes(),
                  double(p.total_bytes()) / double(lower_bound), p.pools.size());
    } catch (const plan::PlanError& e) {
      std::printf("  %-18s skipped: %s\n", name.c_str(), e.what());
    }
  }

  // 3. The last stage, the plan of the options' strategy, validated; then
  //    run it: one allocation per pool, made once.
  plan_records(m, profile, options);
  runtime::Session session(m.graph, m.usage, m.plan, device);
  HostTensor input = load_tensor_pb((dir / "test_data_set_0" / "input_0.pb").string());
  std::vector<HostTensor> out = session.run({input});

  const std::vector<float> y = out[0].as_float();
  std::printf("ran on %s: %lld B of activations, %lld B of weights\n", device->info().name.c_str(),
              (long long)session.activation_bytes(), (long long)session.weight_bytes());
  std::printf("output %s %s:", m.graph.tensors[m.graph.outputs[0]].name.c_str(), to_string(out[0].shape).c_str());
  for (size_t i = 0; i < y.size() && i < 10; ++i) std::printf(" %.4f", y[i]);
  std::printf("%s\n", y.size() > 10 ? " ..." : "");
  std::printf("argmax %ld\n", long(std::max_element(y.begin(), y.end()) - y.begin()));

  // 4. Compare with the reference output when there is one.
  const fs::path ref_file = dir / "test_data_set_0" / "output_0.pb";
  if (fs::exists(ref_file)) {
    const std::vector<float> r = load_tensor_pb(ref_file.string()).as_float();
    double num = 0, den = 0;
    for (size_t i = 0; i < r.size() && i < y.size(); ++i) num += (y[i] - r[i]) * (y[i] - r[i]), den += r[i] * r[i];
    const double rel = std::sqrt(num / den);
    std::printf("relative error against the reference: %.2e (%s)\n", rel, rel < 1e-4 ? "ok" : "TOO LARGE");
    return rel < 1e-4 ? 0 : 1;
  }
  return 0;
} catch (const std::exception& e) {
  std::cerr << "plan_and_run: " << e.what() << "\n";
  return 1;
}
