#!/usr/bin/env bash
# THERE, on the GPU machine, after `scripts/device/pack.sh -m "" [TEST_BINARY ...]` here
# and with export_models.py in .exp/ (carry [".dev", ".exp"]): fp16 storage, texture
# layouts and patch-based execution on the H100, each checked against PyTorch's fp32
# output (the exported test_data_set_0) and timed against fp32 in the same process run.
#   1. export_current.sh exports the zoo (opset 20, weights; EXPORT=0 skips, reusing /tmp/current)
#   2. per static zoo model, on the GPU: fp32, fp16, --textures views, --patch auto,
#      fp16 + --patch auto, each `run --check --bench 20`; then `--patch auto --guard` (fp32,
#      tolerance 1e-4) and fp16 + patch + views with `--guard`
#      (FEATURES="fp32 fp16 fp16-guard" runs only those; fp16-guard: fp16 alone with --guard)
#   3. the test binaries packed in .dev/bin (test_*), with TEXPLAN_TEST_DEVICE=gpu (TESTS=0 skips)
#   scripts/device/gpu_features.sh [MODEL ...]      (default: every static zoo export)
# A warm machine keeps /tmp/current: split the models over calls with EXPORT=0 after the first.
# Results: $OUT/features.txt (one line per run: rc, latency, rel error, bytes) and
# $OUT/tests.txt (each test binary's summary).
set -uo pipefail
source scripts/device/env.sh
D=/tmp/current
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
if [[ ${EXPORT:-1} != 0 ]]; then
  env -u OUT LD_LIBRARY_PATH="$TEXPLAN_SYSTEM_LD_LIBRARY_PATH" \
    scripts/device/export_current.sh .exp/export_models.py "$D" >"$D.export.log" 2>&1
  tail -2 "$D.export.log"
fi
R=$OUT/features.txt
# FEATURES picks the runs (default all): fp32 fp16 views patch fp16+patch patch-guard guard fp16-guard
FEATURES=${FEATURES:-"fp32 fp16 views patch fp16+patch patch-guard guard"}
line() {  # LABEL CMD...: one line with the exit code, latency, error, activation bytes
  local label=$1; shift
  [[ " $FEATURES " == *" ${label#* } "* ]] || return 0
  local out; out=$(timeout 300 "$@" 2>&1); local rc=$?
  echo "$label rc=$rc $(echo "$out" | grep -E '^(latency|rel error|activations|guard|patching)|error:' |
    sed -E 's/^latency +median/median/; s/, host copies included.*//; s/ allocated \(/ (/' | tr '\n' ' ' | cut -c1-500)" | tee -a "$R"
}
models=${*:-$(cd "$D/zoo" && ls -d *_static | sed 's/_static$//')}
for m in $models; do
  d=$D/zoo/${m}_static
  [[ -d $d ]] || { echo "$m: not exported" | tee -a "$R"; continue; }
  line "$m fp32" texplan run "$d" --device gpu --check --bench 20
  line "$m fp16" texplan run "$d" --device gpu --check --bench 20 --precision fp16
  line "$m views" texplan run "$d" --device gpu --check --bench 20 --textures views
  line "$m patch" texplan run "$d" --device gpu --check --bench 20 --patch auto
  line "$m fp16+patch" texplan run "$d" --device gpu --check --bench 20 --precision fp16 --patch auto
  line "$m patch-guard" texplan run "$d" --device gpu --check --guard --patch auto
  line "$m guard" texplan run "$d" --device gpu --check --guard --precision fp16 --patch auto --textures views
  line "$m fp16-guard" texplan run "$d" --device gpu --check --guard --precision fp16
done
[[ ${TESTS:-1} == 0 ]] && exit 0
T=$OUT/tests.txt
for t in .dev/bin/test_*; do
  [[ -x $t ]] || continue
  echo "== $(basename "$t"): $(TEXPLAN_TEST_DEVICE=gpu timeout 300 "$t" 2>&1 | grep -E '^\[  (PASSED|FAILED) |tests? ran|FAILED TEST' | tr '\n' ' ')" | tee -a "$T"
done
