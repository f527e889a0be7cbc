# SPDX-License-Identifier: Apache-2.0
"""A reader that goes away (`trainmon dmon | head -1`) ends trainmon quietly with status 0, for every
command that writes to stdout, one-shot or looping: no SIGPIPE death (status 141 in a shell), no
message. The reader's end of the pipe is closed before trainmon starts, so its first write fails
with EPIPE every time (no race with a reader that exits late)."""

import os
import subprocess

import pytest

from test_run_helpers import PY, env, trainmon_bin


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    d = tmp_path_factory.mktemp("pipe") / "p.db"
    p = subprocess.run([trainmon_bin(), "run", "--db", str(d), "--interval", "0.1", "-q", "--no-report", "--",
                        PY, "-c", "import time; time.sleep(1)"], env=env(), capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return str(d)


def into_closed_pipe(args, timeout=60):
    r, w = os.pipe()
    os.close(r)  # nobody will ever read
    try:
        p = subprocess.run([trainmon_bin(), *args], env=env(), stdout=w, stderr=subprocess.PIPE,
                           stdin=subprocess.DEVNULL, timeout=timeout)
    finally:
        os.close(w)
    return p


CASES = [
    ["dmon"], ["dmon", "-c", "5"], ["pmon"], ["dmon", "--csv"], ["pmon", "--json"],
    ["status"], ["status", "--json"], ["status", "-i", "0.2"],
    ["query", "--query-gpu=index,name", "--format=csv"], ["query", "--query-gpu=index", "--format=csv", "-l", "1"],
    ["query", "--query-compute-apps=pid", "--format=csv", "--lms", "200"],
    ["--help"], ["--version"], ["query", "--help-query-gpu"],
    # top without a terminal (stdin is /dev/null): the `status -i` text every interval
    ["top"], ["top", "-i", "0.1"], ["top", "-n", "5"], ["top", "--ascii", "-i", "0.2"],
    ["status", "-i", "0.2", "--json"], ["pmon", "-c", "3"], ["dmon", "--format", "csv,noheader"],
]


@pytest.mark.parametrize("args", CASES, ids=lambda a: " ".join(a))
def test_live_views_end_quietly(args):
    p = into_closed_pipe(args)
    assert p.returncode == 0, (p.returncode, p.stderr)
    assert p.stderr == b"", p.stderr


@pytest.mark.parametrize("args", [["runs"], ["runs", "--json"], ["show", "last"], ["show", "last", "--json"],
                                  ["export", "last"], ["export", "last", "--format", "csv"],
                                  ["diagnose", "last"], ["report", "last", "--format", "md"]],
                         ids=lambda a: " ".join(a))
def test_store_views_end_quietly(db, args):
    p = into_closed_pipe(args + ["--db", db])
    assert p.returncode == 0, (p.returncode, p.stderr)
    assert p.stderr == b"", p.stderr


LOOPING = [["top", "-i", "0.2"], ["top", "--ascii"], ["status", "-i", "0.2"], ["status", "-i", "0.2", "--json"],
           ["dmon"], ["dmon", "--json"], ["pmon"], ["query", "--query-gpu=index,name", "--format=csv", "-l", "1"],
           ["query", "--query-gpu=index", "--format=csv,noheader", "--lms", "200"]]


@pytest.mark.parametrize("args", LOOPING, ids=lambda a: " ".join(a))
def test_looping_views_end_when_the_reader_leaves_later(args):
    # `trainmon top | head -1`: the reader takes the first line, then goes; the next write ends the
    # loop quietly, status 0, within an interval or two.
    p = subprocess.Popen([trainmon_bin(), *args], env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL)
    try:
        assert p.stdout.readline(), "nothing written"
        p.stdout.close()
        rc = p.wait(timeout=30)
        err = p.stderr.read()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert rc == 0, (rc, err)
    assert err == b"", err


def test_top_of_a_cluster_ends_when_the_reader_leaves():
    # --prometheus without a terminal: an unreachable server is said on stderr every tick, and the
    # closed pipe still ends the loop with status 0 (the reader leaving is no failure of ours).
    p = into_closed_pipe(["top", "--prometheus", "http://127.0.0.1:9", "--timeout", "0.2", "-i", "0.1"])
    assert p.returncode == 0, (p.returncode, p.stderr)
    assert b"Broken pipe" not in p.stderr and b"trainmon top: " in p.stderr, p.stderr


def test_a_full_disk_is_still_an_error(tmp_path):
    # /dev/full: every write fails with ENOSPC. That is a failure, said once, status 1.
    with open("/dev/full", "wb") as full:
        p = subprocess.run([trainmon_bin(), "query", "--query-gpu=index,name", "--format=csv"], env=env(),
                           stdout=full, stderr=subprocess.PIPE, timeout=60)
    assert p.returncode == 1, p
    assert b"No space left on device" in p.stderr, p.stderr


def test_the_job_of_run_keeps_the_default_sigpipe(tmp_path):
    # trainmon catches SIGPIPE for itself; the command it runs must get the default disposition back
    # (`yes | head -1` inside a job ends by SIGPIPE as it would without trainmon).
    p = subprocess.run([trainmon_bin(), "run", "--db", str(tmp_path / "j.db"), "-q", "--no-report", "--", "sh", "-c",
                        "yes | head -1 >/dev/null; grep SigIgn /proc/self/status"], env=env(),
                       capture_output=True, text=True, timeout=60)
    ign = int(p.stdout.split()[-1], 16)
    assert not ign & (1 << (13 - 1)), p.stdout  # SIGPIPE (13) not ignored in the job
