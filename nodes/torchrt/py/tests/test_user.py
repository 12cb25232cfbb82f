"""user: a researcher's own module as an encoder (arch "python:PATH:CALLABLE"),
under every task family's head, and the plan-time check."""
import os
import tempfile
import textwrap
import unittest

import torch

from gatepipe_worker import models, user

MODULE = textwrap.dedent('''
    import torch
    from torch import nn


    class Mixer(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.dw = nn.Conv2d(c, c, 3, padding=1, groups=c)
            self.pw = nn.Conv2d(c, c, 1)

        def forward(self, x):
            return x + self.pw(torch.relu(self.dw(x)))


    class Maps(nn.Module):
        """Pooled features and a feature map."""
        def __init__(self, width=8):
            super().__init__()
            self.stem = nn.Conv2d(3, width, 3, stride=2, padding=1)
            self.mix = Mixer(width)

        def forward(self, images):
            m = self.mix(torch.relu(self.stem(images)))
            return {"features": m.mean(dim=(2, 3)), "raw_features": m, "per_layer_raw_features": [m]}


    class Tokens(nn.Module):
        """A class token and 4x4 patch tokens, as a ViT gives them."""
        def __init__(self, dim=12):
            super().__init__()
            self.patch = nn.Conv2d(3, dim, 8, stride=8)
            self.cls = nn.Parameter(torch.zeros(1, 1, dim))

        def forward(self, images):
            t = self.patch(images).flatten(2).transpose(1, 2)
            t = torch.cat([self.cls.expand(t.shape[0], -1, -1), t], dim=1)
            return {"features": t[:, 0], "raw_features": t}


    class Pooled(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 5)

        def forward(self, images):
            return self.fc(images.mean(dim=(2, 3)))


    def broken():
        raise ValueError("width must be a power of two")


    def not_a_module():
        return 3


    class WrongShape(nn.Module):
        def forward(self, images):
            return images
''')


class UserEncoderTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "mymodel.py")
        with open(self.path, "w") as f:
            f.write(MODULE)

    def tearDown(self):
        self.dir.cleanup()

    def arch(self, name):
        return "python:%s:%s" % (self.path, name)

    def test_every_task_family_trains_a_step(self):
        torch.manual_seed(0)
        for name, args in (("Maps", {"width": 6}), ("Tokens", {"dim": 12})):
            spec = {"arch": self.arch(name), "args": args}
            for task, shape, out in (("classification", [3, 32, 32], 4), ("segmentation", [3, 32, 32], 3),
                                     ("video", [2, 3, 32, 32], 4), ("fewshot", [3, 32, 32], 0)):
                with self.subTest(name=name, task=task):
                    m = models.TaskModel(task, spec, shape, out)
                    x = torch.randn(6 if task == "fewshot" else 2, *shape)
                    y = m(x, episode=(2, 2, 1)) if task == "fewshot" else m(x)
                    y.float().sum().backward()
                    grads = [p.grad for p in m.encoder.parameters() if p.grad is not None]
                    self.assertTrue(grads, "no gradient reached the user's module")
                    if task == "segmentation":
                        self.assertEqual(list(y.shape), [2, 3, 32, 32])

    def test_names_are_the_users_own(self):
        m = models.TaskModel("classification", {"arch": self.arch("Maps"), "args": {"width": 6}}, [3, 32, 32], 4)
        names = models.gatepipe_names(m)
        self.assertIn("encoder.user_module.stem.weight", names)

    def test_grey_images_are_repeated_to_rgb(self):
        m = models.TaskModel("classification", {"arch": self.arch("Maps")}, [1, 16, 16], 3)
        self.assertEqual(list(m(torch.randn(2, 1, 16, 16)).shape), [2, 3])

    def test_a_pooled_only_module_refuses_dense_heads(self):
        with self.assertRaisesRegex(SystemExit, "raw_features"):
            models.TaskModel("segmentation", {"arch": self.arch("Pooled")}, [3, 16, 16], 3)

    def test_check_reports_what_plan_prints(self):
        cases = [
            ("Maps", {"width": 6}, {"width": 6, "raw": [6, 112, 112]}),
            ("Tokens", {}, {"width": 12, "raw": [12, 28, 28]}),
            ("broken", {}, "ValueError: width must be a power of two (%s:" % self.path),
            ("not_a_module", {}, "returned int, not a torch.nn.Module"),
            ("WrongShape", {}, "features are of shape [2, 3, 224, 224]"),
            ("Missing", {}, "has no callable 'Missing'"),
        ]
        for name, args, want in cases:
            with self.subTest(name=name):
                got = user.check({"arch": self.arch(name), "args": args, "shape": [3, 224, 224]})
                if isinstance(want, dict):
                    self.assertEqual(got, want)
                else:
                    self.assertIn(want, got.get("error", ""))


if __name__ == "__main__":
    unittest.main()
