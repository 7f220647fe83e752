#!/usr/bin/env python3
"""Turns gpu_products.sh's products.json and conv1x1.json into the
measurements scripts/fit_gemm_times.py reads (bench/data/gemm_times_h200.json).

Per shape: M, N and K of the product (a 1x1 conv "C->OC HW": M = OC,
N = HW x HW, K = C; strided 1x1 convs dropped: conv2d_gemm runs them), and
each variant's median microseconds, "TILES/split" renamed into the runtime's
"TILES/sN" by lower/conv_select.cpp's split_by_shape (two waves; dropped
where that rule does not split). k-groups entries with K < 128 are dropped
too: there the 32x32 tiles ran.
    /usr/bin/python3 scripts/gemm_times_from_bench.py DIR [COMMAND] > bench/data/gemm_times_h200.json
"""
import datetime
import json
import re
import sys

CU = 132
TK = 16


def cdiv(a, b):
    return -(-a // b)


def tiles_of(name):
    m = re.match(r"^(\d+)x(\d+)", name)
    return int(m.group(1)), int(m.group(2))


def split_name(tiles, M, N, K):
    tm, tn = tiles_of(tiles)
    groups = cdiv(M, tm) * cdiv(N, tn)
    want = max(1, min(cdiv(2 * CU, groups), K // (4 * TK)))
    kslice = cdiv(cdiv(K, want), TK) * TK
    splits = cdiv(K, kslice)
    return f"{tiles}/s{splits}" if splits > 1 else None


def mnk(shape):
    m = re.search(r"product (?:\S+ )+?(\d+)x(\d+)x(\d+)", shape)
    if m:
        M, K, N = map(int, m.groups())
        return M, N, K
    m = re.search(r"1x1 (\d+)->(\d+) (\d+)", shape)
    if m and " s2 " not in shape:
        C, OC, HW = map(int, m.groups())
        return OC, HW * HW, C
    return None


def main():
    folder = sys.argv[1]
    command = sys.argv[2] if len(sys.argv) > 2 else "scripts/device/gpu_products.sh"
    shapes, device = [], ""
    for f in ("products.json", "conv1x1.json"):
        data = json.load(open(f"{folder}/{f}"))
        device = data.get("device", device)
        for s in data["shapes"]:
            dims = mnk(s["shape"])
            if not dims:
                continue
            M, N, K = dims
            us = {}
            for v, r in s["variants"].items():
                if r["ms"] is None or r["ms"] != r["ms"]:
                    continue
                name = v
                if v.endswith("/split"):
                    name = split_name(v[: -len("/split")], M, N, K)
                    if not name:
                        continue
                if re.match(r"^\d+x\d+k\d+$", v) and K < 128:
                    continue
                us[name] = round(r["ms"] * 1000, 2)
            shapes.append({"shape": s["shape"], "M": M, "N": N, "K": K, "us": us})
    json.dump({"device": f"{device}, NVIDIA OpenCL (driver 580), {CU} compute units",
               "date": datetime.date.today().isoformat(), "command": command,
               "note": "median device time of one FusedMatMul (x W + bias) or 1x1 FusedConv node per variant, "
                       "microseconds; 'auto' is the lowering's own choice in the build measured; split-K "
                       "variants named as the runtime names them (TILES/sN)",
               "shapes": shapes}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
