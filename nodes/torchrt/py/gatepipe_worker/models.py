import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from . import library
from .storage import SafeTensors

# ---- gatepipe's architectures -----------------------------------------------

class Scale(nn.Module):
    """A per-channel residual scale (timm's LayerScale: ls1.gamma)."""

    def __init__(self, d):
        super().__init__()
        self.gamma = nn.Parameter(torch.full((d,), 1e-5))

    def forward(self, x):
        return x * self.gamma


class QuickGELU(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(1.702 * x)


def activation(name):
    if name in ("", None, "gelu"):
        return nn.GELU()
    if name == "gelu_tanh":
        return nn.GELU(approximate="tanh")
    if name == "quick_gelu":
        return QuickGELU()
    raise SystemExit("activation %r is not gelu, gelu_tanh or quick_gelu" % name)


class Attention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).reshape(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        if hasattr(F, "scaled_dot_product_attention"):
            o = F.scaled_dot_product_attention(q, k, v)
        else:
            a = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // self.heads))
            o = a.softmax(dim=-1) @ v
        return self.proj(o.transpose(1, 2).reshape(b, t, d))


class MLP(nn.Module):
    def __init__(self, d, hidden, act):
        super().__init__()
        self.fc1 = nn.Linear(d, hidden)
        self.act = act
        self.fc2 = nn.Linear(hidden, d)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class ViTBlock(nn.Module):
    def __init__(self, d, heads, ratio, eps, act, layer_scale):
        super().__init__()
        self.norm1 = nn.LayerNorm(d, eps=eps)
        self.attn = Attention(d, heads)
        self.ls1 = Scale(d) if layer_scale else nn.Identity()
        self.norm2 = nn.LayerNorm(d, eps=eps)
        self.mlp = MLP(d, d * ratio, activation(act))
        self.ls2 = Scale(d) if layer_scale else nn.Identity()

    def forward(self, x):
        x = x + self.ls1(self.attn(self.norm1(x)))
        return x + self.ls2(self.mlp(self.norm2(x)))


class ViT(nn.Module):
    def __init__(self, s, shape):
        super().__init__()
        d, eps = s["dim"], s.get("ln_eps") or 1e-6
        self.spec = s
        self.prefix = 0 if s.get("no_class_token") else 1
        patches = (shape[1] // s["patch"]) * (shape[2] // s["patch"])
        self.patch_embed = nn.Module()
        self.patch_embed.proj = nn.Conv2d(shape[0], d, s["patch"], s["patch"], bias=not s.get("no_patch_bias"))
        pos = patches if s.get("no_embed_class") else patches + self.prefix
        self.pos_embed = nn.Parameter(torch.zeros(1, pos, d))
        if self.prefix:
            self.cls_token = nn.Parameter(torch.zeros(1, 1, d))
        self.norm_pre = nn.LayerNorm(d, eps=eps) if s.get("norm_pre") else nn.Identity()
        self.blocks = nn.Sequential(*[ViTBlock(d, s["heads"], s.get("mlp_ratio") or 4, eps, s.get("act"), s.get("layer_scale"))
                                      for _ in range(s["depth"])])
        self.avg = s.get("pool") == "avg"
        if self.avg:
            self.fc_norm = nn.LayerNorm(d, eps=eps)
        else:
            self.norm = nn.LayerNorm(d, eps=eps)
        self.width = d

    def embed(self, x):
        """The token sequence the blocks take (prefix token first)."""
        x = self.patch_embed.proj(x).flatten(2).transpose(1, 2)
        if self.spec.get("no_embed_class"):
            x = x + self.pos_embed
        if self.prefix:
            x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1)
        if not self.spec.get("no_embed_class"):
            x = x + self.pos_embed
        return self.norm_pre(x)

    def tokens(self, x):
        x = self.blocks(self.embed(x))
        return x if self.avg else self.norm(x)

    def layer_tokens(self, x, every=False):
        """The patch tokens [B, T, D] after every block (every) or after
        the last, through the final norm and without the prefix token:
        timm's get_intermediate_layers(norm=True), which GATE's encoders
        return as per_layer_raw_features. An avg-pool ViT has no norm
        before its pooling (timm's is an Identity there), so its tokens
        come as the blocks leave them."""
        x = self.embed(x)
        outs = []
        for blk in self.blocks:
            x = blk(x)
            if every:
                outs.append(x)
        if not every:
            outs = [x]
        return [(o if self.avg else self.norm(o))[:, self.prefix:] for o in outs]

    def grid(self, x):
        """The patch tokens laid out on the patch grid, [B, D, H/p, W/p]."""
        t = self.tokens(x)[:, self.prefix:]
        p = self.spec["patch"]
        return t.transpose(1, 2).reshape(x.shape[0], self.width, x.shape[2] // p, x.shape[3] // p)

    def forward(self, x):
        t = self.tokens(x)
        if self.avg:
            return self.fc_norm(t[:, self.prefix:].mean(dim=1))
        return t[:, 0]


class BasicBlock(nn.Module):
    def __init__(self, cin, planes, stride, spec):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.width = planes
        self.downsample = shortcut(cin, planes, stride)

    def forward(self, x):
        # In-place ReLUs, as torchvision's: after a batch norm and after the
        # sum they are safe for autograd and save an allocation each.
        out = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)), inplace=True)))
        out += self.downsample(x) if self.downsample is not None else x
        return F.relu(out, inplace=True)


class Bottleneck(nn.Module):
    def __init__(self, cin, planes, stride, spec):
        super().__init__()
        groups = max(spec.get("groups") or 1, 1)
        width = planes * (spec.get("width_per_group") or 64) // 64 * groups
        self.width = planes * 4
        self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, groups=groups, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, self.width, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(self.width)
        self.downsample = shortcut(cin, self.width, stride)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)), inplace=True)
        out = F.relu(self.bn2(self.conv2(out)), inplace=True)
        out = self.bn3(self.conv3(out))
        out += self.downsample(x) if self.downsample is not None else x
        return F.relu(out, inplace=True)


def shortcut(cin, cout, stride):
    if stride == 1 and cin == cout:
        return None
    return nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))


class ResNet(nn.Module):
    def __init__(self, s, shape):
        super().__init__()
        c = s["channels"][0]
        imagenet = s.get("stem") == "imagenet"
        self.conv1 = nn.Conv2d(shape[0], c, 7 if imagenet else 3, 2 if imagenet else 1, 3 if imagenet else 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.pool = nn.MaxPool2d(3, 2, 1) if imagenet else nn.Identity()
        block = Bottleneck if s.get("block") == "bottleneck" else BasicBlock
        for i, (planes, n) in enumerate(zip(s["channels"], s["blocks"])):
            blocks = []
            for j in range(n):
                b = block(c, planes, 2 if i > 0 and j == 0 else 1, s)
                blocks.append(b)
                c = b.width
            setattr(self, "layer%d" % (i + 1), nn.Sequential(*blocks))
        self.depth = len(s["channels"])
        self.width = c

    def trunk(self, x):
        x = self.pool(F.relu(self.bn1(self.conv1(x)), inplace=True))
        for i in range(self.depth):
            x = getattr(self, "layer%d" % (i + 1))(x)
        return x

    def forward(self, x):
        return self.trunk(x).mean(dim=(2, 3))


class LayerNorm2d(nn.LayerNorm):
    """LayerNorm over the channels of [B, C, H, W]."""

    def forward(self, x):
        return F.layer_norm(x.permute(0, 2, 3, 1), self.normalized_shape, self.weight, self.bias, self.eps).permute(0, 3, 1, 2)


class GRN(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(d))
        self.bias = nn.Parameter(torch.zeros(d))

    def forward(self, x):  # [B, H, W, D]
        gx = x.pow(2).sum(dim=(1, 2), keepdim=True).sqrt()
        nx = gx / (gx.mean(dim=-1, keepdim=True) + 1e-6)
        return x + x * nx * self.weight + self.bias


class ConvNeXtBlock(nn.Module):
    def __init__(self, c, version):
        super().__init__()
        self.conv_dw = nn.Conv2d(c, c, 7, 1, 3, groups=c)
        self.norm = nn.LayerNorm(c, eps=1e-6)
        self.mlp = nn.Module()
        self.mlp.fc1 = nn.Linear(c, 4 * c)
        if version == 2:
            self.mlp.grn = GRN(4 * c)
        self.mlp.fc2 = nn.Linear(4 * c, c)
        self.v2 = version == 2
        if not self.v2:
            self.gamma = nn.Parameter(torch.full((c,), 1e-6))

    def forward(self, x):
        y = self.norm(self.conv_dw(x).permute(0, 2, 3, 1))
        y = F.gelu(self.mlp.fc1(y))
        if self.v2:
            y = self.mlp.grn(y)
        y = self.mlp.fc2(y)
        if not self.v2:
            y = y * self.gamma
        return x + y.permute(0, 3, 1, 2)


class ConvNeXt(nn.Module):
    def __init__(self, s, shape):
        super().__init__()
        ch, version = s["channels"], s.get("version") or 1
        self.stem = nn.Sequential(nn.Conv2d(shape[0], ch[0], 4, 4), LayerNorm2d(ch[0], eps=1e-6))
        stages, c = [], ch[0]
        for i, (w, n) in enumerate(zip(ch, s["blocks"])):
            st = nn.Module()
            if i > 0:
                st.downsample = nn.Sequential(LayerNorm2d(c, eps=1e-6), nn.Conv2d(c, w, 2, 2))
                c = w
            st.blocks = nn.Sequential(*[ConvNeXtBlock(c, version) for _ in range(n)])
            stages.append(st)
        self.stages = nn.ModuleList(stages)
        self.head = nn.Module()
        self.head.norm = nn.LayerNorm(c, eps=1e-6)
        self.width = c

    def trunk(self, x):
        x = self.stem(x)
        for st in self.stages:
            if hasattr(st, "downsample"):
                x = st.downsample(x)
            x = st.blocks(x)
        return x

    def forward(self, x):
        return self.head.norm(self.trunk(x).mean(dim=(2, 3)))


class ConvNet(nn.Module):
    """conv3x3 + ReLU + 2x2 max pool per width, flattened."""

    def __init__(self, s, shape):
        super().__init__()
        c, h, w = shape
        convs = []
        for out in s["channels"]:
            convs.append(nn.Conv2d(c, out, 3, 1, 1))
            c, h, w = out, h // 2, w // 2
        self.convs = nn.ModuleList(convs)
        self.width = c * h * w

    def trunk(self, x):
        for conv in self.convs:
            x = F.max_pool2d(F.relu(conv(x)), 2)
        return x

    def forward(self, x):
        return self.trunk(x).flatten(1)


class Flatten(nn.Module):
    def __init__(self, s, shape):
        super().__init__()
        self.width = int(np.prod(shape))

    def forward(self, x):
        return x.flatten(1)


ARCHS = {"mlp": Flatten, "convnet": ConvNet, "resnet": ResNet, "convnext": ConvNeXt, "vit": ViT}


class Encoder(nn.Module):
    """A gatepipe encoder: its trunk (the architecture's modules, under
    encoder.) and the dense layers after it (encoder.fcs.I)."""

    def __init__(self, spec, shape, dense=False):
        super().__init__()
        arch = ARCHS.get(spec.get("arch"))
        if library.is_library(spec.get("arch")):
            arch = library.build
        if arch is None:
            raise SystemExit("the torch runtime has no %r encoder (it builds %s, timm:NAME, torchvision:NAME, patchroot:NAME and python:PATH:CALLABLE)" % (spec.get("arch"), ", ".join(sorted(ARCHS))))
        if spec.get("input_shape") and list(spec["input_shape"]) != list(shape):
            raise SystemExit("the torch runtime does not build the modality stem yet (encoder input_shape %s, data %s): "
                             "use runtime = \"go\" for this block" % (spec["input_shape"], list(shape)))
        self.spec = spec
        self.body = arch(spec, shape)
        if dense:  # the pooled features' norms are not part of a dense head's trunk
            if isinstance(self.body, ConvNeXt):
                del self.body.head
            if isinstance(self.body, ViT) and self.body.avg:
                del self.body.fc_norm
        widths, f = [], self.body.width
        for out in ([] if dense else spec.get("hidden") or []):
            widths.append(nn.Linear(f, out))
            f = out
        self.fcs = nn.ModuleList(widths)
        self.width = f

    def forward(self, x):
        x = self.body(x)
        for fc in self.fcs:
            x = F.relu(fc(x))
        return x

    def spatial(self, x):
        """The trunk's last feature map [B, C, h, w] (the ViT's patch
        tokens on their grid), for dense heads."""
        if isinstance(self.body, ViT):
            return self.body.grid(x)
        if library.is_library(self.spec["arch"]):
            return library.trunk(self.body, x)
        if not hasattr(self.body, "trunk"):
            raise SystemExit("a %s encoder has no spatial features; dense heads need convnet, resnet, convnext or vit" % self.spec["arch"])
        return self.body.trunk(x)

    def spatial_width(self):
        b = self.body
        if library.is_library(self.spec["arch"]):
            return library.spatial_width(b)
        if isinstance(b, ConvNet):
            return self.spec["channels"][-1]
        return b.width

    def gate(self, x, per_layer=False):
        """What GATE's image encoders return (GATE@65192ec
        gate/models/backbones/timm.py, TimmModel.forward), before GATE's
        768 projection (which the adapters here own):

          features                [B, F]  ViT: the mean of the final-normed
                                          patch tokens; CNN: the global
                                          average pool of the last map
          raw_features            [B, T, D] the last layer's patch tokens,
                                          or the last map as a sequence
                                          (row-major), or None
          per_layer_raw_features  ViT: every block's normed patch tokens
                                  [B, T, D] (per_layer; else the last
                                  only); CNN: [the last map [B, C, h, w]]

        Prefix (class) tokens are dropped. Built for the protocol's heads
        (TaskModel with a protocol): no dense layers (hidden) after the
        trunk, no ViT fc_norm, no ConvNeXt head norm."""
        b = self.body
        if isinstance(b, ViT):
            layers = b.layer_tokens(x, every=per_layer)
            raw = layers[-1]
            return {"features": raw.mean(dim=1), "raw_features": raw, "per_layer_raw_features": layers}
        if isinstance(b, Flatten):
            return {"features": self.forward(x), "raw_features": None, "per_layer_raw_features": None}
        if library.is_library(self.spec["arch"]):
            return library.gate_outputs(b, x, per_layer)
        return library.map_outputs(b.trunk(x))

    def gate_info(self, shape, per_layer=False):
        """The sizes of gate()'s outputs for one input of shape [C, H, W]:
        {"features": F, "raw": D or None, "layers": [("tokens", T, D) or
        ("map", C), ...] or None}, worked out for gatepipe's
        architectures, measured on a zero batch for library and user
        models."""
        b = self.body
        if isinstance(b, ViT):
            p, d = self.spec["patch"], b.width
            t = (shape[1] // p) * (shape[2] // p)
            return {"features": d, "raw": d, "layers": [("tokens", t, d)] * (len(b.blocks) if per_layer else 1)}
        if isinstance(b, Flatten):
            return {"features": self.width, "raw": None, "layers": None}
        if not library.is_library(self.spec["arch"]):
            c = self.spatial_width()
            return {"features": c, "raw": c, "layers": [("map", c)]}
        if isinstance(b, library.patchroot.PatchRootEncoder):
            return b.gate_info(per_layer)
        was = self.training
        self.eval()
        with torch.no_grad():
            out = self.gate(torch.zeros(1, *shape), per_layer)
        self.train(was)
        raw = out["raw_features"]
        layers = None
        if out["per_layer_raw_features"] is not None:
            layers = [("map", int(t.shape[1])) if t.dim() == 4 else ("tokens", int(t.shape[1]), int(t.shape[2]))
                      for t in out["per_layer_raw_features"]]
        return {"features": int(out["features"].shape[1]), "raw": None if raw is None else int(raw.shape[2]), "layers": layers}


class Model(nn.Module):
    """An encoder and a linear head (head.weight, head.bias)."""

    def __init__(self, spec, shape, outputs):
        super().__init__()
        self.encoder = Encoder(spec, shape)
        self.head = nn.Linear(self.encoder.width, outputs) if outputs > 0 else None

    def forward(self, x):
        return self.head(self.encoder(x))


class HeadBlock(nn.Module):
    """A pre-norm transformer block of the video and relational heads
    (LayerNorm eps 1e-6, MLP ratio 2, tanh GELU, as gatepipe's)."""

    def __init__(self, d, heads):
        super().__init__()
        self.norm1 = nn.LayerNorm(d, eps=1e-6)
        self.attn = Attention(d, heads)
        self.norm2 = nn.LayerNorm(d, eps=1e-6)
        self.mlp = MLP(d, 2 * d, nn.GELU(approximate="tanh"))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


def head_sizes(spec):
    h = spec.get("head") or {}
    return {"layers": h.get("layers") or 4, "dim": h.get("dim") or 64, "heads": h.get("heads") or 4,
            "ways": h.get("ways") or 5, "shots": h.get("shots") or 5, "queries": h.get("queries") or 5}


class SequenceHead(nn.Module):
    """The video head (frame features projected, a position embedding per
    frame, a transformer, the mean over frames, a linear layer) and the
    relational one (the image's projection and the question's word
    embeddings as one sequence, a transformer, the first token, a linear
    layer), in gatepipe's names."""

    def __init__(self, kind, f, tokens, classes, h, vocab=0):
        super().__init__()
        d = h["dim"]
        if d % h["heads"]:
            raise SystemExit("%s head: dim %d is not a multiple of heads %d" % (kind, d, h["heads"]))
        self.kind = kind
        if kind == "video":
            self.proj = nn.Linear(f, d)
        else:
            self.img = nn.Linear(f, d)
            self.embed = nn.Embedding(vocab, d)
        self.pos_embed = nn.Parameter(torch.zeros(1, tokens, d))
        self.blocks = nn.Sequential(*[HeadBlock(d, h["heads"]) for _ in range(h["layers"])])
        self.norm = nn.LayerNorm(d, eps=1e-6)
        self.fc = nn.Linear(d, classes)

    def forward(self, feat, q=None):
        if self.kind == "video":
            seq = self.proj(feat)
        else:
            seq = torch.cat([self.img(feat).unsqueeze(1), self.embed(q)], dim=1)
        seq = self.norm(self.blocks(seq + self.pos_embed))
        return self.fc(seq.mean(dim=1) if self.kind == "video" else seq[:, 0])


class RetrievalHead(nn.Module):
    """Image and caption embeddings (the caption a bag of word
    embeddings), each projected and normalised; logits their cosine
    similarities times 10."""

    def __init__(self, f, h, vocab):
        super().__init__()
        d = h["dim"]
        self.img = nn.Linear(f, d)
        self.embed = nn.Embedding(vocab, d)
        self.txt = nn.Linear(d, d)

    def forward(self, feat, q):
        norm = lambda v: v / torch.sqrt((v * v).sum(dim=1, keepdim=True) + 1e-8)
        img = norm(self.img(feat))
        txt = norm(self.txt(self.embed(q).mean(dim=1)))
        return img @ txt.T * 10.0, torch.cat([img, txt], dim=1)


class TaskModel(nn.Module):
    """An encoder with the head of one of gatepipe's eight task families,
    in gatepipe's tensor names (encoder.*, head.*). forward returns the
    logits the family's loss takes (retrieval: logits and embeddings).

    With a protocol card (the job's "protocol"), the head is GATE's task
    adapter for the family (adapters/), at the card's sizes, on GATE's
    view of the encoder (Encoder.gate); text is the job's text tower
    configuration for the adapters that read one. Without, gatepipe's
    compact heads."""

    def __init__(self, task, spec, shape, outputs, qlen=0, vocab=0, protocol=None, text=None):
        super().__init__()
        self.task, self.sizes = task, head_sizes(spec)
        self.protocol = protocol or None
        h = self.sizes
        clips = task in ("video", "video_regression")
        frame = shape[1:] if clips else shape
        if self.protocol is not None:
            from . import adapters
            adapters.check(task, self.protocol)
            # GATE's features are the trunk's pooled map or tokens: no dense
            # layers after it, no ViT fc_norm or ConvNeXt head norm (an MLP
            # encoder keeps its layers: they are all it has).
            self.encoder = Encoder(spec, frame, dense=spec.get("arch") != "mlp")
            info = self.encoder.gate_info(frame, per_layer=task == "segmentation")
            tower = adapters.build_text(self.protocol, text) if task in adapters.TEXT_FAMILIES else None
            self.head = adapters.build(task, self.protocol, info, outputs, frame[0], tower)
            return
        # A dense head takes the trunk's map: no dense layers after it.
        self.encoder = Encoder(spec, frame, dense=task == "segmentation")
        f = self.encoder.width
        if task == "segmentation":
            self.head = nn.Conv2d(self.encoder.spatial_width(), outputs, 1)
        elif clips:
            self.head = SequenceHead("video", f, shape[0], outputs, h)
        elif task == "relational":
            self.head = SequenceHead("relational", f, qlen + 1, outputs, h, vocab)
        elif task == "retrieval":
            self.head = RetrievalHead(f, h, vocab)
        elif task == "fewshot":
            self.head = None
        else:
            self.head = nn.Linear(f, outputs)

    def forward(self, x, q=None, episode=None, size=None):
        """size: the segmentation logits' [H, W] with a protocol (the
        masks'; default the input's)."""
        t = self.task
        if self.protocol is not None:
            if t == "segmentation":
                return self.head(self.encoder.gate, x, size=size)
            return self.head(self.encoder.gate, x, q=q, episode=episode)
        if t == "segmentation":
            z = self.head(self.encoder.spatial(x))
            return F.interpolate(z, size=x.shape[2:], mode="bilinear", align_corners=False)
        if t in ("video", "video_regression"):
            b, frames = x.shape[0], x.shape[1]
            feat = self.encoder(x.flatten(0, 1)).view(b, frames, -1)
            return self.head(feat)
        if t == "relational":
            return self.head(self.encoder(x), q)
        if t == "retrieval":
            return self.head(self.encoder(x), q)
        if t == "fewshot":
            ways, shots, queries = episode
            feat = self.encoder(x)
            protos = feat[:ways * shots].view(ways, shots, -1).mean(dim=1)
            qf = feat[ways * shots:]
            return 2 * qf @ protos.T - (qf * qf).sum(dim=1, keepdim=True) - (protos * protos).sum(dim=1)
        return self.head(self.encoder(x))


def gatepipe_names(model):
    """Maps gatepipe's tensor names to the module's state_dict names: the
    trunk's modules sit under encoder.body., which gatepipe's names omit."""
    out = {}
    for name in model.state_dict():
        if name.endswith("num_batches_tracked"):
            continue
        out[name.replace("encoder.body.", "encoder.", 1)] = name
    return out


def load_weights(model, path, required=None):
    """Loads every tensor of model from a safetensors file in gatepipe's
    names. With required (a tuple of name prefixes, ("encoder.",) for
    GATE's adapters, which torch initialises from the seed), only the
    tensors under them must be there; the others are loaded where the
    file has them."""
    f = SafeTensors(path)
    names = gatepipe_names(model)
    state = model.state_dict()
    if required is not None:
        names = {g: local for g, local in names.items() if g.startswith(tuple(required)) or g in f.header}
    missing = [g for g in names if g not in f.header]
    if missing:
        raise SystemExit("%s: missing %d of the model's tensors: %s" % (path, len(missing), ", ".join(sorted(missing)[:8])))
    for g, local in names.items():
        t = f.tensor(g).to(torch.float32)
        if list(t.shape) != list(state[local].shape):
            raise SystemExit("%s: tensor %s is %s, the model's is %s" % (path, g, list(t.shape), list(state[local].shape)))
        state[local] = t.clone()
    model.load_state_dict(state)


def init_weights(model, cfg, log):
    """The model's starting weights: gatepipe's in its tensor names
    (cfg["weights"], what gatepipe draws or the encoder's), else, for a
    timm or torchvision encoder, torch's seeded initialisation and the
    encoder's own state dict (cfg["library_weights"]) where given (the
    caller seeds torch before building the model). With a protocol, the
    file needs only the encoder's tensors (GATE's adapter starts from
    torch's seeded initialisation), and the text tower loads CLIP's
    weights from cfg["text"]["weights"] where given."""
    protocol = getattr(model, "protocol", None)
    if cfg.get("weights"):
        load_weights(model, cfg["weights"], ("encoder.",) if protocol is not None else None)
    elif not library.is_library(cfg["encoder"].get("arch")):
        raise SystemExit("no weights for a %s encoder: gatepipe writes them" % cfg["encoder"].get("arch"))
    if cfg.get("library_weights"):
        library.load_own_weights(model.encoder.body, cfg["library_weights"], log)
    text = getattr(getattr(model, "head", None), "text", None)
    if protocol is not None and text is not None and (cfg.get("text") or {}).get("weights"):
        from .cliptext import load_hub
        load_hub(text, cfg["text"]["weights"], log)


def convolutional(spec):
    """Whether the encoder is convolutional: its weights and image inputs
    are laid out channels last (measured on the CPU: gatepipe's ResNet-18
    and ResNet-50 1.2-1.3x faster forwards, 1.1-1.2x in training)."""
    return spec.get("arch") in ("convnet", "resnet", "convnext") or (
        library.is_library(spec.get("arch")) and not str(spec.get("arch")).startswith(("python:", library.patchroot.PREFIX)))
