#!/usr/bin/env bash
# Runs THERE (pack HERE with `scripts/device/pack.sh -m "" texplan_conv_bench
# texplan_gemm_probe`): whether the k-groups (gemm_kgroups.cl) are slower than the
# standalone GEMM because of their code or of texplan's launch
# (docs/kernel-choices.md#a-standalone-gemm-faster-than-the-k-groups). On
# ViT-B/16's and BERT-mini's products and a 1x1 conv's GEMM, in one call:
#   probe.txt       texplan_gemm_probe: its own kernel's forms and texplan's (gemm.cl, gemm_kgroups.cl)
#                   (source tree's src/kernels) launched by it, registers on stderr (probe_build.txt)
#   conv_bench.txt  texplan_conv_bench: the same gemm.cl forms through texplan's runtime
#   scripts/device/gpu_gemm_probe.sh [-n REPS] [-d gpu|cpu] [-s SHAPES]
#     -d cpu tries it here on PoCL (small shapes by default then)
set -uo pipefail
REPS=20 DEVICE=gpu SHAPES=""
while getopts "n:d:s:h" opt; do
  case $opt in n) REPS=$OPTARG ;; d) DEVICE=$OPTARG ;; s) SHAPES=$OPTARG ;; *) sed -n '2,12p' "$0"; exit 2 ;; esac
done
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/out-gpu}
mkdir -p "$OUT"
source scripts/device/env.sh >/dev/null 2>&1 || true
if [[ -z $SHAPES ]]; then
  SHAPES=197x768x2304,197x768x768,197x768x3072,197x3072x768,128x256x768t,128x256x256t,128x256x1024t,64x256x3136
  [[ $DEVICE == cpu ]] && SHAPES=37x256x44,37x256x44t
fi
variants=gemm.cl:32x32k2,gemm.cl:32x64k2,gemm.cl:32x64k4,32x32_4x4_k2,32x64_8x4_k2_db,32x64_8x4_k4
bench=$(command -v texplan_gemm_probe || echo build/texplan_gemm_probe)
conv=$(command -v texplan_conv_bench || echo build/texplan_conv_bench)
"$bench" --device "$DEVICE" --reps "$REPS" --verbose --kernels-dir src/kernels --kernel bench/kernels/gemm_probe.cl \
  "$SHAPES" "$variants" >"$OUT/probe.txt" 2>"$OUT/probe_build.txt"
echo "probe rc=$?" >>"$OUT/probe.txt"
[[ $DEVICE == cpu ]] && dev=pocl || dev=gpu
"$conv" --device "$dev" --reps "$REPS" --product "$SHAPES" --variants auto,32x32k2,32x64k2,32x64k4 >"$OUT/conv_bench.txt" 2>&1
echo "conv_bench rc=$?" >>"$OUT/conv_bench.txt"
cat "$OUT/probe.txt"
grep -a -E "^product|^  [a-z0-9x]+ " "$OUT/conv_bench.txt"
