#!/usr/bin/env python3
"""PyTorch reference for `dtlab-cli bench core`: the same training step, of the same MLP or
(--model cnn) the same CNN on 1 x 28 x 28 images: per block a 3 x 3 convolution with padding 1,
ReLU and 2 x 2 max pooling, --channels in the first of --blocks blocks and twice as many in each
next, then --layers dense layers of --hidden with ReLU and a 10-way output layer; or (--model
transformer) the same decoder-only transformer over --tokens token ids of a vocabulary of
--classes: token and learnt position embeddings, --layers pre-norm blocks of width --hidden
(--heads heads, a feed-forward layer 4 x wide with GELU, causal attention, no dropout), a final
layer norm and a head per token, cross-entropy over every token.

A step is zero_grad, forward, cross-entropy, backward and the SGD-momentum update on one
fixed random batch. After --warmup untimed steps the script prints one JSON line describing
itself: the BLAS it runs on (Debian's PyTorch takes its GEMM from libblas.so.3; the harness
picks OPENBLAS_CORETYPE with blas_probe.py and sets OPENBLAS_NUM_THREADS) and that BLAS's
sgemm GFLOP/s at the shape DTLab's bench uses, measured through torch.mm in this process.

Then, with --serve, it answers each line `steps N` on stdin with one JSON line
{"seconds": S}: the wall clock of N whole steps, so the harness can interleave its own
repetitions with these. It exits at the end of its input. Without --serve it times --reps
repetitions itself and prints the median samples/s. DTLab never depends on Python; this
only serves side-by-side numbers.

With --device cuda[:N] (tests/gpu/run.sh uses it beside `bench core --device cuda:N`) the step
runs on that GPU in --precision fp32 (no TF32 anywhere), tf32 (TF32 matrix products) or bf16
(autocast: bf16 operands, fp32 weights and accumulation, as DTLab's bf16 mode), the clock
read after the device has finished; the first line then names the device instead of a BLAS.
"""
import argparse
import contextlib
import json
import statistics
import sys
import time

import torch

from blas_probe import loaded_blas


class Transformer(torch.nn.Module):
    def __init__(self, a):
        super().__init__()
        self.tokens = torch.nn.Embedding(a.classes, a.hidden)
        self.positions = torch.nn.Parameter(0.02 * torch.randn(a.tokens, a.hidden))
        block = torch.nn.TransformerEncoderLayer(a.hidden, a.heads, 4 * a.hidden, dropout=0.0,
                                                 activation="gelu", batch_first=True,
                                                 norm_first=True)
        self.blocks = torch.nn.TransformerEncoder(block, a.layers, enable_nested_tensor=False)
        self.norm = torch.nn.LayerNorm(a.hidden)
        self.head = torch.nn.Linear(a.hidden, a.classes)
        self.register_buffer("mask", torch.nn.Transformer.generate_square_subsequent_mask(a.tokens))

    def forward(self, x):
        h = self.blocks(self.tokens(x) + self.positions, mask=self.mask)
        return self.head(self.norm(h)).flatten(0, 1)  # a row per token


def build(a):
    torch.manual_seed(0)
    if getattr(a, "model", "mlp") == "transformer":
        return Transformer(a)
    layers, width = [], a.inputs
    if getattr(a, "model", "mlp") == "cnn":
        channels, side, into = a.channels, 28, 1
        for _ in range(a.blocks):
            layers += [torch.nn.Conv2d(into, channels, 3, padding=1), torch.nn.ReLU(),
                       torch.nn.MaxPool2d(2)]
            into, channels, side = channels, 2 * channels, side // 2
        layers.append(torch.nn.Flatten())
        width = into * side * side
    for _ in range(a.layers):
        layers += [torch.nn.Linear(width, a.hidden), torch.nn.ReLU()]
        width = a.hidden
    layers.append(torch.nn.Linear(width, a.classes))
    return torch.nn.Sequential(*layers)


def torch_sgemm_gflops(m=256, n=1024, k=1024, seconds=0.25, reps=5):
    """Median GFLOP/s of C[m x n] = A[m x k] B[k x n] through torch.mm."""
    x = torch.full((m, k), 0.5)
    w = torch.full((k, n), 0.25)
    out = torch.empty(m, n)
    for _ in range(3):
        torch.mm(x, w, out=out)
    t0 = time.perf_counter()
    torch.mm(x, w, out=out)
    calls = max(1, int(seconds / max(time.perf_counter() - t0, 1e-7)))
    rates = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(calls):
            torch.mm(x, w, out=out)
        rates.append(2.0 * m * n * k * calls / (time.perf_counter() - t0) * 1e-9)
    return statistics.median(rates)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--in", dest="inputs", type=int, default=256)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--model", choices=["mlp", "cnn", "transformer"], default="mlp")
    p.add_argument("--tokens", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--channels", type=int, default=16)
    p.add_argument("--blocks", type=int, default=2)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--steps", type=int, default=0, help="steps per repetition (0: about 0.3 s)")
    p.add_argument("--serve", action="store_true")
    p.add_argument("--device", default="cpu", help="cpu or cuda[:N]")
    p.add_argument("--precision", choices=["fp32", "tf32", "bf16"], default="fp32")
    a = p.parse_args()
    gpu = a.device.startswith("cuda")
    if not gpu and a.precision != "fp32":
        p.error("--precision tf32 and bf16 need --device cuda")

    torch.set_num_threads(a.threads)
    device = torch.device(a.device)
    if gpu:
        torch.backends.cuda.matmul.allow_tf32 = a.precision == "tf32"
        torch.backends.cudnn.allow_tf32 = a.precision == "tf32"
    model = build(a).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    if a.model == "transformer":
        x = torch.randint(0, a.classes, (a.batch, a.tokens), device=device)
        y = torch.randint(0, a.classes, (a.batch * a.tokens,), device=device)
    else:
        shape = (a.batch, 1, 28, 28) if a.model == "cnn" else (a.batch, a.inputs)
        x = torch.randn(*shape, device=device)
        y = torch.randint(0, a.classes, (a.batch,), device=device)
    autocast = (lambda: torch.autocast("cuda", dtype=torch.bfloat16)) if a.precision == "bf16" \
        else contextlib.nullcontext

    def step():
        opt.zero_grad(set_to_none=True)
        with autocast():
            loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    def timed(steps):
        if gpu:
            torch.cuda.synchronize(device)
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        if gpu:
            torch.cuda.synchronize(device)
        return time.perf_counter() - t0

    for _ in range(a.warmup):
        step()
    if gpu:
        print(json.dumps({"impl": "pytorch " + torch.__version__, "device":
                          torch.cuda.get_device_name(device), "precision": a.precision}),
              flush=True)
    else:
        blas = loaded_blas()
        print(json.dumps({"impl": "pytorch " + torch.__version__, "threads": a.threads,
                          "blas": blas["library"], "openblas": blas["openblas"],
                          "core": blas["core"], "parallel": blas["parallel"],
                          "sgemm_gflops": torch_sgemm_gflops()}),
              flush=True)
    if a.serve:
        for line in sys.stdin:
            words = line.split()
            if len(words) == 2 and words[0] == "steps":
                print(json.dumps({"seconds": timed(int(words[1]))}), flush=True)
        return

    steps = a.steps or max(1, int(0.3 / max(timed(1), 1e-6)))
    rates = [steps * a.batch / timed(steps) for _ in range(a.reps)]
    print(json.dumps({"samples_per_s": statistics.median(rates), "steps": steps}))


if __name__ == "__main__":
    main()
