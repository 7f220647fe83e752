#!/usr/bin/env bash
# THERE, on the GPU machine, from the repo root: exports with the machine's PyTorch
# (torch.export-based exporter) everything export_current.py makes, 4 at a time, into
# DIR (default /tmp/current), and tars the small parts (fixtures, node tests, the zoo's
# graphs without weights, logs) into $OUT/current.tgz.
#   scripts/device/export_current.sh EXPORT_MODELS_PY [DIR] [ZOO_NAME ...]
set -uo pipefail
EM=$(realpath "$1"); DIR=${2:-/tmp/current}; shift; shift || true
P=$(realpath scripts/device/export_current.py)
mkdir -p "$DIR/zoo" "$DIR/graphs"
export OMP_NUM_THREADS=4 PYTHONUNBUFFERED=1
python3 "$P" fixtures "$DIR/fixtures" >"$DIR/fixtures.log" 2>&1 &
python3 "$P" nodetests "$DIR/node" >"$DIR/nodetests.log" 2>&1 &
names=${*:-$(python3 -c "import importlib.util as u;s=u.spec_from_file_location('m','$EM');m=u.module_from_spec(s);s.loader.exec_module(m);print(*m.ZOO)")}
i=0
for n in $names; do
  python3 "$P" zoo "$EM" "$DIR/zoo" "$n" >"$DIR/zoo_$n.log" 2>&1 &
  i=$((i + 1)); (( i % 3 == 0 )) && wait -n
done
wait
cat "$DIR"/zoo_*.log >"$DIR/zoo.log"
for d in "$DIR"/zoo/*/; do
  t=$(basename "$d"); mkdir -p "$DIR/graphs/$t"
  cp "$d/$t.onnx" "$DIR/graphs/$t/"
done
if [[ -n ${OUT:-} ]]; then
  tar czf "$OUT/current.tgz" -C "$DIR" fixtures node graphs fixtures.log nodetests.log zoo.log
  ls -la "$OUT"
fi
grep -h "FAILED\|exported\|fixture \|node tests" "$DIR"/*.log
