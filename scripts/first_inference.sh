#!/bin/bash
# Seconds from process start to the first inference of `texplan run MODEL
# --check` on PoCL, with texplan's program cache and PoCL's kernel cache cold
# and warm (docs/cli.md#program-cache, docs/performance.md). Both caches live
# in a temporary folder, never in ~/.cache. Per model, in this order:
#   cold       both caches empty (fills both)
#   warm       both warm: a second run, as a user sees it
#   pocl-cold  texplan's cache from the cold run, PoCL's emptied
#   texplan-cold  PoCL's cache warm, texplan's emptied
# then ROUNDS-1 more rounds of warm and texplan-cold alternated; a cell with
# several rounds gives min-max. Each figure is the run's first_inference_ms;
# the last column is the warm run's wall time of the whole process.
#   scripts/first_inference.sh [-r ROUNDS] MODEL_DIR...    (TEXPLAN=build/texplan)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
texplan=${TEXPLAN:-$here/build/texplan}
rounds=1
if [ "${1:-}" = "-r" ]; then rounds=$2; shift 2; fi
work=$(mktemp -d /tmp/texplan-first-inference.XXXXXX)
trap 'rm -rf "$work"' EXIT

# One run: "FIRST_INFERENCE_S WALL_S" (exits on a failed run or check).
run() {
  local start end json
  start=$(date +%s.%N)
  json=$(POCL_CACHE_DIR=$work/pocl TEXPLAN_CACHE_DIR=$work/texplan "$texplan" -q run "$1" --check --json -)
  end=$(date +%s.%N)
  echo "$(echo "$json" | jq '.first_inference_ms / 1000') $(echo "$end - $start" | bc)"
}
range() {  # min-max of the numbers given, 2 decimals
  printf '%s\n' "$@" | sort -g | sed -n '1p;$p' | xargs printf '%.2f ' | awk '{print ($1 == $2) ? $1 : $1 "-" $2}'
}

echo "| model | both cold | pocl cold, texplan warm | texplan cold, pocl warm | both warm | both warm, whole process |"
echo "|---|---:|---:|---:|---:|---:|"
for model in "$@"; do
  rm -rf "$work/pocl" "$work/texplan"
  read -r cold _ < <(run "$model")
  warm=() warm_wall=() texplan_cold=()
  read -r w ww < <(run "$model"); warm+=("$w"); warm_wall+=("$ww")
  rm -rf "$work/pocl"
  read -r pocl_cold _ < <(run "$model")
  for ((k = 0; k < rounds; k++)); do
    rm -rf "$work/texplan"
    read -r t _ < <(run "$model"); texplan_cold+=("$t")
    if ((k > 0)); then read -r w ww < <(run "$model"); warm+=("$w"); warm_wall+=("$ww"); fi
  done
  echo "| $(basename "$model") | $(range "$cold") | $(range "$pocl_cold") | $(range "${texplan_cold[@]}") |" \
       "$(range "${warm[@]}") | $(range "${warm_wall[@]}") |"
done
