"""The card's augmentation on a training batch (augment.for_card and
Augmenter): which augmentation each family gets, that it works on the
batch's pixels and gives back the encoder's input, that a (seed,
iteration) draws the same on every call (a resumed run draws what the
uninterrupted one did) and another iteration draws anew, and that masks
move with their images."""
import unittest

import torch

from gatepipe_worker.augment import for_card
from gatepipe_worker.storage import Inputs

RAND = "rand-m9-n3-mstd0.5-inc1"


def inputs(shape, scale=1 / 255):
    class S:
        meta = {"normalize": {"scale": scale, "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}}
    S.shape = shape
    return Inputs(S(), None, torch.device("cpu"))


def batch(inp, n, seed=0):
    g = torch.Generator().manual_seed(seed)
    u = torch.randint(0, 256, [n] + list(inp.shape), generator=g, dtype=torch.uint8)
    return inp.make(u)[0]


class ForCardTest(unittest.TestCase):
    def test_each_family_gets_gates_augmentation(self):
        img, clip = inputs([3, 16, 16]), inputs([2, 3, 16, 16])
        seg = "random crop (1024 of a 2048 resize), horizontal flip, photometric distortion"
        for task, card, inp, kind, why in [
            ("classification", {"augmentation": RAND}, img, "image", ""),
            ("multilabel", {"augmentation": RAND}, img, "image", ""),
            ("relational", {"augmentation": RAND}, img, "image", ""),
            ("retrieval", {"augmentation": RAND}, img, "image", ""),
            ("segmentation", {"augmentation": seg}, img, "segmentation", ""),
            ("segmentation", {"augmentation": "medical: random crop (512 of a 640 resize)"}, img, "medical", ""),
            ("video", {"augmentation": "resize 448, random crop 224"}, clip, "video", ""),
            ("video_regression", {"augmentation": "resize 448, random crop 224"}, clip, "video", ""),
            ("fewshot", {}, img, None, ""),
            ("classification", None, img, None, ""),
            ("classification", {"augmentation": RAND}, inputs([3, 16, 16], scale=1.0), None, "not 8-bit"),
            ("fewshot", {"augmentation": RAND}, img, None, "no augmentation for the fewshot family"),
        ]:
            aug, reason = for_card(task, card, inp, 0)
            self.assertEqual(aug.kind if aug else None, kind, (task, card))
            self.assertIn(why, reason, (task, card))
            self.assertEqual(bool(reason), bool(why), (task, reason))

    def test_d11_wraps_only_under_table3(self):
        seg = {"augmentation": "random crop, horizontal flip, photometric distortion"}
        aug, _ = for_card("segmentation", dict(seg, defects=["D1", "D11"]), inputs([3, 16, 16]), 0)
        self.assertTrue(aug.op.byte_wrap)
        aug, _ = for_card("segmentation", dict(seg, defects=[]), inputs([3, 16, 16]), 0)
        self.assertFalse(aug.op.byte_wrap)


class AugmenterTest(unittest.TestCase):
    def test_randaugment_per_iteration(self):
        inp = inputs([3, 16, 16])
        x = batch(inp, 8)
        aug, _ = for_card("classification", {"augmentation": RAND}, inp, 7)
        a, _ = aug(x, None, 5)
        again, _ = for_card("classification", {"augmentation": RAND}, inp, 7)
        self.assertTrue(torch.equal(a, again(x, None, 5)[0]))  # a resumed run at iteration 5
        self.assertFalse(torch.equal(a, aug(x, None, 6)[0]))
        self.assertEqual(a.shape, x.shape)
        self.assertEqual(a.dtype, torch.float32)
        # Normalised as the loader's inputs: the pixels read back are 8-bit.
        self.assertTrue(torch.equal(inp.normalized(inp.pixels(a)), a))
        changed = [not torch.equal(a[i], x[i]) for i in range(8)]
        self.assertGreaterEqual(sum(changed), 4)  # each image: 3 ops at p 0.5 (1/8 untouched)

    def test_masks_move_with_their_images(self):
        inp = inputs([3, 16, 16])
        # Every pixel's class is its image's red level / 64, so an image
        # and its mask agree wherever both are moved together.
        g = torch.Generator().manual_seed(1)
        y = torch.randint(0, 4, (6, 16, 16), generator=g)
        u = (y * 64).to(torch.uint8).unsqueeze(1).expand(6, 3, 16, 16).contiguous()
        x = inp.make(u)[0]
        aug, _ = for_card("segmentation", {"augmentation": "medical: random crop (512 of a 640 resize)"}, inp, 3)
        xa, ya = aug(x, y, 1)
        self.assertEqual(ya.shape, y.shape)
        red = inp.pixels(xa)[:, 0].float()
        # Bicubic resampling blurs the edges between classes: compare where the image is flat.
        flat = (red - torch.round(red / 64) * 64).abs() < 1
        agree = (torch.round(red / 64).long() == ya)[flat].float().mean().item()
        self.assertGreater(agree, 0.97)
        self.assertFalse(torch.equal(ya, y))


if __name__ == "__main__":
    unittest.main()
