# SPDX-License-Identifier: Apache-2.0
"""`trainmon usage` at the edges a new user's trial found (issue 31): a GPU process seen in one tick
keeps its job, keys that share a prefix (job ids, GPU UUIDs) stay apart when a narrow terminal cuts
them (from the middle), and the option errors name the command, the path and the one duration
grammar, in the reader's language.

The recording is real: `trainmon record` of the fake driver listing two real `sleep` processes of this
user, each with its own Slurm job id in its environment, one of them listed for a single tick. Skipped
under the sanitizer pass (a real recording of seconds)."""

import json
import os
import pwd
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_run_helpers import env, record_while, run  # noqa: E402
from test_views_everywhere import run_on_pty  # noqa: E402

INTERVAL_S = 0.5
JOBS = ("4242001", "4242002")  # ids that differ in their last digit only
UUID = "GPU-1ed9e000-0000-4000-8000-00000000000{}"


def device(i):
    return {"name": "NVIDIA H100 80GB HBM3", "uuid": UUID.format(i),
            "pci": {"bus_id": f"00000000:{0x18 + i:02X}:00.0", "bus": 0x18 + i},
            "memory_total": 85520809984, "metrics": {"utilization_gpu": 50, "power_draw": 200_000}}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    if os.environ.get("TRAINMON_SANITIZED") == "1":
        pytest.skip("a real recording: slow under sanitizers")
    tmp = tmp_path_factory.mktemp("usage_edges")
    scenario = tmp / "edges.json"
    # GPU 0: a process all along; GPU 1: one listed for one interval only (a single tick)
    scenario.write_text(json.dumps({
        "name": "edges", "time_scale": 1.0, "devices": [device(0), device(1)],
        "processes": [
            {"pid": "env:EDGE_LONG", "gpu": 0, "type": "C", "name": "python3", "used_memory": 1 << 30},
            {"pid": "env:EDGE_SHORT", "gpu": 1, "type": "C", "name": "python3", "used_memory": 1 << 30,
             "start_s": 1.25, "end_s": 1.25 + INTERVAL_S}],
    }))
    procs = [subprocess.Popen(["sleep", "120"], env={"PATH": "/usr/bin:/bin", "SLURM_JOB_ID": j}) for j in JOBS]
    db = tmp / "u.db"
    record_while(db, env(str(scenario), EDGE_LONG=procs[0].pid, EDGE_SHORT=procs[1].pid), procs, INTERVAL_S)
    return db, [p.pid for p in procs], str(scenario)


def test_a_gpu_process_seen_in_one_tick_keeps_its_job(recorded):
    db, (long_pid, short_pid), _ = recorded
    p = run(["export", "last", "--format", "jsonl"], db)
    assert p.returncode == 0, p.stderr
    ticks = [json.loads(line) for line in p.stdout.splitlines() if '"gpu_process"' in line]
    short_ticks = [r for r in ticks if r["pid"] == short_pid]
    assert len(short_ticks) == 1, [(r["t"], r["pid"]) for r in ticks]  # listed in one tick only
    p = run(["usage", "--since", "1h", "--by", "job", "--json"], db)
    assert p.returncode == 0, p.stderr
    rows = {r["key"]: r for r in json.loads(p.stdout)["rows"]}
    assert set(rows) == {"slurm:" + j for j in JOBS}, rows
    assert rows["slurm:" + JOBS[1]]["processes"] == 1
    assert rows["slurm:" + JOBS[1]]["first_unix_ms"] == rows["slurm:" + JOBS[1]]["last_unix_ms"]
    p = run(["usage", "--since", "1h", "--by", "user", "--json"], db)
    rows = json.loads(p.stdout)["rows"]  # the user is known too: one row, this test's user, both processes
    assert [(r["key"], r["processes"]) for r in rows] == [(pwd.getpwuid(os.geteuid()).pw_name, 2)], rows


def key_cells(out, width):
    """The first `width` columns of each table row (after the header lines), stripped."""
    lines = out.replace("\r", "").splitlines()
    head = next(i for i, line in enumerate(lines) if "HELD h" in line)
    return [line[:width].rstrip() for line in lines[head + 1:] if line.strip()]


def test_a_narrow_terminal_cuts_keys_from_the_middle(recorded):
    db, _, scenario = recorded
    # 20 columns leave the key its minimum, 8: the first third and the last two thirds of the id
    rc, out = run_on_pty(["usage", "--db", str(db), "--since", "1h", "--by", "job"], scenario, 20)
    assert rc == 0, out
    keys = ["slurm:" + j for j in JOBS]
    want = sorted(k[:2] + "\u2026" + k[-5:] for k in keys)
    assert sorted(c for c in key_cells(out, 8) if c.startswith("sl")) == want, out
    # --by gpu at 80 columns: the UUIDs differ in their tails, which the cut keeps
    rc, out = run_on_pty(["usage", "--db", str(db), "--since", "1h", "--by", "gpu"], scenario, 80)
    assert rc == 0, out
    lines = [line for line in out.replace("\r", "").splitlines() if line.startswith(("0 GPU-", "1 GPU-"))]
    assert len(lines) == 2 and all(len(line) <= 80 for line in lines), out
    for i in (0, 1):
        row = next(line for line in lines if line.startswith(f"{i} GPU-"))
        assert "\u2026" in row and UUID.format(i)[-12:] in row, out


def test_option_errors_name_the_command_the_path_and_the_grammar(tmp_path):
    db = tmp_path / "none" / "missing.db"
    zh = env(LANG="zh_CN.UTF-8", TRAINMON_LANG="zh_CN")
    p = run(["usage", "--since", "1y"], db, env=zh)
    assert p.returncode == 2, p.stderr
    # the duration grammar's own sentence (core/duration.h), translated, and the times besides -2h
    assert p.stderr.startswith("trainmon usage: --since 需要形如 0.5、500ms、90s、30m、12h、2d 的时长"), p.stderr
    assert "2026-12-01T00:00:00Z" in p.stderr and "all" in p.stderr and "'1y'" in p.stderr, p.stderr
    p = run(["usage", "--until", "1y"], db, env=env(LANG="C"))
    assert p.returncode == 2 and p.stderr.startswith(
        "trainmon usage: --until wants a duration such as 0.5, 500ms, 90s, 30m, 12h, 2d"), p.stderr
    p = run(["usage", "--by"], db)
    assert p.returncode == 2 and p.stderr.startswith("trainmon usage: --by"), p.stderr
    p = run(["usage", "--json"], db)
    assert p.returncode == 0 and json.loads(p.stdout)["rows"] == [], p.stderr
    assert p.stderr.startswith("trainmon usage: ") and str(db) in p.stderr, p.stderr
