"""Safetensors, example stores and encoder inputs."""

import json
import math
import mmap
import os
import struct
import warnings

import numpy as np
import torch
import torch.nn.functional as F

DTYPES = {"F32": (torch.float32, np.float32), "F16": (torch.float16, np.float16), "F64": (torch.float64, np.float64),
          "I64": (torch.int64, np.int64), "I32": (torch.int32, np.int32), "U8": (torch.uint8, np.uint8),
          "I8": (torch.int8, np.int8), "BF16": (torch.bfloat16, None),
          # Masks of more than 256 classes; torch before 2.3 has no uint16,
          # so tensor() widens them to int32.
          "U16": (torch.int32, np.uint16)}


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
            check_tiling(path, self.header, size - self.base)
            self.map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size > 0 else b""
        self.size = size

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
        a = self.numpy(name, rows)
        if a.dtype == np.uint16:
            a = a.astype(np.int32)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # read-only buffers: copied where written
            return torch.from_numpy(a)


def read_float32(f, name):
    """Tensor name of SafeTensors f as float32: F32, F16 and BF16 (which
    the numpy-based reader does not take) are read."""
    h = f.info(name)
    if h["dtype"] == "BF16":
        shape = list(h["shape"])
        b, _ = h["data_offsets"]
        count = int(np.prod(shape)) if shape else 1
        a = np.frombuffer(f.map, dtype=np.uint16, count=count, offset=f.base + b).reshape(shape)
        return torch.from_numpy(a.astype(np.int32) << 16).view(torch.float32)
    if h["dtype"] not in ("F32", "F16", "F64"):
        raise SystemExit("%s: tensor %s has dtype %s; weights are floating point" % (f.path, name, h["dtype"]))
    return f.tensor(name).to(torch.float32)


# Element sizes of every dtype the safetensors format names.
ITEMSIZE = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
            "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8}


def check_tiling(path, header, data_len):
    """Checks a safetensors header as the reference library does (and as
    gatepipe's Go reader): every tensor as long as its dtype and shape need,
    and, in offset order, the tensors tiling the data_len data bytes exactly:
    the first at 0, each where the one before ends, the last at the end of
    the file. Overlapping tensors would alias each other's bytes."""
    if not isinstance(header, dict):
        raise SystemExit("%s: the safetensors header is not a JSON object" % path)
    spans = []
    for name, h in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype, shape, (b, e) = h["dtype"], list(h["shape"]), h["data_offsets"]
            ok = isinstance(b, int) and isinstance(e, int) and all(isinstance(d, int) for d in shape)
        except (KeyError, TypeError, ValueError):
            ok = False
        if not ok:
            raise SystemExit("%s: tensor %r: header entry %r is not {dtype, shape, data_offsets}" % (path, name, h))
        if dtype not in ITEMSIZE:
            raise SystemExit("%s: tensor %r has unknown dtype %r" % (path, name, dtype))
        if any(d < 0 for d in shape):
            raise SystemExit("%s: tensor %r has a negative dimension in shape %s" % (path, name, shape))
        need = ITEMSIZE[dtype] * math.prod(shape)
        if need >= 1 << 63:
            raise SystemExit("%s: tensor %r: shape %s of %s is larger than any file (overflows 64-bit byte count)" % (path, name, shape, dtype))
        if b < 0 or e < b or e > data_len:
            raise SystemExit("%s: tensor %r data offsets [%d, %d] outside the %d data bytes" % (path, name, b, e, data_len))
        if e - b != need:
            raise SystemExit("%s: tensor %r has %d data bytes, shape %s of %s needs %d" % (path, name, e - b, shape, dtype, need))
        spans.append((b, e, name))
    spans.sort()
    at, prev = 0, None
    for b, e, name in spans:
        if b < at:
            raise SystemExit("%s: tensor %r [%d, %d) overlaps tensor %r [%d, %d); safetensors tensors may not share bytes"
                             % (path, name, b, e, prev[2], prev[0], prev[1]))
        if b > at:
            where = "between tensor %r [%d, %d) and" % (prev[2], prev[0], prev[1]) if prev else "before"
            raise SystemExit("%s: data bytes [%d, %d) %s tensor %r [%d, %d) belong to no tensor" % (path, at, b, where, name, b, e))
        at, prev = e, (b, e, name)
    if at != data_len:
        after = "the last tensor %r [%d, %d)" % (prev[2], prev[0], prev[1]) if prev else "the header"
        raise SystemExit("%s: data bytes [%d, %d) after %s belong to no tensor; a safetensors file ends with its last tensor"
                         % (path, at, data_len, after))


def write_safetensors(path, tensors, metadata=None):
    """Writes name -> tensor (float32/int64 on the CPU) through a temporary file and a rename."""
    names = {torch.float32: "F32", torch.int64: "I64", torch.int32: "I32", torch.uint8: "U8", torch.float16: "F16"}
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


class RowWriter:
    """Writes one float32 tensor [rows, width] named name to a safetensors
    file a block of rows at a time, as they are produced, through a
    temporary file and a rename: no [rows, width] array is ever held."""

    def __init__(self, path, name, rows, width):
        self.path, self.rows, self.width, self.written = path, rows, width, 0
        header = {name: {"dtype": "F32", "shape": [rows, width], "data_offsets": [0, rows * width * 4]}}
        h = json.dumps(header).encode()
        h += b" " * (-len(h) % 8)
        self.f = open(path + ".tmp", "wb")
        self.f.write(struct.pack("<Q", len(h)) + h)

    def write(self, block):
        """Appends block (float32 rows of the tensor's width, on the CPU)."""
        if block.dim() != 2 or block.shape[1] != self.width:
            raise SystemExit("%s: rows of width %s for a tensor of width %d" % (self.path, list(block.shape[1:]), self.width))
        self.f.write(block.to(torch.float32).contiguous().numpy().tobytes())
        self.written += block.shape[0]

    def close(self):
        self.f.close()
        if self.written != self.rows:
            os.remove(self.path + ".tmp")
            raise SystemExit("%s: %d rows written of %d" % (self.path, self.written, self.rows))
        os.replace(self.path + ".tmp", self.path)


# ---- examples ---------------------------------------------------------------

class Store:
    """An example store: meta.json and SPLIT.safetensors (x, y, index)."""

    def __init__(self, path):
        self.path = path
        with open(os.path.join(path, "meta.json")) as f:
            self.meta = json.load(f)
        self.shape = list(self.meta["shape"])

    def split(self, name):
        f = SafeTensors(os.path.join(self.path, name + ".safetensors"))
        if self.meta.get("encoding") == "jpeg":
            return JPEGSplit(f, os.path.join(self.path, name + ".jpeg"), self.shape)
        return f


# ---- JPEG stores ------------------------------------------------------------

class JPEGSplit:
    """A JPEG store's split: its tensors as SafeTensors gives them, but
    "x", whose examples are JPEGs in the sidecar (JPEGRows)."""

    def __init__(self, f, sidecar, shape):
        self.f, self.header, self.path = f, f.header, f.path
        if len(shape) != 3 or shape[0] not in (1, 3):
            raise SystemExit("%s: a JPEG store holds images [C, H, W] of 1 or 3 channels, not %s" % (sidecar, shape))
        with open(sidecar, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) if size > 0 else b""
        self.rows = JPEGRows(f.numpy("xjpeg"), data, shape, sidecar)

    def tensor(self, name, rows=None):
        if name == "x":
            return self.rows if rows is None else self.rows[rows[0]:rows[1]]
        return self.f.tensor(name, rows)

    def numpy(self, name, rows=None):
        return self.f.numpy(name, rows)


class JPEGRows:
    """A split's images as JPEGs (offset and length of each in data),
    decoded as they are read: rows[a:b] or rows[indices] is a uint8
    tensor [N, C, H, W]; read_into decodes into a buffer. Decoding is
    torchvision's (libjpeg-turbo) where it is installed, else PIL's; both
    release the GIL, so the loader's reader threads decode in parallel.

    A decoded image lies channels last (as libjpeg leaves it), seen as
    [C, H, W]; staging gives the buffers that take it whole."""

    dtype = torch.uint8
    device = torch.device("cpu")

    def __init__(self, spans, data, shape, path):
        self.spans, self.data, self.path = spans, data, path
        self.shape = torch.Size([spans.shape[0]] + list(shape))
        end = spans[:, 0] + spans[:, 1] if len(spans) else np.zeros(0)
        if len(spans) and (spans.min() < 0 or end.max() > len(data)):
            raise SystemExit("%s: JPEG spans outside its %d bytes" % (path, len(data)))
        # The sidecar's bytes as one tensor: each row is a view of the
        # map, decoded without a copy. The decoders only read it, so the
        # map may be read-only (which frombuffer warns of).
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.bytes = torch.frombuffer(data, dtype=torch.uint8) if len(data) else torch.empty(0, dtype=torch.uint8)
        self.decode = _jpeg_decoder()

    def __len__(self):
        return self.shape[0]

    def numel(self):
        return int(np.prod(self.shape))

    def element_size(self):
        return 1

    def row(self, k):
        """Example k's JPEG: a uint8 tensor viewing the map."""
        off, n = int(self.spans[k, 0]), int(self.spans[k, 1])
        return self.bytes[off:off + n]

    def staging(self, rows, device=False):
        """A buffer for rows decoded images, [rows, C, H, W] laid out
        channels last, as the decoder leaves an image: each image is one
        contiguous copy. For a GPU (device) it is pinned where CUDA is and
        the device transposes as it makes the input; on the CPU the input
        stays channels last (Inputs.make), oneDNN's fastest layout for
        convolutions."""
        c, h, w = self.shape[1:]
        pin = bool(device) and torch.cuda.is_available()
        with torch.inference_mode(False):
            return torch.empty((rows, h, w, c), dtype=torch.uint8, pin_memory=pin).permute(0, 3, 1, 2)

    def read_into(self, b, out):
        """Decodes rows b (a (start, end) range or a LongTensor) into out."""
        ks = range(b[0], b[1]) if isinstance(b, tuple) else b.tolist()
        for i, k in enumerate(ks):
            img = self.decode(self.row(k))
            if tuple(img.shape) != tuple(self.shape[1:]):
                raise SystemExit("%s: example %d decodes to %s, not %s" % (self.path, k, list(img.shape), list(self.shape[1:])))
            out[i].copy_(img)
        return out

    def to(self, *args, **kwargs):
        """Every image decoded, as Tensor.to gives them (a split read whole)."""
        return self[0:len(self)].to(*args, **kwargs)

    def __getitem__(self, key):
        if isinstance(key, slice):
            a, b, _ = key.indices(len(self))
            rows = (a, b)
            n = max(0, b - a)
        else:
            rows = torch.as_tensor(key).flatten()
            n = rows.numel()
        return self.read_into(rows, torch.empty((n,) + tuple(self.shape[1:]), dtype=torch.uint8))


def _jpeg_decoder():
    """A function from a JPEG (a uint8 tensor) to a uint8 tensor
    [C, H, W], channels last in memory as the decoder leaves them."""
    try:
        from torchvision.io import ImageReadMode, decode_jpeg
    except ImportError:
        decode_jpeg = None
    if decode_jpeg is not None:
        def decode(data):
            return decode_jpeg(data, mode=ImageReadMode.UNCHANGED)
        return decode
    try:
        import io
        from PIL import Image
    except ImportError:
        raise SystemExit("a JPEG store needs torchvision or PIL (python3-pil) in the torch runtime's Python")

    def decode_pil(data):
        img = Image.open(io.BytesIO(data.numpy()))
        img.draft(img.mode, img.size)
        a = np.array(img)  # writable, as from_numpy wants
        return torch.from_numpy(a[None] if a.ndim == 2 else a.transpose(2, 0, 1))
    return decode_pil


def channels_last(x):
    """Whether batch x is images [N, C, H, W] of several channels laid out
    channels last (and not also contiguous, as when H = W = 1)."""
    return x.dim() == 4 and x.shape[1] > 1 and not x[:1].is_contiguous() and x[:1].is_contiguous(memory_format=torch.channels_last)


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

    def __init__(self, store, pre, device, channels_last=False, normalize=True):
        self.meta, self.shape, self.pre, self.device = store.meta, store.shape, pre, device
        # On the CPU, image batches are made channels last for a
        # convolutional encoder (models.convolutional) as they are for
        # any encoder from a JPEG store's channels-last staging.
        self.channels_last = channels_last
        norm = self.meta["normalize"]
        self.scale = float(norm["scale"])
        c, _ = channel_layout(self.shape)
        view = [1, c] + [1] * (len(self.shape) - 1) if len(self.shape) >= 3 else [1, c]
        if len(self.shape) == 4:
            view = [1, 1, c, 1, 1]
        self.mean = torch.tensor(norm["mean"], dtype=torch.float32, device=device).view(view)
        self.std = torch.tensor(norm["std"], dtype=torch.float32, device=device).view(view)
        if not normalize:  # pixels scaled to [0, 1] only (GATE's video, D7)
            self.mean, self.std = torch.zeros_like(self.mean), torch.ones_like(self.std)
        # (x * scale - mean) / std as x * mul + bias.
        self.mul = (self.scale / self.std).contiguous()
        self.bias = (-self.mean / self.std).contiguous()
        self.cpu_mul, self.cpu_bias = self.mul.cpu(), self.bias.cpu()
        self.tiled = {}  # row width -> row_factors
        if pre:
            if len(self.shape) not in (3, 4):
                raise SystemExit("the encoder's preprocess resizes images [C, H, W] or clips' frames [T, C, H, W]; this dataset's examples are %s" % self.shape)
            pm = (pre.get("mean") or []) if normalize else []
            self.pmean = torch.tensor(pm, dtype=torch.float32, device=device).view(1, -1, 1, 1) if pm else None
            self.pstd = torch.tensor(pre.get("std"), dtype=torch.float32, device=device).view(1, -1, 1, 1) if pm else None

    def out_shape(self):
        if not self.pre:
            return self.shape
        frame = self.shape[-3:]
        c = self.pre.get("channels") or frame[0]
        out = [c] + list(self.pre["size"])
        return [self.shape[0]] + out if len(self.shape) == 4 else out

    def eight_bit(self):
        """Whether the stored examples are 8-bit pixels (scaled by 1/255):
        images or clips, the range GATE's augmentations work in."""
        return abs(self.scale * 255.0 - 1.0) < 1e-6 and len(self.shape) in (3, 4)

    def pixels(self, x):
        """The 8-bit pixels (uint8, on x's device) of an input batch x that
        make() made: its normalisation undone and rounded; with an
        evaluation transform, the resized and cropped image's."""
        if self.pre:
            if self.pmean is not None:
                x = x * self.pstd + self.pmean
            v = x / self.scale
        else:
            v = (x - self.bias) / self.mul
        return v.round_().clamp_(0, 255).to(torch.uint8)

    def normalized(self, u):
        """The encoder's input for 8-bit pixels u (pixels' inverse)."""
        x = u.to(torch.float32)
        if self.pre:
            x = x * self.scale
            if self.pmean is not None:
                x = (x - self.pmean) / self.pstd
            return x.contiguous()
        return x.mul_(self.mul).add_(self.bias)

    def __call__(self, x):
        # Copied as stored (uint8 is a quarter of float32), converted on the device.
        return self.make(x.to(self.device, non_blocking=True))[0]

    def make(self, x, out=None):
        """The encoder's input for the stored batch x, on x's device, and
        the buffer it lies in: without an evaluation transform, converted
        and normalised in place in out (a float32 buffer of at least x's
        rows, reused batch after batch; allocated when None). On the CPU
        the input of images of several channels is laid out channels last
        when channels_last was asked for or x lies so (a JPEG store's
        staging); otherwise it is contiguous [N, C, ...]."""
        if self.pre:
            return self.transform_stored(x.to(torch.float32)), None
        last = x.device.type == "cpu" and x.dim() == 4 and x.shape[1] > 1 and (self.channels_last or channels_last(x))
        fmt = torch.channels_last if last else torch.contiguous_format
        if out is None or out.shape[0] < x.shape[0] or out.device != x.device or not out[:1].is_contiguous(memory_format=fmt):
            out = torch.empty(x.shape, dtype=torch.float32, device=x.device, memory_format=fmt)
        res = out[:x.shape[0]]
        # In place, in three passes: a fused addcmul from uint8 makes a
        # float32 temporary (type promotion), which a CPU process
        # page-faults in afresh every batch under glibc's defaults.
        if x.device.type != "cpu":
            res.copy_(x)
            res.mul_(self.mul).add_(self.bias)
            return res, out
        # On the CPU a few examples at a time, so that the second and
        # third passes read what the first left in the cache (1.8x
        # faster a core than whole batches, measured at 224 px). Up
        # to 4 MB of float32 at a time: 4-5% faster than 1 MB (one
        # image) in seven alternating feed.py runs on a JPEG store and
        # four on a raw one (2-core EPYC); 8 MB was slower.
        per = max(1, x[0].numel() * 4)
        step = max(1, (4 << 20) // per)
        mul, bias = self.cpu_mul, self.cpu_bias
        if last:
            # Channels last, each pixel's channels side by side (from a
            # [C, H, W] batch the first pass transposes): the factors tiled
            # along a row, so that the second and third passes run over
            # contiguous rows (by [1, C, 1, 1] they would run in threes).
            mul, bias = self.row_factors(x.shape[3])
        for i in range(0, x.shape[0], step):
            r = res[i:i + step]
            r.copy_(x[i:i + step])
            if last:
                r = r.permute(0, 2, 3, 1).reshape(-1, mul.numel())  # a view: r is channels last
            r.mul_(mul).add_(bias)
        return res, out

    def row_factors(self, w):
        """The normalisation's factors for one row of w pixels laid out
        channels last, [w * C] each (cached per width)."""
        got = self.tiled.get(w)
        if got is None:
            got = self.tiled[w] = (self.cpu_mul.flatten().repeat(w).contiguous(), self.cpu_bias.flatten().repeat(w).contiguous())
        return got

    def transform_stored(self, x):
        """The evaluation transform of stored examples as float32."""
        x = x * self.scale
        if x.dim() == 5:  # clips: every frame through the transform
            b, t = x.shape[0], x.shape[1]
            y = self.transform(x.flatten(0, 1))
            return y.view(b, t, *y.shape[1:])
        return self.transform(x)

    def resized(self, h, w):
        """The size the shorter-side resize gives an h x w image."""
        side = self.pre.get("resize_to") or 0
        if side <= 0:
            side = int(math.floor(min(self.pre["size"]) / (self.pre.get("crop_pct") or 0.875)))
        if h <= w:
            return side, int(side * w / h)
        return int(side * h / w), side

    def masks(self, y):
        """Segmentation masks [N, H, W] through the transform's geometry
        (nearest neighbour at pixel centres, the centre crop, 0 where the
        crop is larger), aligned with their images as gatepipe aligns them."""
        if not self.pre:
            return y
        h, w = y.shape[1], y.shape[2]
        oh, ow = self.resized(h, w)
        ys = torch.clamp(((torch.arange(oh, dtype=torch.float64) + 0.5) * h / oh).long(), max=h - 1)
        xs = torch.clamp(((torch.arange(ow, dtype=torch.float64) + 0.5) * w / ow).long(), max=w - 1)
        r = y[:, ys.to(y.device)][:, :, xs.to(y.device)]
        return center_crop(r.unsqueeze(1), self.pre["size"][0], self.pre["size"][1]).squeeze(1).contiguous()

    def transform(self, x):
        p = self.pre
        c = p.get("channels") or 0
        if c and x.shape[1] != c:
            if x.shape[1] != 1:
                raise SystemExit("preprocess: %d-channel images for a %d-channel model" % (x.shape[1], c))
            x = x.expand(-1, c, -1, -1)
        h, w = x.shape[2], x.shape[3]
        size = p["size"]
        oh, ow = self.resized(h, w)
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
