// The CPU reference executor: runs a graph with the reference operators, with
// every activation at the place the memory plan gives it, in host pools. It
// checks kernels (same graph, same plan, plain C++ math) and proves a plan
// on the CPU: a plan that overlaps live tensors gives wrong outputs here too.
#pragma once
#include <vector>

#include "graph/graph.h"
#include "optimize/usage.h"
#include "plan/memory_plan.h"

namespace texplan::runtime {

class CpuExecutor {
 public:
  CpuExecutor(const Graph& g, const PlanInput& in, const plan::MemoryPlan& plan);
  // Inputs in g.inputs order; outputs in g.outputs order.
  std::vector<HostTensor> run(const std::vector<HostTensor>& inputs);
  int64_t activation_bytes() const;

 private:
  HostTensor read(int tensor) const;
  void write(int tensor, const HostTensor& v);
  uint8_t* place(int tensor);

  const Graph& g_;
  const PlanInput& in_;
  const plan::MemoryPlan& plan_;
  std::vector<std::vector<uint8_t>> pools_;
};

// Checks that `inputs` match the graph's inputs in count, shape and type;
// throws Error naming the model and the input otherwise.
void check_inputs(const Graph& g, const std::vector<HostTensor>& inputs);

}  // namespace texplan::runtime
