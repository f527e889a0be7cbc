# SPDX-License-Identifier: Apache-2.0
"""Shared helpers for the tests/e2e/test_run_*.py tests (imported, not collected: no tests here)."""

import json
import os
import signal
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("TRAINMON_SOURCE_DIR", os.path.dirname(os.path.dirname(HERE)))
PY = "/usr/bin/python3"


def trainmon_bin():
    b = os.environ.get("TRAINMON_BIN")
    if not b:
        import pytest
        pytest.skip("TRAINMON_BIN is not set (run under ctest)")
    return b


def env(scenario="healthy-1gpu.json", **extra):
    """The environment for trainmon with the fake driver playing `scenario`."""
    e = dict(os.environ)
    fake = os.environ.get("TRAINMON_FAKE_NVML_PATH")
    scen_dir = os.environ.get("TRAINMON_SCENARIOS_DIR", os.path.join(SOURCE_DIR, "tests", "scenarios"))
    if fake:
        e["TRAINMON_NVML_LIBRARY"] = fake
    e["TRAINMON_FAKE_NVML_SCENARIO"] = os.path.join(scen_dir, scenario)
    e.pop("TRAINMON_DB", None)
    e.update({k: str(v) for k, v in extra.items()})
    return e


def run(args, db, timeout=120, **kw):
    """Run trainmon with `args` on store `db`; returns the CompletedProcess."""
    e = kw.pop("env", None) or env()
    return subprocess.run([trainmon_bin()] + args[:1] + ["--db", str(db)] + args[1:], env=e,
                          capture_output=True, text=True, timeout=timeout, **kw)


def tm_run(db, command, *opts, timeout=180, scenario="healthy-1gpu.json"):
    """`trainmon run --db DB [opts] -- command`."""
    return subprocess.run([trainmon_bin(), "run", "--db", str(db), "--interval", "0.2", *opts, "--", *command],
                          env=env(scenario), capture_output=True, text=True, timeout=timeout)


def runs_json(db):
    p = run(["runs", "--json"], db)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def export_jsonl(db, which="last"):
    p = run(["export", which, "--format", "jsonl"], db)
    assert p.returncode == 0, p.stderr
    return [json.loads(line) for line in p.stdout.splitlines() if line.strip()]


def wait_for(predicate, timeout=30, step=0.1):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = predicate()
        if v:
            return v
        time.sleep(step)
    return predicate()


def kill_quietly(proc, sig=signal.SIGKILL):
    try:
        proc.send_signal(sig)
    except ProcessLookupError:
        pass


def record_while(db, e, procs, interval_s, duration_s=3):
    """`trainmon record` on store `db` for `duration_s` seconds with environment `e`, then end the
    processes `procs` that the test started for it (by pid), whatever happened. Asserts exit 0."""
    try:
        rec = subprocess.run([trainmon_bin(), "record", "--db", str(db), "--interval", str(interval_s),
                              "--duration", str(duration_s), "-q"], env=e, capture_output=True, text=True,
                             timeout=120)
        assert rec.returncode == 0, rec.stderr
    finally:
        for p in procs:
            kill_quietly(p)
            p.wait(timeout=30)
