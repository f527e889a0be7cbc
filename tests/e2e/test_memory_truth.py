# SPDX-License-Identifier: Apache-2.0
"""Issue 34, real processes: a fast leak inside a memory-limited cgroup is reported (D3, critical, with
the time left and the process that grows) before the kernel's OOM killer ends it, and the kill is a
finding of its own (D20) naming the killed process with its own RSS and the limit, caused by the leak.
Once in a PyTorch DataLoader worker (the job fails when its worker is killed), once in the main
process (the job is killed). The live diagnosis (what `run` announced and stored) and `diagnose`
(recomputed from the store) agree.

A slow leak in a limited cgroup is not the fast rule's: nothing under the default thresholds in a short
run, and the slow rule (its window shortened with --threshold) says a warning with the time left.

A late driver answer (the fake driver's hang rules) while the host's CPUs are all busy (SCHED_IDLE
spinners: no other process of the machine waits for them) is a late answer, a warning; the same slow
answer without that pressure, repeated until the end, is a lost GPU (critical).

Not here, and why: host *memory* pressure (D17, and with it "a stall caused by the pressure", D23 <-
D17, and a late answer caused by it, D14 <- D17). D17 reads the host's PSI (/proc/pressure/memory some
avg10 >= psi_mem_some_pct) or MemAvailable under low_available_pct with swap growing. This machine has
cgroup v1 memory controllers (no memory.high, whose throttling stalls a cgroup's tasks in memstall
without any I/O), no swap, and a shared disk: the only ways to make tasks stall on memory are reclaim
and refaults of a working set through the disk, which cost the other users of the machine I/O and CPU
in proportion to the stall they make, or eating the host's MemAvailable, which pressures everyone.
Those chains are tested on series in the unit tests (tests/unit/diagnose/memory_truth_test.cpp).

Needs a writable memory cgroup (root in CI; test_run_oom.make_cgroup) and, for the worker, torch."""

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_run_helpers import PY, run, tm_run  # noqa: E402
from test_run_oom import make_cgroup  # noqa: E402

pytestmark = pytest.mark.skipif(os.environ.get("TRAINMON_SANITIZED") == "1",
                                reason="slow real-process runs: the release pass covers them")

MiB = 1 << 20

# A Dataset that keeps every sample it loads, in the worker (the classic worker-side leak): 3 MiB per
# sample, 10 samples a second = 30 MiB/s.
WORKER_LEAK = (
    "import time, torch\n"
    "from torch.utils.data import Dataset, DataLoader\n"
    "class Leaky(Dataset):\n"
    "    def __init__(self):\n"
    "        self.seen = []\n"
    "    def __len__(self):\n"
    "        return 1 << 20\n"
    "    def __getitem__(self, i):\n"
    "        self.seen.append(b'x' * (3 << 20))\n"
    "        time.sleep(0.1)\n"
    "        return torch.zeros(1)\n"
    "for batch in DataLoader(Leaky(), batch_size=1, num_workers=1):\n"
    "    pass\n"
    "print('survived')\n")

# The main process keeps 2 MiB every 50 ms = 40 MiB/s.
MAIN_LEAK = (
    "import time\n"
    "keep = []\n"
    "for i in range(4000):\n"
    "    keep.append(b'x' * (2 << 20))\n"
    "    time.sleep(0.05)\n"
    "print('survived')\n")


def _in_cgroup(tmp_path, limit, script, *opts):
    """`trainmon run [opts]` of `script` moved into a fresh memory cgroup of `limit` bytes; (proc, db)."""
    cg, cleanup = make_cgroup(limit)
    db = tmp_path / "t.db"
    try:
        cmd = ["sh", "-c", f"echo $$ > {cg}/cgroup.procs && exec {PY} -c \"$0\"", script]
        p = tm_run(db, cmd, *opts, timeout=120)
    finally:
        # what the job left in the cgroup (nothing, normally) is ours: end it, then remove the cgroup
        for _ in range(50):
            try:
                with open(os.path.join(cg, "cgroup.procs")) as f:
                    left = [int(x) for x in f.read().split()]
            except OSError:
                left = []
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            try:
                cleanup()
                break
            except OSError:
                time.sleep(0.1)
    return p, db


def _stored(db):
    """The findings the run stored at its end (its own, live diagnosis's final pass), in rank order."""
    with sqlite3.connect(str(db)) as c:
        return [json.loads(r[0]) for r in c.execute("SELECT json FROM findings ORDER BY id")]


def _live_lines(stderr, code):
    """The findings `run` announced while the job ran (`trainmon: [sev] CODE slug START-ENDs ...`)."""
    return [ln for ln in stderr.splitlines() if re.match(rf"trainmon: \[\w+\] {code} ", ln)]


def _span(line):
    m = re.search(r" (\d+)-(\d+)s ", line)
    return float(m.group(1)), float(m.group(2))


def _check(p, db, limit_mib, kind, kind_name):
    """The shared assertions: D3 then D20, linked, live and offline alike. Returns (d3, d20)."""
    offline = run(["diagnose", "last", "--json"], db)
    assert offline.returncode == 0, offline.stderr
    found = json.loads(offline.stdout)
    stored = _stored(db)
    for findings, where in ((found, "diagnose"), (stored, "run")):
        codes = [f["code"] for f in findings if f["code"] in ("D3", "D20")]
        # the chain, cause first: the leak, then the kill it led to
        assert codes == ["D3", "D20"], (where, [(f["code"], f["evidence"]) for f in findings], p.stderr[-3000:])
    d3 = next(f for f in found if f["code"] == "D3")
    d20 = next(f for f in found if f["code"] == "D20")
    s3 = next(f for f in stored if f["code"] == "D3")
    s20 = next(f for f in stored if f["code"] == "D20")
    for a, b in ((d3, s3), (d20, s20)):  # live (stored by run) == offline (recomputed)
        assert (a["severity"], a["pids"], a.get("cause")) == (b["severity"], b["pids"], b.get("cause")), (a, b)
        assert a["start_s"] == pytest.approx(b["start_s"], abs=0.5) and a["end_s"] == pytest.approx(b["end_s"], abs=0.5)

    # D3: critical at once, the process that grows, its kind, the time left, the cgroup's limit
    n3 = d3["numbers"]
    assert d3["severity"] == "critical" and n3["fast"] == 1, d3
    assert n3["grower_kind"] == kind and n3["grower_share"] > 0.9, d3
    assert d3["pids"] == [int(n3["grower_pid"])], d3
    assert n3["cgroup_memory_limit_mib"] == limit_mib, d3
    assert n3["eta_s"] <= 3 * n3["fitted_s"] and n3["fitted_s"] >= 10, d3
    assert f"in the {kind_name} pid {int(n3['grower_pid'])}" in d3["evidence"], d3["evidence"]
    assert "OOM in about" in d3["evidence"], d3["evidence"]

    # D20: the killed process is the one that grew, with its own RSS (most of the limit), the limit, the cause
    n20 = d20["numbers"]
    assert d20["severity"] == "critical" and d20["cause"] == "D3", d20
    assert d20["pids"] == d3["pids"] and n20["killed_pid"] == n3["grower_pid"], (d3, d20)
    assert n20["killed_kind"] == kind, d20
    assert n20["at_cgroup_limit"] == 1 and n20["cgroup_memory_limit_mib"] == limit_mib, d20
    assert 0.5 * limit_mib < n20["killed_rss_mib"] <= 1.05 * limit_mib, d20
    assert f"memory cgroup's limit of {limit_mib} MiB" in d20["evidence"], d20["evidence"]
    assert d3["end_s"] <= d20["start_s"], (d3, d20)

    # Live: D3 was announced while the job ran, before the kill.
    live = _live_lines(p.stderr, "D3")
    assert live and "[critical]" in live[0] and "OOM in about" in live[0], p.stderr[-3000:]
    assert _span(live[0])[1] <= d20["start_s"], (live[0], d20)
    # The end line names the killed process with its own RSS, not the job's after the kill.
    assert f"the killed process ({kind_name}, pid {int(n20['killed_pid'])}) had" in p.stderr, p.stderr[-3000:]
    print(f"\n{kind_name}: D3 {d3['evidence']}\n  D20 {d20['evidence']}\n  live: {live[0]}")
    return d3, d20


def test_a_dataloader_worker_leak_is_caught_before_the_kill_and_the_kill_names_the_worker(tmp_path):
    pytest.importorskip("torch")
    limit = 1024 * MiB
    p, db = _in_cgroup(tmp_path, limit, WORKER_LEAK)
    assert "survived" not in p.stdout, "the cgroup limit was not enforced"
    # the worker is killed, the main process fails with DataLoader's error (not killed itself)
    assert p.returncode == 1 and "DataLoader worker" in p.stderr, p.stderr[-3000:]
    d3, d20 = _check(p, db, 1024, 1, "DataLoader worker")
    assert "persistent_workers" in d3["advice"], d3["advice"]
    assert d3["numbers"]["slope_mib_per_s"] == pytest.approx(30, rel=0.35), d3


def test_a_main_process_leak_is_caught_before_the_kill_and_the_kill_names_it(tmp_path):
    limit = 640 * MiB
    p, db = _in_cgroup(tmp_path, limit, MAIN_LEAK)
    assert "survived" not in p.stdout, "the cgroup limit was not enforced"
    assert p.returncode == 137, p.stderr[-3000:]
    d3, d20 = _check(p, db, 640, 0, "main process")
    assert ".item()" in d3["advice"], d3["advice"]
    assert d3["numbers"]["slope_mib_per_s"] == pytest.approx(40, rel=0.35), d3
    assert d20["numbers"]["signal"] == 9, d20


# ---- a slow leak: the long window's, not the fast rule's ----

# The main process keeps 192 KiB every 0.25 s = 0.75 MiB/s (2.6 GiB/h) for 24 s, inside a 4 GiB cgroup:
# about 5400 s of headroom at that rate, far beyond 3 x the 24 s it can be fitted over.
SLOW_LEAK = (
    "import time\n"
    "keep = []\n"
    "t0 = time.monotonic()\n"
    "for i in range(96):\n"
    "    keep.append(b'x' * (192 << 10))\n"
    "    time.sleep(max(0, t0 + (i + 1) * 0.25 - time.monotonic()))\n"
    "print('survived')\n")


def test_a_slow_leak_in_a_limited_cgroup_waits_for_the_long_window_and_is_a_warning(tmp_path):
    limit_mib = 4096
    p, db = _in_cgroup(tmp_path, limit_mib * MiB, SLOW_LEAK)
    assert p.returncode == 0 and "survived" in p.stdout, p.stderr[-3000:]
    # Default thresholds: no D3, live or offline. The fast rule's forecast (about 90 min) reaches far
    # beyond leak_fast_eta_factor (3) x the span it can fit (24 s), and the slow rule needs
    # leak_min_span_s (30 min) of growth.
    assert not _live_lines(p.stderr, "D3"), p.stderr[-3000:]
    assert not [f for f in _stored(db) if f["code"] == "D3"], _stored(db)
    offline = run(["diagnose", "last", "--json"], db)
    assert offline.returncode == 0, offline.stderr
    assert not [f for f in json.loads(offline.stdout) if f["code"] == "D3"], offline.stdout

    # The slow rule itself, with a 20 s window instead of 30 min: a warning with the time left to the
    # cgroup's limit, not the fast rule's "OOM in about".
    slow = run(["diagnose", "last", "--json", "--threshold", "leak_min_span_s=20"], db)
    assert slow.returncode == 0, slow.stderr
    [d3] = [f for f in json.loads(slow.stdout) if f["code"] == "D3"]
    n = d3["numbers"]
    assert n["fast"] == 0 and d3["thresholds"]["leak_min_span_s"] == 20, d3
    assert n["slope_mib_per_s"] == pytest.approx(0.75, rel=0.3) and n["r2"] >= 0.8, d3
    assert n["fitted_s"] == pytest.approx(24, abs=3), d3
    assert n["cgroup_memory_limit_mib"] == limit_mib, d3
    assert n["headroom_mib"] == pytest.approx(limit_mib - n["end_mib"], abs=8), d3
    assert n["eta_s"] == pytest.approx(n["headroom_mib"] / n["slope_mib_per_s"], rel=1e-3), d3
    # why not the fast rule: the forecast is beyond 3 x the evidence; why a warning: beyond
    # leak_critical_eta_s (1 h)
    assert n["eta_s"] > d3["thresholds"]["leak_fast_eta_factor"] * n["fitted_s"], d3
    assert n["eta_s"] > d3["thresholds"]["leak_critical_eta_s"] and d3["severity"] == "warning", d3
    assert n["grower_kind"] == 0 and d3["pids"] == [int(n["grower_pid"])], d3
    assert "at this rate the cgroup's memory runs out in" in d3["evidence"], d3["evidence"]
    assert "OOM in about" not in d3["evidence"], d3["evidence"]
    print(f"\nslow: D3 {d3['evidence']}")


# ---- a late driver answer: under host pressure, and without ----

SCENARIOS = os.environ.get("TRAINMON_SCENARIOS_DIR", os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "scenarios"))

# A CPU spinner at SCHED_IDLE: it runs only on a CPU nothing else wants, so the host's CPUs are all busy
# (the late-answer rule's cpu_saturated_pct) while no other process of this machine waits for it. It
# ends itself after 40 s whatever happens; the test ends it sooner by pid.
IDLE_SPIN = (
    "import os, time\n"
    "os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))\n"
    "end = time.monotonic() + 40\n"
    "while time.monotonic() < end:\n"
    "    pass\n")


def _host_cpu_busy(seconds=1.0):
    """The host's CPU busy share over `seconds` (/proc/stat, as trainmon reads it: not idle, not iowait)."""
    def read():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:9]]  # guest time is inside user already
        return sum(v), v[3] + v[4]
    t0, i0 = read()
    time.sleep(seconds)
    t1, i1 = read()
    return 100.0 * (1 - (i1 - i0) / max(1, t1 - t0))


def _gpu_scenario(tmp_path, rule):
    """healthy-1gpu.json with one fake-driver error rule (docs/fake-nvml.md), written to tmp_path."""
    with open(os.path.join(SCENARIOS, "healthy-1gpu.json")) as f:
        s = json.load(f)
    s["errors"] = [rule]
    path = tmp_path / "late-gpu.json"
    path.write_text(json.dumps(s))
    return str(path)


# Both runs forgive hung calls for 8 s instead of 30 (gpu_late_max_s): the same rule, in a short run.
LATE_MAX = ("--threshold", "gpu_late_max_s=8")


def _summary_lines(stderr, code):
    """The findings `run` listed at its end (`  [sev] CODE slug ...`: the final diagnosis)."""
    return [ln for ln in stderr.splitlines() if re.match(rf"  \[\w+\] {code} ", ln)]


def _d14(p, db):
    """The D14 findings of `diagnose` and of the run's own store, and the live D14 lines."""
    offline = run(["diagnose", "last", "--json"], db)
    assert offline.returncode == 0, offline.stderr
    found = json.loads(offline.stdout)
    stored = _stored(db)
    return found, stored, _live_lines(p.stderr, "D14")


def test_a_late_driver_answer_while_the_host_cpus_are_saturated_is_a_warning_not_a_lost_gpu(tmp_path):
    # Every NVML call on GPU 0 made between 6.5 and 6.8 s hangs 7 s, then answers: past the sampler's
    # device_timeout (2 s) its rows are timeouts, about 5 s of them from 8.5 s (the live evaluation at
    # 10 s falls inside, with 1.5 s to spare either way).
    path = _gpu_scenario(tmp_path, {"function": "*", "gpu": 0, "from_s": 6.5, "to_s": 6.8, "hang_ms": 7000})
    spinners = [subprocess.Popen([PY, "-c", IDLE_SPIN]) for _ in range(os.cpu_count() or 1)]
    try:
        busy = _host_cpu_busy()
        if busy < 95:  # a cpuset or CPU quota smaller than the host: its CPUs cannot all be kept busy
            pytest.skip(f"the host's CPUs cannot be saturated from here (busy {busy:.0f} % with spinners)")
        p = tm_run(tmp_path / "t.db", [PY, "-c", "import time; time.sleep(16)"], *LATE_MAX, timeout=60,
                   scenario=path)
    finally:
        for s in spinners:
            s.kill()
            s.wait()
    assert p.returncode == 0, p.stderr[-3000:]
    found, stored, live = _d14(p, tmp_path / "t.db")
    for findings, where in ((found, "diagnose"), (stored, "run")):
        d14 = [f for f in findings if f["code"] == "D14"]
        assert len(d14) == 1, (where, d14, p.stderr[-3000:])
        f = d14[0]
        n = f["numbers"]
        assert f["severity"] == "warning" and n["host_pressure"] == 1 and f["gpus"] == [0], (where, f)
        assert 4 <= n["late_s"] <= 6.5 and 8 <= f["start_s"] <= 10 and n["answered_again"] == 1, (where, f)
        assert f["thresholds"]["gpu_late_max_s"] == 8, (where, f)
        assert n["cpu_busy_max_pct"] >= f["thresholds"]["cpu_saturated_pct"], (where, f)
        assert "GPU0 answered late at" in f["evidence"] and "short of CPU" in f["evidence"], (where, f)
        # The cause is the host's pressure finding when there is one (D17, or D19 for the job's own CPU),
        # listed before it; our spinners are not the job's, so normally there is none.
        causes = [c for c in findings if c["code"] in ("D17", "D19")]
        if causes:
            assert f["cause"] == causes[0]["code"] and findings.index(causes[0]) < findings.index(f), (where, findings)
        else:
            assert "cause" not in f, (where, f)
    # Live too: while the call still hung (the evaluation at 10 s), a late answer so far, not "GPU lost".
    assert live and not [ln for ln in live if "[critical]" in ln], (live, p.stderr[-3000:])
    assert "GPU0 has been answering late since" in live[0], live
    assert [ln.split()[0] for ln in _summary_lines(p.stderr, "D14")] == ["[warning]"], p.stderr[-3000:]
    print(f"\nlate: {f['evidence']}\n  live: {live}")


def test_the_same_slow_answer_without_host_pressure_that_keeps_failing_is_a_lost_gpu(tmp_path):
    # From 4 s every NVML call on GPU 0 hangs 7 s: timeouts from 6 s (device_timeout), and it keeps
    # failing until the job ends at 16 s, past gpu_late_max_s. Whether this shared machine's CPUs are
    # busy meanwhile (other users) does not matter: it kept failing.
    path = _gpu_scenario(tmp_path, {"function": "*", "gpu": 0, "from_s": 4, "hang_ms": 7000})
    p = tm_run(tmp_path / "t.db", [PY, "-c", "import time; time.sleep(16)"], *LATE_MAX, timeout=60,
               scenario=path)
    assert p.returncode == 0, p.stderr[-3000:]
    found, stored, live = _d14(p, tmp_path / "t.db")
    for findings, where in ((found, "diagnose"), (stored, "run")):
        [f] = [f for f in findings if f["code"] == "D14"]
        n = f["numbers"]
        assert f["severity"] == "critical" and "host_pressure" not in n and "cause" not in f, (where, f)
        assert n["timeout_rows"] >= 10 and n["lost_rows"] == 0 and n["recovered"] == 0, (where, f)
        assert n["never_answered"] == 0 and 5.5 <= f["start_s"] <= 7, (where, f)
        assert "GPU0 stopped responding at" in f["evidence"] and "until the end" in f["evidence"], (where, f)
        assert findings[0] is f, (where, findings)  # critical: first
    # At the end (the live evaluation at 10 s saw 4 s of it: late so far or lost, as the host's CPUs
    # were busy or not; none came after it): lost.
    assert [ln.split()[0] for ln in _summary_lines(p.stderr, "D14")] == ["[critical]"], p.stderr[-3000:]
