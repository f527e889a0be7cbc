# SPDX-License-Identifier: Apache-2.0
"""`trainmon record`: the whole machine until SIGTERM, closed cleanly; retention."""

import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_run_helpers import env, export_jsonl, kill_quietly, run, runs_json, trainmon_bin, wait_for  # noqa: E402


def test_record_until_sigterm_then_closed(tmp_path):
    db = tmp_path / "t.db"
    proc = subprocess.Popen([trainmon_bin(), "record", "--db", str(db), "--interval", "0.2", "--retention", "30d"],
                            env=env("ddp-8gpu-healthy.json"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        def enough():
            if not db.exists():
                return False
            r = run(["export", "last", "--format", "jsonl"], db)
            return r.returncode == 0 and r.stdout.count('"series":"gpu"') >= 16
        assert wait_for(enough, 60)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        kill_quietly(proc)
    assert proc.returncode == 0, err
    assert "recording stopped by SIGTERM" in err
    [r] = runs_json(db)
    assert r["kind"] == "record" and r["status"] == "stopped" and r["end_unix_s"] is not None
    assert len(r["gpus"]) == 8
    rows = export_jsonl(db)
    assert {x["gpu"] for x in rows if x["series"] == "gpu"} == set(range(8))


def test_record_duration_option(tmp_path):
    db = tmp_path / "t.db"
    p = subprocess.run([trainmon_bin(), "record", "--db", str(db), "--interval", "0.2", "--duration", "1", "-q"],
                       env=env(), capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    [r] = runs_json(db)
    assert r["status"] == "stopped" and r["summary"]["ticks"] >= 4


def test_record_stores_what_it_found(tmp_path):
    # d10: Xid 48 at 5 s and volatile uncorrected ECC errors from 6 s. The live diagnosis of `record`
    # sees them; they are stored with the run (runs, show and reports list them) and printed at the end.
    db = tmp_path / "t.db"
    p = subprocess.run([trainmon_bin(), "record", "--db", str(db), "--interval", "0.5", "--duration", "10"],
                       env=env("d10-ecc-errors.json"), capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    [r] = runs_json(db)
    assert r["finding_count"] >= 2, p.stderr
    assert "[critical] D13 xid-error" in p.stderr and "[critical] D10 ecc-errors" in p.stderr
    d = run(["diagnose", "last", "--json"], db)
    assert d.returncode == 0, d.stderr
