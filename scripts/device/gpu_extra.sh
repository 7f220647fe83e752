#!/usr/bin/env bash
# Runs THERE, on the GPU machine, after gpu_bench.sh's set-up (pack.sh'd .dev/):
# the zoo models whose weights do not fit the 64 MiB carry are exported there
# with the machine's PyTorch (export_models.py, TorchScript exporter, opset 13,
# reference outputs computed there) and run on the GPU with --check --guard;
# then ONNX's node tests that ship with the machine's onnx package.
#
#   scripts/device/gpu_extra.sh [-n RUNS] [MODEL ...]   (default: resnet18 resnet50 googlenet densenet121 mnasnet1_0 vgg16)
# Writes $OUT/extra.json ([{model, rc, result}]) and $OUT/onnx_tests_gpu.json.
set -euo pipefail
RUNS=50
while getopts "n:h" opt; do
  case $opt in n) RUNS=$OPTARG ;; *) sed -n '2,9p' "$0"; exit 2 ;; esac
done
shift $((OPTIND - 1))
models=("$@")
[[ ${#models[@]} -gt 0 ]] || models=(resnet18 resnet50 googlenet densenet121 mnasnet1_0 vgg16)
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/out-gpu}
mkdir -p "$OUT"
source scripts/device/env.sh >/dev/null

zoo=/tmp/texplan-zoo
mkdir -p "$zoo"
# torch >= 2.9 exports with dynamo by default (opset 18); the zoo is TorchScript opset 13.
sed 's/do_constant_folding=True,/do_constant_folding=True, dynamo=False,/' .dev/tools/export_models.py >"$zoo/export.py"
syspython "$zoo/export.py" "$zoo" "${models[@]}" >"$zoo/export.log" 2>&1 || { cat "$zoo/export.log"; exit 1; }

tmp=$(mktemp -d)
for n in "${models[@]}"; do
  echo "== texplan run $n (exported here)"
  rc=0
  timeout 300 texplan run "$zoo/$n" --device gpu --check --guard --bench "$RUNS" --json "$tmp/$n.json" || rc=$?
  echo "$rc" >"$tmp/$n.rc"
done
syspython - "$tmp" "$OUT/extra.json" "${models[@]}" <<'PY'
import json, os, sys
tmp, out, names = sys.argv[1], sys.argv[2], sys.argv[3:]
rows = [{"model": n, "rc": int(open(os.path.join(tmp, n + ".rc")).read()),
         "result": json.load(open(os.path.join(tmp, n + ".json"))) if os.path.exists(os.path.join(tmp, n + ".json")) else None}
        for n in names]
json.dump(rows, open(out, "w"), indent=2)
PY

node_tests=$(syspython -c 'import onnx, os; print(os.path.join(os.path.dirname(onnx.__file__), "backend/test/data/node"))')
echo "== texplan onnx-tests $node_tests --device gpu"
texplan onnx-tests "$node_tests" --device gpu --json "$OUT/onnx_tests_gpu.json" | tail -8 || true
