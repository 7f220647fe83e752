// texplan tune: `texplan run` with the kernel search on. Every node whose
// lowering has variants (lower/tuning.h) and whose shape the cache lacks
// is timed once on the device; the winners go into --tuning-cache, which
// later `texplan run --tuning-cache FILE` loads without searching.
#include <CLI/CLI.hpp>

#include "cli/commands.h"

namespace texplan::cli {

void add_tune_options(CLI::App& app, RunArgs& a) {
  add_run_options(app, a);
  app.get_option("--tuning-cache")->required();
}

int tune_command(RunArgs a) {
  if (a.device == "cpu") throw Error("tune: the reference executor (--device cpu) has no kernels to tune");
  a.tune = true;
  return run_command(a);
}

}  // namespace texplan::cli
