#!/usr/bin/env bash
# Runs THERE (after pack.sh, the models exported: all.sh -s export -m "MODELS"):
# texplan (exact fp32, optimized) against PyTorch eager at its defaults,
# alternated per model over ROUNDS rounds (texplan first in odd rounds, eager
# first in even ones): PyTorch eager on the H100 is host-bound and its median
# moved 1.05 -> 1.83 ms on vgg16 between calls of one session, so a ratio is
# only worth its rounds. One line per round and the median of the rounds'
# medians per side, in $OUT/vs_eager.txt.
#
#   scripts/device/gpu_vs_eager.sh [-n RUNS] [-r ROUNDS] MODEL ...
set -uo pipefail
RUNS=20 ROUNDS=3
while getopts "n:r:h" opt; do
  case $opt in n) RUNS=$OPTARG ;; r) ROUNDS=$OPTARG ;; *) sed -n '2,10p' "$0"; exit 2 ;; esac
done
shift $((OPTIND - 1))
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/out-gpu}
mkdir -p "$OUT"
source scripts/device/env.sh >/dev/null 2>&1
tmp=$(mktemp -d)
own() { timeout 60 texplan run ".dev/models/$1" --device gpu --check --bench "$RUNS" --json "$tmp/t.json" >/dev/null 2>&1 &&
  env LD_LIBRARY_PATH="$TEXPLAN_SYSTEM_LD_LIBRARY_PATH" python3 -c "import json; print(json.load(open('$tmp/t.json'))['median_ms'])"; }
eager() { timeout 90 env LD_LIBRARY_PATH="$TEXPLAN_SYSTEM_LD_LIBRARY_PATH" python3 bench/peers/torch_bench.py --no-graph \
    --zoo .dev/tools/export_models.py --models .dev/models --runs "$RUNS" --json "$tmp/e.json" "$1" >/dev/null 2>&1 &&
  env LD_LIBRARY_PATH="$TEXPLAN_SYSTEM_LD_LIBRARY_PATH" python3 -c "import json; print(json.load(open('$tmp/e.json'))[0]['median_ms'])"; }
for m in "$@"; do
  a=() e=()
  for ((r = 1; r <= ROUNDS; ++r)); do
    if ((r % 2)); then ta=$(own "$m"); te=$(eager "$m"); else te=$(eager "$m"); ta=$(own "$m"); fi
    echo "$m round $r: texplan ${ta:-failed} ms, eager ${te:-failed} ms"
    [[ -n $ta ]] && a+=("$ta"); [[ -n $te ]] && e+=("$te")
  done
  env LD_LIBRARY_PATH="$TEXPLAN_SYSTEM_LD_LIBRARY_PATH" python3 - "$m" "${a[*]:-}" "${e[*]:-}" <<'PY'
import statistics, sys
m, a, e = sys.argv[1], [float(x) for x in sys.argv[2].split()], [float(x) for x in sys.argv[3].split()]
if a and e:
    ma, me = statistics.median(a), statistics.median(e)
    print(f"{m}: median of round medians texplan {ma:.3f} ms, eager {me:.3f} ms, texplan/eager {ma / me:.2f} "
          f"(per round {', '.join(f'{x / y:.2f}' for x, y in zip(a, e))})")
else:
    print(f"{m}: no result")
PY
done | tee -a "$OUT/vs_eager.txt"
rm -rf "$tmp"
