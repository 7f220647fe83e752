#!/usr/bin/env bash
# Runs THERE, on the GPU machine, from the repo root, over a .dev/ made by pack.sh:
# texplan on every packed model that has weights, then the PyTorch eager peer.
#
#   scripts/device/gpu_bench.sh [-n RUNS] [-t SECONDS] [-T] [-X] [MODEL ...]
#     -n RUNS     timed runs per model (default 50)
#     -t SECONDS  time limit per texplan call (default 120)
#     -T          skip the torch bench        -X  skip texplan
#     MODEL ...   texplan on these only (default: all of .dev/models with weights);
#                 torch always runs the whole zoo (it needs no weights files)
#
# Writes under $OUT (the device tool's folder; ./out-gpu elsewhere), at most 8 files:
#   env.txt             machine, driver, OpenCL devices, versions
#   devices.txt         `texplan devices`
#   texplan.json        [{model, rc, result}], result = what `texplan run --json` wrote
#   texplan_bench.json  texplan_bench's JSON, if it was packed
#   torch.json          bench/peers/torch_bench.py's JSON
#   log.txt             everything printed
# A failing model is recorded (rc) and the next one runs; the exit status is 1 if any failed.
set -euo pipefail

RUNS=50 LIMIT=120 TORCH=1 TEXPLAN=1
while getopts "n:t:TXh" opt; do
  case $opt in
    n) RUNS=$OPTARG ;; t) LIMIT=$OPTARG ;; T) TORCH=0 ;; X) TEXPLAN=0 ;;
    *) sed -n '2,19p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))

cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/out-gpu}
mkdir -p "$OUT"
source scripts/device/env.sh
export PYTHONUNBUFFERED=1
# python and torch get the machine's own libraries, not .dev/lib's Debian ones

describe_machine() {
  date -u; uname -r; grep PRETTY_NAME /etc/os-release || true
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  clinfo -l 2>&1 || true
  syspython -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__)' || true
  git log -1 --format='texplan commit %h %s' 2>/dev/null || true
}

run_texplan() {  # MODEL... ; returns 1 if any failed
  local failed=0 tmp n rc models=("$@")
  if [[ ! -x .dev/bin/texplan ]]; then echo "error: .dev/bin/texplan missing (pack.sh packs build/texplan)"; return 1; fi
  texplan devices 2>&1 | tee "$OUT/devices.txt" || failed=1
  ((${#models[@]})) || mapfile -t models < <(runnable_models)
  tmp=$(mktemp -d)
  for n in "${models[@]}"; do
    echo "== texplan run $n"
    rc=0
    timeout "$LIMIT" texplan run ".dev/models/$n" --device gpu --check --guard --bench "$RUNS" --json "$tmp/$n.json" || rc=$?
    ((rc == 0)) || { echo "texplan run $n: exit status $rc"; failed=1; }
    echo "$rc" >"$tmp/$n.rc"
  done
  syspython - "$tmp" "$OUT/texplan.json" "${models[@]}" <<'EOF'
import json, os, sys
tmp, out, names = sys.argv[1], sys.argv[2], sys.argv[3:]
rows = []
for n in names:
    p = os.path.join(tmp, n + ".json")
    try:
        result = json.load(open(p)) if os.path.exists(p) else None
    except ValueError as e:
        result = {"unparsable_json": str(e)}
    rows.append({"model": n, "rc": int(open(os.path.join(tmp, n + ".rc")).read()), "result": result})
json.dump(rows, open(out, "w"), indent=2)
EOF
  rm -rf "$tmp"
  if [[ -x .dev/bin/texplan_bench ]]; then
    echo "== texplan_bench"
    timeout 300 texplan_bench --models .dev/models --device gpu --runs "$RUNS" --json "$OUT/texplan_bench.json" || { echo "texplan_bench failed"; failed=1; }
  fi
  return "$failed"
}

run_torch() {
  echo "== torch eager (bench/peers/torch_bench.py)"
  timeout 400 env LD_LIBRARY_PATH="$TEXPLAN_SYSTEM_LD_LIBRARY_PATH" python3 bench/peers/torch_bench.py \
    --zoo .dev/tools/export_models.py --models .dev/models --runs "$RUNS" --json "$OUT/torch.json"
}

main() {
  local failed=0
  describe_machine 2>&1 | tee "$OUT/env.txt"
  if ((TEXPLAN)); then run_texplan "$@" || failed=1; fi
  if ((TORCH)); then run_torch || failed=1; fi
  return "$failed"
}

main "$@" 2>&1 | tee -a "$OUT/log.txt"
