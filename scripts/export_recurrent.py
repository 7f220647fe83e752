#!/usr/bin/python3
"""Sequence models built on torch.nn's LSTM and GRU, exported by Debian's
torch (TorchScript exporter, opset 14), each as ONNX's LSTM/GRU operator
with constant weights: random weights, seed 0, in the zoo's layout
(NAME/NAME.onnx, NAME.onnx.data, test_data_set_0 with PyTorch's own output).

  speech_lstm  40 features x 100 frames, 2 bidirectional LSTM layers of 256, a linear head (a CTC acoustic model)
  crnn         a 32x128 text line: 4 conv blocks, a 2-layer bidirectional LSTM of 128 over 32 columns (OCR)
  gru_tagger   batch-first GRU of 2 layers, 192 wide, over 64 steps of 128 features, 4 sequences

usage: /usr/bin/python3 scripts/export_recurrent.py [--eager-cuda] OUTDIR [NAME ...]
  --eager-cuda: also time each model in PyTorch eager on the GPU (median of 50 runs after 10, ms),
                the peer on the GPU machine, whose own PyTorch exports there
"""
import statistics
import time
import os
import sys

import onnx
import torch
from onnx import numpy_helper
from torch import nn


class SpeechLstm(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(40, 256, num_layers=2, bidirectional=True)
        self.head = nn.Linear(512, 29)

    def forward(self, x):  # [T, B, 40]
        y, _ = self.rnn(x)
        return self.head(y).log_softmax(-1)


class Crnn(nn.Module):
    def __init__(self):
        super().__init__()

        def block(i, o, pool):
            return [nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU(), nn.MaxPool2d(pool)]

        self.cnn = nn.Sequential(*block(1, 32, 2), *block(32, 64, 2), *block(64, 128, (2, 1)), *block(128, 128, (4, 1)))
        self.rnn = nn.LSTM(128, 128, num_layers=2, bidirectional=True)
        self.head = nn.Linear(256, 37)

    def forward(self, x):  # [B, 1, 32, 128]
        f = self.cnn(x).squeeze(2).permute(2, 0, 1)  # [W, B, C]
        y, _ = self.rnn(f)
        return self.head(y)


class GruTagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(128, 192, num_layers=2, batch_first=True)
        self.head = nn.Linear(192, 17)

    def forward(self, x):  # [B, T, 128]
        y, h = self.rnn(x)
        return self.head(y), h


MODELS = {
    "speech_lstm": (SpeechLstm, (100, 1, 40)),
    "crnn": (Crnn, (1, 1, 32, 128)),
    "gru_tagger": (GruTagger, (4, 64, 128)),
}


def eager_cuda_ms(m, x):
    m, x = m.cuda(), x.cuda()
    times = []
    with torch.no_grad():
        for k in range(60):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            m(x)
            torch.cuda.synchronize()
            if k >= 10:
                times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def export(out, name, eager_cuda=False):
    torch.manual_seed(0)
    cls, shape = MODELS[name]
    m = cls().eval()
    x = torch.randn(*shape)
    folder = os.path.join(out, name)
    os.makedirs(os.path.join(folder, "test_data_set_0"), exist_ok=True)
    path = os.path.join(folder, name + ".onnx")
    with torch.no_grad():
        ys = m(x)
    ys = ys if isinstance(ys, tuple) else (ys,)
    outputs = ["output"] if len(ys) == 1 else [f"output_{k}" for k in range(len(ys))]
    torch.onnx.export(m, x, path, opset_version=14, input_names=["input"], output_names=outputs)
    onnx.save_model(onnx.load(path), path, save_as_external_data=True, all_tensors_to_one_file=True,
                    location=name + ".onnx.data", size_threshold=0)
    with open(os.path.join(folder, "test_data_set_0", "input_0.pb"), "wb") as fh:
        fh.write(numpy_helper.from_array(x.numpy(), "input").SerializeToString())
    for k, y in enumerate(ys):
        with open(os.path.join(folder, "test_data_set_0", f"output_{k}.pb"), "wb") as fh:
            fh.write(numpy_helper.from_array(y.numpy(), outputs[k]).SerializeToString())
    ops = sorted({n.op_type for n in onnx.load(path, load_external_data=False).graph.node})
    print(name, os.path.getsize(path + ".data"), "bytes of weights;", " ".join(ops))
    if eager_cuda:
        print(name, "eager cuda ms %.3f" % eager_cuda_ms(m, x))


if __name__ == "__main__":
    args = sys.argv[1:]
    eager = "--eager-cuda" in args
    args = [a for a in args if a != "--eager-cuda"]
    for n in args[1:] or list(MODELS):
        export(args[0], n, eager)
