"""GATE's training augmentations, run on a training batch where the
protocol card names one (its "augmentation"): timm's RandAugment for the
image families (randaugment.py), GATE's segmentation and medical
segmentation transforms (segmentation.py) and its video transform
(video.py).

A batch reaches the trainer as the encoder's input (normalised floats, on
its device); Augmenter takes its 8-bit pixels back (Inputs.pixels),
augments them and normalises them again (Inputs.normalized), so the
loader and its device cache stay as they are. GATE augments before its
model transform resizes (the stored examples are already at the model's
size here, so the order of a resize and the augmentation differs: the
RandAugment ops are scale-free but for the resampling's detail).

Every draw comes from a generator seeded by the recipe's seed and the
iteration: a run draws the same augmentations on any device, and a
resumed run draws what the uninterrupted one did."""

import random

from .randaugment import RandAugment
from .segmentation import SegmentationAugment
from .video import VideoAugment

# The task families whose card names timm's RandAugment (GATE's
# StandardAugmentations: classification, medical classification, CLEVR's
# relational reasoning and the image-text zero-shot sets).
IMAGE_FAMILIES = ("classification", "multilabel", "relational", "retrieval")


class Augmenter:
    """One task's training augmentation: __call__(x, y, it) returns the
    batch x (the encoder's input) augmented at iteration it, and the
    targets y (segmentation masks move with their images)."""

    def __init__(self, kind, op, inputs, seed):
        self.kind, self.op, self.inputs, self.seed = kind, op, inputs, int(seed)

    def __call__(self, x, y, it):
        key = "%d" % it
        if self.kind == "medical":
            # A crop alone: resampling commutes with the per-channel
            # normalisation, so the input is cropped as it is.
            return self.op(x, y, key=key)
        u = self.inputs.pixels(x)
        if self.kind == "segmentation":
            u, y = self.op(u, y, key=key)
        elif self.kind == "video":
            u = self.op(u, key=key)
        else:
            self.op.rng = random.Random("gatepipe-randaugment:%d:%s" % (self.seed, key))
            u = self.op(u)
        return self.inputs.normalized(u), y

    def __repr__(self):
        return "Augmenter(%s, %r)" % (self.kind, self.op)


def for_card(task, card, inputs, seed):
    """The augmentation the card names for task, or None (no card, no
    augmentation, or stored examples that are not 8-bit pixels, said in
    the returned reason). Returns (augmenter or None, reason)."""
    spec = (card or {}).get("augmentation") or ""
    if not spec:
        return None, ""
    if task == "segmentation" and spec.startswith("medical"):
        return Augmenter("medical", SegmentationAugment(seed, medical=True), inputs, seed), ""
    if not inputs.eight_bit():
        return None, "augmentation %r not run: the stored examples are not 8-bit images" % spec
    if task in IMAGE_FAMILIES:
        return Augmenter("image", RandAugment(spec, seed), inputs, seed), ""
    if task == "segmentation":
        # D11: GATE's photometric distortion wraps its bytes and hues.
        wrap = "D11" in ((card or {}).get("defects") or [])
        return Augmenter("segmentation", SegmentationAugment(seed, byte_wrap=wrap), inputs, seed), ""
    if task in ("video", "video_regression"):
        h, w = inputs.out_shape()[-2:]
        if h != w:  # a quarter turn would change the frames' shape: half turns only
            return (Augmenter("video", VideoAugment(seed, rotation_angles=(0, 180)), inputs, seed),
                    "%dx%d frames: GATE's video augmentation rotates by 0 or 180 degrees only (its 90 and 270 need square frames)" % (h, w))
        return Augmenter("video", VideoAugment(seed), inputs, seed), ""
    return None, "augmentation %r not run: no augmentation for the %s family" % (spec, task)
