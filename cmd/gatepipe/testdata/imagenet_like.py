"""Writes ImageNet-like JPEGs for the store benchmark (BenchmarkImageStore).

usage: imagenet_like.py DIR N [START [CLASSES]]

Writes DIR/nCC/IIIII.JPEG for I in [START, N): 500 x 375 pixels, quality 90
(ImageNet's typical size), ten class folders. The pictures are shapes over
noise, blurred a little: about 70 KB each, to decode about as a photo does.
With CLASSES = "classes" the background's colour is the class's (plus a
little jitter), so that a short training can tell the classes apart.
"""
import os, sys, random
from PIL import Image, ImageDraw, ImageFilter
out, n, start = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 0
classes = len(sys.argv) > 4 and sys.argv[4] == "classes"
W, H = 500, 375
for i in range(start, n):
    rng = random.Random(i)
    bg = tuple(rng.randrange(256) for _ in range(3))
    if classes:
        k = i % 10
        bg = tuple(min(255, max(0, c + rng.randrange(-12, 13))) for c in ((k * 80) % 256, (k * 150) % 256, (k * 40 + 90) % 256))
    im = Image.new("RGB", (W, H), bg)
    d = ImageDraw.Draw(im)
    for _ in range(25):
        x, y = rng.randrange(W), rng.randrange(H)
        d.ellipse([x, y, x + rng.randrange(20, 200), y + rng.randrange(20, 150)], fill=tuple(rng.randrange(256) for _ in range(3)))
    noise = Image.effect_noise((W, H), 60).convert("RGB")
    im = Image.blend(im, noise, 0.3).filter(ImageFilter.GaussianBlur(0.6))
    p = os.path.join(out, "n%02d" % (i % 10), "%05d.JPEG" % i)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    im.save(p, quality=90)
