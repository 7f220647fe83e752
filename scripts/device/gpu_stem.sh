#!/usr/bin/env bash
# Runs THERE, on the GPU machine, after (here)
#   scripts/device/pack.sh -m "squeezenet1_1" texplan_conv_bench test_fused_kernels
# The tiled FusedConvMaxPool kernel for overlapping windows (issue 5, stems):
# its build on NVIDIA checked against the CPU reference, each tile timed
# against the direct kernel and the unfused conv + MaxPool, and the stems in
# whole models with pool fusion on and off.
#
#   scripts/device/gpu_stem.sh [-r REPS] [MODEL...]   (default: resnet18 resnet50 googlenet
#                                                     squeezenet1_1, those packed with weights)
#
#   $OUT/stem_tests.txt    test_fused_kernels' ConvMaxPool cases with TEXPLAN_TEST_DEVICE=gpu
#   $OUT/stem_bench.txt    texplan_conv_bench --device gpu --filter stem: per stem, the
#                          unfused pair, auto, direct and every tile (ms, conv GFLOP/s)
#   $OUT/stem_models.txt   texplan run MODEL --device gpu --profile, fused and
#                          --no-pool-fusion: the stem nodes' lines and the latency
set -uo pipefail
REPS=50
while getopts "r:h" opt; do
  case $opt in r) REPS=$OPTARG ;; *) sed -n '2,16p' "$0"; exit 2 ;; esac
done
shift $((OPTIND - 1))
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/out-gpu}
mkdir -p "$OUT"
source scripts/device/env.sh >/dev/null 2>&1
MODELS_DIR=${MODELS_DIR:-.dev/models}
models=("$@")
[[ ${#models[@]} -eq 0 ]] && models=(resnet18 resnet50 googlenet squeezenet1_1)
TEXPLAN_TEST_DEVICE=gpu timeout 240 .dev/bin/test_fused_kernels --gtest_filter='*ConvMaxPool*' 2>&1 | tail -12 \
  >"$OUT/stem_tests.txt"
timeout 180 .dev/bin/texplan_conv_bench --device gpu --reps "$REPS" --filter stem --json "$OUT/stem_bench.json" \
  >"$OUT/stem_bench.txt" 2>&1 || echo "conv bench: exit $?" >>"$OUT/stem_bench.txt"
for n in "${models[@]}"; do
  [[ -f $MODELS_DIR/$n/$n.onnx.data ]] || { echo "== $n: no weights packed"; continue; }
  for mode in fused --no-pool-fusion; do
    echo "== $n $mode"
    flags=(); [[ $mode != fused ]] && flags=("$mode")
    timeout 120 .dev/bin/texplan run "$MODELS_DIR/$n" --device gpu --check --bench 20 --profile "${flags[@]}" 2>&1 |
      grep -E 'latency|error|^op |MaxPool|conv1/|features\.0/' | head -14
  done
done >"$OUT/stem_models.txt"
cat "$OUT/stem_tests.txt" "$OUT/stem_bench.txt" "$OUT/stem_models.txt"
