"""precision='fp16' (docs/precision.md): float tensors stored as IEEE half,
plans of half the bytes, outputs within 1e-2 of the fp32 reference."""
import os
import unittest

import numpy as np

import texplan

SOURCE = os.environ.get("TEXPLAN_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
TINY = os.path.join(SOURCE, "examples", "models", "tiny_cnn")


class HalfStorage(unittest.TestCase):
    def test_plan_halves(self):
        fp32 = texplan.plan(TINY, tensors=False)
        fp16 = texplan.plan(TINY, tensors=False, precision="fp16")
        self.assertEqual(fp16["precision"], "fp16")
        self.assertLessEqual(fp16["total_bytes"], 0.51 * fp32["total_bytes"])

    def test_session_runs_within_tolerance(self):
        x = texplan.load_tensor(os.path.join(TINY, "test_data_set_0", "input_0.pb"))
        y = texplan.load_tensor(os.path.join(TINY, "test_data_set_0", "output_0.pb"))
        half = texplan.Session(TINY, precision="fp16")
        full = texplan.Session(TINY)
        out = next(iter(half.run([x]).values()))
        self.assertEqual(out.dtype, np.float32)  # outputs stay fp32 to the caller
        self.assertLessEqual(float(np.abs(out - y).max() / np.abs(y).max()), 1e-2)
        full.run([x])
        self.assertLessEqual(half.plan_bytes, 0.51 * full.plan_bytes)

    def test_unknown_precision_is_a_value_error(self):
        with self.assertRaises(ValueError):
            texplan.Session(TINY, precision="fp8")


if __name__ == "__main__":
    unittest.main()
