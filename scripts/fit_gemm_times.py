#!/usr/bin/env python3
"""Fits lower/conv_select.cpp's kGemmTimes to measured GEMM times.

Reads bench/data/gemm_times_h200.json (or the file given): per shape, the
median time of every variant (scripts/device/gpu_products.sh, then the
renaming of its "/split" entries into the runtime's "/sN":
scripts/gemm_times_from_bench.py does it for a new sweep). Per family of
variants (the tiles, their split-K form "/s", each k-groups form) it fits

    us = overhead + ceil(groups / (compute_units * per_cu)) * mfma_per_group * us_per_mfma

by least squares on the relative error, per_cu taken from 1, 2, 3, 4, 6, 8,
and prints the table for kGemmTimes, then the sums over the shapes of the
measured time of each shape's choice: the model's, the model's refitted
without that shape, the choice of the build measured ("auto") and the
best variant's
(docs/kernel-choices.md#the-gemm-time-model).
    /usr/bin/python3 scripts/fit_gemm_times.py [FILE]     (numpy: Debian's python3-numpy)
"""
import json
import math
import re
import sys

import numpy as np

CU = 132
TILES = {"16x16": (16, 16), "16x32": (16, 32), "32x16": (32, 16), "32x32": (32, 32), "64x64": (64, 64), "64x64v": (64, 64), "64x128v": (64, 128), "128x64v": (128, 64)}
# The families kGemmTimes keeps: those that won a shape (128x128v, the tiles
# without float4 reads past 64x64 and the 64x64 k-groups never did; 64x64
# without them won one, and fitted it took four others badly: 872 us summed
# with it, 843 without).
FAMILIES = ["16x16", "16x32", "32x16", "32x32", "64x64v", "64x128v", "128x64v", "32x32/s", "64x64/s", "64x64v/s", "64x128v/s",
            "128x64v/s", "32x32k2", "32x32k4", "32x32k8", "32x64k2", "32x64k4"]


def cdiv(a, b):
    return -(-a // b)


def features(variant, M, N, K):
    """(family, work-groups, MFMAs of one group), or None for a variant no family covers."""
    m = re.match(r"^(32)x(32|64)k(\d+)$", variant)
    if m:
        tm, tn = int(m.group(1)), int(m.group(2))
        return variant, cdiv(M, tm) * cdiv(N, tn), tm * tn * K / 1e6
    tiles, _, split = variant.partition("/s")
    if tiles not in TILES:
        return None
    tm, tn = TILES[tiles]
    if not split:
        return tiles, cdiv(M, tm) * cdiv(N, tn), tm * tn * K / 1e6
    s = int(split)
    kslice = cdiv(cdiv(K, s), 16) * 16
    return tiles + "/s", cdiv(M, tm) * cdiv(N, tn) * s, tm * tn * kslice / 1e6


def fit(points):
    best = None
    for per_cu in (1, 2, 3, 4, 6, 8):
        x = np.array([[1.0, math.ceil(g / (CU * per_cu)) * w] for g, w, _ in points])
        y = np.array([us for _, _, us in points])
        coef = np.linalg.lstsq(x / y[:, None], np.ones(len(y)), rcond=None)[0]
        if coef[1] <= 0:
            continue
        err = math.sqrt(np.mean(((x @ coef - y) / y) ** 2))
        if best is None or err < best[0]:
            best = (err, per_cu, coef[0], coef[1])
    return best


def fit_all(shapes, leave_out=None):
    points = {}
    for s in shapes:
        if s["shape"] == leave_out:
            continue
        for v, us in s["us"].items():
            f = features(v, s["M"], s["N"], s["K"])
            if f and f[0] in FAMILIES:
                points.setdefault(f[0], []).append((f[1], f[2], us))
    return {fam: fit(p) for fam, p in points.items()}


NARROW = ("16x16", "16x32", "32x16")


def choice(model, s):
    """The variant the runtime picks: the narrow tiles for products only
    (lower/conv.cpp: in models they lost on 1x1 convs)."""
    def predicted(v):
        f = features(v, s["M"], s["N"], s["K"])
        if not f or f[0] not in model or (f[0] in NARROW and not s["shape"].startswith("product")):
            return math.inf
        _, per_cu, overhead, per_mfma = model[f[0]]
        return overhead + math.ceil(f[1] / (CU * per_cu)) * f[2] * per_mfma
    return min((v for v in s["us"] if v != "auto"), key=predicted)


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "bench/data/gemm_times_h200.json"
    shapes = json.load(open(path))["shapes"]
    model = fit_all(shapes)
    print("family        per_cu  overhead_us  us_per_mfma  rel. rms")
    for fam in FAMILIES:
        err, per_cu, overhead, per_mfma = model[fam]
        print(f'{{"{fam}", {per_cu}, {overhead:.2f}, {per_mfma:.2f}}},'.ljust(36) + f"  rel. rms {err:.2f}")
    sums = {"model": 0.0, "model, each shape left out": 0.0, "auto (the build measured)": 0.0, "best": 0.0}
    for s in shapes:
        sums["model"] += s["us"][choice(model, s)]
        sums["model, each shape left out"] += s["us"][choice(fit_all(shapes, s["shape"]), s)]
        sums["auto (the build measured)"] += s["us"]["auto"]
        sums["best"] += min(us for v, us in s["us"].items() if v != "auto")
    print(f"{len(shapes)} shapes, the measured time of each one's choice summed:")
    for k, v in sums.items():
        print(f"  {k:28} {v:7.0f} us")


if __name__ == "__main__":
    main()
