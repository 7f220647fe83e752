// The fuzz targets as plain functions: fuzz/fuzzer.cpp wraps one in
// LLVMFuzzerTestOneInput (built with clang and libFuzzer), and
// fuzz/regressions_test.cpp replays fuzz/regressions/<target>/* through the
// same functions in the ordinary build (GoogleTest, any compiler).
//
// Contract checked by every target: for any bytes, texplan either succeeds
// or throws texplan::Error / plan::PlanError, which the target catches.
// Anything else (another exception, a crash, a sanitizer report, a hang, a
// huge allocation) is a finding. A target aborts on a broken promise, e.g.
// a plan that fails the validator.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "plan/memory_plan.h"

namespace texplan::fuzz {

// Bytes -> onnx.ModelProto -> import (shape inference, folding) -> usage
// records -> a plan, validated. External data resolves in a scratch folder
// holding a small weights file.
void import_model(const uint8_t* data, size_t size);

// Bytes decoded into a small, mostly well-formed ONNX graph (shape ops,
// folding candidates, windows, broadcasting; random attributes and
// wiring), then as import_model. Reaches far deeper into shape inference
// and folding than mutating protobuf bytes does.
void shapes(const uint8_t* data, size_t size);
// The serialized model `shapes` decodes from these bytes, for debugging:
// TEXPLAN_FUZZ_DUMP=m.onnx fuzz_shapes crash-... writes it.
std::string shapes_model(const uint8_t* data, size_t size);

// Bytes decoded into usage records and a device profile -> every strategy
// -> validate: each plan must validate, or the strategy throw PlanError.
void planner(const uint8_t* data, size_t size);
// The records and device `planner` decodes from these bytes.
struct PlannerInput {
  plan::DeviceProfile device;
  std::vector<plan::UsageRecord> records;
};
PlannerInput planner_input(const uint8_t* data, size_t size);

// Bytes -> onnx.TensorProto -> HostTensor (test inputs, external data).
void tensor(const uint8_t* data, size_t size);

// Bytes decoded into a model as `shapes` does -> import (which validates
// every node) -> optimize for a CPU device -> plan -> a run on PoCL with
// inputs from the bytes (fuzz/run_target.cpp). A model that imports must
// run or stop with texplan::Error; its outputs come back as planned. Models
// with inputs over 65,536 elements or plans over 4 MiB are skipped.
void run_model(const uint8_t* data, size_t size);

// A scratch folder with small weights files that fuzzed external data
// resolves in (one per process).
const std::string& scratch_dir();

struct Target {
  const char* name;
  void (*run)(const uint8_t*, size_t);
};
const std::vector<Target>& targets();  // import, shapes, planner, tensor, run

}  // namespace texplan::fuzz
