"""texplan: run neural networks on OpenCL GPUs in the least device memory.

    import numpy as np, texplan

    report = texplan.plan("examples/models/tiny_cnn", strategy="all")
    report["lower_bound_bytes"], [(s["name"], s["total_bytes"]) for s in report["strategies"]]

    s = texplan.Session("examples/models/tiny_cnn", device="pocl")
    x = np.zeros(s.inputs[0]["shape"], np.float32)
    y = s.run({s.inputs[0]["name"]: x})          # {output name: numpy array}
    s.activation_bytes, s.lower_bound_bytes

onnxruntime's interface, outputs as a list in output order:

    sess = texplan.InferenceSession("examples/models/tiny_cnn", providers=["pocl"])
    [y] = sess.run(None, {sess.get_inputs()[0].name: x})

plan() returns the JSON report of `texplan plan --json` as a dict (see
docs/plan-json.md); with one strategy its numbers (total_bytes, ratio,
valid, ...) are also at the top level. A bad argument raises ValueError
(TypeError for a wrong type: an input array of another dtype than the
model's, which is never cast), a missing file FileNotFoundError, every other
failure texplan.Error (a RuntimeError); each with a one-line message naming
the model, node or tensor.
"""
from ._texplan import Error, NodeArg, Session, __version__, devices, load_tensor, plan, save_tensor, timeline
from ._inference import InferenceSession

__all__ = ["Error", "InferenceSession", "NodeArg", "Session", "devices", "load_tensor", "plan", "save_tensor",
           "timeline", "__version__"]
