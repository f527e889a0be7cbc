# SPDX-License-Identifier: Apache-2.0
"""Diagnosing the training itself on real jobs (issue 18): real PyTorch on this machine's CPU
(/usr/bin/python3, torch 1.13, gloo), under `trainmon run` with its zero-code instrumentation
(docs/python.md), no trainmon import in the scripts:

- a real hang: a two-rank torch.distributed job where rank 1 sleeps before an all-reduce and rank 0
  blocks in it: D23 is found within 2x its window, and both ranks' stacks are stored and point at the
  sleeping line and at the collective;
- a real straggler: the same kind of job where rank 1 does extra work per step: D24 names rank 1 with
  its score; the even job (the real healthy two-rank job) gives no finding at all;
- real starvation: a loader that sleeps per item: D25 with the measured share.

The real defaults are minutes; the runs last seconds, so the windows are scaled with --threshold
(the detectors' logic is under test, not the stopwatch). The four runs go side by side. Slow (real
processes, tens of seconds): skipped in the sanitizer pass (TRAINMON_SANITIZED=1).
"""
import json
import os
import re
import shutil
import sqlite3
import subprocess
import textwrap
import threading
import time

import pytest

from test_run_helpers import PY, env, trainmon_bin
from test_top import Tmux, top_env

pytestmark = pytest.mark.skipif(os.environ.get("TRAINMON_SANITIZED") == "1",
                                reason="slow real-process test: release pass only")

# One step is one optimizer step; the ranks all-reduce their gradients every step (rank 1 sleeps
# before it on step HANG_AT, for SLEEP_S), or meet only every 5 steps (the straggler jobs).
DDP = textwrap.dedent("""
    import sys, time
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
    from torch.utils.data import DataLoader, Dataset

    MODE, STEPS = sys.argv[2], int(sys.argv[3])

    class Data(Dataset):  # ready in memory: the loader costs next to nothing
        def __init__(self):
            self.x = torch.randn(64, 8)
        def __len__(self):
            return 100000
        def __getitem__(self, i):
            return self.x[i % 64], i % 2

    def run(rank, world, init_file):
        dist.init_process_group("gloo", init_method="file://" + init_file, rank=rank, world_size=world)
        torch.manual_seed(rank)
        torch.set_num_threads(1)
        model = torch.nn.Linear(8, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for i, (x, y) in enumerate(DataLoader(Data(), batch_size=4)):
            if i == STEPS:
                break
            torch.nn.functional.cross_entropy(model(x), y).backward()
            time.sleep(0.02)  # the step's work (as a GPU kernel would take)
            if MODE == "hang":
                if rank == 1 and i == 60:
                    time.sleep(30)  # HANG-LINE
                for p in model.parameters():
                    dist.all_reduce(p.grad)  # COLLECTIVE-LINE
            elif MODE == "straggler" and rank == 1:
                time.sleep(0.04)  # the straggler's extra work
            opt.step()
            opt.zero_grad()
            if MODE != "hang" and i % 5 == 4:
                dist.all_reduce(torch.ones(1))  # the ranks meet every 5 steps
        dist.barrier()
        dist.destroy_process_group()

    if __name__ == "__main__":
        mp.spawn(run, args=(2, sys.argv[1]), nprocs=2, join=True)
        print("DONE", flush=True)
""")

STARVE = textwrap.dedent("""
    import time
    import torch
    from torch.utils.data import DataLoader, Dataset

    slept = [0.0]

    class Slow(Dataset):  # 10 ms per item, 4 per batch: about 40 ms of data wait per step
        def __len__(self):
            return 100000
        def __getitem__(self, i):
            t = time.perf_counter()
            time.sleep(0.010)
            slept[0] += time.perf_counter() - t  # what the sleep really took on this busy machine
            return torch.randn(8), i % 2

    torch.set_num_threads(1)
    model = torch.nn.Linear(8, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    start = time.perf_counter()
    for i, (x, y) in enumerate(DataLoader(Slow(), batch_size=4)):
        if i == 300:
            break
        torch.nn.functional.cross_entropy(model(x), y).backward()
        time.sleep(0.040)  # 40 ms of "compute"
        opt.step()
        opt.zero_grad()
    print("INJECTED %.4f" % (slept[0] / (time.perf_counter() - start)), flush=True)
    print("DONE", flush=True)
""")

# (straggler_compute_for_s is the hold of a rank whose collective wait is measured, as these ranks'
# is since protocol v3, whichever score holds: scaled with straggler_for_s)
SCALED = ["window_s=8", "clear_s=8", "hang_floor_s=10", "straggler_window_s=8", "straggler_for_s=8",
          "straggler_compute_for_s=8", "data_wait_for_s=8"]


def line_of(script, marker):
    for n, line in enumerate(script.splitlines(), 1):
        if marker in line:
            return n
    raise AssertionError(marker)


class Job:
    """One `trainmon run` whose stderr lines are timestamped as they arrive."""

    def __init__(self, tmp_path, name, script, args, **extra_env):
        self.dir = tmp_path / name
        self.dir.mkdir()
        self.db = str(self.dir / "runs.db")
        path = self.dir / (name + ".py")
        path.write_text(script)
        cmd = [trainmon_bin(), "run", "--db", self.db, "--interval", "0.5", "--no-report"]
        for t in SCALED:
            cmd += ["--threshold", t]
        cmd += ["--print-every", "0", "--", PY, str(path)] + [str(a) for a in args]
        e = env()
        for k in ("TRAINMON_EVENTS_SOCKET", "TRAINMON_SNAPSHOT_FILE", "TRAINMON_RUN_ID", "RANK", "WORLD_SIZE",
                  "LOCAL_RANK", "TRAINMON_DISABLE"):
            e.pop(k, None)
        e.update({k: str(v) for k, v in extra_env.items()})
        self.env = e
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(cmd, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines = []  # (seconds since start, line)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stderr:
            self.lines.append((time.monotonic() - self.t0, line.rstrip("\n")))

    def finish(self, timeout=240):
        out = self.proc.stdout.read()
        self.proc.wait(timeout=timeout)
        self.reader.join(timeout=10)
        self.stdout = out
        return self

    def stderr(self):
        return "\n".join(line for _, line in self.lines)

    def diagnose(self):
        args = [trainmon_bin(), "diagnose", "last", "--json", "--db", self.db]
        for t in SCALED:
            args += ["--threshold", t]
        d = subprocess.run(args, env=self.env, capture_output=True, text=True, timeout=60)
        assert d.returncode == 0, d.stderr
        return json.loads(d.stdout)


@pytest.fixture(scope="module")
def jobs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("train")
    runtime = tmp / "rt"
    runtime.mkdir(mode=0o700)
    # The hang job runs on the CPU (gloo) while the fake GPU is busy with another program (this test's
    # own process on its process list, not the job's): its GPU load is no evidence about the hang.
    # `top` runs beside it and shows the run's findings from its live state file.
    js = {
        "hang": Job(tmp, "hang", DDP, [tmp / "rdv-hang", "hang", 120], TRAINMON_TEST_PID=os.getpid(),
                    XDG_RUNTIME_DIR=runtime),
        "straggler": Job(tmp, "straggler", DDP, [tmp / "rdv-straggler", "straggler", 400]),
        "even": Job(tmp, "even", DDP, [tmp / "rdv-even", "even", 400]),
        "starve": Job(tmp, "starve", STARVE, []),
    }
    hang_line = line_of(DDP, "HANG-LINE")
    js["hang"].top = None
    # Beside top: what the store says of the run while it hangs (`runs`, and `diagnose` without the
    # run's --threshold values: they are stored with the run).
    js["hang"].live = {}
    watcher = threading.Thread(target=watch_store_while_running, args=(js["hang"],), daemon=True)
    watcher.start()
    if shutil.which("tmux"):
        tmux = Tmux(tmp)
        try:
            tmux.start(top_env("healthy-1gpu.json", XDG_STATE_HOME=tmp, XDG_RUNTIME_DIR=runtime,
                               TRAINMON_TEST_PID=os.getpid()), [trainmon_bin(), "top", "-i", "0.5"], 120, 40)
            try:
                js["hang"].top = tmux.wait(lambda s: "D23 critical" in s and f"hang.py:{hang_line} in run" in s,
                                           timeout=120)
            except AssertionError as e:  # the test says what the screen showed
                js["hang"].top = str(e)
        finally:
            tmux.kill()
    watcher.join(timeout=150)
    for j in js.values():
        j.finish()
    return js


def watch_store_while_running(job, timeout=120):
    """Polls the running hang job's store until it lists D23, then records `runs --json` and
    `diagnose --json` (thresholds not given: the run's are used) as they were at that moment."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and job.proc.poll() is None:
        r = subprocess.run([trainmon_bin(), "runs", "--json", "--db", job.db], env=job.env, capture_output=True,
                           text=True, timeout=60)
        if r.returncode == 0 and r.stdout.strip().startswith("["):
            runs = json.loads(r.stdout)
            if runs and runs[0].get("finding_count", 0) > 0:
                d = subprocess.run([trainmon_bin(), "diagnose", "last", "--json", "--db", job.db], env=job.env,
                                   capture_output=True, text=True, timeout=60)
                job.live = {"runs": runs[0], "diagnose": d.stdout, "diagnose_err": d.stderr,
                            "running": job.proc.poll() is None}
                return
        time.sleep(0.5)


def test_real_hang_is_found_within_twice_its_window_with_both_ranks_stacks(jobs):
    j = jobs["hang"]
    err = j.stderr()
    assert j.proc.returncode == 0 and "DONE" in j.stdout, err[-4000:]
    live = [(t, line) for t, line in j.lines if "[critical] D23 training-hang" in line]
    assert live, err[-4000:]
    # found within 2x its window: the live line says how long no step had completed
    m = re.search(r"no step completed on (rank \d(?:, rank \d)*) for (\d+) s \(since ([\d.]+) s\).*?\(window "
                  r"max\(5 x p90 ([\d.]+) s, 10 s\) = (\d+) s\)", live[0][1])
    assert m, live[0][1]
    ranks, stalled_s, window_s = m.group(1), int(m.group(2)), int(m.group(5))
    assert ranks == "rank 0, rank 1", live[0][1]
    # (the detector needs strictly more than the window; the line rounds to whole seconds)
    assert window_s == 10 and window_s <= stalled_s <= 2 * window_s, live[0][1]
    # a CPU-only job: the busy GPU (another program's) is not its; the kind comes from the ranks
    assert "GPU is busy" not in live[0][1] and "GPUs are idle" not in live[0][1], live[0][1]
    assert "the job uses no GPU" in live[0][1] and "it runs on the CPU" in live[0][1], live[0][1]
    print("\nhang: detected after %d s of no progress (window %d s, p90 step %s s)"
          % (stalled_s, window_s, m.group(4)))
    # the stacks, asked for when the finding opened: the sleeping line and the collective
    hang_line, coll_line = line_of(DDP, "HANG-LINE"), line_of(DDP, "COLLECTIVE-LINE")
    at = [line for _, line in j.lines if re.match(r"trainmon: rank \d pid \d+ is at ", line)]
    assert any(f"rank 1 pid" in a and f"hang.py:{hang_line} in run" in a for a in at), (at, err[-4000:])
    assert any("rank 0 pid" in a and "all_reduce" in a and f"hang.py:{coll_line} in run" in a for a in at), at
    # and, live, the advice as the stacks make it: the rank that holds the job first
    advice = [line for _, line in j.lines if line.startswith("trainmon: D23 -> ")]
    assert advice and advice[0].startswith("trainmon: D23 -> Look at rank 1 first: it is at "
                                           f"hang.py:{hang_line} in run"), (advice, err[-4000:])
    # stored with the finding code, and `diagnose` shows them from the store
    with sqlite3.connect(j.db) as db:
        rows = db.execute("SELECT rank_key, pid, finding, length(text) FROM train_stacks ORDER BY rank_key").fetchall()
    assert [r[0] for r in rows] == [0, 1] and all(r[2] == "D23" and r[3] > 100 for r in rows), rows
    f = [x for x in j.diagnose() if x["code"] == "D23"]
    assert len(f) == 1 and f[0]["severity"] == "critical", f
    st = {s["rank"]: s for s in f[0]["stacks"]}
    assert st[1]["where"] == f"hang.py:{hang_line} in run", st
    assert "all_reduce" in st[0]["where"] and st[0]["caller"] == f"hang.py:{coll_line} in run", st
    assert f[0]["cost"]["share"] == 1.0
    # the sleeping rank is named as the one that holds the other (rank 0 waits in the all-reduce)
    assert f[0]["numbers"]["holding_rank"] == 1 and "rank 1 holds the job" in f[0]["evidence"], f[0]["evidence"]
    assert f[0]["advice"].startswith("Look at rank 1 first"), f[0]["advice"]
    # offline as live: no word of the busy GPU that is not the job's
    assert "the job uses no GPU" in f[0]["evidence"] and "GPU is busy" not in f[0]["evidence"], f[0]["evidence"]
    assert "gpu_mean_util_pct" not in f[0]["numbers"] and f[0]["gpus"] == [], f[0]
    # the end summary ranks it first and shows the lines
    summary = err[err.rindex("trainmon: command"):]
    first = [line for line in summary.splitlines() if line.startswith("  [")][0]
    assert "D23" in first, summary
    assert f"    rank 1 pid {st[1]['pid']}" in summary and f"hang.py:{hang_line} in run" in summary, summary
    # text form of `diagnose`
    d = subprocess.run([trainmon_bin(), "diagnose", "last", "--db", j.db] + sum((["--threshold", t] for t in SCALED), []),
                       env=j.env, capture_output=True, text=True, timeout=60)
    assert f"hang.py:{hang_line} in run" in d.stdout and d.stdout.startswith("[critical] D23"), d.stdout


def test_a_running_runs_findings_and_thresholds_are_in_the_store(jobs):
    """While the job still hangs, `runs` counts the live finding and `diagnose`, given no threshold,
    judges the run with the --threshold values it was recorded with (else the 120 s default hang floor
    would find nothing yet)."""
    live = jobs["hang"].live
    assert live and live["running"], (live, jobs["hang"].stderr()[-3000:])
    assert live["runs"]["status"] == "running" and live["runs"]["finding_count"] >= 1, live["runs"]
    found = json.loads(live["diagnose"])
    assert [f["code"] for f in found if f["code"] == "D23"] == ["D23"], (found, live["diagnose_err"])
    assert "was recorded with --threshold" in live["diagnose_err"] and "hang_floor_s=10" in live["diagnose_err"], \
        live["diagnose_err"]


def test_real_straggler_is_named_with_its_score_and_the_even_job_gives_nothing(jobs):
    j = jobs["straggler"]
    assert j.proc.returncode == 0 and "DONE" in j.stdout, j.stderr()[-4000:]
    f = [x for x in j.diagnose() if x["code"] == "D24"]
    assert len(f) == 1, (f, j.stderr()[-3000:])
    assert f[0]["numbers"]["rank"] == 1 and "rank 1 (pid" in f[0]["evidence"], f[0]
    score = f[0]["numbers"]["score"]
    assert score < 0.75, f[0]
    assert f[0]["cost"]["speedup"] == pytest.approx(1 / score, rel=0.01)
    print("\nstraggler: rank 1 score %.2f (median step %.0f ms vs %.0f ms)"
          % (score, 1e3 * f[0]["numbers"]["step_median_s"], 1e3 * f[0]["numbers"]["fastest_step_median_s"]))
    live = [line for _, line in j.lines if " D24 straggler-rank " in line]
    assert live, j.stderr()[-3000:]
    # the even job is the real healthy two-rank job: no finding at all, live or offline, 0 in `runs`
    e = jobs["even"]
    assert e.proc.returncode == 0 and "DONE" in e.stdout, e.stderr()[-4000:]
    assert e.diagnose() == [], e.diagnose()
    assert "  findings: 0" in e.stderr(), e.stderr()[-3000:]
    assert not [line for _, line in e.lines if line.startswith("  [") or line.startswith("trainmon: [")], e.stderr()
    runs = subprocess.run([trainmon_bin(), "runs", "--json", "--db", e.db], env=e.env, capture_output=True,
                          text=True, timeout=60)
    assert json.loads(runs.stdout)[0]["finding_count"] == 0, runs.stdout


def test_real_starvation_gives_the_measured_share(jobs):
    j = jobs["starve"]
    assert j.proc.returncode == 0 and "DONE" in j.stdout, j.stderr()[-4000:]
    found = j.diagnose()
    f = [x for x in found if x["code"] == "D25"]
    assert len(f) == 1, (found, j.stderr()[-3000:])
    share = f[0]["numbers"]["data_share_pct"]
    # injected: the loader's sleeps as the script itself timed them, over the loop's wall time; the
    # measured share matches within 10 % of the step time (the loader's own work adds a little)
    injected = 100 * float(re.search(r"INJECTED ([\d.]+)", j.stdout).group(1))
    step_s = f[0]["numbers"]["step_mean_s"]
    assert injected - 2 <= share <= injected + 10, (share, injected, f[0])
    assert f[0]["cost"]["basis"] == "measured"
    assert f[0]["cost"]["speedup"] == pytest.approx(1 / (1 - share / 100), rel=0.01)
    assert "% of each step waits for data" in f[0]["evidence"], f[0]
    assert not [x for x in found if x["code"] == "D4"], "one problem, one finding"
    print("\nstarvation: measured %.1f %% of each step waiting for data, injected %.1f %% (mean step %.0f ms)"
          % (share, injected, 1e3 * step_s))


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_top_shows_the_runs_hang_with_the_line_each_rank_is_stuck_on(jobs):
    """top's own diagnosis cannot see the training loop: the run's findings come from its live state file,
    with the stacks stored with the hang."""
    screen = jobs["hang"].top
    hang_line, coll_line = line_of(DDP, "HANG-LINE"), line_of(DDP, "COLLECTIVE-LINE")
    lines = screen.splitlines()
    hang = [i for i, l in enumerate(lines) if l.startswith("D23 critical")]
    assert hang, screen
    r1 = [i for i, l in enumerate(lines) if re.match(rf"^  rank 1 \(pid \d+[^)]*\) at hang\.py:{hang_line} in run", l)]
    r0 = [i for i, l in enumerate(lines) if re.match(r"^  rank 0 \(pid \d+[^)]*\) at .*all_reduce", l)]
    assert r0 and r1 and hang[0] < r0[0] < r1[0], screen
    assert f"called from hang.py:{coll_line} in run" in lines[r0[0]] or len(lines[r0[0]]) >= 119, screen
    print("\ntop, while the job hung:\n" + "\n".join(lines[hang[0]:r1[0] + 1]))
