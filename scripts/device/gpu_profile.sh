#!/usr/bin/env bash
# Kernel tuning and per-node profile on the GPU (issue 7), in one run: for
# every packed model with weights, `texplan tune` (variants measured once
# into one tuning cache), then `texplan run --check --bench N` untuned and
# with --tuning-cache, and `texplan run --profile --tuning-cache` (device
# ceilings: stream copy GB/s, FMA loop GFLOP/s). Tables: latency untuned /
# tuned per model, and per kernel family (operator type) over all models the
# time, achieved GFLOP/s and GB/s and their share of the measured ceilings.
# With -x, each model is then tuned with --precision tf32 too (tensor-core
# tiles against the exact fp32 lowering, per node, into the same cache) and
# run tuned in tf32 (--check --guard): the table gains a tuned-tf32 column.
# With -U, nothing is tuned: one profiled run per model (`texplan tune` takes
# over 30 s for some models there), which the family table then sums.
#   scripts/device/gpu_profile.sh [-n RUNS] [-t SECONDS_PER_RUN] [-d DEVICE] [-x | -U] [MODEL...]
# Writes $OUT/profile/*.json, $OUT/tuning.json, $OUT/profile.md, $OUT/profile_log.txt.
set -uo pipefail
RUNS=50 LIMIT=300 DEVICE=gpu TF32=0 UNTUNED=0
while getopts "n:t:d:xUh" opt; do
  case $opt in n) RUNS=$OPTARG ;; t) LIMIT=$OPTARG ;; d) DEVICE=$OPTARG ;; x) TF32=1 ;; U) UNTUNED=1 ;;
    *) sed -n '2,16p' "$0"; exit 2 ;; esac
done
shift $((OPTIND - 1))
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/out-gpu}
mkdir -p "$OUT/profile"
[[ -f scripts/device/env.sh && -d .dev ]] && source scripts/device/env.sh
source scripts/device/models.sh
MODELS_DIR=${MODELS_DIR:-.dev/models}
command -v texplan >/dev/null || PATH=$PWD/build:$PATH
models=("$@")
((${#models[@]})) || mapfile -t models < <(runnable_models "$MODELS_DIR")
CACHE="$OUT/tuning.json"
{
  for n in "${models[@]}"; do
    m="$MODELS_DIR/$n"
    if ((UNTUNED)); then
      echo "== $n untuned, profiled"
      timeout "$LIMIT" texplan run "$m" --device "$DEVICE" --check --bench "$RUNS" --profile \
        --json "$OUT/profile/${n}_plain.json" || echo "exit status $? ($n plain)"
      continue
    fi
    echo "== $n tune"
    timeout "$LIMIT" texplan tune "$m" --device "$DEVICE" --tuning-cache "$CACHE" --check \
      --json "$OUT/profile/${n}_tune.json" || echo "exit status $? ($n tune)"
    echo "== $n untuned"
    timeout "$LIMIT" texplan run "$m" --device "$DEVICE" --check --bench "$RUNS" \
      --json "$OUT/profile/${n}_plain.json" || echo "exit status $? ($n plain)"
    echo "== $n tuned, profiled"
    timeout "$LIMIT" texplan run "$m" --device "$DEVICE" --check --bench "$RUNS" --tuning-cache "$CACHE" --profile \
      --json "$OUT/profile/${n}_tuned.json" || echo "exit status $? ($n tuned)"
    ((TF32)) || continue
    echo "== $n tune tf32"
    timeout "$LIMIT" texplan tune "$m" --device "$DEVICE" --tuning-cache "$CACHE" --precision tf32 --check \
      --json "$OUT/profile/${n}_tune_tf32.json" || echo "exit status $? ($n tune tf32)"
    echo "== $n tuned tf32"
    timeout "$LIMIT" texplan run "$m" --device "$DEVICE" --check --guard --bench "$RUNS" --tuning-cache "$CACHE" \
      --precision tf32 --json "$OUT/profile/${n}_tuned_tf32.json" || echo "exit status $? ($n tuned tf32)"
  done
} 2>&1 | tee "$OUT/profile_log.txt"
env LD_LIBRARY_PATH="${TEXPLAN_SYSTEM_LD_LIBRARY_PATH:-}" python3 - "$OUT/profile" <<'PY' | tee "$OUT/profile.md"
import json, os, sys
d = sys.argv[1]
def load(f):
    p = os.path.join(d, f)
    return json.load(open(p)) if os.path.exists(p) else None
models = sorted({f.rsplit('_plain.json', 1)[0] for f in os.listdir(d) if f.endswith('_plain.json')})
print("| model | untuned ms | tuned ms | tuned/untuned | rel err | kernel ms | launches | enqueue us/launch "
      "| tuned tf32 ms | tf32 rel err | tf32 nodes |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
fam, ceil = {}, None
for m in models:
    p, t, x = load(m + '_plain.json'), load(m + '_tuned.json'), load(m + '_tuned_tf32.json') or {}
    ms = lambda r: r.get('median_ms') if r else None
    ratio = f"{ms(t) / ms(p):.3f}" if ms(t) and ms(p) else '?'
    pr = (t or p or {}).get('profile', {})  # -U: the untuned run's profile
    ceil = pr.get('ceilings', ceil)
    for o in pr.get('ops', []):
        a = fam.setdefault(o['op'], [0, 0.0, 0.0, 0.0])
        a[0] += o['nodes']; a[1] += o['ms']; a[2] += o['flops']; a[3] += o['bytes']
    print(f"| {m} | {ms(p)} | {ms(t) or '-'} | {ratio} | {(t or p or {}).get('rel_error')} | {pr.get('device_ms', 0):.3f} | "
          f"{pr.get('launches')} | {pr.get('enqueue_us_per_launch', 0):.2f} | {x.get('median_ms', '-')} | "
          f"{x.get('rel_error', '-')} | {len(x.get('tf32_nodes', [])) if x else '-'} |")
if ceil:
    print(f"\nDevice ceilings: {ceil['gbps']:.1f} GB/s (stream copy), {ceil['gflops']:.1f} GFLOP/s (FMA loop)\n")
    print("| kernel family | nodes | ms (all models) | GFLOP/s | % of FLOP ceiling | GB/s | % of bandwidth |")
    print("|---|---|---|---|---|---|---|")
    for op, (n, ms, fl, by) in sorted(fam.items(), key=lambda x: -x[1][1]):
        gf = fl / ms / 1e6 if ms > 0 else 0
        gb = by / ms / 1e6 if ms > 0 else 0
        print(f"| {op} | {n} | {ms:.3f} | {gf:.1f} | {100 * gf / ceil['gflops']:.1f}% | {gb:.1f} | {100 * gb / ceil['gbps']:.1f}% |"
              if fl > 0 else f"| {op} | {n} | {ms:.3f} | - | - | {gb:.1f} | {100 * gb / ceil['gbps']:.1f}% |")
PY
