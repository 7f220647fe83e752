#!/usr/bin/env bash
# Runs THERE, on the GPU machine, after (here)
#   scripts/device/pack.sh -m "" texplan_conv_bench test_fused_kernels test_dispatch
# Split-K for the GPU GEMM and implicit-GEMM conv (issue 7): the NVIDIA build
# (inline PTX red.global.add.f32) checked against the CPU reference, then the
# deep small-grid convs timed whole and split.
#
#   scripts/device/gpu_splitk.sh [-r REPS] [-F FILTER]
#
#   $OUT/splitk_tests.txt  test_fused_kernels' split-K and tuning cases and
#                          test_dispatch, on the GPU (TEXPLAN_TEST_DEVICE=gpu)
#   $OUT/conv_splitk.txt   texplan_conv_bench --device gpu over FILTER (default:
#                          the 7x7 and 14x14 3x3 shapes and the 7x7 1x1 ones):
#                          auto, every tile whole and split by shape (TILES/split),
#                          and fixed slice counts of 64x64v and 128x64v; a
#                          "3 launches" mark on the rows that split
set -uo pipefail
REPS=20 FILTER=""
while getopts "r:F:h" opt; do
  case $opt in r) REPS=$OPTARG ;; F) FILTER=$OPTARG ;; *) sed -n '2,18p' "$0"; exit 2 ;; esac
done
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/out-gpu}
mkdir -p "$OUT"
source scripts/device/env.sh >/dev/null 2>&1
{
  TEXPLAN_TEST_DEVICE=gpu timeout 240 .dev/bin/test_fused_kernels \
    --gtest_filter='*SplitK*:*TilesComeFromTheTuningCache*:*ConvEveryTileVariant*:*MatMul*' 2>&1 | tail -25
  TEXPLAN_TEST_DEVICE=gpu timeout 60 .dev/bin/test_dispatch 2>&1 | tail -8
} >"$OUT/splitk_tests.txt"
variants=auto,$(.dev/bin/texplan_conv_bench --list | grep -v -e ':' -e '^tf32' | paste -sd,)
variants+=,64x64v/s4,64x64v/s8,64x64v/s16,128x64v/s8,128x64v/s16,128x64v/s32
filters=("${FILTER:-512 7 3x3}")
[[ -z $FILTER ]] && filters+=("256 14 3x3" "512->512 14 3x3" "1x1 2048->512 7" "1x1 512->2048 7")
for f in "${filters[@]}"; do
  timeout 120 .dev/bin/texplan_conv_bench --device gpu --reps "$REPS" --variants "$variants" --filter "$f" \
    2>&1 | grep -v '^device:' >>"$OUT/conv_splitk.txt" || echo "conv bench '$f': exit $?" >>"$OUT/conv_splitk.txt"
done
cat "$OUT/splitk_tests.txt" "$OUT/conv_splitk.txt"
