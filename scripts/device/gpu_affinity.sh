#!/usr/bin/env bash
# Runs THERE (after pack.sh, the models exported or packed): whether the core
# the host thread runs on decides a launch-bound model's time. texplan's
# medians move between processes with no change to the plan (GoogLeNet
# 0.72-1.07 ms, docs/performance.md), and NVIDIA's driver writes each launch
# into memory the GPU reads, so a core far from the GPU's PCIe root could pay
# more per launch. Per round, each model runs once per CPU set (`taskset -c`)
# and once unpinned, the order rotated each round; each run records its
# median latency and its host loop (enqueue_ms).
#   scripts/device/gpu_affinity.sh [-n RUNS] [-r ROUNDS] [-c "CPUSETS"] "MODELS" [texplan run args]
#     CPUSETS: taskset lists, space-separated (default: each NUMA node's cores,
#              then single cores 0, N/4, N/2, 3N/4 of the N the machine has)
# $OUT/affinity.txt: the machine's topology (lscpu, the GPU's NUMA node and
# local CPUs), one line per run, then per model and CPU set the median of
# the rounds' medians and enqueue_ms; $OUT/affinity.json the runs as data.
set -uo pipefail
RUNS=20 ROUNDS=3 SETS=""
while getopts "n:r:c:h" opt; do
  case $opt in n) RUNS=$OPTARG ;; r) ROUNDS=$OPTARG ;; c) SETS=$OPTARG ;; *) sed -n '2,16p' "$0"; exit 2 ;; esac
done
shift $((OPTIND - 1))
(($# >= 1)) || { sed -n '2,16p' "$0"; exit 2; }
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/out-gpu}
mkdir -p "$OUT"
source scripts/device/env.sh >/dev/null 2>&1
models=($1)
shift
args=("$@")
((${#args[@]})) || args=(--io device)
txt=$OUT/affinity.txt tmp=$(mktemp -d)
{
  echo "== topology"
  lscpu | grep -E '^(CPU\(s\)|Model name|Thread|Core|Socket|NUMA)' || true
  nvidia-smi topo -m 2>/dev/null || true
  for bus in $(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader 2>/dev/null); do
    d=/sys/bus/pci/devices/$(echo "$bus" | tr 'A-F' 'a-f' | sed 's/^0000\(0000:\)/\1/')
    echo "GPU $bus: numa_node $(cat "$d/numa_node" 2>/dev/null) local_cpulist $(cat "$d/local_cpulist" 2>/dev/null)"
  done
  echo "this process may run on: $(taskset -pc $$ | sed 's/.*: //')"
} >"$txt"
if [[ -z $SETS ]]; then
  for node in /sys/devices/system/node/node*; do [[ -f $node/cpulist ]] && SETS+=" $(cat "$node/cpulist")"; done
  n=$(nproc)
  SETS+=" 0 $((n / 4)) $((n / 2)) $((3 * n / 4))"
fi
sides=(any $SETS)
echo "== runs: $RUNS per process, $ROUNDS rounds, CPU sets: ${sides[*]}, args: ${args[*]}" >>"$txt"
: >"$tmp/runs"   # round side model median_ms enqueue_ms
for ((r = 0; r < ROUNDS; ++r)); do
  for ((j = 0; j < ${#sides[@]}; ++j)); do
    side=${sides[$(((j + r) % ${#sides[@]}))]}
    pin=()
    [[ $side == any ]] || pin=(taskset -c "$side")
    for m in "${models[@]}"; do
      rm -f "$tmp/r.json"
      timeout 120 "${pin[@]}" texplan run ".dev/models/$m" --device gpu --bench "$RUNS" "${args[@]}" \
        --json "$tmp/r.json" >>"$tmp/log" 2>&1
      [[ -f $tmp/r.json ]] && syspython - "$tmp/r.json" "$r" "$side" "$m" >>"$tmp/runs" <<'EOF'
import json, sys
o = json.load(open(sys.argv[1]))
print(sys.argv[2], sys.argv[3], sys.argv[4], o.get("median_ms"), o.get("enqueue_ms", -1))
EOF
      tail -1 "$tmp/runs" >>"$txt"
    done
  done
done
syspython - "$tmp/runs" "$OUT/affinity.json" >>"$txt" <<'EOF'
import json, statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
json.dump([dict(round=int(r), cpus=s, model=m, median_ms=float(t), enqueue_ms=float(e)) for r, s, m, t, e in rows],
          open(sys.argv[2], "w"), indent=1)
print("== per model and CPU set: median of the rounds (ms), its rounds, host loop (enqueue_ms)")
for m in dict.fromkeys(r[2] for r in rows):
    for s in dict.fromkeys(r[1] for r in rows):
        t = [float(r[3]) for r in rows if r[1] == s and r[2] == m]
        e = [float(r[4]) for r in rows if r[1] == s and r[2] == m]
        if t:
            print(f"{m:20s} {s:>12s} {statistics.median(t):7.3f}  rounds {' '.join(f'{x:.3f}' for x in t)}"
                  f"  enqueue {statistics.median(e):.3f}")
EOF
tail -n 40 "$txt"
