"""The Python module as a user sees it: plan a model, run it, numpy in and out.

Runs in `make test` (CTest test python_texplan) with Debian's python3 and
PYTHONPATH=build/python.
"""
import gc
import json
import os
import tempfile
import threading
import unittest

import numpy as np

import texplan

SOURCE = os.environ.get("TEXPLAN_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
TINY = os.path.join(SOURCE, "examples", "models", "tiny_cnn")
DATA = os.path.join(TINY, "test_data_set_0")


class Plan(unittest.TestCase):
    def test_best_reaches_the_lower_bound_of_tiny_cnn(self):
        r = texplan.plan(TINY)
        self.assertEqual(r["model"], "tiny_cnn")
        self.assertEqual(r["strategy"], "best")
        self.assertEqual(r["lower_bound_bytes"], 32768)  # optimized: fused, in place
        self.assertEqual(r["total_bytes"], r["lower_bound_bytes"])
        self.assertTrue(r["valid"])
        self.assertEqual(len(r["strategies"]), 1)
        self.assertEqual(len(r["strategies"][0]["tensors"]), r["records"])

    def test_all_strategies_and_their_numbers(self):
        # pools: views would keep tiny_cnn in buffers (its in-place nodes lower the peak)
        r = texplan.plan(TINY, strategy="all", target="adreno", textures="pools", tensors=False)
        names = [s["name"] for s in r["strategies"]]
        for n in ["naive", "tvm-tokens", "greedy-by-size", "greedy-by-breadth", "best", "texture-views"]:
            self.assertIn(n, names)
        self.assertGreater(r["texture_records"], 0)
        for s in r["strategies"]:
            self.assertTrue(s["valid"], s)
            self.assertGreaterEqual(s["total_bytes"], r["lower_bound_bytes"])
            self.assertNotIn("tensors", s)
        self.assertNotIn("total_bytes", r)  # no single plan to lift to the top
        naive = next(s for s in r["strategies"] if s["name"] == "naive")
        self.assertEqual(r["naive_bytes"], naive["total_bytes"])

    def test_report_matches_the_cli_json(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "p.json")
            cli = os.path.join(os.environ["PYTHONPATH"].split(os.pathsep)[0], "..", "texplan")
            if not os.path.exists(cli):
                self.skipTest("no CLI beside the module")
            self.assertEqual(os.system(f"{cli} -q plan {TINY} --strategy best --json {out}"), 0)
            with open(out) as f:
                j = json.load(f)
        r = texplan.plan(TINY)
        self.assertEqual(r["strategies"][0]["tensors"], j["strategies"][0]["tensors"])
        self.assertEqual(r["strategies"][0]["pools"], j["strategies"][0]["pools"])

    def test_timeline_from_python(self):
        with tempfile.TemporaryDirectory() as d:
            svg = os.path.join(d, "t.svg")
            r = texplan.plan(TINY, strategy="all")
            texplan.timeline(r, svg)
            with open(svg) as f:
                text = f.read()
        self.assertTrue(text.startswith("<svg"))
        drawn = [s for s in r["strategies"] if "tensors" in s]
        self.assertGreaterEqual(len(drawn), 6)
        self.assertEqual(text.count('<rect class="tensor"'), len(drawn) * r["records"])

    def test_errors_name_the_problem(self):
        with self.assertRaises(FileNotFoundError) as e:
            texplan.plan("/nonexistent/model.onnx")
        self.assertIn("/nonexistent/model.onnx", str(e.exception))
        with self.assertRaises(ValueError):
            texplan.plan(TINY, strategy="no-such-strategy")
        with self.assertRaises(ValueError):
            texplan.plan(TINY, textures="sometimes")
        self.assertTrue(issubclass(texplan.Error, RuntimeError))


class Run(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.s = texplan.Session(TINY, device="pocl")
        cls.x = texplan.load_tensor(os.path.join(DATA, "input_0.pb"))
        cls.ref = texplan.load_tensor(os.path.join(DATA, "output_0.pb"))

    def test_session_describes_the_model(self):
        s = self.s
        self.assertEqual(s.model, "tiny_cnn")
        self.assertEqual(s.inputs, [{"name": "input", "shape": (1, 3, 32, 32), "dtype": np.dtype("float32")}])
        self.assertEqual(s.outputs[0]["name"], "output")
        self.assertEqual(s.outputs[0]["shape"], (1, 10))
        self.assertEqual(s.lower_bound_bytes, 32768)  # optimized: fused, in place
        self.assertEqual(s.activation_bytes, s.plan_bytes)
        self.assertGreater(s.weight_bytes, 0)
        self.assertEqual(s.fallback_nodes, [])
        self.assertIn("tiny_cnn", repr(s))

    def test_run_matches_pytorch(self):
        y = self.s.run({"input": self.x})
        self.assertEqual(list(y), ["output"])
        out = y["output"]
        self.assertEqual(out.dtype, np.float32)
        self.assertEqual(out.shape, (1, 10))
        rel = np.linalg.norm(out - self.ref) / np.linalg.norm(self.ref)
        self.assertLess(rel, 1e-4)
        self.assertGreaterEqual(self.s.last_run_ms, 0.0)

    def test_list_inputs_strict_dtypes_and_non_contiguous_arrays(self):
        y1 = self.s.run([self.x])["output"]
        # Fortran order: made contiguous on the way in.
        y2 = self.s.run({"input": np.asfortranarray(self.x)})["output"]
        np.testing.assert_allclose(y1, y2, rtol=1e-6, atol=1e-7)
        # Another dtype is never cast silently.
        with self.assertRaises(TypeError) as e:
            self.s.run({"input": self.x.astype(np.float64)})
        self.assertIn("input 'input': expected dtype float32, got float64", str(e.exception))
        # A strided view.
        big = np.zeros((1, 3, 32, 64), np.float32)
        big[..., ::2] = self.x
        y3 = self.s.run({"input": big[..., ::2]})["output"]
        np.testing.assert_allclose(y1, y3, rtol=1e-6, atol=1e-7)

    def test_outputs_own_their_memory(self):
        out = self.s.run({"input": self.x})["output"]
        again = self.s.run({"input": self.x * 0})["output"]
        gc.collect()
        self.assertFalse(np.array_equal(out, again))  # the first result was not overwritten
        out[0, 0] = 42.0  # writable
        self.assertEqual(out[0, 0], 42.0)

    def test_bad_inputs_raise(self):
        with self.assertRaises(ValueError) as e:
            self.s.run({"image": self.x})
        self.assertIn("no input named 'image'", str(e.exception))
        with self.assertRaises(ValueError):
            self.s.run({})
        with self.assertRaises(ValueError) as e:
            self.s.run({"input": np.zeros((1, 3, 16, 16), np.float32)})
        self.assertIn("expected shape 1x3x32x32, got 1x3x16x16", str(e.exception))
        with self.assertRaises(ValueError):
            self.s.run([self.x, self.x])

    def test_threads_share_the_device_safely(self):
        results, errors = [], []

        def work():
            try:
                results.append(self.s.run({"input": self.x})["output"])
            except Exception as e:  # noqa: BLE001
                errors.append(e)

        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        for r in results:
            np.testing.assert_array_equal(r, results[0])

    def test_tensor_files_round_trip(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "t.pb")
            a = np.arange(12, dtype=np.int64).reshape(3, 4)
            texplan.save_tensor(a, "a", p)
            b = texplan.load_tensor(p)
        self.assertEqual(b.dtype, np.int64)
        np.testing.assert_array_equal(a, b)


class Devices(unittest.TestCase):
    def test_pocl_is_listed_with_a_profile(self):
        ds = texplan.devices()
        self.assertTrue(any("image_support" in json.dumps(d["profile"]) for d in ds))
        self.assertTrue(all(d["spec"].startswith("opencl:") for d in ds))


if __name__ == "__main__":
    unittest.main()
