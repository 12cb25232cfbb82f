"""Writes ImageNet-like JPEGs for the store benchmark (BenchmarkImageStore).

usage: imagenet_like.py DIR N [START]

Writes DIR/nCC/IIIII.JPEG for I in [START, N): 500 x 375 pixels, quality 90
(ImageNet's typical size), ten class folders. The pictures are shapes over
noise, blurred a little: about 70 KB each, to decode about as a photo does.
"""
import os, sys, random
from PIL import Image, ImageDraw, ImageFilter
out, n, start = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 0
W, H = 500, 375
for i in range(start, n):
    rng = random.Random(i)
    im = Image.new("RGB", (W, H), tuple(rng.randrange(256) for _ in range(3)))
    d = ImageDraw.Draw(im)
    for _ in range(25):
        x, y = rng.randrange(W), rng.randrange(H)
        d.ellipse([x, y, x + rng.randrange(20, 200), y + rng.randrange(20, 150)], fill=tuple(rng.randrange(256) for _ in range(3)))
    noise = Image.effect_noise((W, H), 60).convert("RGB")
    im = Image.blend(im, noise, 0.3).filter(ImageFilter.GaussianBlur(0.6))
    p = os.path.join(out, "n%02d" % (i % 10), "%05d.JPEG" % i)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    im.save(p, quality=90)
