#!/usr/bin/python3
"""A quantized ("QDQ") torchvision model: eager quantization-aware training's
fake quantizers (activations uint8 per tensor, weights int8 per output
channel, symmetric), observed on four random batches, exported by Debian's
torch at opset 13, where each becomes a QuantizeLinear/DequantizeLinear pair.
Random weights, seed 0; the zoo's layout (NAME/NAME.onnx, NAME.onnx.data,
test_data_set_0 with PyTorch's own output).

usage: /usr/bin/python3 scripts/export_qdq.py OUTDIR [MODEL]   (MODEL: a torchvision classifier, default resnet18)

PyTorch's fake quantizers multiply by 1/scale where ONNX's QuantizeLinear
divides, so values at a rounding half can land a step apart: onnxruntime and
texplan both differ from PyTorch's output by a few percent on it.
"""
import os
import sys

import onnx
import torch
import torchvision.models as tvm
from onnx import numpy_helper
from torch.ao.quantization import (FakeQuantize, MovingAverageMinMaxObserver, MovingAveragePerChannelMinMaxObserver,
                                   QConfig)

out, name = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "resnet18")
torch.manual_seed(0)
m = getattr(tvm, name)()
m.train()
m.qconfig = QConfig(
    activation=FakeQuantize.with_args(observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255,
                                      dtype=torch.quint8),
    weight=FakeQuantize.with_args(observer=MovingAveragePerChannelMinMaxObserver, quant_min=-128, quant_max=127,
                                  dtype=torch.qint8, qscheme=torch.per_channel_symmetric, ch_axis=0))
torch.ao.quantization.prepare_qat(m, inplace=True)
with torch.no_grad():
    for _ in range(4):
        m(torch.randn(2, 3, 224, 224))
m.eval()
m.apply(torch.ao.quantization.disable_observer)
x = torch.randn(1, 3, 224, 224)
tag = name + "_qdq"
folder = os.path.join(out, tag)
os.makedirs(os.path.join(folder, "test_data_set_0"), exist_ok=True)
path = os.path.join(folder, tag + ".onnx")
torch.onnx.export(m, x, path, opset_version=13, input_names=["input"], output_names=["output"])
onnx.save_model(onnx.load(path), path, save_as_external_data=True, all_tensors_to_one_file=True,
                location=tag + ".onnx.data", size_threshold=0)
with torch.no_grad():
    y = m(x)
for f, t in (("input_0.pb", x), ("output_0.pb", y)):
    with open(os.path.join(folder, "test_data_set_0", f), "wb") as fh:
        fh.write(numpy_helper.from_array(t.numpy(), "input" if f.startswith("input") else "output").SerializeToString())
print(tag, os.path.getsize(path), os.path.getsize(path + ".data"))
