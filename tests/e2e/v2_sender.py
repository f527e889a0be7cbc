#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A training job stand-in for the end-to-end tests: speaks protocol v2 (docs/python.md "Protocol",
"Step timing") to TRAINMON_EVENTS_SOCKET like python/trainmon does, with real timing (it sleeps what
it reports), one process per rank. With --comm-s it speaks protocol v3 instead: each step also waits
that long "inside a collective" (phase "collective", between the data wait and the compute), sent as
`steps.comm_s` and `steps.total.comm_s` ("Collective wait").

  v2_sender.py OUT_DIR --ranks 2 --steps 40,20 --step-s 0.05,0.12 --data-s 0.01,0.05 --batch 8
               [--comm-s 0.02,0.005] [--hold FILE] [--window-s 0.1]

The parent forks one process per rank (RANK, LOCAL_RANK, WORLD_SIZE as torchrun sets them). Each
rank takes its steps: it sleeps its data wait (phase "data"), then the rest (phase "compute"), and
sends a `batch_end` with the window of its steps every --window-s; `epoch_end` after each half. Then
it sends heartbeats (phase "idle") until FILE exists (at most 60 s), `train_end`, and writes what it
measured to OUT_DIR/rank-N.json: {"steps", "samples", "step_s", "data_s", "step_times": [...]}, and
"comm_s" with --comm-s.
"""

import argparse
import json
import math
import os
import socket
import sys
import time
import traceback


def nearest_rank(values, q):
    s = sorted(values)
    return s[max(0, math.ceil(q * len(s)) - 1)]


def stats(values):
    return {"sum": sum(values), "min": min(values), "max": max(values), "p50": nearest_rank(values, 0.5),
            "p90": nearest_rank(values, 0.9), "p99": nearest_rank(values, 0.99)}


class Sender:
    def __init__(self, rank, world, version=2):
        self.rank, self.world, self.seq, self.version = rank, world, 0, version
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock.connect(os.environ["TRAINMON_EVENTS_SOCKET"])
        self.sock.setblocking(False)

    def send(self, kind, **fields):
        m = {"v": self.version, "type": kind, "t": time.time(), "mt": time.monotonic(), "seq": self.seq, "pid": os.getpid(),
             "rank": self.rank, "run_id": os.environ.get("TRAINMON_RUN_ID", "")}
        m.update(fields)
        self.seq += 1
        try:
            self.sock.send(json.dumps(m).encode(), socket.MSG_DONTWAIT)
        except BlockingIOError:
            pass  # a recorder that is slow loses the message, never the job; the totals stay exact


def run_rank(rank, a):
    steps, step_s, data_s = a.steps[rank], a.step_s[rank], a.data_s[rank]
    comm_s = a.comm_s[rank] if a.comm_s else None
    s = Sender(rank, a.ranks, 2 if comm_s is None else 3)
    s.send("hello", local_rank=rank, world_size=a.ranks, node_rank=0, host=socket.gethostname(), gpu=rank,
           cuda_device_order="PCI_BUS_ID", framework="loop", batch_size=a.batch)
    total = {"steps": 0, "samples": 0, "step_s": 0.0, "data_s": 0.0}
    if comm_s is not None:
        total["comm_s"] = 0.0
    window_steps, window_data, window_comm = [], [], []
    all_steps = []
    last_end = time.monotonic()
    window_start = last_end
    last_sent = last_end
    phase, phase_mt = "data", last_end

    def steps_obj(n_steps, step_list, data_list, comm_list=()):
        o = {"n": n_steps, "total": dict(total), "phase": phase, "phase_mt": phase_mt}
        if n_steps:
            o.update(samples=n_steps * a.batch, span_s=sum(step_list), step_s=stats(step_list), data_s=stats(data_list))
            if comm_list:
                o["comm_s"] = stats(comm_list)
        if total["steps"]:
            o["last_step_t"] = time.time() - (time.monotonic() - last_end)
            o["last_step_mt"] = last_end
        return o

    for i in range(steps):
        phase, phase_mt = "data", time.monotonic()
        t0 = time.monotonic()
        time.sleep(data_s)
        got = time.monotonic()
        comm = 0.0
        if comm_s is not None:
            phase, phase_mt = "collective", got
            time.sleep(comm_s)
            comm = time.monotonic() - got
            total["comm_s"] += comm
            window_comm.append(comm)
        phase, phase_mt = "compute", time.monotonic()
        time.sleep(max(0.0, step_s - data_s - comm))
        end = time.monotonic()
        step, data = end - last_end, got - t0
        last_end = end
        total["steps"] += 1
        total["samples"] += a.batch
        total["step_s"] += step
        total["data_s"] += data
        window_steps.append(step)
        window_data.append(data)
        all_steps.append(step)
        epoch_end = i + 1 in (steps // 2, steps)
        if end - last_sent >= a.window_s or epoch_end:
            s.send("batch_end", epoch=0 if i + 1 <= steps // 2 else 1, epochs=2, batch=i, step=i + 1,
                   steps=steps_obj(len(window_steps), window_steps, window_data, window_comm))
            window_steps, window_data, window_comm = [], [], []
            last_sent = end
        if epoch_end:
            s.send("epoch_end", epoch=0 if i + 1 == steps // 2 else 1, epochs=2)
    phase, phase_mt = "idle", time.monotonic()
    deadline = time.monotonic() + 60
    while a.hold and not os.path.exists(a.hold) and time.monotonic() < deadline:
        s.send("heartbeat", steps=steps_obj(0, [], []))
        time.sleep(0.3)
    s.send("train_end", steps=steps_obj(0, [], []))
    with open(os.path.join(a.out, f"rank-{rank}.json"), "w") as f:
        json.dump(dict(total, step_times=all_steps), f)


def floats(text):
    return [float(x) for x in text.split(",")]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--steps", type=lambda t: [int(x) for x in t.split(",")], default=[40, 20])
    p.add_argument("--step-s", type=floats, default=[0.05, 0.12])
    p.add_argument("--data-s", type=floats, default=[0.01, 0.05])
    p.add_argument("--comm-s", type=floats, default=None)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--window-s", type=float, default=0.1)
    p.add_argument("--hold", default="")
    a = p.parse_args()
    children = []
    for rank in range(a.ranks):
        pid = os.fork()
        if pid == 0:
            os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(a.ranks))
            code = 0
            try:
                run_rank(rank, a)
            except BaseException:  # noqa: B902 - the child must report and exit, never return
                traceback.print_exc()
                code = 1
            finally:
                os._exit(code)
        children.append(pid)
    rc = 0
    for pid in children:
        _, status = os.waitpid(pid, 0)
        rc = rc or os.waitstatus_to_exitcode(status)
    sys.exit(rc)


if __name__ == "__main__":
    main()
