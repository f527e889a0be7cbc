# SPDX-License-Identifier: Apache-2.0
"""A real training job (examples/train_cnn.py: torch on the CPU, DataLoader with 2 workers) under
`trainmon run` with a fake GPU: the run is recorded and the workers' RSS and CPU count for the job."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_run_helpers import PY, SOURCE_DIR, export_jsonl, runs_json, tm_run  # noqa: E402


def test_train_cnn_workers_are_attributed(tmp_path):
    try:
        import torch  # noqa: F401
    except ImportError:
        pytest.skip("python3-torch is not installed")
    db = tmp_path / "t.db"
    script = os.path.join(SOURCE_DIR, "examples", "train_cnn.py")
    p = tm_run(db, [PY, script, "--steps", "150", "--workers", "2"], "--name", "cnn", timeout=600)
    assert p.returncode == 0, p.stderr
    assert "done: 150 steps" in p.stdout
    [r] = runs_json(db)
    assert r["name"] == "cnn" and r["status"] == "exited"
    rows = export_jsonl(db)
    procs = [x for x in rows if x.get("series") == "process" and x["in_job"] and x["comm"].startswith("python")]
    pids = {x["pid"] for x in procs}
    main = [x for x in procs if x["ppid"] not in pids]
    workers = [x for x in procs if x["ppid"] in pids]
    assert main and len({x["pid"] for x in workers}) >= 2, pids
    main_rss = max(x["rss_bytes"] or 0 for x in main)
    assert r["summary"]["peak_job_rss_bytes"] > main_rss
    # each worker did real work: CPU time and its own 32 MiB cache
    for pid in {x["pid"] for x in workers}:
        mine = [x for x in workers if x["pid"] == pid]
        assert max(x["cpu_time_s"] or 0 for x in mine) > 0
        assert max(x["rss_bytes"] or 0 for x in mine) > 32 << 20
