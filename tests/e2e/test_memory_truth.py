# SPDX-License-Identifier: Apache-2.0
"""Issue 34, real processes: a fast leak inside a memory-limited cgroup is reported (D3, critical, with
the time left and the process that grows) before the kernel's OOM killer ends it, and the kill is a
finding of its own (D20) naming the killed process with its own RSS and the limit, caused by the leak.
Once in a PyTorch DataLoader worker (the job fails when its worker is killed), once in the main
process (the job is killed). The live diagnosis (what `run` announced and stored) and `diagnose`
(recomputed from the store) agree. Slow leaks, and the causes that need a second job or a thrashing
host (a stall during pressure, a late driver answer), are tested on series in the unit tests
(tests/unit/diagnose/memory_truth_test.cpp): real host-wide pressure would need the whole machine.

Needs a writable memory cgroup (root in CI; test_run_oom.make_cgroup) and, for the worker, torch."""

import json
import os
import re
import signal
import sqlite3
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


def _in_cgroup(tmp_path, limit, script):
    """`trainmon run` of `script` moved into a fresh memory cgroup of `limit` bytes; (proc, db)."""
    cg, cleanup = make_cgroup(limit)
    db = tmp_path / "t.db"
    try:
        cmd = ["sh", "-c", f"echo $$ > {cg}/cgroup.procs && exec {PY} -c \"$0\"", script]
        p = tm_run(db, cmd, timeout=120)
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
