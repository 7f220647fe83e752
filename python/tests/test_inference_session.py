"""texplan.InferenceSession as onnxruntime's is called: run(None, feeds) gives
a list in output order, with each test_data_set's output shapes and values;
inputs of another dtype raise TypeError, of another shape ValueError; every
function and property has a docstring and the shipped stubs name them all."""
import ast
import glob
import inspect
import os
import unittest

import numpy as np

import texplan

SOURCE = os.environ.get("TEXPLAN_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
MODELS = os.environ.get("TEXPLAN_MODELS_DIR", os.path.join(SOURCE, "..", "shared", "models"))
TINY = os.path.join(SOURCE, "examples", "models", "tiny_cnn")
MLP = os.path.join(SOURCE, "tests", "fixtures", "exported", "mlp_gelu_ln_dynamo_dynbatch")


def test_data(model_dir, k=0):
    """(inputs, outputs) of test_data_set_k as lists of arrays, in file order."""
    d = os.path.join(model_dir, "test_data_set_%d" % k)
    load = lambda prefix: [texplan.load_tensor(p) for p in sorted(glob.glob(os.path.join(d, prefix + "_*.pb")))]
    return load("input"), load("output")


def check_like_onnxruntime(case, model_dir):
    sess = texplan.InferenceSession(model_dir, providers=["CPUExecutionProvider"])
    inputs, expected = test_data(model_dir)
    feeds = {arg.name: x for arg, x in zip(sess.get_inputs(), inputs)}
    got = sess.run(None, feeds)
    case.assertIsInstance(got, list)
    case.assertEqual(len(got), len(sess.get_outputs()))
    case.assertEqual(len(got), len(expected))
    for arg, y, ref in zip(sess.get_outputs(), got, expected):
        case.assertIsInstance(y, np.ndarray)
        case.assertEqual(y.shape, ref.shape, arg.name)
        case.assertEqual(y.dtype, ref.dtype, arg.name)
        case.assertLess(float(np.abs(y - ref).max()), 1e-4, arg.name)
    [first] = sess.run([sess.get_outputs()[0].name], feeds)  # named outputs: in the order asked
    np.testing.assert_array_equal(first, got[0])
    return sess, feeds


class LikeOnnxruntime(unittest.TestCase):
    def test_tiny_cnn(self):
        sess, feeds = check_like_onnxruntime(self, TINY)
        [arg] = sess.get_inputs()
        self.assertEqual((arg.name, arg.shape, arg.type), ("input", [1, 3, 32, 32], "tensor(float)"))
        self.assertEqual(arg.dtype, np.float32)
        self.assertEqual(sess.get_outputs()[0].type, "tensor(float)")
        self.assertEqual(sess.get_providers(), ["pocl"])
        self.assertEqual(sess.session.plan_bytes, 32768)
        self.assertIn("NodeArg(name='input'", repr(arg))

    def test_squeezenet_from_the_zoo(self):
        model = os.path.join(MODELS, "squeezenet1_1")
        if not os.path.isdir(model):
            self.skipTest(f"no model zoo at {MODELS}")
        check_like_onnxruntime(self, model)

    def test_symbolic_dimensions_are_named(self):
        sess = texplan.InferenceSession(MLP)
        self.assertEqual(sess.get_inputs()[0].shape, ["batch", 8, 32])
        self.assertEqual(texplan.InferenceSession(MLP, dims={"batch": 3}).get_inputs()[0].shape, [3, 8, 32])
        x, = test_data(MLP, 1)[0]
        [y] = sess.run(None, {"x": x})
        self.assertEqual(y.shape[0], x.shape[0])


class Refusals(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.sess = texplan.InferenceSession(TINY)
        cls.x = test_data(TINY)[0][0]

    def test_wrong_dtype_raises_type_error_naming_the_input(self):
        for dtype in (np.float64, np.float16, np.int64):
            with self.subTest(dtype=dtype), self.assertRaises(TypeError) as e:
                self.sess.run(None, {"input": self.x.astype(dtype)})
            self.assertIn("input 'input': expected dtype float32, got " + np.dtype(dtype).name, str(e.exception))

    def test_wrong_shape_raises_value_error(self):
        for shape in [(1, 3, 16, 16), (3, 32, 32), (2, 3, 32, 32)]:
            with self.subTest(shape=shape), self.assertRaises(ValueError) as e:
                self.sess.run(None, {"input": np.zeros(shape, np.float32)})
            self.assertIn("expected shape 1x3x32x32", str(e.exception))

    def test_bad_calls(self):
        with self.assertRaises(ValueError):
            self.sess.run(["no_such_output"], {"input": self.x})
        with self.assertRaises(TypeError):
            self.sess.run("output", {"input": self.x})  # a name, not a list
        with self.assertRaises(TypeError):
            self.sess.run(None, [self.x])  # onnxruntime takes a dict
        with self.assertRaises(ValueError):
            self.sess.run(None, {"image": self.x})
        with self.assertRaises(TypeError) as e:  # onnxruntime's call on the dict API: a short message
            self.sess.session.run(None, {"input": self.x})
        self.assertIn("InferenceSession", str(e.exception))
        self.assertLess(len(str(e.exception)), 300)

    def test_files_and_models(self):
        with self.assertRaises(FileNotFoundError):
            texplan.InferenceSession("/no/such/model.onnx")
        with open(os.path.join(TINY, "tiny_cnn.onnx.data"), "rb") as f:
            not_a_model = f.read(4096)
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            bad = os.path.join(d, "bad.onnx")
            with open(bad, "wb") as f:
                f.write(not_a_model)
            with self.assertRaises(texplan.Error):
                texplan.InferenceSession(bad)
        with self.assertRaises(ValueError):
            texplan.InferenceSession(TINY, device="pocl", providers=["pocl"])
        with self.assertRaises(TypeError):
            texplan.InferenceSession(TINY, providers="pocl")
        with self.assertRaises(texplan.Error):
            texplan.InferenceSession(TINY, providers=["opencl:99"])


class Documented(unittest.TestCase):
    def test_docs_python_sessions_print_what_they_show(self):
        import doctest
        cwd = os.getcwd()
        os.chdir(SOURCE)  # their paths are relative to the repository
        try:
            for doc, least in (("python.md", 5), ("exporters.md", 5)):
                r = doctest.testfile(os.path.join(SOURCE, "docs", doc), module_relative=False,
                                     optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
                self.assertGreaterEqual(r.attempted, least, doc)
                self.assertEqual(r.failed, 0, doc)
        finally:
            os.chdir(cwd)

    def test_every_function_and_property_has_a_docstring(self):
        missing = []
        for name in texplan.__all__:
            obj = getattr(texplan, name)
            if not (inspect.isclass(obj) or callable(obj)):
                continue
            if not (obj.__doc__ or "").strip():
                missing.append(name)
            if inspect.isclass(obj):
                for attr, member in vars(obj).items():
                    if attr.startswith("_") and attr != "__init__":
                        continue
                    if isinstance(member, property) or callable(member):
                        if not (getattr(member, "__doc__", None) or "").strip():
                            missing.append(f"{name}.{attr}")
        self.assertEqual(missing, [])

    def test_stubs_name_everything_public(self):
        pkg = os.path.dirname(texplan.__file__)
        self.assertTrue(os.path.exists(os.path.join(pkg, "py.typed")))
        stubbed = {}
        for stub in ("_texplan.pyi", "_inference.pyi"):
            with open(os.path.join(pkg, stub)) as f:
                tree = ast.parse(f.read())
            for node in tree.body:
                if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                    stubbed[node.name] = {n.name for n in node.body if isinstance(n, ast.FunctionDef)} \
                        if isinstance(node, ast.ClassDef) else set()
                elif isinstance(node, ast.AnnAssign):
                    stubbed[node.target.id] = set()
        for name in texplan.__all__:
            self.assertIn(name, stubbed, f"{name} has no stub")
            obj = getattr(texplan, name)
            if inspect.isclass(obj):
                public = {a for a in vars(obj) if not a.startswith("_")}
                self.assertEqual(public - stubbed[name], set(), f"{name}: members without a stub")
                self.assertEqual(stubbed[name] - public - {"__init__"}, set(), f"{name}: stubs of nothing")


if __name__ == "__main__":
    unittest.main()
