#!/usr/bin/env bash
# Runs THERE, on the GPU machine (after pack.sh): --precision fp16 (half
# storage, fp32 arithmetic) against fp32 (issue 27, docs/precision.md).
#
#   scripts/device/gpu_fp16.sh [-n RUNS] [-t TEXTURES] [MODEL ...]
#
#   MODEL...  packed or exported models (.dev/models/MODEL with weights): texplan run
#             --check --bench RUNS in fp32, then --precision fp16 --check --guard --bench RUNS;
#             one line per model in $OUT/fp16_models.txt (ms and activation bytes of each,
#             speed-up, rel error of each, guard), the JSON reports in $OUT/fp16/
#   -t        --textures for both runs (none, pools or views; default none)
set -uo pipefail
RUNS=30 TEXTURES=none
while getopts "n:t:h" opt; do
  case $opt in n) RUNS=$OPTARG ;; t) TEXTURES=$OPTARG ;; *) sed -n '2,13p' "$0"; exit 2 ;; esac
done
shift $((OPTIND - 1))
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/out-gpu}
mkdir -p "$OUT/fp16"
source scripts/device/env.sh >/dev/null 2>&1
for m in "$@"; do
  d=.dev/models/$m
  [[ -f $d/$m.onnx.data ]] || { echo "$m: no weights in $d (export it: all.sh -s export -m $m)" >>"$OUT/fp16_models.txt"; continue; }
  timeout 120 texplan run "$d" --device gpu --textures "$TEXTURES" --check --bench "$RUNS" \
    --json "$OUT/fp16/$m.$TEXTURES.fp32.json" >"$OUT/fp16/$m.$TEXTURES.fp32.txt" 2>&1
  timeout 120 texplan run "$d" --device gpu --textures "$TEXTURES" --precision fp16 --check --guard --bench "$RUNS" \
    --json "$OUT/fp16/$m.$TEXTURES.fp16.json" >"$OUT/fp16/$m.$TEXTURES.fp16.txt" 2>&1
  env LD_LIBRARY_PATH="$TEXPLAN_SYSTEM_LD_LIBRARY_PATH" python3 - "$OUT/fp16" "$m.$TEXTURES" >>"$OUT/fp16_models.txt" <<'PY'
import json, sys
d, m = sys.argv[1], sys.argv[2]
def load(p):
    try: return json.load(open(f"{d}/{m}.{p}.json"))
    except Exception: return {}
f, h = load("fp32"), load("fp16")
fm, hm = f.get("median_ms"), h.get("median_ms")
sp = f"{fm / hm:.2f}x" if fm and hm else "?"
print(f"{m:24} fp32 {fm} ms {f.get('activation_bytes')} B rel {f.get('rel_error')} | {h.get('precision')} {hm} ms "
      f"{h.get('activation_bytes')} B rel {h.get('rel_error')} (tolerance {h.get('tolerance')}) guard "
      f"{h.get('guard_violations')} cpu {len(h.get('half_fallback_nodes', []))} below-half {h.get('below_half_range')} "
      f"| speed-up {sp}")
PY
done
cat "$OUT/fp16_models.txt" 2>/dev/null
