#!/usr/bin/env python3
"""One speed table from what scripts/device/all.sh left in OUT (issue 7): per model,
texplan optimized (exact fp32: step optimize's run, else step offload+torch's
--offload none run; the tuned run when the profile step ran), texplan with
--precision tf32 (step tf32), PyTorch eager at its defaults and its CUDA-graph replay
(step torch), all from the same call, as ratios to eager.

  python3 scripts/device/summary.py OUT
"""
import json, math, os, sys

out = sys.argv[1]


def load(*p):
    path = os.path.join(out, *p)
    try:
        return json.load(open(path)) if os.path.exists(path) else None
    except ValueError:
        return None


torch = {r["model"]: r for r in (load("torch.json") or [])}
own = {}  # model -> texplan run --json of exact fp32 with every optimization on
if os.path.isdir(os.path.join(out, "optimize")):
    for f in os.listdir(os.path.join(out, "optimize")):
        if f.endswith("_on.json"):
            own[f.rsplit("_on.json", 1)[0]] = load("optimize", f) or {}
for r in load("offload.json") or []:
    own.setdefault(r["model"], (r.get("none") or {}).get("result") or {})
names = sorted(own)
if not names:
    sys.exit("summary: neither optimize/*_on.json nor offload.json in " + out)
print(f"{'model':20} {'texplan ms':>10} {'tuned ms':>9} {'tf32 ms':>8} {'tf32 err':>9} {'eager ms':>9} "
      f"{'graph ms':>9} {'best/eager':>10} {'tf32/eager':>10}")
ratios, tf_ratios = [], []
for n in names:
    on = own[n]
    tuned = load("profile", n + "_tuned.json") or {}
    tf = load("tf32", n + ".json") or {}
    e = torch.get(n, {})
    ms, tms, fms, ems, gms = (on.get("median_ms"), tuned.get("median_ms"), tf.get("median_ms"),
                              e.get("median_ms"), e.get("graph_ms"))
    best = min([v for v in (ms, tms) if v] or [0]) or None
    f = lambda v, w: f"{v:{w}.3f}" if v else " " * (w - 3) + "n/a"
    r = lambda a, b: f"{a / b:10.2f}" if a and b else "       n/a"
    if best and ems: ratios.append(best / ems)
    if fms and ems: tf_ratios.append(fms / ems)
    err = tf.get("rel_error")
    print(f"{n:20} {f(ms, 10)} {f(tms, 9)} {f(fms, 8)} {err if err is not None else float('nan'):9.1e} {f(ems, 9)} "
          f"{f(gms, 9)} {r(best, ems)} {r(fms, ems)}")
gm = lambda v: math.exp(sum(map(math.log, v)) / len(v)) if v else float("nan")
print(f"geometric mean best/eager {gm(ratios):.2f} over {len(ratios)} models; "
      f"tf32/eager {gm(tf_ratios):.2f} over {len(tf_ratios)}; "
      f"texplan faster than eager on {sum(x < 1 for x in ratios)} of {len(ratios)}")
