// The shared model zoo (../shared/models): every strategy's plan validates,
// `best` reaches the lower bound, and every model with weights runs correctly
// on PoCL with a clean guard. Skips, saying why, when the zoo is absent.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <memory>

#include "cli/commands.h"
#include "device/device.h"
#include "import/onnx_import.h"
#include "lower/lower.h"
#include "report/report.h"
#include "runtime/cpu_executor.h"
#include "runtime/session.h"

namespace fs = std::filesystem;
using namespace texplan;

namespace {

std::vector<std::string> zoo_models() {
  std::vector<std::string> v;
  fs::path zoo = TEXPLAN_MODELS_DIR;
  if (!fs::is_directory(zoo)) return v;
  for (const auto& e : fs::directory_iterator(zoo))
    if (e.is_directory()) v.push_back(e.path().filename().string());
  std::sort(v.begin(), v.end());
  return v;
}

fs::path model_dir(const std::string& name) { return fs::path(TEXPLAN_MODELS_DIR) / name; }

class Zoo : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!fs::is_directory(model_dir(GetParam())))
      GTEST_SKIP() << "no model zoo at " << TEXPLAN_MODELS_DIR << " (../shared/models)";
  }
};

}  // namespace

TEST_P(Zoo, EveryStrategyValidatesAndBestReachesTheLowerBound) {
  for (const char* target : {"pocl", "h100", "adreno"}) {
    for (auto textures : {TextureMode::None, TextureMode::Pools}) {
      SCOPED_TRACE(std::string(target) + (textures == TextureMode::Pools ? " textures" : " buffers"));
      plan::DeviceProfile dev = plan::DeviceProfile::load(target);
      report::PlanOptions opt;
      opt.textures = textures;
      opt.include_tensors = false;
      cli::json r = report::plan_model(model_dir(GetParam()).string(), dev, opt);
      int64_t lb = r["lower_bound_bytes"];
      for (const auto& s : r["strategies"]) {
        SCOPED_TRACE(s["name"].get<std::string>());
        if (s.value("skipped", false)) {
          EXPECT_FALSE(dev.image2d_from_buffer);  // only texture-views may be unavailable
          continue;
        }
        EXPECT_TRUE(s["valid"].get<bool>()) << s.value("error", "");
        EXPECT_GE(s["total_bytes"].get<int64_t>(), lb);
        if (s["name"] == "best" && textures == TextureMode::None)
          EXPECT_LE(double(s["total_bytes"].get<int64_t>()), double(lb) * 1.001);
      }
    }
  }
}

// `best` stops its search after kBestRepairWork units of work (slow fuzz
// inputs); real models reach their plan with under 1% of it, so the budget
// never decides their plans: they are those of the unbounded search.
TEST_P(Zoo, BestReachesItsPlanWellWithinTheRepairWorkBudget) {
  for (bool optimized : {false, true}) {
    Graph g = import_onnx(model_dir(GetParam()).string());
    if (optimized) optimize(g, {});
    const PlanInput pin = make_usage_records(g);
    for (const char* target : {"pocl", "h100", "adreno"}) {
      for (const char* strategy : {"best", "texture-views"}) {
        SCOPED_TRACE(std::string(target) + " " + strategy + (optimized ? " optimized" : ""));
        const plan::MemoryPlan p = plan::plan_memory(pin.records, plan::DeviceProfile::load(target), strategy);
        EXPECT_LT(p.repair_work, plan::kBestRepairWork / 100);
      }
    }
  }
}

TEST_P(Zoo, RunsOnPoclMatchingPyTorchWithACleanGuard) {
  fs::path dir = model_dir(GetParam());
  if (!fs::exists(dir / (GetParam() + ".onnx.data")))
    GTEST_SKIP() << GetParam() << " has no weights here (regenerate with ../shared/tools/export_models.py)";
  Graph g = import_onnx(dir.string(), {.load_weights = true});
  auto device = runtime::open_device("pocl");
  const auto& profile = device->info().profile;
  PlanInput pin = make_usage_records(g);
  plan::MemoryPlan plan = plan::plan_memory(pin.records, profile, "best");
  plan::validate(plan, pin.records, profile);
  HostTensor input = load_tensor_pb((dir / "test_data_set_0" / "input_0.pb").string());
  HostTensor expected = load_tensor_pb((dir / "test_data_set_0" / "output_0.pb").string());
  runtime::SessionOptions so;
  so.guard = true;
  runtime::Session session(g, pin, plan, device, so);
  auto out = session.run({input});
  EXPECT_TRUE(session.guard_violations().empty()) << session.guard_violations().front();
  EXPECT_TRUE(session.fallback_nodes().empty());
  EXPECT_EQ(session.activation_bytes(), plan.total_bytes());
  EXPECT_LE(cli::relative_error(out[0], expected), 1e-4);
}

// All optimizations on (docs/optimizations.md): never above the bound as
// imported, same outputs, clean guard (in-place writes and concat slices
// clobber nothing live).
TEST_P(Zoo, OptimizedGraphLowersTheBoundAndRunsWithACleanGuard) {
  fs::path dir = model_dir(GetParam());
  {
    Graph g = import_onnx(dir.string());
    const OptimizeReport r = optimize(g, {});
    EXPECT_LE(r.lower_bound_bytes, r.raw_lower_bound_bytes);
    EXPECT_LE(r.nodes_after, r.nodes_before);
  }
  if (!fs::exists(dir / (GetParam() + ".onnx.data")))
    GTEST_SKIP() << GetParam() << " has no weights here (regenerate with ../shared/tools/export_models.py)";
  Graph g = import_onnx(dir.string(), {.load_weights = true});
  HostTensor input = load_tensor_pb((dir / "test_data_set_0" / "input_0.pb").string());
  HostTensor expected = load_tensor_pb((dir / "test_data_set_0" / "output_0.pb").string());
  Graph cpu_graph = g;
  auto device = runtime::open_device("pocl");
  // PoCL is a CPU device: the kernel catalog leaves FusedConvMaxPool out there (its
  // GPU kernel is checked by test_fused_kernels, the fused graph on the CPU
  // executor below, the whole zoo with it on the H100 by scripts/device/).
  optimize(g, {.device_forms = lower::kernel_catalog().fused_for(device->info().type)});
  const auto& profile = device->info().profile;
  PlanInput pin = make_usage_records(g);
  plan::MemoryPlan plan = plan::plan_memory(pin.records, profile, "best");
  plan::validate(plan, pin.records, profile);
  runtime::SessionOptions so;
  so.guard = true;
  runtime::Session session(g, pin, plan, device, so);
  auto out = session.run({input});
  EXPECT_TRUE(session.guard_violations().empty()) << session.guard_violations().front();
  EXPECT_EQ(session.activation_bytes(), plan.total_bytes());
  EXPECT_LE(cli::relative_error(out[0], expected), 1e-4);

  optimize(cpu_graph, {});  // with FusedConvMaxPool, on the reference executor
  PlanInput cpu_pin = make_usage_records(cpu_graph);
  plan::MemoryPlan cpu_plan = plan::plan_memory(cpu_pin.records, profile, "best");
  runtime::CpuExecutor cpu(cpu_graph, cpu_pin, cpu_plan);
  EXPECT_LE(cli::relative_error(cpu.run({input})[0], expected), 1e-4);
}

// A zoo model as GPUs run it (their fused forms) on texplan's GPU kernels,
// on PoCL, with `together`'s options against `apart`'s (one rewrite on, then
// off): the same output as PyTorch's, a clean guard, no fallback, the same
// bound, and `fewer` launches or more; `check` inspects the optimized graph.
void expect_gpu_forms_run(const std::string& name, const OptimizeOptions& together_options,
                          const OptimizeOptions& apart_options, int fewer,
                          const std::function<void(const Graph&, const OptimizeReport&)>& check) {
  fs::path dir = model_dir(name);
  if (!fs::exists(dir / (name + ".onnx.data")))
    GTEST_SKIP() << "no " << name << " with weights at " << dir << " (../shared/models)";
  const Graph imported = import_onnx(dir.string(), {.load_weights = true});
  Graph g = imported, apart = imported;
  OptimizeOptions on = together_options, off = apart_options;
  on.device_forms = off.device_forms = lower::kernel_catalog().fused_for("gpu");
  const OptimizeReport r = optimize(g, on);
  const OptimizeReport r_apart = optimize(apart, off);
  check(g, r);
  EXPECT_EQ(r.lower_bound_bytes, r_apart.lower_bound_bytes);
  HostTensor input = load_tensor_pb((dir / "test_data_set_0" / "input_0.pb").string());
  HostTensor expected = load_tensor_pb((dir / "test_data_set_0" / "output_0.pb").string());
  auto device = runtime::open_device("pocl");
  auto session = [&](const Graph& graph) {
    PlanInput pin = make_usage_records(graph);
    plan::MemoryPlan plan = plan::plan_memory(pin.records, device->info().profile, "best");
    runtime::SessionOptions so;
    so.guard = true;
    so.kernel_choice = {.conv = "gpu"};
    return std::make_unique<runtime::Session>(graph, pin, plan, device, so);
  };
  const auto fused = session(g), unfused = session(apart);
  auto out = fused->run({input});
  EXPECT_TRUE(fused->guard_violations().empty()) << ::testing::PrintToString(fused->guard_violations());
  EXPECT_TRUE(fused->fallback_nodes().empty());
  EXPECT_LE(cli::relative_error(out[0], expected), 1e-4);
  EXPECT_GE(unfused->kernel_launches() - fused->kernel_launches(), fewer);
}

int count_op(const Graph& g, const std::string& op) {
  return int(std::count_if(g.nodes.begin(), g.nodes.end(), [&](const Node& n) { return n.op_type == op; }));
}

// ShuffleNet's channel shuffles written by their convs: no Transpose left,
// 57 -> 39 launches (the Transposes and the copies of the one Concat the
// bound keeps).
TEST(ZooOnGpuKernels, ShuffleNetInGpuForms) {
  expect_gpu_forms_run("shufflenet_v2_x1_0", {}, {.channel_shuffle_fusion = false}, 16,
                       [](const Graph& g, const OptimizeReport& r) {
                         EXPECT_EQ(r.fused_channel_shuffles, 16);
                         EXPECT_EQ(count_op(g, "Transpose"), 0);
                       });
}

// BERT-mini's post-norm LayerNormalizations in the products before them
// (opt-in): the out-projections' four; the second MLP products' (K four
// times their rows) stay apart, free to split over K.
TEST(ZooOnGpuKernels, BertMiniInGpuForms) {
  expect_gpu_forms_run("bert_mini", {.row_norm_fusion = true}, {}, 4, [](const Graph& g, const OptimizeReport& r) {
    EXPECT_EQ(r.fused_row_norms, 4);
    EXPECT_EQ(count_op(g, "LayerNormalization"), 4);
  });
}

INSTANTIATE_TEST_SUITE_P(Models, Zoo,
                         ::testing::ValuesIn([] {
                           auto v = zoo_models();
                           if (v.empty()) v.push_back("zoo_absent");
                           return v;
                         }()),
                         [](const auto& info) { return info.param; });
