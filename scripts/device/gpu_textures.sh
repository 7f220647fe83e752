#!/usr/bin/env bash
# Textures against buffers on the GPU (issue 4), in one run: for every packed
# model with weights, `texplan run --device gpu` with --textures none, pools
# and views, each with --check --bench N --profile --json, then once more
# with --guard (textures only); texture_table.py turns the JSON into tables:
# per model (bytes, rel error, guard, median ms, ratio to none) and per conv
# node (texture ms / buffer ms, from the OpenCL event profile).
#   scripts/device/gpu_textures.sh [-n RUNS] [-t SECONDS_PER_RUN] [MODEL...]
# Writes $OUT/textures/*.json, $OUT/textures.md and $OUT/textures_log.txt.
set -uo pipefail
RUNS=50 LIMIT=150
while getopts "n:t:h" opt; do
  case $opt in n) RUNS=$OPTARG ;; t) LIMIT=$OPTARG ;; *) sed -n '2,9p' "$0"; exit 2 ;; esac
done
shift $((OPTIND - 1))
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/out-gpu}
mkdir -p "$OUT/textures"
source scripts/device/env.sh
models=("$@")
((${#models[@]})) || mapfile -t models < <(runnable_models)
{
  for n in "${models[@]}"; do
    for t in none pools views; do
      echo "== $n --textures $t"
      timeout "$LIMIT" texplan run ".dev/models/$n" --device gpu --textures "$t" --check --bench "$RUNS" --profile \
        --json "$OUT/textures/${n}_$t.json" || echo "exit status $? ($n $t)"
      if [[ $t != none ]]; then
        timeout "$LIMIT" texplan run ".dev/models/$n" --device gpu --textures "$t" --check --guard \
          --json "$OUT/textures/${n}_${t}_guard.json" || echo "exit status $? ($n $t guard)"
      fi
    done
  done
} 2>&1 | tee "$OUT/textures_log.txt"
env LD_LIBRARY_PATH="${TEXPLAN_SYSTEM_LD_LIBRARY_PATH:-}" python3 scripts/device/texture_table.py "$OUT/textures" \
  | tee "$OUT/textures.md"
