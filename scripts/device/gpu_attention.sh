#!/usr/bin/env bash
# Runs THERE, on the GPU machine: FusedAttention (docs/fused-ops.md#fusedattention)
# fused against --no-attention-fusion. Pack HERE with
#   scripts/device/pack.sh -m "" test_fused_attention
# and carry .dev. The machine's own PyTorch (TorchScript exporter) exports
# bert_mini (export_models.py) and scripts/export_attention_models.py's
# models (audio_encoder: 1500 steps, width 384, 6 heads; attn_sdpa, which
# is scaled_dot_product_attention there; attn_scale_after; attn_bool_mask)
# into .dev/models; then, into $OUT:
#   tests.txt      test_fused_attention with TEXPLAN_TEST_DEVICE=gpu (attention.cl on the GPU, fp32 and fp16)
#   plans.txt      texplan plan per model, fused and --no-attention-fusion: lower bound and planned bytes
#   runs.txt       texplan run --device gpu --check per model, fused and unfused: activations, error
#   profile.txt    texplan run --device gpu --profile per model, fused and unfused: time per operator type
#   alternate.txt  gpu_alternate.sh: median latency fused and unfused, alternated rounds
#
#   scripts/device/gpu_attention.sh [-n RUNS] [-r ROUNDS] [-d DEVICE] [MODELS]
#     DEVICE: texplan's --device (default gpu; pocl tries the script here)
set -uo pipefail
RUNS=20 ROUNDS=4 DEVICE=gpu
while getopts "n:r:d:h" opt; do
  case $opt in n) RUNS=$OPTARG ;; r) ROUNDS=$OPTARG ;; d) DEVICE=$OPTARG ;; *) sed -n '2,17p' "$0"; exit 2 ;; esac
done
shift $((OPTIND - 1))
MODELS=${*:-bert_mini audio_encoder attn_sdpa attn_scale_after attn_bool_mask}
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/out-gpu}
export OUT
mkdir -p "$OUT"
source scripts/device/env.sh >"$OUT/export_log.txt" 2>&1
stamp() { echo "== $(date -u +%T) $*"; }

stamp export
models=.dev/models
if [[ ! -f $models/bert_mini/bert_mini.onnx.data ]]; then
  sed 's/do_constant_folding=True,/do_constant_folding=True, dynamo=False,/' .dev/tools/export_models.py >/tmp/em13.py
  sed 's/opset_version=13/opset_version=14/' /tmp/em13.py >/tmp/em14.py
  rm -rf /tmp/zoo-attn; mkdir -p /tmp/zoo-attn
  { syspython /tmp/em13.py /tmp/zoo-attn bert_mini || syspython /tmp/em14.py /tmp/zoo-attn bert_mini; } >>"$OUT/export_log.txt" 2>&1 &&
    rm -rf "$models/bert_mini" && cp -r /tmp/zoo-attn/bert_mini "$models/"
fi
syspython scripts/export_attention_models.py "$models" >>"$OUT/export_log.txt" 2>&1 || echo "export_attention_models.py: exit $?"
grep -h "exported\|Error" "$OUT/export_log.txt"

if [[ -x .dev/bin/test_fused_attention && $DEVICE == gpu ]]; then
  stamp tests
  TEXPLAN_TEST_DEVICE=gpu timeout 300 .dev/bin/test_fused_attention >"$OUT/tests.txt" 2>&1
  grep -E '^\[  (PASSED|FAILED) |^\[  FAILED|Failure' "$OUT/tests.txt" | head -20
fi

stamp plans
for m in $MODELS; do
  for side in "" "--no-attention-fusion"; do
    echo "$m ${side:-fused}: $(texplan plan "$models/$m" $side --strategy best 2>&1 | grep -E '^(optimized|lower bound:|best )' | tr -s ' ' | paste -sd ' ')"
  done
done >"$OUT/plans.txt" 2>&1
cat "$OUT/plans.txt"

stamp runs
for m in $MODELS; do
  for side in "" "--no-attention-fusion"; do
    code=$(timeout 120 texplan run "$models/$m" --device "$DEVICE" --check $side >/tmp/run.txt 2>&1; echo $?)
    echo "$m ${side:-fused}: exit $code $(grep -E '^(activations|rel error|device)' /tmp/run.txt | tr -s ' ' | paste -sd ' ')"
    ((code == 0)) || tail -3 /tmp/run.txt
  done
done >"$OUT/runs.txt" 2>&1
cat "$OUT/runs.txt"

stamp profile
for m in $MODELS; do
  for side in "" "--no-attention-fusion"; do
    echo "== $m ${side:-fused}"
    timeout 120 texplan run "$models/$m" --device "$DEVICE" $side --profile 2>&1 | sed -n '/^op /,/^$/p'
  done
done >"$OUT/profile.txt" 2>&1

stamp alternate
timeout 400 scripts/device/gpu_alternate.sh -d "$DEVICE" -n "$RUNS" -r "$ROUNDS" "$MODELS" "--check" \
  "--check --no-attention-fusion" >/dev/null 2>&1 || echo "alternate: exit $?"
tail -12 "$OUT/alternate.txt" 2>/dev/null
stamp done
