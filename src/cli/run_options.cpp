// `texplan run`'s options (RunArgs, commands.h), apart from the command
// itself (run_command.cpp); `tune` shares them (tune_command.cpp).
#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/usage.h"

namespace texplan::cli {

void add_run_options(CLI::App& app, RunArgs& a) {
  app.add_option("model", a.model, "model .onnx file or model folder")->required();
  app.add_option("--device", a.device, "pocl, gpu, opencl:N, or cpu (the reference executor)")
      ->check(device_spec({"pocl", "gpu", "cpu"}))
      ->capture_default_str();
  app.add_option("--input", a.inputs, "input tensor(s) as .pb (default: the folder's test_data_set_0)");
  app.add_option("--random-input", a.random_input,
                 "seeded random inputs (floats in [-1, 1), integers in [0, 100) or below the table they index); "
                 "without --input or test data: seed 0")
      ->expected(0, 1)
      ->check(whole_number(0, 4294967295LL))
      ->default_str("0");
  app.add_option("--strategy", a.strategy, "memory planning strategy")
      ->check(strategy_name(/*allow_all=*/false))
      ->capture_default_str();
  app.add_option("--textures", a.textures,
                 "none: buffers; pools: 4D activations as textures in image pools; views: as image views over the "
                 "buffer arena; auto: what the device's profile says pays")
      ->check(CLI::IsMember({"none", "auto", "pools", "views"}))
      ->capture_default_str();
  app.add_option("--texture-layout", a.texture_layout,
                 "cost: each texture in the layout of the smallest footprint; rows: NC4HW4 rows (W pixels a row); "
                 "wide: wide rows (W*C/4 pixels a row)")
      ->check(CLI::IsMember({"cost", "rows", "wide"}))
      ->capture_default_str();
  app.add_flag("--check", a.check, "compare with test_data_set_0/output_*.pb; exit 5 above --tolerance");
  app.add_flag("--allow-trivial-reference", a.allow_trivial_reference,
               "let --check pass against a reference output that is all zeros, constant, or hardly moved by "
               "the input (refused otherwise)");
  app.add_option("--tolerance", a.tolerance,
                 "largest relative error --check accepts (default 1e-4 with fp32, 1e-2 with tf32 and fp16, 5e-2 for a "
                 "quantized model)")
      ->check(number_in(0));
  app.add_option("--precision", a.precision,
                 "fp32: exact; tf32: Conv/Gemm/MatMul on tensor cores with inputs rounded to tf32 (NVIDIA GPUs, "
                 "opt-in: relative errors near 1e-3; elsewhere fp32 with a warning); fp16: float activations and "
                 "weights stored as IEEE half, fp32 arithmetic (every device; plans halve; errors near 1e-3)")
      ->check(CLI::IsMember({"fp32", "tf32", "fp16"}))
      ->capture_default_str();
  app.add_option("--recurrent-kernel", a.recurrent,
                 "RNN/GRU/LSTM steps: steps (a launch a step), persistent (all steps in one launch, a grid barrier "
                 "between them; devices with device-scope fences, OpenCL C 3.0's or NVIDIA's), auto (persistent wherever "
                 "the device has one)")
      ->check(CLI::IsMember({"auto", "steps", "persistent"}))
      ->capture_default_str();
  app.add_flag("--guard", a.guard, "poison pools and check after every node that live tensors stay intact");
  app.add_option("--bench", a.bench, "time N runs after warm-up")->check(whole_number(0, 1 << 30));
  app.add_option("--io", a.io,
                 "host: runs copy the inputs from host memory and the outputs back (latency counts them); "
                 "device: inputs and outputs stay in device buffers (DeviceTensor, as a GPU pipeline or PyTorch "
                 "on CUDA keeps them), copied into and out of the plan on the device")
      ->check(CLI::IsMember({"host", "device"}))
      ->capture_default_str();
  app.add_option("--json", a.json_path, "write the report as JSON (-: to stdout, the table to stderr)");
  app.add_option("--output", a.output_dir, "write the outputs as output_N.pb into this folder");
  add_patch_option(app, a.patch);
  app.add_option("--offload", a.offload,
                 "none: texplan's kernels only; clblast: GEMM-shaped nodes (Gemm, MatMul, Conv as im2col+GEMM) "
                 "to CLBlast; auto: per node the faster of the two, measured once (kept in --tuning-cache)")
      ->check(CLI::IsMember({"none", "clblast", "auto"}))
      ->capture_default_str();
  app.add_option("--clblast-tune", a.clblast_tune,
                 "with --offload and --tuning-cache: tune CLBlast's GEMM kernels over FRACTION (0..1] of their search "
                 "space once per device and keep them in the cache (minutes on a GPU; hours on PoCL)")
      ->check(number_in(0, 1));
  app.add_option("--offload-only", a.offload_only,
                 "with --offload: offload only the nodes whose names contain one of these comma-separated parts "
                 "(the others run on texplan's kernels)")
      ->delimiter(',')
      ->group("Testing and debugging");
  app.add_option("--offload-reject", a.offload_reject,
                 "with --offload: make every CLBlast call invalid, so the library rejects it while the session "
                 "prepares (prepare) or during the run (run), to exercise the fallback to texplan's kernels")
      ->check(CLI::IsMember({"prepare", "run"}))
      ->group("Testing and debugging");
  app.add_option("--tuning-cache", a.tuning_cache,
                 "tuning results file (read, and updated when something was measured): kernel choices and CLBlast's");
  app.add_flag_callback("--no-program-cache", [&a] { a.program_cache = false; },
                        "compile every kernel program from source, neither reading nor writing the program cache "
                        "($TEXPLAN_CACHE_DIR, else ~/.cache/texplan/programs)");
  app.add_flag("--profile", a.profile, "time every node from OpenCL events, per operator type, with GFLOP/s and GB/s");
  app.add_option("--trace", a.trace_path,
                 "write the profiled runs as a Chrome trace, FILE.json (Perfetto, chrome://tracing): kernels on the "
                 "device's track, each node's enqueue on the host's; implies --profile")
      ->check(extension_in("trace", {".json"}) & in_existing_folder("trace"));
  add_optimize_options(app, a.optimize);
  add_shape_options(app, a.shapes);
}

}  // namespace texplan::cli
