#!/usr/bin/env python3
"""PyTorch DistributedDataParallel reference for `dtlab-cli bench train`.

--world processes (gloo backend, --threads threads each; rank 0 is this process) train the
same MLP as DTLab's bench on a fixed random batch of global size --batch split evenly.
After --warmup untimed steps rank 0 prints one JSON line describing the setup, including
the BLAS it runs on and that BLAS's sgemm GFLOP/s (torch.mm, see torch_step.py).

Then, with --serve, each line `steps N` on stdin makes every rank run N steps between two
barriers; rank 0 answers with one JSON line {"seconds": S}, the wall clock from leaving the
first barrier to leaving the second, everything included. The ranks exit at the end of the
input. Without --serve rank 0 times --reps repetitions of --steps steps itself and prints
the median global samples/s. DTLab never depends on Python; this only produces
side-by-side numbers.
"""
import argparse
import gc
import json
import os
import socket
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from blas_probe import loaded_blas
from torch_step import build, torch_sgemm_gflops


def rank_main(rank, a, port, commands=iter(()), report=None):
    """Every rank: set up, warm up, then run the repetitions rank 0 asks for."""
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(a.threads)
    dist.init_process_group("gloo", rank=rank, world_size=a.world)
    model = torch.nn.parallel.DistributedDataParallel(build(a))
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
    dist.barrier()
    if rank == 0:
        blas = loaded_blas()
        print(json.dumps({"impl": "pytorch DDP gloo " + torch.__version__, "world": a.world,
                          "threads": a.threads, "blas": blas["library"],
                          "openblas": blas["openblas"], "core": blas["core"],
                          "parallel": blas["parallel"],
                          "sgemm_gflops": torch_sgemm_gflops()}), flush=True)
    order = torch.zeros(1, dtype=torch.int64)
    while True:
        # Rank 0 reads the next request and tells the others; 0 steps means stop.
        if rank == 0:
            order[0] = next(commands, 0)
        dist.broadcast(order, 0)
        steps = int(order[0])
        if steps <= 0:
            break
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        dist.barrier()
        seconds = time.perf_counter() - t0
        if rank == 0:
            report(seconds, steps * local * a.world / seconds)
    # The DDP wrapper goes before its process group: left to the interpreter's teardown,
    # PyTorch 1.13 destroys the group from the reducer's destructor after the store's
    # server (rank 0) is gone, and the rank hangs in a spinning thread.
    del model, opt
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


def requests(a):
    """Step counts rank 0 is asked for: from stdin with --serve, else --reps times --steps."""
    if not a.serve:
        for _ in range(a.reps):
            yield a.steps
        return
    for line in sys.stdin:
        words = line.split()
        if len(words) == 2 and words[0] == "steps":
            yield int(words[1])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--in", dest="inputs", type=int, default=256)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--serve", action="store_true")
    a = p.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    peers = [ctx.Process(target=rank_main, args=(r, a, port)) for r in range(1, a.world)]
    for proc in peers:
        proc.start()
    rates = []

    def report(seconds, rate):
        if a.serve:
            print(json.dumps({"seconds": seconds}), flush=True)
        rates.append(rate)

    rank_main(0, a, port, requests(a), report)
    if not a.serve:
        print(json.dumps({"samples_per_s": statistics.median(rates), "steps": a.steps}))
    for proc in peers:
        proc.join()
        if proc.exitcode != 0:
            sys.exit(f"rank process exited with {proc.exitcode}")


if __name__ == "__main__":
    main()
