"""GATE's relational reasoning (VQA) adapter, "relational-reasoning"
(GATE@65192ec gate/models/task_adapters/relational_reasoning.py,
DuoModalFusionModel).

- image: stem -> encoder -> raw_features, every patch token of the last
  layer [B, T, D] (a CNN's last map as a sequence) -> image_linear,
  Linear(D, 512, bias=False), per token.
- text: the CLIP text tower's token states (last_hidden_state, after its
  final LayerNorm) [B, L, text width] -> text_linear,
  Linear(text width, 512, bias=False). The ids are laid out as GATE's
  batches have them (common.gate_text_ids: cut to the batch's longest
  text, padded with end-of-text).
- fusion: the image tokens then the text tokens, [B, T + L, 512], through
  GATE's VariableSequenceTransformerEncoder (common.SequenceTransformer:
  4 pre-norm layers, 8 heads, feed-forward 2048, dropout 0, sinusoidal
  positions added as GATE adds them) -> the last token (the last text
  position) -> LayerNorm -> classifier nn.Linear(512, classes).
- loss: F.cross_entropy.

GATE's encoder projection to 768 is not on this path (the adapter reads
raw features), nor is its text projection; its temperature_parameter
(a scalar nn.Parameter) is never used. None of the three is built here.
GATE's per-answer-type classifiers (a ModuleDict, CLEVR) are not built:
gatepipe's relational stores have one answer column (CLEVR-Math: 11
classes, GATE's single nn.Linear).

The text tower is a constructor argument (CLIPText's interface: forward(ids
[B, L]) -> (states [B, L, width], pooled [B, width])) and is trained with
the rest, as GATE fine-tunes it; its tensors are head.text.*.
"""
import torch
from torch import nn

from . import common
from .stem import make as make_stem


class RelationalAdapter(nn.Module):
    def __init__(self, image_dim, outputs, text, text_dim, width=512, heads=8, blocks=4, ff=2048,
                 channels=3, stem="instance_norm", device=None):
        super().__init__()
        self.stem = make_stem(stem, channels, device=device)
        self.text = text
        self.image_linear = nn.Linear(image_dim, width, bias=False, device=device)
        self.text_linear = nn.Linear(text_dim, width, bias=False, device=device)
        self.fusion = common.SequenceTransformer(width, heads, ff, blocks, device=device)
        self.classifier = nn.Linear(width, outputs, device=device)

    def forward(self, encode, x, q=None, episode=None):
        if q is None:
            raise SystemExit("GATE's relational adapter needs the questions' token ids")
        raw = encode(self.stem(x))["raw_features"]
        if raw is None:
            raise SystemExit("GATE's relational adapter reads the encoder's raw features (tokens or a map); this encoder gives none")
        states, _ = self.text(common.gate_text_ids(q))
        seq = torch.cat([self.image_linear(raw), self.text_linear(states)], dim=1)
        return self.classifier(self.fusion(seq))
