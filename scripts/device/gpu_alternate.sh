#!/usr/bin/env bash
# Runs THERE (after pack.sh, the models exported or packed): several
# configurations ("sides") of one or more models alternated over ROUNDS
# rounds, the sides' order rotated each round, to tell a real difference from
# the H100's drift (the same plan's median moves up to 25% between
# back-to-back processes; PyTorch eager's vgg16 moved 1.05 -> 1.83 ms between
# calls of one session). A side is
#   `texplan run` arguments   e.g. "--check", "--precision tf32 --tuning-cache t.json"; leading
#                             NAME=VALUE words are its environment ("TEXPLAN_FLUSH_EVERY=4 --check")
#   eager                     PyTorch eager at its defaults (TF32 convolutions, fp32 matmuls)
#   eager-fp32                PyTorch eager with TF32 off (exact fp32, as texplan's default)
#   eager-io                  PyTorch eager timed from the input in host memory to the output
#                             back in it, as texplan's latency is (eager's input stays on the GPU)
#   graph                     the forward captured in a CUDA graph and replayed, PyTorch's defaults
#   graph-fp32                the same with TF32 off (exact fp32 on both sides)
# A texplan side runs one process per model; a PyTorch side one torch_bench.py
# process for all the models. $OUT/alternate.txt gets one line per round and
# side, then per model each side's median of its round medians and its ratio
# to the first side's, and the geometric mean of the ratios; $OUT/alternate.json
# the same as data. Stopped (a caller's `timeout`), it writes them for the
# rounds so far, marked "stopped", and exits 124.
#
#   scripts/device/gpu_alternate.sh [-n RUNS] [-r ROUNDS] [-d DEVICE] "MODELS" SIDE SIDE [SIDE ...]
#     MODELS: one model, several in quotes, or `all` (every model with weights in .dev/models)
#     DEVICE: texplan's --device (default gpu; pocl to try the script here)
#   e.g. scripts/device/gpu_alternate.sh -r 4 densenet121 "--offload none" "--offload auto --tuning-cache t.json"
#        scripts/device/gpu_alternate.sh -r 3 all "--check" eager eager-fp32
set -uo pipefail
RUNS=20 ROUNDS=4 DEVICE=gpu
while getopts "n:r:d:h" opt; do
  case $opt in n) RUNS=$OPTARG ;; r) ROUNDS=$OPTARG ;; d) DEVICE=$OPTARG ;; *) sed -n '2,23p' "$0"; exit 2 ;; esac
done
shift $((OPTIND - 1))
(($# >= 3)) || { sed -n '2,23p' "$0"; exit 2; }
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/out-gpu}
mkdir -p "$OUT"
source scripts/device/env.sh >/dev/null 2>&1
if [[ $1 == all ]]; then mapfile -t models < <(runnable_models); else models=($1); fi
shift
sides=("$@") tmp=$(mktemp -d)
: >"$tmp/times"   # lines: round side model ms [rel_error]

side_once() {  # SIDE_INDEX ROUND: every model once, appended to $tmp/times
  local i=$1 r=$2 side=${sides[$1]} m
  case $side in
    eager | eager-fp32 | eager-io | graph | graph-fp32)
      local flags=(--no-graph) key=median_ms
      [[ $side == eager-fp32 ]] && flags+=(--tf32 off)
      [[ $side == eager-io ]] && flags+=(--host-io)
      [[ $side == graph ]] && flags=() key=graph_ms
      [[ $side == graph-fp32 ]] && flags=(--tf32 off) key=graph_ms
      rm -f "$tmp/t.json"
      timeout $((60 + 20 * ${#models[@]})) env LD_LIBRARY_PATH="$TEXPLAN_SYSTEM_LD_LIBRARY_PATH" \
        python3 bench/peers/torch_bench.py "${flags[@]}" --zoo .dev/tools/export_models.py --models .dev/models \
        --runs "$RUNS" --json "$tmp/t.json" "${models[@]}" >>"$tmp/torch.log" 2>&1
      [[ -f $tmp/t.json ]] && syspython - "$tmp/t.json" "$key" "$r" "$i" >>"$tmp/times" <<'EOF'
import json, sys
for o in json.load(open(sys.argv[1])):
    if o.get(sys.argv[2]) is not None:
        print(sys.argv[3], sys.argv[4], o["model"], o[sys.argv[2]], "" if o.get("rel_error") is None else o["rel_error"])
EOF
      ;;
    *)
      local envs=() args=() w
      for w in $side; do
        if ((${#args[@]} == 0)) && [[ $w =~ ^[A-Z_][A-Z0-9_]*= ]]; then envs+=("$w"); else args+=("$w"); fi
      done
      for m in "${models[@]}"; do
        rm -f "$tmp/r.json"
        env "${envs[@]}" timeout 120 texplan run ".dev/models/$m" --device "$DEVICE" --bench "$RUNS" "${args[@]}" \
          --json "$tmp/r.json" >>"$tmp/texplan.log" 2>&1
        [[ -f $tmp/r.json ]] && syspython - "$tmp/r.json" "$r" "$i" "$m" >>"$tmp/times" <<'EOF'
import json, sys
o = json.load(open(sys.argv[1]))
if o.get("median_ms") is not None:
    print(sys.argv[2], sys.argv[3], sys.argv[4], o["median_ms"], "" if o.get("rel_error") is None else o["rel_error"])
EOF
      done
      ;;
  esac
}

{
  echo "models: ${models[*]}"
  for i in "${!sides[@]}"; do echo "side $i: ${sides[$i]}"; done
  echo "$ROUNDS rounds of $RUNS runs, the sides' order rotated each round"
} >"$tmp/head"
# The table of the rounds run so far; also when a caller's `timeout` stops
# the script (after the run in progress), so a cut-short call keeps them.
summarize() {
syspython - "$tmp/times" "$OUT/alternate.json" "${#sides[@]}" "${models[@]}" >"$tmp/table" <<'EOF'
import json, math, statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
n_sides, models = int(sys.argv[3]), sys.argv[4:]
def med(v):  # the upper middle of an even count, as texplan's profile takes it
    v = sorted(v); return v[len(v) // 2]
out, logs = [], [[] for _ in range(n_sides)]
for r in sorted({int(x[0]) for x in rows}):
    print(f"round {r + 1}: " + "; ".join(
        f"side {s}: " + " ".join(f"{x[2]} {float(x[3]):.3f}" for x in rows if int(x[0]) == r and int(x[1]) == s)
        for s in range(n_sides)))
print(f"{'model':20}" + "".join(f"{'side ' + str(s) + ' ms':>12}" for s in range(n_sides))
      + "".join(f"{str(s) + '/0':>8}" for s in range(1, n_sides)) + "   rel errors")
for m in models:
    ms = [[float(x[3]) for x in rows if x[2] == m and int(x[1]) == s] for s in range(n_sides)]
    errs = [sorted({x[4] for x in rows if x[2] == m and int(x[1]) == s and len(x) > 4}) for s in range(n_sides)]
    o = {"model": m, "median_ms": [med(v) if v else None for v in ms], "round_ms": ms,
         "rel_error": [e[-1] if e else None for e in errs]}
    ratios = [o["median_ms"][s] / o["median_ms"][0] if o["median_ms"][s] and o["median_ms"][0] else None
              for s in range(1, n_sides)]
    o["ratio_to_side0"] = ratios
    for s, q in enumerate(ratios):
        if q: logs[s + 1].append(math.log(q))
    out.append(o)
    f = lambda v, w, p: f"{v:{w}.{p}f}" if v is not None else f"{'failed':>{w}}"
    print(f"{m:20}" + "".join(f(v, 12, 3) for v in o["median_ms"]) + "".join(f(q, 8, 2) for q in ratios)
          + "   " + " ".join("-" if e is None else f"{float(e):.1e}" for e in o["rel_error"]))
if len(models) > 1:
    print(f"{'geomean':20}" + " " * 12 * n_sides + "".join(
        f"{math.exp(statistics.mean(l)):8.2f}" if l else f"{'-':>8}" for l in logs[1:]))
json.dump(out, open(sys.argv[2], "w"), indent=1)
EOF
cat "$tmp/head" "$tmp/table" | tee -a "$OUT/alternate.txt"
tail -5 "$tmp/texplan.log" "$tmp/torch.log" 2>/dev/null >>"$OUT/alternate_log.txt"
rm -rf "$tmp"
}
trap 'echo "stopped: the rounds so far" >>"$tmp/head"; summarize; exit 124' TERM INT
for ((r = 0; r < ROUNDS; ++r)); do
  for ((k = 0; k < ${#sides[@]}; ++k)); do side_once $(((k + r) % ${#sides[@]})) "$r"; done
done
summarize
