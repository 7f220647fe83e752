#!/usr/bin/env bash
# Runs THERE, on the GPU machine: every GPU measurement in one
# call, over the whole zoo. The machine exports the zoo models whose weights
# did not travel (the 64 MiB carry cannot take them) with its own PyTorch
# (export_models.py, fixed seed, TorchScript exporter) into .dev/models, so
# the other scripts find them as packed models; then it runs, each under its
# own time limit, with a fuzz burst in the background if .dev/fuzz exists:
#   gputests step             every packed test_* binary on the GPU (TEXPLAN_TEST_DEVICE=gpu)
#   texplan_conv_bench        convolution kernel variants
#   gpu_optimize.sh           optimizations on/off, guarded buffer/pools/views
#   gpu_textures.sh           textures against buffers
#   offload_bench.sh -T       --offload none/clblast/auto; step offload+torch
#                             runs it with its own PyTorch runs (defaults and TF32 off),
#                             so one table holds both; -f tunes CLBlast first
#   gpu_profile.sh            tune, tuned latency, per-family throughput
#   tf32 step                 texplan run --precision tf32 (tensor cores) per model
#   gpu_bench.sh -X           PyTorch eager / CUDA graph / memory over the zoo
#   enqueue step              (only when asked) texplan_enqueue_bench: a launch's host cost,
#                             and dependent steps launched against one persistent launch with
#                             grid barriers (pack.sh -m "" texplan_enqueue_bench packs it)
#   recurrent step            (only when asked) the sequence models of export_recurrent.py,
#                             exported there with PyTorch eager's time, each in both forms
#                             of RecurrentSteps' kernel (--recurrent-kernel steps, persistent)
# and last scripts/device/summary.py: one speed table from all of them (summary.md).
#
#   scripts/device/all.sh [-n RUNS] [-F FUZZ_SECONDS] [-f CLBLAST_FRACTION] [-c CONV_BENCH_ARGS]
#                         [-s "STEPS"] [-m "MODELS"]
#     STEPS: any of export gputests conv optimize textures offload offload+torch tf32 profile torch enqueue
#            recurrent (default: all but offload+torch, enqueue and recurrent)
set -uo pipefail
RUNS=30 FUZZ=0 FRACTION=0 CONV_ARGS="" STEPS="export conv optimize textures offload tf32 profile torch" MODELS=""
while getopts "n:F:f:c:s:m:h" opt; do
  case $opt in n) RUNS=$OPTARG ;; c) CONV_ARGS=$OPTARG ;; F) FUZZ=$OPTARG ;; f) FRACTION=$OPTARG ;; s) STEPS=$OPTARG ;; m) MODELS=$OPTARG ;;
    *) sed -n '2,29p' "$0"; exit 2 ;; esac
done
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/out-gpu}
export OUT
mkdir -p "$OUT"
source scripts/device/env.sh >"$OUT/env.txt" 2>&1
has() { [[ " $STEPS " == *" $1 "* ]]; }
stamp() { echo "== $(date -u +%T) $*"; }

if ((FUZZ > 0)) && [[ -d .dev/fuzz ]]; then
  stamp "fuzz burst ${FUZZ}s in the background"
  scripts/device/fuzz_burst.sh run "$FUZZ" 12 >"$OUT/fuzz_log.txt" 2>&1 &
  FUZZ_PID=$!
fi

if has export; then
  stamp export
  missing=()
  for d in .dev/models/*/; do
    n=$(basename "$d")
    [[ -z $MODELS || " $MODELS " == *" $n "* ]] || continue   # -m: only those
    [[ -f $d/$n.onnx.data ]] || missing+=("$n")
  done
  if ((${#missing[@]})); then
    zoo=/tmp/texplan-zoo; mkdir -p "$zoo"
    sed 's/do_constant_folding=True,/do_constant_folding=True, dynamo=False,/' .dev/tools/export_models.py >"$zoo/export.py"
    # One model per call, so one failure costs only that model. The machine's
    # torch exports BERT's attention (scaled_dot_product_attention) only from
    # opset 14 on: a model that fails at 13 is tried again at 14.
    sed 's/opset_version=13/opset_version=14/' "$zoo/export.py" >"$zoo/export14.py"
    export_one() {  # MODEL: exports into $zoo/MODEL, then copies it into .dev/models
      local n=$1
      if [[ ! -f $zoo/$n/$n.onnx.data ]] &&
         ! timeout 150 env LD_LIBRARY_PATH="$TEXPLAN_SYSTEM_LD_LIBRARY_PATH" python3 "$zoo/export.py" "$zoo" "$n" >"$zoo/$n.log" 2>&1 &&
         ! timeout 150 env LD_LIBRARY_PATH="$TEXPLAN_SYSTEM_LD_LIBRARY_PATH" python3 "$zoo/export14.py" "$zoo" "$n" >>"$zoo/$n.log" 2>&1; then
        echo "export of $n failed (see export_log.txt)"; return 1
      fi
      rm -rf ".dev/models/$n"; cp -r "$zoo/$n" ".dev/models/$n"
    }
    # Four at a time (the machine has 16 cores); a machine still warm from an
    # earlier call kept its exports in /tmp and only copies them.
    for n in "${missing[@]}"; do
      while (($(jobs -rp | wc -l) >= 4)); do wait -n; done
      export_one "$n" &
    done
    wait
    cat "$zoo"/*.log >>"$OUT/export_log.txt" 2>/dev/null
  fi
fi
models=($MODELS)

if has gputests; then
  stamp gputests
  for t in .dev/bin/test_*; do
    [[ -x $t ]] || continue
    echo "== $(basename "$t") on the GPU"
    TEXPLAN_TEST_DEVICE=gpu timeout 240 "$t" 2>&1 | grep -E '^\[  (PASSED|FAILED) |^\[  FAILED|Failure|error' | head -30
  done >"$OUT/gputests.txt" 2>&1
  # The 16-tile Winograd form pays only while ptxas gives it at most 168
  # registers (three 128-item work-groups per SM): harmless-looking source
  # edits moved it to 191 once (docs/precision.md). No test can see it.
  if [[ -x .dev/bin/texplan_conv_bench ]]; then
    timeout 120 .dev/bin/texplan_conv_bench --device gpu --reps 1 --filter "vgg16 256->256 56" \
      --variants auto --build-log 2>&1 >/dev/null | scripts/device/winograd_registers.awk >>"$OUT/gputests.txt"
  fi
  cat "$OUT/gputests.txt"
fi
# -c "ARGS": e.g. -c "--filter stem" (the full bench times every variant of every shape)
has conv && { stamp conv; timeout 200 .dev/bin/texplan_conv_bench --device gpu $CONV_ARGS --json "$OUT/conv_bench.json" >"$OUT/conv_bench.txt" 2>&1 || echo "conv bench: exit $?"; }
has optimize && { stamp optimize; timeout 200 scripts/device/gpu_optimize.sh -n "$RUNS" -t 60 "${models[@]}" >/dev/null 2>&1 || echo "optimize: exit $?"; }
has textures && { stamp textures; timeout 200 scripts/device/gpu_textures.sh -n "$RUNS" -t 60 "${models[@]}" >/dev/null 2>&1 || echo "textures: exit $?"; }
has offload && { stamp offload; timeout 200 scripts/device/offload_bench.sh -T -f "$FRACTION" -n "$RUNS" -t 60 "${models[@]}" >"$OUT/offload_log.txt" 2>&1 || echo "offload: exit $?"; }
has offload+torch && { stamp offload+torch; timeout 590 scripts/device/offload_bench.sh -f "$FRACTION" -n "$RUNS" -t 60 "${models[@]}" >"$OUT/offload_log.txt" 2>&1 || echo "offload+torch: exit $?"; }
if has tf32; then
  stamp tf32
  mkdir -p "$OUT/tf32"
  tf_models=("${models[@]}")
  ((${#tf_models[@]})) || mapfile -t tf_models < <(runnable_models)
  for n in "${tf_models[@]}"; do
    timeout 60 texplan run ".dev/models/$n" --device gpu --precision tf32 --check --bench "$RUNS" \
      --json "$OUT/tf32/$n.json" >>"$OUT/tf32_log.txt" 2>&1 || echo "tf32 $n: exit $?"
  done
fi
has profile && { stamp profile; timeout 200 scripts/device/gpu_profile.sh -n "$RUNS" -t 60 "${models[@]}" >/dev/null 2>&1 || echo "profile: exit $?"; }
if has enqueue; then
  stamp enqueue
  if [[ -x .dev/bin/texplan_enqueue_bench ]]; then
    timeout 60 .dev/bin/texplan_enqueue_bench --device gpu --launches 100 --rounds 5 >"$OUT/enqueue.txt" 2>&1 ||
      echo "enqueue: exit $?"
  else echo "enqueue: texplan_enqueue_bench not packed (pack.sh -m \"\" texplan_enqueue_bench)"; fi
fi
if has recurrent; then
  stamp recurrent
  timeout 90 env LD_LIBRARY_PATH="$TEXPLAN_SYSTEM_LD_LIBRARY_PATH" python3 scripts/export_recurrent.py --eager-cuda \
    "$OUT/seq" 2>&1 | grep -E "eager|rror" >"$OUT/recurrent.txt"
  for m in speech_lstm crnn gru_tagger; do
    for form in persistent steps; do
      echo "-- $m $form" >>"$OUT/recurrent.txt"
      timeout 40 texplan run "$OUT/seq/$m" --device gpu --io device --check --bench "$RUNS" --recurrent-kernel "$form" \
        2>&1 | grep -E "first|latency|rel error|rror" >>"$OUT/recurrent.txt"
    done
  done
  rm -rf "$OUT/seq"
  cat "$OUT/recurrent.txt"
fi
has torch && { stamp torch; timeout 200 scripts/device/gpu_bench.sh -X -n "$RUNS" >"$OUT/torch_log.txt" 2>&1 || echo "torch: exit $?"; }
stamp done
syspython scripts/device/summary.py "$OUT" | tee "$OUT/summary.md"
if [[ -n ${FUZZ_PID:-} ]]; then stamp "waiting for the fuzz burst"; wait "$FUZZ_PID"; tail -12 "$OUT/fuzz_log.txt"; fi
