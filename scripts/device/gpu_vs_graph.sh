#!/usr/bin/env bash
# Runs THERE, in one call (pack.sh -m "", then add_more_models.sh with the
# EXTRA models below): the measurement behind docs/performance.md's table
# against PyTorch on the GPU.
#   1. all.sh -s export: the zoo and the extra models exported on the machine
#   2. gpu_alternate.sh over the zoo: texplan (inputs and outputs on the
#      device, checked), PyTorch eager and a replayed CUDA graph
#   3. gpu_alternate.sh over the extra torchvision models: texplan and eager
#   4. with -t MODELS: `texplan tune` of each into one cache (tuning.json: every
#      candidate's time per shape), then texplan untuned against tuned, alternated
#   5. with time left, gpu_profile.sh -U over the models slowest against the graph
# Each step has its own time limit, so a slow one leaves the rest their time.
#   scripts/device/gpu_vs_graph.sh [-r ROUNDS] [-n RUNS] [-T TOTAL_SECONDS] [-t "MODELS"] [-e "EXTRA"] [-p "PROFILED"]
#                                  [-z "ZOO"] [-g "PEERS"]
#     -e: the extra models (default: the nine below); -p: the models profiled (default: the zoo's slowest);
#     -z: the zoo models of step 2 (default: all 12; "" skips the step);
#     -g: step 2's PyTorch sides (default "eager graph"; e.g. "eager graph graph-fp32")
# $OUT: zoo_alternate.txt, extra_alternate.txt, tuned_alternate.txt, tuning.json,
#       profile.md, times.txt, all.tgz
set -uo pipefail
ROUNDS=2 RUNS=20 TOTAL=560 TUNE="" PEERS="eager graph"
EXTRA="swin_t vit_b_16 resnext50_32x4d convnext_tiny efficientnet_b3 inception_v3 densenet169 mobilenet_v3_large regnet_y_400mf"
SLOW="bert_mini shufflenet_v2_x1_0 densenet121 resnet50 vgg16"
ZOO="bert_mini densenet121 efficientnet_b0 googlenet mnasnet1_0 mobilenet_v2 resnet18 resnet50 shufflenet_v2_x1_0 squeezenet1_1 unet_small vgg16"
while getopts "r:n:T:t:e:p:z:g:h" opt; do
  case $opt in r) ROUNDS=$OPTARG ;; n) RUNS=$OPTARG ;; T) TOTAL=$OPTARG ;; t) TUNE=$OPTARG ;; e) EXTRA=$OPTARG ;;
    p) SLOW=$OPTARG ;; z) ZOO=$OPTARG ;; g) PEERS=$OPTARG ;; *) sed -n '2,20p' "$0"; exit 2 ;; esac
done
cd "$(dirname "$0")/../.."
FINAL=${OUT:-$PWD/out-gpu}
W=$(mktemp -d)
mkdir -p build "$FINAL" "$W/zoo" "$W/extra" "$W/tuned" "$W/profile"
cp .dev/bin/texplan build/ 2>/dev/null
t0=$(date +%s)
left() { echo $((TOTAL - ($(date +%s) - t0))); }
# Each step's table goes to $OUT as soon as it is done: a call cut short keeps them.
mark() {
  echo "$1 done at $(($(date +%s) - t0)) s" >>"$W/times.txt"
  cp "$W/times.txt" "$FINAL/"
  cp "$W/zoo/alternate.txt" "$FINAL/zoo_alternate.txt" 2>/dev/null
  cp "$W/extra/alternate.txt" "$FINAL/extra_alternate.txt" 2>/dev/null
  cp "$W/tuned/alternate.txt" "$FINAL/tuned_alternate.txt" 2>/dev/null
  cp "$W/tuning.json" "$FINAL/" 2>/dev/null
  cp "$W/profile/profile.md" "$FINAL/profile.md" 2>/dev/null
  return 0
}
OUT=$W timeout 200 scripts/device/all.sh -s export -m "$(echo $ZOO $EXTRA $TUNE | tr " " "\n" | sort -u | xargs)" >"$W/export.txt" 2>&1
mark export
[[ -n $ZOO ]] && OUT=$W/zoo timeout $(($(left) * 70 / 100)) scripts/device/gpu_alternate.sh -r "$ROUNDS" -n "$RUNS" "$ZOO" \
  "--io device --check" $PEERS >"$W/zoo/log.txt" 2>&1; mark zoo
if [[ -n $TUNE ]]; then
  source scripts/device/env.sh >/dev/null 2>&1
  end=$(($(date +%s) + $(left) * 40 / 100))
  for m in $TUNE; do
    ((end - $(date +%s) > 5)) || break
    timeout $((end - $(date +%s))) texplan tune ".dev/models/$m" --device gpu --tuning-cache "$W/tuning.json" \
      >>"$W/tuned/tune_log.txt" 2>&1 || echo "tune $m: exit status $?" >>"$W/tuned/tune_log.txt"
  done
  mark tune
  OUT=$W/tuned timeout $(($(left) * 40 / 100)) scripts/device/gpu_alternate.sh -r 1 -n "$RUNS" "$TUNE" \
    "--io device --check" "--io device --check --tuning-cache $W/tuning.json" >"$W/tuned/log.txt" 2>&1; mark tuned
fi
[[ -n $EXTRA ]] && OUT=$W/extra timeout $(($(left) * 70 / 100)) scripts/device/gpu_alternate.sh -r "$ROUNDS" -n "$RUNS" "$EXTRA" \
  "--io device --check" eager >"$W/extra/log.txt" 2>&1; mark extra
[[ -n $SLOW ]] && OUT=$W/profile timeout $(($(left) - 10)) scripts/device/gpu_profile.sh -U -n "$RUNS" $SLOW >/dev/null 2>&1
mark profile
tar czf "$FINAL/all.tgz" -C "$W" .
