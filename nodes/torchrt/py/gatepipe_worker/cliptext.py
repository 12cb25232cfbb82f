"""CLIP's text transformer in plain PyTorch (no transformers import).

The text tower of Hugging Face's CLIPModel (``text_model``, a
CLIPTextTransformer) for openai/clip-vit-base-patch16: width 512, 12
layers of 8 heads, vocabulary 49408, context 77, MLP 4x with quick_gelu
(x * sigmoid(1.702 x)), pre-LayerNorm blocks (eps 1e-5), causal
self-attention scaled by head_dim ** -0.5, and a final LayerNorm. Its
parameters carry the names of HF's CLIPTextTransformer (the Hub file's
``text_model.`` names less that prefix), so a state_dict loads either way;
position_ids is a non-persistent buffer, as in HF.

forward(ids) gives (states, pooled): states [B, L, width] are every
token's state after final_layer_norm (HF's last_hidden_state); pooled
[B, width] is the state at each row's end-of-text token (HF's
pooler_output), found as argmax(ids): <|endoftext|> = 49407 is the largest
id, and argmax takes the first of equal maxima, so a row padded with
<|endoftext|> (the openai tokenizer's pad token) pools its first one. This
is HF's pooling for openai's configs (eos_token_id 2, its "legacy" path;
the current modeling_clip.py also takes it whenever every row holds 49407).
No padding mask is applied: the causal mask alone keeps tokens before the
end-of-text token from seeing the padding after it.

What GATE reads from this tower (github:AntreasAntoniou/GATE at
65192ece6b8d3f78612bf313e5a84438da451490):

- gate/models/backbones/timm.py, GATECLIPTextEncoder: loads
  CLIPModel.from_pretrained("openai/clip-vit-base-patch16") and runs only
  ``clip.text_model(input_ids=input_ids)`` (no attention_mask). Its
  text_projection is a *new* nn.Linear(hidden_size, num_projection_features)
  (with bias, trained from scratch) when num_projection_features is given,
  else nn.Identity; TimmCLIPEncoder's default is None. CLIP's pretrained
  ``text_projection.weight`` is never applied.
- gate/models/backbones/__init__.py, GATEImageTextEncoder.forward: text
  "features" = pooler_output (then the encoder's projection_layer only if
  num_projection_features), "raw_features" = last_hidden_state.
- Adapters: gate/models/task_adapters/relational_reasoning.py reads
  ["text"]["raw_features"] (all token states, our ``states``);
  gate/models/task_adapters/zero_shot_classification.py reads
  ["text"][head_identifier="features"] (the pooled state, our ``pooled``)
  and projects it with its own text_linear_projection (bias=False, 768 by
  default); standard/multi-class classification read "features" too.

So GATE parity uses states and pooled as they come; load_hub(...,
projection=True) loads CLIP's pretrained text_projection for other uses
(CLIP's own zero-shot embedding space), not GATE's.
"""

import torch
import torch.nn.functional as F
from torch import nn

from .storage import SafeTensors, read_float32


def quick_gelu(x):
    return x * torch.sigmoid(1.702 * x)


def causal_attention(q, k, v):
    """Causal softmax attention of q, k, v [B, H, L, D], scaled by
    D ** -0.5: torch 2's fused kernel where it exists, else written out
    (softmax in float32, as HF's eager path)."""
    sdpa = getattr(F, "scaled_dot_product_attention", None)
    if sdpa is not None:
        return sdpa(q, k, v, is_causal=True)
    n = q.shape[-2]
    w = torch.matmul(q, k.transpose(-1, -2)) * (q.shape[-1] ** -0.5)
    mask = torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1)
    w = w.masked_fill(mask, float("-inf"))
    w = torch.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
    return torch.matmul(w, v)


class Embeddings(nn.Module):
    def __init__(self, width, vocab, context):
        super().__init__()
        self.token_embedding = nn.Embedding(vocab, width)
        self.position_embedding = nn.Embedding(context, width)
        self.register_buffer("position_ids", torch.arange(context).unsqueeze(0), persistent=False)

    def forward(self, ids):
        n = ids.shape[-1]
        return self.token_embedding(ids) + self.position_embedding(self.position_ids[:, :n])


class SelfAttention(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        if width % heads:
            raise ValueError("width %d is not a multiple of %d heads" % (width, heads))
        self.heads = heads
        self.q_proj = nn.Linear(width, width)
        self.k_proj = nn.Linear(width, width)
        self.v_proj = nn.Linear(width, width)
        self.out_proj = nn.Linear(width, width)

    def forward(self, x):
        b, n, w = x.shape

        def split(t):
            return t.view(b, n, self.heads, w // self.heads).transpose(1, 2)

        o = causal_attention(split(self.q_proj(x)), split(self.k_proj(x)), split(self.v_proj(x)))
        return self.out_proj(o.transpose(1, 2).reshape(b, n, w))


class MLP(nn.Module):
    def __init__(self, width, hidden):
        super().__init__()
        self.fc1 = nn.Linear(width, hidden)
        self.fc2 = nn.Linear(hidden, width)

    def forward(self, x):
        return self.fc2(quick_gelu(self.fc1(x)))


class Layer(nn.Module):
    def __init__(self, width, heads, hidden):
        super().__init__()
        self.self_attn = SelfAttention(width, heads)
        self.layer_norm1 = nn.LayerNorm(width, eps=1e-5)
        self.mlp = MLP(width, hidden)
        self.layer_norm2 = nn.LayerNorm(width, eps=1e-5)

    def forward(self, x):
        x = x + self.self_attn(self.layer_norm1(x))
        return x + self.mlp(self.layer_norm2(x))


class Encoder(nn.Module):
    def __init__(self, width, layers, heads, hidden):
        super().__init__()
        self.layers = nn.ModuleList([Layer(width, heads, hidden) for _ in range(layers)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class CLIPText(nn.Module):
    """CLIP's text transformer; forward(ids [B, L <= context]) gives
    (states [B, L, width], pooled [B, width]) as the module docstring says."""

    def __init__(self, width=512, layers=12, heads=8, vocab=49408, context=77, mlp_ratio=4):
        super().__init__()
        self.width, self.layers, self.heads, self.vocab, self.context = width, layers, heads, vocab, context
        self.embeddings = Embeddings(width, vocab, context)
        self.encoder = Encoder(width, layers, heads, width * mlp_ratio)
        self.final_layer_norm = nn.LayerNorm(width, eps=1e-5)
        self.reset_parameters()

    def reset_parameters(self):
        """HF's CLIP initialisation (initializer_factor 1): embeddings
        N(0, 0.02), attention and MLP weights scaled by width and depth,
        biases 0, LayerNorms 1 and 0. Loaded weights replace it."""
        w, d = self.width, self.layers
        nn.init.normal_(self.embeddings.token_embedding.weight, std=0.02)
        nn.init.normal_(self.embeddings.position_embedding.weight, std=0.02)
        in_std = w ** -0.5 * (2 * d) ** -0.5
        for layer in self.encoder.layers:
            a, m = layer.self_attn, layer.mlp
            for lin in (a.q_proj, a.k_proj, a.v_proj):
                nn.init.normal_(lin.weight, std=in_std)
            nn.init.normal_(a.out_proj.weight, std=w ** -0.5)
            nn.init.normal_(m.fc1.weight, std=(2 * w) ** -0.5)
            nn.init.normal_(m.fc2.weight, std=in_std)
        for mod in self.modules():
            if isinstance(mod, nn.Linear):
                nn.init.zeros_(mod.bias)
            elif isinstance(mod, nn.LayerNorm):
                nn.init.ones_(mod.weight)
                nn.init.zeros_(mod.bias)

    def forward(self, ids):
        if ids.dim() != 2 or ids.shape[1] > self.context or ids.shape[1] == 0:
            raise ValueError("CLIP text ids are [B, L] with 1 <= L <= %d, not %s" % (self.context, list(ids.shape)))
        ids = ids.long()
        x = self.encoder(self.embeddings(ids))
        states = self.final_layer_norm(x)
        pooled = states[torch.arange(states.shape[0], device=states.device), ids.argmax(dim=-1)]
        return states, pooled


# ---- loading the Hub's weights ------------------------------------------------

PREFIX = "text_model."
# In the Hub's files, not parameters: position_ids was a persistent buffer
# in transformers before 4.31, so older conversions hold it (arange(77)).
IGNORED = ("embeddings.position_ids",)


def load_hub(model, path, log=None, projection=False):
    """Loads CLIPText model from the safetensors file path: the Hub's
    openai/clip-vit-base-patch16 model.safetensors (text tensors named
    text_model.*; vision_model.*, visual_projection, text_projection and
    logit_scale are left) or a text-only file in the module's own names.
    Every text tensor must be there with the model's shape, else SystemExit
    naming it and the file; half-precision tensors become float32.

    With projection, also CLIP's text_projection.weight [proj, width],
    returned as an nn.Linear(width, proj, bias=False); else returns None.
    (GATE does not apply it: see the module docstring.)"""
    f = SafeTensors(path)
    names = [k for k in f.header if k != "__metadata__"]
    prefix = PREFIX if any(k.startswith(PREFIX) for k in names) else ""
    state = model.state_dict()
    for name, want in state.items():
        key = prefix + name
        if key not in f.header:
            raise SystemExit("%s: no tensor %s (CLIP text tower, shape %s); is it openai/clip-vit-base-patch16's model.safetensors?"
                             % (path, key, list(want.shape)))
        shape = list(f.header[key]["shape"])
        if shape != list(want.shape):
            raise SystemExit("%s: tensor %s is %s, the CLIP text model (width %d, %d layers, vocab %d, context %d) needs %s"
                             % (path, key, shape, model.width, model.layers, model.vocab, model.context, list(want.shape)))
        state[name] = read_float32(f, key)
    # Text tensors of a larger model (more layers, say) are an error,
    # not something to drop silently.
    extra = [k for k in names if k.startswith(prefix) and k[len(prefix):] not in state and k[len(prefix):] not in IGNORED
             and (prefix or not k.startswith(("vision_model.", "text_projection", "visual_projection", "logit_scale")))]
    if extra:
        raise SystemExit("%s: tensor %s is not in the CLIP text model (width %d, %d layers): another configuration?"
                         % (path, sorted(extra)[0], model.width, model.layers))
    model.load_state_dict(state)
    proj = None
    if projection:
        key = "text_projection.weight"
        if key not in f.header:
            raise SystemExit("%s: no tensor %s (CLIP's text projection)" % (path, key))
        shape = list(f.header[key]["shape"])
        if len(shape) != 2 or shape[1] != model.width:
            raise SystemExit("%s: tensor %s is %s, not [proj, %d]" % (path, key, shape, model.width))
        proj = nn.Linear(model.width, shape[0], bias=False)
        with torch.no_grad():
            proj.weight.copy_(read_float32(f, key))
    if log is not None:
        log("weights %s: %d CLIP text tensors loaded%s, %d others left" % (
            path, len(state), " and text_projection" if proj is not None else "",
            len(names) - len(state) - (proj is not None)))
    return proj


def param_count(model):
    return sum(p.numel() for p in model.parameters())
