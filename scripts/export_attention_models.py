#!/usr/bin/python3
"""Export transformer models whose attention texplan fuses (docs/fused-ops.md,
FusedAttention), in the zoo's layout (NAME/NAME.onnx, NAME.onnx.data,
test_data_set_0/input_0.pb and output_0.pb), random weights from a fixed seed,
TorchScript exporter, opset 17.

usage: /usr/bin/python3 scripts/export_attention_models.py OUTDIR [NAME ...]   (no NAME: all)

  audio_encoder     nn.TransformerEncoder, d_model 384, 6 heads (head dim 64),
                    feed-forward 1536, 4 layers, over a [1, 1500, 384] input
                    (an audio encoder's 30 s of frames)
  attn_sdpa         one attention block, [1, 4, 197, 64] heads: scaled_dot_product_attention
                    with an additive padding mask [1, 1, 1, 197] where torch has it
                    (2.0 on), else its export spelled out (q and k^T each times sqrt(scale))
  attn_scale_after  (q @ k^T) * scale + a causal mask [S, S], 8 heads of 80, S 77
  attn_bool_mask    a boolean causal mask turned additive by Where(mask, 0, -inf), 2 heads of 32
"""
import math, os, sys

import onnx
import onnx.numpy_helper
import torch
import torch.nn as nn
import torch.nn.functional as F


class Encoder(nn.Module):
    def __init__(s, d=384, heads=6, ff=1536, layers=4):
        super().__init__()
        s.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(d, heads, ff, batch_first=True), layers)

    def forward(s, x):
        return s.enc(x)


class Block(nn.Module):
    """x [1, S, H*D] -> qkv -> heads [1, H, S, D] -> attention -> out projection."""

    def __init__(s, form, heads, dim, seq):
        super().__init__()
        s.form, s.h, s.d = form, heads, dim
        s.qkv, s.out = nn.Linear(heads * dim, 3 * heads * dim), nn.Linear(heads * dim, heads * dim)
        causal = torch.tril(torch.ones(seq, seq, dtype=torch.bool))
        if form == "attn_sdpa":
            pad = torch.zeros(1, 1, 1, seq)
            pad[..., seq - 7:] = -1e4  # the last 7 positions are padding
            s.register_buffer("mask", pad)
        elif form == "attn_scale_after":
            s.register_buffer("mask", torch.zeros(seq, seq).masked_fill(~causal, float("-inf")))
        else:
            s.register_buffer("mask", causal)

    def forward(s, x):
        b, n, _ = x.shape
        q, k, v = s.qkv(x).view(b, n, 3, s.h, s.d).permute(2, 0, 3, 1, 4)
        scale = 1.0 / math.sqrt(s.d)
        sdpa = getattr(F, "scaled_dot_product_attention", None)
        if s.form == "attn_scale_after":
            a = torch.softmax((q @ k.transpose(-2, -1)) * scale + s.mask, dim=-1) @ v
        elif sdpa is not None:
            a = sdpa(q, k, v, attn_mask=s.mask)
        else:  # what torch 2's exporter writes for scaled_dot_product_attention
            m = s.mask if s.mask.dtype != torch.bool else torch.where(s.mask, torch.tensor(0.0), torch.tensor(float("-inf")))
            r = math.sqrt(scale)
            a = torch.softmax((q * r) @ (k.transpose(-2, -1) * r) + m, dim=-1) @ v
        return s.out(a.transpose(1, 2).reshape(b, n, s.h * s.d))


MODELS = {
    "audio_encoder": (lambda: Encoder(), (1, 1500, 384)),
    "attn_sdpa": (lambda: Block("attn_sdpa", 4, 64, 197), (1, 197, 256)),
    "attn_scale_after": (lambda: Block("attn_scale_after", 8, 80, 77), (1, 77, 640)),
    "attn_bool_mask": (lambda: Block("attn_bool_mask", 2, 32, 50), (1, 50, 64)),
}


def save_tensor(t, path, name):
    p = onnx.numpy_helper.from_array(t.detach().numpy(), name)
    with open(path, "wb") as f:
        f.write(p.SerializeToString())


def export(out, name):
    torch.manual_seed(0)
    make, shape = MODELS[name]
    model = make().eval()
    x = torch.randn(*shape)
    folder = os.path.join(out, name)
    os.makedirs(os.path.join(folder, "test_data_set_0"), exist_ok=True)
    path = os.path.join(folder, name + ".onnx")
    kw = {"dynamo": False} if int(torch.__version__.split(".")[0]) >= 2 else {}
    # grad stays enabled: it keeps nn.TransformerEncoderLayer off its fused fast path
    torch.onnx.export(model, x, path, opset_version=17, do_constant_folding=True, input_names=["input"],
                      output_names=["output"], **kw)
    m = onnx.load(path)
    data = os.path.join(folder, name + ".onnx.data")
    if os.path.exists(data):
        os.remove(data)  # save_model appends to an existing file
    onnx.save_model(m, path, save_as_external_data=True, all_tensors_to_one_file=True, location=name + ".onnx.data",
                    size_threshold=0)
    with torch.no_grad():
        y = model(x)
    save_tensor(x, os.path.join(folder, "test_data_set_0", "input_0.pb"), "input")
    save_tensor(y, os.path.join(folder, "test_data_set_0", "output_0.pb"), "output")
    print("exported", name, "->", folder)


if __name__ == "__main__":
    out, names = sys.argv[1], sys.argv[2:] or list(MODELS)
    for n in names:
        export(out, n)
