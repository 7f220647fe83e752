#!/usr/bin/env python3
"""Alternates two or more builds of texplan_conv_bench on the same shapes.

    scripts/conv_bench_ab.py [--device pocl] [--rounds 3] [--reps 15] FILTER OLD_BIN NEW_BIN [...]

Runs `BIN --device D --reps N --min --filter FILTER --variants auto` for each
binary in turn, ROUNDS times (a shared machine drifts within minutes: one
build timed after the other measures the drift too), then prints per shape
each binary's min and median over the rounds (ms) and the last binary's min
over the first's. Build the old one from a clone (`git clone . /tmp/old &&
cd /tmp/old && git checkout REV && cmake -B build && cmake --build build
--target texplan_conv_bench`).
"""
import argparse
import re
import statistics
import subprocess

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("--device", default="pocl")
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--reps", type=int, default=15)
ap.add_argument("filter")
ap.add_argument("bins", nargs="+")
a = ap.parse_args()

times, order = {}, []
for _ in range(a.rounds):
    for b in a.bins:
        out = subprocess.run([b, "--device", a.device, "--reps", str(a.reps), "--min", "--filter", a.filter,
                              "--variants", "auto"], capture_output=True, text=True, check=True).stdout
        shape = None
        for line in out.splitlines():
            if m := re.match(r"^(\S.*?)  \(", line):
                shape = m.group(1)
            elif (m := re.match(r"^  auto\s+([\d.]+) ms", line)) and shape:
                if shape not in order:
                    order.append(shape)
                times.setdefault(shape, {}).setdefault(b, []).append(float(m.group(1)))

print(f"{'shape':<40}" + "".join(f"{b[-24:]:>26}" for b in a.bins) + "   last/first (min)")
for s in order:
    t = times[s]
    cols = "".join(f"{min(t[b]):>12.4f} /{statistics.median(t[b]):>10.4f}  " if b in t else f"{'-':>26}" for b in a.bins)
    ratio = f"{min(t[a.bins[-1]]) / min(t[a.bins[0]]):.2f}" if a.bins[0] in t and a.bins[-1] in t else "-"
    print(f"{s:<40}{cols}   {ratio}")
