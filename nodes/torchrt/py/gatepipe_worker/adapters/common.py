"""Pieces several of GATE's adapters share: the temporal/fusion
transformer, its sinusoidal positions, the projection GATE's encoders
put on their pooled features, and CLIP token ids laid out as GATE's
collate lays them out."""
import math

import torch
from torch import nn


def projection(features, out, device=None):
    """GATE's image projection (GATE@65192ec gate/models/backbones/timm.py,
    GATETimmImageEncoder.visual_projection): Linear(features, out,
    bias=False) on the pooled features, num_projection_features = 768 in
    every tier EncoderConfig (gate/tiers/core.py). GATE keeps it in the
    encoder; here the adapter owns it (head.*), initialised by torch."""
    return nn.Linear(features, out, bias=False, device=device)


def sinusoid(length, d, device=None, dtype=torch.float32):
    """The fixed sinusoidal positions [1, length, d]: sin on even
    features, cos on odd ones, frequencies 10000^(-2i/d)
    (temporal_image_classification.py, PositionalEncoding)."""
    pos = torch.arange(length, dtype=torch.float32, device=device).unsqueeze(1)
    div = torch.exp(torch.arange(0, d, 2, dtype=torch.float32, device=device) * (-math.log(10000.0) / d))
    pe = torch.zeros(1, length, d, device=device)
    pe[0, :, 0::2] = torch.sin(pos * div)
    pe[0, :, 1::2] = torch.cos(pos * div)[:, : d // 2]
    return pe.to(dtype)


class SequenceTransformer(nn.Module):
    """GATE's VariableSequenceTransformerEncoder
    (GATE@65192ec gate/models/task_adapters/temporal_image_classification.py),
    which the temporal and the relational adapters use:

    - positions: GATE writes ``x = x + self.pos_encoder(x)`` where
      pos_encoder adds the sinusoid to x in place and returns x, so the
      sum is x + x after the addition: the transformer takes
      2 * (x + positions). Reproduced as such.
    - torch's nn.TransformerEncoder of pre-norm nn.TransformerEncoderLayer
      (batch first, GELU, dropout 0 as the tier runs it, LayerNorm eps
      1e-5) with a final LayerNorm (norm=).
    - the last token's state (``[:, -1, :]``), through another LayerNorm
      (output_norm): the features.

    GATE also runs the transformer a second time on the [B, d] last-token
    states (its raw_features, which nothing reads); that output reaches
    no loss, so it is not computed here.
    """

    def __init__(self, d, heads, ff, layers, dropout=0.0, device=None):
        super().__init__()
        if d % heads:
            raise SystemExit("GATE's sequence transformer: width %d is not a multiple of heads %d" % (d, heads))
        layer = nn.TransformerEncoderLayer(d_model=d, nhead=heads, dim_feedforward=ff, dropout=dropout,
                                           activation=nn.GELU(), batch_first=True, norm_first=True, device=device)
        self.transformer = nn.TransformerEncoder(layer, num_layers=layers, norm=nn.LayerNorm(d, device=device),
                                                 enable_nested_tensor=False)
        self.output_norm = nn.LayerNorm(d, device=device)
        self.d = d

    def forward(self, x):
        pe = sinusoid(x.shape[1], x.shape[2], device=x.device, dtype=x.dtype)
        x = 2 * (x + pe)
        return self.output_norm(self.transformer(x)[:, -1, :])


def gate_text_ids(ids):
    """CLIP token ids [B, L] laid out as GATE's batches have them: GATE
    tokenises each text alone (CLIPProcessor, no padding, truncation at
    77) and gate/data/core.py's collate_fn_with_token_pad pads every row
    to the batch's longest by repeating its last token, <|endoftext|>.
    Here each row's end-of-text token is its largest id (argmax, the
    first of equal maxima, as CLIPText pools); the rows are cut to the
    longest text in the batch and every position after a row's
    end-of-text token is set to that token, whatever padding the ids
    came with."""
    eot = ids.argmax(dim=-1)
    length = int(eot.max().item()) + 1
    ids = ids[:, :length]
    pos = torch.arange(length, device=ids.device).unsqueeze(0)
    end = ids.gather(1, eot.unsqueeze(1))
    return torch.where(pos > eot.unsqueeze(1), end, ids)
