"""patchroot: GATE's patch root on BERT, BART, MPNet and Whisper's encoder
(GATE@65192ec gate/models/task_adapters/utils/modality_transfer.py,
gate/models/backbones/{bert_text,bart_text,mpnet_text,whisper_audio}.py).

Each of the four at a small config against a reference built from
torch.nn alone (nn.TransformerEncoderLayer, post- or pre-norm, with the
same weights copied in; the root as F.conv2d, a concatenation and an
addition); MPNet's position buckets against a table worked out by hand;
Whisper's patch size, token count and nearest resampling; loading the
Hub's tensor names (strictly); the outputs' shapes, grey images, and a
worker train job through GATE's adapters."""
import json
import math
import os
import tempfile
import unittest
from unittest import mock

import torch
import torch.nn.functional as F
from torch import nn

from gatepipe_worker import library, models, patchroot, patchroot_layers
from gatepipe_worker.storage import SafeTensors, write_safetensors

BERT, BART = "google-bert/bert-base-uncased", "facebook/bart-base"
MPNET, WHISPER = "sentence-transformers/all-mpnet-base-v2", "openai/whisper-base"
SMALL = {
    BERT: dict(dim=16, layers=2, heads=2, ff=32, patch=4),
    BART: dict(dim=16, layers=2, heads=2, ff=32, patch=4),
    MPNET: dict(dim=16, layers=2, heads=2, ff=32, patch=4),
    WHISPER: dict(dim=16, layers=2, heads=2, ff=32, mels=8, frames=40),
}


def small(name):
    return patchroot.config(name, **SMALL[name])


def small_configs():
    """CONFIGS at the small sizes, for code that builds by name."""
    return mock.patch.dict(patchroot.CONFIGS, {n: small(n) for n in SMALL})


def randomised(m, std=0.2, seed=0):
    """m with every parameter drawn afresh (LayerNorms included), so that
    a weight copied to the wrong place shows."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * std)
    return m.eval()


def ref_root(root, x):
    """BaseVisionRootLayer.forward, written out."""
    t = F.conv2d(x, root.patch_embedding.weight, stride=root.patch).flatten(2).transpose(1, 2)
    cls = root.class_embedding.view(1, 1, -1).expand(x.shape[0], 1, -1)
    t = torch.cat([cls, t], dim=1)
    return t + root.position_embedding(torch.arange(t.shape[1]))


def ref_layer(c, norm_first, q, k, v, o, fc1, fc2, n1, n2):
    """nn.TransformerEncoderLayer (erf GELU, no dropout) holding the given
    modules' weights; a missing k bias is zero."""
    d = c["dim"]
    layer = nn.TransformerEncoderLayer(d, c["heads"], c["ff"], dropout=0.0, activation="gelu", layer_norm_eps=c["eps"],
                                       batch_first=True, norm_first=norm_first)
    with torch.no_grad():
        layer.self_attn.in_proj_weight.copy_(torch.cat([q.weight, k.weight, v.weight]))
        kb = k.bias if k.bias is not None else torch.zeros(d)
        layer.self_attn.in_proj_bias.copy_(torch.cat([q.bias, kb, v.bias]))
        for dst, src in ((layer.self_attn.out_proj, o), (layer.linear1, fc1), (layer.linear2, fc2), (layer.norm1, n1), (layer.norm2, n2)):
            dst.weight.copy_(src.weight)
            dst.bias.copy_(src.bias)
    return layer.eval()


def bucket(rel, buckets=32, max_distance=128):
    """MPNet's relative_position_bucket of one k - q, in plain Python."""
    n, ret, half = -rel, 0, buckets // 2
    if n < 0:
        ret += half
    n = abs(n)
    exact = half // 2
    if n < exact:
        return ret + n
    return ret + min(exact + int(math.log(n / exact) / math.log(max_distance / exact) * (half - exact)), half - 1)


class ReferenceTest(unittest.TestCase):
    """Each encoder's outputs against a torch.nn reference, in eval mode."""

    def check(self, got, want_last, want_states):
        self.assertTrue(torch.allclose(got["raw_features"], want_last, atol=1e-5), (got["raw_features"] - want_last).abs().max())
        self.assertTrue(torch.allclose(got["features"], want_last.mean(dim=1), atol=1e-5))
        self.assertEqual(len(got["per_layer_raw_features"]), len(want_states))
        for g, w in zip(got["per_layer_raw_features"], want_states):
            self.assertTrue(torch.allclose(g, w, atol=1e-5), (g - w).abs().max())

    def test_bert(self):
        c = small(BERT)
        m = randomised(patchroot.PatchRootEncoder(BERT, [3, 12, 16], c))
        x = torch.randn(2, 3, 12, 16)
        h = ref_root(m.root, x)
        self.assertEqual(h.shape, (2, 1 + 3 * 4, 16))
        states = [h]
        with torch.no_grad():
            for L in m.encoder.layer:
                a = L.attention
                h = ref_layer(c, False, a.self.query, a.self.key, a.self.value, a.output.dense, L.intermediate.dense,
                              L.output.dense, a.output.LayerNorm, L.output.LayerNorm)(h)
                states.append(h)
            self.check(m.gate(x, per_layer=True), h, states)
        self.assertEqual(len(states), c["layers"] + 1)
        self.assertEqual(m.encoder.layer[0].output.LayerNorm.eps, 1e-12)

    def test_bart(self):
        c = small(BART)
        m = randomised(patchroot.PatchRootEncoder(BART, [3, 16, 16], c))
        x = torch.randn(2, 3, 16, 16)
        body = m.encoder
        self.assertEqual(body.embed_positions.weight.shape, (2 + 17, 16))  # offset 2, then one per token
        with torch.no_grad():
            h = ref_root(m.root, x)
            h = F.layer_norm(h + body.embed_positions.weight[2:2 + h.shape[1]], (16,), body.layernorm_embedding.weight,
                             body.layernorm_embedding.bias, 1e-5)
            states = [h]
            for L in body.layers:
                s = L.self_attn
                h = ref_layer(c, False, s.q_proj, s.k_proj, s.v_proj, s.out_proj, L.fc1, L.fc2, L.self_attn_layer_norm,
                              L.final_layer_norm)(h)
                states.append(h)
            self.check(m.gate(x, per_layer=True), h, states)

    def test_mpnet_buckets(self):
        # (q, k, bucket), worked out by hand from transformers'
        # relative_position_bucket(k - q, 32, 128): q > k in 0..15 (exact
        # up to 7, then 8 + floor(log(n/8) / log(16) * 8), at most 15), k > q
        # the same plus 16.
        table = [(0, 0, 0), (1, 0, 1), (0, 1, 17), (7, 0, 7), (0, 7, 23), (8, 0, 8), (0, 8, 24), (12, 0, 9), (0, 12, 25),
                 (20, 0, 10), (50, 0, 13), (0, 50, 29), (127, 0, 15), (1000, 0, 15), (0, 1000, 31)]
        for q, k, want in table:
            got = int(patchroot_layers.relative_position_bucket(torch.tensor(k - q)))
            self.assertEqual(got, want, (q, k))
            self.assertEqual(bucket(k - q), want, (q, k))

    def test_mpnet(self):
        c = small(MPNET)
        m = randomised(patchroot.PatchRootEncoder(MPNET, [3, 12, 12], c))
        x = torch.randn(2, 3, 12, 12)
        body, t, heads = m.encoder, 10, c["heads"]
        table = torch.tensor([[bucket(kk - qq) for kk in range(t)] for qq in range(t)])
        self.assertTrue(torch.equal(body.buckets.long(), table))
        bias = body.relative_attention_bias.weight[table].permute(2, 0, 1)  # [heads, T, T]
        mask = bias.unsqueeze(0).expand(2, -1, -1, -1).reshape(2 * heads, t, t)
        with torch.no_grad():
            h = ref_root(m.root, x)
            states = [h]
            for L in body.layer:
                a = L.attention
                h = ref_layer(c, False, a.attn.q, a.attn.k, a.attn.v, a.attn.o, L.intermediate.dense, L.output.dense,
                              a.LayerNorm, L.output.LayerNorm)(h, src_mask=mask)
                states.append(h)
            self.check(m.gate(x, per_layer=True), h, states)

    def test_whisper_patch_size(self):
        # GATE's find_nearest_n(image_size, 3000) at its three sizes, and
        # the tie (floor and ceil as far from the target) going to ceil.
        for s, want in ((224, 4), (512, 9), (1024, 19), (16, 3), (30, 1)):
            self.assertEqual(patchroot.find_nearest_n(s, 3000 if s >= 224 or s == 30 else 40), want, s)
        self.assertEqual(patchroot.find_nearest_n(8, 40), 2)  # (8/1)^2 = 64 and (8/2)^2 = 16 are both 24 away

    def test_whisper_tokens_at_gates_size(self):
        m = patchroot.PatchRootEncoder(WHISPER, [3, 224, 224])
        self.assertEqual(m.root.patch, 4)
        self.assertEqual(m.tokens, 56 * 56 + 1)
        # nearest resampling of 3137 tokens to 3000 frames: frame i takes token floor(i * 3137 / 3000)
        t = torch.arange(3137, dtype=torch.float32).view(1, 3137, 1).expand(1, 3137, 80)
        got = m.encoder.resample(t)[0, 0].long().tolist()
        self.assertEqual(got, [i * 3137 // 3000 for i in range(3000)])
        self.assertEqual(m.gate_info(), {"features": 512, "raw": 512, "layers": [("tokens", 1500, 512)]})
        self.assertEqual(m.root.patch_embedding.out_channels, 80)

    def test_gradients_match_float64(self):
        # torch 1.13's exact GELU backward went wrong on the permuted
        # gradient Whisper's conv stem handed it: every model's gradients
        # against the same model in float64, twice (the same each time).
        for name in (BERT, BART, MPNET, WHISPER):
            m = randomised(patchroot.PatchRootEncoder(name, [3, 16, 16], dict(small(name), dropout=0.0, attention_dropout=0.0, activation_dropout=0.0)))
            x = torch.randn(2, 3, 16, 16, generator=torch.Generator().manual_seed(1))
            grads = []
            for dtype in (torch.float32, torch.float32, torch.float64):
                mm = m.to(dtype)
                mm.zero_grad()
                mm(x.to(dtype)).pow(2).sum().backward()  # the pooled features
                grads.append({k: p.grad.double().clone() for k, p in mm.named_parameters() if p.grad is not None})
            m.float()
            for k, want in grads[2].items():
                self.assertTrue(torch.equal(grads[0][k], grads[1][k]), (name, k))
                err = (grads[0][k] - want).abs().max().item()
                self.assertLess(err, 1e-3 * (1 + want.abs().max().item()), (name, k, err))

    def test_whisper(self):
        c = small(WHISPER)
        m = randomised(patchroot.PatchRootEncoder(WHISPER, [3, 16, 16], c))
        with torch.no_grad():
            m.encoder.embed_positions.weight.fill_(0.3)
        body = m.encoder
        x = torch.randn(2, 3, 16, 16)
        self.assertEqual(m.root.patch, 3)  # find_nearest_n(16, 40)
        with torch.no_grad():
            h = ref_root(m.root, x)  # [2, 26, 8]
            self.assertEqual(h.shape, (2, 26, 8))
            idx = torch.tensor([i * 26 // 40 for i in range(40)])
            spec = h.permute(0, 2, 1)[:, :, idx]
            h = F.gelu(F.conv1d(spec, body.conv1.weight, body.conv1.bias, padding=1))
            h = F.gelu(F.conv1d(h, body.conv2.weight, body.conv2.bias, stride=2, padding=1)).permute(0, 2, 1) + 0.3
            self.assertEqual(h.shape, (2, 20, 16))
            for L in body.layers:
                s = L.self_attn
                self.assertIsNone(s.k_proj.bias)
                h = ref_layer(c, True, s.q_proj, s.k_proj, s.v_proj, s.out_proj, L.fc1, L.fc2, L.self_attn_layer_norm,
                              L.final_layer_norm)(h)
            h = F.layer_norm(h, (16,), body.layer_norm.weight, body.layer_norm.bias, 1e-5)
            self.check(m.gate(x, per_layer=True), h, [h])
        # GATE's scalar in place of the positions is a trainable parameter,
        # but a shift of every value that the pre-norm layers and the final
        # layer_norm remove: the outputs do not depend on it.
        p = dict(m.named_parameters())["encoder.embed_positions.weight"]
        self.assertEqual(tuple(p.shape), (1,))
        self.assertTrue(torch.allclose(m(x), m.gate(x)["features"]))
        m(x).sum().backward()
        self.assertLess(p.grad.abs().item(), 1e-4)
        with torch.no_grad():
            p.zero_()
            self.assertTrue(torch.allclose(m(x), h.mean(dim=1), atol=1e-5))


def hub_tensors(m):
    """m's encoder tensors in the Hub's names, with tensors GATE drops."""
    own = {k: v for k, v in m.state_dict().items() if k.startswith("encoder.")}
    d = 16
    if m.kind == "bert":  # old BERT files: LayerNorm gamma and beta
        out = {"bert." + k.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta"): v
               for k, v in own.items()}
        out.update({"bert.embeddings.word_embeddings.weight": torch.randn(30, d), "bert.embeddings.LayerNorm.gamma": torch.ones(d),
                    "bert.pooler.dense.weight": torch.randn(d, d), "cls.predictions.bias": torch.zeros(30)})
    elif m.kind == "bart":
        out = {"model." + k: v for k, v in own.items() if k != "encoder.embed_positions.weight"}
        out.update({"model.shared.weight": torch.randn(30, d), "model.encoder.embed_positions.weight": torch.randn(1026, d),
                    "model.encoder.embed_tokens.weight": torch.randn(30, d), "model.decoder.layers.0.fc1.weight": torch.randn(32, d),
                    "final_logits_bias": torch.zeros(1, 30)})
    elif m.kind == "mpnet":
        out = dict(own)
        out.update({"embeddings.word_embeddings.weight": torch.randn(30, d), "pooler.dense.weight": torch.randn(d, d)})
    else:
        out = {"model." + k: v for k, v in own.items() if k != "encoder.embed_positions.weight"}
        out.update({"model.encoder.embed_positions.weight": torch.randn(1500, d), "model.decoder.embed_tokens.weight": torch.randn(30, d),
                    "proj_out.weight": torch.randn(30, d)})
    return {k: v.detach().clone().float() for k, v in out.items()}


class LoadTest(unittest.TestCase):
    def test_hub_names_load_strictly(self):
        for name in SMALL:
            with self.subTest(name), tempfile.TemporaryDirectory() as d:
                src = randomised(patchroot.PatchRootEncoder(name, [3, 16, 16], small(name)), seed=1)
                path = os.path.join(d, "model.safetensors")
                tensors = hub_tensors(src)
                write_safetensors(path, tensors)
                torch.manual_seed(5)
                dst = patchroot.PatchRootEncoder(name, [3, 16, 16], small(name))
                before = {k: v.clone() for k, v in dst.state_dict().items()}
                logged = []
                library.load_own_weights(dst, path, logged.append)
                after = dst.state_dict()
                for k, v in after.items():
                    if k.startswith("root.") or k == "encoder.embed_positions.weight":
                        self.assertTrue(torch.equal(v, before[k]), k)  # not the Hub's: GATE's own
                    else:
                        self.assertTrue(torch.equal(v, src.state_dict()[k]), k)
                if name == WHISPER:
                    self.assertEqual(float(after["encoder.embed_positions.weight"]), 0.0)
                self.assertIn("tensors loaded", logged[0])

                # strict: a missing tensor, an extra one, a wrong shape
                key = sorted(k for k in tensors if (".layer.0." in k or ".layers.0." in k) and "decoder" not in k
                             and k.endswith("weight"))[0]
                for change, want in (("drop", "missing 1 of the encoder's tensors"), ("extra", "tensors it does not have"),
                                     ("shape", "is [3]")):
                    bad = dict(tensors)
                    if change == "drop":
                        del bad[key]
                    elif change == "extra":
                        bad[key.replace(".0.", ".7.", 1)] = bad[key]
                    else:
                        bad[key] = torch.zeros(3)
                    write_safetensors(path, bad)
                    with self.assertRaises(SystemExit) as e:
                        patchroot.load(dst, path)
                    self.assertIn(want, str(e.exception))
                    if change != "shape":
                        self.assertIn(key.replace(".0.", ".7.", 1) if change == "extra" else
                                      patchroot.hub_name(dst.kind, key), str(e.exception))

    def test_own_names(self):
        with small_configs(), tempfile.TemporaryDirectory() as d:
            m = models.TaskModel("classification", {"arch": "patchroot:" + BERT}, [3, 8, 8], 3)
            randomised(m)
            path = os.path.join(d, "own.safetensors")
            write_safetensors(path, {g: m.state_dict()[local] for g, local in models.gatepipe_names(m).items()})
            self.assertIn("encoder.root.class_embedding", SafeTensors(path).header)
            self.assertIn("encoder.encoder.layer.0.attention.self.query.weight", SafeTensors(path).header)
            torch.manual_seed(3)
            other = models.TaskModel("classification", {"arch": "patchroot:" + BERT}, [3, 8, 8], 3)
            patchroot.load(other.encoder.body, path)  # gatepipe's names, head.* ignored
            for k, v in m.encoder.state_dict().items():
                self.assertTrue(torch.equal(v, other.encoder.state_dict()[k]), k)

    def test_non_finite(self):
        with tempfile.TemporaryDirectory() as d:
            m = patchroot.PatchRootEncoder(MPNET, [3, 8, 8], small(MPNET))
            t = hub_tensors(m)
            t["encoder.layer.0.output.dense.weight"][0, 0] = float("nan")
            path = os.path.join(d, "model.safetensors")
            write_safetensors(path, t)
            with self.assertRaisesRegex(SystemExit, "non-finite values.*encoder.layer.0.output.dense.weight"):
                patchroot.load(m, path)


class SDPATest(unittest.TestCase):
    def test_fused_attention_takes_the_bias_and_dropout(self):
        """Where torch has F.scaled_dot_product_attention (2.0+; the CI's
        Debian torch has not), attend hands it the bias as attn_mask and
        the dropout only in training: a stand-in with its documented
        semantics gives what the explicit path gives."""
        calls = []

        def sdpa(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False):
            calls.append((attn_mask is not None, dropout_p))
            s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
            if attn_mask is not None:
                s = s + attn_mask
            return F.dropout(s.softmax(dim=-1), dropout_p) @ v

        m = randomised(patchroot.PatchRootEncoder(MPNET, [3, 12, 12], small(MPNET)))
        x = torch.randn(2, 3, 12, 12)
        with torch.no_grad():
            want = m(x)
            with mock.patch.object(F, "scaled_dot_product_attention", sdpa, create=True):
                got = m(x)
                m.train()
                m(x)
        self.assertTrue(torch.allclose(got, want, atol=1e-6))
        self.assertEqual(calls, [(True, 0.0)] * 2 + [(True, 0.1)] * 2)


class InterfaceTest(unittest.TestCase):
    def test_outputs_and_grey_images(self):
        with small_configs():
            for name in SMALL:
                with self.subTest(name):
                    torch.manual_seed(0)
                    enc = models.Encoder({"arch": "patchroot:" + name}, [1, 16, 16], dense=True)
                    b = enc.body
                    self.assertTrue(b.grey_to_rgb)
                    self.assertEqual(b.root.patch_embedding.in_channels, 3)
                    enc.eval()
                    x = torch.rand(2, 1, 16, 16)
                    with torch.no_grad():
                        out = enc.gate(x, per_layer=True)
                        rgb = b.outputs(x.expand(-1, 3, -1, -1))
                    self.assertTrue(torch.equal(out["features"], rgb["features"]))
                    info = enc.gate_info([1, 16, 16], per_layer=True)
                    self.assertEqual(info["features"], 16)
                    t = 20 if name == WHISPER else 17  # the class token kept, as GATE's raw features have it
                    self.assertEqual(tuple(out["raw_features"].shape), (2, t, 16))
                    self.assertEqual([tuple(s.shape) for s in out["per_layer_raw_features"]],
                                     [(2, t, 16)] * len(info["layers"]))
                    self.assertEqual(len(info["layers"]), {BERT: 3, BART: 3, MPNET: 3, WHISPER: 1}[name])
                    self.assertEqual(tuple(enc(x).shape), (2, 16))
                    if name == WHISPER:
                        with self.assertRaisesRegex(SystemExit, "no spatial feature map"):
                            enc.spatial(x)
                    else:
                        self.assertEqual(tuple(enc.spatial(x).shape), (2, 16, 4, 4))
                        self.assertEqual(enc.spatial_width(), 16)

    def test_size_is_fixed_at_build(self):
        with small_configs():
            enc = models.Encoder({"arch": "patchroot:" + BERT}, [3, 16, 16])
            with self.assertRaisesRegex(SystemExit, "built for 16 x 16 px"):
                enc(torch.zeros(1, 3, 32, 32))

    def test_dropout_as_configured(self):
        with small_configs():
            for name, varies in ((BERT, True), (WHISPER, False)):
                torch.manual_seed(0)
                enc = models.Encoder({"arch": "patchroot:" + name}, [3, 16, 16]).train()
                x = torch.rand(2, 3, 16, 16)
                self.assertEqual(not torch.equal(enc(x), enc(x)), varies, name)

    def test_unknown_name_and_channels(self):
        with self.assertRaisesRegex(SystemExit, "built for .*google-bert/bert-base-uncased"):
            models.Encoder({"arch": "patchroot:bert-base-cased"}, [3, 16, 16])
        with self.assertRaisesRegex(SystemExit, "not 4 channels"):
            models.Encoder({"arch": "patchroot:" + BERT}, [4, 16, 16])
        self.assertFalse(models.convolutional({"arch": "patchroot:" + BERT}))

    def test_real_sizes(self):
        # The real configs' parameter counts: the Hub's encoder less its
        # embeddings (and Whisper's positions), plus the root at 224 px.
        want = {BERT: 85054464 + 741888, BART: 42527232 + 1536 + 199 * 768 + 741888,
                MPNET: 85054464 + 384 + 741888, WHISPER: 19822592 + 1 + 3 * 80 * 16 + 80 + 3137 * 80}
        for name, n in want.items():
            m = patchroot.PatchRootEncoder(name, [3, 224, 224])
            self.assertEqual(sum(p.numel() for p in m.parameters()), n, name)


class TrainJobTest(unittest.TestCase):
    """A worker train job through GATE's adapters, the encoder's starting
    weights a Hub-named file (library_weights)."""

    def job(self, d, name, task, outputs):
        torch.manual_seed(1)
        rows, batch, iterations = 6, 3, 2
        shape = [2, 3, 8, 8] if task == "video" else [3, 8, 8]
        store = os.path.join(d, "store")
        os.makedirs(store)
        with open(os.path.join(store, "meta.json"), "w") as f:
            json.dump({"shape": shape, "normalize": {"scale": 1 / 255, "mean": [0.5] * 3, "std": [0.25] * 3}}, f)
        for split in ("train", "val", "test"):
            x = torch.randint(0, 256, (rows, *shape), dtype=torch.uint8)
            y = torch.randint(0, outputs, (rows, 8, 8), dtype=torch.uint8) if task == "segmentation" else torch.arange(rows) % outputs
            write_safetensors(os.path.join(store, split + ".safetensors"), {"x": x, "y": y})
        draws = os.path.join(d, "draws.safetensors")
        write_safetensors(draws, {"batches": torch.stack([torch.randperm(rows)[:batch] for _ in range(iterations)])})
        hub = os.path.join(d, "model.safetensors")
        write_safetensors(hub, hub_tensors(randomised(patchroot.PatchRootEncoder(name, shape[-3:], small(name)), seed=2)))
        head = {"linear": "classification", "transformer_decoder": "segmentation", "temporal_transformer": "video"}
        names = {v: k for k, v in head.items()}
        card = {"adapter": task, "head": {"name": names[task], "blocks": 1, "width": 16, "heads": 2, "projection": 16, "grid": 4},
                "stem": "instance_norm", "loss": "focal_ce_ignore0" if task == "segmentation" else "cross_entropy"}
        work = os.path.join(d, "work")
        os.makedirs(work)
        cfg = {"job": "train", "task": task, "encoder": {"arch": "patchroot:" + name}, "weights": None, "library_weights": hub,
               "store": store, "preprocess": None, "outputs": outputs, "draws": draws, "work": work, "protocol": card,
               "recipe": {"lr": 1e-3, "weight_decay": 0.0, "iterations": iterations, "validate_every": 1, "top_k": 1,
                          "plateau_threshold": 1e-4, "plateau_patience": 3, "plateau_factor": 0.5, "seed": 0}}
        path = os.path.join(d, "experiment.json")
        with open(path, "w") as f:
            json.dump({"protocol": "gatepipe-trainer/1", "config": cfg, "devices": {"cpus": 1}}, f)
        from gatepipe_worker import train
        from gatepipe_worker.run import Run
        r = Run(path)
        t = train.Trainer(r)
        train.job_train(r)
        return t, work

    def test_adapters_train_on_each(self):
        for name, task, outputs in ((BERT, "classification", 3), (MPNET, "segmentation", 3), (BART, "video", 2),
                                    (WHISPER, "segmentation", 3)):
            with self.subTest(name=name, task=task), small_configs(), tempfile.TemporaryDirectory() as d:
                t, work = self.job(d, name, task, outputs)
                kept = SafeTensors(os.path.join(work, "kept_0.safetensors"))
                self.assertIn("encoder.root.patch_embedding.weight", kept.header)
                self.assertTrue(any(k.startswith("encoder.encoder.") for k in kept.header))
                self.assertIn("head.proj.weight" if task != "segmentation" else "head.decoder.fuse.weight", kept.header)
                pred = SafeTensors(os.path.join(work, "pred.safetensors"))
                self.assertEqual(pred.tensor("best" if task == "segmentation" else "pred").shape[0], 6)
                if task == "segmentation":
                    # every hidden state (the class token kept) reaches GATE's decoder
                    layers = t.model.encoder.gate_info([3, 8, 8], per_layer=True)["layers"]
                    self.assertEqual(layers, [("tokens", 20 if name == WHISPER else 5, 16)] * (1 if name == WHISPER else 3))


if __name__ == "__main__":
    unittest.main()
