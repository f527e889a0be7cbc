#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A synchronous data-parallel job on the CPU: DistributedDataParallel over gloo, N ranks started
with torch.multiprocessing, no trainmon code in it.

One rank can be made slower than the others (`--slow-rank 1 --slow-factor 1.6`: it computes 1.6
times as long each step, as a rank on a throttled GPU or a busy host does). In a synchronous job
every rank's step then lasts as long as the slow rank's: the fast ranks wait inside DDP's gradient
all-reduce, and only that wait tells the ranks apart.

    trainmon run -- /usr/bin/python3 examples/train_ddp.py --ranks 2 --steps 200 \
        --slow-rank 1 --slow-factor 1.6

`--checkpoint-every K --checkpoint-s S`: rank 0 alone "saves a checkpoint" (sleeps S seconds)
every K steps while the others wait in the next all-reduce.
"""

import argparse
import os
import socket
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def busy(seconds):
    """Compute for `seconds` of wall time on this rank (a stand-in for a slower forward pass)."""
    end = time.perf_counter() + seconds
    x = torch.ones(64, 64)
    while time.perf_counter() < end:
        x = torch.tanh(x @ x * 0.01)


def worker(rank, args, port):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      LOCAL_RANK=str(rank), WORLD_SIZE=str(args.ranks))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=args.ranks)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    model = DistributedDataParallel(net)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    data = [(torch.randn(args.batch, 256), torch.randint(0, 10, (args.batch,))) for _ in range(8)]
    loader = torch.utils.data.DataLoader(data * (args.steps // 8 + 1), batch_size=None)
    factor = args.slow_factor if rank == args.slow_rank else 1.0
    warm_t = None  # when step --warmup ended (rank 0): the throughput line counts the steps after it
    for step, (x, y) in enumerate(loader):
        if step >= args.steps:
            break
        if step == args.warmup:
            warm_t = time.monotonic()
        busy(args.compute_ms / 1000.0 * factor)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()  # DDP all-reduces the gradients here: a fast rank waits for the slow one
        opt.step()
        if rank == 0 and args.checkpoint_every and (step + 1) % args.checkpoint_every == 0:
            time.sleep(args.checkpoint_s)  # rank 0 alone writes a checkpoint
    end = time.monotonic()
    dist.barrier()
    if rank == 0 and warm_t is not None and args.steps > args.warmup:
        # the job's own steady throughput (bench/train_overhead.py reads this line); steps are
        # synchronous (DDP's all-reduce), so rank 0's rate is the job's
        n = args.steps - args.warmup
        print(f"throughput: {n} steps in {end - warm_t:.3f} s after {args.warmup} warm-up steps "
              f"({n / (end - warm_t):.2f} steps/s, {n * args.batch * args.ranks / (end - warm_t):.1f} samples/s)",
              flush=True)
    if rank == 0:
        print(f"train_ddp: {args.ranks} ranks, {args.steps} steps, final loss {loss.item():.3f}", flush=True)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--compute-ms", type=float, default=20.0, help="each rank's compute per step, ms")
    ap.add_argument("--slow-rank", type=int, default=-1)
    ap.add_argument("--slow-factor", type=float, default=1.0)
    ap.add_argument("--checkpoint-every", type=int, default=0)
    ap.add_argument("--checkpoint-s", type=float, default=0.0)
    ap.add_argument("--warmup", type=int, default=20,
                    help="steps left out of the final throughput line (rendezvous, first steps)")
    args = ap.parse_args()
    mp.spawn(worker, args=(args, free_port()), nprocs=args.ranks, join=True)


if __name__ == "__main__":
    main()
