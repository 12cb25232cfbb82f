"""timm's RandAugment on tensors against timm's tables and PIL's own results.

The PIL references call PIL exactly as timm/data/auto_augment.py
(commit aa4b5850) does, so an op that matches here matches GATE's training
augmentation. All comparisons are exact (the tensor ops reproduce Pillow's
integer arithmetic); a Pillow built with fused multiply-add (e.g. on
aarch64) could differ by 1 in the blend and resampling ops.
"""
import hashlib
import math
import random
import unittest
from unittest import mock

import numpy as np
import torch
from PIL import Image, ImageEnhance, ImageOps

from gatepipe_worker.augment import randaugment as ra
from gatepipe_worker.augment import randaugment_batch as rb

RESAMPLE = {ra.BILINEAR: Image.BILINEAR, ra.BICUBIC: Image.BICUBIC}


def to_pil(img):
    a = img.permute(1, 2, 0).numpy()
    return Image.fromarray(a[:, :, 0], "L") if a.shape[2] == 1 else Image.fromarray(a, "RGB")


def from_pil(im):
    a = np.asarray(im)
    if a.ndim == 2:
        a = a[:, :, None]
    return torch.from_numpy(a.copy()).permute(2, 0, 1)


def timm_pil(im, step):
    """timm's op functions (auto_augment.py) on a PIL image, fill (128,128,128)."""
    kw = dict(fillcolor=128 if im.mode == "L" else (128, 128, 128))  # PIL rejects an RGB fill on 'L'
    if step.resample is not None:
        kw["resample"] = RESAMPLE[step.resample]
    name, args = step.name, step.args
    w, h = im.size
    if name == "AutoContrast":
        return ImageOps.autocontrast(im)
    if name == "Equalize":
        return ImageOps.equalize(im)
    if name == "Invert":
        return ImageOps.invert(im)
    if name == "Rotate":
        return im.rotate(args[0], **kw)
    if name.startswith("Posterize"):
        return im if args[0] >= 8 else ImageOps.posterize(im, args[0])
    if name.startswith("SolarizeAdd"):
        lut = [min(255, i + args[0]) if i < 128 else i for i in range(256)]
        return im.point(lut * (3 if im.mode == "RGB" else 1))
    if name.startswith("Solarize"):
        return ImageOps.solarize(im, args[0])
    for prefix, enhancer in (("Color", ImageEnhance.Color), ("Contrast", ImageEnhance.Contrast),
                             ("Brightness", ImageEnhance.Brightness), ("Sharpness", ImageEnhance.Sharpness)):
        if name.startswith(prefix):
            return enhancer(im).enhance(args[0])
    data = {
        "ShearX": (1, args[0], 0, 0, 1, 0),
        "ShearY": (1, 0, 0, args[0], 1, 0),
        "TranslateXRel": (1, 0, args[0] * w, 0, 1, 0),
        "TranslateYRel": (1, 0, 0, 0, 1, args[0] * h),
    }[name]
    return im.transform(im.size, Image.AFFINE, data, **kw)


class FixedRandom:
    """A stand-in rng: random() always returns `value` (0.9 negates, 0.1 keeps the sign)."""

    def __init__(self, value):
        self.value = value

    def random(self):
        return self.value


def random_images(seed, shapes):
    rs = np.random.RandomState(seed)
    out = []
    for i, (c, h, w) in enumerate(shapes):
        lo, hi = (70, 140) if i % 4 == 0 else (0, 256)  # some low-contrast images for autocontrast/equalize
        out.append(torch.from_numpy(rs.randint(lo, hi, size=(c, h, w)).astype(np.uint8)))
    return out


SHAPES = [(3, 9, 13), (1, 9, 13), (3, 16, 16), (1, 7, 5), (3, 2, 2), (3, 1, 6), (3, 31, 24), (1, 24, 31)]


class ParseTest(unittest.TestCase):
    GOOD = [
        ("rand-m9-n3-mstd0.5-inc1", ra.Config(9, 3, 0.5, 0.5, None, True)),
        ("rand", ra.Config(10, 2, 0.5, 0.0, None, False)),
        ("rand-inc1-mstd0.5-n3-m9", ra.Config(9, 3, 0.5, 0.5, None, True)),
        ("rand-m7-n1-p0.3", ra.Config(7, 1, 0.3, 0.0, None, False)),
        ("rand-m15-mmax20", ra.Config(15, 2, 0.5, 0.0, 20, False)),
        ("rand-mstd101", ra.Config(10, 2, 0.5, math.inf, None, False)),
        ("rand-m9-mstd1e-1", None),  # '-' splits sections: "mstd1e" is malformed
        ("rand-n0", ra.Config(10, 0, 0.5, 0.0, None, False)),
    ]
    BAD = [
        ("", "start with 'rand'"),
        ("rnd-m9", "start with 'rand'"),
        ("rand-m", "no numeric value"),
        ("rand--m9", "no numeric value"),
        ("rand-m9-", "no numeric value"),
        ("rand-x9", "unknown section"),
        ("rand-m9-m8", "given twice"),
        ("rand-mstd0.5-mstd1", "given twice"),
        ("rand-m9.5", "bad value"),
        ("rand-n3x", "bad value"),
        ("rand-mstd0.5.1", "bad value"),
        ("rand-inc0", "inc1"),
        ("rand-inc2", "inc1"),
        ("rand-tweights", "not supported"),
        ("rand-t3a-m9", "not supported"),
    ]

    def test_good(self):
        for spec, want in self.GOOD:
            with self.subTest(spec=spec):
                if want is None:
                    self.assertRaises(ValueError, ra.parse, spec)
                else:
                    self.assertEqual(ra.parse(spec), want)

    def test_bad(self):
        for spec, message in self.BAD:
            with self.subTest(spec=spec):
                with self.assertRaises(ValueError) as cm:
                    ra.parse(spec)
                self.assertIn(message, str(cm.exception))
        self.assertRaises(ValueError, ra.parse, None)

    def test_gate_config(self):
        cfg = ra.parse("rand-m9-n3-mstd0.5-inc1")
        self.assertEqual(cfg.upper_bound, 10.0)
        self.assertEqual(ra.parse("rand-mmax0").upper_bound, 10.0)  # timm: `mmax or 10`
        self.assertEqual(ra.parse("rand-mmax20").upper_bound, 20)
        self.assertEqual(cfg.ops, (
            "AutoContrast", "Equalize", "Invert", "Rotate", "PosterizeIncreasing",
            "SolarizeIncreasing", "SolarizeAdd", "ColorIncreasing", "ContrastIncreasing",
            "BrightnessIncreasing", "SharpnessIncreasing", "ShearX", "ShearY",
            "TranslateXRel", "TranslateYRel"))
        self.assertEqual(ra.parse("rand-m9").ops, (
            "AutoContrast", "Equalize", "Invert", "Rotate", "Posterize", "Solarize",
            "SolarizeAdd", "Color", "Contrast", "Brightness", "Sharpness",
            "ShearX", "ShearY", "TranslateXRel", "TranslateYRel"))


class LevelTest(unittest.TestCase):
    # (op, magnitude, args when the sign is kept, args when negated); None: unsigned.
    TABLE = [
        ("AutoContrast", 9, (), None),
        ("Equalize", 9, (), None),
        ("Invert", 9, (), None),
        ("Rotate", 9, (27.0,), (-27.0,)),
        ("Rotate", 10, (30.0,), (-30.0,)),
        ("PosterizeIncreasing", 9, (1,), None),
        ("PosterizeIncreasing", 10, (0,), None),
        ("PosterizeIncreasing", 0, (4,), None),
        ("PosterizeIncreasing", 7.4, (2,), None),
        ("Posterize", 9, (3,), None),
        ("SolarizeIncreasing", 9, (26,), None),
        ("SolarizeIncreasing", 10, (0,), None),
        ("SolarizeIncreasing", 0, (256,), None),
        ("Solarize", 9, (230,), None),
        ("SolarizeAdd", 9, (99,), None),
        ("SolarizeAdd", 10, (110,), None),
        ("ColorIncreasing", 9, (1.81,), (0.19,)),
        ("ContrastIncreasing", 9, (1.81,), (0.19,)),
        ("BrightnessIncreasing", 9, (1.81,), (0.19,)),
        ("SharpnessIncreasing", 9, (1.81,), (0.19,)),
        ("SharpnessIncreasing", 10, (1.9,), (0.1,)),  # 1 - 0.9 is clamped to 0.1
        ("ColorIncreasing", 0, (1.0,), (1.0,)),
        ("Color", 9, (1.72,), None),
        ("Brightness", 0, (0.1,), None),
        ("ShearX", 9, (0.27,), (-0.27,)),
        ("ShearY", 9, (0.27,), (-0.27,)),
        ("TranslateXRel", 9, (0.405,), (-0.405,)),
        ("TranslateYRel", 10, (0.45,), (-0.45,)),
    ]

    def test_table(self):
        for name, m, kept, negated in self.TABLE:
            with self.subTest(op=name, m=m):
                got = ra.level_to_args(name, m, FixedRandom(0.1))
                self.assertEqual(len(got), len(kept))
                for g, k in zip(got, kept):
                    self.assertAlmostEqual(g, k, places=12)
                    self.assertIs(type(g), type(k))
                got = ra.level_to_args(name, m, FixedRandom(0.9))
                for g, k in zip(got, negated or kept):
                    self.assertAlmostEqual(g, k, places=12)

    def test_unknown(self):
        self.assertRaises(ValueError, ra.level_to_args, "Cutout", 9, FixedRandom(0.1))


class DrawTest(unittest.TestCase):
    def draws(self, spec, images, seed=0):
        aug = ra.RandAugment(spec, seed)
        return [aug.draw() for _ in range(images)]

    def test_gate_draws(self):
        steps = self.draws("rand-m9-n3-mstd0.5-inc1", 4000)
        counts = [len(s) for s in steps]
        self.assertLessEqual(max(counts), 3)
        applied = sum(counts) / (3 * len(steps))
        self.assertAlmostEqual(applied, 0.5, delta=0.02)  # p = 0.5 per op
        flat = [st for s in steps for st in s]
        self.assertEqual({st.name for st in flat}, set(ra.RAND_INCREASING_TRANSFORMS))
        mags = np.array([st.magnitude for st in flat])
        self.assertAlmostEqual(mags.mean(), 9.0, delta=0.03)  # gauss(9, 0.5) each call
        self.assertAlmostEqual(mags.std(), 0.5, delta=0.03)
        self.assertLessEqual(mags.max(), 10.0)
        for st in flat:
            if st.name in ra.GEOMETRIC:
                self.assertIn(st.resample, ra.RANDOM_INTERPOLATION)
            else:
                self.assertIsNone(st.resample)
        rot = [st for st in flat if st.name == "Rotate"]
        for st in rot:
            self.assertAlmostEqual(abs(st.args[0]), st.magnitude * 3, places=9)
        self.assertAlmostEqual(np.mean([st.args[0] > 0 for st in rot]), 0.5, delta=0.1)
        geo = [st.resample for st in flat if st.name in ra.GEOMETRIC]
        self.assertAlmostEqual(np.mean([r == ra.BICUBIC for r in geo]), 0.5, delta=0.05)

    def test_with_replacement(self):
        steps = self.draws("rand-m9-n3-p1.0-inc1", 2000)
        self.assertTrue(all(len(s) == 3 for s in steps))
        repeats = np.mean([len({st.name for st in s}) < 3 for s in steps])
        # 1 - 15*14*13 / 15**3 = 0.191 of images pick some op twice
        self.assertAlmostEqual(repeats, 1 - 15 * 14 * 13 / 15 ** 3, delta=0.03)

    def test_clip_and_uniform(self):
        mags = [st.magnitude for s in self.draws("rand-m10-n1-p1-mstd0.5-inc1", 2000) for st in s]
        self.assertEqual(max(mags), 10.0)
        self.assertAlmostEqual(np.mean([m == 10.0 for m in mags]), 0.5, delta=0.05)
        mags = [st.magnitude for s in self.draws("rand-m9-n1-p1-inc1", 50) for st in s]
        self.assertEqual(set(mags), {9})
        mags = np.array([st.magnitude for s in self.draws("rand-m8-n1-p1-mstd200", 2000) for st in s])
        self.assertGreaterEqual(mags.min(), 0.0)
        self.assertLessEqual(mags.max(), 8.0)
        self.assertAlmostEqual(mags.mean(), 4.0, delta=0.2)
        mags = np.array([st.magnitude for s in self.draws("rand-m15-mmax20-mstd0.5-n1-p1", 500) for st in s])
        self.assertAlmostEqual(mags.mean(), 15.0, delta=0.1)


class PilOpsTest(unittest.TestCase):
    """Each op's tensor result equals PIL's result for the same arguments, exactly."""

    ARGS = [
        ("AutoContrast", ()), ("Equalize", ()), ("Invert", ()),
        ("Posterize", (0,)), ("Posterize", (1,)), ("Posterize", (4,)), ("Posterize", (8,)), ("Posterize", (-2,)),
        ("Solarize", (0,)), ("Solarize", (26,)), ("Solarize", (128,)), ("Solarize", (256,)),
        ("SolarizeAdd", (0,)), ("SolarizeAdd", (99,)), ("SolarizeAdd", (110,)),
        ("Color", (0.19,)), ("Color", (1.81,)), ("Color", (0.0,)), ("Color", (3.7,)),
        ("Contrast", (0.19,)), ("Contrast", (1.81,)), ("Contrast", (0.5,)),
        ("Brightness", (0.19,)), ("Brightness", (1.81,)), ("Brightness", (1.0,)),
        ("Sharpness", (0.19,)), ("Sharpness", (1.81,)), ("Sharpness", (-0.3,)),
    ]
    GEOMETRIC = [
        ("Rotate", (27.0,)), ("Rotate", (-28.3,)), ("Rotate", (90.0,)), ("Rotate", (180.0,)),
        ("Rotate", (-90.0,)), ("Rotate", (0.0,)), ("Rotate", (300.5,)),
        ("ShearX", (0.27,)), ("ShearX", (-0.3,)), ("ShearY", (0.27,)), ("ShearY", (-0.21,)),
        ("TranslateXRel", (0.405,)), ("TranslateXRel", (-0.45,)),
        ("TranslateYRel", (0.405,)), ("TranslateYRel", (-0.1234,)),
    ]

    def check(self, step, img):
        got = ra.apply_step(img, step)
        want = from_pil(timm_pil(to_pil(img), step))
        self.assertEqual(got.shape, img.shape)
        self.assertEqual(got.dtype, torch.uint8)
        diff = (got.int() - want.int()).abs()
        self.assertEqual(diff.max().item() if diff.numel() else 0, 0,
                         f"{step} on {tuple(img.shape)}: {int((diff > 0).sum())} values differ")

    def test_pixel_ops(self):
        for img in random_images(1, SHAPES):
            for name, args in self.ARGS:
                with self.subTest(op=name, args=args, shape=tuple(img.shape)):
                    self.check(ra.Step(name, args), img)

    def test_geometric_ops(self):
        for img in random_images(2, SHAPES):
            for name, args in self.GEOMETRIC:
                for resample in ra.RANDOM_INTERPOLATION:
                    with self.subTest(op=name, args=args, resample=resample, shape=tuple(img.shape)):
                        self.check(ra.Step(name, args, resample), img)

    def test_degenerate_images(self):
        # flat, two-level, and one-pixel images: the LUT ops' special cases
        cases = [torch.full((3, 5, 4), 77, dtype=torch.uint8),
                 torch.tensor([[[0, 255], [255, 255]]], dtype=torch.uint8),
                 torch.tensor([[[9]], [[200]], [[13]]], dtype=torch.uint8)]
        for img in cases:
            for name, args in self.ARGS:
                with self.subTest(op=name, args=args, img=img.tolist()):
                    self.check(ra.Step(name, args), img)

    def test_drawn_steps(self):
        # the GATE spec's own draws, op by op, on random images
        aug = ra.RandAugment("rand-m9-n3-mstd0.5-inc1", 5)
        imgs = random_images(3, SHAPES * 10)
        seen = set()
        for img in imgs:
            for step in aug.draw():
                seen.add(step.name)
                with self.subTest(step=step, shape=tuple(img.shape)):
                    self.check(step, img)
        self.assertEqual(seen, set(ra.RAND_INCREASING_TRANSFORMS))

    def test_pipeline(self):
        # a whole batch against the same draws replayed through PIL, op after op
        x = torch.stack(random_images(4, [(3, 20, 28)] * 12))
        got = ra.RandAugment("rand-m9-n3-mstd0.5-inc1", 11)(x)
        replay = ra.RandAugment("rand-m9-n3-mstd0.5-inc1", 11)
        for i in range(x.shape[0]):
            im = to_pil(x[i])
            for step in replay.draw():
                im = timm_pil(im, step)
            self.assertTrue(torch.equal(got[i], from_pil(im)), f"image {i}")

    def test_geometry_conventions(self):
        # shear about the top-left corner, pixel centres at +0.5: output (x, y)
        # reads x + 0.5 + 0.27 * (y + 0.5); on the last of 12 rows that leaves
        # the source for x >= 9, so three fill pixels, none in row 0 or on the left
        flat = torch.full((3, 12, 12), 77, dtype=torch.uint8)
        out = ra.shear_x(flat, 0.27, ra.BILINEAR)
        self.assertEqual(out[0, -1].tolist(), [77] * 9 + [ra.FILL] * 3)
        self.assertEqual(out[0, 0].tolist(), [77] * 12)
        self.assertEqual(out[0, :, 0].tolist(), [77] * 12)
        img = random_images(6, [(3, 12, 12)])[0]
        # rotate about the centre by a right angle is a transpose, no fill
        out = ra.rotate(img, 90.0, ra.BICUBIC)
        self.assertTrue(torch.equal(out, torch.rot90(img, 1, dims=(1, 2))))
        # a translation by half the width leaves the right half to the fill colour
        out = ra.translate_x_rel(img, 0.5, ra.BILINEAR)
        self.assertTrue(torch.equal(out[:, :, :6], img[:, :, 6:]))
        self.assertTrue(bool((out[:, :, 6:] == ra.FILL).all()))


class RandAugmentTest(unittest.TestCase):
    SPEC = "rand-m9-n3-mstd0.5-inc1"

    def batch(self, c=3, n=6, seed=7):
        return torch.stack(random_images(seed, [(c, 17, 23)] * n))

    def test_shape_dtype_and_input_untouched(self):
        for c in (1, 3):
            x = self.batch(c)
            before = x.clone()
            y = ra.RandAugment(self.SPEC, 0)(x)
            self.assertEqual(y.shape, x.shape)
            self.assertEqual(y.dtype, torch.uint8)
            self.assertEqual(y.device, x.device)
            self.assertTrue(torch.equal(x, before))
            self.assertFalse(torch.equal(y, x))

    def test_reproducible(self):
        x = self.batch()
        a = ra.RandAugment(self.SPEC, 123)(x)
        b = ra.RandAugment(self.SPEC, 123)(x)
        c = ra.RandAugment(self.SPEC, 124)(x)
        self.assertTrue(torch.equal(a, b))
        self.assertFalse(torch.equal(a, c))
        # draws continue across calls: two half batches equal one batch
        aug = ra.RandAugment(self.SPEC, 123)
        self.assertTrue(torch.equal(torch.cat([aug(x[:2]), aug(x[2:])]), a))
        # each sample independently: the same image twice in a batch is augmented differently
        same = ra.RandAugment(self.SPEC, 1)(x[:1].expand(8, -1, -1, -1).contiguous())
        self.assertGreater(len({tuple(s.flatten().tolist()) for s in same}), 4)

    def test_grey(self):
        x = self.batch(c=1)
        y = ra.RandAugment(self.SPEC, 3)(x)
        self.assertEqual(y.shape, x.shape)
        img = x[0]
        self.assertTrue(torch.equal(ra.color(img, 0.19), img))  # Color of an 'L' image is the identity
        self.assertEqual(ra.translate_y_rel(img, 0.45, ra.BICUBIC)[0, -1, 0].item(), ra.FILL)

    def test_bad_input(self):
        aug = ra.RandAugment(self.SPEC, 0)
        for bad in (torch.zeros(2, 3, 4, 4), torch.zeros(3, 4, 4, dtype=torch.uint8),
                    torch.zeros(2, 4, 4, 4, dtype=torch.uint8), np.zeros((2, 3, 4, 4), np.uint8)):
            self.assertRaises(ValueError, aug, bad)
        self.assertRaises(ValueError, ra.RandAugment, "rand-m9-inc0", 0)

    def test_config_object(self):
        cfg = ra.parse(self.SPEC)
        x = self.batch()
        self.assertTrue(torch.equal(ra.RandAugment(cfg, 9)(x), ra.RandAugment(self.SPEC, 9)(x)))
        self.assertIn("m=9, n=3", repr(ra.RandAugment(cfg, 9)))

    def test_independent_of_global_rngs(self):
        x = self.batch()
        random.seed(1)
        torch.manual_seed(1)
        np.random.seed(1)
        a = ra.RandAugment(self.SPEC, 5)(x)
        random.seed(2)
        torch.manual_seed(2)
        np.random.seed(2)
        self.assertTrue(torch.equal(a, ra.RandAugment(self.SPEC, 5)(x)))

    @unittest.skipUnless(torch.cuda.is_available(), "no CUDA device")
    def test_cuda_matches_cpu(self):
        x = torch.stack(random_images(8, [(3, 40, 33)] * 32))
        cpu = ra.RandAugment(self.SPEC, 77)(x)
        gpu = ra.RandAugment(self.SPEC, 77)(x.cuda())
        self.assertEqual(gpu.device.type, "cuda")
        self.assertTrue(torch.equal(cpu, gpu.cpu()))
        plans = [[ALL_STEPS[i % len(ALL_STEPS)], ALL_STEPS[(7 * i) % len(ALL_STEPS)]] for i in range(80)]
        for shape in ((3, 16, 16), (3, 40, 33)):
            x = torch.stack(random_images(9, [shape] * 80))
            self.assertTrue(torch.equal(Scripted(plans)(x.cuda()).cpu(), per_image(x, plans)), str(shape))
        for img in x[:4]:
            for name, args in PilOpsTest.ARGS:
                step = ra.Step(name, args)
                self.assertTrue(torch.equal(ra.apply_step(img, step),
                                            ra.apply_step(img.cuda(), step).cpu()), str(step))
            for name, args in PilOpsTest.GEOMETRIC:
                for resample in ra.RANDOM_INTERPOLATION:
                    step = ra.Step(name, args, resample)
                    self.assertTrue(torch.equal(ra.apply_step(img, step),
                                                ra.apply_step(img.cuda(), step).cpu()), str(step))


def golden_batch(seed, n, c, h, w):
    """The inputs of BatchTest.GOLDEN: uniform bytes, every 4th image low-contrast."""
    rs = np.random.RandomState(seed)
    x = rs.randint(0, 256, size=(n, c, h, w)).astype(np.uint8)
    x[::4] = rs.randint(70, 140, size=x[::4].shape).astype(np.uint8)
    return torch.from_numpy(x)


def per_image(x, plans):
    """The per-image path: each image through its steps with apply_step, one op at a time."""
    out = torch.empty_like(x)
    for i, steps in enumerate(plans):
        img = x[i]
        for step in steps:
            img = ra.apply_step(img, step)
        out[i] = img
    return out


class Scripted(ra.RandAugment):
    """A RandAugment whose draw() hands out given step lists, one per image, in order."""

    def __init__(self, plans):
        super().__init__("rand-m9-n3-mstd0.5-inc1", 0)
        self.plans = iter(plans)

    def draw(self):
        return list(next(self.plans))


# Every op name (both timm sets) with edge arguments, both filters, Rotate's shortcuts.
ALL_STEPS = (
    [ra.Step(name, args) for name, args in PilOpsTest.ARGS]
    + [ra.Step(name, args, r) for name, args in PilOpsTest.GEOMETRIC for r in ra.RANDOM_INTERPOLATION]
    + [ra.Step("PosterizeIncreasing", (1,)), ra.Step("SolarizeIncreasing", (26,)),
       ra.Step("ColorIncreasing", (0.19,)), ra.Step("ContrastIncreasing", (1.81,)),
       ra.Step("BrightnessIncreasing", (0.19,)), ra.Step("SharpnessIncreasing", (1.81,)),
       ra.Step("Rotate", (270.0,), ra.BICUBIC), ra.Step("Rotate", (360.0,), ra.BILINEAR),
       ra.Step("Rotate", (-180.0,), ra.BICUBIC), ra.Step("Rotate", (-0.0,), ra.BICUBIC)])

# affine()'s strips of output rows on the CPU: the default; one row (with
# several images); none (as on a GPU)
SPLITS = [None, 1, 1 << 40]


def split(mode):
    return mock.patch.object(rb, "CPU_STRIP", mode or rb.CPU_STRIP)


class BatchTest(unittest.TestCase):
    """RandAugment.__call__ (layer by layer over the batch) against the per-image path."""

    # sha256 of RandAugment(spec, seed)(golden_batch(seed, n, c, h, w)), computed
    # with the per-image implementation before the batched one replaced it
    GOLDEN = [
        ("rand-m9-n3-mstd0.5-inc1", 2024, 64, 3, 7, 13,
         "23e4379f83c647497a07e3c96d492f4fc374ff8de951dd4fe2fca9d9451fda0f"),
        ("rand-m9-n3-mstd0.5-inc1", 7, 5, 1, 13, 7,
         "606316fa976e4b18758f5b890e6587cee0d97d830812b88e3bba00d755be9d23"),
        ("rand-m9-n3-mstd0.5-inc1", 99, 16, 3, 32, 32,
         "6cb82bf010ff2e556f88ef4b7877fdd9be9f53b97274c820992e75f4dd409cf8"),
        ("rand-m9-n4-p1.0-mstd0.5-inc1", 3, 40, 3, 11, 9,
         "2ea29c976b7948d3cf5f35d2ac4aa4f8af8ba39230beddeb5af76af7aadfa10d"),
        ("rand-m9-n4-p1.0-mstd0.5", 4, 40, 1, 9, 11,
         "19fe991234816aabf458c1118cba7af239979dd76371f547b70b88ff79c32c83"),
    ]
    SPECS = ["rand-m9-n3-mstd0.5-inc1", "rand-m9-n4-p1.0-mstd0.5-inc1", "rand-m10-n3-p1.0",
             "rand-m30-mmax30-n3-p1.0",  # Rotate by exactly +-90: the rot90 shortcut on squares
             "rand-m9-n3-p0.9-mstd101"]

    def test_golden(self):
        for spec, seed, n, c, h, w, want in self.GOLDEN:
            for mode in SPLITS:
                with self.subTest(spec=spec, seed=seed, shape=(n, c, h, w), split=mode), split(mode):
                    y = ra.RandAugment(spec, seed)(golden_batch(seed, n, c, h, w))
                    self.assertEqual(hashlib.sha256(y.numpy().tobytes()).hexdigest(), want)

    def test_random_batches(self):
        rs = np.random.RandomState(5)
        for spec in self.SPECS:
            for c, h, w in ((3, 7, 13), (1, 7, 13), (3, 12, 12), (1, 13, 7)):
                for n in (1, 5, 64):
                    for seed in (0, 1):
                        x = torch.from_numpy(rs.randint(0, 256, (n, c, h, w)).astype(np.uint8))
                        x[::3] = x[::3] // 4 + 60  # low contrast for AutoContrast/Equalize
                        with self.subTest(spec=spec, shape=(n, c, h, w), seed=seed):
                            got = ra.RandAugment(spec, seed)(x)
                            aug = ra.RandAugment(spec, seed)  # the same draws, image by image
                            want = torch.stack([aug.augment(img) for img in x])
                            self.assertTrue(torch.equal(got, want))

    def test_every_op_in_one_layer(self):
        n = len(ALL_STEPS) + 9
        rs = np.random.RandomState(6)
        # image i: ALL_STEPS[i] first (so layer 0 holds every op), then 0-2 more
        plans = [[ALL_STEPS[i % len(ALL_STEPS)]]
                 + [ALL_STEPS[rs.randint(len(ALL_STEPS))] for _ in range(i % 3)] for i in range(n)]
        self.assertEqual({s.name for s in ALL_STEPS}, set(ra.OPS))
        for c, h, w in ((3, 12, 12), (3, 7, 13), (1, 13, 7), (3, 2, 2), (1, 1, 6)):
            x = torch.stack(random_images(7, [(c, h, w)] * n))
            want = per_image(x, plans)
            for mode in SPLITS:
                with self.subTest(shape=(c, h, w), split=mode), split(mode):
                    self.assertTrue(torch.equal(Scripted(plans)(x), want))

    def test_drawn_every_op(self):
        spec = "rand-m9-n4-p1.0-mstd0.5-inc1"
        aug = ra.RandAugment(spec, 8)
        plans = [aug.draw() for _ in range(40)]
        self.assertEqual({s.name for p in plans for s in p}, set(ra.RAND_INCREASING_TRANSFORMS))
        self.assertEqual({s.resample for p in plans for s in p if s.resample}, set(ra.RANDOM_INTERPOLATION))
        x = torch.stack(random_images(9, [(3, 9, 11)] * 40))
        want = per_image(x, plans)
        for mode in SPLITS:
            with self.subTest(split=mode), split(mode):
                self.assertTrue(torch.equal(ra.RandAugment(spec, 8)(x), want))

    def test_draws_before_ops(self):
        # all N images are drawn (in batch order) before any op runs
        aug = ra.RandAugment("rand-m9-n3-p1.0-mstd0.5-inc1", 3)
        events = []
        draw, layers = aug.draw, rb.apply_layers

        def logged_draw():
            events.append("draw")
            return draw()

        def logged_layers(x, plans):
            events.append("apply")
            return layers(x, plans)

        aug.draw = logged_draw
        with mock.patch.object(rb, "apply_layers", logged_layers):
            aug(torch.stack(random_images(1, [(3, 8, 8)] * 6)))
        self.assertEqual(events, ["draw"] * 6 + ["apply"])

    def test_histogram(self):
        x = torch.stack(random_images(10, [(3, 9, 13)] * 6))
        h = rb.histogram(x)
        self.assertEqual(h.dtype, torch.int64)
        for g in range(6):
            for c in range(3):
                want = np.bincount(x[g, c].flatten().numpy(), minlength=256)
                self.assertEqual(h[g, c].tolist(), want.tolist())

    def test_kernels_per_image(self):
        # each batch kernel with one argument per image equals its single-image op
        x = torch.stack(random_images(11, [(3, 10, 14)] * 4))
        factors = [0.19, 1.81, 0.0, 3.7]
        matrices = [ra.rotate_matrix(27.0, 14, 10), [1, 0.27, 0, 0, 1, 0], [1, 0, -5.67, 0, 1, 0],
                    [0.9, -0.2, 1.5, 0.3, 1.1, -2.0]]
        cases = [
            (rb.posterize, [0, 1, 4, 8], ra.posterize), (rb.solarize, [0, 26, 128, 256], ra.solarize),
            (rb.solarize_add, [0, 99, 110, 128], ra.solarize_add), (rb.color, factors, ra.color),
            (rb.contrast, factors, ra.contrast), (rb.brightness, factors, ra.brightness),
            (rb.sharpness, factors, ra.sharpness),
        ]
        for mode in SPLITS:
            with split(mode):
                for kernel, args, single in cases:
                    with self.subTest(op=single.__name__, split=mode):
                        want = torch.stack([single(img, a) for img, a in zip(x, args)])
                        self.assertTrue(torch.equal(kernel(x, args), want))
                for resample in ra.RANDOM_INTERPOLATION:
                    with self.subTest(op="affine", resample=resample, split=mode):
                        want = torch.stack([ra.affine(img, m, resample) for img, m in zip(x, matrices)])
                        self.assertTrue(torch.equal(rb.affine(x, matrices, resample), want))

    def test_unknown_op(self):
        x = torch.zeros(2, 3, 4, 4, dtype=torch.uint8)
        for step in (ra.Step("Cutout", (1,)), ra.Step("RotateIncreasing", (3.0,), ra.BILINEAR)):
            self.assertRaises(ValueError, Scripted([[], [step]]), x)
        self.assertRaises(ValueError, Scripted([[ra.Step("ShearX", (0.1,), "nearest")]]), x[:1])

    def test_empty(self):
        x = torch.zeros(0, 3, 5, 5, dtype=torch.uint8)
        self.assertEqual(ra.RandAugment("rand-m9-n3-mstd0.5-inc1", 0)(x).shape, x.shape)
        x = torch.stack(random_images(12, [(3, 5, 5)] * 3))
        y = Scripted([[], [], []])(x)
        self.assertTrue(torch.equal(y, x))
        self.assertNotEqual(y.data_ptr(), x.data_ptr())


if __name__ == "__main__":
    unittest.main()
