#!/usr/bin/env python3
"""The PyTorch variant of trainer.py: an MLP trained with AdamW on a gatepipe
example store, on the GPU gatepipe assigned (CUDA_VISIBLE_DEVICES) when
there is one. Same protocol: experiment.json in, log.jsonl and metrics.json
out. Needs PyTorch (Debian: apt-get install python3-torch).
"""
import torch

import gatepipe_trainer as gp


def tensors(store, split, m, limit):
    x, shape, y = gp.read_split(store, split)
    n = min(len(y), limit)
    size = 1
    for d in shape[1:]:
        size *= d
    xt = torch.frombuffer(bytearray(x[: n * size]), dtype=torch.uint8).float().view(n, size)
    mean, std, scale = m["normalize"]["mean"][0], m["normalize"]["std"][0], m["normalize"]["scale"]
    return (xt * scale - mean) / std, torch.tensor(y[:n])


def main():
    exp = gp.experiment()
    cfg = exp["config"]
    dev = torch.device("cuda:0" if exp["devices"]["device"] == "cuda" and torch.cuda.is_available() else "cpu")
    torch.set_num_threads(max(exp["devices"]["cpus"], 1))
    torch.manual_seed(int(cfg.get("seed", 0)))
    m = gp.meta(cfg["dataset"])
    x, y = tensors(cfg["dataset"], "train", m, int(cfg.get("max_train", 10**9)))
    xt, yt = tensors(cfg["dataset"], "test", m, int(cfg.get("max_test", 10**9)))
    x, y, xt, yt = x.to(dev), y.to(dev), xt.to(dev), yt.to(dev)
    model = torch.nn.Sequential(torch.nn.Linear(x.shape[1], 256), torch.nn.ReLU(), torch.nn.Linear(256, m["num_classes"])).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=float(cfg.get("lr", 1e-3)), weight_decay=0.01)
    steps = int(cfg.get("steps", 300))
    for step in range(steps):
        idx = torch.randint(0, x.shape[0], (128,), device=dev)
        loss = torch.nn.functional.cross_entropy(model(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            gp.log(exp, step, steps, loss=float(loss))
    with torch.no_grad():
        logits = model(xt)
        test_loss = float(torch.nn.functional.cross_entropy(logits, yt))
        top5 = logits.topk(5, dim=1).indices
        acc1 = float((top5[:, 0] == yt).float().mean()) * 100
        acc5 = float((top5 == yt[:, None]).any(dim=1).float().mean()) * 100
    gp.log(exp, steps, steps, loss=test_loss)
    gp.write_metrics(exp, cfg["model"], cfg["benchmark"], cfg.get("category", "Img Class"),
                     {"Acc@1": (acc1, True), "Acc@5": (acc5, True), "Loss": (test_loss, False)})
    print("%s on %s (%s): Acc@1 %.2f%%" % (cfg["model"], cfg["benchmark"], dev, acc1))


if __name__ == "__main__":
    main()
