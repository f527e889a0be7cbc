#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""How much slower a real training job runs under `trainmon run` than bare (issue 30: "a realistic job
(the example CNN and a 2-rank DDP job on this machine) no more than 1 % slower under `trainmon run`
than bare, measured side by side in bench/ (interleaved runs, ratio)").

    /usr/bin/python3 bench/train_overhead.py [--build build/release] [--pairs 7]
        [--cnn-steps 300] [--ddp-steps 300] [--jobs cnn,ddp] [--fake-nvml SCENARIO]

Each job runs PAIRS times bare (`/usr/bin/python3 examples/...`) and PAIRS times under
`BUILD/trainmon run --db TMP -- /usr/bin/python3 examples/...`, interleaved: pair i runs bare then
monitored for even i, monitored then bare for odd i (ABBA), so that a drift of the machine's load
weighs on both alike. Jobs: examples/train_cnn.py (a CNN, DataLoader with 2 workers) and
examples/train_ddp.py --ranks 2 (DistributedDataParallel over gloo, 2 processes).

What is measured, and why: the job's own steady throughput, from the `throughput:` line each example
prints (steps after its first 20 warm-up steps, over the time the job itself measured with
time.monotonic; DDP: rank 0, whose steps are the job's since the all-reduce synchronises them). That
is what "slower" means to the user of a training job, and it leaves out what happens once per run
and does not grow with the run: the interpreter and torch import (seconds, dominated by page cache
and the machine's load), DataLoader worker start-up, gloo's rendezvous, and trainmon's own start-up
(its boot hook's import cost is measured by bench/compare_python_callback.sh, table 4) and end (the
report). The whole command's wall time is printed too, in a second table, for completeness.

Printed: per job, the median steps/s bare and monitored, the ratio (median over pairs of monitored
step time / bare step time of the same pair: 1.010 = 1 % slower) and its spread (the pairs'
lowest..highest ratio), and the load average before and after. No pass/fail, no tuning: numbers for
the report; run it on a quiet machine (a loaded 2-core machine moves each run by more than 1 %).
Without a GPU, the recorder samples no GPU: `--fake-nvml healthy-1gpu.json` adds the fake driver's
(tests/scenarios) to the monitored runs (the bare ones are unaffected by it).
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = "/usr/bin/python3"
THROUGHPUT = re.compile(r"^throughput: (\d+) steps in ([0-9.]+) s after (\d+) warm-up steps", re.M)


def jobs(a):
    return {
        "cnn": ("train_cnn (2 workers)",
                [os.path.join(ROOT, "examples", "train_cnn.py"), "--steps", str(a.cnn_steps), "--workers", "2"]),
        "ddp": ("train_ddp --ranks 2",
                [os.path.join(ROOT, "examples", "train_ddp.py"), "--ranks", "2", "--steps", str(a.ddp_steps)]),
    }


def run_once(cmd, env, timeout):
    """(steps/s of the steady part, wall seconds of the whole command); raises on failure."""
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    wall = time.monotonic() - t0
    m = THROUGHPUT.search(p.stdout)
    if p.returncode != 0 or not m:
        raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return int(m.group(1)) / float(m.group(2)), wall


def spread(values):
    return f"{min(values):.3f}..{max(values):.3f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--pairs", type=int, default=7, help="interleaved bare/monitored pairs per job")
    ap.add_argument("--cnn-steps", type=int, default=300)
    ap.add_argument("--ddp-steps", type=int, default=300)
    ap.add_argument("--jobs", default="cnn,ddp")
    ap.add_argument("--fake-nvml", metavar="SCENARIO", help="tests/scenarios file for the monitored runs' driver")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per run")
    a = ap.parse_args()
    tm = os.path.join(a.build, "trainmon")
    if not os.access(tm, os.X_OK):
        sys.exit(f"train_overhead: no {tm} (build the release preset)")
    work = tempfile.mkdtemp(prefix="trainmon-overhead-")
    bare_env = dict(os.environ)
    for k in list(bare_env):
        if k.startswith("TRAINMON_"):
            del bare_env[k]  # bare means bare: no events socket, no boot hook
    mon_env = dict(bare_env, XDG_STATE_HOME=work)  # the monitored run's report goes to the scratch dir
    if a.fake_nvml:
        mon_env["TRAINMON_NVML_LIBRARY"] = os.path.join(a.build, "fake_nvml", "libnvidia-ml.so.1")
        mon_env["TRAINMON_FAKE_NVML_SCENARIO"] = os.path.join(ROOT, "tests", "scenarios", a.fake_nvml)
    load0 = os.getloadavg()
    rows, walls = [], []
    try:
        for key in a.jobs.split(","):
            name, args = jobs(a)[key]
            bare, mon, ratios, wall_b, wall_m = [], [], [], [], []
            for i in range(a.pairs):
                db = os.path.join(work, f"{key}-{i}.db")
                order = ("bare", "mon") if i % 2 == 0 else ("mon", "bare")
                got = {}
                for which in order:
                    if which == "bare":
                        got[which] = run_once([PY] + args, bare_env, a.timeout)
                    else:
                        got[which] = run_once([tm, "run", "--db", db, "--"] + [PY] + args, mon_env, a.timeout)
                (rb, wb), (rm, wm) = got["bare"], got["mon"]
                bare.append(rb)
                mon.append(rm)
                ratios.append(rb / rm)  # monitored step time / bare step time
                wall_b.append(wb)
                wall_m.append(wm)
                print(f"  {key} pair {i + 1}/{a.pairs} ({'/'.join(order)}): bare {rb:.2f} steps/s, "
                      f"monitored {rm:.2f} steps/s, ratio {rb / rm:.3f}", file=sys.stderr, flush=True)
            rows.append((name, statistics.median(bare), statistics.median(mon), statistics.median(ratios),
                         spread(ratios)))
            wr = [m / b for b, m in zip(wall_b, wall_m)]
            walls.append((name, statistics.median(wall_b), statistics.median(wall_m), statistics.median(wr),
                          spread(wr)))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load1 = os.getloadavg()
    print(f"Steady throughput, {a.pairs} interleaved pairs (steps after the first 20; ratio = monitored "
          f"step time / bare, median of pairs)")
    print(f"{'job':<24} {'bare steps/s':>13} {'monitored':>10} {'ratio':>7} {'spread':>13}")
    for name, b, m, r, sp in rows:
        print(f"{name:<24} {b:>13.2f} {m:>10.2f} {r:>7.3f} {sp:>13}")
    print("\nWhole command wall time, s (start-up and end included)")
    print(f"{'job':<24} {'bare':>13} {'monitored':>10} {'ratio':>7} {'spread':>13}")
    for name, b, m, r, sp in walls:
        print(f"{name:<24} {b:>13.2f} {m:>10.2f} {r:>7.3f} {sp:>13}")
    print(f"\nload average before {load0[0]:.2f}, after {load1[0]:.2f}; {os.cpu_count()} CPUs; "
          f"GPU driver for the monitored runs: {'fake (' + a.fake_nvml + ')' if a.fake_nvml else 'as found'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
