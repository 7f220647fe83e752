#!/usr/bin/env bash
# Runs THERE, on the GPU machine (after, here,
#   scripts/device/pack.sh -b BUILD -m unet_small texplan_conv_bench):
# issue 7's big 3x3 convolutions (vgg16, unet_small) in exact fp32 and tf32,
# where the time goes and how the conv kernels do per shape.
#
#   scripts/device/gpu_conv_fp32.sh [-n RUNS] [-e] [-p] [-t] [-P "fp32 tf32"] [-g TEST_BINARY]...
#                                   [-c FILTER]... [-V VARIANTS] [MODEL ...]
#
#   -e         export the models whose weights did not travel (all.sh -s export)
#   -g TEST    a packed test binary (.dev/bin/TEST) run first with TEXPLAN_TEST_DEVICE=gpu
#              -> $OUT/gputests.txt
#   MODEL...   per model `texplan run --check --guard --bench RUNS` in each precision of
#              -P (default fp32 and tf32; RUNS default 20): one line each in $OUT/models.txt;
#              -p also one `--profile --bench 5` run each: per-node times in the JSON
#              reports under $OUT/runs/ (profiling changes the timing: the lines
#              come from the unprofiled runs)
#   -c FILTER  texplan_conv_bench --device gpu over the shapes matching FILTER (may
#              repeat), variants -V (default: auto and every fp32 tile, whole and
#              split) -> $OUT/conv.txt
#   -t         PyTorch eager (defaults: TF32 convolutions; and CUDA graph) on the
#              same models, right after texplan's runs -> $OUT/torch.txt
# Default MODEL list: vgg16 unet_small. Tar $OUT for the device tool (8 files).
set -uo pipefail
RUNS=20 EXPORT=0 PROFILE=0 TORCH=0 FILTERS=() VARIANTS="" PRECISIONS="fp32 tf32" TESTS=()
while getopts "n:epc:V:tP:g:h" opt; do
  case $opt in
    n) RUNS=$OPTARG ;; e) EXPORT=1 ;; p) PROFILE=1 ;; c) FILTERS+=("$OPTARG") ;; V) VARIANTS=$OPTARG ;; t) TORCH=1 ;;
    P) PRECISIONS=$OPTARG ;; g) TESTS+=("$OPTARG") ;;
    *) sed -n '2,25p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
models=("$@")
((${#models[@]})) || models=(vgg16 unet_small)
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/out-gpu}
mkdir -p "$OUT/runs"
source scripts/device/env.sh >"$OUT/env.txt" 2>&1
stamp() { echo "== $(date -u +%T) $*"; }

for t in "${TESTS[@]}"; do
  stamp "gpu test $t"
  TEXPLAN_TEST_DEVICE=gpu timeout 120 ".dev/bin/$t" 2>&1 | grep -E '^\[ +(OK|PASSED|FAILED) |Failure|error|Expected|Which' |
    head -40 | tee -a "$OUT/gputests.txt"
done
if ((EXPORT)); then
  stamp export "${models[@]}"
  OUT=$OUT/export scripts/device/all.sh -s export -m "${models[*]}" >/dev/null 2>&1
  tail -3 "$OUT/export/export_log.txt" 2>/dev/null
fi
for m in "${models[@]}"; do
  d=.dev/models/$m
  [[ -f $d/$m.onnx.data ]] || { echo "$m: no weights in $d (-e exports them)" | tee -a "$OUT/models.txt"; continue; }
  for p in $PRECISIONS; do
    stamp "$m $p"
    timeout 90 texplan run "$d" --device gpu --precision "$p" --check --guard --bench "$RUNS" \
      --json "$OUT/runs/$m.$p.json" >"$OUT/runs/$m.$p.txt" 2>&1 || echo "$m $p: exit $?"
    if ((PROFILE)); then
      timeout 90 texplan run "$d" --device gpu --precision "$p" --bench 5 --profile \
        --json "$OUT/runs/$m.$p.profile.json" >"$OUT/runs/$m.$p.profile.txt" 2>&1 || echo "$m $p profile: exit $?"
    fi
  done
  env LD_LIBRARY_PATH="$TEXPLAN_SYSTEM_LD_LIBRARY_PATH" python3 - "$OUT/runs" "$m" >>"$OUT/models.txt" <<'PY'
import json, sys
d, m = sys.argv[1], sys.argv[2]
def load(p):
    try: return json.load(open(f"{d}/{m}.{p}.json"))
    except Exception: return {}
f, t = load("fp32"), load("tf32")
print(f"{m:12} fp32 {f.get('median_ms')} ms rel {f.get('rel_error')} guard {f.get('guard_violations')} | "
      f"{t.get('precision')} {t.get('median_ms')} ms rel {t.get('rel_error')} guard {t.get('guard_violations')}")
PY
done
if ((TORCH)); then
  stamp torch
  timeout 200 env LD_LIBRARY_PATH="$TEXPLAN_SYSTEM_LD_LIBRARY_PATH" python3 bench/peers/torch_bench.py \
    --zoo .dev/tools/export_models.py --models .dev/models --runs "$RUNS" --json "$OUT/torch.json" "${models[@]}" \
    >"$OUT/torch.txt" 2>&1 || echo "torch: exit $?"
fi
if ((${#FILTERS[@]})); then
  [[ -n $VARIANTS ]] || VARIANTS=auto,$(.dev/bin/texplan_conv_bench --list | grep -v -e ':' -e '^tf32' | paste -sd,)
  for f in "${FILTERS[@]}"; do
    stamp "conv bench '$f'"
    timeout 150 .dev/bin/texplan_conv_bench --device gpu --reps 10 --variants "$VARIANTS" --filter "$f" \
      2>&1 | grep -v '^device:' >>"$OUT/conv.txt" || echo "conv bench '$f': exit $?" >>"$OUT/conv.txt"
  done
fi
stamp done
cat "$OUT/models.txt" "$OUT/torch.txt" 2>/dev/null
