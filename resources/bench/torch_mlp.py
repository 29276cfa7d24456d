#!/usr/bin/env python3
"""PyTorch reference for `dtlab-cli bench core`: the same MLP training step.

Times full steps (zero_grad, forward, cross-entropy, backward, SGD-momentum update)
on one fixed random batch, after warm-up, and prints one JSON line with the median.
DTLab itself never depends on Python; this script only serves side-by-side numbers.
"""
import argparse
import json
import statistics
import time

import torch


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--in", dest="inputs", type=int, default=256)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--steps", type=int, default=0, help="steps per repetition (0: about 0.3 s)")
    a = p.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(a.threads)
    layers, width = [], a.inputs
    for _ in range(a.layers):
        layers += [torch.nn.Linear(width, a.hidden), torch.nn.ReLU()]
        width = a.hidden
    layers.append(torch.nn.Linear(width, a.classes))
    model = torch.nn.Sequential(*layers)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.randn(a.batch, a.inputs)
    y = torch.randint(0, a.classes, (a.batch,))

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(a.warmup):
        step()
    steps = a.steps
    if steps == 0:
        t0 = time.perf_counter()
        step()
        steps = max(1, int(0.3 / max(time.perf_counter() - t0, 1e-6)))
    rates = []
    for _ in range(a.reps):
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        rates.append(steps * a.batch / (time.perf_counter() - t0))
    print(json.dumps({"impl": "pytorch " + torch.__version__, "threads": a.threads,
                      "samples_per_s": statistics.median(rates)}))


if __name__ == "__main__":
    main()
