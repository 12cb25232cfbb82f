"""Inputs.pixels and Inputs.normalized: a batch's 8-bit pixels back from
the encoder's input (where the training augmentations work) and the
input again, for images and clips, with and without an evaluation
transform, normalised or not (D7)."""
import unittest

import torch

from gatepipe_worker.storage import Inputs


def store(shape, scale=1 / 255, channels=3):
    class S:
        meta = {"normalize": {"scale": scale, "mean": [0.485, 0.456, 0.406] if channels == 3 else [0.5] * channels,
                              "std": [0.229, 0.224, 0.225] if channels == 3 else [0.25] * channels}}
    S.shape = shape
    return S()


class PixelsTest(unittest.TestCase):
    def test_round_trip(self):
        g = torch.Generator().manual_seed(3)
        pre = {"size": [8, 8], "resize_to": 8, "mean": [0.5, 0.5, 0.5], "std": [0.2, 0.3, 0.4]}
        for name, shape, p, normalize, lead in [
            ("image", [3, 8, 8], None, True, (4,)),
            ("image, transform", [3, 8, 8], pre, True, (4,)),
            ("clip", [2, 3, 8, 8], None, True, (2,)),
            ("clip unnormalised (D7)", [2, 3, 8, 8], None, False, (2,)),
            ("clip, transform", [2, 3, 8, 8], pre, True, (2,)),
        ]:
            inputs = Inputs(store(shape), p, torch.device("cpu"), normalize=normalize)
            u = torch.randint(0, 256, lead + tuple(shape), generator=g, dtype=torch.uint8)
            x = inputs.make(u)[0]
            back = inputs.pixels(x)
            self.assertEqual(back.dtype, torch.uint8, name)
            self.assertTrue(torch.equal(back, u), name)
            torch.testing.assert_close(inputs.normalized(back), x, msg=name)

    def test_eight_bit(self):
        for shape, scale, want in [([3, 8, 8], 1 / 255, True), ([2, 3, 8, 8], 1 / 255, True),
                                   ([3, 8, 8], 1.0, False), ([16], 1 / 255, False)]:
            s = store(shape, scale, channels=shape[0] if len(shape) == 1 else 3)
            self.assertEqual(Inputs(s, None, torch.device("cpu")).eight_bit(), want, (shape, scale))


if __name__ == "__main__":
    unittest.main()
