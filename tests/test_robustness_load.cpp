// Load (issue 9): several runtime::Sessions, each with its own pools, run
// concurrently from several threads on one PoCL device, many times, and every
// output is checked against the CPU reference executor. Run it under
// `make sanitize` for ASan + LeakSanitizer; under plain `make test` it checks
// results only.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <random>
#include <thread>

#include "import/onnx_import.h"
#include "onnx_builder.h"
#include "optimize/usage.h"
#include "plan/memory_plan.h"
#include "runtime/cpu_executor.h"
#include "runtime/session.h"
#include "test_util.h"

using namespace texplan;
using texplan::test::OnnxBuilder;
using texplan::test::random_tensor;
namespace fs = std::filesystem;

namespace {

constexpr int kThreads = 6;
constexpr int kSessionsPerThread = 2;  // one per model
constexpr int kIterations = 200;       // per session
constexpr int kInputs = 6;             // distinct inputs, reference computed once each

// A model, its plan, and reference outputs for a few inputs.
struct Case {
  std::string name;
  Graph g;
  PlanInput pin;
  plan::MemoryPlan plan;
  std::vector<HostTensor> inputs;                  // one input tensor each (single-input models)
  std::vector<std::vector<HostTensor>> expected;   // CPU reference outputs per input
};

HostTensor random_like(const Tensor& t, uint32_t seed) {
  std::mt19937 rng(seed);
  return random_tensor(t.shape, rng);
}

Case make_case(const std::string& name, Graph g) {
  Case c;
  c.name = name;
  c.g = std::move(g);
  c.pin = make_usage_records(c.g);
  c.plan = plan::plan_memory(c.pin.records, runtime::open_device("pocl")->info().profile, "best");
  runtime::CpuExecutor cpu(c.g, c.pin, c.plan);
  for (int k = 0; k < kInputs; ++k) {
    c.inputs.push_back(random_like(c.g.tensors[c.g.inputs[0]], 1000u + uint32_t(k)));
    c.expected.push_back(cpu.run({c.inputs.back()}));
  }
  return c;
}

// tiny_cnn (Conv, pooling, Gemm...) with its weights.
Case tiny_cnn() {
  return make_case("tiny_cnn", import_onnx(std::string(TEXPLAN_SOURCE_DIR) + "/examples/models/tiny_cnn",
                                           {.load_weights = true}));
}

// A graph with a node that runs on the CPU fallback (Hardmax: blocking reads
// and writes on the shared queue in the middle of a run) and an alias.
Case fallback_mix() {
  OnnxBuilder b;
  b.input("x", {4, 32}).output("y");
  b.node("Relu", {"x"}, {"r"});
  b.node("Hardmax", {"r"}, {"h"});
  b.initializer_i64("flat", {1}, {128});
  b.node("Reshape", {"h", "flat"}, {"hf"});
  b.initializer_i64("back", {2}, {4, 32});
  b.node("Reshape", {"hf", "back"}, {"hb"});
  b.node("Add", {"hb", "r"}, {"y"});
  return make_case("fallback_mix", import_onnx(b.save(test::temp_dir("load"), "fallback_mix"), {.load_weights = true}));
}

bool same(const HostTensor& a, const HostTensor& b) {
  if (a.dtype != b.dtype || a.shape != b.shape || a.bytes.size() != b.bytes.size()) return false;
  std::vector<float> x = a.as_float(), y = b.as_float();
  double num = 0, den = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    num += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
    den += double(y[i]) * y[i];
  }
  return num <= 1e-8 * std::max(den, 1.0);  // relative error 1e-4, as texplan run --check
}

}  // namespace

TEST(Load, ConcurrentSessionsOnOneDeviceMatchTheCpuReferenceEveryTime) {
  auto dev = runtime::open_device("pocl");
  const std::vector<Case> cases = {tiny_cnn(), fallback_mix()};
  std::atomic<int> runs{0}, mismatches{0}, errors{0};
  std::vector<std::string> first_problem(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        std::vector<std::unique_ptr<runtime::Session>> sessions;  // this thread's own, own pools
        for (int s = 0; s < kSessionsPerThread; ++s) {
          const Case& c = cases[size_t(s) % cases.size()];
          sessions.push_back(std::make_unique<runtime::Session>(c.g, c.pin, c.plan, dev));
        }
        for (int i = 0; i < kIterations; ++i) {
          for (int s = 0; s < kSessionsPerThread; ++s) {
            const Case& c = cases[size_t(s) % cases.size()];
            const int k = (t * 7 + i * 3 + s) % kInputs;
            std::vector<HostTensor> out = sessions[size_t(s)]->run({c.inputs[size_t(k)]});
            ++runs;
            bool ok = out.size() == c.expected[size_t(k)].size();
            for (size_t o = 0; ok && o < out.size(); ++o) ok = same(out[o], c.expected[size_t(k)][o]);
            if (!ok && mismatches++ == 0)
              first_problem[size_t(t)] = c.name + ": thread " + std::to_string(t) + " iteration " + std::to_string(i);
          }
        }
      } catch (const std::exception& e) {
        ++errors;
        first_problem[size_t(t)] = e.what();
      }
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& p : first_problem) EXPECT_TRUE(p.empty()) << p;
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(runs.load(), kThreads * kSessionsPerThread * kIterations);
  std::cout << kThreads << " threads x " << kSessionsPerThread << " sessions x " << kIterations << " iterations = "
            << runs.load() << " runs, " << mismatches.load() << " mismatches\n";
  RecordProperty("runs", runs.load());
  RecordProperty("mismatches", mismatches.load());
}

// Sessions made and dropped from several threads while others run: pools,
// kernels and weights of every dropped session are released (LeakSanitizer
// says so under make sanitize), and the survivors keep matching.
TEST(Load, SessionsComeAndGoWhileOthersRun) {
  auto dev = runtime::open_device("pocl");
  const Case c = tiny_cnn();
  runtime::Session steady(c.g, c.pin, c.plan, dev);
  std::atomic<bool> stop{false};
  std::atomic<int> mismatches{0}, steady_runs{0};
  std::thread runner([&] {
    for (int i = 0; !stop; ++i, ++steady_runs)
      if (!same(steady.run({c.inputs[size_t(i % kInputs)]})[0], c.expected[size_t(i % kInputs)][0])) ++mismatches;
  });
  std::vector<std::thread> churn;
  for (int t = 0; t < 2; ++t)
    churn.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        runtime::Session s(c.g, c.pin, c.plan, dev);
        const int k = (t + i) % kInputs;
        if (!same(s.run({c.inputs[size_t(k)]})[0], c.expected[size_t(k)][0])) ++mismatches;
      }
    });
  for (auto& th : churn) th.join();
  stop = true;
  runner.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_GT(steady_runs.load(), 0);
}
