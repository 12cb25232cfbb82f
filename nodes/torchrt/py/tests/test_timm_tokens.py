"""library: timm models by NAME.TAG, and timm ViTs (tokens, not maps) under
dense heads. timm is not packaged in Debian: a stand-in module with timm's
interface (list_models, create_model, forward_features giving [B, T, D]
tokens with num_prefix_tokens in front) runs the same code."""
import sys
import types
import unittest
from unittest import mock

import torch
from torch import nn

from gatepipe_worker import models


class TinyViT(nn.Module):
    """timm's ViT interface: forward_features gives a class token and a
    4x4 grid of patch tokens; forward pools the class token."""

    num_prefix_tokens = 1

    def __init__(self, in_chans=3, dim=8):
        super().__init__()
        self.patch = nn.Conv2d(in_chans, dim, 4, stride=4)
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))

    def forward_features(self, x):
        t = self.patch(x).flatten(2).transpose(1, 2)
        return torch.cat([self.cls.expand(x.shape[0], -1, -1), t], dim=1)

    def forward(self, x):
        return self.forward_features(x)[:, 0]


def fake_timm(created):
    timm = types.ModuleType("timm")
    timm.__version__ = "stand-in"
    timm.list_models = lambda pattern=None: ["vit_tiny_stand_in"]

    def create_model(name, pretrained=False, num_classes=0, in_chans=3):
        created.append(name)
        return TinyViT(in_chans)
    timm.create_model = create_model
    return timm


class TimmTokensTest(unittest.TestCase):
    def test_tagged_name_builds_the_architecture(self):
        created = []
        with mock.patch.dict(sys.modules, {"timm": fake_timm(created)}):
            enc = models.Encoder({"arch": "timm:vit_tiny_stand_in.augreg_in21k"}, [3, 16, 16])
        self.assertEqual(created, ["vit_tiny_stand_in"])
        self.assertEqual(enc.width, 8)

    def test_unknown_name_names_the_architecture(self):
        with mock.patch.dict(sys.modules, {"timm": fake_timm([])}):
            with self.assertRaisesRegex(SystemExit, "has no model 'vit_nope'"):
                models.Encoder({"arch": "timm:vit_nope.tag"}, [3, 16, 16])

    def test_vit_tokens_reach_a_segmentation_head_on_their_grid(self):
        with mock.patch.dict(sys.modules, {"timm": fake_timm([])}):
            m = models.TaskModel("segmentation", {"arch": "timm:vit_tiny_stand_in"}, [3, 16, 16], 3)
            self.assertEqual(m.encoder.spatial(torch.zeros(2, 3, 16, 16)).shape, (2, 8, 4, 4))
            y = m(torch.randn(2, 3, 16, 16))
        self.assertEqual(list(y.shape), [2, 3, 16, 16])


if __name__ == "__main__":
    unittest.main()
