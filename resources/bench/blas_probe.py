#!/usr/bin/env python3
"""Which BLAS Debian's PyTorch gets, and which OpenBLAS kernel is fastest for it here.

Debian's PyTorch takes its GEMM from whatever libblas.so.3 the alternatives system selects.
With OpenBLAS there, the kernel is picked at load time from the CPU (OPENBLAS_CORETYPE
overrides it), and auto-detection is not always the fastest choice: on one Intel machine it
gave 25 GFLOP/s where `Haswell` gave 62. This script measures sgemm through libblas.so.3 for
every kernel the CPU can run, each in a fresh process (the variable is read when the
library loads), and prints one JSON line with the figures and the fastest choice.

  blas_probe.py --threads T [--m 256 --n 1024 --k 1024] [--rounds 3]

Candidates are measured in interleaved rounds and ranked by their best round: on a shared
machine other work only ever slows a kernel down, so the best round is the closest to
what the kernel can do on this CPU. Also importable:
loaded_blas() describes the BLAS this process has loaded (used by the PyTorch references).
"""
import argparse
import array
import ctypes
import ctypes.util
import json
import os
import statistics
import subprocess
import sys
import time

# OPENBLAS_CORETYPE names for x86-64 and the CPU flags each kernel needs.
_SKYLAKEX = {"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"}
CANDIDATES = [
    ("Sandybridge", {"avx"}),
    ("Haswell", {"avx2", "fma"}),
    ("Zen", {"avx2", "fma"}),
    ("SkylakeX", _SKYLAKEX),
    ("CooperLake", _SKYLAKEX | {"avx512_bf16"}),
    ("SapphireRapids", _SKYLAKEX | {"avx512_bf16", "avx512_fp16", "amx_tile"}),
]


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def loaded_blas():
    """The BLAS mapped into this process (call after a first matrix product):
    {"library": libblas.so.3 as resolved, "implementation": the library doing the work,
     "openblas": OpenBLAS's config or None, "core": its kernel, "parallel": its threading}.

    Debian's OpenBLAS libblas.so.3 is a thin library over libopenblas.so.0, and each is
    chosen by its own alternative: a libblas.so.3 of the OpenMP build can run on the pthread
    build's libopenblas.so.0, so the implementation is named apart."""
    paths = []
    with open("/proc/self/maps") as f:
        for line in f:
            fields = line.split()
            name = fields[-1] if len(fields) >= 6 else ""
            base = os.path.basename(name)
            if (base.startswith("libblas.so") or base.startswith("libopenblas")) and name not in paths:
                paths.append(name)
    blas = [p for p in paths if os.path.basename(p).startswith("libblas.so")]
    openblas = [p for p in paths if os.path.basename(p).startswith("libopenblas")]
    info = {"library": blas[0] if blas else (openblas[0] if openblas else None),
            "implementation": openblas[0] if openblas else (blas[0] if blas else None),
            "openblas": None, "core": None, "parallel": None}
    if info["library"] is None:
        return info
    try:
        lib = ctypes.CDLL(info["library"])
        lib.openblas_get_config.restype = ctypes.c_char_p
        lib.openblas_get_corename.restype = ctypes.c_char_p
        info["openblas"] = lib.openblas_get_config().decode()
        info["core"] = lib.openblas_get_corename().decode()
        info["parallel"] = {0: "sequential", 1: "pthreads", 2: "openmp"}.get(
            lib.openblas_get_parallel(), "unknown")
    except (OSError, AttributeError):
        pass  # not OpenBLAS (e.g. the reference BLAS): no kernel to choose
    return info


def measure(m, n, k, seconds=0.25, reps=5):
    """Median sgemm GFLOP/s of C = A B (row major) through libblas.so.3's cblas_sgemm."""
    path = ctypes.util.find_library("blas") or "libblas.so.3"
    lib = ctypes.CDLL(path)
    a_data = array.array("f", [0.5]) * (m * k)
    b_data = array.array("f", [0.25]) * (k * n)
    a = (ctypes.c_float * (m * k)).from_buffer(a_data)
    b = (ctypes.c_float * (k * n)).from_buffer(b_data)
    c = (ctypes.c_float * (m * n))()
    row_major, no_trans = 101, 111
    lib.cblas_sgemm.argtypes = [ctypes.c_int] * 6 + [ctypes.c_float, ctypes.c_void_p, ctypes.c_int,
                                                      ctypes.c_void_p, ctypes.c_int, ctypes.c_float,
                                                      ctypes.c_void_p, ctypes.c_int]

    def gemm():
        lib.cblas_sgemm(row_major, no_trans, no_trans, m, n, k, 1.0, a, k, b, n, 0.0, c, n)

    for _ in range(3):
        gemm()
    t0 = time.perf_counter()
    gemm()
    calls = max(1, int(seconds / max(time.perf_counter() - t0, 1e-7)))
    rates = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(calls):
            gemm()
        rates.append(2.0 * m * n * k * calls / (time.perf_counter() - t0) * 1e-9)
    info = loaded_blas()
    info["gflops"] = statistics.median(rates)
    return info


def thread_env(threads, coretype=None):
    env = dict(os.environ)
    env["OPENBLAS_NUM_THREADS"] = str(threads)
    env["OMP_NUM_THREADS"] = str(threads)
    env.pop("OPENBLAS_CORETYPE", None)
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    return env


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--m", type=int, default=256)
    p.add_argument("--n", type=int, default=1024)
    p.add_argument("--k", type=int, default=1024)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--measure", action="store_true", help="measure in this process and exit")
    a = p.parse_args()
    if a.measure:
        print(json.dumps(measure(a.m, a.n, a.k)))
        return

    flags = cpu_flags()
    names = [""] + [name for name, needs in CANDIDATES if needs <= flags]
    runs = {name: [] for name in names}
    cores = {}
    library = None
    for _ in range(a.rounds):
        for name in names:
            command = [sys.executable, os.path.abspath(__file__), "--measure", "--m", str(a.m),
                       "--n", str(a.n), "--k", str(a.k)]
            try:
                out = subprocess.run(command, env=thread_env(a.threads, name), capture_output=True,
                                     text=True, timeout=120)
            except subprocess.TimeoutExpired:
                continue
            if out.returncode != 0 or not out.stdout.strip():
                continue  # e.g. a kernel the CPU cannot run after all
            r = json.loads(out.stdout.strip().splitlines()[-1])
            runs[name].append(r["gflops"])
            cores[name] = r["core"]
            library = library or r
        if library is not None and library["openblas"] is None:
            break  # not OpenBLAS: there is nothing to choose

    candidates = []
    seen = set()
    for name in names:
        if not runs[name]:
            continue
        core = cores.get(name)
        # OpenBLAS falls back to auto-detection for a kernel it was built without.
        if name and core in seen:
            continue
        seen.add(core)
        candidates.append({"coretype": name or "auto", "core": core, "gflops": max(runs[name]),
                           "rounds": runs[name]})
    best = max(candidates, key=lambda c: c["gflops"]) if candidates else None
    print(json.dumps({
        "library": library["library"] if library else None,
        "implementation": library["implementation"] if library else None,
        "openblas": library["openblas"] if library else None,
        "parallel": library["parallel"] if library else None,
        "threads": a.threads,
        "rounds": a.rounds,
        "shape": [a.m, a.n, a.k],
        "candidates": candidates,
        # What to set: empty when auto-detection is the fastest (or the BLAS is not OpenBLAS).
        "coretype": "" if best is None or best["coretype"] == "auto" else best["coretype"],
        "core": best["core"] if best else None,
        "gflops": best["gflops"] if best else 0.0,
    }))


if __name__ == "__main__":
    main()
