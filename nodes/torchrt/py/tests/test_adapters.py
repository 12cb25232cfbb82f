"""adapters: GATE's task adapters (GATE@65192ec gate/models/task_adapters/),
each at tiny widths (shapes, a training step, its loss written out by
hand), their parameter counts at GATE's sizes for a ViT-B/16, and
TaskModel and the train job with a protocol card on gatepipe's ViT and
ResNet. The text tower is a stand-in with CLIPText's interface."""
import json
import math
import os
import sys
import tempfile
import types
import unittest
from unittest import mock

import torch
import torch.nn.functional as F
from torch import nn

from gatepipe_worker import adapters, models
from gatepipe_worker.adapters import common, losses
from gatepipe_worker.adapters.classification import LinearClassifier
from gatepipe_worker.adapters.duo_modal import DuoModalAdapter
from gatepipe_worker.adapters.multilabel import MultiLabelClassifier
from gatepipe_worker.adapters.protonet import ProtoNetAdapter
from gatepipe_worker.adapters.relational import RelationalAdapter
from gatepipe_worker.adapters.segmentation import SegmentationAdapter
from gatepipe_worker.adapters.stem import Stem
from gatepipe_worker.adapters.temporal import TemporalAdapter
from gatepipe_worker.storage import SafeTensors, write_safetensors

VIT = {"arch": "vit", "patch": 4, "dim": 32, "depth": 2, "heads": 2}
RESNET = {"arch": "resnet", "channels": [8, 16], "blocks": [1, 1]}
TINY = {"blocks": 1, "width": 32, "heads": 2, "projection": 32}
NAMES = {"classification": ("linear", "cross_entropy"), "multilabel": ("linear", "bce"),
         "segmentation": ("transformer_decoder", "focal_ce_ignore0"), "relational": ("relational_transformer", "cross_entropy"),
         "video": ("temporal_transformer", "cross_entropy"), "video_regression": ("temporal_transformer", "l1"),
         "retrieval": ("duo_modal", "contrastive"), "fewshot": ("protonet", "cross_entropy")}
EOT = 99  # the stand-in vocabulary's end-of-text token, its largest id


class TinyText(nn.Module):
    """CLIPText's interface: forward(ids [B, L]) -> (states [B, L, width],
    pooled [B, width], the state at each row's argmax id); records the
    ids it was given."""

    def __init__(self, width=16, layers=1, heads=2, vocab=100, context=77):
        super().__init__()
        self.width, self.seen = width, []
        self.embed = nn.Embedding(vocab, width)
        self.pos = nn.Parameter(torch.randn(context, width) * 0.1)
        self.mix = nn.Linear(width, width)

    def forward(self, ids):
        self.seen.append(ids.clone())
        states = torch.tanh(self.mix(self.embed(ids) + self.pos[:ids.shape[1]])).cumsum(dim=1)
        return states, states[torch.arange(ids.shape[0]), ids.argmax(dim=-1)]


def fake_cliptext():
    """A stand-in gatepipe_worker.cliptext (CLIPText, load_hub)."""
    mod = types.ModuleType("gatepipe_worker.cliptext")
    mod.CLIPText = TinyText
    mod.loaded = []
    mod.load_hub = lambda model, path, log=None, projection=False: mod.loaded.append((model, path))
    return mod


def card(task, **head):
    name, loss = NAMES[task]
    return {"adapter": task, "head": dict(TINY, name=name, **head), "stem": "instance_norm", "loss": loss,
            "text_encoder": "openai/clip-vit-base-patch16" if task in ("relational", "retrieval") else None}


def ids(rows, lengths, pad=0, seed=0):
    """CLIP-like token ids [rows, 77]: a start token, words, end-of-text,
    then pad."""
    g = torch.Generator().manual_seed(seed)
    out = torch.full((rows, 77), pad, dtype=torch.long)
    for i, n in enumerate(lengths):
        out[i, 0] = 1
        out[i, 1:n - 1] = torch.randint(2, EOT, (n - 2,), generator=g)
        out[i, n - 1] = EOT
    return out


def tiny_encoder(spec=VIT, shape=(3, 16, 16)):
    return models.Encoder(spec, list(shape), dense=True)


def count(m):
    return sum(p.numel() for p in m.parameters())


class Fixture(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(0)

    def improves(self, modules, loss_fn, lr=0.05):
        """One SGD step on a fixed batch lowers the loss."""
        params = [p for m in modules for p in m.parameters() if p.requires_grad]
        opt = torch.optim.SGD(params, lr=lr)
        before = loss_fn()
        opt.zero_grad()
        before.backward()
        opt.step()
        with torch.no_grad():
            after = loss_fn()
        self.assertTrue(math.isfinite(before.item()))
        self.assertLess(after.item(), before.item())


class StemTest(Fixture):
    def test_instance_norm_before_the_encoder(self):
        stem = Stem(3)
        self.assertEqual(count(stem), 6)
        x = torch.randn(2, 3, 8, 8) * 5 + 3
        y = stem(x)
        self.assertTrue(torch.allclose(y.mean(dim=(2, 3)), torch.zeros(2, 3), atol=1e-5))
        self.assertTrue(torch.allclose(y.var(dim=(2, 3), unbiased=False), torch.ones(2, 3), atol=1e-3))
        stem.eval()  # no running statistics: evaluation normalises the same way
        self.assertTrue(torch.allclose(stem(x), y))
        seen = []
        enc = tiny_encoder()

        def encode(images, per_layer=False):
            seen.append(images)
            return enc.gate(images, per_layer)
        m = LinearClassifier(32, 4, 8)
        m(encode, x[:, :, :, :].repeat(1, 1, 2, 2))
        self.assertTrue(torch.allclose(seen[0].mean(dim=(2, 3)), torch.zeros(2, 3), atol=1e-5))
        self.assertIsInstance(adapters.stem.make("", 3), nn.Identity)
        with self.assertRaises(SystemExit):
            adapters.stem.make("batch_norm", 3)


class EncoderOutputsTest(Fixture):
    def test_vit_tokens_and_layers(self):
        enc = tiny_encoder()
        x = torch.randn(2, 3, 16, 16)
        out = enc.gate(x, per_layer=True)
        self.assertEqual([tuple(t.shape) for t in out["per_layer_raw_features"]], [(2, 16, 32)] * 2)
        self.assertTrue(torch.allclose(out["raw_features"], enc.body.tokens(x)[:, 1:], atol=1e-6))
        self.assertTrue(torch.allclose(out["features"], out["raw_features"].mean(dim=1)))
        self.assertEqual(enc.gate_info([3, 16, 16], per_layer=True), {"features": 32, "raw": 32, "layers": [("tokens", 16, 32)] * 2})
        self.assertEqual(len(enc.gate(x)["per_layer_raw_features"]), 1)

    def test_cnn_map(self):
        enc = tiny_encoder(RESNET)
        x = torch.randn(2, 3, 16, 16)
        out = enc.gate(x)
        m = enc.body.trunk(x)
        self.assertTrue(torch.equal(out["per_layer_raw_features"][0], m))
        self.assertEqual(tuple(out["raw_features"].shape), (2, m.shape[2] * m.shape[3], 16))
        self.assertTrue(torch.allclose(out["features"], m.mean(dim=(2, 3)), atol=1e-6))
        self.assertEqual(enc.gate_info([3, 16, 16]), {"features": 16, "raw": 16, "layers": [("map", 16)]})

    def test_info_is_what_comes_out(self):
        specs = [{"arch": "convnext", "channels": [8, 16], "blocks": [1, 1], "version": 2},
                 {"arch": "convnet", "channels": [4, 8]},
                 {"arch": "resnet", "channels": [4, 8], "blocks": [1, 1], "stem": "imagenet", "block": "bottleneck"},
                 {"arch": "vit", "dim": 16, "heads": 2, "depth": 3, "patch": 4, "pool": "avg", "no_class_token": True},
                 {"arch": "torchvision:resnet18"}]
        for spec in specs:
            with self.subTest(arch=spec["arch"]):
                enc = tiny_encoder(spec, (3, 32, 32))
                info = enc.gate_info([3, 32, 32], per_layer=True)
                out = enc.gate(torch.randn(2, 3, 32, 32), per_layer=True)
                self.assertEqual(info["features"], out["features"].shape[1])
                self.assertEqual(info["raw"], out["raw_features"].shape[2])
                got = [("map", t.shape[1]) if t.dim() == 4 else ("tokens", t.shape[1], t.shape[2]) for t in out["per_layer_raw_features"]]
                self.assertEqual(info["layers"], got)


class ClassificationTest(Fixture):
    def test_linear_heads(self):
        enc = tiny_encoder()
        x, y = torch.randn(6, 3, 16, 16), torch.tensor([0, 1, 2, 3, 0, 1])
        m = LinearClassifier(32, 4, projection=8)
        self.assertIsNone(m.proj.bias)
        self.assertEqual(tuple(m(enc.gate, x).shape), (6, 4))
        loss = adapters.Loss("classification", card("classification"))
        self.assertTrue(torch.allclose(loss(m(enc.gate, x), y), F.cross_entropy(m(enc.gate, x), y)))
        self.improves([m, enc], lambda: loss(m(enc.gate, x), y))

        ml = MultiLabelClassifier(32, 5, projection=8)
        t = (torch.rand(6, 5) > 0.5).float()
        bce = adapters.Loss("multilabel", card("multilabel"))
        z = ml(enc.gate, x)
        self.assertEqual(tuple(z.shape), (6, 5))
        p = torch.sigmoid(z)
        self.assertAlmostEqual(bce(z, t).item(), (-(t * p.log() + (1 - t) * (1 - p).log())).mean().item(), places=5)
        self.improves([ml, enc], lambda: bce(ml(enc.gate, x), t))


class SegmentationTest(Fixture):
    def test_tokens_and_maps(self):
        y = torch.randint(0, 3, (2, 16, 16))
        loss = adapters.Loss("segmentation", card("segmentation"))
        for spec, layers in ((VIT, [("tokens", 16, 32)] * 2), (RESNET, [("map", 16)])):
            enc = tiny_encoder(spec)
            x = torch.randn(2, 3, 16, 16)
            m = SegmentationAdapter(layers, 3, width=8, blocks=1, heads=2, grid=8)
            # 16 tokens are not the 8 x 8 grid: GATE's token-axis conv maps them there
            self.assertEqual(m.decoder.rescale is not None, spec is VIT)
            z = m(enc.gate, x)
            self.assertEqual(tuple(z.shape), (2, 3, 16, 16))
            self.assertEqual(tuple(m(enc.gate, x, size=(4, 6)).shape), (2, 3, 4, 6))  # the masks' size
            self.improves([m, enc], lambda: loss(m(enc.gate, x), y), lr=0.1)

    def test_decoder_norm_keeps_running_statistics(self):
        # GATE's LazyInstanceNorm1d(): affine, with running statistics that
        # evaluation uses.
        m = SegmentationAdapter([("map", 4)], 3, width=8, blocks=1, heads=2, grid=4)
        n = m.decoder.fuse_norm
        self.assertTrue(n.affine and n.track_running_stats)
        feats = [torch.randn(2, 4, 4, 4) * 3 + 1]
        m.decoder(feats)
        self.assertFalse(torch.equal(n.running_mean, torch.zeros(8)))
        m.eval()
        a = m.decoder(feats)
        m.train()
        self.assertFalse(torch.allclose(a, m.decoder(feats)))

    def test_blocks_are_off_as_gate_ran_them(self):
        # GATE's decoder runs its transformer blocks but classifies the
        # features before them: without apply_blocks they are not built.
        off = SegmentationAdapter([("tokens", 16, 8)], 3, width=8, blocks=2, heads=2, grid=4)
        on = SegmentationAdapter([("tokens", 16, 8)], 3, width=8, blocks=2, heads=2, grid=4, apply_blocks=True)
        self.assertIsNone(off.decoder.blocks)
        self.assertIsNone(off.decoder.rescale)  # 16 tokens are the 4 x 4 grid
        layer = 3 * 8 * 8 + 3 * 8 + 8 * 8 + 8 + 8 * 8 + 8 + 8 * 8 + 8 + 4 * 8  # attention, ff = width, two norms
        self.assertEqual(count(on) - count(off), 2 * layer + 2 * 8)
        self.assertEqual(tuple(on.decoder([torch.randn(2, 16, 8)]).shape), (2, 3, 4, 4))

    def test_focal_and_ce_ignoring_background(self):
        z = torch.tensor([[2.0, 0.0, -1.0], [0.5, 1.5, 0.0], [0.0, 0.0, 3.0], [1.0, 1.0, 1.0]])
        labels = torch.tensor([0, 1, 2, 0])
        logits = z.T.reshape(1, 3, 2, 2)  # pixels row-major
        masks = labels.reshape(1, 2, 2)
        ce = [math.log(sum(math.exp(v) for v in row)) - row[k] for row, k in zip(z.tolist(), labels.tolist())]
        focal = [0.25 * (1 - math.exp(-c)) ** 2 * c for c in ce]
        fg = (sum(focal[1:3]) / 2 + sum(ce[1:3]) / 2) / 2  # pixels 1 and 2: label 0 ignored
        bg = (sum(focal) / 4 + sum(ce) / 4) / 2
        self.assertAlmostEqual(losses.focal_loss(logits, masks, 0).item(), sum(focal[1:3]) / 2, places=5)
        self.assertAlmostEqual(losses.ce_loss(logits, masks, 0).item(), sum(ce[1:3]) / 2, places=5)
        got = adapters.Loss("segmentation", card("segmentation"))(logits, masks)
        self.assertAlmostEqual(got.item(), fg + 0.1 * bg, places=5)
        # no ignore ("focal_ce", GATE's NYU: ignore_index -1); the card's background weight
        c = dict(card("segmentation"), loss="focal_ce", background_weight=0.5)
        self.assertAlmostEqual(adapters.Loss("segmentation", c)(logits, masks).item(), 1.5 * bg, places=5)
        with self.assertRaisesRegex(SystemExit, "ignore_label"):
            adapters.Loss("segmentation", dict(card("segmentation"), ignore_label=3))
        # a batch of background only: the ignoring terms are 0, not NaN
        only = adapters.Loss("segmentation", card("segmentation"))(logits, torch.zeros_like(masks))
        self.assertTrue(math.isfinite(only.item()))

    def test_dice_ignoring_background(self):
        z = torch.tensor([[2.0, 0.0, -1.0], [0.5, 1.5, 0.0], [0.0, 0.0, 3.0], [1.0, 1.0, 1.0]])
        labels = [0, 1, 2, 2]
        p = torch.softmax(z, dim=1).tolist()
        logits = z.T.reshape(1, 3, 2, 2)
        masks = torch.tensor(labels).reshape(1, 2, 2)

        def dice(ignore):
            out = []
            for k in range(3):
                t = [1.0 if lab == k and lab != ignore else 0.0 for lab in labels]
                inter = sum(p[i][k] * t[i] for i in range(4))
                union = sum(p[i][k] for i in range(4)) + sum(t)
                out.append(1 - (2 * inter + 1) / (union + 1))
            return sum(out) / 3
        self.assertAlmostEqual(losses.dice_loss(logits, masks, 0).item(), dice(0), places=5)
        self.assertAlmostEqual(losses.dice_loss(logits, masks).item(), dice(None), places=5)
        acdc = dict(card("segmentation"), loss="dice_ignore0")
        self.assertAlmostEqual(adapters.Loss("segmentation", acdc)(logits, masks).item(), dice(0) + 0.01 * dice(None), places=5)
        with self.assertRaises(SystemExit):
            adapters.Loss("segmentation", dict(card("segmentation"), loss="lovasz"))


class SequenceTest(Fixture):
    def test_positions_are_added_as_gate_adds_them(self):
        pe = common.sinusoid(3, 4)
        self.assertTrue(torch.allclose(pe[0, 1], torch.tensor([math.sin(1), math.cos(1), math.sin(0.01), math.cos(0.01)])))
        t = common.SequenceTransformer(8, 2, 16, 1)
        x = torch.randn(2, 5, 8)
        want = t.output_norm(t.transformer(2 * (x + common.sinusoid(5, 8)))[:, -1])
        self.assertTrue(torch.allclose(t(x), want, atol=1e-6))

    def test_gate_text_ids(self):
        q = ids(3, [4, 6, 3])
        got = common.gate_text_ids(q)
        self.assertEqual(tuple(got.shape), (3, 6))  # the batch's longest text
        self.assertEqual(got[0].tolist(), q[0, :4].tolist() + [EOT, EOT])  # padded with end-of-text
        self.assertEqual(got[1].tolist(), q[1, :6].tolist())
        self.assertTrue(torch.equal(common.gate_text_ids(ids(3, [4, 6, 3], pad=EOT)), got))


class RelationalTest(Fixture):
    def test_fusion_of_image_tokens_and_text_states(self):
        enc, text = tiny_encoder(), TinyText(16)
        m = RelationalAdapter(32, 5, text, 16, width=16, heads=2, blocks=1, ff=32)
        x, q, y = torch.randn(4, 3, 16, 16), ids(4, [5, 9, 3, 7]), torch.tensor([0, 1, 2, 4])
        self.assertIsNone(m.image_linear.bias)
        self.assertIsNone(m.text_linear.bias)
        self.assertEqual(tuple(m(enc.gate, x, q).shape), (4, 5))
        self.assertEqual(tuple(text.seen[-1].shape), (4, 9))
        loss = adapters.Loss("relational", card("relational"))
        self.improves([m, enc], lambda: loss(m(enc.gate, x, q), y))
        self.assertIsNotNone(text.embed.weight.grad)  # the text tower trains too


class TemporalTest(Fixture):
    def test_video_and_regression(self):
        enc = tiny_encoder()
        clips = torch.randn(3, 4, 3, 16, 16)
        m = TemporalAdapter(32, 6, projection=16, heads=2, blocks=1, ff=32)
        self.assertEqual(tuple(m(enc.gate, clips).shape), (3, 6))
        ce = adapters.Loss("video", card("video"))
        self.improves([m, enc], lambda: ce(m(enc.gate, clips), torch.tensor([0, 3, 5])))
        r = TemporalAdapter(32, 1, projection=16, heads=2, blocks=1, ff=32)
        counts = torch.tensor([[3.0], [0.0], [12.0]])
        l1 = adapters.Loss("video_regression", card("video_regression"))
        self.assertAlmostEqual(l1(torch.tensor([[2.0], [5.0], [12.5]]), counts).item(), (1 + 5 + 0.5) / 3, places=6)
        self.improves([r, enc], lambda: l1(r(enc.gate, clips), counts), lr=0.01)

    def test_width_is_the_projection(self):
        with self.assertRaises(SystemExit):
            adapters.check("video", card("video", width=64, projection=32))


class DuoModalTest(Fixture):
    def test_clamped_scale_and_symmetric_loss(self):
        enc, text = tiny_encoder(), TinyText(16)
        m = DuoModalAdapter(32, text, 16, projection=8, width=8)
        x, q = torch.randn(4, 3, 16, 16), ids(4, [5, 9, 3, 7])
        self.assertAlmostEqual(m.temperature.item(), 1 / 0.07, places=5)  # the value, not its log
        self.assertEqual(m.scale().item(), 100.0)
        self.assertIsNotNone(m.text_proj.bias)
        self.assertIsNone(m.image_linear.bias)
        sim, emb = m(enc.gate, x, q)
        self.assertEqual(tuple(sim.shape), (4, 4))
        self.assertEqual(tuple(emb.shape), (4, 16))
        img, txt = emb[:, :8], emb[:, 8:]
        self.assertTrue(torch.allclose(img.norm(dim=1), torch.ones(4), atol=1e-5))
        self.assertTrue(torch.allclose(sim, 100 * img @ txt.T, atol=1e-4))
        loss = adapters.Loss("retrieval", card("retrieval"))
        got = loss((sim, emb), None)
        lsm = torch.log_softmax(sim, dim=1).diag().mean() + torch.log_softmax(sim, dim=0).diag().mean()
        self.assertAlmostEqual(got.item(), -lsm.item() / 2, places=4)
        got.backward()
        self.assertEqual(m.temperature.grad.item(), 0.0)  # on the clamp
        with torch.no_grad():
            m.temperature.fill_(math.log(10.0))
        sim, emb = m(enc.gate, x, q)
        self.assertTrue(torch.allclose(sim, 10 * emb[:, :8] @ emb[:, 8:].T, atol=1e-4))
        self.improves([m, enc], lambda: loss(m(enc.gate, x, q), None))


class ProtoNetTest(Fixture):
    def test_negative_squared_distances_to_prototypes(self):
        enc = tiny_encoder()
        m = ProtoNetAdapter(32, projection=8)
        ways, shots, queries = 3, 2, 2
        x = torch.randn(ways * shots + ways * queries, 3, 16, 16)
        z = m(enc.gate, x, episode=(ways, shots, queries))
        self.assertEqual(tuple(z.shape), (ways * queries, ways))
        with torch.no_grad():
            s, qf = m.embed(enc.gate, x[:6]), m.embed(enc.gate, x[6:])
            protos = torch.stack([s[2 * k:2 * k + 2].mean(dim=0) for k in range(3)])
            want = torch.tensor([[-sum((a - b) ** 2 for a, b in zip(qr.tolist(), p.tolist())) for p in protos] for qr in qf])
        self.assertTrue(torch.allclose(z.detach(), want, atol=1e-4))
        y = torch.arange(ways).repeat_interleave(queries)
        loss = adapters.Loss("fewshot", card("fewshot"))
        self.improves([m, enc], lambda: loss(m(enc.gate, x, episode=(ways, shots, queries)), y), lr=0.01)


class FullSizeTest(unittest.TestCase):
    """The adapters' parameters at GATE's sizes for a ViT-B/16 encoder
    (768-d features, 12 layers of 196 tokens at 224 px, 4096 = 64 x 64 at
    segmentation's 1024 px), built on the meta device. The text tower
    (CLIP's, about 63M) is not counted: a stand-in of width 512 without
    parameters stands for it."""

    class Text(nn.Module):
        width = 512

    def counts(self, task, info, outputs, **head):
        name, loss = NAMES[task]
        c = {"adapter": task, "head": dict(name=name, **head), "stem": "instance_norm", "loss": loss}
        return count(adapters.build(task, c, info, outputs, 3, self.Text(), device="meta"))

    def test_vit_b16(self):
        vit224 = {"features": 768, "raw": 768, "layers": [("tokens", 196, 768)] * 12}
        vit1024 = {"features": 768, "raw": 768, "layers": [("tokens", 4096, 768)] * 12}
        # stem 6 + projection 768x768 (589,824) + Linear(768, K)
        self.assertEqual(self.counts("classification", vit224, 1000), 589830 + 769 * 1000)
        self.assertEqual(self.counts("multilabel", vit224, 5), 589830 + 769 * 5)
        # stem, Conv1d(12*768, 12*1024) 113,258,496, fuse Conv1d(12288, 1024)
        # 12,583,936, its instance norm's weight and bias 2,048, Conv1d(1024, K)
        self.assertEqual(self.counts("segmentation", vit1024, 150), 125844486 + 1025 * 150)
        # GATE's 8 transformer blocks (not applied by GATE): 50,415,616 more
        self.assertEqual(self.counts("segmentation", vit1024, 150, blocks_applied=True), 125844486 + 50415616 + 1025 * 150)
        # at 224 px the 196 tokens go to the 64 x 64 grid by Conv1d(196, 4096)
        self.assertEqual(self.counts("segmentation", vit224, 150), 125844486 + 806912 + 1025 * 150)
        # stem, image Linear(768, 512) and text Linear(512, 512) without
        # bias, 4 layers of 3,152,384, two LayerNorms, Linear(512, K)
        self.assertEqual(self.counts("relational", vit224, 11), 13266950 + 513 * 11)
        # stem, projection, 6 layers of 5,513,984, two LayerNorms, Linear(768, K)
        self.assertEqual(self.counts("video", vit224, 51), 33676806 + 769 * 51)
        self.assertEqual(self.counts("video_regression", vit224, 1), 33676806 + 769)
        # stem, image projection 589,824, text projection Linear(512, 768)
        # 393,984, the two 768x768 linears, the temperature
        self.assertEqual(self.counts("retrieval", vit224, 0), 2163463)
        self.assertEqual(self.counts("fewshot", vit224, 0), 589830)


class TaskModelTest(unittest.TestCase):
    """Every family's adapter on gatepipe's ViT and ResNet, through
    TaskModel with a protocol card: forward and backward."""

    def build(self, task, spec, outputs=5, **head):
        shape = [4, 3, 16, 16] if task.startswith("video") else [3, 16, 16]
        with mock.patch.dict(sys.modules, {"gatepipe_worker.cliptext": fake_cliptext()}):
            m = models.TaskModel(task, spec, shape, outputs, protocol=card(task, grid=8, **head),
                                 text={"width": 16, "layers": 1, "heads": 2, "vocab": 100})
        return m, shape

    def test_every_family(self):
        for spec in (VIT, RESNET):
            for task in NAMES:
                with self.subTest(arch=spec["arch"], task=task):
                    torch.manual_seed(0)
                    m, shape = self.build(task, spec)
                    if spec is RESNET:
                        m = m.to(memory_format=torch.channels_last)
                    n = 3 * 2 + 3 * 1 if task == "fewshot" else 4
                    x = torch.randn(n, *shape)
                    if spec is RESNET and x.dim() == 4:
                        x = x.contiguous(memory_format=torch.channels_last)
                    q = ids(n, [5, 9, 3, 7])
                    out = m(x, q, episode=(3, 2, 1))
                    want = {"classification": (4, 5), "multilabel": (4, 5), "segmentation": (4, 5, 16, 16), "relational": (4, 5),
                            "video": (4, 5), "video_regression": (4, 5), "retrieval": (4, 4), "fewshot": (3, 3)}[task]
                    z = out[0] if isinstance(out, tuple) else out
                    self.assertEqual(tuple(z.shape), want)
                    z.float().square().mean().backward()
                    names = dict(m.named_parameters())
                    self.assertTrue(any(k.startswith("head.stem.") for k in names))
                    no_grad = [k for k, p in names.items() if p.grad is None and k != "head.temperature"]
                    self.assertEqual(no_grad, [])
                    if task in ("relational", "retrieval"):
                        self.assertTrue(any(k.startswith("head.text.") for k in names))

    def test_encoder_weights_only(self):
        m, _ = self.build("classification", VIT)
        names = models.gatepipe_names(m)
        state = m.state_dict()
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "w.safetensors")
            enc = {g: state[local] + 1 for g, local in names.items() if g.startswith("encoder.")}
            write_safetensors(path, enc)
            other, _ = self.build("classification", VIT)
            head = {k: v.clone() for k, v in other.state_dict().items() if k.startswith("head.")}
            models.init_weights(other, {"weights": path, "encoder": VIT}, lambda msg: None)
            got = other.state_dict()
            for g, local in names.items():
                if g.startswith("encoder."):
                    self.assertTrue(torch.equal(got[local], enc[g]))
            for k, v in head.items():
                self.assertTrue(torch.equal(got[k], v))
            write_safetensors(path, {g: v for g, v in enc.items() if g != "encoder.cls_token"})
            with self.assertRaisesRegex(SystemExit, "encoder.cls_token"):
                models.load_weights(other, path, ("encoder.",))

    def test_text_weights_load(self):
        fake = fake_cliptext()
        with mock.patch.dict(sys.modules, {"gatepipe_worker.cliptext": fake}):
            m = models.TaskModel("retrieval", VIT, [3, 16, 16], 0, protocol=card("retrieval"),
                                 text={"width": 16, "layers": 1, "heads": 2, "vocab": 100, "weights": "/clip.safetensors"})
            with tempfile.TemporaryDirectory() as d:
                path = os.path.join(d, "w.safetensors")
                state = m.state_dict()
                write_safetensors(path, {g: state[local] for g, local in models.gatepipe_names(m).items() if g.startswith("encoder.")})
                models.init_weights(m, {"encoder": VIT, "weights": path, "text": {"weights": "/clip.safetensors"}}, lambda msg: None)
        self.assertEqual(fake.loaded, [(m.head.text, "/clip.safetensors")])

    def test_card_checks(self):
        with self.assertRaisesRegex(SystemExit, "transformer_decoder"):
            models.TaskModel("segmentation", VIT, [3, 16, 16], 3, protocol=dict(card("segmentation"), head={"name": "linear"}))
        with self.assertRaisesRegex(SystemExit, "text"):
            models.TaskModel("relational", VIT, [3, 16, 16], 3, protocol=dict(card("relational"), text_encoder=None))
        with self.assertRaisesRegex(SystemExit, "loss"):
            models.TaskModel("classification", VIT, [3, 16, 16], 3, protocol=dict(card("classification"), loss="hinge"))

    def test_without_a_protocol_nothing_changes(self):
        torch.manual_seed(0)
        a = models.TaskModel("classification", VIT, [3, 16, 16], 4)
        self.assertEqual(sorted(k for k in a.state_dict() if k.startswith("head.")), ["head.bias", "head.weight"])


USER = '''
import torch
from torch import nn


class Tokens(nn.Module):
    """A class token and 4x4 patch tokens per layer, as a ViT gives them."""
    def __init__(self, dim=12):
        super().__init__()
        self.patch = nn.Conv2d(3, dim, 4, stride=4)
        self.mix = nn.Linear(dim, dim)
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))

    def forward(self, images):
        t = self.patch(images).flatten(2).transpose(1, 2)
        t = torch.cat([self.cls.expand(t.shape[0], -1, -1), t], dim=1)
        u = torch.relu(self.mix(t))
        return {"features": u[:, 0], "raw_features": u, "per_layer_raw_features": [t, u]}


class Maps(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 6, 3, stride=2, padding=1)

    def forward(self, images):
        m = self.conv(images)
        return {"features": m.mean(dim=(2, 3)), "raw_features": m}
'''


class TimmViT(nn.Module):
    """timm's ViT interface: blocks, num_prefix_tokens,
    get_intermediate_layers(x, n, reshape, norm) and forward_features."""

    num_prefix_tokens = 1

    def __init__(self, in_chans=3, dim=8):
        super().__init__()
        self.patch = nn.Conv2d(in_chans, dim, 4, stride=4)
        self.blocks = nn.ModuleList([nn.Linear(dim, dim) for _ in range(3)])
        self.norm = nn.LayerNorm(dim)
        self.calls = []

    def run(self, x):
        t = self.patch(x).flatten(2).transpose(1, 2)
        t = torch.cat([torch.zeros_like(t[:, :1]), t], dim=1)
        outs = []
        for b in self.blocks:
            t = b(t)
            outs.append(t)
        return outs

    def get_intermediate_layers(self, x, n=1, reshape=False, norm=False):
        self.calls.append((n, reshape, norm))
        return tuple((self.norm(o) if norm else o)[:, 1:] for i, o in enumerate(self.run(x)) if i in n)

    def forward_features(self, x):
        return self.norm(self.run(x)[-1])

    def forward(self, x):
        return self.forward_features(x)[:, 0]


class LibraryTest(unittest.TestCase):
    def test_user_modules(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "mine.py")
            with open(path, "w") as f:
                f.write(USER)
            enc = models.Encoder({"arch": "python:%s:Tokens" % path}, [3, 16, 16], dense=True)
            out = enc.gate(torch.randn(2, 3, 16, 16))
            self.assertEqual(tuple(out["raw_features"].shape), (2, 16, 12))  # the class token dropped
            self.assertEqual(enc.gate_info([3, 16, 16]), {"features": 12, "raw": 12, "layers": [("tokens", 16, 12)] * 2})
            m = models.TaskModel("segmentation", {"arch": "python:%s:Tokens" % path}, [3, 16, 16], 3,
                                 protocol=card("segmentation", grid=4))
            self.assertEqual(tuple(m(torch.randn(2, 3, 16, 16)).shape), (2, 3, 16, 16))
            enc = models.Encoder({"arch": "python:%s:Maps" % path}, [3, 16, 16], dense=True)
            self.assertEqual(enc.gate_info([3, 16, 16]), {"features": 6, "raw": 6, "layers": [("map", 6)]})

    def test_timm_vit_layers(self):
        made = []
        timm = types.ModuleType("timm")
        timm.__version__ = "stand-in"
        timm.list_models = lambda pattern=None: ["vit_stand_in"]
        timm.create_model = lambda name, pretrained=False, num_classes=0, in_chans=3: made.append(TimmViT(in_chans)) or made[-1]
        with mock.patch.dict(sys.modules, {"timm": timm}):
            enc = models.Encoder({"arch": "timm:vit_stand_in"}, [3, 16, 16], dense=True)
            x = torch.randn(2, 3, 16, 16)
            out = enc.gate(x, per_layer=True)
            self.assertEqual(made[0].calls, [([0, 1, 2], False, True)])
            self.assertEqual([tuple(t.shape) for t in out["per_layer_raw_features"]], [(2, 16, 8)] * 3)
            last = enc.gate(x)
            self.assertTrue(torch.allclose(last["raw_features"], out["raw_features"], atol=1e-6))
            self.assertTrue(torch.allclose(last["features"], made[0].forward_features(x)[:, 1:].mean(dim=1), atol=1e-6))


class Job:
    """A train job's experiment: a tiny store, gatepipe's draws (with the
    splits' CLIP ids) and encoder-only weights."""

    def __init__(self, d, task, outputs, rows=8, batch=4, iterations=2, mask=8):
        torch.manual_seed(1)
        shape = [2, 3, 8, 8] if task.startswith("video") else [3, 8, 8]
        store = os.path.join(d, "store")
        os.makedirs(store)
        with open(os.path.join(store, "meta.json"), "w") as f:
            json.dump({"shape": shape, "normalize": {"scale": 1 / 255, "mean": [0.5] * 3, "std": [0.25] * 3}}, f)
        for split in ("train", "val", "test"):
            x = torch.randint(0, 256, (rows, *shape), dtype=torch.uint8)
            if task == "segmentation":
                y = torch.randint(0, outputs, (rows, mask, mask), dtype=torch.uint8)
            elif task == "video_regression":
                y = torch.tensor([3.0, 40.0] * (rows // 2))
            else:
                y = torch.arange(rows) % max(outputs, 1)
            write_safetensors(os.path.join(store, split + ".safetensors"), {"x": x, "y": y, "q": torch.randint(0, 5, (rows, 3))})
        draws = os.path.join(d, "draws.safetensors")
        tensors = {"batches": torch.stack([torch.randperm(rows)[:batch] for _ in range(iterations)])}
        for split in ("train", "val", "test"):
            tensors["text_ids_" + split] = ids(rows, [3 + i % 5 for i in range(rows)], seed=len(split))
        write_safetensors(draws, tensors)
        spec = {"arch": "vit", "patch": 4, "dim": 16, "depth": 1, "heads": 2}
        self.card = card(task, blocks=1, width=16, heads=2, projection=16, grid=4)
        self.text = {"width": 16, "layers": 1, "heads": 2, "vocab": 100, "weights": None}
        with mock.patch.dict(sys.modules, {"gatepipe_worker.cliptext": fake_cliptext()}):
            m = models.TaskModel(task, spec, shape, outputs, protocol=self.card, text=self.text)
        weights = os.path.join(d, "init.safetensors")
        write_safetensors(weights, {g: m.state_dict()[local] for g, local in models.gatepipe_names(m).items() if g.startswith("encoder.")})
        self.work = os.path.join(d, "work")
        os.makedirs(self.work)
        cfg = {"job": "train", "task": task, "encoder": spec, "weights": weights, "store": store, "preprocess": None,
               "outputs": outputs, "qlen": 3, "vocab": 5, "draws": draws, "work": self.work, "protocol": self.card, "text": self.text,
               "recipe": {"lr": 1e-3, "weight_decay": 0.0, "iterations": iterations, "validate_every": 1, "top_k": 1,
                          "plateau_threshold": 1e-4, "plateau_patience": 3, "plateau_factor": 0.5, "seed": 0}}
        self.path = os.path.join(d, "experiment.json")
        with open(self.path, "w") as f:
            json.dump({"protocol": "gatepipe-trainer/1", "config": cfg, "devices": {"cpus": 1}}, f)

    def run(self):
        from gatepipe_worker import train
        from gatepipe_worker.run import Run
        with mock.patch.dict(sys.modules, {"gatepipe_worker.cliptext": fake_cliptext()}):
            r = Run(self.path)
            t = train.Trainer(r)
            train.job_train(r)
        return t, SafeTensors(os.path.join(self.work, "pred.safetensors"))


class TrainJobTest(unittest.TestCase):
    def test_relational_reads_clip_ids(self):
        with tempfile.TemporaryDirectory() as d:
            job = Job(d, "relational", 4)
            t, pred = job.run()
            self.assertEqual(tuple(t.splits["train"][1].q.shape), (8, 77))  # the draws' ids, not the store's words
            self.assertEqual(tuple(pred.tensor("pred").shape), (8, 4))

    def test_retrieval(self):
        with tempfile.TemporaryDirectory() as d:
            t, pred = Job(d, "retrieval", 0).run()
            self.assertEqual(tuple(pred.tensor("pred").shape), (8, 32))

    def test_regression_trains_on_raw_counts(self):
        with tempfile.TemporaryDirectory() as d:
            t, pred = Job(d, "video_regression", 1).run()
            self.assertTrue(torch.equal(t.extra[0].cpu(), torch.zeros(1, dtype=torch.float64)))
            self.assertTrue(torch.equal(t.extra[1].cpu(), torch.ones(1, dtype=torch.float64)))
            x, y = torch.zeros(2, 1), torch.tensor([[3.0], [40.0]])
            from gatepipe_worker.train import task_loss
            self.assertAlmostEqual(task_loss("video_regression", x, y, t.extra, t.loss).item(), 21.5)
            self.assertEqual(tuple(pred.tensor("pred").shape), (8, 1))

    def test_segmentation(self):
        with tempfile.TemporaryDirectory() as d:
            t, pred = Job(d, "segmentation", 3, mask=4).run()
            # masks of 4 x 4 under 8 x 8 images: the logits follow the masks
            self.assertEqual(tuple(pred.tensor("best").shape), (8, 16))
            kept = SafeTensors(os.path.join(t.cfg["work"], "kept_0.safetensors"))
            self.assertIn("head.decoder.fuse_norm.running_mean", kept.header)


if __name__ == "__main__":
    unittest.main()
