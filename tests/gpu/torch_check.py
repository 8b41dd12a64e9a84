#!/usr/bin/env python3
"""torch_check.py: PyTorch programs for tests/gpu/run-all.sh.

    torch_check.py eager|graph|train [--gib G]

  eager  a stack of linear + ReLU layers (width 8192, G GiB of float32
         weights, default 4) with seeded random weights; four seeded input
         batches of 8 run forward one after another.
  graph  the same model, its forward pass captured once with
         torch.cuda.graph and replayed for each batch.
  train  a smaller stack (width 4096, G/4 GiB of weights) trained for three
         SGD steps on a seeded batch of 64: activations, gradients and the
         weights themselves are written, not only read.

Each checks its GPU result against a float64 reference computed on the CPU
(relative error of the whole result below 1e-3) and prints one line:

    torch-MODE: result=match|mismatch checksum=HEX footprint=BYTES time_s=S

checksum: SHA-256 (first 16 hex digits) of the result's float32 bytes, the
output batches (eager, graph) or the trained weights (train). cuBLAS runs
deterministically (CUBLAS_WORKSPACE_CONFIG, no TF32), so a run under
spillway must print the plain run's checksum. footprint: the peak of
torch.cuda.max_memory_allocated(), what run-all.sh divides by 3 for the
budget.

Exit status: 0 match, 1 mismatch, 2 an error from torch (a CUDA error
among them), 77 no torch or no GPU.
"""
import argparse
import ctypes
import hashlib
import os
import sys
import time

# Deterministic cuBLAS needs this before CUDA starts.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

GIB = 1 << 30
BATCHES = 4
BATCH = 8
TRAIN_BATCH = 64
TRAIN_STEPS = 3
LR = 1e-3
TOLERANCE = 1e-3


def parse():
    ap = argparse.ArgumentParser(description="PyTorch under spillway (tests/gpu)")
    ap.add_argument("mode", choices=["eager", "graph", "train"])
    ap.add_argument("--gib", type=float, default=4.0,
                    help="GiB of float32 weights (train uses a quarter); default 4")
    a = ap.parse_args()
    if not a.gib > 0:
        ap.error(f"--gib must be positive, not {a.gib}")
    return a


def say(mode, text):
    print(f"torch-{mode}: {text}", flush=True)


def layers_for(gib, width):
    return max(2, int(gib * GIB) // (width * width * 4))


def weights(torch, layers, width, seed):
    """Seeded (W, b) pairs on the CPU, scaled so activations neither
    explode nor vanish through the ReLUs."""
    g = torch.Generator().manual_seed(seed)
    scale = (2.0 / width) ** 0.5
    return [(torch.randn(width, width, generator=g) * scale,
             torch.randn(width, generator=g) * 0.01) for _ in range(layers)]


def forward(torch, params, x):
    for w, b in params:
        x = torch.relu(torch.nn.functional.linear(x, w, b))
    return x


def digest(torch, tensors):
    h = hashlib.sha256()
    for t in tensors:
        c = t.detach().to("cpu", torch.float32).contiguous()
        h.update(ctypes.string_at(c.data_ptr(), c.numel() * c.element_size()))
    return h.hexdigest()[:16]


def rel_error(torch, got, want):
    got = torch.cat([t.detach().to("cpu", torch.float64).flatten() for t in got])
    want = torch.cat([t.flatten() for t in want])
    return float((got - want).norm() / want.norm().clamp_min(1e-30))


def inputs(torch, width, n, batch, seed):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(batch, width, generator=g) for _ in range(n)]


def run_infer(torch, mode, gib):
    width = 8192
    cpu = weights(torch, layers_for(gib, width), width, seed=1)
    xs = inputs(torch, width, BATCHES, BATCH, seed=2)
    with torch.no_grad():
        # One layer in float64 at a time: a generator, not a list.
        want = forward(torch, ((w.double(), b.double()) for w, b in cpu),
                       torch.cat(xs).double()).split(BATCH)
        dev = [(w.cuda(), b.cuda()) for w, b in cpu]
        del cpu
        if mode == "eager":
            got = [forward(torch, dev, x.cuda()) for x in xs]
        else:
            static_x = torch.zeros(BATCH, width, device="cuda")
            # Warm up on a side stream, as torch.cuda.graph's docs ask.
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(2):
                    forward(torch, dev, static_x)
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                static_y = forward(torch, dev, static_x)
            got = []
            for x in xs:
                static_x.copy_(x)
                graph.replay()
                got.append(static_y.clone())
        torch.cuda.synchronize()
    return got, want


def train(torch, params, x, t):
    for _ in range(TRAIN_STEPS):
        loss = torch.nn.functional.mse_loss(forward(torch, params, x), t)
        grads = torch.autograd.grad(loss, [p for wb in params for p in wb])
        with torch.no_grad():
            for p, gr in zip([p for wb in params for p in wb], grads):
                p -= LR * gr
    return [p for wb in params for p in wb]


def run_train(torch, gib):
    width = 4096
    cpu = weights(torch, layers_for(gib / 4, width), width, seed=3)
    x, t = inputs(torch, width, 2, TRAIN_BATCH, seed=4)
    ref = [(w.double().requires_grad_(), b.double().requires_grad_()) for w, b in cpu]
    want = [p.detach() for p in train(torch, ref, x.double(), t.double())]
    dev = [(w.cuda().requires_grad_(), b.cuda().requires_grad_()) for w, b in cpu]
    got = train(torch, dev, x.cuda(), t.cuda())
    torch.cuda.synchronize()
    return got, want


def main():
    a = parse()
    try:
        import torch
    except Exception as e:  # any import failure means: no PyTorch here
        say(a.mode, f"skip: cannot import torch ({e})")
        return 77
    if not torch.cuda.is_available():
        say(a.mode, "skip: torch.cuda.is_available() is false")
        return 77
    torch.use_deterministic_algorithms(True)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    start = time.monotonic()
    try:
        got, want = run_train(torch, a.gib) if a.mode == "train" else run_infer(torch, a.mode, a.gib)
    except RuntimeError as e:  # CUDA errors reach Python as RuntimeError
        say(a.mode, f"error: {e}")
        return 2
    err = rel_error(torch, got, want)
    result = "match" if err < TOLERANCE else "mismatch"
    say(a.mode, f"result={result} checksum={digest(torch, got)} "
                f"footprint={torch.cuda.max_memory_allocated()} "
                f"time_s={time.monotonic() - start:.1f} rel_error={err:.3g}")
    return 0 if result == "match" else 1


if __name__ == "__main__":
    sys.exit(main())
