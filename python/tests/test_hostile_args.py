"""Bad arguments raise the Python exception that says what is wrong (issue 26):
ValueError/TypeError for arguments, FileNotFoundError for missing files,
texplan.Error for the rest; never a crash. A timeline report whose tensor
claims first > last (once a heap overflow) is refused before drawing."""
import copy
import os
import tempfile
import unittest

import numpy as np

import texplan

SOURCE = os.environ.get("TEXPLAN_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
TINY = os.path.join(SOURCE, "examples", "models", "tiny_cnn")


class HostileArguments(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.report = texplan.plan(TINY)

    def test_missing_files(self):
        with self.assertRaises(FileNotFoundError):
            texplan.plan("/no/such/model.onnx")
        with self.assertRaises(FileNotFoundError):
            texplan.load_tensor("/no/such/tensor.pb")
        with self.assertRaises(FileNotFoundError):
            texplan.Session("/no/such/model.onnx")

    def test_bad_argument_values(self):
        with self.assertRaises(ValueError):
            texplan.plan(TINY, strategy="no-such-strategy")
        with self.assertRaises(ValueError):
            texplan.plan(TINY, textures="sideways")
        with self.assertRaises(ValueError):
            texplan.timeline(self.report, "/tmp/picture.png")
        with self.assertRaises(TypeError):
            texplan.timeline([1, 2], "/tmp/picture.svg")
        with self.assertRaises(TypeError):
            texplan.save_tensor(np.zeros(2, dtype=np.complex64), "t", "/tmp/t.pb")

    def test_not_a_regular_file(self):
        with self.assertRaises(texplan.Error):
            texplan.load_tensor("/dev/zero")

    def test_save_to_a_full_device(self):
        with self.assertRaises(texplan.Error) as e:
            texplan.save_tensor(np.zeros(4, dtype=np.float32), "t", "/dev/full")
        self.assertIn("No space left on device", str(e.exception))

    def test_timeline_refuses_hostile_records(self):
        t0 = self.report["strategies"][0]["tensors"][0]
        cases = {
            "first > last": {"first": t0["last"] + 1000000},
            "negative first": {"first": -5},
            "huge last": {"last": 2**62},
            "negative bytes": {"bytes": -1},
            "unknown pool": {"pool": 99},
            "offset beyond the pool": {"offset": 2**40},
            "wrong type": {"first": "zero"},
        }
        with tempfile.TemporaryDirectory() as d:
            for why, change in cases.items():
                r = copy.deepcopy(self.report)
                r["strategies"][0]["tensors"][0].update(change)
                with self.subTest(why), self.assertRaises(ValueError):
                    texplan.timeline(r, os.path.join(d, "t.svg"))
            self.assertEqual(os.listdir(d), [])
            texplan.timeline(self.report, os.path.join(d, "t.svg"))  # the report as made is drawn
            self.assertEqual(os.listdir(d), ["t.svg"])

    def test_session_inputs(self):
        s = texplan.Session(TINY, device="pocl")
        with self.assertRaises(ValueError):
            s.run({"no_such_input": np.zeros(1, dtype=np.float32)})
        with self.assertRaises(TypeError):
            s.run(42)
        with self.assertRaises(ValueError):
            s.run([])


if __name__ == "__main__":
    unittest.main()
