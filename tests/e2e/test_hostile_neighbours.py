# SPDX-License-Identifier: Apache-2.0
"""Another local user plants links, FIFOs and folders where trainmon and the Python package keep
files in shared places (a /tmp-like sticky folder, a group folder for reports): nothing of theirs is
followed, waited on, removed or trusted. The attacker is a real second user (created with useradd
when missing) acting through runuser; the victim is this test's user. Needs root (for useradd and
runuser); skipped otherwise."""

import json
import os
import pathlib
import pwd
import re
import shutil
import signal
import stat
import subprocess
import tempfile
import time

import pytest

from test_run_helpers import PY, SOURCE_DIR, env, kill_quietly, trainmon_bin, wait_for

ATTACKER = "trainmon-mallory"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to create and act as a second user")


@pytest.fixture(scope="module")
def attacker():
    try:
        pwd.getpwnam(ATTACKER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", ATTACKER],
                       check=True, capture_output=True, timeout=60)
    return pwd.getpwnam(ATTACKER)


def as_attacker(*cmd):
    subprocess.run(["runuser", "-u", ATTACKER, "--", *cmd], check=True, capture_output=True, timeout=60)


@pytest.fixture
def tmp_path(attacker):
    """A scratch folder the attacker can reach (pytest's own is 0700 under a 0700 base)."""
    d = pathlib.Path(tempfile.mkdtemp(prefix="trainmon-neighbours-", dir="/tmp"))
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def shared(tmp_path):
    """A folder like /tmp: everyone may create entries in it, sticky."""
    d = tmp_path / "shared"
    d.mkdir()
    os.chmod(d, 0o1777)
    return d


def test_fifo_for_the_snapshot_does_not_hang_the_python_package(shared):
    # The attacker makes the victim's snapshot folder first, with a FIFO where agent.json goes.
    folder = shared / f"trainmon-{os.geteuid()}"
    as_attacker("mkdir", "-m", "0777", str(folder))
    as_attacker("mkfifo", "-m", "0666", str(folder / "agent.json"))
    as_attacker("sh", "-c", f"echo '{{\"v\": 1}}' > {folder / 'theirs.json'}")
    code = ("import sys, time; sys.path.insert(0, %r)\n"
            "from trainmon._snapshot import read_snapshot, SnapshotSource\n"
            "t = time.monotonic()\n"
            "assert read_snapshot(%r) is None\n"
            "assert read_snapshot(%r) is None, 'another user\\'s file is not trusted'\n"
            "src = SnapshotSource(start_agent=False, env={'TRAINMON_SNAPSHOT_FILE': %r})\n"
            "assert src.read() is None\n"
            "print(time.monotonic() - t)\n") % (os.path.join(SOURCE_DIR, "python"), str(folder / "agent.json"),
                                                str(folder / "theirs.json"), str(folder / "agent.json"))
    p = subprocess.run([PY, "-c", code], capture_output=True, text=True, timeout=20)
    assert p.returncode == 0, p.stderr
    assert float(p.stdout) < 2, "read_snapshot waited on the FIFO"


def test_agent_refuses_a_folder_planted_by_someone_else(shared):
    folder = shared / f"trainmon-{os.geteuid()}"
    as_attacker("mkdir", "-m", "0777", str(folder))
    p = subprocess.run([trainmon_bin(), "agent", "--snapshot-file", str(folder / "agent.json"), "--count", "1"],
                       env=env(), capture_output=True, text=True, timeout=30)
    assert p.returncode == 1
    assert "belongs to another user" in p.stderr, p.stderr
    assert not (folder / "agent.json").exists()
    # A link in the folder's place, to a folder of the victim's own: refused too, nothing written there.
    mine = shared / "victims-own"
    mine.mkdir(mode=0o700)
    link = shared / "trainmon-link"
    as_attacker("ln", "-s", str(mine), str(link))
    p = subprocess.run([trainmon_bin(), "agent", "--snapshot-file", str(link / "agent.json"), "--count", "1"],
                       env=env(), capture_output=True, text=True, timeout=30)
    assert p.returncode == 1 and "symbolic link" in p.stderr, p.stderr
    assert list(mine.iterdir()) == []


def test_run_folders_of_others_and_planted_links_are_left_alone(shared, tmp_path):
    # The attacker's own run folder, and a link under a run folder's name to a folder of the victim.
    as_attacker("mkdir", "-m", "0700", str(shared / "trainmon-run-AAAAAA"))
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "keep").write_text("x")
    as_attacker("ln", "-s", str(precious), str(shared / "trainmon-run-BBBBBB"))
    e = env(TMPDIR=str(shared))
    e.pop("XDG_RUNTIME_DIR", None)
    # A recorder killed with SIGKILL leaves its folder; the next run removes it.
    err = tmp_path / "killed.err"
    killed = subprocess.Popen([trainmon_bin(), "run", "--db", str(tmp_path / "k.db"), "--no-report", "--",
                               "sleep", "60"], env=e, stdout=subprocess.DEVNULL, stderr=open(err, "w"))
    mine = lambda x: x.name.startswith("trainmon-run-") and not x.is_symlink() and x.stat().st_uid == os.geteuid()
    left = wait_for(lambda: [x for x in shared.iterdir() if mine(x)], timeout=30)
    assert left, list(shared.iterdir())
    job = int(wait_for(lambda: re.search(r"watching pid (\d+)", err.read_text()), timeout=30).group(1))
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    try:
        os.kill(job, signal.SIGKILL)  # the job it started (by its pid)
    except ProcessLookupError:
        pass
    assert all(x.exists() for x in left)
    p = subprocess.run([trainmon_bin(), "run", "--db", str(tmp_path / "n.db"), "-q", "--no-report", "--", "true"],
                       env=e, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert not any(x.exists() for x in left), "the killed recorder's folder was not cleaned up"
    assert (shared / "trainmon-run-AAAAAA").is_dir(), "another user's folder was touched"
    assert (shared / "trainmon-run-BBBBBB").is_symlink()
    assert (precious / "keep").read_text() == "x", "a planted link was followed"
    assert not [x for x in shared.iterdir() if mine(x)]


def test_report_in_a_shared_folder_replaces_a_planted_link(tmp_path):
    group = tmp_path / "reports"
    group.mkdir()
    os.chmod(group, 0o777)  # a team folder without the sticky bit
    secret = tmp_path / "secret"
    secret.write_text("do not overwrite")
    db = tmp_path / "r.db"
    p = subprocess.run([trainmon_bin(), "run", "--db", str(db), "--interval", "0.2", "-q", "--no-report", "--",
                        "sleep", "0.5"], env=env(), capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    target = group / "run.html"
    as_attacker("ln", "-s", str(secret), str(target))
    p = subprocess.run([trainmon_bin(), "report", "last", "--db", str(db), "-o", str(target)], env=env(),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert secret.read_text() == "do not overwrite"
    assert not target.is_symlink() and target.stat().st_uid == os.geteuid()
    assert target.read_text().startswith("<!DOCTYPE html>")
    assert not [x for x in group.iterdir() if x.name.startswith(".")], "a temporary file was left"
