"""The transformer bodies GATE's patch root feeds (patchroot.py): BERT's,
BART's and MPNet's encoders and Whisper's, in plain PyTorch under the
Hub's module names, as transformers' modeling_{bert,bart,mpnet,whisper}.py
compute them."""

import math

import torch
import torch.nn.functional as F
from torch import nn

def relative_position_bucket(relative_position, num_buckets=32, max_distance=128):
    """transformers' MPNetEncoder.relative_position_bucket, verbatim in
    effect: relative_position is k - q."""
    ret = 0
    n = -relative_position
    num_buckets //= 2
    ret += (n < 0).to(torch.long) * num_buckets
    n = torch.abs(n)
    max_exact = num_buckets // 2
    is_small = n < max_exact
    val_if_large = max_exact + (
        torch.log(n.float() / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)).to(torch.long)
    val_if_large = torch.min(val_if_large, torch.full_like(val_if_large, num_buckets - 1))
    ret += torch.where(is_small, n, val_if_large)
    return ret


def attend(q, k, v, heads, dropout, training, bias=None):
    """Multi-head attention of projected q, k, v [B, T, D]: softmax(q k^T /
    sqrt(d_head) + bias) v with dropout on the probabilities, heads
    concatenated [B, T, D]. bias: [1 or B, heads, T, T], added to the
    scaled scores."""
    b, t, d = q.shape
    q, k, v = (z.reshape(b, t, heads, d // heads).transpose(1, 2) for z in (q, k, v))
    p = dropout if training else 0.0
    if bias is not None:
        bias = bias.to(q.dtype)
    if hasattr(F, "scaled_dot_product_attention"):
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, dropout_p=p)
    else:
        s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // heads))
        if bias is not None:
            s = s + bias
        o = F.dropout(s.softmax(dim=-1), p, training) @ v
    return o.transpose(1, 2).reshape(b, t, d)


def hidden_states(layers, x, *args):
    """x through the layers: the last output and the hidden states
    transformers returns (the input, then every layer's output)."""
    states = [x]
    for layer in layers:
        x = layer(x, *args)
        states.append(x)
    return x, states


# ---- BERT --------------------------------------------------------------------

class BertSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        d = c["dim"]
        self.query, self.key, self.value = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.heads, self.p = c["heads"], c["attention_dropout"]

    def forward(self, x):
        return attend(self.query(x), self.key(x), self.value(x), self.heads, self.p, self.training)


class DenseNorm(nn.Module):
    """dense -> dropout -> LayerNorm(+ residual): BertSelfOutput, BertOutput
    and MPNetOutput."""

    def __init__(self, din, d, eps, p):
        super().__init__()
        self.dense = nn.Linear(din, d)
        self.LayerNorm = nn.LayerNorm(d, eps=eps)
        self.dropout = nn.Dropout(p)

    def forward(self, x, residual):
        return self.LayerNorm(self.dropout(self.dense(x)) + residual)


class Dense(nn.Module):
    """BertIntermediate, MPNetIntermediate: dense and erf GELU."""

    def __init__(self, d, ff):
        super().__init__()
        self.dense = nn.Linear(d, ff)

    def forward(self, x):
        return F.gelu(self.dense(x))


class BertAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self = BertSelfAttention(c)
        self.output = DenseNorm(c["dim"], c["dim"], c["eps"], c["dropout"])

    def forward(self, x):
        return self.output(self.self(x), x)


class BertLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = BertAttention(c)
        self.intermediate = Dense(c["dim"], c["ff"])
        self.output = DenseNorm(c["ff"], c["dim"], c["eps"], c["dropout"])

    def forward(self, x):
        a = self.attention(x)
        return self.output(self.intermediate(a), a)


class BertBody(nn.Module):
    """BertEncoder: layer.{i}; hidden states: its input and every layer's."""

    def __init__(self, c, tokens):
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(c) for _ in range(c["layers"])])

    def forward(self, x):
        return hidden_states(self.layer, x)


# ---- BART --------------------------------------------------------------------

class SelfAttention(nn.Module):
    """BartAttention / WhisperAttention as an encoder's self-attention:
    q_proj, k_proj, v_proj, out_proj (Whisper's k_proj has no bias)."""

    def __init__(self, c, k_bias=True):
        super().__init__()
        d = c["dim"]
        self.k_proj = nn.Linear(d, d, bias=k_bias)
        self.v_proj = nn.Linear(d, d)
        self.q_proj = nn.Linear(d, d)
        self.out_proj = nn.Linear(d, d)
        self.heads, self.p = c["heads"], c["attention_dropout"]

    def forward(self, x):
        return self.out_proj(attend(self.q_proj(x), self.k_proj(x), self.v_proj(x), self.heads, self.p, self.training))


class BartLayer(nn.Module):
    """BartEncoderLayer: post-LN."""

    def __init__(self, c):
        super().__init__()
        d = c["dim"]
        self.self_attn = SelfAttention(c)
        self.self_attn_layer_norm = nn.LayerNorm(d, eps=c["eps"])
        self.fc1 = nn.Linear(d, c["ff"])
        self.fc2 = nn.Linear(c["ff"], d)
        self.final_layer_norm = nn.LayerNorm(d, eps=c["eps"])
        self.p, self.pa = c["dropout"], c["activation_dropout"]

    def forward(self, x):
        x = self.self_attn_layer_norm(x + F.dropout(self.self_attn(x), self.p, self.training))
        h = F.dropout(F.gelu(self.fc1(x)), self.pa, self.training)
        return self.final_layer_norm(x + F.dropout(self.fc2(h), self.p, self.training))


class BartBody(nn.Module):
    """BartEncoder on inputs_embeds: + learned positions (offset 2),
    layernorm_embedding, dropout, the layers; no final norm."""

    OFFSET = 2

    def __init__(self, c, tokens):
        super().__init__()
        d = c["dim"]
        # Re-initialised in GATE (a size the checkpoint does not have):
        # OFFSET + tokens rows, only OFFSET.. used.
        self.embed_positions = nn.Embedding(self.OFFSET + tokens, d)
        self.layers = nn.ModuleList([BartLayer(c) for _ in range(c["layers"])])
        self.layernorm_embedding = nn.LayerNorm(d, eps=c["eps"])
        self.p = c["dropout"]

    def forward(self, x):
        pos = self.embed_positions.weight[self.OFFSET:self.OFFSET + x.shape[1]]
        x = F.dropout(self.layernorm_embedding(x + pos.to(x.dtype)), self.p, self.training)
        return hidden_states(self.layers, x)


# ---- MPNet -------------------------------------------------------------------

class MPNetSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        d = c["dim"]
        self.q, self.k, self.v, self.o = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.heads, self.p = c["heads"], c["attention_dropout"]

    def forward(self, x, bias):
        return self.o(attend(self.q(x), self.k(x), self.v(x), self.heads, self.p, self.training, bias))


class MPNetAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attn = MPNetSelfAttention(c)
        self.LayerNorm = nn.LayerNorm(c["dim"], eps=c["eps"])
        self.dropout = nn.Dropout(c["dropout"])

    def forward(self, x, bias):
        return self.LayerNorm(self.dropout(self.attn(x, bias)) + x)


class MPNetLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = MPNetAttention(c)
        self.intermediate = Dense(c["dim"], c["ff"])
        self.output = DenseNorm(c["ff"], c["dim"], c["eps"], c["dropout"])

    def forward(self, x, bias):
        a = self.attention(x, bias)
        return self.output(self.intermediate(a), a)


class MPNetBody(nn.Module):
    """MPNetEncoder: layer.{i} and the relative_attention_bias they share."""

    def __init__(self, c, tokens):
        super().__init__()
        self.layer = nn.ModuleList([MPNetLayer(c) for _ in range(c["layers"])])
        self.relative_attention_bias = nn.Embedding(c["buckets"], c["heads"])
        pos = torch.arange(tokens, dtype=torch.long)
        # The buckets of k - q for the built token count (fewer than 256).
        buckets = relative_position_bucket(pos[None, :] - pos[:, None], c["buckets"], c["max_distance"])
        self.register_buffer("buckets", buckets.to(torch.uint8), persistent=False)

    def position_bias(self, t):
        if t != self.buckets.shape[0]:
            raise SystemExit("MPNet's relative positions were built for %d tokens, not %d" % (self.buckets.shape[0], t))
        # [T, T, heads] -> [1, heads, T, T], as compute_position_bias
        return self.relative_attention_bias(self.buckets.long()).permute(2, 0, 1).unsqueeze(0)

    def forward(self, x):
        bias = self.position_bias(x.shape[1])
        return hidden_states(self.layer, x, bias)


# ---- Whisper -----------------------------------------------------------------

class WhisperLayer(nn.Module):
    """WhisperEncoderLayer: pre-LN."""

    def __init__(self, c):
        super().__init__()
        d = c["dim"]
        self.self_attn = SelfAttention(c, k_bias=False)
        self.self_attn_layer_norm = nn.LayerNorm(d, eps=c["eps"])
        self.fc1 = nn.Linear(d, c["ff"])
        self.fc2 = nn.Linear(c["ff"], d)
        self.final_layer_norm = nn.LayerNorm(d, eps=c["eps"])
        self.p, self.pa = c["dropout"], c["activation_dropout"]

    def forward(self, x):
        x = x + F.dropout(self.self_attn(self.self_attn_layer_norm(x)), self.p, self.training)
        h = F.dropout(F.gelu(self.fc1(self.final_layer_norm(x))), self.pa, self.training)
        return x + F.dropout(self.fc2(h), self.p, self.training)


class WhisperBody(nn.Module):
    """ModifiedWhisperModel.forward and WhisperEncoder: the root's tokens
    [B, T, mels] as a mel spectrogram [B, mels, T] resampled to frames
    steps (nearest), conv1/conv2 with GELU, + the one trainable scalar
    that replaced the positions, dropout, the layers, layer_norm."""

    def __init__(self, c, tokens):
        super().__init__()
        d, m = c["dim"], c["mels"]
        if c["frames"] % 2:
            raise SystemExit("Whisper's frames must be even (conv2 halves them): %d" % c["frames"])
        self.conv1 = nn.Conv1d(m, d, kernel_size=3, padding=1)
        self.conv2 = nn.Conv1d(d, d, kernel_size=3, stride=2, padding=1)
        self.embed_positions = nn.Module()
        self.embed_positions.weight = nn.Parameter(torch.zeros(1))
        self.layers = nn.ModuleList([WhisperLayer(c) for _ in range(c["layers"])])
        self.layer_norm = nn.LayerNorm(d, eps=c["eps"])
        self.frames, self.p = c["frames"], c["dropout"]

    def resample(self, x):
        """[B, T, mels] -> [B, mels, frames], as GATE: permute, interpolate."""
        return F.interpolate(x.permute(0, 2, 1), size=self.frames, mode="nearest")

    def forward(self, x):
        x = F.gelu(self.conv1(self.resample(x)))
        # GELU after the permute, on a contiguous tensor: torch 1.13's exact
        # GELU backward is wrong for the permuted gradient it would get.
        x = F.gelu(self.conv2(x).permute(0, 2, 1).contiguous())
        x = F.dropout(x + self.embed_positions.weight.to(x.dtype), self.p, self.training)
        for layer in self.layers:
            x = layer(x)
        x = self.layer_norm(x)
        return x, [x]


BODIES = {"bert": BertBody, "bart": BartBody, "mpnet": MPNetBody, "whisper": WhisperBody}
