#!/usr/bin/env python3
"""PyTorch eager peer benchmark for texplan: fp32, batch 1, on CUDA.

  python3 torch_bench.py --zoo PATH/export_models.py [--models DIR] [--runs R] [--warmup W]
                         [--json OUT.json] [--no-graph] [--device cuda|cpu] [NAME ...]

Models are built exactly as export_models.py builds them (its ZOO and Main are imported
from --zoo): torch.manual_seed(0), constructor, example input, in that order, so weights
and input equal those of the exported ONNX files. With --models DIR the input is read
from DIR/NAME/test_data_set_0/input_0.pb where it exists, and the output is compared
with output_0.pb (rel_error = ||out - ref|| / ||ref||; it proves weights and input match;
with TF32 convolutions, PyTorch's default, expect ~1e-3 on CNNs).

Per model: W warm-up runs, then R timed runs, each between torch.cuda.synchronize()
calls (wall clock, so launch overhead counts, as it does for any eager user);
median and min in ms. The input stays on the GPU and the output there, unless --host-io:
then each run copies the input from host memory and the output back, as texplan's do. Memory, from one more run with fresh peak statistics:
  peak_activation_bytes = max_memory_allocated() during the run - memory_allocated() before it
                          + input bytes
i.e. what eager needs besides weights: every intermediate, the output, the input and the
library workspaces allocated during the run (cuDNN). Persistent allocations made by
earlier runs (e.g. cuBLAS workspaces) are reported apart as persistent_other_bytes.
graph_ms: median replay time of the same forward captured in a CUDA graph (no launch
overhead), or null with graph_error. --kernels: each CUDA kernel of one forward (the
kernels a graph replays), the median of its device time over 5 runs from torch.profiler,
printed and in the JSON as "kernels" (name, us), to hold a model's layers against texplan's
--profile. Settings (TF32, cudnn.benchmark) are PyTorch's defaults unless flags say
otherwise, and are written into the JSON.
"""
import argparse, importlib.util, json, os, statistics, struct, sys, time, types

import numpy as np
import torch

# ---- onnx.TensorProto reader (dims, data_type, raw_data, float/int32/int64/double data) ----
NP = {1: np.float32, 2: np.uint8, 3: np.int8, 5: np.int16, 6: np.int32, 7: np.int64,
      9: np.bool_, 11: np.float64}


def read_tensor_proto(path):
    buf = open(path, "rb").read()
    pos, dims, dtype, raw, vals = 0, [], 0, None, []

    def varint():
        nonlocal pos
        v = shift = 0
        while True:
            b = buf[pos]; pos += 1
            v |= (b & 0x7F) << shift; shift += 7
            if not b & 0x80:
                return v

    signed = lambda v, bits=64: v - (1 << bits) if v >> (bits - 1) else v
    while pos < len(buf):
        key = varint(); field, wire = key >> 3, key & 7
        if wire == 2:
            n = varint(); end = pos + n
            if field in (1, 5, 7):  # packed varints
                out = []
                while pos < end:
                    out.append(signed(varint()))
                (dims if field == 1 else vals).extend(out)
            elif field == 4: vals.extend(struct.unpack_from(f"<{n // 4}f", buf, pos))
            elif field == 10: vals.extend(struct.unpack_from(f"<{n // 8}d", buf, pos))
            elif field == 9: raw = buf[pos:end]
            pos = end
        elif wire == 0:
            v = varint()
            if field == 1: dims.append(signed(v))
            elif field == 2: dtype = v
            elif field in (5, 7): vals.append(signed(v))
        elif wire == 1:
            if field == 10: vals.append(struct.unpack_from("<d", buf, pos)[0])
            pos += 8
        elif wire == 5:
            if field == 4: vals.append(struct.unpack_from("<f", buf, pos)[0])
            pos += 4
        else:
            raise ValueError(f"{path}: unsupported wire type {wire}")
    if dtype not in NP:
        raise ValueError(f"{path}: unsupported data_type {dtype}")
    a = np.frombuffer(raw, NP[dtype]).copy() if raw is not None else np.array(vals, NP[dtype])
    return a.reshape(dims)


def load_zoo(path):
    """Import export_models.py for its ZOO and Main; it imports onnx, which we do not need."""
    if "onnx" not in sys.modules:
        try:
            import onnx  # noqa: F401
        except ImportError:
            sys.modules["onnx"] = types.ModuleType("onnx")
    spec = importlib.util.spec_from_file_location("export_models", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def timed(fn, runs, sync):
    times = []
    for _ in range(runs):
        sync(); t0 = time.perf_counter(); fn(); sync()
        times.append((time.perf_counter() - t0) * 1e3)
    return times


def bench(zoo, name, a, dev):
    torch.manual_seed(0)                      # same order as export_models.export()
    make, example = zoo.ZOO[name]
    model = zoo.Main(make()).eval()
    x = example()
    folder = os.path.join(a.models, name, "test_data_set_0") if a.models else None
    ref = None
    if folder and os.path.exists(os.path.join(folder, "input_0.pb")):
        x = torch.from_numpy(read_tensor_proto(os.path.join(folder, "input_0.pb")))
    if folder and os.path.exists(os.path.join(folder, "output_0.pb")):
        ref = read_tensor_proto(os.path.join(folder, "output_0.pb")).astype(np.float64)
    model, x = model.to(dev), x.to(dev)
    weight_bytes = sum(t.numel() * t.element_size() for t in list(model.parameters()) + list(model.buffers()))
    input_bytes = x.numel() * x.element_size()
    cuda = dev.type == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    r = dict(model=name, weight_bytes=weight_bytes, input_bytes=input_bytes)
    with torch.inference_mode():
        for _ in range(a.warmup):
            y = model(x)
        sync()
        out = y.float().cpu().numpy().astype(np.float64)
        r["rel_error"] = (float(np.linalg.norm(out - ref) / (np.linalg.norm(ref) or 1.0))
                          if ref is not None and ref.shape == out.shape else None)
        del y
        if a.host_io:  # as texplan's latency: the input from host memory, the output back to it
            x_host = x.cpu()
            t = timed(lambda: model(x_host.to(dev)).cpu(), a.runs, sync)
        else:
            t = timed(lambda: model(x), a.runs, sync)
        r.update(median_ms=statistics.median(t), min_ms=min(t))
        r.update(graph_ms=None, peak_activation_bytes=None, persistent_other_bytes=None)
        if not cuda:
            return r
        sync(); torch.cuda.empty_cache(); torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        y = model(x); sync()
        r["peak_activation_bytes"] = torch.cuda.max_memory_allocated() - before + input_bytes
        r["persistent_other_bytes"] = before - weight_bytes - input_bytes
        del y
    if a.kernels and cuda:
        try:
            r["kernels"] = kernel_times(model, x, sync)
        except Exception as e:  # report, keep the timings
            r["kernels_error"] = f"{type(e).__name__}: {e}"
            print(f"{name}: --kernels failed: {r['kernels_error']}", flush=True)
    if a.graph:
        try:
            with torch.inference_mode():
                s = torch.cuda.Stream()           # capture needs warm-up on a side stream
                s.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(s):
                    for _ in range(3):
                        model(x)
                torch.cuda.current_stream().wait_stream(s)
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    y = model(x)
                g.replay(); sync()
                for _ in range(a.warmup):
                    g.replay()
                r["graph_ms"] = statistics.median(timed(g.replay, a.runs, sync))
                del g, y
        except Exception as e:  # report, keep the eager numbers
            r["graph_error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    return r


def kernel_times(model, x, sync, runs=5):
    """Per CUDA kernel of one forward, in launch order: its name and median device us over `runs`."""
    from torch.profiler import ProfilerActivity, profile
    with torch.inference_mode(), profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(runs):
            model(x)
        sync()
    ev = sorted((e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA
                 and "memcpy" not in e.name.lower() and "memset" not in e.name.lower()),
                key=lambda e: e.time_range.start)
    if not ev or len(ev) % runs:
        return [dict(name=e.name, us=e.time_range.elapsed_us()) for e in ev]
    per = len(ev) // runs
    return [dict(name=ev[i].name, us=statistics.median(ev[i + k * per].time_range.elapsed_us() for k in range(runs)))
            for i in range(per)]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("names", nargs="*", help="models (default: all of the zoo)")
    p.add_argument("--zoo", required=True, help="path to export_models.py")
    p.add_argument("--models", help="model folder with test_data_set_0 (input and reference)")
    p.add_argument("--runs", type=int, default=50)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--json")
    p.add_argument("--device", default="cuda")
    p.add_argument("--no-graph", dest="graph", action="store_false")
    p.add_argument("--kernels", action="store_true", help="print each CUDA kernel's device time (torch.profiler)")
    p.add_argument("--tf32", choices=["default", "on", "off"], default="default",
                   help="TF32 for convolutions and matmuls (default: PyTorch's, conv on, matmul off)")
    p.add_argument("--cudnn-benchmark", action="store_true", help="torch.backends.cudnn.benchmark = True")
    p.add_argument("--host-io", action="store_true",
                   help="time the input's copy to the device and the output's back too, as texplan's latency does")
    a = p.parse_args()
    zoo = load_zoo(a.zoo)
    dev = torch.device(a.device)
    if a.tf32 != "default":
        torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = a.tf32 == "on"
    torch.backends.cudnn.benchmark = a.cudnn_benchmark
    env = dict(torch_version=torch.__version__,
               device=torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu",
               tf32_conv=torch.backends.cudnn.allow_tf32, tf32_matmul=torch.backends.cuda.matmul.allow_tf32,
               cudnn_benchmark=a.cudnn_benchmark, host_io=a.host_io, runs=a.runs)
    print(f"torch {env['torch_version']} on {env['device']}, tf32 conv={env['tf32_conv']} "
          f"matmul={env['tf32_matmul']}, cudnn.benchmark={a.cudnn_benchmark}, runs={a.runs}", flush=True)
    print(f"{'model':20} {'median ms':>10} {'min ms':>9} {'graph ms':>9} {'act MiB':>9} {'wt MiB':>8}  rel error")
    results, failed = [], 0
    for name in a.names or list(zoo.ZOO):
        try:
            r = bench(zoo, name, a, dev)
        except Exception as e:
            failed += 1
            print(f"{name:20} failed: {type(e).__name__}: {e}", flush=True)
            continue
        finally:
            if dev.type == "cuda":
                torch.cuda.empty_cache()
        r.update(env)
        results.append(r)
        f = lambda v, s: "n/a" if v is None else s.format(v)
        print(f"{name:20} {r['median_ms']:10.3f} {r['min_ms']:9.3f} {f(r['graph_ms'], '{:9.3f}'):>9} "
              f"{f(r['peak_activation_bytes'] and r['peak_activation_bytes'] / 2**20, '{:9.2f}'):>9} "
              f"{r['weight_bytes'] / 2**20:8.2f}  {f(r['rel_error'], '{:.2e}')}"
              + (f"  (graph: {r['graph_error']})" if "graph_error" in r else ""), flush=True)
        if r.get("kernels"):
            print(f"  {len(r['kernels'])} kernels, {sum(k['us'] for k in r['kernels']) / 1e3:.3f} ms:")
            for k in r["kernels"]:
                print(f"  {k['us']:9.1f} us  {k['name'][:110]}")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(results, fh, indent=2)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
