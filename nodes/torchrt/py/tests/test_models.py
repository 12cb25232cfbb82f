"""models: gatepipe's tensor names and weights in and out."""
import copy
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

    def test_every_arch_takes_channels_last_input(self):
        # On the CPU and on GPUs convolutional encoders run channels last
        # (weights and inputs), and a JPEG store's batches come so for any
        # encoder (storage.Inputs.make): every architecture gives what it gives for
        # the contiguous input, forwards and backwards, with dense heads'
        # spatial features too.
        specs = [{"arch": "convnet", "channels": [4, 8]},
                 {"arch": "resnet", "channels": [4, 8], "blocks": [1, 1]},
                 {"arch": "resnet", "channels": [4, 8], "blocks": [1, 1], "stem": "imagenet", "block": "bottleneck"},
                 {"arch": "convnext", "channels": [8, 16], "blocks": [1, 1], "version": 2},
                 {"arch": "vit", "dim": 16, "heads": 2, "depth": 1, "patch": 4},
                 {"arch": "vit", "dim": 16, "heads": 2, "depth": 1, "patch": 4, "pool": "avg", "no_class_token": True}]
        x = torch.randn(3, 3, 16, 16)
        xl = x.contiguous(memory_format=torch.channels_last)
        self.assertFalse(xl.is_contiguous())
        for spec in specs:
            with self.subTest(spec=spec):
                torch.manual_seed(1)
                m = Model(dict(spec, hidden=[8]), [3, 16, 16], 5)
                # As the jobs run a convolutional encoder: its weights too.
                ml = copy.deepcopy(m).to(memory_format=torch.channels_last)
                a, b = m(x), ml(xl)
                torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
                ga = torch.autograd.grad(a.square().sum(), list(m.parameters()))
                gb = torch.autograd.grad(b.square().sum(), list(ml.parameters()))
                for u, v in zip(ga, gb):
                    torch.testing.assert_close(u, v, rtol=1e-4, atol=1e-5)
                torch.testing.assert_close(m.encoder.spatial(x), ml.encoder.spatial(xl), rtol=1e-5, atol=1e-5)


if __name__ == "__main__":
    unittest.main()
