#!/usr/bin/env python3
"""THERE (onnxruntime's Python package): a model folder quantized the way
deployments usually quantize, onnxruntime's quantize_static in QDQ form
(uint8 activations per tensor, int8 weights per output channel), calibrated
on the folder's input and a few random ones; the output is a model folder
whose expected output is onnxruntime's own on the quantized model.

  python3 scripts/device/quantize_ort.py MODEL_DIR OUT_DIR
"""
import glob
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper
import onnxruntime as ort
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat,
                                      QuantType, quantize_static)


def main():
    src, out = sys.argv[1], sys.argv[2]
    name = os.path.basename(os.path.normpath(src))
    model_path = os.path.join(src, name + ".onnx")
    x = numpy_helper.to_array(onnx.load_tensor(os.path.join(src, "test_data_set_0", "input_0.pb")))
    input_name = onnx.load(model_path, load_external_data=False).graph.input[0].name
    rng = np.random.default_rng(0)
    samples = [x] + [rng.standard_normal(x.shape).astype(np.float32) for _ in range(4)]

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter(samples)

        def get_next(self):
            s = next(self.it, None)
            return None if s is None else {input_name: s}

    qname = name + "_ortqdq"
    qdir = os.path.join(out, qname)
    os.makedirs(os.path.join(qdir, "test_data_set_0"), exist_ok=True)
    qpath = os.path.join(qdir, qname + ".onnx")
    quantize_static(model_path, qpath, Reader(), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                    per_channel=True)
    sess = ort.InferenceSession(qpath, providers=["CPUExecutionProvider"])
    y = sess.run(None, {input_name: x})[0]
    with open(os.path.join(qdir, "test_data_set_0", "input_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(x, "input_0").SerializeToString())
    with open(os.path.join(qdir, "test_data_set_0", "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(y, "output_0").SerializeToString())
    ops = {}
    for n in onnx.load(qpath).graph.node:
        ops[n.op_type] = ops.get(n.op_type, 0) + 1
    print(qname, "ops:", " ".join(f"{k}:{v}" for k, v in sorted(ops.items())))


if __name__ == "__main__":
    main()
