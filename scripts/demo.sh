#!/usr/bin/env bash
# `make demo`: plan a real model with every strategy, then run it on the
# default OpenCL device (PoCL) with its plan, checked against PyTorch.
set -euo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")/.." && pwd)
model="$here/../shared/models/squeezenet1_1"
[ -f "$model/squeezenet1_1.onnx.data" ] || model="$here/examples/models/tiny_cnn"
echo "== texplan plan $(basename "$model") --strategy all"
"$build/texplan" plan "$model"
echo
echo "== texplan run $(basename "$model") --device pocl --check --bench 5"
"$build/texplan" run "$model" --device pocl --check --bench 5
