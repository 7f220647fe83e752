#!/usr/bin/env bash
# Runs the libFuzzer targets built by fuzz/CMakeLists.txt.
#
#   fuzz/run.sh fuzz   BINDIR TARGET SECONDS   fuzz TARGET for SECONDS (CPU time, one process)
#   fuzz/run.sh replay BINDIR TARGET           run fuzz/regressions/TARGET/* once each
#
# FUZZ_WORK (default BINDIR/work) keeps, per target, the growing corpus
# (corpus/TARGET) across runs, seeds (seeds/TARGET: links to real models and
# tensors) and crashes (artifacts/TARGET/crash-*). FUZZ_SEEDS=few seeds from a
# sample (quick runs in make test), =all from every model and tensor found:
# examples/models, FUZZ_MODELS (../shared/models), and ONNX's node tests.
# FUZZ_TIMEOUT (default 30): seconds of wall time one input may take (more
# on a loaded machine: nice -n 19 stretches wall time, not CPU time).
# A crash exits non-zero and names the input: fix it, then keep the input as
# fuzz/regressions/TARGET/<name> (replayed by make test).
set -euo pipefail
mode=$1 bindir=$2 target=$3
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
bin=$bindir/fuzz_$target
[ -x "$bin" ] || { echo "no fuzzer $bin (build with clang: see fuzz/CMakeLists.txt)"; exit 1; }
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# PoCL's own allocations outlive the process (the run target): suppressed
# as in make sanitize.
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$root/tests/lsan-pocl.supp:use_tls=0}

if [ "$mode" = replay ]; then
  shopt -s nullglob
  inputs=("$here/regressions/$target"/*)
  [ ${#inputs[@]} -eq 0 ] && { echo "no regression inputs for $target"; exit 0; }
  exec "$bin" -rss_limit_mb=2048 -timeout=60 "${inputs[@]}"
fi

seconds=$4
work=${FUZZ_WORK:-$bindir/work}
models=${FUZZ_MODELS:-$root/../shared/models}
node_tests=/usr/share/libonnx-testdata/data/node
seeds=$work/seeds/$target corpus=$work/corpus/$target artifacts=$work/artifacts/$target
mkdir -p "$corpus" "$artifacts"
rm -rf "$seeds" && mkdir -p "$seeds"
# Links named after their last three path parts, so the node tests' many
# model.onnx and test_data_set_0/input_0.pb do not collide.
link() {
  for f in "$@"; do
    [ -f "$f" ] && ln -sf "$f" "$seeds/$(echo "$f" | awk -F/ '{print $(NF-2) "_" $(NF-1) "_" $NF}')"
  done
  return 0
}
sample() { if [ "${FUZZ_SEEDS:-all}" = few ]; then awk 'NR % 25 == 1'; else cat; fi; }
shopt -s nullglob
case $target in
  import)
    link "$root"/examples/models/*/*.onnx "$models"/*/*.onnx
    link $(printf '%s\n' "$node_tests"/*/model.onnx | sample) ;;
  tensor)
    link "$root"/examples/models/*/test_data_set_0/*.pb
    link $(printf '%s\n' "$node_tests"/*/test_data_set_0/*.pb | sample) ;;
  *) ;;  # structured targets: decoded from any bytes, seeds unneeded
esac
echo "fuzz_$target: ${seconds}s, corpus $corpus ($(ls "$corpus" | wc -l) inputs) + $(ls "$seeds" | wc -l) seeds"
set +e
"$bin" -max_total_time="$seconds" -timeout="${FUZZ_TIMEOUT:-30}" -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
  -artifact_prefix="$artifacts/" "$corpus" "$seeds" 2>&1 | grep --line-buffered -v "^#[0-9]*.*\(NEW\|REDUCE\|pulse\) "
status=${PIPESTATUS[0]}
set -e
if [ "$status" -ne 0 ]; then
  echo "fuzz_$target found a failure: see $artifacts; fix it and keep the input in fuzz/regressions/$target/"
fi
exit "$status"
