"""library: torchvision models by name as encoders."""
import importlib.util
import os
import tempfile
import unittest

import torch

from gatepipe_worker import library
from gatepipe_worker.models import Encoder
from gatepipe_worker.storage import write_safetensors


@unittest.skipUnless(importlib.util.find_spec("torchvision"), "torchvision is not installed")
class LibraryTest(unittest.TestCase):
    def test_resnet_features_and_map(self):
        enc = Encoder({"arch": "torchvision:resnet18"}, [3, 64, 64])
        self.assertEqual(enc.width, 512)
        self.assertEqual(enc(torch.zeros(2, 3, 64, 64)).shape, (2, 512))
        self.assertEqual(enc.spatial(torch.zeros(2, 3, 64, 64)).shape, (2, 512, 2, 2))
        self.assertEqual(enc.spatial_width(), 512)
        self.assertIn("body.conv1.weight", enc.state_dict())
        self.assertNotIn("body.fc.weight", enc.state_dict())

    def test_grey_images_rebuild_the_stem(self):
        enc = Encoder({"arch": "torchvision:resnet18"}, [1, 32, 32])
        self.assertEqual(enc.body.conv1.in_channels, 1)

    def test_vit_drops_its_head_only(self):
        enc = Encoder({"arch": "torchvision:vit_b_16"}, [3, 224, 224])
        self.assertEqual(enc.width, 768)

    def test_unknown_name(self):
        with self.assertRaises(SystemExit) as e:
            Encoder({"arch": "torchvision:resnet19"}, [3, 32, 32])
        self.assertIn("not a torchvision model", str(e.exception))

    def test_own_weights_with_the_encoder_prefix(self):
        import torchvision
        torch.manual_seed(1)
        src = torchvision.models.resnet18()
        m = library.build({"arch": "torchvision:resnet18"}, [3, 32, 32])
        logged = []
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "w.safetensors")
            write_safetensors(path, {"encoder." + k: v for k, v in src.state_dict().items() if v.dtype == torch.float32})
            library.load_own_weights(m, path, logged.append)
            self.assertTrue(torch.equal(m.conv1.weight, src.conv1.weight))
            self.assertRegex(logged[0], r"\d+ tensors loaded")
            bad = {k: v.clone() for k, v in src.state_dict().items() if v.dtype == torch.float32}
            bad["layer1.0.conv1.weight"].view(-1)[0] = float("nan")
            write_safetensors(path, bad)
            with self.assertRaises(SystemExit) as e:
                library.load_own_weights(m, path, logged.append)
        self.assertIn("layer1.0.conv1.weight holds 1 NaN", str(e.exception))


if __name__ == "__main__":
    unittest.main()
