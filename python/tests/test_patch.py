"""Patch-based execution from Python (docs/patching.md): plan(patch=...) and
Session(patch=...) as `texplan plan/run --patch` do it.

Runs in `make test` (CTest test python_texplan) with PYTHONPATH=build/python.
"""
import os
import unittest

import numpy as np

import texplan

SOURCE = os.environ.get("TEXPLAN_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
TINY = os.path.join(SOURCE, "examples", "models", "tiny_cnn")
DATA = os.path.join(TINY, "test_data_set_0")


class Patch(unittest.TestCase):
    def test_plan_reports_both_bounds(self):
        r = texplan.plan(TINY, patch="auto", tensors=False)
        p = r["patching"]
        self.assertTrue(p["applied"])
        self.assertEqual(p["bound_with_bytes"], r["lower_bound_bytes"])
        self.assertLess(p["bound_with_bytes"], p["bound_without_bytes"])
        self.assertGreater(p["extra_flops_pct"], 0)
        self.assertEqual(texplan.plan(TINY, tensors=False)["patching"]["applied"], False)

    def test_patched_session_matches_the_reference(self):
        x = texplan.load_tensor(os.path.join(DATA, "input_0.pb"))
        want = texplan.load_tensor(os.path.join(DATA, "output_0.pb"))
        s = texplan.Session(TINY, device="pocl", patch="3x3")
        (got,) = s.run([x]).values()
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)

    def test_bad_settings_are_value_errors(self):
        for bad in ("0x3", "on", "4"):
            with self.assertRaises(ValueError):
                texplan.plan(TINY, patch=bad)
            with self.assertRaises(ValueError):
                texplan.Session(TINY, patch=bad)


if __name__ == "__main__":
    unittest.main()
