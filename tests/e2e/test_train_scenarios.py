# SPDX-License-Identifier: Apache-2.0
"""The kinds of issue 30's "Tested for real" that the other tests leave out, each a real DDP job over
gloo on this machine's CPU under `trainmon run`, with no trainmon code in the script (JOB below), and
each judged on the recorded run (`trainmon diagnose --json`) for its rank, cause and cost:

 - a compute straggler at 1.3x (D24 names rank 1, its compute the cause, the others' wait the cost),
   and an even job with a slow first step and an evaluation pass on rank 0 alone while rank 1 waits
   in a barrier: no D24 and never a hang (D23), even with the hang floors below both pauses;
 - a rank whose data loader is slow: D24 names it and its data wait, not its compute;
 - a rank-0-only checkpoint every few seconds while the other rank waits in the next all-reduce: D28
   (pauses) says rank 0 worked alone, with the measured cost; never a hang, even judged again with a
   collective floor below the checkpoint's length;
 - a stop inside a collective, four ranks: rank 1 sleeps for ever before an all_reduce that ranks 0,
   2 and 3 are inside: D23's warning names rank 1 within the minute issue 30 allows, with the default
   thresholds (the critical floor is 120 s);
 - a stop outside any collective (both ranks stuck in compute): the critical D23 at its floor, with no
   rank named as holding the others.

torchrun cannot start workers with Debian's torch 1.13 on Python 3.11 (its redirect parsing,
`Std.from_str`, returns None: "'NoneType' object has no attribute 'get'"), so the ranks are started
with torch.multiprocessing; test_train_collectives starts them as torchrun would (env://).

The compute is a sleep (as a GPU kernel would take): on this 2-core machine, shared with the other
runs, CPU work would measure the scheduler rather than the ranks. The jobs run side by side (about
a minute of wall time for all); real processes: skipped in the sanitizer pass (TRAINMON_SANITIZED=1).
"""

import json
import os
import re
import signal
import subprocess
import textwrap
import threading
import time

import pytest

from test_run_helpers import PY, env, trainmon_bin, wait_for

pytestmark = pytest.mark.skipif(os.environ.get("TRAINMON_SANITIZED") == "1",
                                reason="real torch jobs for a minute: not a memory-safety test")

# One script for every kind: its configuration (JSON, argv[2]) says which rank does what. Times the
# test needs (the first step, a stop) are written by the job to CFG["marks"] as "NAME UNIX-TIME".
JOB = textwrap.dedent("""
    import json, os, sys, time
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, Dataset

    CFG = json.loads(sys.argv[2])

    class Data(Dataset):
        def __init__(self, item_s):
            self.x = torch.randn(64, 16)
            self.item_s = item_s
        def __len__(self):
            return 1000000
        def __getitem__(self, i):
            if self.item_s:
                time.sleep(self.item_s)  # a slow disk or decoder
            return self.x[i % 64], i % 4

    def mark(name):
        with open(CFG["marks"], "a") as f:
            f.write("%s %.3f\\n" % (name, time.time()))

    def evaluate(model, seconds):
        model.eval()
        with torch.no_grad():
            for j, (x, y) in enumerate(DataLoader(Data(0), batch_size=4)):
                if j == 20:
                    break
                model.module(x)
                time.sleep(seconds / 20)
        model.train()

    def run(rank, world, init_file):
        dist.init_process_group("gloo", init_method="file://" + init_file, rank=rank, world_size=world)
        torch.manual_seed(0)
        torch.set_num_threads(1)
        model = DDP(torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4)))
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        work = CFG["compute_s"] * (CFG.get("slow_factor", 1.0) if rank == CFG.get("slow_rank") else 1.0)
        item_s = CFG.get("item_s", 0.0) if rank == CFG.get("loader_rank") else 0.0
        saved = 0.0
        start = None
        for i, (x, y) in enumerate(DataLoader(Data(item_s), batch_size=4)):
            if i == CFG["steps"]:
                break
            if i == 0 and rank == CFG.get("first_rank"):
                time.sleep(CFG["first_s"])  # a slow first step (compilation, warm-up) on one rank
            time.sleep(work)  # the step's compute, as a GPU kernel would take
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()  # DDP's gradient all-reduce: a fast rank waits here for a slow one
            opt.step()
            if i == 0:
                start = time.time()
                if rank == 0:
                    mark("first_step")
            if i == CFG.get("stop_at") and rank in CFG.get("stop_ranks", ()):
                mark("stop%d" % rank)
                while True:
                    time.sleep(3600)  # STOP-LINE
            if CFG.get("allreduce_loss"):
                dist.all_reduce(loss.detach())  # COLLECTIVE-LINE (the mean loss, for the log)
            if CFG.get("ckpt_every") and rank == 0 and (i + 1) % CFG["ckpt_every"] == 0:
                t = time.time()
                path = os.path.join(CFG["dir"], "ckpt.pt")
                torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": i}, path)
                with open(path, "rb+") as f:
                    os.fsync(f.fileno())
                time.sleep(CFG["ckpt_s"])  # the rest of a large checkpoint on a slow disk
                saved += time.time() - t
            if i == CFG.get("eval_at"):
                if rank == 0:
                    evaluate(model, CFG["eval_s"])  # rank 0 alone evaluates ...
                dist.barrier()  # ... while the others wait here
        if rank == 0:
            mark("end")
            with open(CFG["marks"], "a") as f:
                f.write("saved %.3f\\nwall %.3f\\n" % (saved, time.time() - start))
        dist.barrier()
        dist.destroy_process_group()

    if __name__ == "__main__":
        mp.spawn(run, args=(CFG["ranks"], sys.argv[1]), nprocs=CFG["ranks"], join=True)
        print("DONE", flush=True)
""")

# D24's windows, scaled so that a run of half a minute holds several: straggler_window_s (default 60 s,
# nvidia-resiliency-ext's report interval) and straggler_compute_for_s / straggler_for_s (defaults 60
# and 120 s: how long the score must stay low). The scores and their thresholds are the defaults.
STRAGGLER_TH = ["straggler_window_s=8", "straggler_compute_for_s=8", "straggler_for_s=8"]


# A finding as `run` announces it while the job runs (the end summary lists them again, indented).
LIVE_D23_WARNING = r"^trainmon: \[warning\] D23 "
LIVE_D23_CRITICAL = r"^trainmon: \[critical\] D23 "


def line_of(marker):
    for n, line in enumerate(JOB.splitlines(), 1):
        if marker in line:
            return n
    raise AssertionError(marker)


class Job:
    """One `trainmon run` of JOB with configuration `cfg`; its stderr lines are kept with the wall
    time (time.time(), the job's marks' clock) they arrived at."""

    def __init__(self, tmp, name, cfg, thresholds=()):
        self.name = name
        self.dir = tmp / name
        self.dir.mkdir()
        self.db = str(self.dir / "runs.db")
        self.marks_file = self.dir / "marks"
        script = self.dir / (name + ".py")
        script.write_text(JOB)
        cfg = dict(cfg, marks=str(self.marks_file), dir=str(self.dir))
        cmd = [trainmon_bin(), "run", "--db", self.db, "--interval", "0.5", "--no-report", "--print-every", "0",
               "--kill-after", "2"]
        for t in thresholds:
            cmd += ["--threshold", t]
        cmd += ["--", PY, str(script), str(self.dir / "rdv"), json.dumps(cfg)]
        e = env()
        for k in ("TRAINMON_EVENTS_SOCKET", "TRAINMON_SNAPSHOT_FILE", "TRAINMON_RUN_ID", "RANK", "WORLD_SIZE",
                  "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "TRAINMON_DISABLE"):
            e.pop(k, None)
        self.env = e
        self.proc = subprocess.Popen(cmd, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines = []  # (time.time(), line)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.stdout = ""

    def _read(self):
        for line in self.proc.stderr:
            self.lines.append((time.time(), line.rstrip("\n")))

    def marks(self):
        out = {}
        try:
            for line in self.marks_file.read_text().splitlines():
                k, v = line.split()
                out[k] = float(v)
        except (OSError, ValueError):
            pass
        return out

    def live(self, pattern):
        """The first stderr line matching `pattern` (regex) and when it came, else None."""
        for t, line in list(self.lines):
            if re.search(pattern, line):
                return t, line
        return None

    def stop(self):
        """SIGTERM to `trainmon run` (it passes it on to the job; SIGKILL after --kill-after)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)

    def finish(self, timeout=240):
        try:
            self.stdout, _ = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.stdout, _ = self.proc.communicate()
        self.reader.join(timeout=10)
        return self

    def stderr(self):
        return "\n".join(line for _, line in self.lines)

    def diagnose(self, *thresholds):
        """`diagnose last --json`: the run's recorded thresholds, then `thresholds`."""
        args = [trainmon_bin(), "diagnose", "last", "--json", "--db", self.db]
        for t in thresholds:
            args += ["--threshold", t]
        d = subprocess.run(args, env=self.env, capture_output=True, text=True, timeout=60)
        assert d.returncode == 0, d.stderr
        return json.loads(d.stdout)

    def codes(self, found):
        return sorted(f["code"] for f in found)


@pytest.fixture(scope="module")
def jobs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("scen")
    ddp = {"ranks": 2, "compute_s": 0.1}
    js = {
        # rank 1 computes 1.3x what rank 0 does, every step (300 steps of about 130 ms)
        "straggler": Job(tmp, "straggler", dict(ddp, steps=300, slow_rank=1, slow_factor=1.3), STRAGGLER_TH),
        # even ranks; rank 1's first step takes 6 s more (rank 0 waits for it in the first all-reduce);
        # at step 120 rank 0 alone evaluates for 8 s while rank 1 waits in a barrier. The hang floors are
        # below both (hang_floor_s 120 -> 4 s, hang_coll_floor_s 30 -> 3 s): only the phases keep
        # them from being called hangs.
        "even": Job(tmp, "even", dict(ddp, steps=300, first_rank=1, first_s=6.0, eval_at=120, eval_s=8.0),
                    STRAGGLER_TH + ["hang_floor_s=4", "hang_coll_floor_s=3"]),
        # rank 1's loader sleeps 10 ms per sample (4 per batch): about 40 ms of data wait per 100-ms step
        "loader": Job(tmp, "loader", dict(ddp, steps=300, loader_rank=1, item_s=0.010), STRAGGLER_TH),
        # rank 0 saves a checkpoint (torch.save, fsync, 2 s more) every 30 steps; the others wait in the
        # next step's all-reduce. D28's thresholds are the defaults.
        "checkpoint": Job(tmp, "checkpoint", dict(ddp, steps=240, ckpt_every=30, ckpt_s=2.0)),
        # four ranks; rank 1 sleeps for ever before the all_reduce of step 40 that ranks 0, 2, 3 enter.
        # The default thresholds: the warning comes at hang_coll_floor_s (30 s), the critical at 120 s.
        "stop_inside": Job(tmp, "stop_inside", dict(ddp, ranks=4, steps=100000, stop_at=40, stop_ranks=[1],
                                                    allreduce_loss=True)),
        # both ranks stuck outside any collective at step 40 (hang_floor_s 120 -> 8 s)
        "stop_outside": Job(tmp, "stop_outside", dict(ddp, steps=100000, stop_at=40, stop_ranks=[0, 1],
                                                      allreduce_loss=True), ["hang_floor_s=8"]),
    }
    # The stopped jobs are ended (SIGTERM to trainmon run) once their finding is live, or after 90 s
    # of no finding (the assertions say so).
    for name, pattern in (("stop_inside", LIVE_D23_WARNING), ("stop_outside", LIVE_D23_CRITICAL)):
        j = js[name]
        wait_for(lambda: j.live(pattern) or j.proc.poll() is not None, timeout=150, step=0.5)
        j.stop()
    for j in js.values():
        j.finish()
    return js


def test_compute_straggler_at_1_3x_is_named_with_its_compute_and_the_even_job_gives_none(jobs):
    j = jobs["straggler"]
    assert j.proc.returncode == 0 and "DONE" in j.stdout, j.stderr()[-4000:]
    found = j.diagnose()
    f = [x for x in found if x["code"] == "D24"]
    assert len(f) == 1, (found, j.stderr()[-3000:])
    f = f[0]
    n = f["numbers"]
    assert n["rank"] == 1 and "rank 1 (pid" in f["evidence"], f
    # the cause: its compute (not its data, not its step time: both ranks' steps are as long)
    assert "its compute takes" in f["evidence"] and "longer for data" not in f["evidence"], f["evidence"]
    ratio = n["compute_median_s"] / n["fastest_compute_median_s"]
    assert 1.2 <= ratio <= 1.45, n
    assert n["score"] == pytest.approx(1 / ratio, rel=0.05) and n["score"] < 0.8, n  # medians of windows
    # the cost: the others' wait for it, (its compute - the fastest's) / the step, about 0.3 / 1.3
    share = f["cost"]["share"]
    assert f["cost"]["basis"] == "measured" and 0.12 <= share <= 0.32, f["cost"]
    assert share == pytest.approx(n["others_wait_share_pct"] / 100, abs=1e-6)
    assert f["thresholds"]["straggler_compute_frac"] == 0.8, f["thresholds"]
    # found live, and how long after the skew began (its first step)
    live = j.live(r"^trainmon: \[warning\] D24 straggler-rank ")
    assert live, j.stderr()[-3000:]
    after = live[0] - j.marks()["first_step"]
    assert after < 60, after
    print("\nstraggler 1.3x: rank 1 compute %.0f ms vs %.0f ms (%.2fx, score %.2f), others wait %.0f %% of "
          "each step; live %.1f s after the first step (windows 8 s)"
          % (1e3 * n["compute_median_s"], 1e3 * n["fastest_compute_median_s"], ratio, n["score"], 100 * share,
             after))
    # the even job: no straggler, no finding at all
    e = jobs["even"]
    assert e.proc.returncode == 0 and "DONE" in e.stdout, e.stderr()[-4000:]
    found = e.diagnose()
    assert "D24" not in e.codes(found), found
    assert not e.live(r" D24 "), e.stderr()[-3000:]


def test_a_slow_first_step_and_an_evaluation_pass_are_never_a_hang(jobs):
    e = jobs["even"]
    assert e.proc.returncode == 0 and "DONE" in e.stdout, e.stderr()[-4000:]
    found = e.diagnose()
    assert "D23" not in e.codes(found), found
    assert not e.live(r" D23 "), e.stderr()[-3000:]
    # the pauses were real and longer than the floors the run was judged with
    m = e.marks()
    assert m["wall"] >= 300 * 0.1 + 8.0, m
    print("\neven job with a 6 s first step and an 8 s evaluation on rank 0: findings %s" % e.codes(found))


def test_a_slow_loader_on_one_rank_is_named_with_its_data_wait_not_compute(jobs):
    j = jobs["loader"]
    assert j.proc.returncode == 0 and "DONE" in j.stdout, j.stderr()[-4000:]
    found = j.diagnose()
    f = [x for x in found if x["code"] == "D24"]
    assert len(f) == 1, (found, j.stderr()[-3000:])
    f = f[0]
    n = f["numbers"]
    assert n["rank"] == 1 and "rank 1 (pid" in f["evidence"], f
    assert "longer for data" in f["evidence"] and "its data wait is higher than the other ranks'" in f["evidence"], \
        f["evidence"]
    assert "its compute takes" not in f["evidence"], f["evidence"]
    # about 40 ms of each step beyond rank 0's data wait, of a step of about 140 ms
    assert 0.025 <= n["data_excess_s"] <= 0.08, n
    assert f["cost"]["share"] == pytest.approx(n["data_excess_s"] / n["step_median_s"], rel=0.1), (f["cost"], n)
    assert "D25" not in j.codes(found), found  # the typical rank does not wait for data
    print("\nslow loader on rank 1: %.0f ms more data wait per %.0f-ms step, cost %.0f %% (score %.2f)"
          % (1e3 * n["data_excess_s"], 1e3 * n["step_median_s"], 100 * f["cost"]["share"], n["score"]))


def test_a_rank_zero_checkpoint_is_a_pause_with_its_cost_never_a_hang(jobs):
    j = jobs["checkpoint"]
    assert j.proc.returncode == 0 and "DONE" in j.stdout, j.stderr()[-4000:]
    found = j.diagnose()
    assert "D23" not in j.codes(found) and not j.live(r" D23 "), found
    f = [x for x in found if x["code"] == "D28"]
    assert len(f) == 1, (found, j.stderr()[-3000:])
    f = f[0]
    n = f["numbers"]
    assert n["rank"] == 0, n
    assert "rank 0 computed alone during its pauses" in f["evidence"] and "rank 1 waited in the collectives" \
        in f["evidence"], f["evidence"]
    assert n["compute_pct"] >= 80, n
    assert "asynchronously" in f["advice"], f["advice"]
    # the cost: the checkpoints' share of the wall time, as the job timed them
    m = j.marks()
    injected = m["saved"] / m["wall"]
    assert f["cost"]["basis"] == "measured"
    assert f["cost"]["share"] == pytest.approx(injected, abs=0.1), (f["cost"], m)
    assert n["pauses"] >= 3 and 2.0 <= n["longest_step_s"] <= 4.0, n
    # judged again with a collective floor under the checkpoint's length: the ranks' phases say the
    # others waited in a collective while rank 0 computed alone, and the stall ended: still no hang
    again = j.diagnose("hang_coll_floor_s=1")
    assert "D23" not in j.codes(again), again
    print("\nrank-0 checkpoint: D28 %d pauses, cost %.0f %% (injected %.0f %%), longest step %.1f s"
          % (n["pauses"], 100 * f["cost"]["share"], 100 * injected, n["longest_step_s"]))


def test_a_stop_inside_a_collective_names_the_holding_rank_within_the_minute_four_ranks(jobs):
    j = jobs["stop_inside"]
    live = j.live(LIVE_D23_WARNING)
    assert live, j.stderr()[-4000:]
    m = j.marks()
    after = live[0] - m["stop1"]
    # the default hang_coll_floor_s (30 s), well before the critical floor (120 s)
    assert 30 <= after <= 60, (after, live[1])  # + up to 10 s between live evaluations
    assert not j.live(LIVE_D23_CRITICAL), j.stderr()[-3000:]
    found = j.diagnose()
    f = [x for x in found if x["code"] == "D23"]
    assert len(f) == 1 and f[0]["severity"] == "warning", found
    f = f[0]
    assert f["numbers"]["holding_rank"] == 1 and f["numbers"]["ranks"] == 4, f["numbers"]
    assert re.search(r"ranks 0, 2, 3 wait in all_reduce #\d+", f["evidence"]), f["evidence"]
    assert "rank 1 never entered it (rank 1 in compute since" in f["evidence"], f["evidence"]
    # the stacks trainmon asked for when the warning opened: rank 1 on the line it sleeps on, the
    # others in the all_reduce; the advice names that line, live as in the store
    stop_line = "stop_inside.py:%d in run" % line_of("STOP-LINE")
    st = {s["rank"]: s for s in f.get("stacks", [])}
    assert set(st) == {0, 1, 2, 3} and st[1]["where"] == stop_line, st
    assert all(st[k]["collective"] == "all_reduce" and st[k]["caller"] == "stop_inside.py:%d in run"
               % line_of("COLLECTIVE-LINE") for k in (0, 2, 3)), st
    assert re.match(r"Look at rank 1 \(pid \d+[^)]*\) first: it is at " + re.escape(stop_line), f["advice"]), \
        f["advice"]
    assert j.live(r"^trainmon: rank 1 pid \d+ is at " + re.escape(stop_line)), j.stderr()[-3000:]
    assert j.live(r"^trainmon: D23 -> Look at rank 1 \(pid \d+[^)]*\) first: it is at " + re.escape(stop_line)), \
        j.stderr()[-3000:]
    assert f["cost"]["share"] == 1.0
    assert f["thresholds"]["hang_coll_floor_s"] == 30, f["thresholds"]
    print("\nstop inside all_reduce, 4 ranks: D23 warning live %.1f s after rank 1 stopped (floor 30 s): %s"
          % (after, f["evidence"][:160]))


def test_a_stop_outside_any_collective_is_the_critical_hang_with_no_holder(jobs):
    j = jobs["stop_outside"]
    live = j.live(LIVE_D23_CRITICAL)
    assert live, j.stderr()[-4000:]
    m = j.marks()
    after = live[0] - max(m["stop0"], m["stop1"])
    assert 7.5 <= after <= 20, (after, live[1])  # the floor, + up to 4 s between evaluations
    found = j.diagnose()
    f = [x for x in found if x["code"] == "D23"]
    assert len(f) == 1 and f[0]["severity"] == "critical", found
    f = f[0]
    assert f["numbers"]["ranks_stalled"] == 2, f["numbers"]
    assert "rank 0 in compute" in f["evidence"] and "rank 1 in compute" in f["evidence"], f["evidence"]
    assert "never entered it" not in f["evidence"] and "holding_rank" not in f["numbers"], f
    # the stacks asked for when it opened: both ranks on the line they sleep on
    st = {s["rank"]: s for s in f.get("stacks", [])}
    stop_line = "stop_outside.py:%d in run" % line_of("STOP-LINE")
    assert set(st) == {0, 1} and all(s["where"] == stop_line for s in st.values()), st
    assert f["cost"]["share"] == 1.0
    print("\nstop outside a collective: D23 critical live %.1f s after both ranks stopped (floor 8 s)" % after)
