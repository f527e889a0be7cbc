#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A small CNN trained on synthetic images, on the CPU, with a multi-worker DataLoader.

A realistic job for `trainmon run`: a main process plus DataLoader worker processes (each with
its own RSS and CPU time), a few hundred optimisation steps, 15-30 s on two cores.

    trainmon run -- /usr/bin/python3 examples/train_cnn.py --steps 300 --workers 2 [--epochs 3]

`--steps` is the total; with `--epochs N` each epoch reads the whole (smaller) dataset once, so the
DataLoader ends N times and trainmon's zero-code hook reports N epoch ends.
"""

import argparse
import os
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset


class SyntheticImages(Dataset):
    """Random 3x32x32 images whose label is the brightest channel (learnable, so loss falls).
    Each item costs some CPU in the worker, as real decoding and augmentation do."""

    def __init__(self, n, seed=0, io_ms=0.0):
        self.n = n
        self.seed = seed
        self.io_s = io_ms / 1000.0
        # Per-worker memory, as a cached dataset would hold (shows in the workers' RSS).
        self.cache = bytearray(32 << 20)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.io_s > 0:
            time.sleep(self.io_s)  # reading the image from a slow disk or network file system
        g = torch.Generator().manual_seed(self.seed + i)
        x = torch.rand(3, 32, 32, generator=g)
        y = int(torch.randint(0, 3, (1,), generator=g))
        x[y] += 0.5
        # "augmentation": a few cheap passes
        for _ in range(4):
            x = torch.flip(x, dims=[2]) * 0.999 + 0.0005
        return x, y


def model():
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(32, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(), torch.nn.Linear(32, 3))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--io-ms", type=float, default=0.0,
                    help="time to read each image, ms (a slow disk: the DataLoader starves the loop)")
    ap.add_argument("--warmup", type=int, default=20,
                    help="steps left out of the final throughput line (start-up, first batches)")
    args = ap.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    epochs = max(1, args.epochs)
    per_epoch = max(1, args.steps // epochs)
    data = SyntheticImages(per_epoch * args.batch, io_ms=args.io_ms)
    loader = DataLoader(data, batch_size=args.batch, shuffle=True, num_workers=args.workers,
                        persistent_workers=args.workers > 0)
    net = model()
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    start = time.monotonic()
    step = 0
    first_loss = last_loss = None
    total = per_epoch * epochs
    warm_t = None  # when step --warmup ended: the throughput line counts the steps after it
    for epoch in range(1, epochs + 1):
        for x, y in loader:  # the whole dataset: the loader ends, and with it the epoch
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(net(x), y)
            loss.backward()
            opt.step()
            step += 1
            last_loss = float(loss)
            if first_loss is None:
                first_loss = last_loss
            if step == args.warmup:
                warm_t = time.monotonic()
            if step % 50 == 0:
                print(f"step {step}/{total} loss {last_loss:.4g} ({time.monotonic() - start:.1f} s)", flush=True)
        if epochs > 1:
            print(f"epoch {epoch}/{epochs} done ({time.monotonic() - start:.1f} s)", flush=True)
    end = time.monotonic()
    if warm_t is not None and step > args.warmup:
        # the job's own steady throughput (bench/train_overhead.py reads this line)
        n = step - args.warmup
        print(f"throughput: {n} steps in {end - warm_t:.3f} s after {args.warmup} warm-up steps "
              f"({n / (end - warm_t):.2f} steps/s, {n * args.batch / (end - warm_t):.1f} samples/s)", flush=True)
    print(f"done: {step} steps, loss {first_loss:.4g} -> {last_loss:.4g}, pid {os.getpid()}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
