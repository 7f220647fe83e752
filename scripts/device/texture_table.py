"""Tables from gpu_textures.sh's JSON: textures against buffers per model and
per convolution node. Usage: texture_table.py DIR (files MODEL_MODE.json and
MODEL_MODE_guard.json, MODE in none/pools/views)."""
import json, os, sys

d = sys.argv[1]
runs = {}
for f in sorted(os.listdir(d)):
    if not f.endswith(".json"):
        continue
    stem = f[:-5]
    guard = stem.endswith("_guard")
    stem = stem[:-6] if guard else stem
    model, mode = stem.rsplit("_", 1)
    try:
        runs.setdefault(model, {}).setdefault(mode, {})["guard" if guard else "run"] = json.load(open(os.path.join(d, f)))
    except ValueError:
        pass

def mib(b):
    return "%.2f" % (b / 2**20)

print("| model | textures | texture tensors | conversions | buffer MiB | texture MiB | total / buffer-only lower bound | rel_error | guard | median ms | / none |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for model, modes in sorted(runs.items()):
    base = modes.get("none", {}).get("run", {}).get("median_ms")
    for mode in ("none", "pools", "views"):
        r = modes.get(mode, {}).get("run")
        if not r:
            print("| %s | %s | failed |||||||||" % (model, mode))
            continue
        g = modes.get(mode, {}).get("guard", {})
        lb = r.get("buffer_lower_bound_bytes", r.get("lower_bound_bytes", 1)) or 1
        ms = r.get("median_ms")
        print("| %s | %s | %s | %s | %s | %s | %.3f | %.1e | %s | %s | %s |" % (
            model, mode, r.get("texture_tensors", 0), r.get("layout_conversions", 0), mib(r["buffer_bytes"]),
            mib(r["texture_bytes"]), r["plan_bytes"] / lb, r.get("rel_error", -1),
            ("clean" if g.get("guard_violations", 1) == 0 else "VIOLATIONS") if mode != "none" else "-",
            "%.3f" % ms if ms else "?", "%.2f" % (ms / base) if ms and base else "?"))

print("\nPer convolution node: device ms from OpenCL events (median of 5 profiled runs), texture / buffer.")
print("| model | node | buffer ms | pools / buffer | views / buffer |")
print("|---|---|---|---|---|")
for model, modes in sorted(runs.items()):
    def nodes(mode):
        p = modes.get(mode, {}).get("run", {}).get("profile", {})
        return {n["node"]: n for n in p.get("nodes", [])}
    none, pools, views = nodes("none"), nodes("pools"), nodes("views")
    convs = sorted((n for n in none.values() if "Conv" in n.get("op", "")), key=lambda n: -n["ms"])[:8]
    for n in convs:
        def ratio(other):
            o = other.get(n["node"])
            return "%.2f" % (o["ms"] / n["ms"]) if o and n["ms"] > 0 else "-"
        print("| %s | %s | %.4f | %s | %s |" % (model, n["node"], n["ms"], ratio(pools), ratio(views)))
    for mode, prof in (("pools", pools), ("views", views)):
        conv = sum(n["ms"] for n in prof.values() if n.get("op") in ("BufferToTexture", "TextureToBuffer"))
        if prof:
            print("| %s | (layout conversions, %s) | | %.4f ms | |" % (model, mode, conv))
