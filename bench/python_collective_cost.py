#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What timing a collective costs the training thread (issue 30: "under 2 us per timed collective
call"; docs/python.md "Collective wait").

    /usr/bin/python3 bench/python_collective_cost.py [CALLS] [ROUNDS]

Prints one table, CPU microseconds of this thread per call (time.thread_time_ns, so that other
processes on the machine count less), median over ROUNDS rounds of CALLS calls, configurations
interleaved in each round:
  - a no-op function bare and through the collective wrapper (_collectives._wrap): the wrapper's
    own cost (clock twice, the group's sequence number, phase and wait bookkeeping);
  - Work.wait() of a completed async all_reduce, bare and wrapped;
  - a real all_reduce of a 4-byte tensor on a one-rank gloo group, bare and wrapped (gloo's own
    cost dominates; the difference is ours);
  - the DDP timing hook's per-bucket cost: _ddp_hook around an inner hook that returns a completed
    future, against calling that inner hook and its then() directly.
The "added" column is wrapped minus bare of the same round (median). No pass/fail: numbers for the
report. Needs python3-torch (CPU is enough).
"""

import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))

CALLS = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 7


def per_call_us(fn, n):
    cpu = time.thread_time_ns
    t0 = cpu()
    for _ in range(n):
        fn()
    return (cpu() - t0) / n / 1000.0


def main():
    import torch
    import torch.distributed as dist
    from trainmon import _collectives, _timing

    torch.set_num_threads(1)
    d = tempfile.mkdtemp()
    dist.init_process_group("gloo", init_method="file://" + os.path.join(d, "rdv"), rank=0, world_size=1)
    raw_all_reduce = dist.all_reduce
    raw_wait = torch._C._distributed_c10d.Work.wait
    t = torch.ones(1)

    def noop(tensor, op=None, group=None, async_op=False):
        return None

    wrapped_noop = _collectives._wrap("all_reduce", noop, 2)
    wrapped_all_reduce = _collectives._wrap("all_reduce", raw_all_reduce, 2)
    wrapped_wait = _collectives._wrap_wait(raw_wait)
    work = raw_all_reduce(t, async_op=True)
    work.wait()

    fut = torch.futures.Future()
    fut.set_result(t)

    class Bucket:
        def is_last(self):
            return True

        def buffer(self):
            return t

    def inner(state, bucket):
        return fut

    tap = _collectives._DdpTap(None, 1, raw_all_reduce)
    tap.inner, tap.inner_state = inner, None
    bucket = Bucket()

    def plain_hook():
        return inner(None, bucket).then(lambda f: f.value())

    rows = [
        ("no-op function", lambda: noop(t), lambda: wrapped_noop(t)),
        ("Work.wait() (completed)", lambda: raw_wait(work), lambda: wrapped_wait(work)),
        ("all_reduce 4 B, gloo, 1 rank", lambda: raw_all_reduce(t), lambda: wrapped_all_reduce(t)),
        ("DDP hook per bucket (then)", plain_hook, lambda: _collectives._ddp_hook(tap, bucket)),
    ]
    results = {name: ([], [], []) for name, _, _ in rows}
    for _ in range(ROUNDS):
        for name, bare, wrapped in rows:
            n = CALLS if "gloo" not in name else max(CALLS // 10, 1000)
            b = per_call_us(bare, n)
            w = per_call_us(wrapped, n)
            results[name][0].append(b)
            results[name][1].append(w)
            results[name][2].append(w - b)
        _timing._tls.comm = None
    load = os.getloadavg()[0]
    print("Collective timing cost, CPU us per call (median of %d rounds; load average %.1f)" % (ROUNDS, load))
    print("%-32s %10s %10s %10s" % ("call", "bare", "timed", "added"))
    for name, _, _ in rows:
        b, w, a = (statistics.median(x) for x in results[name])
        print("%-32s %10.3f %10.3f %10.3f" % (name, b, w, a))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
