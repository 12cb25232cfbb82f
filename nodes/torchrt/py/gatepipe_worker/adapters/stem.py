"""GATE's input stem: an affine instance norm on the images before the
encoder.

GATE@65192ec gate/models/task_adapters/__init__.py (BaseAdapterModule)
builds ``nn.InstanceNorm2d(num_features=3, affine=True)`` when
``use_stem_instance_norm`` is set, and gate/tiers/core.py's AdapterConfig
sets it (default True) in every tier command. Each adapter applies it to
its images first, before calling the encoder: classification,
multi-label and segmentation to the image batch, the relational and
zero-shot adapters to the image only (never the text), the temporal
adapter to the clip's frames flattened to [B*S, C, H, W], ProtoNet to the
support and query images. The input is what the encoder's transform made
(resized and normalised with the model's mean and std), so the stem
re-normalises every image per channel by its own mean and variance and
then scales and shifts it by the learned weight (init 1) and bias
(init 0).

InstanceNorm2d's defaults apply: eps 1e-5, no running statistics, so
training and evaluation normalise the same way.
"""
from torch import nn


class Stem(nn.InstanceNorm2d):
    """InstanceNorm2d(channels, affine=True) (tensors head.stem.weight and
    head.stem.bias)."""

    def __init__(self, channels=3, device=None):
        super().__init__(channels, affine=True, device=device)


KINDS = ("instance_norm", "")


def make(kind, channels, device=None):
    """The stem a protocol card names: "instance_norm" (GATE's), or ""
    / None for none (the identity)."""
    if kind in ("", None):
        return nn.Identity()
    if kind != "instance_norm":
        raise SystemExit("protocol stem %r: the worker builds \"instance_norm\" (GATE's) or \"\" (none)" % kind)
    return Stem(channels, device=device)
