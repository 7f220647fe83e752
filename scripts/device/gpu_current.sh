#!/usr/bin/env bash
# THERE, on the GPU machine, after `scripts/device/pack.sh -m ""` here and with
# export_models.py in .exp/ (carry [".dev", ".exp"]): issue 30's checks of models as
# PyTorch 2.11 exports them.
#   1. export_current.sh: the zoo (dynamo, opset 20, static and symbolic batch, weights),
#      the fixtures and ONNX's node tests of opsets 18-21 into /tmp/current
#   2. every zoo export: `texplan run --device gpu --check` (the symbolic ones with
#      --dim batch=1), the symbolic ones without --dim (must refuse naming 'batch'),
#      and on PoCL the same for the models in POCL_MODELS
#   3. `texplan onnx-tests` over the opset 18-21 node tests on the GPU and on PoCL
# Results: $OUT/current_runs.txt (one line per run) and $OUT/current.tgz (node tests,
# graphs with their small tensors, logs).
set -uo pipefail
source scripts/device/env.sh
POCL_MODELS=${POCL_MODELS:-"squeezenet1_1 resnet18 mobilenet_v2 shufflenet_v2_x1_0 bert_mini unet_small"}
D=/tmp/current
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
env -u OUT LD_LIBRARY_PATH="$TEXPLAN_SYSTEM_LD_LIBRARY_PATH" scripts/device/export_current.sh .exp/export_models.py "$D" >"$D.export.log" 2>&1
tail -3 "$D.export.log"
R=$OUT/current_runs.txt; : >"$R"
line() {  # LABEL CMD...: one line with the exit code, rel error, latency
  local label=$1; shift
  local out; out=$(timeout 300 "$@" 2>&1); local rc=$?
  echo "$label rc=$rc $(echo "$out" | grep -E 'rel error|error:|nodes\)|cpu fallback' | tr '\n' ' ' | cut -c1-400)" | tee -a "$R"
}
for d in "$D"/zoo/*/; do
  t=$(basename "$d")
  if [[ $t == *_dynbatch ]]; then
    line "$t gpu dim" texplan run "$d" --device gpu --check --dim batch=1 --bench 10
    line "$t gpu nodim" texplan plan "$d" --strategy best
  else
    line "$t gpu" texplan run "$d" --device gpu --check --bench 10
  fi
  for m in $POCL_MODELS; do
    [[ $t == ${m}_static ]] && line "$t pocl" texplan run "$d" --device pocl --check
  done
done
for dev in gpu pocl; do
  texplan onnx-tests "$D/node" --device "$dev" --json "$OUT/node_$dev.json" >"$OUT/node_$dev.txt" 2>&1
  echo "node tests $dev: $(tail -2 "$OUT/node_$dev.txt" | tr '\n' ' ')" | tee -a "$R"
done
mkdir -p "$D/graphs_small"
for d in "$D"/zoo/*/; do t=$(basename "$d"); mkdir -p "$D/graphs_small/$t"; cp "$d/$t.onnx" "$D/graphs_small/$t/"; done
tar czf "$OUT/current.tgz" -C "$D" node graphs_small fixtures zoo.log nodetests.log fixtures.log 2>/dev/null
ls -la "$OUT"
