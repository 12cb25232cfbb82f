"""Writes image fixtures and PIL's pixels for them, for imagedec's tests.

usage: pilref.py DIR W H

Writes DIR/NAME.{jpg,png} and, for each, DIR/NAME.rgb and DIR/NAME.l: the
bytes (H x W x C, interleaved) of

    im = Image.open(f); im.draft("RGB", (2*W, 2*H))   # JPEG only
    im.convert("RGB" or "L").resize((W, H), Image.BILINEAR)

which is what a PyTorch pipeline stores, with PIL's draft at twice the
size (imagedec decodes large JPEGs at the same reduced scale).
"""
import os
import sys

from PIL import Image, ImageDraw, ImageFilter

out, w, h = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])


def photo(size, seed, mode="RGB"):
    # A photo-like picture: gradients, shapes, noise, then a blur.
    im = Image.linear_gradient("L").resize(size).convert("RGB")
    d = ImageDraw.Draw(im)
    for k in range(12):
        x0 = (seed * 37 + k * 53) % size[0]
        y0 = (seed * 91 + k * 29) % size[1]
        d.ellipse([x0, y0, x0 + size[0] // 4, y0 + size[1] // 5],
                  fill=((k * 40 + seed) % 256, (k * 90) % 256, (200 - k * 15) % 256))
    noise = Image.effect_noise(size, 40).convert("RGB")
    im = Image.blend(im, noise, 0.25).filter(ImageFilter.GaussianBlur(1))
    return im.convert(mode)


cases = [
    ("imagenet", (500, 375), "RGB", "jpg", 1),
    ("portrait", (333, 500), "RGB", "jpg", 2),
    ("large", (1200, 900), "RGB", "jpg", 3),      # draft 1/2
    ("huge", (2000, 1900), "RGB", "jpg", 4),      # draft 1/4
    ("tiny", (37, 53), "RGB", "jpg", 5),          # upscaled
    ("grey", (320, 240), "L", "jpg", 6),
    ("alpha", (300, 200), "RGBA", "png", 7),
    ("plain", (256, 256), "RGB", "png", 8),
]
for name, size, mode, ext, seed in cases:
    p = os.path.join(out, name + "." + ext)
    im = photo(size, seed, mode)
    if ext == "jpg":
        im.save(p, quality=90)
    else:
        if mode == "RGBA":
            im.putalpha(Image.linear_gradient("L").resize(size))
        im.save(p)
    for conv, suffix in (("RGB", "rgb"), ("L", "l")):
        im = Image.open(p)
        if im.format == "JPEG":
            im.draft("RGB", (2 * w, 2 * h))
        im = im.convert(conv).resize((w, h), Image.BILINEAR)
        with open(os.path.join(out, name + "." + suffix), "wb") as f:
            f.write(im.tobytes())
