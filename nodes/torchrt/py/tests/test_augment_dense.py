"""GATE's training augmentations of segmentation and video batches
(gatepipe_worker.augment.segmentation and .video)."""

import colorsys
import unittest

import torch

from gatepipe_worker.augment.segmentation import (SegmentationAugment, hsv_to_rgb, photometric,
                                                  rgb_to_hsv)
from gatepipe_worker.augment.video import VideoAugment

DEVICES = [torch.device("cpu")] + ([torch.device("cuda")] if torch.cuda.is_available() else [])


def ramps(n, h, w, dtype=torch.uint8, scale=255.0):
    """Images [n, 3, h, w]: channel 0 the normalised row of each pixel
    centre, channel 1 its column, channel 2 zero (times scale)."""
    ry = (torch.arange(h, dtype=torch.float64) + 0.5) / h
    rx = (torch.arange(w, dtype=torch.float64) + 0.5) / w
    x = torch.zeros(n, 3, h, w, dtype=torch.float64)
    x[:, 0] = ry.view(h, 1)
    x[:, 1] = rx.view(1, w)
    x = x * scale
    return x.round().to(dtype) if not dtype.is_floating_point else x.to(dtype)


def cells(n, h, w, k=8):
    """Masks [n, h, w]: the cell (row * k + column) of a k x k grid, in
    normalised coordinates, that each pixel centre lies in."""
    ry = ((torch.arange(h, dtype=torch.float64) + 0.5) / h * k).floor().long()
    rx = ((torch.arange(w, dtype=torch.float64) + 0.5) / w * k).floor().long()
    return (ry.view(h, 1) * k + rx.view(1, w)).expand(n, h, w).contiguous()


def bilinear_at(img, fy, fx):
    """img [H, W] (float) at normalised point (fy, fx), pixel centres at (i + 0.5) / H."""
    h, w = img.shape
    y, x = fy * h - 0.5, fx * w - 0.5
    y0, x0 = int(max(min(y // 1, h - 2), 0)), int(max(min(x // 1, w - 2), 0))
    ty, tx = min(max(y - y0, 0.0), 1.0), min(max(x - x0, 0.0), 1.0)
    a = img[y0, x0] * (1 - tx) + img[y0, x0 + 1] * tx
    b = img[y0 + 1, x0] * (1 - tx) + img[y0 + 1, x0 + 1] * tx
    return float(a * (1 - ty) + b * ty)


class SegmentationFlipTest(unittest.TestCase):
    def test_flip_moves_image_and_mask_together(self):
        # (image H, W, mask h, w, image mark, mask mark)
        table = [(8, 8, 8, 8, (2, 1), (2, 1)),
                 (16, 12, 4, 3, (5, 0), (3, 2)),
                 (7, 9, 14, 18, (6, 8), (0, 17))]
        for H, W, h, w, (r, c), (mr, mc) in table:
            for p, flipped in ((1.0, True), (0.0, False)):
                with self.subTest(size=(H, W, h, w), p=p):
                    # The whole image as the window (crop = initial): only the flip moves pixels.
                    aug = SegmentationAugment(0, initial_size=10, crop_size=10, flip_prob=p, photometric=False)
                    x = torch.zeros(2, 3, H, W, dtype=torch.uint8)
                    x[:, 0, r, c] = 255
                    y = torch.zeros(2, h, w, dtype=torch.uint8)
                    y[:, mr, mc] = 7
                    xo, yo = aug(x, y)
                    want_c, want_mc = (W - 1 - c, w - 1 - mc) if flipped else (c, mc)
                    for n in range(2):
                        self.assertEqual(torch.nonzero(xo[n, 0]).tolist(), [[r, want_c]])
                        self.assertEqual(torch.nonzero(yo[n]).tolist(), [[mr, want_mc]])
                        self.assertEqual(int(yo[n, mr, want_mc]), 7)

    def test_flip_after_crop_is_the_mirrored_crop(self):
        # GATE flips the cropped image: with the same crop and distortion,
        # the flipped draw is the unflipped one mirrored, image and mask.
        aug = SegmentationAugment(3)
        x = torch.randint(0, 256, (3, 3, 40, 56), generator=torch.Generator().manual_seed(1), dtype=torch.uint8)
        y = torch.randint(0, 9, (3, 10, 14), generator=torch.Generator().manual_seed(2), dtype=torch.uint8)
        params = aug.draw(3)
        for p in params:
            p["flip"] = False
        a = aug.apply(x, y, params)
        b = aug.apply(x, y, [dict(p, flip=True) for p in params])
        self.assertTrue(torch.equal(b[0], a[0].flip(-1)))
        self.assertTrue(torch.equal(b[1], a[1].flip(-1)))


class SegmentationCropTest(unittest.TestCase):
    def check_alignment(self, aug, x, y, scale):
        """Every output mask pixel's cell holds the source position that
        the output image shows at that pixel's centre."""
        xo, yo = aug(x, y)
        n, _, H, W = xo.shape
        h, w = yo.shape[1:]
        tol_y = 1.0 / h + 1.5 / H + 1.0 / scale
        tol_x = 1.0 / w + 1.5 / W + 1.0 / scale
        rows, cols = xo[:, 0].double() / scale, xo[:, 1].double() / scale
        for k in range(n):
            for i in range(h):
                for j in range(w):
                    fy, fx = (i + 0.5) / h, (j + 0.5) / w
                    sy, sx = bilinear_at(rows[k], fy, fx), bilinear_at(cols[k], fy, fx)
                    cell = int(yo[k, i, j])
                    cy, cx = divmod(cell, 8)
                    self.assertTrue(cy / 8 - tol_y <= sy <= (cy + 1) / 8 + tol_y, (k, i, j, sy, cy))
                    self.assertTrue(cx / 8 - tol_x <= sx <= (cx + 1) / 8 + tol_x, (k, i, j, sx, cx))
        return xo, yo

    def test_crop_keeps_image_and_mask_aligned(self):
        # (medical, image H, W, mask h, w, image dtype)
        table = [(False, 64, 64, 16, 16, torch.uint8),
                 (False, 48, 80, 32, 20, torch.uint8),
                 (False, 40, 40, 40, 40, torch.uint8),
                 (False, 60, 45, 15, 45, torch.uint8),
                 (False, 128, 128, 64, 64, torch.uint8),  # tight enough to see a window 10% off
                 (True, 50, 50, 50, 50, torch.float32),
                 (True, 64, 48, 16, 24, torch.float32)]
        for medical, H, W, h, w, dtype in table:
            for seed in (0, 1, 2):
                with self.subTest(medical=medical, size=(H, W, h, w), seed=seed):
                    scale = 255.0 if dtype == torch.uint8 else 1000.0
                    aug = SegmentationAugment(seed, medical=medical, photometric=False)
                    x, y = ramps(3, H, W, dtype, scale), cells(3, h, w)
                    xo, yo = self.check_alignment(aug, x, y, scale)
                    # The crop zooms: the output spans the window's fraction of the rows.
                    frac = 512 / 640 if medical else 0.5
                    span = (xo[:, 0, -1, W // 2].double() - xo[:, 0, 0, W // 2].double()) / scale
                    want = frac * (H - 1) / H
                    self.assertTrue(torch.all((span - want).abs() < 3.0 / H + 2.0 / scale), (span, want))

    def test_crop_position_is_gates(self):
        # GATE's window: rows [top / initial, (top + crop) / initial).
        table = [(False, {"top": 0, "left": 0}, (0.0, 0.0)),
                 (False, {"top": 1024, "left": 512}, (0.5, 0.25)),
                 (True, {"top": 128, "left": 64}, (0.2, 0.1)),
                 (True, {"top": 0, "left": 128}, (0.0, 0.2))]
        H = W = 80
        for medical, p, (fy, fx) in table:
            with self.subTest(medical=medical, p=p):
                aug = SegmentationAugment(0, medical=medical, photometric=False)
                frac = 0.8 if medical else 0.5
                x = ramps(1, H, W, torch.float32, 1000.0)
                y = cells(1, H, W)
                xo, yo = aug.apply(x, y, [dict(p, flip=False)])
                # The middle of the output shows the middle of the window.
                mid_y = bilinear_at(xo[0, 0].double() / 1000.0, 0.5, 0.5)
                mid_x = bilinear_at(xo[0, 1].double() / 1000.0, 0.5, 0.5)
                self.assertAlmostEqual(mid_y, fy + frac / 2, delta=1.0 / H)
                self.assertAlmostEqual(mid_x, fx + frac / 2, delta=1.0 / W)
                # The mask's top-left pixel samples the window's top-left.
                want = int((fy + 0.5 * frac / H) * 8) * 8 + int((fx + 0.5 * frac / W) * 8)
                self.assertEqual(int(yo[0, 0, 0]), want)

    def test_masks_keep_their_labels(self):
        labels = torch.tensor([0, 3, 17, 200])
        for dtype in (torch.uint8, torch.int32, torch.int64):
            for medical in (False, True):
                with self.subTest(dtype=dtype, medical=medical):
                    g = torch.Generator().manual_seed(5)
                    y = labels[torch.randint(0, 4, (4, 23, 31), generator=g)].to(dtype)
                    x = torch.randint(0, 256, (4, 3, 46, 62), generator=g, dtype=torch.uint8)
                    _, yo = SegmentationAugment(7, medical=medical)(x, y)
                    self.assertEqual(yo.dtype, dtype)
                    self.assertTrue(set(yo.unique().tolist()) <= {0, 3, 17, 200})
                    self.assertGreater(len(yo.unique()), 1)


class PhotometricTest(unittest.TestCase):
    def test_draws_follow_gates_ranges_and_coins(self):
        aug = SegmentationAugment(11)
        params = aug.draw(4000)
        ranges = {"brightness": (-32 / 255, 32 / 255), "contrast": (0.5, 1.5),
                  "saturation": (0.5, 1.5), "hue": (-18 / 360, 18 / 360)}
        for key, (lo, hi) in ranges.items():
            vals = [p[key] for p in params if p[key] is not None]
            self.assertTrue(0.46 < len(vals) / 4000 < 0.54, (key, len(vals)))
            self.assertTrue(all(lo <= v <= hi for v in vals), key)
            self.assertLess(min(vals), lo + 0.05 * (hi - lo))
            self.assertGreater(max(vals), hi - 0.05 * (hi - lo))
        flips = sum(p["flip"] for p in params)
        self.assertTrue(0.46 < flips / 4000 < 0.54, flips)
        tops = [p["top"] for p in params]
        self.assertEqual((min(tops), max(tops)), (0, 1024))
        med = SegmentationAugment(11, medical=True).draw(2000)
        self.assertEqual({p["flip"] for p in med}, {False})
        self.assertFalse(any(k in p for p in med for k in ranges))
        self.assertEqual((min(p["left"] for p in med), max(p["left"] for p in med)), (0, 128))

    def test_distortion_values(self):
        N = None
        # (rgb, brightness, contrast, saturation, hue, wrap, expected rgb, tolerance)
        table = [
            ((128, 128, 128), N, N, N, N, True, (128, 128, 128), 0),
            ((128, 128, 128), 0.1, N, N, N, True, (153, 153, 153), 0),  # trunc(153.5)
            ((100, 100, 100), N, 1.5, N, N, True, (150, 150, 150), 1),
            ((250, 250, 250), 0.1, N, N, N, True, (19, 19, 19), 0),  # 275.5 wraps (GATE's .byte())
            ((250, 250, 250), 0.1, N, N, N, False, (255, 255, 255), 0),
            ((10, 10, 10), -0.1, N, N, N, True, (241, 241, 241), 0),  # -15.5 wraps
            ((10, 10, 10), -0.1, N, N, N, False, (0, 0, 0), 0),
            ((200, 50, 50), N, N, 0.5, N, True, (200, 125, 125), 1),
            ((200, 50, 50), N, N, N, 0.05, True, (200, 110, 50), 1),  # +18 degrees of OpenCV's 8-bit hue
            # A hue moved below 0 is put at H + 1 (255 units), not + 180: red turns green in GATE's code.
            ((200, 50, 50), N, N, N, -0.05, True, (50, 200, 60), 1),
            # S 191 * 1.4 = 267.4 wraps to 11 (GATE's .byte()): the colour nearly greys out.
            ((50, 100, 200), N, N, 1.4, N, True, (191, 194, 200), 1),
            ((50, 100, 200), N, N, 1.4, N, False, (0, 67, 200), 1),  # saturated at 255 instead
        ]
        for rgb, b, c, s, hue, wrap, want, tol in table:
            with self.subTest(rgb=rgb, b=b, c=c, s=s, hue=hue, wrap=wrap):
                x = torch.tensor(rgb, dtype=torch.uint8).view(1, 3, 1, 1).expand(1, 3, 2, 2).contiguous()
                out = photometric(x, [{"brightness": b, "contrast": c, "saturation": s, "hue": hue}], wrap)
                self.assertEqual(out.dtype, torch.uint8)
                got = out[0, :, 1, 1].tolist()
                self.assertTrue(all(abs(g - e) <= tol for g, e in zip(got, want)), (got, want))

    def test_hue_wraps_as_gate_or_by_opencvs_period(self):
        # Pure red (H 0) moved by -10 degrees: GATE's +1 wrap (D11) puts it
        # 255 units (510 degrees of OpenCV's 2-degree units) away, a green;
        # mended, it wraps by OpenCV's 180 units to 350 degrees, still red.
        red = torch.tensor([255, 0, 0], dtype=torch.uint8).view(1, 3, 1, 1)
        params = [{"brightness": None, "contrast": None, "saturation": None, "hue": -10 / 360}]
        gate = photometric(red, params, True).flatten().tolist()
        mended = photometric(red, params, False).flatten().tolist()
        self.assertEqual(max(range(3), key=lambda i: mended[i]), 0, mended)
        self.assertGreater(mended[2], mended[1], mended)  # 350 degrees: a little blue
        self.assertNotEqual(max(range(3), key=lambda i: gate[i]), 0, gate)

    def test_hsv_conversions_match_colorsys(self):
        g = torch.Generator().manual_seed(0)
        u = torch.randint(0, 256, (1, 3, 40, 40), generator=g, dtype=torch.int32)
        hsv = rgb_to_hsv(u)
        px = u[0].reshape(3, -1).t().tolist()
        hv = hsv[0].reshape(3, -1).t().tolist()
        for (r, gg, b), (h, s, v) in zip(px, hv):
            rh, rs, rv = colorsys.rgb_to_hsv(r / 255, gg / 255, b / 255)
            dh = abs(h - rh * 180)
            self.assertLessEqual(min(dh, 180 - dh), 0.6)
            self.assertLessEqual(abs(s - rs * 255), 0.6)
            self.assertEqual(v, round(rv * 255))
        back = hsv_to_rgb(hsv)[0].reshape(3, -1).t().tolist()
        for (h, s, v), rgb in zip(hv, back):
            ref = colorsys.hsv_to_rgb(h / 180, s / 255, v / 255)
            # OpenCV truncates: at most one level under the exact value.
            for got, e in zip(rgb, ref):
                self.assertTrue(-1.0001 <= got - e * 255 <= 0.0001, (h, s, v, rgb, ref))
        # Hues of 180 and above wrap round OpenCV's six sectors.
        hi = torch.tensor([[200, 191, 200], [20, 191, 200]], dtype=torch.int32).t().reshape(1, 3, 1, 2)
        out = hsv_to_rgb(hi)
        self.assertTrue(torch.equal(out[..., 0], out[..., 1]))

    def test_grey_images_stay_grey(self):
        aug = SegmentationAugment(4)
        x = torch.randint(0, 256, (6, 1, 20, 20), generator=torch.Generator().manual_seed(3), dtype=torch.uint8)
        y = torch.zeros(6, 20, 20, dtype=torch.uint8)
        xo, _ = aug(x, y)
        self.assertEqual(xo.shape, x.shape)
        rgb = aug.apply(x.expand(6, 3, 20, 20), y, SegmentationAugment(4).draw(6))[0]
        self.assertTrue(torch.equal(rgb[:, 0], rgb[:, 1]) and torch.equal(rgb[:, 0], rgb[:, 2]))
        self.assertTrue(torch.equal(xo[:, 0], rgb[:, 0]))


class SegmentationContractTest(unittest.TestCase):
    def test_reproducible_per_seed(self):
        g = torch.Generator().manual_seed(9)
        x = torch.randint(0, 256, (4, 3, 32, 32), generator=g, dtype=torch.uint8)
        y = torch.randint(0, 6, (4, 8, 8), generator=g, dtype=torch.int64)
        a1, a2, b = SegmentationAugment(1), SegmentationAugment(1), SegmentationAugment(2)
        r1, r2, r3 = a1(x, y), a2(x, y), b(x, y)
        self.assertTrue(torch.equal(r1[0], r2[0]) and torch.equal(r1[1], r2[1]))
        self.assertFalse(torch.equal(r1[0], r3[0]))
        # The stream moves on: a second batch differs from the first.
        self.assertFalse(torch.equal(a1(x, y)[0], r1[0]))
        # A keyed call draws the same whatever came before it.
        k1 = SegmentationAugment(1)(x, y, key=17)
        c = SegmentationAugment(1)
        c(x, y)
        k2 = c(x, y, key=17)
        self.assertTrue(torch.equal(k1[0], k2[0]) and torch.equal(k1[1], k2[1]))
        # getstate / setstate replay the stream.
        d = SegmentationAugment(5)
        st = d.getstate()
        first = d(x, y)
        d.setstate(st)
        self.assertTrue(torch.equal(d(x, y)[0], first[0]))

    def test_shared_draws_one_crop_for_the_batch(self):
        aug = SegmentationAugment(0, medical=True, shared=True)
        params = aug.draw(5)
        self.assertEqual(len({(p["top"], p["left"]) for p in params}), 1)
        x = ramps(1, 30, 30, torch.float32, 1.0).expand(5, 3, 30, 30)
        xo, yo = aug(x, cells(5, 30, 30))
        self.assertTrue(all(torch.equal(xo[0], xo[k]) and torch.equal(yo[0], yo[k]) for k in range(5)))

    def test_shapes_dtypes_devices(self):
        # (medical, x shape, x dtype, y shape, y dtype)
        table = [(False, (2, 3, 24, 40), torch.uint8, (2, 6, 10), torch.uint8),
                 (False, (1, 1, 17, 13), torch.uint8, (1, 17, 13), torch.int64),
                 (False, (3, 3, 32, 32), torch.uint8, (3, 64, 64), torch.int32),
                 (True, (2, 1, 30, 26), torch.float32, (2, 30, 26), torch.uint8),
                 (True, (2, 1, 30, 26), torch.uint8, (2, 15, 13), torch.int64),
                 (False, (0, 3, 8, 8), torch.uint8, (0, 8, 8), torch.uint8)]
        for dev in DEVICES:
            for medical, xs, xd, ys, yd in table:
                with self.subTest(dev=str(dev), medical=medical, x=xs, y=ys):
                    g = torch.Generator().manual_seed(0)
                    x = (torch.rand(xs, generator=g) * 255).to(xd).to(dev)
                    y = torch.randint(0, 5, ys, generator=g).to(yd).to(dev)
                    xo, yo = SegmentationAugment(0, medical=medical)(x, y)
                    self.assertEqual((xo.shape, xo.dtype, xo.device.type), (x.shape, xd, dev.type))
                    self.assertEqual((yo.shape, yo.dtype, yo.device.type), (y.shape, yd, dev.type))
                    if dev.type == "cuda":  # the same draws and nearly the same pixels as on the CPU
                        xc, yc = SegmentationAugment(0, medical=medical)(x.cpu(), y.cpu())
                        self.assertTrue(torch.equal(yo.cpu(), yc))
                        self.assertLessEqual((xo.cpu().double() - xc.double()).abs().max().item(), 1.0)

    def test_refuses_what_gate_does_not_take(self):
        aug = SegmentationAugment(0)
        with self.assertRaises(ValueError):
            aug(torch.zeros(2, 3, 8, 8, dtype=torch.uint8), torch.zeros(2, 1, 8, 8, dtype=torch.uint8))
        with self.assertRaises(ValueError):
            aug(torch.zeros(2, 3, 8, 8), torch.zeros(2, 8, 8, dtype=torch.uint8))  # float for the 8-bit distortion
        with self.assertRaises(ValueError):
            aug(torch.zeros(2, 4, 8, 8, dtype=torch.uint8), torch.zeros(2, 8, 8, dtype=torch.uint8))
        with self.assertRaises(ValueError):
            SegmentationAugment(0, initial_size=100, crop_size=200)


class VideoTest(unittest.TestCase):
    def neutral(self, **kw):
        """No zoom, no colour change, no noise: only the flip and rotation move pixels."""
        args = dict(scale_size=10, crop_size=10, brightness=0.0, contrast=0.0, jitter_strength=0.0)
        args.update(kw)
        return VideoAugment(0, **args)

    def test_flip_then_rotation_move_a_marked_pixel(self):
        S = 9
        r, c = 2, 6
        # (flip, angle) -> where (r, c) lands: the flip first, then torch.rot90 counter-clockwise.
        table = [(False, 0, (r, c)), (True, 0, (r, S - 1 - c)),
                 (False, 90, (S - 1 - c, r)), (False, 180, (S - 1 - r, S - 1 - c)),
                 (False, 270, (c, S - 1 - r)), (True, 90, (c, r))]
        x = torch.zeros(1, 3, 3, S, S, dtype=torch.uint8)
        x[0, :, 1, r, c] = 255
        for flip, angle, want in table:
            with self.subTest(flip=flip, angle=angle):
                aug = self.neutral()
                p = dict(aug.draw(1)[0], flip=flip, angle=angle, top=0, left=0)
                out = aug.apply(x, [p])
                for t in range(3):
                    self.assertEqual(torch.nonzero(out[0, t, 1]).tolist(), [list(want)])
                    self.assertEqual(int(out[0, t, 1][want]), 255)

    def test_one_transform_for_every_frame(self):
        g = torch.Generator().manual_seed(0)
        frame = torch.randint(0, 256, (3, 24, 24), generator=g, dtype=torch.uint8)
        x = frame.expand(4, 8, 3, 24, 24).contiguous()
        out = VideoAugment(3, jitter_strength=0.0)(x)
        for n in range(4):
            for t in range(8):
                self.assertTrue(torch.equal(out[n, t], out[n, 0]))
        self.assertFalse(torch.equal(out[0, 0], out[1, 0]))

    def test_draws_follow_gates_ranges(self):
        params = VideoAugment(5).draw(3000)
        self.assertEqual((min(p["top"] for p in params), max(p["top"] for p in params)), (0, 224))
        self.assertEqual({p["angle"] for p in params}, {0, 90, 180, 270})
        self.assertTrue(all(0 <= p["brightness"] <= 0.2 and 1 <= p["contrast"] <= 1.2 for p in params))
        self.assertTrue(0.46 < sum(p["flip"] for p in params) / 3000 < 0.54)

    def test_brightness_contrast_and_noise(self):
        x = torch.full((1, 2, 3, 32, 32), 128, dtype=torch.uint8)
        aug = VideoAugment(0, jitter_strength=0.0, float_out=True)
        p = dict(aug.draw(1)[0], contrast=1.2, brightness=0.1, angle=0)
        out = aug.apply(x, [p])
        want = (1.2 * (128 / 255 - 0.5) + 0.5 + 0.1) * 255
        self.assertLess((out - want).abs().max().item(), 1e-3)
        self.assertEqual(out.dtype, torch.float32)
        # Noise of std 0.1 (25.5 levels), different for every value, clamped to [0, 255].
        noisy = VideoAugment(0, brightness=0.0, contrast=0.0)(x)
        self.assertTrue(20 < noisy.double().std().item() < 31, noisy.double().std().item())
        self.assertFalse(torch.equal(noisy[0, 0], noisy[0, 1]))
        hi = VideoAugment(0, brightness=0.0, contrast=0.0)(torch.full((1, 2, 3, 16, 16), 250, dtype=torch.uint8))
        self.assertEqual(int(hi.max()), 255)

    def test_zoom_is_gates_window(self):
        # Scale 448 then crop 224 at (top, left): the output spans half the rows, from top / 448.
        H = 64
        x = ramps(1, H, H, torch.float32, 255.0).unsqueeze(1)  # [1, 1, 3, H, W] in [0, 255]
        aug = VideoAugment(0, brightness=0.0, contrast=0.0, jitter_strength=0.0, float_out=True)
        p = dict(aug.draw(1)[0], top=112, left=224, flip=False, angle=0)
        out = aug.apply(x, [p])[0, 0].double() / 255.0
        self.assertAlmostEqual(bilinear_at(out[0], 0.5, 0.5), 112 / 448 + 0.25, delta=1.0 / H)
        self.assertAlmostEqual(bilinear_at(out[1], 0.5, 0.5), 224 / 448 + 0.25, delta=1.0 / H)

    def test_contract(self):
        g = torch.Generator().manual_seed(1)
        x = torch.randint(0, 256, (2, 4, 3, 20, 20), generator=g, dtype=torch.uint8)
        for dev in DEVICES:
            with self.subTest(dev=str(dev)):
                xd = x.to(dev)
                a, b = VideoAugment(7)(xd), VideoAugment(7)(xd)
                self.assertEqual((a.shape, a.dtype, a.device.type), (x.shape, torch.uint8, dev.type))
                self.assertTrue(torch.equal(a, b))
                self.assertFalse(torch.equal(a, VideoAugment(8)(xd)))
                if dev.type == "cuda":
                    self.assertLessEqual((a.cpu().int() - VideoAugment(7)(x).int()).abs().max().item(), 1)
        self.assertTrue(torch.equal(VideoAugment(7)(x, key=3), VideoAugment(7)(x, key=3)))
        out = VideoAugment(7, out_size=(12, 12), float_out=True)(x)
        self.assertEqual((out.shape, out.dtype), ((2, 4, 3, 12, 12), torch.float32))
        with self.assertRaises(ValueError):
            VideoAugment(7, out_size=(12, 16), rotation_angles=[90])(x)
        self.assertEqual(VideoAugment(7)(x[:0]).shape, (0, 4, 3, 20, 20))


if __name__ == "__main__":
    unittest.main()
