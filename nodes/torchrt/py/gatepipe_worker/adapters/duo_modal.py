"""GATE's image-text zero-shot / retrieval adapter,
"duo-modal-zero-shot-classifier" (GATE@65192ec
gate/models/task_adapters/zero_shot_classification.py,
DuoModalZeroShotModel; similarities and loss in
gate/models/task_adapters/utils/helpers.py).

- image: stem -> encoder pooled features -> the encoder's projection
  Linear(F, 768, bias=False) -> image_linear_projection
  Linear(768, 768, bias=False).
- text: the CLIP text tower's pooled state (pooler_output, the
  end-of-text token's) -> the encoder's text projection
  Linear(text width, 768) *with* bias (GATECLIPTextEncoder.text_projection
  in gate/models/backbones/timm.py, a new layer since the tier sets
  num_projection_features = 768) -> text_linear_projection
  Linear(768, 768, bias=False).
- both divided by their L2 norms; similarities img @ txt.T times
  clamp(exp(t), max=100), t an nn.Parameter initialised to 1 / 0.07 =
  14.29 (the value, not its log), so exp(t) is about 1.6e6 and the scale
  sits on the clamp: 100, with no gradient reaching t.
- loss: the mean of the cross-entropies of the similarities and their
  transpose against the diagonal, in the batch ("contrastive").

forward returns (similarities [B, B], the normalised embeddings
[B, 2 * 768] image then text), what gatepipe's retrieval trainer takes.
In the card, "projection" sizes the encoder-level projections and
"width" the adapter's own (768 both in GATE).
"""
import torch
from torch import nn

from . import common
from .stem import make as make_stem

TEMPERATURE = 1.0 / 0.07
MAX_SCALE = 100.0


class DuoModalAdapter(nn.Module):
    def __init__(self, features, text, text_dim, projection=768, width=768, channels=3, stem="instance_norm", device=None):
        super().__init__()
        self.stem = make_stem(stem, channels, device=device)
        self.text = text
        self.proj = common.projection(features, projection, device=device)
        self.text_proj = nn.Linear(text_dim, projection, device=device)
        self.image_linear = nn.Linear(projection, width, bias=False, device=device)
        self.text_linear = nn.Linear(projection, width, bias=False, device=device)
        self.temperature = nn.Parameter(torch.tensor(TEMPERATURE, device=device))

    def scale(self):
        return torch.clamp(self.temperature.exp(), max=MAX_SCALE)

    def forward(self, encode, x, q=None, episode=None):
        if q is None:
            raise SystemExit("GATE's duo-modal adapter needs the captions' token ids")
        img = self.image_linear(self.proj(encode(self.stem(x))["features"]))
        _, pooled = self.text(common.gate_text_ids(q))
        txt = self.text_linear(self.text_proj(pooled))
        img = img / img.norm(p=2, dim=-1, keepdim=True)
        txt = txt / txt.norm(p=2, dim=-1, keepdim=True)
        sim = img @ txt.to(img.dtype).T * self.scale()
        return sim, torch.cat([img, txt.to(img.dtype)], dim=1)
