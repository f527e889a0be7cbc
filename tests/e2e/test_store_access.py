# SPDX-License-Identifier: Apache-2.0
"""Another user reads a store they cannot write (the trainmon-record.service setup once the recorder
has stopped): readable, never called damaged, and left untouched."""

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_run_helpers import env, tm_run, trainmon_bin  # noqa: E402


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("runuser"), reason="needs root and runuser")
def test_other_user_reads_a_store_it_cannot_write():
    # pytest's tmp_path lives below a 0700 directory that another user cannot enter
    top = Path(tempfile.mkdtemp(prefix="trainmon-access-", dir="/tmp"))
    try:
        check_other_user(top)
    finally:
        shutil.rmtree(top, ignore_errors=True)


def check_other_user(top):
    shared = top / "shared"
    shared.mkdir()
    db = shared / "t.db"
    p = tm_run(db, ["sh", "-c", "exit 0"], "--no-report")
    assert p.returncode == 0, p.stderr
    assert not (shared / "t.db-wal").exists() or (shared / "t.db-wal").stat().st_size == 0
    for d in (top, shared):
        os.chmod(d, 0o755)
    os.chmod(db, 0o644)
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    e = env()
    for args in (["runs"], ["show", "last"], ["diagnose", "last"], ["report", "last", "--format", "md"]):
        r = subprocess.run(["runuser", "-u", "nobody", "--", trainmon_bin(), *args, "--db", str(db)], env=e,
                           capture_output=True, text=True, timeout=60, cwd="/")
        assert r.returncode == 0, (args, r.stderr)
        assert "sh -c" in r.stdout or "nothing found" in r.stdout or "Findings" in r.stdout, (args, r.stdout)
        assert "damaged" not in r.stderr
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    assert sorted(x.name for x in shared.iterdir()) == ["t.db"]
