#!/usr/bin/env bash
# Graph optimizations on the GPU (issue 5), in one run: for every packed model
# with weights, `texplan run --device gpu --check --bench N --json` with all
# optimizations on and with all off (--no-fuse --no-inplace
# --no-concat-elision --order file), then --guard with all on in buffer,
# pools and views modes; a table of activation bytes, rel error, guard and
# median latency (on / off) per model.
#   scripts/device/gpu_optimize.sh [-n RUNS] [-t SECONDS_PER_RUN] [MODEL...]
# Writes $OUT/optimize/*.json, $OUT/optimize.md and $OUT/optimize_log.txt.
set -uo pipefail
RUNS=50 LIMIT=150
while getopts "n:t:h" opt; do
  case $opt in n) RUNS=$OPTARG ;; t) LIMIT=$OPTARG ;; *) sed -n '2,9p' "$0"; exit 2 ;; esac
done
shift $((OPTIND - 1))
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/out-gpu}
mkdir -p "$OUT/optimize"
source scripts/device/env.sh
models=("$@")
((${#models[@]})) || mapfile -t models < <(runnable_models)
OFF=(--no-fuse --no-inplace --no-concat-elision --order file)
{
  for n in "${models[@]}"; do
    echo "== $n optimized"
    timeout "$LIMIT" texplan run ".dev/models/$n" --device gpu --check --bench "$RUNS" \
      --json "$OUT/optimize/${n}_on.json" || echo "exit status $? ($n on)"
    echo "== $n as imported"
    timeout "$LIMIT" texplan run ".dev/models/$n" --device gpu --check --bench "$RUNS" "${OFF[@]}" \
      --json "$OUT/optimize/${n}_off.json" || echo "exit status $? ($n off)"
    for t in none pools views; do
      echo "== $n optimized, --guard --textures $t"
      timeout "$LIMIT" texplan run ".dev/models/$n" --device gpu --check --guard --textures "$t" \
        --json "$OUT/optimize/${n}_guard_$t.json" || echo "exit status $? ($n guard $t)"
    done
  done
} 2>&1 | tee "$OUT/optimize_log.txt"
env LD_LIBRARY_PATH="${TEXPLAN_SYSTEM_LD_LIBRARY_PATH:-}" python3 - "$OUT/optimize" <<'PY' | tee "$OUT/optimize.md"
import json, os, sys
d = sys.argv[1]
def load(f):
    p = os.path.join(d, f)
    return json.load(open(p)) if os.path.exists(p) else None
models = sorted({f.rsplit('_on.json', 1)[0] for f in os.listdir(d) if f.endswith('_on.json')})
print("| model | act MiB off | act MiB on | rel err on | guard none/pools/views | ms off | ms on | on/off |")
print("|---|---|---|---|---|---|---|---|")
for m in models:
    on, off = load(m + '_on.json'), load(m + '_off.json')
    g = [load(f'{m}_guard_{t}.json') for t in ('none', 'pools', 'views')]
    gs = '/'.join('?' if x is None else ('clean' if not x.get('guard_violations') else 'DIRTY') for x in g)
    mib = lambda r: f"{r['activation_bytes'] / 2**20:.2f}" if r else '?'
    ms = lambda r: r.get('median_ms') if r else None
    ratio = f"{ms(on) / ms(off):.3f}" if ms(on) and ms(off) else '?'
    print(f"| {m} | {mib(off)} | {mib(on)} | {on.get('rel_error') if on else '?'} | {gs} | {ms(off)} | {ms(on)} | {ratio} |")
PY
