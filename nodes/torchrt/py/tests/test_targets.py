"""Targets: masks kept in their stored type and made per batch."""
import json
import os
import struct
import tempfile
import unittest

import numpy as np
import torch

from gatepipe_worker.storage import SafeTensors
from gatepipe_worker.train import Targets


def write_raw(path, name, dtype, array):
    """A one-tensor safetensors file of array's bytes as dtype."""
    data = array.tobytes()
    head = json.dumps({name: {"dtype": dtype, "shape": list(array.shape), "data_offsets": [0, len(data)]}}).encode()
    head += b" " * (-len(head) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head + data)


class Halve:
    """A transform's mask geometry: every other pixel."""

    def masks(self, y):
        return y[:, ::2, ::2]


class TargetsTest(unittest.TestCase):
    def check(self, dtype, ndtype, classes):
        rng = np.random.default_rng(4)
        masks = rng.integers(0, classes, size=(5, 4, 6)).astype(ndtype)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "train.safetensors")
            write_raw(path, "y", dtype, masks)
            tg = Targets(SafeTensors(path), "segmentation", torch.device("cpu"))
            self.assertEqual(tg.n, 5)
            self.assertNotEqual(tg.y.dtype, torch.int64, "the masks were widened whole")
            idx = torch.tensor([3, 0])
            got = tg.labels(idx)
            self.assertEqual(got.dtype, torch.int64)
            self.assertTrue(torch.equal(got, torch.from_numpy(masks[[3, 0]].astype(np.int64))))
            tg = Targets(SafeTensors(path), "segmentation", torch.device("cpu"), Halve())
            self.assertEqual(tuple(tg.labels(idx).shape), (2, 2, 3))

    def test_uint8_masks(self):
        self.check("U8", np.uint8, 151)

    def test_uint16_masks(self):
        self.check("U16", np.uint16, 1000)


if __name__ == "__main__":
    unittest.main()
