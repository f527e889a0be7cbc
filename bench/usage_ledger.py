#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""How long `trainmon usage` takes over a month of 8 GPUs (the target: under a second).

The store's schema comes from a real `trainmon record` (a short one on the fake driver); the month
is then written into it the way the recorder leaves it: one `record` run, per GPU a new process every
12 hours (8 users, each process in its own Slurm job, attribution columns filled), each process's
usage rows in 10-minute buckets (docs/store.md, table `usage`) as if sampled at 1 s. The sample
chunks are left out: the ledger never reads them (it reads the usage rows, which the recorder sums
while recording), so they would only make the file bigger.

  /usr/bin/python3 bench/usage_ledger.py [--trainmon build/release/trainmon] [--days 30] [--gpus 8] [--keep FILE]

Prints a Markdown table: rows in the store, then per --by the best of 5 wall times and the rows
answered. Not a test (no assertion on time)."""

import argparse
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUCKET_MS = 600_000


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trainmon", default=os.path.join(ROOT, "build", "release", "trainmon"))
    ap.add_argument("--fake-nvml", default=os.path.join(ROOT, "build", "release", "fake_nvml", "libnvidia-ml.so.1"))
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--keep", help="copy the generated store to this file")
    a = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="trainmon-usage-bench-") as d:
        db = os.path.join(d, "month.db")
        env = dict(os.environ, TRAINMON_NVML_LIBRARY=a.fake_nvml,
                   TRAINMON_FAKE_NVML_SCENARIO=os.path.join(ROOT, "tests", "scenarios", "h100-idle.json"))
        env.pop("TRAINMON_DB", None)
        subprocess.run([a.trainmon, "record", "--db", db, "--interval", "0.2", "--duration", "0.5", "-q"],
                       env=env, check=True, timeout=60)
        now_ms = int(time.time() * 1000)
        start_ms = (now_ms - a.days * 86_400_000) // BUCKET_MS * BUCKET_MS
        con = sqlite3.connect(db)
        run_id = con.execute("SELECT max(id) FROM runs").fetchone()[0]
        con.execute("UPDATE runs SET start_ns = ? WHERE id = ?", (start_ms * 1_000_000, run_id))
        rng = random.Random(7)
        rows = 0
        series = 0
        per_process_ms = 12 * 3_600_000
        for g in range(a.gpus):
            con.execute("INSERT OR REPLACE INTO gpus (run_id, gpu_index, uuid) VALUES (?,?,?)",
                        (run_id, g, f"GPU-bench-{g:04d}"))
            t = start_ms
            n = 0
            while t < now_ms:
                n += 1
                user = f"user{rng.randrange(8)}"
                cur = con.execute(
                    "INSERT INTO series (run_id, kind, gpu_index, pid, user, comm, slurm_job_id, slurm_user) "
                    "VALUES (?,5,?,?,?,?,?,?)",
                    (run_id, g, 100_000 + g * 1000 + n, user, "python3", str(50_000 + g * 1000 + n), user))
                sid = cur.lastrowid
                series += 1
                idle = rng.random() < 0.2  # a fifth of the processes hold their GPU idle
                batch = []
                end = min(t + per_process_ms, now_ms)
                for b in range(t, end, BUCKET_MS):
                    secs = 600.0
                    util = 0.0 if idle else rng.uniform(0.6, 0.98)
                    batch.append((sid, b, b, b + 599_000, 600, secs, secs * util, secs if idle else 0.0,
                                  secs * rng.uniform(10, 70), secs * (80 if idle else 550)))
                con.executemany("INSERT INTO usage VALUES (?,?,?,?,?,?,?,?,?,?)", batch)
                rows += len(batch)
                t = end
        con.commit()
        con.close()
        size_mb = os.path.getsize(db) / 1e6
        if a.keep:
            shutil.copyfile(db, a.keep)

        print(f"| store | {a.days} days x {a.gpus} GPUs: {series} processes, {rows} usage rows, {size_mb:.1f} MB |")
        print("|---|---|")
        for by in ("user", "job", "pod", "gpu"):
            best = None
            answer = None
            for _ in range(5):
                t0 = time.perf_counter()
                p = subprocess.run([a.trainmon, "usage", "--db", db, "--since", f"{a.days + 1}d", "--by", by, "--json"],
                                   env=env, capture_output=True, text=True, timeout=60)
                dt = time.perf_counter() - t0
                if p.returncode != 0:
                    sys.exit(f"trainmon usage --by {by}: {p.stderr}")
                answer = json.loads(p.stdout)
                best = dt if best is None else min(best, dt)
            print(f"| `usage --by {by} --json` | {best * 1000:.0f} ms (best of 5), {len(answer['rows'])} rows, "
                  f"{answer['total']['gpu_hours_held']:.0f} GPU-hours held |")


if __name__ == "__main__":
    main()
