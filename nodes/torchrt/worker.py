"""gatepipe's PyTorch runtime worker (protocol gatepipe-trainer/1).

gatepipe runs it as `python -c <this file>` for a block with
runtime = "torch", with $GATEPIPE_EXPERIMENT naming experiment.json: the
job (config.job), the encoder as gatepipe describes it (config.encoder,
gatepipe's EncoderSpec), its weights as a safetensors file in gatepipe's
tensor names, the example store, the output directory and the devices.
The models here are gatepipe's built-in architectures (mlp, convnet,
resnet, convnext, vit) with gatepipe's tensor names, so weights go both
ways between the Go and the torch runtime and both compute the same
function.

Jobs:
  features  the encoder's pooled features (or, with classes > 0, the
            head's softmax probabilities) of every split, in evaluation
            mode under inference_mode, written as SPLIT.safetensors
            (tensor "x", float32 [N, F]) into config.work; gatepipe
            writes the feature store from them.

Progress goes to log.jsonl beside experiment.json ({"step", "total"}),
errors to stderr as one last line. Standard library, torch and numpy.
"""
import json
import math
import mmap
import os
import struct
import sys
import time
import warnings

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
    from torch import nn
except ImportError as e:
    raise SystemExit("%s cannot import torch (%s): install PyTorch for it (Debian: apt-get install python3-torch; "
                     "else pip install torch), or set runtime_python / GATEPIPE_PYTHON to an interpreter that has it"
                     % (sys.executable, e))

DTYPES = {"F32": (torch.float32, np.float32), "F16": (torch.float16, np.float16), "F64": (torch.float64, np.float64),
          "I64": (torch.int64, np.int64), "I32": (torch.int32, np.int32), "U8": (torch.uint8, np.uint8),
          "I8": (torch.int8, np.int8), "BF16": (torch.bfloat16, None)}


# ---- safetensors -----------------------------------------------------------

class SafeTensors:
    """A safetensors file, memory-mapped: tensors are read on demand."""

    def __init__(self, path):
        self.path = path
        with open(path, "rb") as f:
            head = f.read(8)
            if len(head) < 8:
                raise SystemExit("%s: not a safetensors file (%d bytes)" % (path, len(head)))
            (n,) = struct.unpack("<Q", head)
            size = os.fstat(f.fileno()).st_size
            if n > size - 8 or n > 100 << 20:
                raise SystemExit("%s: header of %d bytes in a file of %d" % (path, n, size))
            self.header = json.loads(f.read(n))
            self.base = 8 + n
            self.map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size > 0 else b""
        self.size = size

    def names(self):
        return [k for k in self.header if k != "__metadata__"]

    def info(self, name):
        h = self.header.get(name)
        if h is None:
            raise SystemExit("%s: no tensor %r" % (self.path, name))
        return h

    def numpy(self, name, rows=None):
        """The tensor (or rows [a, b) of its first axis) as a read-only numpy array."""
        h = self.info(name)
        tdtype, ndtype = DTYPES.get(h["dtype"], (None, None))
        if ndtype is None:
            raise SystemExit("%s: tensor %s has dtype %s, which the torch runtime does not read" % (self.path, name, h["dtype"]))
        shape = list(h["shape"])
        b, e = h["data_offsets"]
        count = int(np.prod(shape)) if shape else 1
        if e - b != count * np.dtype(ndtype).itemsize or self.base + e > self.size:
            raise SystemExit("%s: tensor %s: %d bytes at offset %d do not hold %s %s" % (self.path, name, e - b, self.base + b, h["dtype"], shape))
        a = np.frombuffer(self.map, dtype=ndtype, count=count, offset=self.base + b).reshape(shape)
        if rows is not None:
            a = a[rows[0]:rows[1]]
        return a

    def tensor(self, name, rows=None):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # read-only buffers: copied where written
            return torch.from_numpy(self.numpy(name, rows))


def write_safetensors(path, tensors, metadata=None):
    """Writes name -> tensor (float32/int64 on the CPU) through a temporary file and a rename."""
    names = {torch.float32: "F32", torch.int64: "I64", torch.uint8: "U8", torch.float16: "F16"}
    header, blobs, off = {}, [], 0
    if metadata:
        header["__metadata__"] = {k: str(v) for k, v in metadata.items()}
    for name in sorted(tensors):
        t = tensors[name].detach().to("cpu").contiguous()
        b = t.numpy().tobytes()
        header[name] = {"dtype": names[t.dtype], "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for b in blobs:
            f.write(b)
    os.replace(path + ".tmp", path)


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

    def tokens(self, x):
        x = self.patch_embed.proj(x).flatten(2).transpose(1, 2)
        if self.spec.get("no_embed_class"):
            x = x + self.pos_embed
        if self.prefix:
            x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1)
        if not self.spec.get("no_embed_class"):
            x = x + self.pos_embed
        x = self.blocks(self.norm_pre(x))
        return x if self.avg else self.norm(x)

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
        out = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        return F.relu(out + (self.downsample(x) if self.downsample is not None else x))


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
        out = F.relu(self.bn1(self.conv1(x)))
        out = F.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return F.relu(out + (self.downsample(x) if self.downsample is not None else x))


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
        x = self.pool(F.relu(self.bn1(self.conv1(x))))
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

    def __init__(self, spec, shape):
        super().__init__()
        arch = ARCHS.get(spec.get("arch"))
        if arch is None:
            raise SystemExit("the torch runtime has no %r encoder (it builds %s)" % (spec.get("arch"), ", ".join(sorted(ARCHS))))
        if spec.get("input_shape") and list(spec["input_shape"]) != list(shape):
            raise SystemExit("the torch runtime does not build the modality stem yet (encoder input_shape %s, data %s): "
                             "use runtime = \"go\" for this block" % (spec["input_shape"], list(shape)))
        self.body = arch(spec, shape)
        widths, f = [], self.body.width
        for out in spec.get("hidden") or []:
            widths.append(nn.Linear(f, out))
            f = out
        self.fcs = nn.ModuleList(widths)
        self.width = f

    def forward(self, x):
        x = self.body(x)
        for fc in self.fcs:
            x = F.relu(fc(x))
        return x


class Model(nn.Module):
    """An encoder and a linear head (head.weight, head.bias)."""

    def __init__(self, spec, shape, outputs):
        super().__init__()
        self.encoder = Encoder(spec, shape)
        self.head = nn.Linear(self.encoder.width, outputs) if outputs > 0 else None

    def forward(self, x):
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


def load_weights(model, path):
    """Loads every tensor of model from a safetensors file in gatepipe's names."""
    f = SafeTensors(path)
    names = gatepipe_names(model)
    state = model.state_dict()
    missing = [g for g in names if g not in f.header]
    if missing:
        raise SystemExit("%s: missing %d of the model's tensors: %s" % (path, len(missing), ", ".join(sorted(missing)[:8])))
    for g, local in names.items():
        t = f.tensor(g).to(torch.float32)
        if list(t.shape) != list(state[local].shape):
            raise SystemExit("%s: tensor %s is %s, the model's is %s" % (path, g, list(t.shape), list(state[local].shape)))
        state[local] = t.clone()
    model.load_state_dict(state)


# ---- examples ---------------------------------------------------------------

class Store:
    """An example store: meta.json and SPLIT.safetensors (x, y, index)."""

    def __init__(self, path):
        self.path = path
        with open(os.path.join(path, "meta.json")) as f:
            self.meta = json.load(f)
        self.shape = list(self.meta["shape"])

    def split(self, name):
        return SafeTensors(os.path.join(self.path, name + ".safetensors"))


def channel_layout(shape):
    if len(shape) == 1:
        return shape[0], 1
    if len(shape) == 3:
        return shape[0], shape[1] * shape[2]
    if len(shape) == 4:
        return shape[1], shape[2] * shape[3]
    return 1, 1


class Inputs:
    """Turns a batch of stored examples into the encoder's input: the
    store's normalisation, or (with an evaluation transform) pixels scaled
    to [0, 1], grey repeated to the model's channels, the shorter side
    resized (antialiased), centre-cropped and normalised, as gatepipe's
    imageops does."""

    def __init__(self, store, pre, device):
        self.meta, self.shape, self.pre, self.device = store.meta, store.shape, pre, device
        norm = self.meta["normalize"]
        self.scale = float(norm["scale"])
        c, _ = channel_layout(self.shape)
        view = [1, c] + [1] * (len(self.shape) - 1) if len(self.shape) >= 3 else [1, c]
        if len(self.shape) == 4:
            view = [1, 1, c, 1, 1]
        self.mean = torch.tensor(norm["mean"], dtype=torch.float64, device=device).view(view)
        self.std = torch.tensor(norm["std"], dtype=torch.float64, device=device).view(view)
        if pre:
            if len(self.shape) != 3:
                raise SystemExit("the encoder's preprocess resizes images [C, H, W]; this dataset's examples are %s" % self.shape)
            pm = pre.get("mean") or []
            self.pmean = torch.tensor(pm, dtype=torch.float32, device=device).view(1, -1, 1, 1) if pm else None
            self.pstd = torch.tensor(pre.get("std"), dtype=torch.float32, device=device).view(1, -1, 1, 1) if pm else None

    def out_shape(self):
        if not self.pre:
            return self.shape
        c = self.pre.get("channels") or self.shape[0]
        return [c] + list(self.pre["size"])

    def __call__(self, x):
        x = x.to(self.device, non_blocking=True).to(torch.float64)
        if not self.pre:
            return ((x * self.scale - self.mean) / self.std).to(torch.float32)
        x = (x * self.scale).to(torch.float32)
        p = self.pre
        c = p.get("channels") or 0
        if c and x.shape[1] != c:
            if x.shape[1] != 1:
                raise SystemExit("preprocess: %d-channel images for a %d-channel model" % (x.shape[1], c))
            x = x.expand(-1, c, -1, -1)
        h, w = x.shape[2], x.shape[3]
        size = p["size"]
        side = p.get("resize_to") or 0
        if side <= 0:
            side = int(math.floor(min(size) / (p.get("crop_pct") or 0.875)))
        if h <= w:
            oh, ow = side, int(side * w / h)
        else:
            oh, ow = int(side * h / w), side
        mode = p.get("interpolation") or "bilinear"
        if (oh, ow) != (h, w):
            x = F.interpolate(x, size=(oh, ow), mode=mode, align_corners=False, antialias=True)
        x = center_crop(x, size[0], size[1])
        if self.pmean is not None:
            x = (x - self.pmean) / self.pstd
        return x.contiguous()


def center_crop(x, ch, cw):
    """Crops [B, C, H, W] to ch x cw around the centre, offsets rounded half
    to even (torchvision's CenterCrop); a larger crop pads with zeros."""
    h, w = x.shape[2], x.shape[3]
    top, left = int(round((h - ch) / 2.0)), int(round((w - cw) / 2.0))
    if top >= 0 and left >= 0:
        return x[:, :, top:top + ch, left:left + cw]
    out = x.new_zeros((x.shape[0], x.shape[1], ch, cw))
    sy, sx = max(top, 0), max(left, 0)
    dy, dx = max(-top, 0), max(-left, 0)
    hh, ww = min(h - sy, ch - dy), min(w - sx, cw - dx)
    out[:, :, dy:dy + hh, dx:dx + ww] = x[:, :, sy:sy + hh, sx:sx + ww]
    return out


# ---- the run ----------------------------------------------------------------

class Run:
    """What every job shares: the experiment, the device, the log."""

    def __init__(self, exp_path):
        with open(exp_path) as f:
            self.exp = json.load(f)
        if self.exp.get("protocol") != "gatepipe-trainer/1":
            raise SystemExit("%s: protocol %r, not gatepipe-trainer/1" % (exp_path, self.exp.get("protocol")))
        self.cfg = self.exp["config"]
        self.log_path = os.path.join(os.path.dirname(exp_path), "log.jsonl")
        dev = self.exp["devices"]
        torch.set_num_threads(max(int(dev.get("cpus") or 1), 1))
        self.cuda = dev.get("device") == "cuda"
        if self.cuda and not torch.cuda.is_available():
            raise SystemExit("gatepipe assigned GPUs %s, but torch %s in %s sees no CUDA device" % (dev.get("gpus"), torch.__version__, sys.executable))
        self.device = torch.device("cuda" if self.cuda else "cpu")
        self.precision = self.cfg.get("precision") or "auto"
        if self.precision == "auto":
            self.precision = "bf16" if self.cuda and torch.cuda.is_bf16_supported() else "fp32"
        if self.cuda:
            torch.backends.cuda.matmul.allow_tf32 = self.precision == "tf32"
            torch.backends.cudnn.allow_tf32 = self.precision == "tf32"
            torch.backends.cudnn.benchmark = True
        self.last = 0.0

    def autocast(self):
        if self.precision in ("bf16", "fp16"):
            dtype = torch.bfloat16 if self.precision == "bf16" else torch.float16
            return torch.autocast(device_type=self.device.type, dtype=dtype)
        return torch.autocast(device_type=self.device.type, enabled=False)

    def progress(self, step, total, force=False, **fields):
        now = time.time()
        if not force and now - self.last < 0.5:
            return
        self.last = now
        fields.update(step=step, total=total)
        with open(self.log_path, "a") as f:
            f.write(json.dumps(fields) + "\n")


def job_features(run):
    cfg = run.cfg
    store = Store(cfg["store"])
    inputs = Inputs(store, cfg.get("preprocess"), run.device)
    classes = int(cfg.get("classes") or 0)
    model = Model(cfg["encoder"], inputs.out_shape(), classes)
    load_weights(model, cfg["weights"])
    model.eval().to(run.device)
    conv = cfg["encoder"].get("arch") in ("convnet", "resnet", "convnext")
    if run.cuda and conv:
        model = model.to(memory_format=torch.channels_last)
    batch = int(cfg.get("batch_size") or 64)
    splits = cfg["splits"]
    total = sum(store.meta["splits"][s] for s in splits)
    done = 0
    os.makedirs(cfg["work"], exist_ok=True)
    for name in splits:
        f = store.split(name)
        n = f.info("x")["shape"][0]
        out = None
        with torch.inference_mode():
            for i in range(0, n, batch):
                x = inputs(f.tensor("x", (i, min(i + batch, n))))
                if run.cuda and conv and x.dim() == 4:
                    x = x.contiguous(memory_format=torch.channels_last)
                with run.autocast():
                    y = model.encoder(x)
                    if classes:
                        y = model.head(y).float().softmax(dim=-1)
                y = y.float()
                if out is None:
                    out = torch.empty((n, y.shape[1]), dtype=torch.float32, pin_memory=run.cuda)
                out[i:i + y.shape[0]].copy_(y, non_blocking=True)
                done += y.shape[0]
                run.progress(done, total)
        if run.cuda:
            torch.cuda.synchronize()
        if out is None:
            out = torch.empty((0, classes or model.encoder.width), dtype=torch.float32)
        write_safetensors(os.path.join(cfg["work"], name + ".safetensors"), {"x": out})
    run.progress(done, total, force=True)


# ---- ELEVATER's linear probe ------------------------------------------------

def argmax_first(scores):
    return scores.argmax(dim=1)


def metric_accuracy(scores, y, classes):
    if y.numel() == 0:
        return 0.0
    return 100.0 * (argmax_first(scores) == y).double().mean().item()


def metric_mean_per_class(scores, y, classes):
    pred = argmax_first(scores)
    total = torch.bincount(y, minlength=classes).double()
    right = torch.bincount(y[pred == y], minlength=classes).double()
    present = total > 0
    if not present.any():
        return 0.0
    return 100.0 * (right[present] / total[present]).mean().item()


def metric_map11(scores, y, classes):
    s, t = scores.double().cpu().numpy(), y.cpu().numpy()
    n, total, counted = len(t), 0.0, 0
    for c in range(classes):
        pos = int((t == c).sum())
        if pos == 0:
            continue
        order = np.argsort(-s[:, c], kind="stable")
        tp = np.cumsum(t[order] == c)
        prec = tp / np.arange(1, n + 1)
        rec = tp / pos
        ap = 0.0
        for k in range(11):
            ok = rec >= k / 10 - 1e-12
            ap += (prec[ok].max() if ok.any() else 0.0) / 11
        total += ap
        counted += 1
    return 100.0 * total / counted if counted else 0.0


def metric_roc_auc(scores, y, classes):
    s, t = scores.double().cpu().numpy(), y.cpu().numpy()

    def auc(c):
        pos = float((t == c).sum())
        neg = len(t) - pos
        if pos == 0 or neg == 0:
            return None
        v = s[:, c]
        order = np.argsort(v, kind="stable")
        sv = v[order]
        ranks = np.empty(len(v))
        i = 0
        while i < len(sv):
            j = i
            while j < len(sv) and sv[j] == sv[i]:
                j += 1
            ranks[i:j] = (i + j + 1) / 2.0
            i = j
        rank_sum = ranks[t[order] == c].sum()
        return (rank_sum - pos * (pos + 1) / 2) / (pos * neg)

    if classes == 2:
        return 100.0 * (auc(1) or 0.0)
    got = [a for a in (auc(c) for c in range(classes)) if a is not None]
    return 100.0 * sum(got) / len(got) if got else 0.0


METRICS = {"accuracy": metric_accuracy, "mean_per_class": metric_mean_per_class, "map11": metric_map11, "roc_auc": metric_roc_auc}


class Heads:
    """K linear probe heads trained at once on the same examples in the same
    order (ELEVATER's head: BatchNorm1d without affine on the features,
    batch statistics in training and running ones, momentum 0.1, eps 1e-5,
    in evaluation; a linear layer; SGD momentum 0.9 Nesterov with weight
    decay added to the gradient; a last batch of one example skipped), each
    with its own learning rate and weight decay. The batch statistics do
    not depend on the heads, so they are computed once for all K."""

    def __init__(self, w0, b0, lrs, wds, dtype, device):
        k = len(lrs)
        self.w = w0.to(device, dtype).unsqueeze(0).repeat(k, 1, 1)
        self.b = b0.to(device, dtype).unsqueeze(0).repeat(k, 1)
        self.lr = torch.tensor(lrs, dtype=dtype, device=device)
        self.wd = torch.tensor(wds, dtype=dtype, device=device)
        d = w0.shape[1]
        self.run_mean = torch.zeros(d, dtype=dtype, device=device)
        self.run_var = torch.ones(d, dtype=dtype, device=device)
        self.buf_w, self.buf_b, self.first = None, None, True

    def _sgd(self, p, g, buf):
        lr, wd = self.lr.view(-1, *[1] * (p.dim() - 1)), self.wd.view(-1, *[1] * (p.dim() - 1))
        d = g + wd * p
        buf = d.clone() if buf is None else 0.9 * buf + d
        p -= lr * (d + 0.9 * buf)
        return buf

    def epoch(self, x, y, order, batch):
        n = len(order)
        for start in range(0, n, batch):
            idx = order[start:start + batch]
            b = len(idx)
            if b < 2:
                continue
            xb = x[idx]
            mean = xb.mean(dim=0)
            var = ((xb - mean) ** 2).mean(dim=0)
            self.run_mean = 0.9 * self.run_mean + 0.1 * mean
            self.run_var = 0.9 * self.run_var + 0.1 * var * b / (b - 1)
            xn = (xb - mean) / torch.sqrt(var + 1e-5)
            p = torch.softmax(torch.einsum("bd,kcd->kbc", xn, self.w) + self.b[:, None, :], dim=-1)
            p[:, torch.arange(b, device=x.device), y[idx]] -= 1
            p /= b
            gw = torch.einsum("kbc,bd->kcd", p, xn)
            gb = p.sum(dim=1)
            self.buf_w = self._sgd(self.w, gw, self.buf_w)
            self.buf_b = self._sgd(self.b, gb, self.buf_b)

    def finite(self):
        return torch.isfinite(self.w).flatten(1).all(dim=1).tolist()

    def scores(self, k, x):
        xn = (x - self.run_mean) / torch.sqrt(self.run_var + 1e-5)
        return xn @ self.w[k].T + self.b[k]


def search_rounds(coarse, nwd):
    """ELEVATER's weight-decay search for one learning rate as rounds:
    yields the indices to score next, given the scores so far (a generator
    receiving them); returns the peak. Same order and ties as gatepipe's
    searchWD: a score must beat the peak strictly to move it."""
    seen = {}
    got = yield list(coarse)
    seen.update(got)
    peak, best = coarse[0], -1.0
    for i in coarse:
        if seen[i] > best:
            peak, best = i, seen[i]
    span = 8
    while span > 0:
        left, right = max(peak - span, 0), min(peak + span, nwd - 1)
        centre = peak
        todo = [i for i in dict.fromkeys([left, right]) if i != centre and i not in seen]
        if todo:
            seen.update((yield todo))
        for i in (left, right):
            if i != centre and seen[i] > best:
                peak, best = i, seen[i]
        span //= 2
    return peak, best


def job_probe(run):
    """ELEVATER's automatic search for every subset and seed in config.runs:
    per round of the search every learning rate's next weight decays train
    together as one batch of heads; then the final run on train + val."""
    cfg = run.cfg
    tune = cfg["tune"]
    dtype = torch.float64 if (cfg.get("precision") or "fp64") == "fp64" else torch.float32
    store = Store(cfg["store"])
    classes = int(cfg["classes"])
    metric = METRICS[tune["metric"]]
    splits = {}
    for name in (cfg["train_split"], cfg["test_split"]):
        f = store.split(name)
        splits[name] = (f.tensor("x").to(run.device, dtype), f.tensor("y").to(run.device, torch.int64))
    (x, y), (xt, yt) = splits[cfg["train_split"]], splits[cfg["test_split"]]
    draws = SafeTensors(cfg["draws"])
    lrs, wds = tune["lrs"], tune["wds"]
    results = []
    for r, meta in enumerate(cfg["runs"]):
        t = lambda name: draws.tensor("%d.%s" % (r, name)).to(run.device)
        tr, va = t("train"), t("val")
        xtr, ytr, xva, yva = x[tr], y[tr], x[va], y[va]
        w0, b0, order = t("trial_w"), t("trial_b"), t("trial_order").long().view(tune["epochs"], -1)
        searches = [search_rounds(tune["coarse"], len(wds)) for _ in lrs]
        asks = [s.send(None) for s in searches]
        trials = [[] for _ in lrs]
        peaks = [None] * len(lrs)
        while any(a is not None for a in asks):
            pairs = [(k, i) for k, a in enumerate(asks) if a is not None for i in a]
            heads = Heads(w0, b0, [lrs[k] for k, _ in pairs], [wds[i] for _, i in pairs], dtype, run.device)
            best = [0.0] * len(pairs)
            for e in range(tune["epochs"]):
                heads.epoch(xtr, ytr, order[e], tune["batch"])
                for j, ok in enumerate(heads.finite()):
                    if ok:
                        s = metric(heads.scores(j, xva), yva, classes)
                        if s > best[j] and not math.isnan(s):
                            best[j] = s
                run.progress(r, len(cfg["runs"]), round=len(trials[0]))
            for k in range(len(lrs)):
                if asks[k] is None:
                    continue
                got = {}
                for j, (kk, i) in enumerate(pairs):
                    if kk == k:
                        got[i] = best[j]
                        trials[k].append({"lr": lrs[k], "weight_decay": wds[i], "val_score": best[j]})
                try:
                    asks[k] = searches[k].send(got)
                except StopIteration as stop:
                    peaks[k], asks[k] = stop.value, None
        out = {"lr": 0.0, "weight_decay": 0.0, "val_score": -1.0, "test_score": 0.0, "trials": []}
        for k in range(len(lrs)):
            out["trials"] += trials[k]
            peak, best_k = peaks[k]
            if best_k > out["val_score"]:
                out["lr"], out["weight_decay"], out["val_score"] = lrs[k], wds[peak], best_k
        xall, yall = torch.cat([xtr, xva]), torch.cat([ytr, yva])
        final = Heads(t("final_w"), t("final_b"), [out["lr"]], [out["weight_decay"]], dtype, run.device)
        forder = t("final_order").long().view(tune["final_epochs"], -1)
        for e in range(tune["final_epochs"]):
            final.epoch(xall, yall, forder[e], tune["batch"])
        out["trainable_parameters"] = final.w[0].numel() + final.b[0].numel()
        if final.finite()[0]:
            out["test_score"] = metric(final.scores(0, xt), yt, classes)
        results.append(out)
        run.progress(r + 1, len(cfg["runs"]), force=True)
    with open(os.path.join(cfg["work"], "probe.json.tmp"), "w") as f:
        json.dump(results, f)
    os.replace(os.path.join(cfg["work"], "probe.json.tmp"), os.path.join(cfg["work"], "probe.json"))


JOBS = {"features": job_features, "probe": job_probe}


def main():
    path = os.environ.get("GATEPIPE_EXPERIMENT")
    if not path:
        raise SystemExit("GATEPIPE_EXPERIMENT is not set: gatepipe starts this worker")
    run = Run(path)
    job = JOBS.get(run.cfg.get("job"))
    if job is None:
        raise SystemExit("job %r is not one of %s" % (run.cfg.get("job"), ", ".join(sorted(JOBS))))
    try:
        job(run)
    except RuntimeError as e:
        if "out of memory" in str(e):
            raise SystemExit("%s out of memory in job %s (%s): lower batch_size"
                             % ("CUDA" if run.cuda else "CPU", run.cfg.get("job"), str(e).split("\n")[0][:200]))
        raise


if __name__ == "__main__":
    main()
