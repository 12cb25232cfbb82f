"""timm and torchvision models by name as encoders (arch "timm:NAME" or
"torchvision:NAME"): the library builds the model, its classifier is
dropped, and gatepipe's heads sit on its pooled features (forward) or its
last feature map (trunk). Their tensors keep the library's own names under
encoder. (encoder.conv1.weight), so a state dict of the model loads as is.
GATE's patch root on a Hugging Face encoder (arch "patchroot:NAME",
patchroot.py) is built here too, in the Hub's names under encoder.
"""
import os
import sys

import torch
from torch import nn

from . import patchroot, user
from .storage import SafeTensors

PREFIXES = ("timm:", "torchvision:", patchroot.PREFIX, user.PREFIX)

# The attributes torchvision and timm keep their classifier in.
CLASSIFIERS = ("fc", "heads", "classifier", "head")


def is_library(arch):
    return isinstance(arch, str) and arch.startswith(PREFIXES)


def build(spec, shape):
    """The model named by spec["arch"] for images of shape [C, H, W],
    without its classifier, with .width (the pooled features' size) and
    .trunk(x) (the last feature map, for dense heads)."""
    if user.is_user(spec["arch"]):
        return user.UserEncoder(spec, shape)
    lib, name = spec["arch"].split(":", 1)
    if lib + ":" == patchroot.PREFIX:
        return patchroot.build(name, shape)
    if len(shape) != 3:
        raise SystemExit("%s takes images [C, H, W]; this dataset's examples are %s" % (spec["arch"], list(shape)))
    channels = shape[0]
    if lib == "timm":
        m = _timm(name, channels)
    else:
        m = _torchvision(name, channels)
    was = m.training
    m.eval()
    with torch.no_grad():
        out = m(torch.zeros(1, *shape))
    m.train(was)
    if out.dim() != 2:
        raise SystemExit("%s gives features of shape %s after its classifier is removed, not [N, F]" % (spec["arch"], list(out.shape)))
    m.width = int(out.shape[1])
    m.library, m.input_shape = lib, list(shape)
    return m


def _timm(name, channels):
    try:
        import timm
    except ImportError:
        raise SystemExit("encoder timm:%s: %s cannot import timm: pip install timm, or use a torchvision name or a gatepipe architecture"
                         % (name, sys.executable))
    # NAME.TAG (vit_base_patch16_224.augreg_in21k): the architecture is
    # NAME; the tag names pretrained weights, which gatepipe loads itself
    # (weights = "hf:timm/NAME.TAG"), so the model is built from NAME.
    base = name.split(".", 1)[0]
    if base not in timm.list_models():
        close = timm.list_models("*%s*" % base.split("_")[0])[:8]
        raise SystemExit("encoder timm:%s: timm %s has no model %r%s" % (
            name, timm.__version__, base, "; close ones: " + ", ".join(close) if close else ""))
    return timm.create_model(base, pretrained=False, num_classes=0, in_chans=channels)


def _torchvision(name, channels):
    import torchvision
    fn = getattr(torchvision.models, name, None)
    if fn is None or not callable(fn) or name[0].isupper() or name.startswith("get_"):
        raise SystemExit("encoder torchvision:%s: not a torchvision model (torchvision %s); names are lower case, "
                         "such as resnet18, convnext_tiny or vit_b_16" % (name, torchvision.__version__))
    m = fn()
    for attr in CLASSIFIERS:
        c = getattr(m, attr, None)
        if isinstance(c, nn.Linear):
            setattr(m, attr, nn.Identity())
            break
        if isinstance(c, nn.Sequential):
            linear = [i for i, mod in enumerate(c) if isinstance(mod, nn.Linear)]
            if linear:
                c[linear[-1]] = nn.Identity()
                break
    else:
        raise SystemExit("encoder torchvision:%s: no classifier (%s) to remove" % (name, ", ".join(CLASSIFIERS)))
    if channels != 3:
        conv = getattr(m, "conv1", None)
        if not isinstance(conv, nn.Conv2d):
            raise SystemExit("encoder torchvision:%s: %d input channels; only models with a conv1 stem (ResNets) adapt it" % (name, channels))
        m.conv1 = nn.Conv2d(channels, conv.out_channels, conv.kernel_size, conv.stride, conv.padding, bias=conv.bias is not None)
    return m


def trunk(m, x):
    """The last feature map [B, C, h, w] of a library model."""
    if isinstance(m, (user.UserEncoder, patchroot.PatchRootEncoder)):
        return m.trunk(x)
    if m.library == "timm":
        f = m.forward_features(x)
        if f.dim() == 3:  # a ViT's tokens (SigLIP, FlexiViT, DeiT...): on their grid
            f = user.as_map(f[:, getattr(m, "num_prefix_tokens", 0):])
    elif hasattr(m, "layer4"):  # torchvision's ResNets
        for layer in ("conv1", "bn1", "relu", "maxpool", "layer1", "layer2", "layer3", "layer4"):
            x = getattr(m, layer)(x)
        f = x
    elif hasattr(m, "features"):
        f = m.features(x)
    else:
        f = None
    if f is None or f.dim() != 4:
        raise SystemExit("this library model has no spatial feature map; dense heads need a convolutional one (a ResNet, ConvNeXt, ...)")
    return f


def map_outputs(m):
    """GATE's encoder outputs (models.Encoder.gate) of a CNN's last
    feature map m [B, C, h, w]: its global average pool, the map as a
    row-major sequence [B, h*w, C], and the map as the one layer."""
    raw = m.flatten(2).transpose(1, 2)
    return {"features": raw.mean(dim=1), "raw_features": raw, "per_layer_raw_features": [m]}


def tokens_outputs(layers):
    """GATE's encoder outputs of per-layer patch tokens [B, T, D] (prefix
    tokens dropped): the mean of the last layer's, the last layer's, all."""
    raw = layers[-1]
    return {"features": raw.mean(dim=1), "raw_features": raw, "per_layer_raw_features": list(layers)}


def gate_outputs(m, x, per_layer=False):
    """GATE's encoder outputs of a library model, as GATE's TimmModel
    (gate/models/backbones/timm.py at 65192ec, with timm 0.9 as of its
    paper's runs) reads them: a timm ViT (get_intermediate_layers and
    blocks) every block's patch tokens through the final norm
    (get_intermediate_layers(n=all, norm=True)), else its forward_features'
    patch tokens; another timm model its last feature stage (what
    features_only=True gives: forward_intermediates where timm has it,
    else forward_features); a torchvision model its last map where it has
    one, else its pooled output alone. A user's module: UserEncoder.gate;
    a patch-root encoder: PatchRootEncoder.gate."""
    if isinstance(m, user.UserEncoder):
        return m.gate(x)
    if isinstance(m, patchroot.PatchRootEncoder):
        return m.gate(x, per_layer)
    if m.library == "timm":
        prefix = int(getattr(m, "num_prefix_tokens", 0) or 0)
        if hasattr(m, "get_intermediate_layers") and hasattr(m, "blocks"):
            if per_layer:
                return tokens_outputs(list(m.get_intermediate_layers(x, n=list(range(len(m.blocks))), reshape=False, norm=True)))
            return tokens_outputs([m.forward_features(x)[:, prefix:]])
        f = None
        if hasattr(m, "forward_intermediates"):
            try:
                f = m.forward_intermediates(x, indices=1, intermediates_only=True)[-1]
            except (TypeError, NotImplementedError, AssertionError, ValueError):
                f = None
        if f is None:
            f = m.forward_features(x)
        if f.dim() == 3:
            return tokens_outputs([f[:, prefix:]])
        return map_outputs(f)
    try:
        return map_outputs(trunk(m, x))
    except SystemExit:
        return {"features": m(x), "raw_features": None, "per_layer_raw_features": None}


def spatial_width(m):
    """The channels of the model's last feature map."""
    if isinstance(m, user.UserEncoder):
        if m.raw_width is None:
            raise SystemExit("this encoder's forward gives no raw_features; dense heads (segmentation) need them: return a dict with features and raw_features")
        return m.raw_width
    if isinstance(m, patchroot.PatchRootEncoder):
        if m.grid is None:
            m.trunk(None)  # says why there is no map
        return m.width
    was = m.training
    m.eval()
    with torch.no_grad():
        c = trunk(m, torch.zeros(1, *m.input_shape)).shape[1]
    m.train(was)
    return int(c)


def load_own_weights(m, path, log):
    """Loads a state dict in the model's own names (safetensors, or a
    torch.save file read with weights_only): tensors whose name or shape
    does not fit (a classifier) stay as initialised; none fitting is an
    error. A user's module loads in its own names; a patch-root encoder
    the Hub's model.safetensors or its own names, strictly (patchroot.load)."""
    if isinstance(m, patchroot.PatchRootEncoder):
        return patchroot.load(m, path, log)
    m = getattr(m, "user_module", m)
    with open(path, "rb") as f:
        zipped = f.read(4) == b"PK\x03\x04"
    if zipped:
        state = torch.load(path, map_location="cpu", weights_only=True)
        if isinstance(state, dict) and isinstance(state.get("state_dict", state.get("model")), dict):
            state = state.get("state_dict", state.get("model"))
    else:
        f = SafeTensors(path)
        state = {k: f.tensor(k) for k in f.header if k != "__metadata__"}
    # gatepipe's own checkpoints name the encoder's tensors encoder.*
    state = {k[len("encoder."):] if k.startswith("encoder.") else k: v for k, v in state.items()}
    own = m.state_dict()
    fit = {k: v for k, v in state.items() if k in own and tuple(own[k].shape) == tuple(v.shape)}
    if not fit:
        raise SystemExit("weights %s: no tensor fits the model (names or shapes differ)" % path)
    bad = []
    for k, v in sorted(fit.items()):
        if v.is_floating_point():
            nan, inf = int(torch.isnan(v).sum()), int(torch.isinf(v).sum())
            if nan or inf:
                bad.append("%s holds %d NaN and %d infinite of %d values" % (k, nan, inf, v.numel()))
    if bad:
        raise SystemExit("weights %s hold non-finite values in %d tensor(s): %s%s; a model cannot start from them "
                         "(was the checkpoint saved after training diverged?)" % (
                             path, len(bad), "; ".join(bad[:8]), "; and %d more" % (len(bad) - 8) if len(bad) > 8 else ""))
    m.load_state_dict({k: v.to(own[k].dtype) for k, v in fit.items()}, strict=False)
    left = sorted(k for k in own if k not in fit and not k.endswith("num_batches_tracked"))
    log("weights %s: %d tensors loaded, %d left as initialised%s" % (
        os.path.basename(path), len(fit), len(left), " (" + ", ".join(left[:4]) + ("..." if len(left) > 4 else "") + ")" if left else ""))
