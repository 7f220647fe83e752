#!/usr/bin/env python3
"""Export models the way users export them today, on the GPU machine (PyTorch 2.11:
torch.onnx.export's default is the torch.export-based exporter, opset 20).

    export_current.py zoo EXPORT_MODELS_PY OUTDIR [NAME ...]
        every zoo model of export_models.py (same constructors, same seed) twice:
        OUTDIR/NAME_static (static shapes) and OUTDIR/NAME_dynbatch (symbolic dim
        'batch'), each NAME/NAME.onnx + NAME.onnx.data + test_data_set_0 (batch 1)
    export_current.py fixtures OUTDIR
        small models (random weights, a few KB to 1 MB) in both exporters, static and
        with a symbolic batch, with test_data_set_0 (batch 1) and test_data_set_1
        (batch 3) where the batch is symbolic: tests/fixtures/exported/
    export_current.py nodetests OUTDIR
        onnx's own backend node tests (from the installed onnx package) whose model
        imports an opset of 18 to 21: they are absent from Debian's libonnx 1.12 data

Reference outputs are PyTorch's, in fp32 (TF32 off), as serialized onnx.TensorProto.
"""
import importlib.util, os, shutil, sys, time

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
from onnx import numpy_helper

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


def save_pb(arr, name, path):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(np.ascontiguousarray(arr), name).SerializeToString())


def export(model, args, path, dynamo, dynamic, input_names, output_names, external):
    """One export; `dynamic` puts the symbolic dimension 'batch' on dim 0 of every input."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    kw = dict(input_names=input_names, output_names=output_names)
    if dynamo:
        if dynamic:
            batch = torch.export.Dim("batch", min=1, max=1024)
            kw["dynamic_shapes"] = tuple({0: batch} for _ in args)
        torch.onnx.export(model, args, path, dynamo=True, **kw)
    else:
        if dynamic:
            kw["dynamic_axes"] = {n: {0: "batch"} for n in input_names + output_names}
        torch.onnx.export(model, args, path, dynamo=False, opset_version=17, **kw)
    m = onnx.load(path)
    for p in os.listdir(os.path.dirname(path)):  # the exporter may leave its own .data
        if p.endswith(".data"):
            os.remove(os.path.join(os.path.dirname(path), p))
    if external:
        # As torch keeps them: small tensors (shapes, axes) inside the .onnx
        onnx.save_model(m, path, save_as_external_data=True, all_tensors_to_one_file=True,
                        location=os.path.basename(path) + ".data", size_threshold=1024)
    else:
        onnx.save_model(m, path)
    return m


def write_test_set(folder, k, inputs, input_names, outputs, output_names):
    d = os.path.join(folder, "test_data_set_%d" % k)
    os.makedirs(d, exist_ok=True)
    for i, (x, n) in enumerate(zip(inputs, input_names)):
        save_pb(x.detach().cpu().numpy(), n, os.path.join(d, "input_%d.pb" % i))
    for i, (y, n) in enumerate(zip(outputs, output_names)):
        save_pb(y.detach().cpu().numpy(), n, os.path.join(d, "output_%d.pb" % i))


def run_model(model, inputs):
    with torch.no_grad():
        y = model(*inputs)
    return list(y) if isinstance(y, (tuple, list)) else [y]


# ---------------------------------------------------------------- zoo

def zoo(export_models_py, out, names):
    spec = importlib.util.spec_from_file_location("export_models", export_models_py)
    em = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(em)
    names = names or list(em.ZOO)
    for name in names:
        for dynamic in (False, True):
            t = time.time()
            torch.manual_seed(0)
            make, example = em.ZOO[name]
            model = em.Main(make()).eval()
            x = example()
            tag = name + ("_dynbatch" if dynamic else "_static")
            folder = os.path.join(out, tag)
            try:
                export(model, (x,), os.path.join(folder, tag + ".onnx"), True, dynamic, ["input"], ["output"], True)
                write_test_set(folder, 0, [x], ["input"], run_model(model, [x]), ["output"])
                print("exported", tag, "%.1f s" % (time.time() - t), flush=True)
            except Exception as e:  # one failure must not stop the others
                print("FAILED", tag, type(e).__name__, str(e)[:400], flush=True)


# ---------------------------------------------------------------- fixtures

class CnnBn(nn.Module):
    """Conv-BN-ReLU, strided conv, max pool, adaptive average pool, flatten, linear."""
    def __init__(s):
        super().__init__()
        s.c1, s.b1 = nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8)
        s.c2, s.b2 = nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16)
        s.fc = nn.Linear(16, 10)
    def forward(s, x):
        x = F.max_pool2d(F.relu(s.b1(s.c1(x))), 2)
        x = F.relu(s.b2(s.c2(x)))
        return s.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class MlpGeluLn(nn.Module):
    """LayerNorm, Linear, GELU (exact and tanh), residual: a transformer MLP."""
    def __init__(s, d=32):
        super().__init__()
        s.ln, s.f1, s.f2, s.f3 = nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.Linear(4 * d, d), nn.Linear(d, d)
    def forward(s, x):
        y = x + s.f2(F.gelu(s.f1(s.ln(x))))
        return y + F.gelu(s.f3(y), approximate="tanh")


class AttnBlock(nn.Module):
    """A pre-norm encoder layer with GELU (scaled_dot_product_attention inside)."""
    def __init__(s, d=32, heads=4):
        super().__init__()
        s.layer = nn.TransformerEncoderLayer(d, heads, 64, dropout=0.0, activation="gelu", batch_first=True,
                                             norm_first=True)
    def forward(s, x):
        return s.layer(x)


class GroupNormUp(nn.Module):
    """GroupNorm, SiLU, nearest and bilinear upsampling: a diffusion-UNet block."""
    def __init__(s):
        super().__init__()
        s.c1, s.gn, s.c2 = nn.Conv2d(3, 16, 3, padding=1), nn.GroupNorm(4, 16), nn.Conv2d(16, 4, 3, padding=1)
    def forward(s, x):
        x = F.silu(s.gn(s.c1(x)))
        x = F.interpolate(x, scale_factor=2.0, mode="nearest")
        return F.interpolate(s.c2(x), scale_factor=0.5, mode="bilinear", align_corners=False)


class ChunkPadReduce(nn.Module):
    """Uneven chunk (Split num_outputs), reflect and constant pads, reductions over axes."""
    def __init__(s):
        super().__init__()
        s.c = nn.Conv2d(3, 10, 3)
    def forward(s, x):
        a, b, c = s.c(x).chunk(3, dim=1)            # 4, 4, 2 channels
        a = F.pad(a, (1, 1, 2, 2), mode="reflect")
        b = F.pad(b, (1, 1, 2, 2), value=0.5)
        m = a.mean(dim=(2, 3), keepdim=True) + b.amax(dim=(2, 3), keepdim=True)
        return torch.cat([a * m, b - m], 1), c.sum(dim=1)


class EinsumAttn(nn.Module):
    """Attention written with einsum, as ViT and MaxViT code does."""
    def __init__(s, d=16, heads=2):
        super().__init__()
        s.h, s.qkv, s.o = heads, nn.Linear(d, 3 * d), nn.Linear(d, d)
    def forward(s, x):
        b, n, d = x.shape
        q, k, v = s.qkv(x).reshape(b, n, 3, s.h, d // s.h).permute(2, 0, 3, 1, 4)
        a = torch.einsum("bhid,bhjd->bhij", q, k).mul(1.0 / (d // s.h) ** 0.5).softmax(-1)
        y = torch.einsum("bhij,bhjd->bhid", a, v)
        return s.o(y.transpose(1, 2).reshape(b, n, d))


FIXTURES = {  # name: (constructor, input shape at batch 1)
    "cnn_bn": (CnnBn, (1, 3, 32, 32)),
    "mlp_gelu_ln": (MlpGeluLn, (1, 8, 32)),
    "attn_block": (AttnBlock, (1, 8, 32)),
    "groupnorm_up": (GroupNormUp, (1, 3, 16, 16)),
    "chunk_pad_reduce": (ChunkPadReduce, (1, 3, 12, 12)),
    "einsum_attn": (EinsumAttn, (1, 6, 16)),
}


def fixtures(out):
    for name, (make, shape) in FIXTURES.items():
        for dynamo in (True, False):
            for dynamic in (False, True):
                torch.manual_seed(0)
                model = make().eval()
                x1 = torch.randn(*shape)
                x3 = torch.randn(3, *shape[1:])
                tag = "%s_%s_%s" % (name, "dynamo" if dynamo else "torchscript", "dynbatch" if dynamic else "static")
                folder = os.path.join(out, tag)
                try:
                    export(model, (x1,), os.path.join(folder, tag + ".onnx"), dynamo, dynamic, ["x"],
                           ["y%d" % i for i in range(len(run_model(model, [x1])))], False)
                    ys = run_model(model, [x1])
                    write_test_set(folder, 0, [x1], ["x"], ys, ["y%d" % i for i in range(len(ys))])
                    if dynamic:
                        ys = run_model(model, [x3])
                        write_test_set(folder, 1, [x3], ["x"], ys, ["y%d" % i for i in range(len(ys))])
                    m = onnx.load(os.path.join(folder, tag + ".onnx"))
                    ops = sorted({n.op_type for n in m.graph.node})
                    opset = [o.version for o in m.opset_import if o.domain in ("", "ai.onnx")]
                    print("fixture", tag, "opset", opset, " ".join(ops), flush=True)
                except Exception as e:
                    shutil.rmtree(folder, ignore_errors=True)
                    print("FAILED", tag, type(e).__name__, str(e)[:400], flush=True)


# ---------------------------------------------------------------- node tests

def nodetests(out):
    """The wheel ships the generators, not the data: generate it, keep opsets 18-21."""
    import subprocess, tempfile
    gen = tempfile.mkdtemp()
    # cmd_tools has no __main__ guard: call its main as the backend-test-tools script does
    code = ("import sys, onnx.backend.test.cmd_tools as c; "
            "sys.argv = ['backend-test-tools', 'generate-data', '-o', sys.argv[1]]; c.main()")
    subprocess.run([sys.executable, "-c", code, gen], check=True, stdout=subprocess.DEVNULL)
    root = os.path.join(gen, "node")
    kept = 0
    for t in sorted(os.listdir(root)):
        p = os.path.join(root, t, "model.onnx")
        if not os.path.isfile(p):
            continue
        m = onnx.load(p, load_external_data=False)
        v = [o.version for o in m.opset_import if o.domain in ("", "ai.onnx")]
        if not v or not 18 <= v[0] <= 21:
            continue
        shutil.copytree(os.path.join(root, t), os.path.join(out, t))
        kept += 1
    print("node tests at opsets 18-21:", kept, "of onnx", onnx.__version__, flush=True)


if __name__ == "__main__":
    print("torch", torch.__version__, "onnx", onnx.__version__, flush=True)
    what = sys.argv[1]
    if what == "zoo":
        zoo(sys.argv[2], sys.argv[3], sys.argv[4:])
    elif what == "fixtures":
        fixtures(sys.argv[2])
    elif what == "nodetests":
        nodetests(sys.argv[2])
    else:
        sys.exit(__doc__)
