#!/usr/bin/env python3
"""Regenerates ../train_parity/convnet.safetensors, the fixture of gatepipe's
training parity test (train_parity_test.go).

A small convnet of the reference convnet's kind (3x3 convs with ReLU and
2x2 max pooling, then ReLU linear layers and a linear head), its initial
weights under gatepipe's names, STEPS batches of inputs and labels, the
cross-entropy loss PyTorch computes at each step, and the weights after
STEPS AdamW steps (prefixed "final."). The Go test starts from the same
weights, takes the same steps and compares the losses and final weights.

Run: /usr/bin/python3 train/testdata/parity/make_train_parity.py
"""
import json
import os

import torch
from torch import nn

from make_parity import CLASSES, HERE, Classifier, ConvNet, write_safetensors

STEPS, BATCH, HW = 5, 6, 8
LR, WD = 1e-2, 0.01
SPEC = {"arch": "convnet", "channels": [4, 6], "hidden": [12]}


def main():
    torch.set_num_threads(1)
    torch.manual_seed(300)
    gen = torch.Generator().manual_seed(301)
    model = Classifier(ConvNet(1, HW, SPEC["channels"], SPEC["hidden"]))
    init = {k: v.clone() for k, v in model.state_dict().items()}
    x = torch.randn(STEPS, BATCH, 1, HW, HW, generator=gen)
    y = torch.randint(0, CLASSES, (STEPS, BATCH), generator=gen)
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WD)
    losses = []
    for s in range(STEPS):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x[s]), y[s])
        loss.backward()
        opt.step()
        losses.append(loss.item())
    tensors = dict(init)
    tensors.update({"final." + k: v for k, v in model.state_dict().items()})
    tensors["parity.x"] = x
    tensors["parity.y"] = y.float()
    tensors["parity.loss"] = torch.tensor(losses)
    meta = {"spec": json.dumps(SPEC), "classes": str(CLASSES), "lr": str(LR), "weight_decay": str(WD),
            "torch": torch.__version__}
    write_safetensors(os.path.join(HERE, "..", "train_parity", "convnet.safetensors"), tensors, meta)
    print("losses", losses)


if __name__ == "__main__":
    main()
