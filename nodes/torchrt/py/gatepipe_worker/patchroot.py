"""GATE's patch root: four Hugging Face text and audio encoders turned into
image encoders (arch "patchroot:NAME"), in plain PyTorch (no transformers
import).

What GATE builds (github:AntreasAntoniou/GATE at 65192ec,
gate/models/task_adapters/utils/modality_transfer.py and
gate/models/backbones/{bert_text,bart_text,mpnet_text,whisper_audio}.py):

- The root (BaseVisionRootLayer, "adapted from CLIPVisionEmbeddings"):
  Conv2d(3, D, kernel p, stride p, bias=False) over the image, its map
  flattened row-major to [B, (S/p)^2, D]; a class token
  nn.Parameter(torch.randn(D)) in front; plus nn.Embedding((S//p)^2 + 1,
  D) on 0..T-1. No norm, no dropout; PyTorch's default initialisation
  (randn class token, N(0, 1) positions, Kaiming-uniform patches), never
  the Hub's. Its transform is ToTensor alone (no resize, mean or std).
  GATE sizes the position table from its image_size (224, 512 or 1024)
  and never interpolates it: here it is sized from the example's [C, H,
  W] at build, (H//p)*(W//p) + 1 rows.
- The Hugging Face model's own embeddings are gone (BERT's, MPNet's: the
  Modified*Model classes hold only the encoder; BART's token embedding is
  bypassed by inputs_embeds); the root's tokens go straight into its
  encoder layers, with no attention mask.
- Outputs: features = the mean over every token (the class token
  included) of the last hidden state; raw_features = that last hidden
  state [B, T, D] (class token included); per_layer_raw_features = the
  encoder's hidden_states (its input, then every layer's output).
  GATEImageTextEncoder then projects features with Linear(D, 768,
  bias=False) (num_projection_features): gatepipe's adapters own that
  projection (adapters/common.py, head.proj), so it is not built here.

The four (CONFIGS):

- google-bert/bert-base-uncased (GATE: "bert-base-uncased",
  ModifiedBertEncoder): D 768, p 16; 12 post-LayerNorm BertLayers (eps
  1e-12, 12 heads, scores / sqrt(64), erf GELU, feed-forward 3072,
  dropout 0.1 on the attention probabilities and after each dense
  output); the pooler is built by GATE but unused. 13 hidden states.
- facebook/bart-base (ModifiedBartModel's BartEncoder): D 768, p 16;
  learned positions with BART's offset 2 (rows offset..offset+T-1 added
  to the tokens), RE-INITIALISED: GATE asks for max_position_embeddings
  1025/2049/4097 with ignore_mismatched_sizes, so the Hub's 1026-row
  table never loads and HF's _init_weights draws N(0, 0.02); then
  layernorm_embedding, dropout 0.1, 6 post-LN layers (q, k, v, out_proj
  with bias, q scaled by head_dim^-0.5, attention dropout 0.1, fc1 3072,
  erf GELU, activation dropout 0.1, fc2, dropout 0.1; eps 1e-5); no final
  norm. 7 hidden states.
- sentence-transformers/all-mpnet-base-v2 (ModifiedMPNetModel's
  MPNetEncoder): D 768, p 16; one relative position bias for all layers:
  relative_attention_bias = Embedding(32, 12) of
  relative_position_bucket(k - q, 32, 128) (transformers'
  modeling_mpnet.py), added to the scaled scores; post-LN layers
  (attention.attn.{q,k,v,o}, attention.LayerNorm, intermediate.dense,
  output.dense, output.LayerNorm; eps 1e-5, dropout 0.1). 13 hidden
  states.
- openai/whisper-base (ModifiedWhisperModel's WhisperEncoder): the root's
  D is 80 (the mel bins) and p = find_nearest_n(S, 3000) (4 at 224 px:
  3137 tokens); the tokens [B, T, 80] are permuted to [B, 80, T] and
  resampled to 3000 steps by F.interpolate(mode="nearest") (GATE tests
  image.shape[1] != 3000 after the permute, which is 80: it always
  resamples); the PRETRAINED conv1 (80 -> 512, k 3, pad 1) + GELU, conv2
  (k 3, stride 2, pad 1) + GELU give [B, 1500, 512]; GATE replaces the
  1500 positions by nn.Parameter(torch.zeros(1)) at the adapter's build
  forward (before the optimiser exists, so it trains): one scalar added to
  every value; 6 pre-LN layers (k_proj without bias, 8 heads, fc1 2048,
  dropout 0) and the final layer_norm. per_layer_raw_features is the last
  state alone.

Deviations: GATE's find_nearest_n divides by zero under sqrt(3000) px,
here p is 1 there; a non-square image takes p from sqrt(H*W) for Whisper;
attention runs through F.scaled_dot_product_attention where torch has it
(2.0+), the same function up to float rounding. GATE's pretrained=False
path calls an init_weights its VisionRootReplacedBackbone lacks; here an
encoder without weights is HF's initialisation at the real config (N(0,
0.02) linear and embedding weights, zero biases, unit LayerNorms) behind
the root's PyTorch defaults.

Tensor names: the root's GATE names (root.class_embedding,
root.patch_embedding.weight, root.position_embedding.weight) and the
encoder's Hub names less the model prefix (encoder.layer.0...,
encoder.layers.0..., encoder.conv1.weight, ...); under gatepipe's
encoder. prefix in its files. load() reads the Hub's model.safetensors
(strictly) or a file in these names.
"""
import math

import torch
from torch import nn

from .patchroot_layers import BODIES
from .storage import SafeTensors, read_float32

PREFIX = "patchroot:"

# The four encoders at the sizes GATE loaded (their Hub config.json).
CONFIGS = {
    "google-bert/bert-base-uncased": {"kind": "bert", "dim": 768, "layers": 12, "heads": 12, "ff": 3072, "eps": 1e-12,
                                      "patch": 16, "dropout": 0.1, "attention_dropout": 0.1},
    "facebook/bart-base": {"kind": "bart", "dim": 768, "layers": 6, "heads": 12, "ff": 3072, "eps": 1e-5, "patch": 16,
                           "dropout": 0.1, "attention_dropout": 0.1, "activation_dropout": 0.1},
    "sentence-transformers/all-mpnet-base-v2": {"kind": "mpnet", "dim": 768, "layers": 12, "heads": 12, "ff": 3072,
                                                "eps": 1e-5, "patch": 16, "buckets": 32, "max_distance": 128,
                                                "dropout": 0.1, "attention_dropout": 0.1},
    "openai/whisper-base": {"kind": "whisper", "dim": 512, "layers": 6, "heads": 8, "ff": 2048, "eps": 1e-5,
                            "mels": 80, "frames": 3000, "dropout": 0.0, "attention_dropout": 0.0,
                            "activation_dropout": 0.0},
}

INIT_STD = 0.02  # initializer_range / init_std of all four configs

# The Hub file's prefix of the encoder's tensors (stripped where present).
HUB_PREFIX = {"bert": "bert.", "bart": "model.", "mpnet": "mpnet.", "whisper": "model."}
# Hub tensors GATE drops or replaces (after the prefix is stripped): the
# embeddings, pooler and heads, BART's decoder and its position table
# (re-initialised), Whisper's decoder and its positions (a zero scalar).
HUB_IGNORED = {
    "bert": ("embeddings.", "pooler.", "cls."),
    "bart": ("shared.", "encoder.embed_tokens.", "encoder.embed_positions.", "decoder.", "lm_head.", "final_logits_bias"),
    "mpnet": ("embeddings.", "pooler.", "lm_head."),
    "whisper": ("encoder.embed_positions.", "decoder.", "proj_out."),
}
# The encoder's tensors that do not come from the Hub.
NOT_FROM_HUB = {"bart": ("encoder.embed_positions.weight",), "whisper": ("encoder.embed_positions.weight",)}


def is_patchroot(arch):
    return isinstance(arch, str) and arch.startswith(PREFIX)


def config(name, **overrides):
    """The config of CONFIGS[name], with overrides (small test sizes)."""
    if name not in CONFIGS:
        raise SystemExit("encoder %s%s: GATE's patch root is built for %s" % (PREFIX, name, ", ".join(sorted(CONFIGS))))
    c = dict(CONFIGS[name])
    c.update(overrides)
    return c


def find_nearest_n(x, target):
    """GATE's find_nearest_n (whisper_audio.py): the n for which (x / n)^2
    is closest to target (floor on a tie goes to ceil, as GATE's strict <);
    1 where GATE's floor is 0 (it divides by zero there)."""
    ideal = x / math.sqrt(target)
    lo, hi = math.floor(ideal), math.ceil(ideal)
    if lo < 1:
        return 1
    return lo if abs(target - (x / lo) ** 2) < abs(target - (x / hi) ** 2) else hi


class VisionRoot(nn.Module):
    """GATE's BaseVisionRootLayer for images of height x width."""

    def __init__(self, dim, height, width, patch, channels=3):
        super().__init__()
        # GATE's order of creation (the seed's draws follow it).
        self.class_embedding = nn.Parameter(torch.randn(dim))
        self.patch_embedding = nn.Conv2d(channels, dim, patch, patch, bias=False)
        self.grid = (height // patch, width // patch)
        self.position_embedding = nn.Embedding(self.grid[0] * self.grid[1] + 1, dim)
        self.patch = patch

    def forward(self, x):
        t = self.patch_embedding(x).flatten(2).transpose(1, 2)
        if t.shape[1] + 1 != self.position_embedding.num_embeddings:
            raise SystemExit("GATE's patch root was built for %d x %d px images (a %d x %d grid of %d px patches and no "
                             "interpolation), not %d x %d" % (self.grid[0] * self.patch, self.grid[1] * self.patch,
                                                                self.grid[0], self.grid[1], self.patch, x.shape[2], x.shape[3]))
        cls = self.class_embedding.to(t.dtype).expand(t.shape[0], 1, -1)
        return torch.cat([cls, t], dim=1) + self.position_embedding.weight.to(t.dtype)


def hf_init(module, std=INIT_STD):
    """Hugging Face's _init_weights for these models: linear, conv and
    embedding weights N(0, std), biases 0, LayerNorms 1 and 0."""
    for m in module.modules():
        if isinstance(m, (nn.Linear, nn.Conv1d)):
            nn.init.normal_(m.weight, std=std)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding):
            nn.init.normal_(m.weight, std=std)
        elif isinstance(m, nn.LayerNorm):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)


class PatchRootEncoder(nn.Module):
    """GATE's VisionRootReplacedBackbone around one of the four, for images
    [C, H, W] (C 1 or 3; grey images are repeated to three channels, as
    GATE's transforms do). .width is the features' size, .grid the patch
    grid (None for Whisper, whose 1500 tokens lie on none)."""

    library = "patchroot"

    def __init__(self, name, shape, cfg=None):
        super().__init__()
        c = cfg or config(name)
        if len(shape) != 3:
            raise SystemExit("%s%s takes images [C, H, W]; this dataset's examples are %s" % (PREFIX, name, list(shape)))
        ch, h, w = shape
        if ch not in (1, 3):
            raise SystemExit("%s%s takes RGB or grey images, not %d channels" % (PREFIX, name, ch))
        self.name, self.cfg, self.kind = name, c, c["kind"]
        self.grey_to_rgb = ch == 1
        self.input_shape = list(shape)
        if self.kind == "whisper":
            patch, root = find_nearest_n(math.sqrt(h * w), c["frames"]), c["mels"]
        else:
            patch, root = c["patch"], c["dim"]
        if h < patch or w < patch:
            raise SystemExit("%s%s: %d x %d px images are smaller than its %d px patches" % (PREFIX, name, h, w, patch))
        self.root = VisionRoot(root, h, w, patch)
        self.tokens = self.root.grid[0] * self.root.grid[1] + 1
        self.encoder = BODIES[self.kind](c, self.tokens)
        hf_init(self.encoder)
        self.width = c["dim"]
        self.grid = None if self.kind == "whisper" else self.root.grid

    def outputs(self, x):
        """GATE's dict: features, raw_features, per_layer_raw_features."""
        if self.grey_to_rgb:
            x = x.expand(-1, 3, -1, -1)
        last, states = self.encoder(self.root(x))
        return {"features": last.mean(dim=1), "raw_features": last, "per_layer_raw_features": states}

    def forward(self, x):
        return self.outputs(x)["features"]

    def gate(self, x, per_layer=False):
        out = self.outputs(x)
        if not per_layer:
            out["per_layer_raw_features"] = [out["raw_features"]]
        return out

    def trunk(self, x):
        """The last state's patch tokens on their grid [B, D, h, w] (the
        class token dropped), for gatepipe's compact dense heads."""
        if self.grid is None:
            raise SystemExit("%s%s has no spatial feature map (its %d tokens are Whisper's frames, on no grid); "
                             "dense heads need a grid" % (PREFIX, self.name, self.cfg["frames"] // 2))
        t = self.outputs(x)["raw_features"][:, 1:]
        return t.transpose(1, 2).reshape(t.shape[0], t.shape[2], self.grid[0], self.grid[1])

    def gate_info(self, per_layer=False):
        """gate()'s sizes without a forward pass."""
        c = self.cfg
        t = c["frames"] // 2 if self.kind == "whisper" else self.tokens
        n = (c["layers"] + 1 if self.kind != "whisper" else 1) if per_layer else 1
        return {"features": self.width, "raw": self.width, "layers": [("tokens", t, self.width)] * n}


def build(name, shape, cfg=None):
    return PatchRootEncoder(name, shape, cfg)


def hub_name(kind, key):
    """A Hub tensor's name in the encoder's names: the model prefix
    stripped, old BERT files' LayerNorm gamma/beta as weight/bias."""
    p = HUB_PREFIX[kind]
    if key.startswith(p):
        key = key[len(p):]
    if key.endswith(".gamma"):
        key = key[:-len(".gamma")] + ".weight"
    elif key.endswith(".beta"):
        key = key[:-len(".beta")] + ".bias"
    return key


def load(m, path, log=None):
    """Loads weights into PatchRootEncoder m from the safetensors file path:
    the Hub's model.safetensors of its model (the encoder's tensors;
    embeddings, pooler, decoder and heads ignored; BART's and Whisper's
    positions stay as GATE has them), or a file in the encoder's own names
    (root.* and encoder.*, or gatepipe's encoder.root.* and
    encoder.encoder.*; head.* ignored). Strict: a missing tensor, an
    unexpected one, a shape that differs or a non-finite value is a
    SystemExit naming them."""
    f = SafeTensors(path)
    keys = [k for k in f.header if k != "__metadata__"]
    own = m.state_dict()
    if any(k.startswith(("root.", "encoder.root.")) for k in keys):
        gp = any(k.startswith("encoder.root.") for k in keys)
        names = {}
        for k in keys:
            if gp:
                if not k.startswith("encoder."):
                    continue  # head.*
                names[k] = k[len("encoder."):]
            else:
                names[k] = k
        want, what = set(own), "its own names"
    else:
        names = {}
        ignored = HUB_IGNORED[m.kind]
        for k in keys:
            n = hub_name(m.kind, k)
            if not n.startswith(ignored):
                names[k] = n
        want = {k for k in own if k.startswith("encoder.") and k not in NOT_FROM_HUB.get(m.kind, ())}
        what = "the Hub's names of %s" % m.name
    unexpected = sorted(k for k, n in names.items() if n not in want)
    missing = sorted(want - set(names.values()))
    if unexpected or missing:
        parts = []
        if missing:
            parts.append("missing %d of the encoder's tensors: %s%s" % (len(missing), ", ".join(missing[:8]), "..." if len(missing) > 8 else ""))
        if unexpected:
            parts.append("%d tensors it does not have: %s%s" % (len(unexpected), ", ".join(unexpected[:8]), "..." if len(unexpected) > 8 else ""))
        raise SystemExit("weights %s for %s%s (read in %s): %s; is it that model's model.safetensors?"
                         % (path, PREFIX, m.name, what, "; ".join(parts)))
    state, bad = {}, []
    for k, n in names.items():
        shape = list(f.header[k]["shape"])
        if shape != list(own[n].shape):
            raise SystemExit("weights %s: tensor %s is %s, %s%s's %s is %s" % (path, k, shape, PREFIX, m.name, n, list(own[n].shape)))
        t = read_float32(f, k)
        if not torch.isfinite(t).all():
            bad.append(k)
        state[n] = t
    if bad:
        raise SystemExit("weights %s hold non-finite values in %d tensor(s): %s" % (path, len(bad), ", ".join(sorted(bad)[:8])))
    m.load_state_dict(state, strict=False)
    if log is not None:
        left = sorted(set(own) - set(state))
        log("weights %s: %d %s tensors loaded (%s), %d left as GATE initialises them%s" % (
            path, len(state), m.name, what, len(left), " (" + ", ".join(left) + ")" if left else ""))
