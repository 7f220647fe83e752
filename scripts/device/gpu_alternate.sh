#!/usr/bin/env bash
# Runs THERE (after pack.sh, the model exported or packed): two configurations
# of one model alternated over ROUNDS rounds (A B, B A, A B, ...), to tell a
# real difference from the H100's drift (the same plan's median moves up to
# 25% between back-to-back processes; PyTorch eager's vgg16 moved 1.05 ->
# 1.83 ms between calls of one session). A side is `texplan run` arguments,
# or the word `eager`: PyTorch eager at its defaults (bench/peers/torch_bench.py).
# One line per round and each side's median of round medians, in
# $OUT/alternate.txt.
#
#   scripts/device/gpu_alternate.sh [-n RUNS] [-r ROUNDS] MODEL "A" "B"
#   e.g. scripts/device/gpu_alternate.sh -r 4 densenet121 "--offload none" "--offload auto --tuning-cache t.json"
#        scripts/device/gpu_alternate.sh -r 5 vgg16 "--check" eager
set -uo pipefail
RUNS=20 ROUNDS=4
while getopts "n:r:h" opt; do
  case $opt in n) RUNS=$OPTARG ;; r) ROUNDS=$OPTARG ;; *) sed -n '2,14p' "$0"; exit 2 ;; esac
done
shift $((OPTIND - 1))
(($# == 3)) || { sed -n '2,14p' "$0"; exit 2; }
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/out-gpu}
mkdir -p "$OUT"
source scripts/device/env.sh >/dev/null 2>&1
m=$1 a=$2 b=$3 tmp=$(mktemp -d)
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
ms() {  # one side once: its median ms, nothing when it failed
  rm -f "$tmp/r.json"
  if [[ $1 == eager ]]; then
    timeout 90 env LD_LIBRARY_PATH="$TEXPLAN_SYSTEM_LD_LIBRARY_PATH" python3 bench/peers/torch_bench.py --no-graph \
      --zoo .dev/tools/export_models.py --models .dev/models --runs "$RUNS" --json "$tmp/r.json" "$m" >/dev/null 2>&1
  else
    timeout 90 texplan run ".dev/models/$m" --device gpu --bench "$RUNS" $1 --json "$tmp/r.json" >/dev/null 2>&1
  fi && grep -o '"median_ms": *[0-9.e-]*' "$tmp/r.json" | head -1 | grep -o '[0-9.e-]*$'
}
{
  echo "$m: A = $a; B = $b; $ROUNDS rounds of $RUNS runs"
  for ((r = 0; r < ROUNDS; ++r)); do
    if ((r % 2)); then tb=$(ms "$b"); ta=$(ms "$a"); else ta=$(ms "$a"); tb=$(ms "$b"); fi
    echo "round $((r + 1)): A ${ta:-failed} ms, B ${tb:-failed} ms"
    [[ -n $ta ]] && echo "$ta" >>"$tmp/a"; [[ -n $tb ]] && echo "$tb" >>"$tmp/b"
  done
  if [[ -s $tmp/a && -s $tmp/b ]]; then
    ma=$(median <"$tmp/a") mb=$(median <"$tmp/b")
    echo "median of round medians: A $ma ms, B $mb ms, B/A $(awk -v a="$ma" -v b="$mb" 'BEGIN {printf "%.3f", b / a}')"
  else
    echo "no result on one side"
  fi
} | tee -a "$OUT/alternate.txt"
rm -rf "$tmp"
