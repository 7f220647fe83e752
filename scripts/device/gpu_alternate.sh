#!/usr/bin/env bash
# Runs THERE (after pack.sh): two run configurations of one model, alternated
# over ROUNDS rounds (A B, B A, A B, ...), to tell a real difference from the
# H100's run-to-run drift (the same plan's median moves up to 25% between
# back-to-back processes). One line per round and the median of the rounds'
# medians for each side, in $OUT/alternate.txt.
#
#   scripts/device/gpu_alternate.sh [-n RUNS] [-r ROUNDS] MODEL "ARGS A" "ARGS B"
#   e.g. scripts/device/gpu_alternate.sh -r 4 densenet121 "--offload none" "--offload auto --tuning-cache t.json"
set -uo pipefail
RUNS=20 ROUNDS=4
while getopts "n:r:h" opt; do
  case $opt in n) RUNS=$OPTARG ;; r) ROUNDS=$OPTARG ;; *) sed -n '2,10p' "$0"; exit 2 ;; esac
done
shift $((OPTIND - 1))
(($# == 3)) || { sed -n '2,10p' "$0"; exit 2; }
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/out-gpu}
mkdir -p "$OUT"
source scripts/device/env.sh >/dev/null 2>&1
m=$1 a=$2 b=$3 tmp=$(mktemp -d)
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
ms() { texplan run ".dev/models/$m" --device gpu --bench "$RUNS" $1 --json "$tmp/r.json" >/dev/null 2>&1 &&
  grep -o '"median_ms": *[0-9.e-]*' "$tmp/r.json" | grep -o '[0-9.e-]*$'; }
{
  echo "$m: A = $a; B = $b; $ROUNDS rounds of $RUNS runs"
  for ((r = 0; r < ROUNDS; ++r)); do
    if ((r % 2)); then tb=$(ms "$b"); ta=$(ms "$a"); else ta=$(ms "$a"); tb=$(ms "$b"); fi
    echo "round $((r + 1)): A $ta ms, B $tb ms"
    echo "$ta" >>"$tmp/a"; echo "$tb" >>"$tmp/b"
  done
  ma=$(median <"$tmp/a") mb=$(median <"$tmp/b")
  echo "median of round medians: A $ma ms, B $mb ms, B/A $(awk -v a="$ma" -v b="$mb" 'BEGIN {printf "%.3f", b / a}')"
} | tee -a "$OUT/alternate.txt"
rm -rf "$tmp"
