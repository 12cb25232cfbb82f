"""timm's RandAugment on uint8 image tensors, as GATE's training used it.

GATE (gate/data/image/classification/imagenet1k.py, StandardAugmentations)
builds ``rand_augment_transform("rand-m9-n3-mstd0.5-inc1", hparams={})``
and applies it to each training image as a PIL RGB image (grey images are
converted to RGB first), before the model's own resize/normalise
transforms. This module does the same to a batch of uint8 tensors
[N, C, H, W] on any device.

Followed:
  timm  huggingface/pytorch-image-models, commit
        aa4b5850c1543fa488abf260f18390eda46cf85d (version 1.0.29.dev0),
        file timm/data/auto_augment.py. The RandAugment part of that file
        last changed in e3b2f5be (Dec 2022, the 'p' key and min() clamps of
        Solarize/SolarizeAdd levels); GATE's requirements do not pin timm.
  PIL   python-pillow/Pillow, commit 4e5f09f533dbd0d87d39951f48b62f4d1a421cba:
        src/PIL/ImageOps.py, ImageEnhance.py, Image.py (rotate, transform)
        and src/libImaging/Geometry.c, Blend.c, Filter.c, Convert.c; the
        tests compare against the installed Pillow (9.4).

What timm does with the GATE spec (and what this module does):
  * ops: the 'increasing' set (inc1), 15 ops, picked n=3 times per image
    uniformly WITH replacement (np.random.choice(..., replace=True)).
  * each picked op runs with probability p=0.5 (``random.random() > p``
    skips it), then draws its magnitude from gauss(m=9, mstd=0.5) on every
    call (mstd > 0; mstd > 100 means uniform(0, m)), clipped to
    [0, mmax or 10], then maps it to the op's argument (level_to_args
    below; signed ops negate with probability 1/2), then the geometric ops
    pick bilinear or bicubic with probability 1/2 each.
    The op table at m=9 (before the noise): Rotate +-27 deg, ShearX/Y
    +-0.27, TranslateX/YRel +-0.405 of the width/height, PosterizeIncreasing
    keeps 1 bit, SolarizeIncreasing threshold 26, SolarizeAdd +99 below
    128, Color/Contrast/Brightness/SharpnessIncreasing factor 1.81 or 0.19,
    AutoContrast, Equalize, Invert.
  * hparams={} means: fill colour (128, 128, 128), translate_pct 0.45,
    random interpolation (bilinear, bicubic).

Randomness: every draw comes from a ``random.Random(seed)`` owned by the
RandAugment object, in timm's order per op (apply?, magnitude, sign,
interpolation), after the n op choices of the image; images are drawn in
batch order. timm draws from Python's global ``random`` and numpy's global
RNG, so the individual draws differ from a timm run; their distribution is
the same. Nothing is drawn on the device and every op is deterministic,
so a seed is meant to give the same output on CPU and CUDA (a test checks
it where CUDA exists). For that the ops avoid torch's divide-by-scalar,
which CUDA computes as a multiply by the reciprocal.

Batches: __call__ draws every image's ops first, then applies them layer
by layer to the whole batch (randaugment_batch.py): the k-th op of all
images at once, grouped by kernel with per-image arguments as tensors.
That gives the pixels of augment() on each image, bit for bit (the tests
compare the two), in about 600 device ops for a batch of 64 instead of
about 6000. The single-image ops below are the batch kernels with one
image.

Exactness: every op reproduces Pillow's integer results (LUTs, 8-bit
blends, the SMOOTH filter, the affine samplers with their pixel-centre
convention, edge clamping, whole-pixel fill outside the source and
truncating casts), with float32 where Pillow's C code uses float and
float64 where it uses double, and the same operation order. The tests find
them equal to the installed Pillow on random images, bit for bit. Places
where a bit could still differ from some Pillow build:
  * Blend.c computes ``in1 + alpha * (in2 - in1)`` in float32 and
    truncates; a Pillow compiled with fused multiply-add contraction (e.g.
    an aarch64 build) can differ by 1 where the product lands within an
    ulp of an integer.
  * Geometry.c's bilinear/bicubic samplers truncate a double; the same
    FMA caveat applies (1 level, rarely).
Grey images (C = 1): GATE never feeds them to timm (it converts to RGB,
and PIL's transform would reject the RGB fill colour on an 'L' image).
Here the ops run on the single channel as on an 'L' image: Color is the
identity (PIL's Color of an 'L' image blends it with itself), Contrast
uses the channel's own mean, the affine fill is 128.
"""
import math
import random
import re
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import torch

from . import randaugment_batch as batch

TIMM_COMMIT = "aa4b5850c1543fa488abf260f18390eda46cf85d"
TIMM_FILE = "timm/data/auto_augment.py"
PILLOW_COMMIT = "4e5f09f533dbd0d87d39951f48b62f4d1a421cba"

LEVEL_DENOM = 10.0  # timm _LEVEL_DENOM: magnitude m maps to level m / 10
FILL = batch.FILL  # timm _FILL = (128, 128, 128), used since hparams has no img_mean
TRANSLATE_PCT = 0.45  # timm hparams.get('translate_pct', 0.45)
BILINEAR = batch.BILINEAR
BICUBIC = batch.BICUBIC
RANDOM_INTERPOLATION = batch.RANDOM_INTERPOLATION  # timm _RANDOM_INTERPOLATION

# timm _RAND_TRANSFORMS and _RAND_INCREASING_TRANSFORMS, in timm's order.
RAND_TRANSFORMS = (
    "AutoContrast", "Equalize", "Invert", "Rotate", "Posterize", "Solarize",
    "SolarizeAdd", "Color", "Contrast", "Brightness", "Sharpness",
    "ShearX", "ShearY", "TranslateXRel", "TranslateYRel",
)
RAND_INCREASING_TRANSFORMS = (
    "AutoContrast", "Equalize", "Invert", "Rotate", "PosterizeIncreasing",
    "SolarizeIncreasing", "SolarizeAdd", "ColorIncreasing",
    "ContrastIncreasing", "BrightnessIncreasing", "SharpnessIncreasing",
    "ShearX", "ShearY", "TranslateXRel", "TranslateYRel",
)
GEOMETRIC = batch.GEOMETRIC
rotate_matrix = batch.rotate_matrix  # Image.rotate's inverse affine matrix


# ---------------------------------------------------------------- the spec

@dataclass(frozen=True)
class Config:
    """A parsed RandAugment spec (timm's rand_augment_transform defaults)."""

    magnitude: int = 10
    num_layers: int = 2
    prob: float = 0.5
    magnitude_std: float = 0.0
    magnitude_max: Optional[int] = None
    increasing: bool = False

    @property
    def ops(self) -> Tuple[str, ...]:
        return RAND_INCREASING_TRANSFORMS if self.increasing else RAND_TRANSFORMS

    @property
    def upper_bound(self) -> float:
        # timm: `self.magnitude_max or _LEVEL_DENOM` (so mmax0 means 10)
        return self.magnitude_max or LEVEL_DENOM


_INT = re.compile(r"\d+\Z")
_FLOAT = re.compile(r"(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\Z")


def parse(spec: str) -> Config:
    """Parse a timm RandAugment spec such as "rand-m9-n3-mstd0.5-inc1".

    Sections after "rand" (any order): m<int> magnitude, n<int> ops per
    image, p<float> probability of each op, mstd<float> magnitude std (> 100
    means uniform sampling), mmax<int> magnitude upper bound, inc1 the
    increasing op set. Stricter than timm, which silently skips sections
    without a digit, lets a repeated key win first (mstd, mmax) or last
    (m, n, p), and turns ``inc0`` ON (``bool("0")`` is True): these raise
    ValueError here, as do unknown keys, 't' transform sets (weighted or 3a
    sets are not implemented) and non-numeric values.
    """
    if not isinstance(spec, str):
        raise ValueError(f"RandAugment spec must be a string, got {type(spec).__name__}")
    parts = spec.split("-")
    if parts[0] != "rand":
        raise ValueError(f"RandAugment spec {spec!r} must start with 'rand'")
    values = {}
    for section in parts[1:]:
        if section.startswith("t"):
            raise ValueError(f"RandAugment spec {spec!r}: transform set section {section!r} is not supported")
        match = re.fullmatch(r"(\D*)(\d.*)", section)  # timm: re.split(r'(\d.*)', c)
        if match is None:
            raise ValueError(f"RandAugment spec {spec!r}: section {section!r} has no numeric value")
        key, val = match.groups()
        if key not in ("m", "n", "p", "mstd", "mmax", "inc"):
            raise ValueError(f"RandAugment spec {spec!r}: unknown section {section!r}")
        if key in values:
            raise ValueError(f"RandAugment spec {spec!r}: key {key!r} given twice")
        pattern = _FLOAT if key in ("p", "mstd") else _INT
        if not pattern.match(val):
            raise ValueError(f"RandAugment spec {spec!r}: bad value {val!r} for {key!r}")
        values[key] = val
    inc = values.get("inc")
    if inc is not None and int(inc) != 1:
        raise ValueError(
            f"RandAugment spec {spec!r}: write inc1 or leave it out (timm treats any inc<digits>, even inc0, as inc1)")
    mstd = float(values.get("mstd", 0.0))
    if mstd > 100:
        mstd = math.inf  # timm: uniform sampling in [0, m]
    return Config(
        magnitude=int(values.get("m", 10)),
        num_layers=int(values.get("n", 2)),
        prob=float(values.get("p", 0.5)),
        magnitude_std=mstd,
        magnitude_max=int(values["mmax"]) if "mmax" in values else None,
        increasing=inc is not None,
    )


# ---------------------------------------------- magnitude -> op arguments

def _randomly_negate(v, rng: random.Random):
    return -v if rng.random() > 0.5 else v


def level_to_args(name: str, level: float, rng: random.Random) -> tuple:
    """timm's LEVEL_TO_ARG[name](level, hparams) with its float expressions.

    Signed ops draw their sign from ``rng`` as timm's _randomly_negate does.
    """
    if name in ("AutoContrast", "Equalize", "Invert"):
        return ()
    if name == "Rotate":  # [-30, 30] degrees
        return (_randomly_negate((level / LEVEL_DENOM) * 30., rng),)
    if name == "Posterize":  # bits kept, [0, 4]
        return (int((level / LEVEL_DENOM) * 4),)
    if name == "PosterizeIncreasing":  # bits kept, [4, 0]
        return (4 - int((level / LEVEL_DENOM) * 4),)
    if name == "Solarize":  # threshold [0, 256]
        return (min(256, int((level / LEVEL_DENOM) * 256)),)
    if name == "SolarizeIncreasing":  # threshold [256, 0]
        return (256 - min(256, int((level / LEVEL_DENOM) * 256)),)
    if name == "SolarizeAdd":  # added [0, 110]
        return (min(128, int((level / LEVEL_DENOM) * 110)),)
    if name in ("Color", "Contrast", "Brightness", "Sharpness"):  # [0.1, 1.9]
        return ((level / LEVEL_DENOM) * 1.8 + 0.1,)
    if name in ("ColorIncreasing", "ContrastIncreasing", "BrightnessIncreasing", "SharpnessIncreasing"):
        level = (level / LEVEL_DENOM) * .9
        return (max(0.1, 1.0 + _randomly_negate(level, rng)),)  # 1 +- [0, 0.9]
    if name in ("ShearX", "ShearY"):  # [-0.3, 0.3]
        return (_randomly_negate((level / LEVEL_DENOM) * 0.3, rng),)
    if name in ("TranslateXRel", "TranslateYRel"):  # [-0.45, 0.45] of the size
        return (_randomly_negate((level / LEVEL_DENOM) * TRANSLATE_PCT, rng),)
    raise ValueError(f"unknown RandAugment op {name!r}")


@dataclass(frozen=True)
class Step:
    """One applied op: name, arguments, resampling (geometric ops), and the
    clipped magnitude its arguments came from."""

    name: str
    args: tuple
    resample: Optional[str] = None
    magnitude: Optional[float] = None


# ------------------------------------------------------------ the ops (PIL)
#
# One image [C, H, W] each: randaugment_batch's kernels with G = 1 (their
# docstrings say how each matches Pillow's C code).

def _one(kernel, img: torch.Tensor, *args) -> torch.Tensor:
    return kernel(img.unsqueeze(0), *args)[0]


def auto_contrast(img: torch.Tensor) -> torch.Tensor:
    """ImageOps.autocontrast(img): per channel lut[i] = int(i * scale + offset)."""
    return _one(batch.auto_contrast, img)


def equalize(img: torch.Tensor) -> torch.Tensor:
    """ImageOps.equalize(img): per channel lut[i] = (step // 2 + sum(h[:i])) // step."""
    return _one(batch.equalize, img)


def invert(img: torch.Tensor) -> torch.Tensor:
    """ImageOps.invert."""
    return _one(batch.invert, img)


def posterize(img: torch.Tensor, bits: int) -> torch.Tensor:
    """timm posterize: identity for bits >= 8, else ImageOps.posterize (i & mask)."""
    return _one(batch.posterize, img, [bits])


def solarize(img: torch.Tensor, thresh: int) -> torch.Tensor:
    """ImageOps.solarize: values >= thresh are inverted (thresh 256 keeps all)."""
    return _one(batch.solarize, img, [thresh])


def solarize_add(img: torch.Tensor, add: int, thresh: int = 128) -> torch.Tensor:
    """timm solarize_add: values < thresh get min(255, v + add)."""
    return _one(batch.solarize_add, img, [add], thresh)


def blend(degenerate: torch.Tensor, img: torch.Tensor, factor: float) -> torch.Tensor:
    """Image.blend(degenerate, img, factor), i.e. ImageEnhance's enhance()."""
    return batch.blend(degenerate.unsqueeze(0), img.unsqueeze(0), [factor])[0]


def color(img: torch.Tensor, factor: float) -> torch.Tensor:
    """ImageEnhance.Color: blend with the image's grey version (identity for C = 1)."""
    return _one(batch.color, img, [factor])


def contrast(img: torch.Tensor, factor: float) -> torch.Tensor:
    """ImageEnhance.Contrast: blend with the grey image's mean, int(mean + 0.5)."""
    return _one(batch.contrast, img, [factor])


def brightness(img: torch.Tensor, factor: float) -> torch.Tensor:
    """ImageEnhance.Brightness: blend with black."""
    return _one(batch.brightness, img, [factor])


def smooth(img: torch.Tensor) -> torch.Tensor:
    """img.filter(ImageFilter.SMOOTH)."""
    return _one(batch.smooth, img)


def sharpness(img: torch.Tensor, factor: float) -> torch.Tensor:
    """ImageEnhance.Sharpness: blend with the SMOOTH-filtered image."""
    return _one(batch.sharpness, img, [factor])


def affine(img: torch.Tensor, matrix: Sequence[float], resample: str, fill: int = FILL) -> torch.Tensor:
    """img.transform(img.size, Image.AFFINE, matrix, resample, fillcolor=fill)."""
    return _one(batch.affine, img, [matrix], resample, fill)


def shear_x(img, factor, resample, fill=FILL):
    """timm shear_x: AFFINE (1, factor, 0, 0, 1, 0), shear about the top-left corner."""
    return affine(img, batch.geometric_matrix("ShearX", factor, img.shape[2], img.shape[1]), resample, fill)


def shear_y(img, factor, resample, fill=FILL):
    """timm shear_y: AFFINE (1, 0, 0, factor, 1, 0)."""
    return affine(img, batch.geometric_matrix("ShearY", factor, img.shape[2], img.shape[1]), resample, fill)


def translate_x_rel(img, pct, resample, fill=FILL):
    """timm translate_x_rel: AFFINE (1, 0, pct * width, 0, 1, 0)."""
    return affine(img, batch.geometric_matrix("TranslateXRel", pct, img.shape[2], img.shape[1]), resample, fill)


def translate_y_rel(img, pct, resample, fill=FILL):
    """timm translate_y_rel: AFFINE (1, 0, 0, 0, 1, pct * height)."""
    return affine(img, batch.geometric_matrix("TranslateYRel", pct, img.shape[2], img.shape[1]), resample, fill)


def rotate(img, degrees, resample, fill=FILL):
    """img.rotate(degrees, resample, fillcolor=fill): counter-clockwise about the centre.

    Image.rotate's shortcuts: 0 is a copy, 180 is Transpose.ROTATE_180,
    90/270 are ROTATE_90/270 for square images only (the affine path gives
    the same pixels there).
    """
    _, h, w = img.shape
    turns = batch.rotate_shortcut(degrees, w, h)
    if turns is not None:
        return batch.quarter_turns(img, turns)
    return affine(img, rotate_matrix(degrees, w, h), resample, fill)


OPS = {
    "AutoContrast": auto_contrast,
    "Equalize": equalize,
    "Invert": invert,
    "Rotate": rotate,
    "Posterize": posterize,
    "PosterizeIncreasing": posterize,
    "Solarize": solarize,
    "SolarizeIncreasing": solarize,
    "SolarizeAdd": solarize_add,
    "Color": color,
    "ColorIncreasing": color,
    "Contrast": contrast,
    "ContrastIncreasing": contrast,
    "Brightness": brightness,
    "BrightnessIncreasing": brightness,
    "Sharpness": sharpness,
    "SharpnessIncreasing": sharpness,
    "ShearX": shear_x,
    "ShearY": shear_y,
    "TranslateXRel": translate_x_rel,
    "TranslateYRel": translate_y_rel,
}


def apply_step(img: torch.Tensor, step: Step) -> torch.Tensor:
    """Apply one op to one image [C, H, W]."""
    fn = OPS[step.name]
    if step.name in GEOMETRIC:
        return fn(img, *step.args, step.resample)
    return fn(img, *step.args)


# ------------------------------------------------------------ RandAugment

class RandAugment:
    """timm's RandAugment for uint8 batches [N, C, H, W], C in (1, 3).

    ``spec`` is a timm spec string (see parse) or a Config; ``seed`` seeds
    the object's own random.Random, so two objects with the same spec and
    seed produce the same outputs for the same inputs, on any device.
    """

    def __init__(self, spec, seed):
        self.config = spec if isinstance(spec, Config) else parse(spec)
        self.ops = self.config.ops
        self.rng = random.Random(seed)

    def draw(self) -> List[Step]:
        """The ops applied to one image, drawn in timm's order (skipped ops left out)."""
        cfg, rng = self.config, self.rng
        picks = [self.ops[rng.randrange(len(self.ops))] for _ in range(cfg.num_layers)]
        steps = []
        for name in picks:
            # timm AugmentOp.__call__
            if cfg.prob < 1.0 and rng.random() > cfg.prob:
                continue
            magnitude = cfg.magnitude
            if cfg.magnitude_std > 0:
                if cfg.magnitude_std == math.inf:
                    magnitude = rng.uniform(0, magnitude)
                else:
                    magnitude = rng.gauss(magnitude, cfg.magnitude_std)
            magnitude = max(0., min(magnitude, cfg.upper_bound))
            args = level_to_args(name, magnitude, rng)
            resample = rng.choice(RANDOM_INTERPOLATION) if name in GEOMETRIC else None
            steps.append(Step(name, args, resample, magnitude))
        return steps

    def augment(self, img: torch.Tensor) -> torch.Tensor:
        """One image [C, H, W] through one fresh draw."""
        for step in self.draw():
            img = apply_step(img, step)
        return img

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if not isinstance(x, torch.Tensor) or x.dtype != torch.uint8 or x.dim() != 4:
            raise ValueError("RandAugment expects a uint8 tensor [N, C, H, W]")
        if x.shape[1] not in (1, 3):
            raise ValueError(f"RandAugment expects C = 1 or 3, got {x.shape[1]}")
        # Every image's draws first, in batch order (as a loop over augment()
        # would make them), then the ops layer by layer over the whole batch:
        # the same pixels as augment() on each image, in far fewer tensor ops.
        plans = [self.draw() for _ in range(x.shape[0])]
        return batch.apply_layers(x, plans)

    def __repr__(self):
        c = self.config
        return (f"RandAugment(m={c.magnitude}, n={c.num_layers}, p={c.prob}, mstd={c.magnitude_std}, "
                f"mmax={c.magnitude_max}, increasing={c.increasing})")
