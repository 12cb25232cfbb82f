"""The ops of randaugment.py on many images at once, and the batch schedule
of RandAugment.__call__.

Every kernel here takes G images x [G, C, H, W] (uint8) and one argument per
image (a Python sequence), and reproduces Pillow's integer results with
float32 where Pillow's C code uses float and float64 where it uses double,
in the same operation order. randaugment.py's single-image ops are these
kernels with G = 1 (so its PIL tests test them). Batching changes no bit:
each output value goes through the same IEEE operations as when its image
is alone (an argument broadcast from a [G, 1, ...] tensor is the same
number, in the same dtype, as the Python number it replaces) and the
reductions (histograms, the grey sums) are integer.

Pixel-value ops are per-channel lookup tables, applied by one gather:
AutoContrast, Equalize (from the histograms), Contrast (from the grey
mean: its blend with a constant is a function of the value), Invert,
Posterize, Solarize, SolarizeAdd and Brightness (tables built on the host
from the arguments, in the same integer or float32 arithmetic).

Schedule (apply_layers): every image's steps are drawn first; layer k is
the k-th applied step of each image that has one (so each image keeps its
op order). In a layer all the table ops form one group (one gather), Color
and Sharpness one group each, the geometric ops one affine group per
resampling filter (per-image matrices), and Rotate's exact shortcuts
(180, and 90/270 on a square) their own groups. For GATE's spec and a
batch of 64 that is about 600 device ops a batch (some 200 a layer, ~20
small host-to-device copies, none blocking, no host syncs) where the
per-image loop ran about 6000.
"""
import math
import struct
from typing import List, Sequence

import torch

FILL = 128  # timm _FILL = (128, 128, 128), used since hparams has no img_mean
BILINEAR = "bilinear"
BICUBIC = "bicubic"
RANDOM_INTERPOLATION = (BILINEAR, BICUBIC)  # timm _RANDOM_INTERPOLATION
GEOMETRIC = frozenset(("Rotate", "ShearX", "ShearY", "TranslateXRel", "TranslateYRel"))

_IX = torch.arange(256)  # int64, on the host

# affine() works in strips of output rows of at most this many values
# [G, C, rows, W]: on the CPU small enough that its float64 intermediates
# (4 or 16 per value) stay in the caches and need no fresh pages from the
# allocator for every op; elsewhere a bound on its memory (under 1 GB).
CPU_STRIP = 1 << 15
DEVICE_STRIP = 1 << 21


def to_device(host: torch.Tensor, device) -> torch.Tensor:
    """A small host tensor (arguments, indices, tables) copied to device.

    non_blocking: a blocking copy to CUDA synchronises the stream (the host
    would wait for all queued work, e.g. the previous training step); from
    pageable memory CUDA stages the bytes before returning, so the host
    tensor may go at once.
    """
    return host.to(device, non_blocking=True)


def _per_image(values, dtype, device, ndim):
    """One argument per image as a [G, 1, ...] tensor with ndim dimensions."""
    return to_device(torch.tensor(list(values), dtype=dtype), device).reshape((-1,) + (1,) * (ndim - 1))


def float32(x: float) -> float:
    """x rounded to float32 (C's (float)x), as a Python float."""
    return struct.unpack("f", struct.pack("f", x))[0]


# ------------------------------------------------------------ lookup tables

def histogram(x: torch.Tensor) -> torch.Tensor:
    """Per-image, per-channel 256-bin histograms, int64 [G, C, 256] (PIL's histogram()).

    A 1-D scatter_add_ of int64 ones: exact, free of host syncs, and on
    CUDA the deterministic-algorithms mode gives it a deterministic kernel
    (a 2-D one would warn); integer counts do not depend on the order anyway.
    """
    g, c = x.shape[:2]
    offsets = torch.arange(0, g * c * 256, 256, device=x.device).unsqueeze(1)
    idx = (x.reshape(g * c, -1).long() + offsets).reshape(-1)
    h = torch.zeros(g * c * 256, dtype=torch.int64, device=x.device)
    h.scatter_add_(0, idx, torch.ones(1, dtype=torch.int64, device=x.device).expand(idx.numel()))
    return h.reshape(g, c, 256)


def _last_nonzero(h: torch.Tensor) -> torch.Tensor:
    return 255 - torch.argmax((h.flip(-1) > 0).int(), dim=-1)


def auto_contrast_lut(h: torch.Tensor) -> torch.Tensor:
    """ImageOps.autocontrast's tables from histograms [..., 256]: lut[i] = int(i * scale + offset)."""
    lo = torch.argmax((h > 0).int(), dim=-1)
    hi = _last_nonzero(h)
    ok = hi > lo
    # A true division of two device tensors: `255.0 / t` is reciprocal(t) * 255
    # in torch, which is not IEEE division and moves some LUT entries by 1.
    span = torch.where(ok, hi - lo, torch.ones_like(lo)).double()
    scale = torch.div(torch.full_like(span, 255.0), span)
    offset = (-lo).double() * scale
    ix = torch.arange(256, dtype=torch.float64, device=h.device)
    lut = torch.trunc(ix * scale.unsqueeze(-1) + offset.unsqueeze(-1))
    lut = torch.where(ok.unsqueeze(-1), lut, ix)
    return lut.clamp(0, 255).to(torch.uint8)


def equalize_lut(h: torch.Tensor) -> torch.Tensor:
    """ImageOps.equalize's tables from histograms [..., 256]: lut[i] = (step // 2 + sum(h[:i])) // step."""
    nonzero = (h > 0).sum(dim=-1)
    last = torch.gather(h, -1, _last_nonzero(h).unsqueeze(-1)).squeeze(-1)
    step = torch.div(h.sum(dim=-1) - last, 255, rounding_mode="floor")
    ok = (nonzero > 1) & (step > 0)
    step = torch.where(ok, step, torch.ones_like(step)).unsqueeze(-1)
    before = torch.cumsum(h, dim=-1) - h
    lut = torch.div(torch.div(step, 2, rounding_mode="floor") + before, step, rounding_mode="floor")
    ix = torch.arange(256, dtype=torch.int64, device=h.device)
    return torch.where(ok.unsqueeze(-1), lut, ix).clamp(0, 255).to(torch.uint8)


def invert_lut(n: int) -> torch.Tensor:
    """ImageOps.invert's table for n images, uint8 [n, 256] on the host."""
    return (255 - _IX).to(torch.uint8).expand(n, 256)


def posterize_lut(bits: Sequence[int]) -> torch.Tensor:
    """timm posterize: identity for bits >= 8, else ImageOps.posterize (i & mask); bits <= 0 keeps nothing."""
    masks = [0xFF if b >= 8 else ~(2 ** (8 - b) - 1) & 0xFF for b in bits]
    return (_IX & torch.tensor(masks).unsqueeze(1)).to(torch.uint8)


def solarize_lut(thresh: Sequence[int]) -> torch.Tensor:
    """ImageOps.solarize: values >= thresh are inverted (thresh 256 keeps all)."""
    return torch.where(_IX < torch.tensor(list(thresh)).unsqueeze(1), _IX, 255 - _IX).to(torch.uint8)


def solarize_add_lut(add: Sequence[int], thresh: int = 128) -> torch.Tensor:
    """timm solarize_add: values < thresh get min(255, v + add)."""
    added = (_IX + torch.tensor(list(add)).unsqueeze(1)).clamp(max=255)
    return torch.where(_IX < thresh, added, _IX).to(torch.uint8)


def brightness_lut(factors: Sequence[float]) -> torch.Tensor:
    """ImageEnhance.Brightness (a blend with black) as a table."""
    ix = _IX.to(torch.uint8).expand(len(factors), 256)
    return blend(torch.zeros_like(ix), ix, factors)


def contrast_lut(x: torch.Tensor, factors: Sequence[float]) -> torch.Tensor:
    """ImageEnhance.Contrast's tables [G, 1, 256]: a blend with the grey image's mean, int(mean + 0.5).

    int(s / n + 0.5) in doubles equals (2s + n) // 2n in integers: s/n + 0.5
    is an integer or at least 1/2n away from one, far beyond double error.
    (Integers also keep CUDA exact: it divides by a scalar via its reciprocal.)
    """
    grey = _grey(x)
    s, n = grey.sum(dim=(1, 2, 3), dtype=torch.int64), grey[0].numel()
    level = torch.div(2 * s + n, 2 * n, rounding_mode="floor").to(torch.uint8)
    g = x.shape[0]
    ix = torch.arange(256, device=x.device).to(torch.uint8).expand(g, 1, 256)
    return blend(level.reshape(g, 1, 1).expand(g, 1, 256), ix, factors)


def apply_lut(x: torch.Tensor, lut: torch.Tensor) -> torch.Tensor:
    """x [G, C, H, W] uint8 through per-image tables uint8 [G, C or 1, 256]."""
    g, c = x.shape[:2]
    lut = lut.expand(g, c, 256).contiguous()
    return torch.gather(lut, 2, x.reshape(g, c, -1).long()).reshape(x.shape)


def _host_lut(x: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    return apply_lut(x, to_device(table, x.device).unsqueeze(1))


def auto_contrast(x):
    return apply_lut(x, auto_contrast_lut(histogram(x)))


def equalize(x):
    return apply_lut(x, equalize_lut(histogram(x)))


def invert(x):
    return _host_lut(x, invert_lut(x.shape[0]))


def posterize(x, bits):
    return _host_lut(x, posterize_lut(bits))


def solarize(x, thresh):
    return _host_lut(x, solarize_lut(thresh))


def solarize_add(x, add, thresh=128):
    return _host_lut(x, solarize_add_lut(add, thresh))


def brightness(x, factors):
    return _host_lut(x, brightness_lut(factors))


def contrast(x, factors):
    return apply_lut(x, contrast_lut(x, factors))


# ------------------------------------------------------------ blends

def blend(degenerate: torch.Tensor, img: torch.Tensor, factors: Sequence[float]) -> torch.Tensor:
    """Image.blend(degenerate, img, factor) per image (dim 0), i.e. ImageEnhance's enhance().

    Blend.c: alpha = (float)factor; out = (UINT8)(in1 + alpha * (in2 - in1))
    in float32, clipped to [0, 255] when alpha is outside [0, 1] (a clip
    that changes nothing inside; alpha 0 and 1 give in1 and in2 exactly).
    """
    alpha = _per_image([float32(f) for f in factors], torch.float32, img.device, img.dim())
    d = degenerate.float()
    out = d + (img.float() - d) * alpha
    return out.clamp(0, 255).to(torch.uint8)


def _grey(x: torch.Tensor) -> torch.Tensor:
    """PIL convert('L'): (R*19595 + G*38470 + B*7471 + 0x8000) >> 16, [G, 1, H, W] int32."""
    if x.shape[1] == 1:
        return x.to(torch.int32)
    r, g, b = x.to(torch.int32).unbind(1)
    return ((r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16).unsqueeze(1)


def color(x, factors):
    """ImageEnhance.Color: blend with the grey version (identity for C = 1)."""
    if x.shape[1] == 1:
        return x.clone()
    return blend(_grey(x).expand_as(x).to(torch.uint8), x, factors)


def smooth(x: torch.Tensor) -> torch.Tensor:
    """img.filter(ImageFilter.SMOOTH): kernel [[1,1,1],[1,5,1],[1,1,1]] / 13.

    Filter.c rounds (+0.5, float32) inside and copies the 1-pixel border; an
    image under 3x3 is copied. round(s / 13) in integers is the same number:
    s / 13 is at least 1/26 away from any half-integer, far beyond float32's
    error.
    """
    h, w = x.shape[2:]
    out = x.clone()
    if h < 3 or w < 3:
        return out
    v = x.to(torch.int32)
    s = 4 * v[:, :, 1:-1, 1:-1]
    for dy in range(3):
        for dx in range(3):
            s = s + v[:, :, dy:h - 2 + dy, dx:w - 2 + dx]
    out[:, :, 1:-1, 1:-1] = torch.div(2 * s + 13, 26, rounding_mode="floor").to(torch.uint8)
    return out


def sharpness(x, factors):
    """ImageEnhance.Sharpness: blend with the SMOOTH-filtered image."""
    return blend(smooth(x), x, factors)


# ------------------------------------------------------------ geometry

def _bicubic(v1, v2, v3, v4, d):
    """Geometry.c BICUBIC (a = -1), in its operation order.

    Its p2 = -v1 + v3 and p4 = -v1 + v2 - v3 + v4 are written v3 - v1 and
    v2 - v1 - v3 + v4: the same IEEE results (a - b is a + (-b)), one op fewer.
    """
    p1 = v2
    p2 = v3 - v1
    p3 = 2 * (v1 - v2) + v3 - v4
    p4 = v2 - v1 - v3 + v4
    return p1 + d * (p2 + d * (p3 + d * p4))


def affine(x: torch.Tensor, matrices: Sequence[Sequence[float]], resample: str, fill: int = FILL) -> torch.Tensor:
    """img.transform(img.size, Image.AFFINE, matrix, resample, fillcolor=fill), one matrix per image.

    For output pixel (x, y) the source point is
    (a*(x+.5) + b*(y+.5) + c, d*(x+.5) + e*(y+.5) + f) in float64. A point
    outside [0, W) x [0, H) gets the fill colour; inside, the sampler reads
    around (point - 0.5) with clamped neighbour indices: bilinear, or
    Pillow's bicubic with a = -1 (not the a = -0.5 of resize), then
    truncates (bicubic clips to [0, 255] first).

    The output rows go in strips (CPU_STRIP, DEVICE_STRIP); each output
    value is computed alone, so the split changes nothing.
    """
    if resample not in RANDOM_INTERPOLATION:
        raise ValueError(f"resample must be {BILINEAR!r} or {BICUBIC!r}, got {resample!r}")
    g, ch, h, w = x.shape
    m = to_device(torch.tensor([[float(v) for v in mat] for mat in matrices], dtype=torch.float64), x.device)
    coef = m.reshape(g, 6, 1, 1).unbind(1)  # a..f, each [G, 1, 1]
    step = max(1, (CPU_STRIP if x.device.type == "cpu" else DEVICE_STRIP) // (g * ch * w))
    if step >= h:
        return _affine_rows(x, coef, resample, fill, 0, h)
    return torch.cat([_affine_rows(x, coef, resample, fill, r, min(h, r + step)) for r in range(0, h, step)], 2)


def _affine_rows(x, coef, resample, fill, top, bottom):
    """Output rows top:bottom of affine()."""
    g, ch, h, w = x.shape
    dev = x.device
    a, b, c, d, e, f = coef
    xo = (torch.arange(w, dtype=torch.float64, device=dev) + 0.5).unsqueeze(0)  # [1, W]
    yo = (torch.arange(top, bottom, dtype=torch.float64, device=dev) + 0.5).unsqueeze(1)  # [R, 1]
    xs = xo * a + yo * b + c  # [G, R, W]
    ys = xo * d + yo * e + f
    inside = (xs >= 0) & (xs < w) & (ys >= 0) & (ys < h)
    xs = xs - 0.5
    ys = ys - 0.5
    x0 = torch.floor(xs)
    y0 = torch.floor(ys)
    dx = (xs - x0).unsqueeze(1)  # [G, 1, R, W]
    dy = (ys - y0).unsqueeze(1)
    # all k x k neighbours in one gather: taps [G, C, k (column), k (row), R, W]
    k = 2 if resample == BILINEAR else 4
    first = 0 if k == 2 else -1
    offs = torch.arange(first, first + k, device=dev).reshape(1, k, 1, 1)
    rows = (y0.long().unsqueeze(1) + offs).clamp(0, h - 1) * w  # [G, k, R, W]
    cols = (x0.long().unsqueeze(1) + offs).clamp(0, w - 1)
    n = (bottom - top) * w
    idx = (cols.unsqueeze(2) + rows.unsqueeze(1)).reshape(g, 1, k * k * n)
    taps = torch.gather(x.reshape(g, ch, h * w), 2, idx.expand(g, ch, -1)).double()
    columns = taps.reshape(g, ch, k, k, bottom - top, w).unbind(2)  # each [G, C, k (row), R, W]
    # along x for the k rows at once, then along y
    if resample == BILINEAR:
        v_a, v_b = columns
        lines = v_a + (v_b - v_a) * dx.unsqueeze(2)
        v = lines[:, :, 0] + (lines[:, :, 1] - lines[:, :, 0]) * dy
    else:
        lines = _bicubic(*columns, dx.unsqueeze(2))
        v = _bicubic(*lines.unbind(2), dy)
    out = v.clamp(0, 255).to(torch.uint8)
    return torch.where(inside.unsqueeze(1), out, torch.full_like(out, fill))


def geometric_matrix(name: str, arg: float, width: int, height: int) -> List[float]:
    """timm's affine data for ShearX/Y and TranslateX/YRel (about the top-left corner)."""
    if name == "ShearX":
        return [1, arg, 0, 0, 1, 0]
    if name == "ShearY":
        return [1, 0, 0, arg, 1, 0]
    if name == "TranslateXRel":
        return [1, 0, arg * width, 0, 1, 0]
    if name == "TranslateYRel":
        return [1, 0, 0, 0, 1, arg * height]
    raise ValueError(f"not an affine op: {name!r}")


def rotate_shortcut(degrees: float, width: int, height: int):
    """Image.rotate's exact shortcuts: None (use the affine), or the number of
    quarter turns for torch.rot90 (0 is a copy, 2 is Transpose.ROTATE_180,
    1/-1 are ROTATE_90/270, for square images only)."""
    angle = degrees % 360.0
    if angle == 0:
        return 0
    if angle == 180:
        return 2
    if angle in (90, 270) and width == height:
        return 1 if angle == 90 else -1
    return None


def quarter_turns(x: torch.Tensor, k: int) -> torch.Tensor:
    if k == 0:
        return x.clone()
    if k == 2:
        return x.flip(-2, -1)
    return torch.rot90(x, k, dims=(-2, -1))


def rotate_matrix(degrees: float, width: int, height: int) -> List[float]:
    """Image.rotate's inverse affine matrix (expand=False, centre (w/2, h/2)).

    Same float steps as Pillow: angle % 360, cos/sin rounded to 15 digits,
    then c = (a*-cx + b*-cy + 0.0) + cx and f likewise.
    """
    angle = -math.radians(degrees % 360.0)
    m = [
        round(math.cos(angle), 15), round(math.sin(angle), 15), 0.0,
        round(-math.sin(angle), 15), round(math.cos(angle), 15), 0.0,
    ]
    cx, cy = width / 2, height / 2
    m[2] = m[0] * -cx + m[1] * -cy + m[2] + cx
    m[5] = m[3] * -cx + m[4] * -cy + m[5] + cy
    return m


# ------------------------------------------------------------ the schedule

# op names (timm's, both sets) -> the kernel they run
OP_OF = {name: name for name in (
    "AutoContrast", "Equalize", "Invert", "Rotate", "Posterize", "Solarize", "SolarizeAdd",
    "Color", "Contrast", "Brightness", "Sharpness", "ShearX", "ShearY", "TranslateXRel", "TranslateYRel")}
OP_OF.update({name + "Increasing": name for name in (
    "Posterize", "Solarize", "Color", "Contrast", "Brightness", "Sharpness")})

# the table ops of a layer, in the order their images take in its gather:
# tables built on the host from the first arguments, then those of the histograms and the grey mean
HOST_TABLES = {
    "Invert": lambda args: invert_lut(len(args)),
    "Posterize": posterize_lut,
    "Solarize": solarize_lut,
    "SolarizeAdd": solarize_add_lut,
    "Brightness": brightness_lut,
}
TABLE_OPS = tuple(HOST_TABLES) + ("AutoContrast", "Equalize", "Contrast")


def apply_layers(x: torch.Tensor, plans) -> torch.Tensor:
    """x [N, C, H, W] uint8 with plans[i] the steps (.name, .args, .resample)
    of image i, in order; returns a new tensor. Layer k applies the k-th step
    of every image that has one, grouped by kernel."""
    out = x.clone()
    for k in range(max((len(p) for p in plans), default=0)):
        _apply_layer(out, [(i, p[k]) for i, p in enumerate(plans) if len(p) > k])
    return out


def _group(layer, c, h, w):
    """{key: ([image], [argument])} for one layer; keys ("table", op),
    ("turn", k), ("affine", resample), ("Color",), ("Sharpness",). Steps
    that leave the image as it is (Rotate by 0, Color of grey images) are
    left out."""
    groups = {}
    for i, step in layer:
        op = OP_OF.get(step.name)
        if op is None:
            raise ValueError(f"unknown RandAugment op {step.name!r}")
        arg = step.args[0] if step.args else None
        if op == "Rotate":
            turns = rotate_shortcut(arg, w, h)
            if turns == 0:
                continue
            key = ("affine", step.resample) if turns is None else ("turn", turns)
            arg = rotate_matrix(arg, w, h) if turns is None else None
        elif op in GEOMETRIC:
            key, arg = ("affine", step.resample), geometric_matrix(op, arg, w, h)
        elif op in TABLE_OPS:
            key = ("table", op)
        elif op == "Color" and c == 1:
            continue
        else:
            key = (op,)
        images, args = groups.setdefault(key, ([], []))
        images.append(i)
        args.append(arg)
    return groups


def _apply_layer(out: torch.Tensor, layer) -> None:
    """One layer in place: the images of each group gathered (table images
    first), each group's kernel run once, the results written back."""
    c, h, w = out.shape[1:]
    groups = _group(layer, c, h, w)
    if not groups:
        return
    tables = [("table", op) for op in TABLE_OPS if ("table", op) in groups]
    others = [key for key in groups if key[0] != "table"]
    spans, pos = {}, 0
    for key in tables + others:
        spans[key] = (pos, pos + len(groups[key][0]))
        pos += len(groups[key][0])
    idx = to_device(torch.tensor([i for key in tables + others for i in groups[key][0]]), out.device)
    sub = out.index_select(0, idx)
    parts = [apply_lut(sub[:spans[tables[-1]][1]], _tables(sub, groups, spans))] if tables else []
    for key in others:
        part, args = sub[spans[key][0]:spans[key][1]], groups[key][1]
        if key[0] == "affine":
            parts.append(affine(part, args, key[1]))
        elif key[0] == "turn":
            parts.append(quarter_turns(part, key[1]))
        elif key[0] == "Color":
            parts.append(color(part, args))
        else:
            parts.append(sharpness(part, args))
    out.index_copy_(0, idx, parts[0] if len(parts) == 1 else torch.cat(parts))


def _tables(sub, groups, spans):
    """The layer's tables uint8 [n_table, C, 256], in the order of its table images."""
    c = sub.shape[1]
    host = [HOST_TABLES[op](groups[("table", op)][1]) for op in HOST_TABLES if ("table", op) in groups]
    tables = [to_device(torch.cat(host), sub.device).unsqueeze(1).expand(-1, c, 256)] if host else []
    hist_keys = [("table", op) for op in ("AutoContrast", "Equalize") if ("table", op) in groups]
    if hist_keys:
        a, b = spans[hist_keys[0]][0], spans[hist_keys[-1]][1]
        hist = histogram(sub[a:b])  # one pass for both ops' images
        for key in hist_keys:
            s0, s1 = spans[key]
            make = auto_contrast_lut if key[1] == "AutoContrast" else equalize_lut
            tables.append(make(hist[s0 - a:s1 - a]))
    if ("table", "Contrast") in groups:
        s0, s1 = spans[("table", "Contrast")]
        tables.append(contrast_lut(sub[s0:s1], groups[("table", "Contrast")][1]).expand(-1, c, 256))
    return tables[0] if len(tables) == 1 else torch.cat(tables)
