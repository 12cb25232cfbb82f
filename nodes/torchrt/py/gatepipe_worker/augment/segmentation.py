"""GATE's training-time augmentations of segmentation batches, on tensors.

Followed: AntreasAntoniou/GATE at 65192ece (its local mirror's HEAD).

Semantic segmentation (ADE20K, Cityscapes, COCO-10K/164K, NYU-Depth-v2,
Pascal-Context: gate/data/image/segmentation/*.py, build_gate_dataset)
runs at train time, per example, in this order:

  1. gate/data/transforms/segmentation.py, KeySelectorTransforms.__call__:
     the image resized to initial_size = 2048 x 2048 (bicubic, PIL), the
     mask to 2048 x 2048 (NEAREST_EXACT), the aspect ratio not kept.
  2. BaseDatasetTransforms.__call__ (input_size 1024, target_size 256,
     crop_size 1024, flip_probability 0.5, use_photo_metric_distortion):
     a. grey images converted to RGB (is_grayscale, grayscale_to_rgb);
     b. DualImageRandomCrop(1024): top = random.randint(0, 2048 - 1024),
        left = random.randint(0, 2048 - 1024), the same window of image
        and mask (never padded: the crop always fits);
     c. DualImageRandomFlip(p=0.5): random.random() < 0.5 flips image and
        mask left-right;
     d. PhotoMetricDistortion() on the image only (below);
     e. the image resized to 1024 (a no-op after the crop), the mask to
        256 (NEAREST_EXACT).
  Validation and test use BaseDatasetTransforms with no crop, flip or
  distortion: the whole 2048 image resized to 1024. Training thus sees a
  2x zoom of a random quarter of the image.

PhotoMetricDistortion.__call__ (brightness_delta 32, contrast (0.5, 1.5),
saturation (0.5, 1.5), hue_delta 18), on ToTensor's float image in [0, 1]:
  if random.randint(0, 1): img + uniform(-32/255, 32/255)      (no clamp)
  if random.randint(0, 1): img * uniform(0.5, 1.5)              (no clamp)
  _convert_to_hsv: (img * 255).byte() -> cv2.COLOR_RGB2HSV (8-bit: H in
      [0, 180), S, V in [0, 255]) -> / 255
  if random.randint(0, 1): S *= uniform(0.5, 1.5)               (no clamp)
  if random.randint(0, 1): H += uniform(-18/360, 18/360); H > 1: -1; H < 0: +1
  _convert_to_rgb: (hsv * 255).byte() -> cv2.COLOR_HSV2RGB -> / 255
  clamp(0, 1); then BaseDatasetTransforms' ToPILImage: (img * 255).byte()
Tensor.byte() on the CPU (where GATE's data workers ran it) truncates and
wraps modulo 256: a brightened or contrasted value above 1 comes back dark,
one below 0 bright, a saturation above 1 wraps too, and a hue moved below 0
is put at H + 1 (255 units), not H + 180 units (OpenCV's hue period), so
it lands about 150 degrees away. This module does the same (byte_wrap=True,
the default); byte_wrap=False saturates each cast instead, the clamp GATE
meant. The HSV conversions are OpenCV's 8-bit ones (modules/imgproc/src/
color_hsv.simd.hpp, RGB2HSV_b: fixed-point tables, and HSV2RGB_b's SIMD
path, which truncates), reproduced in integer and float32 tensor arithmetic.

Medical segmentation, ACDC (gate/data/medical/segmentation/
automated_cardiac_diagnosis.py, build_gate_dataset and DatasetTransforms):
train_transforms = DatasetTransforms(512, 256, initial_size=640,
crop_size=512), without photometric_config, so at train time:
  1. every slice of the patient's volume resized to 640 x 640 (torch
     bicubic, antialias), the masks to 640 (NEAREST_EXACT);
  2. DualImageRandomCrop(512): one top, left = randint(0, 128) for all the
     volume's slices (the crop is one call on the [slices, 1, H, W] stack);
  3. image resized to 512 (a no-op), masks to 256 (NEAREST_EXACT);
  4. then convert_to_b3hw and patient_normalization (min-max over the
     cropped volume: preprocessing, not done here).
MedicalImageSegmentationTransforms (random 90-degree rotations, a flip,
MedicalPhotoMetricDistortion) is built only with a photometric_config,
which build_gate_dataset never passes (and DatasetTransforms.__call__
would assign its (img, mask) tuple to the image, so it cannot have run for
ACDC): GATE's ACDC training applies the random crop only. Evaluation uses
initial_size=512 with the 512 crop: the whole slice.

How the tensor layout changes this (deviations):
  * gatepipe stores images already resized (uint8 [N, C, H, W], ACDC's
    float slices [N, 1, H, W]) and masks [N, h, w], maybe of another size,
    and this module must return them at their own sizes. So the crop is
    taken as GATE's window in normalised coordinates: rows
    [top / initial, (top + crop) / initial) of the stored image, resampled
    to H x W, and the same window of the mask, sampled to h x w. For an
    image stored at 1024 this is GATE's composite of the 2048 resize and
    the 1024 crop (a 512-pixel window upsampled 2x) with its crop
    positions; the image's taps outside the window are read as GATE's
    resize read them before the crop.
  * the image is resampled with PIL's / torch's antialiased filter
    (bicubic, a = -0.5, weights normalised over the taps inside the
    image: PIL's ImagingResample and torch's _upsample_bicubic2d_aa, the
    filters GATE's resizes used), in float, rounded once at the end; PIL
    rounds its 8-bit passes in fixed point.
  * masks are sampled nearest at the centres of the output pixels (the
    NEAREST_EXACT rule), so labels are never interpolated. GATE's chain of
    two NEAREST_EXACT resizes (2048 then 256) samples 1/8 of a label pixel
    off the centre; this module samples at the centre.
  * the flip comes after the crop, as in GATE; it is folded into the
    resampling (the window's columns read in reverse), which is the same.
  * a grey (C = 1) image goes through the distortion as GATE's converted
    RGB image would (R = G = B, so saturation and hue do nothing) and
    comes back with one channel.
  * draws: per example, in GATE's call order (crop top, crop left, flip,
    then the distortion's flags and values), from a random.Random the
    object owns; shared=True draws once for the whole batch, as GATE's ACDC
    crop is one for a volume's slices when a batch is one volume.
"""

import math
import random

import torch

# ---- resampling a window ---------------------------------------------------


def _bicubic(t, a=-0.5):
    """PIL's bicubic_filter (and torch's antialiased bicubic), a = -0.5."""
    t = t.abs()
    near = ((a + 2.0) * t - (a + 3.0)) * t * t + 1.0
    far = (((t - 5.0) * t + 8.0) * t - 4.0) * a
    return torch.where(t < 1.0, near, torch.where(t < 2.0, far, torch.zeros_like(t)))


def _bilinear(t):
    """PIL's bilinear_filter (torch's antialiased bilinear): a triangle."""
    return (1.0 - t.abs()).clamp(min=0.0)


KERNELS = {"bicubic": (_bicubic, 2.0), "bilinear": (_bilinear, 1.0)}


def window_taps(length, out, starts, span, kernel, reverse=None):
    """The source pixels and weights that sample out pixels from a window
    of each sample's axis of length pixels: window [starts[n],
    starts[n] + span) in fractions of the axis, as PIL's precompute_coeffs
    (and torch's antialiased interpolate) compute them for a resize of the
    window to out pixels: centre = start + (i + 0.5) * scale, the filter
    stretched by the scale when shrinking, taps from
    int(centre - support + 0.5) to int(centre + support + 0.5) inside the
    axis, weights normalised to sum to one. reverse[n] reads sample n's
    output in reverse order (a flip after the crop). Returns idx (int64)
    and weights (float64), each [N, out, K], on the CPU, computed in
    float64 from the draws alone (the same on every device)."""
    fn, support = KERNELS[kernel]
    starts = torch.as_tensor(starts, dtype=torch.float64).reshape(-1, 1) * length
    scale = span * length / out  # input pixels per output pixel
    fscale = max(scale, 1.0)
    sup = support * fscale
    centre = starts + (torch.arange(out, dtype=torch.float64) + 0.5) * scale  # [N, out]
    lo = torch.floor(centre - sup + 0.5).clamp(min=0)
    hi = torch.floor(centre + sup + 0.5).clamp(max=length)
    k = int(math.ceil(2 * sup)) + 1  # PIL's ksize
    j = lo.unsqueeze(-1) + torch.arange(k, dtype=torch.float64)  # [N, out, K]
    w = fn((j - centre.unsqueeze(-1) + 0.5) / fscale) * (j < hi.unsqueeze(-1))
    w = w / w.sum(-1, keepdim=True).clamp(min=1e-300)
    idx = j.clamp(max=length - 1).long()
    if reverse is not None:
        rev = torch.as_tensor(reverse, dtype=torch.bool).view(-1, 1, 1)
        idx = torch.where(rev, idx.flip(1), idx)
        w = torch.where(rev, w.flip(1), w)
    return idx, w


def resample_window(x, rows, cols, kernel="bicubic"):
    """x (float [N, C, H, W]) resampled through rows and cols
    (window_taps of its H and W): [N, C, out_h, out_w], columns first (as
    PIL's horizontal pass), then rows."""
    n, c, h, w = x.shape
    ridx, rw = rows
    cidx, cw = cols
    oh, ow = ridx.shape[1], cidx.shape[1]
    dev = x.device
    cidx, cw = cidx.to(dev), cw.to(dev, torch.float32)
    ridx, rw = ridx.to(dev), rw.to(dev, torch.float32)
    t = None
    for k in range(cidx.shape[2]):
        g = x.gather(3, cidx[:, :, k].view(n, 1, 1, ow).expand(n, c, h, ow))
        g = g * cw[:, :, k].view(n, 1, 1, ow)
        t = g if t is None else t.add_(g)
    out = None
    for k in range(ridx.shape[2]):
        g = t.gather(2, ridx[:, :, k].view(n, 1, oh, 1).expand(n, c, oh, ow))
        g = g * rw[:, :, k].view(n, 1, oh, 1)
        out = g if out is None else out.add_(g)
    return out


def nearest_index(length, out, starts, span, reverse=None):
    """NEAREST_EXACT through a window: source pixel
    floor(start + (i + 0.5) * scale) of each output pixel i (int64
    [N, out], on the CPU), reversed where reverse is set."""
    starts = torch.as_tensor(starts, dtype=torch.float64).reshape(-1, 1) * length
    scale = span * length / out
    idx = torch.floor(starts + (torch.arange(out, dtype=torch.float64) + 0.5) * scale)
    idx = idx.clamp(0, length - 1).long()
    if reverse is not None:
        rev = torch.as_tensor(reverse, dtype=torch.bool).view(-1, 1)
        idx = torch.where(rev, idx.flip(1), idx)
    return idx


def sample_masks(y, ys, xs):
    """Masks y [N, h, w] at rows ys [N, oh] and columns xs [N, ow]."""
    n, h, w = y.shape
    ys, xs = ys.to(y.device), xs.to(y.device)
    r = y.gather(1, ys.view(n, -1, 1).expand(n, ys.shape[1], w))
    return r.gather(2, xs.view(n, 1, -1).expand(n, ys.shape[1], xs.shape[1]))


def to_dtype(x, dtype):
    """Float x as dtype: integer types rounded and clipped to their range."""
    if dtype.is_floating_point:
        return x.to(dtype)
    info = torch.iinfo(dtype)
    return x.round().clamp(info.min, info.max).to(dtype)


# ---- GATE's PhotoMetricDistortion ---------------------------------------------

# OpenCV's RGB2HSV_b tables (hsv_shift 12): saturate_cast<int> of
# (255 << 12) / i and (180 << 12) / (6 i); no value is a tie.
_SDIV = [0] + [int(round((255 << 12) / float(i))) for i in range(1, 256)]
_HDIV = [0] + [int(round((180 << 12) / (6.0 * i))) for i in range(1, 256)]


def to_byte(t, wrap=True):
    """Tensor.byte() of float t as GATE's CPU data workers ran it:
    truncated towards zero and wrapped modulo 256 (wrap), or saturated to
    [0, 255] (not wrap). Returned as int32."""
    t = torch.trunc(t)
    t = torch.remainder(t, 256.0) if wrap else t.clamp(0.0, 255.0)
    return t.to(torch.int32)


def rgb_to_hsv(u):
    """cv2.cvtColor(COLOR_RGB2HSV) of 8-bit RGB u (int [N, 3, H, W]):
    RGB2HSV_b's fixed-point arithmetic. H in [0, 180), S, V in [0, 255]."""
    u = u.to(torch.int32)
    r, g, b = u[:, 0], u[:, 1], u[:, 2]
    v = torch.maximum(torch.maximum(r, g), b)
    vmin = torch.minimum(torch.minimum(r, g), b)
    diff = v - vmin
    sdiv = torch.tensor(_SDIV, dtype=torch.int32, device=u.device)
    hdiv = torch.tensor(_HDIV, dtype=torch.int32, device=u.device)
    s = torch.div(diff * sdiv[v.long()] + 2048, 4096, rounding_mode="floor")
    h = torch.where(v == r, g - b, torch.where(v == g, b - r + 2 * diff, r - g + 4 * diff))
    h = torch.div(h * hdiv[diff.long()] + 2048, 4096, rounding_mode="floor")
    h = torch.where(h < 0, h + 180, h)
    return torch.stack([h, s, v], 1)


def hsv_to_rgb(u):
    """cv2.cvtColor(COLOR_HSV2RGB) of 8-bit HSV u (int [N, 3, H, W]):
    HSV2RGB_b's SIMD path in float32 (hscale 6/180, S and V times 1/255,
    the sector by truncation, the result times 255 truncated), which
    OpenCV takes for all but a row's last few pixels. H of 180 and above
    wraps round the six sectors. Returns int32 RGB."""
    f32 = dict(dtype=torch.float32, device=u.device)
    c0 = torch.tensor(1.0 / 255.0, **f32)
    hscale = torch.tensor(6.0 / 180.0, **f32)
    sixth = torch.tensor(1.0 / 6.0, **f32)
    h = u[:, 0].to(torch.float32) * hscale
    s = u[:, 1].to(torch.float32) * c0
    v = u[:, 2].to(torch.float32) * c0
    pre = torch.trunc(h)
    h = h - pre
    one = torch.ones((), **f32)
    tab0 = v
    tab1 = v * (one - s)
    tab2 = v * (one - s * h)
    tab3 = v * (one - s * (one - h))
    sector = pre - torch.trunc(pre * sixth) * 6.0
    bb = torch.where(sector < 2, tab1, torch.where(sector == 2, tab3, torch.where(sector <= 4, tab0, tab2)))
    gg = torch.where(sector < 1, tab3, torch.where(sector <= 2, tab0, torch.where(sector == 3, tab2, tab1)))
    rr = torch.where(sector < 1, tab0, torch.where(sector == 1, tab2, torch.where(sector <= 3, tab1,
                                                                                   torch.where(sector == 4, tab3, tab0))))
    out = torch.stack([rr, gg, bb], 1) * torch.tensor(255.0, **f32)
    return torch.trunc(out).clamp(0.0, 255.0).to(torch.int32)


def photometric(x, params, wrap=True):
    """gate/data/transforms/segmentation.py, PhotoMetricDistortion.__call__
    and the ToPILImage after it, on uint8 RGB x [N, 3, H, W] with each
    sample's draws (params[n]: "brightness", "contrast", "saturation",
    "hue", each None where its coin said no). A step not drawn is applied
    as its identity (+ 0, * 1), which leaves float32 values unchanged.
    Returns uint8."""
    n = x.shape[0]
    dev = x.device

    def col(key, neutral):
        vals = [neutral if p.get(key) is None else p[key] for p in params]
        return torch.tensor(vals, dtype=torch.float32, device=dev).view(n, 1, 1, 1)

    img = x.to(torch.float32).div(255)  # T.ToTensor
    img = img + col("brightness", 0.0)  # _apply_brightness
    img = img * col("contrast", 1.0)  # _apply_contrast
    hsv = rgb_to_hsv(to_byte(img * 255, wrap)).to(torch.float32) / 255.0  # _convert_to_hsv
    sat = hsv[:, 1:2] * col("saturation", 1.0)  # _apply_saturation
    hue = hsv[:, 0:1] + col("hue", 0.0)  # _apply_hue
    # GATE wraps a hue by 1 (255 units, D11); mended, by OpenCV's period
    # (180 of 255 units).
    period = 1.0 if wrap else 180.0 / 255.0
    hue = torch.where(hue > period, hue - period, hue)
    hue = torch.where(hue < 0, hue + period, hue)
    hsv = torch.cat([hue, sat, hsv[:, 2:3]], 1)
    rgb = hsv_to_rgb(to_byte(hsv * 255, wrap)).to(torch.float32) / 255.0  # _convert_to_rgb
    rgb = rgb.clamp(0, 1)
    return to_byte(rgb * 255, wrap).to(torch.uint8)  # T.ToPILImage: pic.mul(255).byte()


# ---- the augmentation -------------------------------------------------------


def _pair(v):
    return (int(v[0]), int(v[1])) if isinstance(v, (tuple, list)) else (int(v), int(v))


class SegmentationAugment:
    """GATE's training augmentation of a segmentation batch (see the
    module's docstring): semantic (medical=False) the random crop of a
    crop_size window of the initial_size resize (1024 of 2048), the flip
    (p 0.5) and PhotoMetricDistortion; medical (ACDC) the crop only (512
    of 640). __call__(x, y) takes images x [N, C, H, W] (uint8, or float
    for ACDC's slices) and integer masks y [N, h, w] and returns them
    augmented, each of its own shape, dtype and device.

    Draws come from the object's random.Random(seed), per example in GATE's
    order, on the CPU; __call__(x, y, key=k) draws instead from a
    generator seeded by (seed, k) (e.g. the iteration), so a resumed run
    draws what the uninterrupted one did."""

    def __init__(self, seed, medical=False, initial_size=None, crop_size=None, flip_prob=None,
                 photometric=None, shared=False, byte_wrap=True, brightness_delta=32,
                 contrast_range=(0.5, 1.5), saturation_range=(0.5, 1.5), hue_delta=18):
        self.seed = int(seed)
        self.rng = random.Random(self.seed)
        self.medical = bool(medical)
        self.initial = _pair(initial_size if initial_size is not None else (640 if medical else 2048))
        self.crop = _pair(crop_size if crop_size is not None else (512 if medical else 1024))
        if not (0 < self.crop[0] <= self.initial[0] and 0 < self.crop[1] <= self.initial[1]):
            raise ValueError("crop_size %s must fit in initial_size %s" % (self.crop, self.initial))
        self.flip_prob = flip_prob if flip_prob is not None else (None if medical else 0.5)
        self.photometric = (not medical) if photometric is None else bool(photometric)
        self.shared = bool(shared)
        self.byte_wrap = bool(byte_wrap)
        # PhotoMetricDistortion.__init__'s ranges.
        self.brightness_delta = brightness_delta / 255.0
        self.contrast_range = tuple(contrast_range)
        self.saturation_range = tuple(saturation_range)
        self.hue_delta = hue_delta / 360.0

    def getstate(self):
        return self.rng.getstate()

    def setstate(self, state):
        self.rng.setstate(state)

    def draw_one(self, rng):
        """One example's draws, in GATE's call order."""
        p = {"top": rng.randint(0, self.initial[0] - self.crop[0]),  # DualImageRandomCrop
             "left": rng.randint(0, self.initial[1] - self.crop[1]),
             "flip": False}
        if self.flip_prob is not None:
            p["flip"] = rng.random() < self.flip_prob  # DualImageRandomFlip
        if self.photometric:  # PhotoMetricDistortion.__call__
            d = self.brightness_delta
            p["brightness"] = rng.uniform(-d, d) if rng.randint(0, 1) else None
            p["contrast"] = rng.uniform(*self.contrast_range) if rng.randint(0, 1) else None
            p["saturation"] = rng.uniform(*self.saturation_range) if rng.randint(0, 1) else None
            p["hue"] = rng.uniform(-self.hue_delta, self.hue_delta) if rng.randint(0, 1) else None
        return p

    def draw(self, n, key=None):
        """The draws of a batch of n examples (a list of dicts)."""
        rng = self.rng if key is None else random.Random("gatepipe-segmentation:%d:%s" % (self.seed, key))
        if self.shared:
            return [self.draw_one(rng)] * n
        return [self.draw_one(rng) for _ in range(n)]

    def __call__(self, x, y, key=None):
        return self.apply(x, y, self.draw(x.shape[0], key))

    def apply(self, x, y, params):
        """x and y augmented with the given draws."""
        if x.dim() != 4 or y.dim() != 3 or x.shape[0] != y.shape[0]:
            raise ValueError("SegmentationAugment takes images [N, C, H, W] and masks [N, h, w], not %s and %s"
                             % (list(x.shape), list(y.shape)))
        n, c, h, w = x.shape
        if n == 0:
            return x, y
        ih, iw = self.initial
        fh, fw = self.crop[0] / ih, self.crop[1] / iw
        tops = [p["top"] / ih for p in params]
        lefts = [p["left"] / iw for p in params]
        flips = [bool(p["flip"]) for p in params]
        # The crop (and the flip after it) as GATE's window, on each tensor's own grid.
        rows = window_taps(h, h, tops, fh, "bicubic")
        cols = window_taps(w, w, lefts, fw, "bicubic", reverse=flips)
        xo = to_dtype(resample_window(x.to(torch.float32), rows, cols), x.dtype)
        mh, mw = y.shape[1], y.shape[2]
        yo = sample_masks(y, nearest_index(mh, mh, tops, fh), nearest_index(mw, mw, lefts, fw, reverse=flips))
        if self.photometric:
            if x.dtype != torch.uint8:
                raise ValueError("PhotoMetricDistortion works on 8-bit images; these are %s" % x.dtype)
            if c == 3:
                xo = photometric(xo, params, self.byte_wrap)
            elif c == 1:  # grayscale_to_rgb, then R = G = B throughout
                xo = photometric(xo.expand(n, 3, h, w), params, self.byte_wrap)[:, :1]
            else:
                raise ValueError("PhotoMetricDistortion takes RGB or grey images, not %d channels" % c)
        return xo.contiguous(), yo.contiguous()
