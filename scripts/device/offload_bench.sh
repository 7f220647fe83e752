#!/usr/bin/env bash
# Runs THERE, on the GPU machine, from the repo root, over a .dev/ made by pack.sh
# (which carries libclblast.so.1 with texplan): per model, texplan with
# `--offload none`, `clblast` and `auto` (each --check --guard --bench), and PyTorch
# eager on the same models, then one table of latencies and ratios.
#
#   scripts/device/offload_bench.sh [-n RUNS] [-r ROUNDS] [-t SECONDS] [-f FRACTION] [-T] [MODEL ...]
#     -n RUNS      timed runs per model, mode and round (default 50)
#     -r ROUNDS    rounds per model (default 3): the three modes run in turn, in a
#                  rotated order each round; the first round also checks and guards.
#                  A mode's latency is the median of its rounds' medians: back-to-back
#                  runs of one plan differ by up to 25% on the H100, rounds don't
#     -t SECONDS   time limit per texplan call (default 150)
#     -f FRACTION  first tune CLBlast's GEMM kernels over FRACTION of their search
#                  space, once, on the first model (texplan run --clblast-tune; default 0:
#                  CLBlast's own database), within TUNE_SECONDS (default 280; each kernel's
#                  parameters are saved as soon as it is tuned); every run then loads them
#     -T           skip the torch bench
#     MODEL ...    default: every model of .dev/models with weights
#
# Writes under $OUT (./out-gpu elsewhere): offload.json (per model and mode: the
# `texplan run --json` report, with rc), tuning.json (the tuning cache: CLBlast's
# parameters and auto's per-node measurements), torch.json (PyTorch defaults),
# torch_fp32.json (TF32 off), log.txt.
# `auto` runs after `none` and `clblast` with the tuning cache of this run: it
# measures each candidate node once (both ways) and keeps the faster.
set -euo pipefail

RUNS=50 ROUNDS=3 LIMIT=150 FRACTION=0 TORCH=1 TUNE_SECONDS=${TUNE_SECONDS:-280}
while getopts "n:r:t:f:Th" opt; do
  case $opt in
    n) RUNS=$OPTARG ;; r) ROUNDS=$OPTARG ;; t) LIMIT=$OPTARG ;; f) FRACTION=$OPTARG ;; T) TORCH=0 ;;
    *) sed -n '2,24p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))

cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/out-gpu}
mkdir -p "$OUT"
source scripts/device/env.sh

main() {
  local models=("$@") tmp rc failed=0 n mode
  [[ -x .dev/bin/texplan ]] || { echo "error: .dev/bin/texplan missing (run pack.sh here first)"; return 1; }
  ((${#models[@]})) || mapfile -t models < <(runnable_models)
  texplan devices || true
  tmp=$(mktemp -d)
  local cache=$OUT/tuning.json
  if [[ $FRACTION != 0 ]]; then
    # CLBlast's parameters are per device, not per shape: tune once, before
    # any timed run, and let every model and mode load them from the cache.
    echo "== CLBlast tuning over $FRACTION of the search space (texplan run ${models[0]} --clblast-tune)"
    local t0=$SECONDS
    timeout "$TUNE_SECONDS" texplan run ".dev/models/${models[0]}" --device gpu --offload clblast --tuning-cache "$cache" \
      --clblast-tune "$FRACTION" --bench 1 || { echo "CLBlast tuning: exit status $?"; failed=1; }
    echo "CLBlast tuning took $((SECONDS - t0)) s"
  fi
  local modes=(none clblast auto) round k
  for n in "${models[@]}"; do
    for ((round = 0; round < ROUNDS; ++round)); do
      for k in 0 1 2; do
        mode=${modes[$(((k + round) % 3))]}
        echo "== texplan run $n --offload $mode (round $((round + 1)))"
        # Round 1 checks and guards (its report is the mode's), later rounds only time.
        local extra=(--check --guard) json=$tmp/$n.$mode.json
        ((round == 0)) || extra=() json=$tmp/$n.$mode.r$round.json
        rc=0
        timeout "$LIMIT" texplan run ".dev/models/$n" --device gpu --offload "$mode" --tuning-cache "$cache" \
          "${extra[@]}" --bench "$RUNS" --json "$json" || rc=$?
        ((round == 0)) && echo "$rc" >"$tmp/$n.$mode.rc"
        ((rc == 0)) || { echo "texplan run $n --offload $mode: exit status $rc"; failed=1; }
      done
    done
  done
  if ((TORCH)); then
    # Twice: PyTorch's defaults (TF32 convolutions) and strict fp32 (TF32 off),
    # the like-for-like peer of texplan's exact fp32 kernels.
    echo "== torch eager (bench/peers/torch_bench.py), PyTorch defaults"
    timeout 300 env LD_LIBRARY_PATH="$TEXPLAN_SYSTEM_LD_LIBRARY_PATH" python3 bench/peers/torch_bench.py \
      --zoo .dev/tools/export_models.py --models .dev/models --runs "$RUNS" --json "$OUT/torch.json" "${models[@]}" ||
      failed=1
    echo "== torch eager (bench/peers/torch_bench.py), --tf32 off"
    timeout 300 env LD_LIBRARY_PATH="$TEXPLAN_SYSTEM_LD_LIBRARY_PATH" python3 bench/peers/torch_bench.py --no-graph \
      --tf32 off --zoo .dev/tools/export_models.py --models .dev/models --runs "$RUNS" --json "$OUT/torch_fp32.json" \
      "${models[@]}" || failed=1
  fi
  syspython - "$tmp" "$OUT" "$ROUNDS" "${models[@]}" <<'EOF'
import json, os, statistics, sys
tmp, out, rounds, names = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
def load(p):
    try:
        return json.load(open(p)) if os.path.exists(p) else None
    except ValueError:
        return None
torch = {r["model"]: r for r in (load(os.path.join(out, "torch.json")) or [])}
strict = {r["model"]: r for r in (load(os.path.join(out, "torch_fp32.json")) or [])}
rows = []
print(f"\n{'model':20} {'none ms':>9} {'clblast':>9} {'auto':>9} {'eager':>9} {'auto/none':>10} {'auto/clb':>9} "
      f"{'auto/eager':>10} {'eager fp32':>10} {'auto/fp32':>9} {'offl':>5}  auto vs best  rel_error(auto) guard  act MiB none/clblast")
for n in names:
    row = {"model": n}
    for mode in ("none", "clblast", "auto"):
        row[mode] = {"rc": int(open(os.path.join(tmp, f"{n}.{mode}.rc")).read()),
                     "result": load(os.path.join(tmp, f"{n}.{mode}.json"))}
    ms = {}
    for m in ("none", "clblast", "auto"):
        per_round = [(row[m]["result"] or {}).get("median_ms")]
        per_round += [(load(os.path.join(tmp, f"{n}.{m}.r{k}.json")) or {}).get("median_ms") for k in range(1, rounds)]
        per_round = [v for v in per_round if v]
        row[m]["round_ms"] = per_round
        ms[m] = statistics.median(per_round) if per_round else None
    eager = torch.get(n, {}).get("median_ms")
    row["eager_ms"] = eager
    eager32 = strict.get(n, {}).get("median_ms")
    row["eager_fp32_ms"] = eager32
    rows.append(row)
    f = lambda v: f"{v:9.3f}" if v else "      n/a"
    r = lambda a, b: f"{a / b:10.2f}" if a and b else "       n/a"
    best = min([v for v in (ms["none"], ms["clblast"]) if v] or [0])
    verdict = "n/a" if not (ms["auto"] and best) else ("ok" if ms["auto"] <= best * 1.05 else f"SLOWER {ms['auto'] / best:.2f}x")
    auto = row["auto"]["result"] or {}
    act = lambda m: (row[m]["result"] or {}).get("activation_bytes", 0) / 2**20
    print(f"{n:20} {f(ms['none'])} {f(ms['clblast'])} {f(ms['auto'])} {f(eager)} {r(ms['auto'], ms['none'])} "
          f"{r(ms['auto'], ms['clblast'])[1:]} {r(ms['auto'], eager)} {f(eager32)} {r(ms['auto'], eager32)[1:]} {len(auto.get('offloaded_nodes', [])):5}  "
          f"{verdict:12} {auto.get('rel_error', float('nan')):.2e}       {auto.get('guard_violations', 'n/a')}     "
          f"{act('none'):.2f}/{act('clblast'):.2f}")
json.dump(rows, open(os.path.join(out, "offload.json"), "w"), indent=2)
print(f"(ms: median over {rounds} rounds of each round's median; auto vs best: auto against the better of none and "
      "clblast, 'ok' within 5%)")
EOF
  rm -rf "$tmp"
  return "$failed"
}

main "$@" 2>&1 | tee -a "$OUT/log.txt"
