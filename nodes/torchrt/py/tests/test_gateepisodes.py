"""gateepisodes: GATE's variable few-shot episodes in the draws file's
ragged layout, GATE's ProtoNet on them (prototypes by label, negative
squared distances, the queries' cross-entropy), the per-episode metrics,
and a train job on them."""
import json
import math
import os
import tempfile
import unittest

import torch
import torch.nn.functional as F

from gatepipe_worker import adapters, gateepisodes
from gatepipe_worker.adapters import protonet
from gatepipe_worker.adapters.protonet import ProtoNetAdapter
from gatepipe_worker.storage import SafeTensors, write_safetensors
from tests.test_adapters import Job, card, tiny_encoder


def ragged(split, episodes):
    """The draws file's tensors of episodes, each (rows, labels, query
    flags)."""
    index, label, query, offsets = [], [], [], [0]
    for rows, labels, flags in episodes:
        index += rows
        label += labels
        query += flags
        offsets.append(len(index))
    name = "gate_" + split
    return {name + "_index": torch.tensor(index, dtype=torch.int32), name + "_label": torch.tensor(label, dtype=torch.int32),
            name + "_query": torch.tensor(query, dtype=torch.uint8), name + "_offsets": torch.tensor(offsets, dtype=torch.int32)}


def episode(labels, query):
    return gateepisodes.Episode(torch.arange(len(labels)), torch.tensor(labels), torch.tensor(query, dtype=torch.bool), max(labels) + 1)


class ProtoNetOnEpisodesTest(unittest.TestCase):
    def test_prototypes_logits_and_loss_by_hand(self):
        # Support: class 0 at (0, 0) and (2, 0), class 1 at (0, 4) once;
        # class 2 has no support: GATE's zero prototype.
        s = torch.tensor([[0.0, 0.0], [2.0, 0.0], [0.0, 4.0]])
        p = protonet.prototypes(s, torch.tensor([0, 0, 1]), 3)
        self.assertTrue(torch.equal(p, torch.tensor([[1.0, 0.0], [0.0, 4.0], [0.0, 0.0]])))
        z = protonet.logits(p, torch.tensor([[1.0, 1.0], [0.0, 3.0]]))
        self.assertTrue(torch.equal(z, torch.tensor([[-1.0, -10.0, -2.0], [-10.0, -1.0, -9.0]])))
        loss = adapters.Loss("fewshot", card("fewshot"))(z, torch.tensor([0, 1]))
        want = (math.log(1 + math.exp(-9) + math.exp(-1)) + math.log(1 + math.exp(-9) + math.exp(-8))) / 2
        self.assertAlmostEqual(loss.item(), want, places=5)

    def test_adapter_on_a_variable_episode(self):
        torch.manual_seed(0)
        enc = tiny_encoder()
        m = ProtoNetAdapter(32, projection=8)
        # 3 classes, 3 / 1 / 2 shots, rows interleaved; 2 queries each.
        labels = [0, 1, 0, 2, 0, 2, 0, 1, 2, 2, 1, 0]
        query = [0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1]
        ep = episode(labels, query)
        x = torch.randn(len(labels), 3, 16, 16)
        m.eval()  # batch statistics aside: support and query embedded apart either way
        z = m(enc.gate, x, episode=ep)
        self.assertEqual(tuple(z.shape), (6, 3))
        with torch.no_grad():
            sup = m.embed(enc.gate, x[:6])
            qry = m.embed(enc.gate, x[6:])
            protos = torch.stack([sup[[i for i in range(6) if labels[i] == c]].mean(dim=0) for c in range(3)])
            want = -torch.cdist(qry, protos) ** 2
        self.assertTrue(torch.allclose(z.detach(), want, atol=1e-4))
        self.assertTrue(torch.equal(ep.targets(), torch.tensor([0, 1, 2, 2, 1, 0])))
        m.train()
        loss = adapters.Loss("fewshot", card("fewshot"))
        params = list(m.parameters()) + list(enc.parameters())
        opt = torch.optim.SGD(params, lr=0.01)
        z = m(enc.gate, x, episode=ep)
        before = loss(z, ep.targets())  # the queries' cross-entropy
        self.assertAlmostEqual(before.item(), F.cross_entropy(z.detach(), ep.targets()).item(), places=5)
        opt.zero_grad()
        before.backward()
        opt.step()
        with torch.no_grad():
            after = loss(m(enc.gate, x, episode=ep), ep.targets())
        self.assertLess(after.item(), before.item())

    def test_the_fixed_episodes_still_take_a_tuple(self):
        torch.manual_seed(0)
        enc = tiny_encoder()
        m = ProtoNetAdapter(32, projection=8).eval()
        x = torch.randn(3 * 2 + 3 * 1, 3, 16, 16)
        fixed = m(enc.gate, x, episode=(3, 2, 1))
        same = m(enc.gate, x, episode=episode([0, 0, 1, 1, 2, 2, 0, 1, 2], [0] * 6 + [1] * 3))
        self.assertTrue(torch.allclose(fixed, same, atol=1e-4))


class EpisodesTest(unittest.TestCase):
    def draws(self, d, tensors):
        path = os.path.join(d, "draws.safetensors")
        write_safetensors(path, tensors)
        return SafeTensors(path)

    def test_reads_the_ragged_layout(self):
        eps = [([4, 5, 6, 7, 8], [0, 1, 0, 1, 0], [0, 0, 1, 1, 0]), ([9, 0, 1, 2], [0, 1, 2, 2], [0, 0, 0, 1])]
        with tempfile.TemporaryDirectory() as d:
            f = self.draws(d, ragged("val", eps))
            got = gateepisodes.Episodes(f, "val", torch.device("cpu"), 10)
            self.assertEqual(len(got), 2)
            self.assertEqual(got.classes, [2, 3])
            e = got[1]
            self.assertEqual(e.index.tolist(), [9, 0, 1, 2])
            self.assertEqual(e.targets().tolist(), [2])
            self.assertEqual([x.classes for x in got], [2, 3])

    def test_errors(self):
        good = [([0, 1, 2], [0, 1, 0], [0, 0, 1])]
        for name, tensors, rows, want in [
            ("missing", {k: v for k, v in ragged("test", good).items() if not k.endswith("_query")}, 5, "no gate_test_query"),
            ("offsets", dict(ragged("test", good), gate_test_offsets=torch.tensor([0, 2], dtype=torch.int32)), 5, "do not agree"),
            ("no query", ragged("test", [([0, 1], [0, 1], [0, 0])]), 5, "episode 0 has no support or no query"),
            ("no support", ragged("test", good + [([3, 4], [0, 0], [1, 1])]), 5, "episode 1 has no support or no query"),
            ("rows", ragged("test", good), 2, "outside the test split's 2"),
            ("empty", ragged("test", []), 5, "holds no episodes"),
        ]:
            with self.subTest(name), tempfile.TemporaryDirectory() as d:
                f = self.draws(d, tensors)
                with self.assertRaises(SystemExit) as cm:
                    gateepisodes.Episodes(f, "test", torch.device("cpu"), rows)
                self.assertIn(want, str(cm.exception))

    def test_load_only_with_the_layout_and_a_protocol(self):
        self.assertIsNone(gateepisodes.load({"task": "fewshot"}, None, torch.device("cpu"), {}))
        for cfg, want in [({"episodes": "gate", "task": "fewshot"}, "protocol card"),
                          ({"episodes": "gate", "task": "classification", "protocol": {"adapter": "classification"}}, "few-shot task"),
                          ({"episodes": "meta", "task": "fewshot"}, "not a layout")]:
            with self.assertRaises(SystemExit) as cm:
                gateepisodes.load(cfg, None, torch.device("cpu"), {})
            self.assertIn(want, str(cm.exception))

    def test_metrics_are_means_over_episodes(self):
        # Episode 1: queries of 0 (right) and 1 (wrong); episode 2: one
        # query of 2 (right). Pooled, 2 of 3; per episode, (50 + 100) / 2.
        eps = [episode([0, 1, 0, 1], [0, 0, 1, 1]), episode([0, 1, 2, 2], [0, 0, 0, 1])]
        probs = [torch.tensor([[0.7, 0.3], [0.6, 0.4]]), torch.tensor([[0.1, 0.2, 0.7]])]
        m = gateepisodes.metrics(probs, eps)
        self.assertAlmostEqual(m["acc1"], 75.0)
        nll = lambda p: -math.log(p + 1e-7)  # noqa: E731
        self.assertAlmostEqual(m["loss"], ((nll(0.7) + nll(0.4)) / 2 + nll(0.7)) / 2, places=6)


class TrainJobOnGATEEpisodesTest(unittest.TestCase):
    def test_one_episode_a_step_and_the_test_episodes_probabilities(self):
        with tempfile.TemporaryDirectory() as d:
            job = Job(d, "fewshot", 3, rows=24, iterations=3)  # y = row % 3
            rng = torch.Generator().manual_seed(0)

            def draw(n, ways):
                out = []
                for _ in range(n):
                    classes = torch.randperm(3, generator=rng)[:ways].tolist()
                    shots = torch.randint(1, 4, (1,), generator=rng).item()
                    sup, qry = [], []
                    for label, c in enumerate(classes):
                        rows = [r for r in torch.randperm(24, generator=rng).tolist() if r % 3 == c][:shots + 2]
                        sup += [(r, label) for r in rows[:shots]]
                        qry += [(r, label) for r in rows[shots:]]
                    out.append(([r for r, _ in sup + qry], [lab for _, lab in sup + qry], [0] * len(sup) + [1] * len(qry)))
                return out

            test = draw(4, 3)[:2] + draw(2, 2)
            f = SafeTensors(os.path.join(d, "draws.safetensors"))
            tensors = {k: f.tensor(k).clone() for k in f.header if k != "__metadata__"}
            for split, eps in (("train", draw(3, 3)), ("val", draw(2, 2)), ("test", test)):
                tensors.update(ragged(split, eps))
            write_safetensors(os.path.join(d, "draws.safetensors"), tensors)
            with open(job.path) as f:
                exp = json.load(f)
            exp["config"]["episodes"] = "gate"
            with open(job.path, "w") as f:
                json.dump(exp, f)
            t, pred = job.run()
            self.assertEqual(len(t.episodes["train"]), 3)
            p = pred.tensor("gate_pred")
            sizes = [sum(q) * (max(lab) + 1) for _, lab, q in test]
            self.assertEqual(tuple(p.shape), (sum(sizes),))
            sums, at = [], 0
            for (_, lab, q), n in zip(test, sizes):
                sums += p[at:at + n].view(-1, max(lab) + 1).sum(dim=1).tolist()
                at += n
            for s in sums:
                self.assertAlmostEqual(s, 1.0, places=5)
            with open(os.path.join(t.cfg["work"], "result.json")) as f:
                result = json.load(f)
            self.assertGreater(result["images_per_sec"], 0)
            self.assertTrue(0 <= result["kept"][0]["val_score"] <= 100)


if __name__ == "__main__":
    unittest.main()
