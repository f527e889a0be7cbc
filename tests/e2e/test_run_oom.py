# SPDX-License-Identifier: Apache-2.0
"""A command that allocates until its cgroup's memory limit (64 MiB) makes the kernel kill it is
reported as an OOM kill, from the cgroup's oom_kill count. Needs a writable cgroup (we run as root
in CI): a cgroup v2 child under /sys/fs/cgroup, a v1 memory cgroup, or `systemd-run --scope`."""

import json
import os
import sys
import uuid

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_run_helpers import PY, run, runs_json, tm_run  # noqa: E402

LIMIT = 64 << 20
ALLOC = (
    "import time\n"
    "blocks = []\n"
    "for i in range(1600):\n"          # up to 1.6 GiB, 1 MiB every 20 ms (the limit in ~1.3 s)
    "    blocks.append(bytearray(b'x') * (1 << 20))\n"
    "    time.sleep(0.02)\n"
    "print('survived')\n")


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def make_cgroup(limit=LIMIT):
    """(directory, cleanup) of a fresh memory cgroup limited to `limit` bytes, or pytest.skip with why."""
    name = f"trainmon-test-{uuid.uuid4().hex[:8]}"
    tried = []
    # cgroup v2: the unified hierarchy at /sys/fs/cgroup (or /sys/fs/cgroup/unified with the memory controller)
    for root in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
        if not os.path.exists(os.path.join(root, "cgroup.controllers")):
            continue
        with open(os.path.join(root, "cgroup.controllers")) as f:
            if "memory" not in f.read().split():
                tried.append(f"{root}: no memory controller")
                continue
        d = os.path.join(root, name)
        try:
            os.mkdir(d)
            _write(os.path.join(d, "memory.max"), str(limit))
            if os.path.exists(os.path.join(d, "memory.swap.max")):
                _write(os.path.join(d, "memory.swap.max"), "0")
            return d, lambda: os.rmdir(d)
        except OSError as e:
            tried.append(f"{d}: {e}")
    # cgroup v1 memory controller
    v1 = "/sys/fs/cgroup/memory"
    if os.path.isdir(v1):
        d = os.path.join(v1, name)
        try:
            os.mkdir(d)
            _write(os.path.join(d, "memory.limit_in_bytes"), str(limit))
            if os.path.exists(os.path.join(d, "memory.memsw.limit_in_bytes")):
                _write(os.path.join(d, "memory.memsw.limit_in_bytes"), str(limit))
            return d, lambda: os.rmdir(d)
        except OSError as e:
            tried.append(f"{d}: {e}")
    # (`systemd-run --scope -p MemoryMax=64M` would be a third way, but needs systemd as PID 1, which
    # CI containers do not have.)
    pytest.skip("no writable memory cgroup: " + "; ".join(tried or ["no cgroup mount found"]))


def test_oom_kill_is_reported(tmp_path):
    cg, cleanup = make_cgroup()
    try:
        # The command moves itself into the limited cgroup, then becomes the allocating Python.
        cmd = ["sh", "-c", f"echo $$ > {cg}/cgroup.procs && exec {PY} -c \"$0\"", ALLOC]
        p = tm_run(tmp_path / "t.db", cmd, timeout=300)
    finally:
        try:
            cleanup()
        except OSError:
            pass
    assert "survived" not in p.stdout, "the cgroup limit was not enforced"
    assert p.returncode == 137, p.stderr
    assert "killed by the kernel OOM killer at 00:00:" in p.stderr, p.stderr
    assert "the job's RSS was" in p.stderr
    # The limit is read and shown, and the kill is explained with it, not with the host's memory.
    path = "/" + os.path.basename(cg)
    limit_file = "memory.max" if os.path.exists(os.path.join(os.path.dirname(cg), "cgroup.controllers")) \
        else "memory.limit_in_bytes"
    limit = f"memory 64.0 MiB ({limit_file} of {path})"
    assert f"trainmon: the job's cgroup limits it to {limit}" in p.stderr, p.stderr
    assert f"  cgroup limits: {limit}" in p.stderr, p.stderr
    assert (f"the job's memory cgroup reached its limit of 64.0 MiB ({limit_file} of cgroup {path}), "
            "not the host's memory") in p.stderr, p.stderr
    [r] = runs_json(tmp_path / "t.db")
    assert r["status"] == "oom_killed" and r["exit_signal"] == 9 and r["exit_code"] == 137
    assert r["summary"]["cgroup"]["memory_limit_bytes"] == LIMIT, r["summary"]
    assert r["summary"]["oom_at_cgroup_limit"] is True, r["summary"]
    show = run(["show", "last"], tmp_path / "t.db")
    assert "oom_killed" in show.stdout
    assert f"  cgroup:   {limit} (the OOM kill was at this memory limit)" in show.stdout, show.stdout
    # The diagnosis (from the store) names the limit too, and does not blame the host's RAM.
    d = run(["diagnose", "last", "--json"], tmp_path / "t.db")
    assert d.returncode == 0, d.stderr
    [d20] = [f for f in json.loads(d.stdout) if f["code"] == "D20"]
    assert "at its memory cgroup's limit of 64 MiB" in d20["evidence"], d20
    assert d20["numbers"]["cgroup_memory_limit_mib"] == 64, d20
    assert "Host RAM ran out" not in d20["advice"], d20
