#!/usr/bin/python3
"""Writes examples/models/tiny_cnn: a small CNN with the operators real models
use (Conv+BN+ReLU, depthwise, residual Add, Concat, pooling, Gemm), random
weights from a fixed seed, in the ONNX model-zoo layout, so `make demo` and
the tests work without ../shared. Needs python3-torch and python3-onnx."""
import os, sys, torch, torch.nn as nn, onnx
from onnx import numpy_helper

class TinyCNN(nn.Module):
    def __init__(s):
        super().__init__()
        s.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.ReLU())
        s.dw = nn.Sequential(nn.Conv2d(16, 16, 3, 1, 1, groups=16), nn.ReLU6(), nn.Conv2d(16, 16, 1))
        s.a, s.b = nn.Conv2d(16, 8, 1), nn.Conv2d(16, 8, 3, padding=1)
        s.pool, s.fc = nn.MaxPool2d(2), nn.Linear(16, 10)
    def forward(s, x):
        x = s.stem(x)
        x = x + s.dw(x)
        x = torch.cat([torch.sigmoid(s.a(x)), torch.relu(s.b(x))], 1)
        x = s.pool(x).mean((2, 3))
        return torch.softmax(s.fc(x), 1)

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "models", "tiny_cnn")
os.makedirs(os.path.join(out, "test_data_set_0"), exist_ok=True)
torch.manual_seed(0)
m = TinyCNN().eval()
for p in m.modules():
    if isinstance(p, nn.BatchNorm2d):
        p.running_mean.uniform_(-0.5, 0.5); p.running_var.uniform_(0.5, 1.5)
x = torch.randn(1, 3, 32, 32)
path = os.path.join(out, "tiny_cnn.onnx")
torch.onnx.export(m, x, path, opset_version=13, input_names=["input"], output_names=["output"])
mp = onnx.load(path)
onnx.save_model(mp, path, save_as_external_data=True, all_tensors_to_one_file=True,
                location="tiny_cnn.onnx.data", size_threshold=0)
with torch.no_grad(): y = m(x)
for name, t in (("input_0", x), ("output_0", y)):
    pb = numpy_helper.from_array(t.numpy(), name.split("_")[0])
    open(os.path.join(out, "test_data_set_0", name + ".pb"), "wb").write(pb.SerializeToString())
