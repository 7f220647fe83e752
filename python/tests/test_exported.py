"""Models as PyTorch 2.11 exports them (tests/fixtures/exported): a symbolic
batch left open is specialized once per input shape, from one Session."""
import os
import unittest

import numpy as np

import texplan

SOURCE = os.environ.get("TEXPLAN_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
MLP = os.path.join(SOURCE, "tests", "fixtures", "exported", "mlp_gelu_ln_dynamo_dynbatch")


def rel_error(a, b):
    return float(np.abs(a - b).max() / np.abs(b).max())


class SymbolicBatch(unittest.TestCase):
    def data(self, k):
        d = os.path.join(MLP, "test_data_set_%d" % k)
        return texplan.load_tensor(os.path.join(d, "input_0.pb")), texplan.load_tensor(os.path.join(d, "output_0.pb"))

    def test_batch_1_3_1_from_one_session_plans_twice(self):
        s = texplan.Session(MLP)
        self.assertEqual(s.inputs[0]["shape"], (None, 8, 32))
        self.assertEqual(s.compilations, 0)
        for k in (0, 1, 0):
            x, y = self.data(k)
            out = s.run({"x": x})
            got = next(iter(out.values()))
            self.assertEqual(got.shape, y.shape)
            self.assertLess(rel_error(got, y), 1e-4)
        self.assertEqual(s.compilations, 2)
        sp = s.specializations
        self.assertEqual([x["input_shapes"] for x in sp], [[(1, 8, 32)], [(3, 8, 32)]])
        self.assertEqual(sp[0]["runs"], 2)
        self.assertEqual(sp[1]["plan_bytes"], 3 * sp[0]["plan_bytes"])
        self.assertEqual(s.outputs[0]["shape"], (1, 8, 32))

    def test_dims_fix_the_batch_for_every_run(self):
        s = texplan.Session(MLP, dims={"batch": 3})
        self.assertEqual(s.compilations, 1)  # compiled up front: nothing is open
        x, y = self.data(1)
        self.assertLess(rel_error(next(iter(s.run([x]).values())), y), 1e-4)
        x1, _ = self.data(0)
        with self.assertRaises(ValueError) as e:  # refused before the run: dims= fixed the batch
            s.run([x1])
        self.assertIn("expected shape 3x8x32, got 1x8x32", str(e.exception))
        with self.assertRaises(texplan.Error) as e:
            texplan.Session(MLP, dims={"bach": 3})
        self.assertIn("(it has: batch)", str(e.exception))
        with self.assertRaises(ValueError):
            texplan.Session(MLP, cache_size=0)


if __name__ == "__main__":
    unittest.main()
