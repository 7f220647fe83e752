#!/bin/bash
# The bound of each zoo CNN without and with patch-based execution
# (docs/patching.md): texplan plan MODEL --patch MODE --strategy best, one
# markdown row per model and the geometric mean of the ratios.
#   scripts/patch_table.sh [MODELS_DIR] [MODE]    (defaults: ../shared/models, auto)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
models=${1:-$here/../shared/models}
mode=${2:-auto}
texplan=${TEXPLAN:-$here/build/texplan}
echo "| model | bound unpatched | bound patched | ratio | segments (grid: nodes) | extra FLOPs | copied per run | plan s |"
echo "|---|---:|---:|---:|---|---:|---:|---:|"
logsum=0
n=0
for m in squeezenet1_1 mobilenet_v2 mnasnet1_0 efficientnet_b0 resnet18 resnet50 shufflenet_v2_x1_0 googlenet \
         densenet121 vgg16 unet_small; do
  start=$(date +%s.%N)
  json=$("$texplan" plan "$models/$m" --patch "$mode" --strategy best --json - -q 2>/dev/null)
  secs=$(echo "$(date +%s.%N) - $start" | bc)
  echo "$json" | jq -r --arg m "$m" --arg s "$secs" '.patching as $p |
    def mib: . / 1048576 * 100 | round / 100 | tostring + " MiB";
    [$m, ($p.bound_without_bytes | mib), ($p.bound_with_bytes | mib), ($p.bound_ratio * 1000 | round / 1000 | tostring),
     (if $p.applied then ([$p.segments[] | .grid + ": " + (.nodes | tostring)] | join(", ")) else "none: " + $p.reason end),
     (($p.extra_flops_pct * 10 | round / 10 | tostring) + "%"),
     (($p.copy_bytes // 0) | mib), ($s | tonumber * 10 | round / 10 | tostring)] | "| " + join(" | ") + " |"'
  ratio=$(echo "$json" | jq '.patching.bound_ratio')
  logsum=$(echo "$logsum + l($ratio)" | bc -l)
  n=$((n + 1))
done
printf "\ngeometric mean of the ratios: %.3f over %d models\n" "$(echo "e($logsum / $n)" | bc -l)" "$n"
