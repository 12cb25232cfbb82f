"""The losses GATE's adapters train with, by the protocol card's names.

Segmentation (GATE@65192ec gate/metrics/segmentation.py, used by
gate/models/task_adapters/semantic_segmentation.py):

- FocalLoss(alpha 0.25, gamma 2): per pixel ce = CE(logits, label),
  pt = exp(-ce), loss alpha (1 - pt)^2 ce, mean over the pixels kept
  (with an ignore index, the pixels of that label are dropped first).
- CrossEntropyLoss: F.cross_entropy(..., ignore_index) (GATE's default
  ignore_index -1: no pixel dropped).
- DiceLoss(smooth 1): p = softmax(logits); t = one-hot labels with the
  ignored label's pixels zeroed in every class (p is not masked); per
  image and class (2 sum p t + 1) / (sum p + sum t + 1); loss = 1 - that,
  the mean over images and all classes (the ignored class included).

"focal_ce_ignoreK" is ImageSegmentationLoss as gate/tiers/configs/
image_segmentation.py sets it (dice weight 0, focal and CE weight 1,
background_loss_weight 0.1): mean(focal_K, CE_K) + 0.1 * mean(focal,
CE), where _K ignores label K and the "background" terms ignore nothing.
"dice_ignoreK" is MedicalImageSegmentationLoss (ACDC, background weight
0.01 from Adapters.MD_SEGMENTATION in gate/tiers/core.py): Dice_K +
0.01 * Dice. Without the suffix ("focal_ce", "dice") nothing is
ignored.

One deviation: where a batch has no pixel left after the ignore (all
background), GATE's focal and CE terms are the mean of nothing, NaN; here
they are 0 (the background terms still train).

Others: "cross_entropy" (classification, relational, video, few-shot:
F.cross_entropy), "bce" (multi-label: F.binary_cross_entropy_with_logits),
"l1" (video regression: F.l1_loss of the flattened outputs and raw
targets, GATE's RegressionMetrics in temporal_image_classification.py;
no standardising), "contrastive" (retrieval: the mean of the
cross-entropies of the image-to-text and text-to-image similarity
matrices against the diagonal, GATE's compute_zero_shot_loss_and_metrics
in gate/models/task_adapters/utils/helpers.py).
"""
import re

import torch
import torch.nn.functional as F

SEGMENTATION = re.compile(r"^(focal_ce|dice)(?:_ignore(-?\d+))?$")

# The background (no-ignore) terms' weights GATE's tiers set.
BACKGROUND_WEIGHT = {"focal_ce": 0.1, "dice": 0.01}

NAMES = {
    "classification": ("cross_entropy",),
    "multilabel": ("bce",),
    "segmentation": ("focal_ce_ignore<K>", "dice_ignore<K>", "focal_ce", "dice"),
    "relational": ("cross_entropy",),
    "video": ("cross_entropy",),
    "video_regression": ("l1",),
    "retrieval": ("contrastive",),
    "fewshot": ("cross_entropy",),
}


def _flat(logits, labels):
    c = logits.shape[1]
    return logits.permute(0, 2, 3, 1).reshape(-1, c), labels.reshape(-1)


def _kept(logits, labels, ignore):
    """Pixel logits [P, C] and labels [P], less the ignored label's."""
    z, y = _flat(logits, labels)
    if ignore is not None:
        keep = y != ignore
        z, y = z[keep], y[keep]
    return z, y


def focal_loss(logits, labels, ignore=None, alpha=0.25, gamma=2.0):
    """GATE's FocalLoss of logits [B, C, H, W] and labels [B, H, W]."""
    z, y = _kept(logits, labels, ignore)
    if y.numel() == 0:
        return logits.sum() * 0.0
    ce = F.cross_entropy(z, y, reduction="none")
    pt = torch.exp(-ce)
    return (alpha * (1 - pt) ** gamma * ce).mean()


def ce_loss(logits, labels, ignore=None):
    """GATE's CrossEntropyLoss (F.cross_entropy with the ignore index)."""
    z, y = _kept(logits, labels, ignore)
    if y.numel() == 0:
        return logits.sum() * 0.0
    return F.cross_entropy(z, y)


def dice_loss(logits, labels, ignore=None, smooth=1.0):
    """GATE's DiceLoss of logits [B, C, H, W] and labels [B, H, W]."""
    p = torch.softmax(logits, dim=1)
    t = torch.zeros_like(p).scatter_(1, labels.unsqueeze(1), 1.0)
    if ignore is not None:
        t = t * (labels != ignore).unsqueeze(1).to(t.dtype)
    inter = (p * t).sum(dim=(2, 3))
    union = p.sum(dim=(2, 3)) + t.sum(dim=(2, 3))
    return (1.0 - (2.0 * inter + smooth) / (union + smooth)).mean()


def parse_segmentation(name, ignore_label=..., background_weight=None):
    """(kind, ignore, background weight) of a segmentation loss name
    ("focal_ce_ignore0": ignore label 0; "focal_ce": none); the card's
    ignore_label, where it has one, must say the same."""
    m = SEGMENTATION.match(name or "")
    if m is None:
        raise SystemExit("segmentation loss %r: the worker knows %s" % (name, ", ".join(NAMES["segmentation"])))
    kind = m.group(1)
    ignore = int(m.group(2)) if m.group(2) is not None else None
    if ignore_label is not ... and (None if ignore_label is None else int(ignore_label)) != ignore:
        raise SystemExit("protocol: loss %s %s, but the card's ignore_label is %s" % (
            name, "ignores label %d" % ignore if ignore is not None else "ignores no label", ignore_label))
    weight = BACKGROUND_WEIGHT[kind] if background_weight is None else float(background_weight)
    return kind, ignore, weight


def segmentation_loss(logits, labels, kind, ignore, background_weight):
    logits = logits.float()
    if kind == "dice":
        return dice_loss(logits, labels, ignore) + background_weight * dice_loss(logits, labels, None)
    fg = (focal_loss(logits, labels, ignore) + ce_loss(logits, labels, ignore)) / 2
    bg = (focal_loss(logits, labels, None) + ce_loss(logits, labels, None)) / 2
    return fg + background_weight * bg


def contrastive_loss(similarities):
    """GATE's symmetric in-batch loss of image-to-text similarities [B, B]."""
    z = similarities.float()
    ids = torch.arange(z.shape[0], device=z.device)
    return (F.cross_entropy(z, ids) + F.cross_entropy(z.T, ids)) / 2


class Loss:
    """The card's loss for a task family: loss(out, target) as the
    trainer calls it (out is the model's output: logits; retrieval
    (similarities, embeddings))."""

    def __init__(self, task, card):
        name = card.get("loss")
        self.task, self.name = task, name
        if task == "segmentation":
            ignore = card["ignore_label"] if "ignore_label" in card else ...
            self.seg = parse_segmentation(name, ignore, card.get("background_weight"))
            return
        if name not in NAMES.get(task, ()):
            raise SystemExit("protocol loss %r for a %s adapter: the worker knows %s" % (name, task, ", ".join(NAMES.get(task, ()))))

    def __call__(self, out, target):
        n = self.name
        if self.task == "segmentation":
            return segmentation_loss(out, target, *self.seg)
        if n == "bce":
            return F.binary_cross_entropy_with_logits(out.float(), target.float())
        if n == "l1":
            return F.l1_loss(out.float().reshape(-1), target.float().reshape(-1))
        if n == "contrastive":
            return contrastive_loss(out[0])
        return F.cross_entropy(out.float(), target)
