#!/usr/bin/env bash
# Runs THERE, on the GPU machine (after pack.sh, with texplan_conv_bench packed
# for -c): --precision tf32 against exact fp32 (issue 7, docs/precision.md).
#
#   scripts/device/gpu_tf32.sh [-n RUNS] [-c] [-p] [-F FILTER] [MODEL ...]
#
#   -c        texplan_conv_bench: every conv shape matching FILTER (-F) with exact fp32
#             ("auto") and the tf32 variants: GFLOP/s and error against fp32 -> $OUT/conv_tf32.txt
#   MODEL...  packed or exported models (.dev/models/MODEL with weights): texplan run
#             --check --bench RUNS in fp32, then --precision tf32 --check --guard --bench RUNS;
#             one line per model in $OUT/tf32_models.txt (ms fp32, ms tf32, speed-up,
#             rel error of each, guard), the JSON reports in $OUT/tf32/
#   -p        both model runs with --profile: per-node device times in the reports (which
#             nodes tf32 makes faster or slower)
set -uo pipefail
RUNS=30 CONV=0 FILTER="" PROFILE=""
while getopts "n:cpF:h" opt; do
  case $opt in n) RUNS=$OPTARG ;; c) CONV=1 ;; p) PROFILE=--profile ;; F) FILTER=$OPTARG ;; *) sed -n '2,16p' "$0"; exit 2 ;; esac
done
shift $((OPTIND - 1))
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/out-gpu}
mkdir -p "$OUT/tf32"
source scripts/device/env.sh >/dev/null 2>&1
if ((CONV)); then
  variants=tf32,$(.dev/bin/texplan_conv_bench --list | grep '^tf32:' | paste -sd,)
  timeout 240 .dev/bin/texplan_conv_bench --device gpu --reps 5 --variants "$variants" ${FILTER:+--filter "$FILTER"} \
    --json "$OUT/tf32/conv_bench.json" >"$OUT/conv_tf32.txt" 2>&1 || echo "conv bench: exit $?" >>"$OUT/conv_tf32.txt"
fi
for m in "$@"; do
  d=.dev/models/$m
  [[ -f $d/$m.onnx.data ]] || { echo "$m: no weights in $d (export it: all.sh -s export -m $m)" >>"$OUT/tf32_models.txt"; continue; }
  timeout 60 texplan run "$d" --device gpu --check --bench "$RUNS" $PROFILE --json "$OUT/tf32/$m.fp32.json" >"$OUT/tf32/$m.fp32.txt" 2>&1
  timeout 60 texplan run "$d" --device gpu --precision tf32 --check --guard --bench "$RUNS" $PROFILE \
    --json "$OUT/tf32/$m.tf32.json" >"$OUT/tf32/$m.tf32.txt" 2>&1
  env LD_LIBRARY_PATH="$TEXPLAN_SYSTEM_LD_LIBRARY_PATH" python3 - "$OUT/tf32" "$m" >>"$OUT/tf32_models.txt" <<'PY'
import json, sys
d, m = sys.argv[1], sys.argv[2]
def load(p):
    try: return json.load(open(f"{d}/{m}.{p}.json"))
    except Exception: return {}
f, t = load("fp32"), load("tf32")
fm, tm = f.get("median_ms"), t.get("median_ms")
sp = f"{fm / tm:.2f}x" if fm and tm else "?"
print(f"{m:16} fp32 {fm} ms rel {f.get('rel_error')} | {t.get('precision')} {tm} ms rel {t.get('rel_error')} "
      f"(tolerance {t.get('tolerance')}) guard {t.get('guard_violations')} | speed-up {sp}")
PY
done
cat "$OUT/tf32_models.txt" 2>/dev/null
