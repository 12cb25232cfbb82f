"""GATE's training-time augmentation of video clips, on tensors.

Followed: AntreasAntoniou/GATE at 65192ece (its local mirror's HEAD).

Every video benchmark builds its training set with
gate/data/transforms/video.py, TrainVideoTransform: HMDB51, UCF-101 and
EPIC-Kitchens (gate/data/video/classification/build_gulp_sparsesample.py,
build_gate_dataset: TrainVideoTransform() with its defaults), Kinetics-400
(build_kinetics_400.py) and iWildCam-2022 (gate/data/video/regression/
build_iwildcam_2022.py), both passing the same defaults. Validation and
test use BaseVideoTransform: a resize to 224 x 224 only. The dataset
hands over the clip as float frames [T, C, H, W] in [0, 1] (frames / 255);
no other spatial augmentation runs before (the gulp loader returns the
frames as stored; Kinetics' decord loader decodes at 224 x 224 and its
spatial_sampling_5 crops 224 of 224, unflipped; the GroupMultiScaleCrop
family of gate/data/video/utils/loader/transforms.py is used only by
gulp_sparsesample_squeezed_dataset.py, which no builder uses), and GATE
adds no normalisation after it (SPEC's D7). TrainVideoTransform.__call__,
per clip, in this order, the same for every frame but the noise:

  1. TemporalScale((448, 448)): torchvision Resize((448, 448),
     antialias=True) of every frame (bilinear; aspect ratio not kept).
  2. TemporalCrop((224, 224)): top = random.randint(0, H - 224),
     left = random.randint(0, W - 224) (H = W = 448), one window for all
     frames.
  3. TemporalFlip(0.5): random.random() < 0.5 flips the clip left-right.
  4. TemporalRotation([0, 90, 180, 270]): random.choice(angles), then
     torch.rot90(video, k=angle // 90, dims=[-2, -1]).
  5. TemporalBrightnessContrast(0.2, 0.2): brightness =
     random.uniform(0, 0.2), contrast = random.uniform(1, 1.2);
     contrast * (video - 0.5) + 0.5 + brightness, clamped to [0, 1].
  6. TemporalJitter(0.1): video + torch.randn_like(video) * 0.1, clamped
     to [0, 1]: independent noise for every value of every frame.

GATE's sparse frame sampler also jitters time (utils.sparse_frame_indices
with uniform=False: one random frame per segment, in every split);
gatepipe's store holds fixed frames (its uniform mode), so that part is
not reproducible on stored clips and is not done here.

How the tensor layout changes this (deviations):
  * gatepipe stores the clip's frames already resized (uint8
    [N, T, C, H, W], 224 px at full scale). Steps 1 and 2 are done as one
    resampling of GATE's window in normalised coordinates, rows
    [top / 448, (top + 224) / 448) of the stored frame, to out_size (by
    default the stored H x W, 224 at full scale: GATE's output size), with
    the antialiased bilinear filter GATE's Resize used. From frames stored
    at 448 it is exactly GATE's resize-then-crop; from 224 it upsamples
    the window 2x, as GATE's 448 resize upsampled any source under 448.
  * the noise is drawn from a CPU torch.Generator seeded by the clip's
    draws (device-independent), not torch's global generator.
  * the result is returned in the stored scale, [0, 255]: uint8 rounded
    by default (the noise's sub-level part is lost), or float32 with
    float_out=True (GATE's values times 255 exactly).
"""

import random

import torch

from .segmentation import resample_window, window_taps


def _pair(v):
    return (int(v[0]), int(v[1])) if isinstance(v, (tuple, list)) else (int(v), int(v))


class VideoAugment:
    """GATE's TrainVideoTransform on a batch of clips x [N, T, C, H, W]
    (uint8, or float in [0, 255]); see the module's docstring. Draws come
    per clip from the object's random.Random(seed) in GATE's call order
    (crop top, crop left, flip, angle, brightness, contrast), then a seed
    for the clip's noise; __call__(x, key=k) draws from a generator seeded
    by (seed, k) instead, so a resumed run draws what the uninterrupted
    one did."""

    def __init__(self, seed, scale_size=(448, 448), crop_size=(224, 224), flip_prob=0.5,
                 rotation_angles=(0, 90, 180, 270), brightness=0.2, contrast=0.2, jitter_strength=0.1,
                 out_size=None, float_out=False):
        self.seed = int(seed)
        self.rng = random.Random(self.seed)
        self.scale = _pair(scale_size)
        self.crop = _pair(crop_size)
        if not (0 < self.crop[0] <= self.scale[0] and 0 < self.crop[1] <= self.scale[1]):
            raise ValueError("crop_size %s must fit in scale_size %s" % (self.crop, self.scale))
        self.flip_prob = float(flip_prob)
        self.angles = list(rotation_angles)
        for a in self.angles:
            if a % 90 != 0:
                raise ValueError("rotation angles are multiples of 90 (torch.rot90), not %r" % a)
        self.brightness = float(brightness)
        self.contrast = float(contrast)
        self.jitter = float(jitter_strength)
        self.out_size = _pair(out_size) if out_size is not None else None
        self.float_out = bool(float_out)

    def getstate(self):
        return self.rng.getstate()

    def setstate(self, state):
        self.rng.setstate(state)

    def draw_one(self, rng):
        """One clip's draws, in TrainVideoTransform's call order."""
        return {"top": rng.randint(0, self.scale[0] - self.crop[0]),  # TemporalCrop
                "left": rng.randint(0, self.scale[1] - self.crop[1]),
                "flip": rng.random() < self.flip_prob,  # TemporalFlip
                "angle": rng.choice(self.angles),  # TemporalRotation
                "brightness": rng.uniform(0, self.brightness),  # TemporalBrightnessContrast
                "contrast": rng.uniform(1, 1 + self.contrast),
                "noise_seed": rng.getrandbits(63)}  # TemporalJitter (gatepipe's generator)

    def draw(self, n, key=None):
        rng = self.rng if key is None else random.Random("gatepipe-video:%d:%s" % (self.seed, key))
        return [self.draw_one(rng) for _ in range(n)]

    def __call__(self, x, key=None):
        return self.apply(x, self.draw(x.shape[0], key))

    def apply(self, x, params):
        """x augmented with the given draws."""
        if x.dim() != 5:
            raise ValueError("VideoAugment takes clips [N, T, C, H, W], not %s" % list(x.shape))
        n, t, c, h, w = x.shape
        oh, ow = self.out_size or (h, w)
        if oh != ow and any((p["angle"] // 90) % 2 for p in params):
            raise ValueError("a 90-degree rotation of %dx%d frames changes their shape" % (oh, ow))
        out_dtype = torch.float32 if self.float_out or x.dtype.is_floating_point else x.dtype
        if n == 0:
            return x.new_zeros((0, t, c, oh, ow), dtype=out_dtype)
        dev = x.device
        sh, sw = self.scale
        fh, fw = self.crop[0] / sh, self.crop[1] / sw
        # Every frame of a clip shares its clip's window: rows and columns
        # per clip, repeated over its T frames.
        tops = [p["top"] / sh for p in params for _ in range(t)]
        lefts = [p["left"] / sw for p in params for _ in range(t)]
        flips = [bool(p["flip"]) for p in params for _ in range(t)]
        rows = window_taps(h, oh, tops, fh, "bilinear")
        cols = window_taps(w, ow, lefts, fw, "bilinear", reverse=flips)  # TemporalFlip after the crop
        v = x.reshape(n * t, c, h, w).to(torch.float32) / 255.0  # the loaders' frames / 255
        v = resample_window(v, rows, cols, "bilinear").view(n, t, c, oh, ow)  # TemporalScale + TemporalCrop
        clips = []
        for i, p in enumerate(params):
            clip = v[i]
            k = (p["angle"] // 90) % 4
            if k:
                clip = torch.rot90(clip, k=k, dims=[-2, -1])  # TemporalRotation
            # TemporalBrightnessContrast, GATE's expression as written
            clip = torch.clamp(p["contrast"] * (clip - 0.5) + 0.5 + p["brightness"], 0, 1)
            if self.jitter:
                g = torch.Generator().manual_seed(p["noise_seed"])
                noise = torch.randn(clip.shape, generator=g, dtype=torch.float32).to(dev)
                clip = torch.clamp(clip + noise * self.jitter, 0, 1)  # TemporalJitter
            clips.append(clip)
        out = torch.stack(clips) * 255.0
        if out_dtype.is_floating_point:
            return out.to(out_dtype)
        return out.round().clamp(0, 255).to(out_dtype)
