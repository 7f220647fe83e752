// Command-line options that more than one command takes (texplan plan,
// texplan run, texplan tune, texplan_bench): the optimizer's switches,
// --patch, and symbolic dimensions.
#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "optimize/patch.h"

namespace texplan::cli {

void add_optimize_options(CLI::App& app, OptimizeOptions& o) {
  app.add_flag_callback("--no-fuse", [&o] { o.fuse = false; }, "keep Conv/MatMul/BatchNormalization/activations unfused");
  app.add_flag_callback("--no-pool-fusion", [&o] { o.pool_fusion = false; },
                        "keep MaxPool apart from the convolution before it");
  app.add_flag_callback("--no-mlp-fusion", [&o] { o.mlp_fusion = false; },
                        "keep two fully connected 1x1 convolutions in a row apart");
  app.add_flag_callback("--no-depthwise-input-fusion", [&o] { o.depthwise_input_fusion = false; },
                        "keep each depthwise convolution apart from the 1x1 convolution reading it (GPUs)");
  app.add_flag_callback("--no-channel-shuffle-fusion", [&o] { o.channel_shuffle_fusion = false; },
                        "keep ShuffleNet's channel shuffle (Concat, Reshape, Transpose, Reshape) apart from the "
                        "1x1 convolution computing one of its halves (GPUs)");
  app.add_flag_callback("--row-norm-fusion", [&o] { o.row_norm_fusion = true; },
                        "take a LayerNormalization into the product (and residual) before it (GPUs; opt-in: "
                        "slower on BERT-mini on an H200)");
  app.add_flag_callback("--no-channel-program-fusion", [&o] { o.channel_program_fusion = false; },
                        "keep a per-channel elementwise node (BatchNormalization + Relu) apart from the 1x1 "
                        "convolution after it");
  app.add_flag_callback("--no-channel-gate-fusion", [&o] { o.channel_gate_fusion = false; },
                        "keep squeeze-and-excitation's second fully connected layer apart from the 1x1 "
                        "convolution its scale feeds (GPUs)");
  app.add_flag_callback("--no-concat-slice-views", [&o] { o.concat_slice_views = false; },
                        "a Slice that an elided Concat passes through copies into the Concat's output");
  app.add_flag_callback("--no-strided-operands", [&o] { o.strided_operands = false; },
                        "products read operands that Slices, Gathers and Transposes cut and move as copies");
  app.add_flag_callback("--no-attention-fusion", [&o] { o.attention_fusion = false; },
                        "keep attention's products, scale, mask and Softmax apart (the score matrix stored)");
  app.add_flag_callback("--no-attention-output-transposes", [&o] { o.attention_output_transposes = false; },
                        "a Transpose after a fused attention copies its output instead of the attention "
                        "writing it transposed");
  app.add_flag_callback("--no-inplace", [&o] { o.inplace = false; }, "every node writes fresh storage");
  app.add_flag_callback("--no-concat-elision", [&o] { o.concat_elision = false; },
                        "Concat copies its inputs instead of producers writing their slice");
  app.add_option_function<std::string>(
         "--order", [&o](const std::string& s) { o.order = parse_order(s); },
         "execution order: file (as imported) or memory (lowest peak of live bytes among several heuristics)")
      ->check(CLI::IsMember({"file", "memory"}))
      ->default_str("memory");
}

void add_patch_option(CLI::App& app, std::string& patch) {
  app.add_option("--patch", patch,
                 "off, auto, or a grid RxC (e.g. 4x4): run the memory-heavy first stages patch by patch "
                 "(docs/patching.md)")
      ->check([](const std::string& s) {
        try {
          parse_patch(s);
          return std::string();
        } catch (const Error& e) {
          return std::string(e.what());
        }
      })
      ->capture_default_str();
}

void add_shape_options(CLI::App& app, ShapeSettings& s) {
  app.add_option("--dim", s.dims,
                 "NAME=VALUE: the value of a symbolic input dimension, e.g. --dim batch=1 (repeatable)");
  app.add_option("--input-shape", s.input_shapes,
                 "NAME=DxDx...: the whole shape of an input, e.g. --input-shape input=1x3x224x224 (repeatable)");
}

void apply_shape_settings(const ShapeSettings& s, ImportOptions& import) {
  for (const auto& d : s.dims) {
    auto [name, value] = parse_dim_setting(d);
    auto [it, fresh] = import.dims.emplace(name, value);
    if (!fresh && it->second != value) throw Error("--dim " + name + " is given twice, with different values");
  }
  for (const auto& d : s.input_shapes) {
    auto [name, shape] = parse_input_shape_setting(d);
    auto [it, fresh] = import.input_shapes.emplace(name, shape);
    if (!fresh && it->second != shape) throw Error("--input-shape " + name + " is given twice, with different shapes");
  }
}

}  // namespace texplan::cli
