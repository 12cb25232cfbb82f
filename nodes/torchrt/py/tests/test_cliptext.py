"""cliptext: CLIP's text transformer in the Hub's tensor names, loaded from
openai/clip-vit-base-patch16's model.safetensors layout (a reduced-size
fixture written here), checked against attention written out by hand."""
import json
import os
import struct
import tempfile
import unittest
from unittest import mock

import torch
import torch.nn.functional as F

from gatepipe_worker import cliptext
from gatepipe_worker.cliptext import CLIPText, load_hub
from gatepipe_worker.storage import write_safetensors

SMALL = dict(width=32, layers=2, heads=4, vocab=600, context=77)


def hub_shapes(width, layers, vocab, context, mlp=4):
    """HF CLIPTextTransformer's parameter names and shapes (modeling_clip.py),
    written out independently of the module."""
    out = {"embeddings.token_embedding.weight": [vocab, width],
           "embeddings.position_embedding.weight": [context, width]}
    for i in range(layers):
        p = "encoder.layers.%d." % i
        for proj in ("q_proj", "k_proj", "v_proj", "out_proj"):
            out[p + "self_attn.%s.weight" % proj] = [width, width]
            out[p + "self_attn.%s.bias" % proj] = [width]
        for ln in ("layer_norm1", "layer_norm2"):
            out[p + ln + ".weight"] = [width]
            out[p + ln + ".bias"] = [width]
        out[p + "mlp.fc1.weight"] = [mlp * width, width]
        out[p + "mlp.fc1.bias"] = [mlp * width]
        out[p + "mlp.fc2.weight"] = [width, mlp * width]
        out[p + "mlp.fc2.bias"] = [width]
    out["final_layer_norm.weight"] = [width]
    out["final_layer_norm.bias"] = [width]
    return out


def random_text(seed=0, **kw):
    g = torch.Generator().manual_seed(seed)
    cfg = dict(SMALL, **kw)
    shapes = hub_shapes(cfg["width"], cfg["layers"], cfg["vocab"], cfg["context"])
    return {k: torch.randn(s, generator=g) * 0.2 + (1.0 if "norm" in k and k.endswith("weight") else 0.0)
            for k, s in shapes.items()}


def hub_file(path, text, drop=(), extra=None):
    """A model.safetensors in the Hub's layout: text_model.*, vision decoys,
    the projections, logit_scale and the (old, persistent) position_ids."""
    t = {"text_model." + k: v for k, v in text.items()}
    t["text_model.embeddings.position_ids"] = torch.arange(77).unsqueeze(0)
    t["vision_model.embeddings.class_embedding"] = torch.randn(48)
    t["vision_model.embeddings.patch_embedding.weight"] = torch.randn(48, 3, 4, 4)
    t["vision_model.encoder.layers.0.self_attn.q_proj.weight"] = torch.randn(48, 48)
    t["vision_model.post_layernorm.weight"] = torch.randn(48)
    t["text_projection.weight"] = torch.randn(16, SMALL["width"])
    t["visual_projection.weight"] = torch.randn(16, 48)
    t["logit_scale"] = torch.tensor(4.6052)
    for k in drop:
        del t[k]
    t.update(extra or {})
    write_safetensors(path, t)
    return t


def write_bf16(path, tensors):
    """A safetensors file of BF16 tensors (write_safetensors writes no BF16):
    the upper halves of the float32 bits, which round toward zero."""
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        bits = tensors[name].contiguous().view(torch.int32) >> 16
        b = bits.to(torch.int16).numpy().tobytes()
        header[name] = {"dtype": "BF16", "shape": list(tensors[name].shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def reference_layer(x, sd, p, heads):
    """One CLIP encoder layer in plain tensor ops."""
    def lin(t, name):
        return t @ sd[p + name + ".weight"].t() + sd[p + name + ".bias"]

    def ln(t, name):
        mu = t.mean(-1, keepdim=True)
        var = ((t - mu) ** 2).mean(-1, keepdim=True)
        return (t - mu) / torch.sqrt(var + 1e-5) * sd[p + name + ".weight"] + sd[p + name + ".bias"]

    b, n, w = x.shape
    d = w // heads
    h = ln(x, "layer_norm1")
    q, k, v = (lin(h, "self_attn." + s).view(b, n, heads, d).permute(0, 2, 1, 3) for s in ("q_proj", "k_proj", "v_proj"))
    scores = torch.einsum("bhid,bhjd->bhij", q, k) * d ** -0.5
    future = torch.arange(n).view(1, n) > torch.arange(n).view(n, 1)
    scores = scores.masked_fill(future, float("-inf"))
    att = torch.exp(scores - scores.max(-1, keepdim=True).values)
    att = att / att.sum(-1, keepdim=True)
    o = torch.einsum("bhij,bhjd->bhid", att, v).permute(0, 2, 1, 3).reshape(b, n, w)
    x = x + lin(o, "self_attn.out_proj")
    h = lin(ln(x, "layer_norm2"), "mlp.fc1")
    h = h * (1.0 / (1.0 + torch.exp(-1.702 * h)))
    x = x + lin(h, "mlp.fc2")
    return x


def reference(ids, sd, layers, heads):
    n = ids.shape[1]
    x = sd["embeddings.token_embedding.weight"][ids] + sd["embeddings.position_embedding.weight"][:n]
    for i in range(layers):
        x = reference_layer(x, sd, "encoder.layers.%d." % i, heads)
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    states = (x - mu) / torch.sqrt(var + 1e-5) * sd["final_layer_norm.weight"] + sd["final_layer_norm.bias"]
    return states, torch.stack([states[r, int(ids[r].argmax())] for r in range(ids.shape[0])])


class TestLoad(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "model.safetensors")
        self.text = random_text()

    def tearDown(self):
        self.dir.cleanup()

    def load(self, model=None, **kw):
        return load_hub(model or CLIPText(**SMALL), self.path, **kw)

    def test_hub_layout_loads(self):
        t = hub_file(self.path, self.text)
        m = CLIPText(**SMALL)
        logged = []
        self.assertIsNone(load_hub(m, self.path, log=logged.append))
        sd = m.state_dict()
        self.assertEqual(set(sd), set(self.text))
        for k, v in self.text.items():
            self.assertTrue(torch.equal(sd[k], v), k)
        self.assertEqual(len(logged), 1)
        self.assertIn("%d CLIP text tensors loaded" % len(self.text), logged[0])
        self.assertIn("%d others left" % (len(t) - len(self.text)), logged[0])

    def test_projection(self):
        t = hub_file(self.path, self.text)
        proj = self.load(projection=True)
        self.assertIsInstance(proj, torch.nn.Linear)
        self.assertIsNone(proj.bias)
        self.assertTrue(torch.equal(proj.weight.detach(), t["text_projection.weight"]))
        hub_file(self.path, self.text, drop=["text_projection.weight"])
        self.assertIsNone(self.load())
        with self.assertRaises(SystemExit) as e:
            self.load(projection=True)
        self.assertIn("text_projection.weight", str(e.exception))

    def test_missing_tensor(self):
        name = "text_model.encoder.layers.1.mlp.fc2.bias"
        hub_file(self.path, self.text, drop=[name])
        with self.assertRaises(SystemExit) as e:
            self.load()
        self.assertIn(name, str(e.exception))
        self.assertIn(self.path, str(e.exception))

    def test_wrong_shape(self):
        name = "text_model.encoder.layers.0.layer_norm1.weight"
        hub_file(self.path, self.text, extra={name: torch.ones(31)})
        with self.assertRaises(SystemExit) as e:
            self.load()
        self.assertIn(name, str(e.exception))
        self.assertIn("[31]", str(e.exception))
        self.assertIn(self.path, str(e.exception))

    def test_vocab_mismatch(self):
        name = "text_model.embeddings.token_embedding.weight"
        hub_file(self.path, self.text, extra={name: torch.zeros(601, 32)})
        with self.assertRaises(SystemExit) as e:
            self.load()
        self.assertIn(name, str(e.exception))

    def test_extra_layer_refused(self):
        extra = {"text_model.encoder.layers.2." + k[len("encoder.layers.0."):]: v
                 for k, v in self.text.items() if k.startswith("encoder.layers.0.")}
        hub_file(self.path, self.text, extra=extra)
        with self.assertRaises(SystemExit) as e:
            self.load()
        self.assertIn("text_model.encoder.layers.2.", str(e.exception))

    def test_text_only_file(self):
        write_safetensors(self.path, self.text)
        m = CLIPText(**SMALL)
        load_hub(m, self.path)
        for k, v in m.state_dict().items():
            self.assertTrue(torch.equal(v, self.text[k]), k)

    def test_half_precision(self):
        write_safetensors(self.path, {"text_model." + k: v.half() for k, v in self.text.items()})
        m = CLIPText(**SMALL)
        load_hub(m, self.path)
        sd = m.state_dict()
        for k, v in self.text.items():
            self.assertEqual(sd[k].dtype, torch.float32)
            self.assertTrue(torch.equal(sd[k], v.half().float()), k)
        write_bf16(self.path, {"text_model." + k: v for k, v in self.text.items()})
        load_hub(m, self.path)
        sd = m.state_dict()
        for k, v in self.text.items():
            want = (v.view(torch.int32) & ~0xFFFF).view(torch.float32)
            self.assertTrue(torch.equal(sd[k], want), k)
            self.assertLess(float((sd[k] - v).abs().max()), 0.02 * float(v.abs().max()) + 1e-6)


class TestFullSize(unittest.TestCase):
    def test_names_shapes_count(self):
        m = CLIPText()
        sd = m.state_dict()
        want = hub_shapes(512, 12, 49408, 77)
        self.assertEqual(len(want), 196)
        self.assertEqual({k: list(v.shape) for k, v in sd.items()}, want)
        self.assertNotIn("embeddings.position_ids", sd)
        self.assertTrue(torch.equal(m.embeddings.position_ids, torch.arange(77).unsqueeze(0)))
        # openai/clip-vit-base-patch16's text model, embeddings included.
        self.assertEqual(cliptext.param_count(m), 63165952)
        self.assertEqual(sum(p.numel() for p in m.parameters()), 63165952)


class TestForward(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.text = random_text(seed=1)
        cls.model = CLIPText(**SMALL)
        cls.model.load_state_dict(cls.text)
        cls.model.eval()

    def ids(self, seed=0, b=3, n=12):
        g = torch.Generator().manual_seed(seed)
        return torch.randint(0, 598, (b, n), generator=g)

    def test_shapes_and_length_limit(self):
        with torch.no_grad():
            s, p = self.model(self.ids(n=77))
            self.assertEqual(list(s.shape), [3, 77, 32])
            self.assertEqual(list(p.shape), [3, 32])
            with self.assertRaises(ValueError):
                self.model(self.ids(n=78))

    def test_causal(self):
        ids = self.ids()
        with torch.no_grad():
            base, _ = self.model(ids)
            for k in (0, 4, 10):
                changed = ids.clone()
                changed[:, k + 1:] = (changed[:, k + 1:] + 7) % 598
                s, _ = self.model(changed)
                # Bit-equal on torch 1.13's CPU; a hair of slack for
                # kernels that block differently (torch 2's fused attention).
                self.assertLessEqual(float((s[:, :k + 1] - base[:, :k + 1]).abs().max()), 1e-6, k)
                self.assertGreater(float((s[:, k + 1:] - base[:, k + 1:]).abs().amax(-1).min()), 1e-3, k)

    def test_pooled_at_end_token(self):
        ids = self.ids()
        eot = SMALL["vocab"] - 1
        ids[0, 5] = eot
        ids[1, 11] = eot
        ids[2, 3:] = eot  # padded with the end token: the first one pools
        with torch.no_grad():
            s, p = self.model(ids)
        for r, at in enumerate((5, 11, 3)):
            self.assertEqual(int(ids[r].argmax()), at)
            self.assertTrue(torch.equal(p[r], s[r, at]), r)

    def test_against_reference(self):
        ids = self.ids(seed=3, n=20)
        with torch.no_grad():
            x = torch.randn(2, 9, 32)
            got = self.model.encoder.layers[0](x)
            want = reference_layer(x, self.text, "encoder.layers.0.", 4)
            self.assertLess(float((got - want).abs().max()), 1e-5)
            s, p = self.model(ids)
            rs, rp = reference(ids, self.text, 2, 4)
        self.assertLess(float((s - rs).abs().max()), 1e-5)
        self.assertLess(float((p - rp).abs().max()), 1e-5)

    def test_unfused_attention(self):
        """The written-out attention (torch 1.13's path; torch 2 takes the
        fused one) against the reference too."""
        ids = self.ids(seed=4, n=16)
        with mock.patch.object(F, "scaled_dot_product_attention", None, create=True), torch.no_grad():
            s, p = self.model(ids)
        rs, _ = reference(ids, self.text, 2, 4)
        self.assertLess(float((s - rs).abs().max()), 1e-5)


if __name__ == "__main__":
    unittest.main()
