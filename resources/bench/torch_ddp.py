#!/usr/bin/env python3
"""PyTorch DistributedDataParallel reference for `dtlab-cli bench train`.

Spawns --world processes (gloo backend, --threads threads each) that train the same MLP
as DTLab's bench on a fixed random batch of global size --batch split evenly, and prints
one JSON line with the median global samples/s over repetitions after warm-up.
DTLab never depends on Python; this only produces side-by-side numbers.
"""
import argparse
import json
import os
import statistics
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(rank, a, port, queue):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(a.threads)
    dist.init_process_group("gloo", rank=rank, world_size=a.world)
    torch.manual_seed(0)
    layers, width = [], a.inputs
    for _ in range(a.layers):
        layers += [torch.nn.Linear(width, a.hidden), torch.nn.ReLU()]
        width = a.hidden
    layers.append(torch.nn.Linear(width, a.classes))
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Sequential(*layers))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    local = a.batch // a.world
    x = torch.randn(local, a.inputs)
    y = torch.randint(0, a.classes, (local,))

    def step():
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()

    for _ in range(a.warmup):
        step()
    # Every rank must run the same number of steps: rank 0 decides from its timing.
    t0 = time.perf_counter()
    step()
    steps = torch.tensor([max(1, int(0.5 / max(time.perf_counter() - t0, 1e-6)))])
    dist.broadcast(steps, 0)
    rates = []
    for _ in range(a.reps):
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(int(steps)):
            step()
        dist.barrier()
        rates.append(int(steps) * local * a.world / (time.perf_counter() - t0))
    if rank == 0:
        queue.put(statistics.median(rates))
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--in", dest="inputs", type=int, default=256)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--reps", type=int, default=5)
    a = p.parse_args()
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(r, a, port, queue)) for r in range(a.world)]
    for proc in procs:
        proc.start()
    rate = queue.get(timeout=600)
    for proc in procs:
        proc.join()
    print(json.dumps({"impl": "pytorch DDP gloo " + torch.__version__, "world": a.world,
                      "threads": a.threads, "samples_per_s": rate}))


if __name__ == "__main__":
    main()
