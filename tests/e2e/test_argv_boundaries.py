# SPDX-License-Identifier: Apache-2.0
"""Machine-readable command lines keep argv as argv (docs/status-json.md): an argument holding a
blank, a tab, a newline, nothing at all or invalid UTF-8 stays one element of `full_command`, in
`status --json` (GPU processes and --all-processes), as psutil and gpustat keep it; a run's command
in the store too. Each case is a real process with that argv."""

import json
import os
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_run_helpers import PY, env, runs_json, tm_run, trainmon_bin  # noqa: E402

SLEEP = "import time; time.sleep(60)"
CASES = {
    "blank": ["a b", "c"],
    "newline": ["line1\nline2", "--x=1"],
    "tab-and-empty": ["\t", "", "z"],
    "quotes": ["it's", '"q"', "$HOME", "a\\b"],
    "utf8": ["数据 集", "ü"],
    "invalid-utf8": [b"\xff\xfe x", b"ok"],
}


def expected(args):
    return [a.decode("utf-8", "replace") if isinstance(a, bytes) else a for a in args]


@pytest.mark.parametrize("name", list(CASES))
def test_status_json_keeps_argv(name):
    extra = CASES[name]
    argv = [PY.encode(), b"-c", SLEEP.encode()] + [a if isinstance(a, bytes) else a.encode() for a in extra]
    proc = subprocess.Popen(argv)  # ours: ended below
    try:
        p = subprocess.run([trainmon_bin(), "status", "--json", "--all-processes"],
                           env=env("d9-ghost-process.json", TRAINMON_TEST_PID=proc.pid),
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        doc = json.loads(p.stdout)
    finally:
        proc.kill()
        proc.wait()
    want = [PY, "-c", SLEEP] + expected(extra)
    on_gpu = [q for g in doc["gpus"] for q in g["processes"] if q["pid"] == proc.pid]
    assert on_gpu and on_gpu[0]["full_command"] == want, on_gpu
    assert on_gpu[0]["command"] == "python3"
    host = [q for q in doc["host_processes"] if q["pid"] == proc.pid]
    assert host and host[0]["full_command"] == want, host


REWRITE = """
import os, time
f = open("/proc/self/stat").read()
fields = f[f.rindex(")") + 2:].split()
start, end = int(fields[45]), int(fields[46])  # arg_start, arg_end (fields 48, 49)
title = b"trainer: rank 0 of 8"
with open("/proc/self/mem", "r+b", buffering=0) as m:  # what setproctitle does to argv
    m.seek(start)
    m.write(title + b"\\0" * (end - start - len(title)))
open(os.environ["READY"], "w").write("1")
time.sleep(60)
"""


def host_entry(pid, scenario_pid=None):
    p = subprocess.run([trainmon_bin(), "status", "--json", "--all-processes"],
                       env=env("d9-ghost-process.json", TRAINMON_TEST_PID=scenario_pid or pid),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return [q for q in json.loads(p.stdout)["host_processes"] if q["pid"] == pid]


def test_a_rewritten_argv_is_split_at_blanks_as_psutil_does(tmp_path):
    ready = tmp_path / "ready"
    proc = subprocess.Popen([PY, "-c", REWRITE, "x" * 64], env=dict(os.environ, READY=str(ready)))
    try:
        for _ in range(100):
            if ready.exists():
                break
            time.sleep(0.05)
        host = host_entry(proc.pid)
    finally:
        proc.kill()
        proc.wait()
    assert host and host[0]["full_command"] == ["trainer:", "rank", "0", "of", "8"], host


def test_an_argv0_with_blanks_stays_one_element():
    # `exec -a NAME`: argv[0] holds blanks, and a second argument follows: argv, not a title
    proc = subprocess.Popen(["bash", "-c", 'exec -a "my trainer" sleep 60'])
    try:
        for _ in range(100):
            host = host_entry(proc.pid)
            if host and host[0]["full_command"][0] != "bash":
                break
            time.sleep(0.05)
    finally:
        proc.kill()
        proc.wait()
    assert host and host[0]["full_command"] == ["my trainer", "60"], host


def test_a_runs_command_keeps_argv(tmp_path):
    db = tmp_path / "t.db"
    cmd = ["sh", "-c", 'test "$1" = "a b" && test "$2" = "c\nd"', "sh", "a b", "c\nd"]
    p = tm_run(db, cmd, "--no-report", "-q")
    assert p.returncode == 0, p.stderr
    assert runs_json(db)[0]["command"] == cmd
