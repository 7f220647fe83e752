#!/usr/bin/env bash
# Matrix products at transformer shapes on the GPU, in one call (pack with
# `scripts/device/pack.sh -m bert_mini texplan_conv_bench`, or `-m ""`
# without -b): texplan_conv_bench over its product shapes (ViT-B/16,
# BERT-mini and Swin-T's projections and MLPs at their token counts, and a
# 1024 square) and the 1x1 convolutions, every fp32 tile, split-K and
# k-groups variant (with -x the tf32 tiles too); the registers, stack and
# spills NVIDIA's compiler gives the GEMM kernels (-cl-nv-verbose); with -b
# bert_mini profiled, tuned and run untuned and tuned. The fits behind
# lower/conv_select.cpp's GEMM times come from products.json and conv1x1.json
# (docs/kernel-choices.md#the-gemm-time-model).
# -v VARIANTS times only those (a comma list); -o skips the 1x1 convs; -k adds
# the K sweep: one product shape at K from 1 to 1024 and a single 32x32
# tile at K up to 4096 (steps.txt, steps.json), which tells a fixed cost per
# launch from a cost per 16-deep step of K.
#   scripts/device/gpu_products.sh [-n REPS] [-x] [-b] [-v VARIANTS] [-o] [-k]
# Writes $OUT/products.txt, products.json, conv1x1.txt, conv1x1.json,
# registers.txt, times.txt; with -b bert.txt, tuning.json.
set -uo pipefail
REPS=20 TF32=0 BERT=0 ONLY="" PRODUCTS_ONLY=0 STEPS=0
while getopts "n:xbv:okh" opt; do
  case $opt in n) REPS=$OPTARG ;; x) TF32=1 ;; b) BERT=1 ;; v) ONLY=$OPTARG ;; o) PRODUCTS_ONLY=1 ;; k) STEPS=1 ;;
    *) sed -n '2,21p' "$0"; exit 2 ;; esac
done
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/out-gpu}
mkdir -p "$OUT/profile"
source scripts/device/env.sh
start=$SECONDS
stamp() { echo "$1 done at $((SECONDS - start)) s" >>"$OUT/times.txt"; }

fp32="auto,32x32,64x64,64x64v,64x128v,128x64v,128x128v,32x32/split,64x64v/split,64x128v/split,128x64v/split,128x128v/split"
fp32="$fp32,32x32k2,32x32k4,32x32k8,64x64k2,64x64k4,32x64k2,32x64k4,64x64/split,16x16,16x32,32x16"
[[ -n $ONLY ]] && fp32=$ONLY
if ((STEPS)); then
  sweep=128x1x256t,128x16x256t,128x32x256t,128x64x256t,128x128x256t,128x256x256t,128x512x256t,128x1024x256t
  sweep=$sweep,128x16x256,128x256x256,128x1024x256,32x16x32,32x256x32,32x1024x32,32x4096x32,1x1x1
  texplan_conv_bench --device gpu --reps "$REPS" --product "$sweep" --json "$OUT/steps.json" \
    --variants 32x32,32x32k4,32x32k8,64x64v >"$OUT/steps.txt" 2>&1
  stamp steps
fi
variants=()
((TF32)) || variants=(--variants "$fp32")
texplan_conv_bench --device gpu --reps "$REPS" --filter product --json "$OUT/products.json" "${variants[@]}" \
  >"$OUT/products.txt" 2>&1
stamp products
((PRODUCTS_ONLY)) || texplan_conv_bench --device gpu --reps "$REPS" --filter 1x1 --json "$OUT/conv1x1.json" --variants "$fp32" \
  >"$OUT/conv1x1.txt" 2>&1
stamp conv1x1
# The log holds the compiler's binary noise too: grep -a.
texplan_conv_bench --device gpu --reps 1 --filter square --build-log \
  --variants "64x64v,64x128v,128x128v,32x32k2,64x64k2,64x64k4,32x64k2,32x64k4" 2>&1 |
  grep -a -E "Compiling entry|stack frame|Used [0-9]+ registers|^product|^ +[0-9a-z/]+ +[0-9.]+ ms" >"$OUT/registers.txt"
stamp registers
((BERT)) || exit 0
m=.dev/models/bert_mini
{
  echo "== bert_mini profiled"
  texplan run "$m" --device gpu --io device --check --bench 50 --profile --json "$OUT/profile/bert_mini.json" 2>&1 | tail -25
  echo "== bert_mini tune (k-groups among the candidates)"
  timeout 240 texplan tune "$m" --device gpu --tuning-cache "$OUT/tuning.json" --check 2>&1 | tail -3
  for c in "" "--tuning-cache $OUT/tuning.json"; do
    echo "== bert_mini --io device $c"
    texplan run "$m" --device gpu --io device --check --bench 100 $c 2>&1 | tail -6
  done
} >"$OUT/bert.txt" 2>&1
stamp bert
