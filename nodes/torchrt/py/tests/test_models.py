"""models: gatepipe's tensor names and weights in and out."""
import os
import tempfile
import unittest

import torch

from gatepipe_worker.models import Model, gatepipe_names, load_weights
from gatepipe_worker.storage import write_safetensors

SPEC = {"arch": "convnet", "channels": [4, 8], "hidden": [16]}


class ModelTest(unittest.TestCase):
    def test_names_and_shapes(self):
        m = Model(SPEC, [1, 8, 8], 3)
        names = gatepipe_names(m)
        self.assertIn("encoder.convs.0.weight", names)
        self.assertIn("head.weight", names)
        self.assertEqual(m(torch.zeros(2, 1, 8, 8)).shape, (2, 3))

    def test_weights_round_trip(self):
        torch.manual_seed(0)
        a, b = Model(SPEC, [1, 8, 8], 3), Model(SPEC, [1, 8, 8], 3)
        state = a.state_dict()
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "w.safetensors")
            write_safetensors(path, {g: state[local] for g, local in gatepipe_names(a).items()})
            load_weights(b, path)
        x = torch.randn(2, 1, 8, 8)
        self.assertTrue(torch.equal(a(x), b(x)))

    def test_missing_tensors_are_named(self):
        m = Model(SPEC, [1, 8, 8], 3)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "w.safetensors")
            write_safetensors(path, {"head.weight": torch.zeros(3, 16)})
            with self.assertRaises(SystemExit) as e:
                load_weights(m, path)
        self.assertIn("missing", str(e.exception))
        self.assertIn("encoder.convs.0.weight", str(e.exception))

    def test_unknown_arch(self):
        with self.assertRaises(SystemExit) as e:
            Model({"arch": "lstm"}, [1, 8, 8], 3)
        self.assertIn("has no 'lstm' encoder", str(e.exception))


if __name__ == "__main__":
    unittest.main()
