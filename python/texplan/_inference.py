"""texplan.InferenceSession: onnxruntime's session interface over texplan.Session."""
import os

from . import _texplan

# onnxruntime's provider names -> texplan's device specs (OpenCL on the
# CPU through PoCL, or the first OpenCL GPU).
_PROVIDER_DEVICES = {
    "CPUExecutionProvider": "pocl",
    "OpenCLExecutionProvider": "gpu",
    "CUDAExecutionProvider": "gpu",
}


def _device_of(provider):
    """A provider entry (a name, or onnxruntime's (name, options) pair) as a texplan device spec."""
    if isinstance(provider, tuple) and len(provider) == 2 and isinstance(provider[1], dict):
        provider = provider[0]
    if not isinstance(provider, str):
        raise TypeError(f"providers: give names such as 'pocl', 'gpu', 'opencl:1' or 'CPUExecutionProvider', "
                        f"got {type(provider).__name__}")
    return _PROVIDER_DEVICES.get(provider, provider)


class InferenceSession:
    """A model ready to run, called as onnxruntime.InferenceSession is.

        sess = texplan.InferenceSession("model.onnx", providers=["gpu"])
        x = np.zeros((1, 3, 224, 224), np.float32)
        [y] = sess.run(None, {sess.get_inputs()[0].name: x})

    path: an .onnx file or a model folder. providers: texplan device specs
    ('pocl', 'gpu', 'opencl:N') or onnxruntime's names (CPUExecutionProvider
    is 'pocl', CUDAExecutionProvider and OpenCLExecutionProvider are 'gpu'),
    tried in order until one opens; device= names one directly (default
    'pocl'). The other keywords are texplan.Session's: strategy, textures,
    dims, input_shapes, cache_size, and any it adds. A missing file raises
    FileNotFoundError, a bad argument ValueError or TypeError, a model
    texplan cannot run texplan.Error.
    """

    def __init__(self, path, sess_options=None, providers=None, provider_options=None, *, device=None, **options):
        """Imports, plans and prepares the model on the first of `providers` (or `device`) that opens."""
        if sess_options is not None or provider_options is not None:
            raise ValueError("texplan has no SessionOptions or provider options: give its options as keywords "
                             "(device=, strategy=, textures=, dims=, input_shapes=)")
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"InferenceSession: give the model's path (str or os.PathLike), got {type(path).__name__}")
        path = os.fspath(path)
        if device is not None and providers is not None:
            raise ValueError("InferenceSession: give device= or providers=, not both")
        if isinstance(providers, str):
            raise TypeError("providers: give a list of names, e.g. ['gpu', 'pocl']")
        candidates = [device] if device is not None else [_device_of(p) for p in (providers or ["pocl"])]
        if not candidates:
            raise ValueError("providers: an empty list; give at least one device, e.g. ['pocl']")
        error = None
        for spec in candidates:
            try:
                self._session = _texplan.Session(path, device=spec, **options)
                self._device = spec
                break
            except _texplan.Error as e:  # this device did not open (or the model failed on it): try the next
                error = e
        else:
            raise error
        self._output_names = [o.name for o in self._session.get_outputs()]

    def get_inputs(self):
        """The model's inputs as NodeArgs (name, shape, type), in the order run() takes them."""
        return self._session.get_inputs()

    def get_outputs(self):
        """The model's outputs as NodeArgs (name, shape, type), in the order run(None, ...) returns them."""
        return self._session.get_outputs()

    def get_providers(self):
        """The device the session runs on, as a one-element list (texplan's device spec)."""
        return [self._device]

    @property
    def session(self):
        """The texplan.Session underneath: plan_bytes, lower_bound_bytes, specializations, last_run_ms, ..."""
        return self._session

    def run(self, output_names, input_feed, run_options=None):
        """Runs the model; returns the outputs named in output_names (None: all) as a list, in that order.

        input_feed: {input name: numpy array}; each array must have its input's dtype (TypeError, no silent
        cast) and a shape that fits it (ValueError). run_options is accepted for onnxruntime's signature and
        must be None.
        """
        if run_options is not None:
            raise ValueError("texplan has no RunOptions: run_options must be None")
        if not isinstance(input_feed, dict):
            raise TypeError(f"run: input_feed: give a dict {{input name: numpy array}}, got {type(input_feed).__name__}")
        if output_names is None or (isinstance(output_names, (list, tuple)) and len(output_names) == 0):
            names = self._output_names
        elif isinstance(output_names, (list, tuple)) and all(isinstance(n, str) for n in output_names):
            names = list(output_names)
            for n in names:
                if n not in self._output_names:
                    raise ValueError(f"{self._session.model}: no output named '{n}' "
                                     f"(outputs: {', '.join(self._output_names)})")
        else:
            raise TypeError("run: output_names: give None or a list of output names")
        results = self._session.run(input_feed)
        return [results[n] for n in names]

    def __repr__(self):
        return f"<texplan.InferenceSession {self._session.model} on {self._session.device}>"
