#!/usr/bin/env bash
# Fuzzes all four libFuzzer targets (fuzz/) at once on many cores, e.g. on the
# 16-core GPU machine in the background of a GPU measurement. That machine has
# no clang: the fuzzers are built HERE (their ASan/UBSan/libFuzzer runtimes are
# linked in statically; they need only libonnx, libonnx_proto, libprotobuf and
# the C/C++ runtime) and carried in .dev/fuzz.
#
#   scripts/device/fuzz_burst.sh pack [FUZZ_BIN [FUZZ_WORK]]   HERE, after pack.sh (which empties .dev)
#       FUZZ_BIN: the fuzz_* binaries (default build-fuzz/fuzz-clang, i.e. cmake
#       -DTEXPLAN_FUZZ=ON -B build-fuzz; cmake --build build-fuzz --target texplan_fuzzers);
#       FUZZ_WORK: their corpora and seeds from fuzz/run.sh (default build-fuzz/fuzz-work).
#       Writes .dev/fuzz/fuzz.tar.xz (binaries without debug info, libraries
#       .dev/lib lacks, corpora with seeds), about 15 MiB.
#   scripts/device/fuzz_burst.sh run SECONDS [CORES]          THERE (or here), from the repo root
#       CORES (default 12) shared by the targets (FUZZ_TARGETS, default all
#       four): each runs libFuzzer's fork mode with CORES/targets workers for
#       SECONDS, going on after a crash (each crash is kept). Prints, per target,
#       CPU seconds (user+sys of all its processes), executions, corpus size
#       and crashes, and writes two files to $OUT (or ./fuzz-burst-out):
#       fuzz_burst.txt (that table) and fuzz_burst.tar.xz (logs, crash inputs,
#       the new corpus inputs). Exit status 0 even when it found crashes: read
#       the table. Here: tar -xJf fuzz_burst.tar.xz, then replay each crash
#       with the target's binary, fix it, keep it in fuzz/regressions/TARGET/.
#
# In the background of a GPU call (kind nvidia-h100-x1, carry [".dev"]):
#   scripts/device/fuzz_burst.sh run 480 12 > /tmp/fuzz.log 2>&1 & FUZZ=$!
#   ... the GPU measurement ...; wait $FUZZ; cat /tmp/fuzz.log
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TARGETS=${FUZZ_TARGETS:-import shapes planner tensor}
mode=${1:-}

if [ "$mode" = pack ]; then
  bin=$(realpath "${2:-$ROOT/build-fuzz/fuzz-clang}")
  work=$(realpath "${3:-$ROOT/build-fuzz/fuzz-work}")
  stage=$(mktemp -d)
  trap 'rm -rf "$stage"' EXIT
  mkdir -p "$stage/bin" "$stage/lib" "$ROOT/.dev/fuzz"
  exclude=$(git -C "$ROOT" rev-parse --absolute-git-dir)/info/exclude  # .dev travels only when carried
  mkdir -p "$(dirname "$exclude")"
  grep -qxF '/.dev/' "$exclude" 2>/dev/null || echo '/.dev/' >>"$exclude"
  for t in $TARGETS; do
    [ -x "$bin/fuzz_$t" ] || { echo "error: no $bin/fuzz_$t (build texplan_fuzzers with clang)" >&2; exit 1; }
    strip --strip-debug -o "$stage/bin/fuzz_$t" "$bin/fuzz_$t"  # symbols stay: stacks name functions
    # Everything ldd resolves but glibc, zlib and the gcc runtime (as pack.sh), unless .dev/lib has it.
    ldd "$bin/fuzz_$t" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }'
  done | sort -u | while read -r soname path; do
    [[ $soname =~ ^(linux-vdso|ld-linux|libc|libm|libdl|librt|libpthread|libresolv|libutil|libstdc\+\+|libgcc_s|libz)\.so ]] && continue
    [ -e "$ROOT/.dev/lib/$soname" ] || cp -L "$path" "$stage/lib/$soname"
  done
  # One corpus folder per target: what fuzzing here found plus its seeds (links resolved).
  for t in $TARGETS; do
    mkdir -p "$stage/corpus/$t"
    for d in "$work/corpus/$t" "$work/seeds/$t"; do
      # (a fuzzer running here meanwhile may delete inputs it reduced: skip those)
      [ -d "$d" ] && { find -L "$d" -maxdepth 1 -type f -size -65k -exec cp -L -t "$stage/corpus/$t" {} + 2>/dev/null || true; }
    done
    echo "pack: fuzz_$t, corpus $(ls "$stage/corpus/$t" | wc -l) inputs"
  done
  tar -C "$stage" -cJf "$ROOT/.dev/fuzz/fuzz.tar.xz" bin lib corpus
  echo "pack: .dev/fuzz/fuzz.tar.xz $(du -m "$ROOT/.dev/fuzz/fuzz.tar.xz" | cut -f1) MiB (libraries packed: $(ls "$stage/lib" | xargs))," \
       ".dev in all $(du -sm "$ROOT/.dev" | cut -f1) MiB (the tool sends at most 64 MiB with the working tree)"
  exit 0
fi

[ "$mode" = run ] || { sed -n '2,27p' "$0"; exit 2; }
seconds=${2:?SECONDS}
cores=${3:-12}
out=${OUT:-$PWD/fuzz-burst-out}
pack=$ROOT/.dev/fuzz/fuzz.tar.xz
[ -f "$pack" ] || { echo "error: $pack missing: run 'scripts/device/fuzz_burst.sh pack' here and carry .dev" >&2; exit 1; }
work=$(mktemp -d /tmp/fuzz_burst.XXXX)
tar -C "$work" -xJf "$pack"
export LD_LIBRARY_PATH=$work/lib:$ROOT/.dev/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
ntargets=$(echo $TARGETS | wc -w)
workers=$(( cores / ntargets > 0 ? cores / ntargets : 1 ))
mkdir -p "$out" "$work/logs"
echo "fuzz_burst: $TARGETS, ${seconds}s each, $workers workers each ($(nproc) cores here), in $work"

for t in $TARGETS; do
  mkdir -p "$work/artifacts/$t" "$work/new/$t"
  ls "$work/corpus/$t" >"$work/logs/$t.initial"
  (
    cd "$work"
    TIMEFORMAT='%U %S'
    # Fork mode: a parent hands short jobs to $workers children, merges what
    # they find into corpus/$t and, with -ignore_crashes, goes on after one.
    # The guard ends jobs still running 60 s after SECONDS.
    { time timeout -s INT $((seconds + 60)) nice -n 10 "bin/fuzz_$t" -fork="$workers" -ignore_crashes=1 \
        -ignore_timeouts=1 -ignore_ooms=1 -max_total_time="$seconds" -timeout=30 -rss_limit_mb=2048 \
        -max_len=65536 -artifact_prefix="artifacts/$t/" "corpus/$t" >"logs/$t.log" 2>&1; } 2>"logs/$t.cpu" || true
  ) &
done
wait

table=$out/fuzz_burst.txt
{
  printf '%-8s %9s %12s %8s %8s %7s %8s %5s\n' target cpu_s executions corpus new crashes timeouts ooms
  for t in $TARGETS; do
    read -r user sys <"$work/logs/$t.cpu" || { user=0 sys=0; }
    # Fork mode's status lines: "#EXECS: cov: ... corp: N ... oom/timeout/crash: a/b/c ..."
    last=$(grep -a '^#[0-9]*: cov:' "$work/logs/$t.log" | tail -1 || true)
    execs=$(echo "$last" | sed -n 's/^#\([0-9]*\):.*/\1/p')
    corpus=$(ls "$work/corpus/$t" | wc -l)
    comm -13 <(sort "$work/logs/$t.initial") <(ls "$work/corpus/$t" | sort) | while read -r f; do
      cp "$work/corpus/$t/$f" "$work/new/$t/"
    done
    newn=$(ls "$work/new/$t" | wc -l)
    # crash-*, leak-*, ... are findings; timeout-* and oom-* may be a loaded machine (replay them)
    timeouts=$(ls "$work/artifacts/$t" | grep -c '^timeout-' || true)
    ooms=$(ls "$work/artifacts/$t" | grep -c '^oom-' || true)
    crashes=$(ls "$work/artifacts/$t" | grep -vc '^\(timeout\|oom\|slow-unit\)-' || true)
    printf '%-8s %9.0f %12s %8s %8s %7s %8s %5s\n' "$t" "$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')" \
      "${execs:-?}" "$corpus" "$newn" "$crashes" "$timeouts" "$ooms"
  done
  echo "(cpu_s: user+sys of the target's processes; executions: fork mode's last count; new: inputs found in this run)"
  for t in $TARGETS; do
    for a in $(ls "$work/artifacts/$t" | sort | head -5 | sed "s|^|$work/artifacts/$t/|"); do  # all in the tar
      echo "finding $t/$(basename "$a") ($(stat -c %s "$a") bytes): base64 $(base64 -w0 "$a" | head -c 2000)"
    done
    grep -a -m3 -E 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error|SUMMARY' "$work/logs/$t.log" | sed "s/^/  $t: /" || true
  done
} | tee "$table"
tar -C "$work" -cJf "$out/fuzz_burst.tar.xz" logs artifacts new
echo "fuzz_burst: wrote $table and $out/fuzz_burst.tar.xz ($(du -k "$out/fuzz_burst.tar.xz" | cut -f1) KiB)"
rm -rf "$work"
