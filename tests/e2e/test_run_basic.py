# SPDX-License-Identifier: Apache-2.0
"""`trainmon run` end to end with the fake NVML driver: exit statuses, signal forwarding, the
recorded run as `runs`, `show` and `export` see it, the child's children attributed to the run,
readers during a recording, a SIGKILLed recorder, and a damaged store."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_run_helpers import PY, env, export_jsonl, kill_quietly, run, runs_json, tm_run, trainmon_bin, wait_for  # noqa: E402


def test_exit_status_propagates_and_is_recorded(tmp_path):
    db = tmp_path / "t.db"
    assert tm_run(db, ["sh", "-c", "exit 0"]).returncode == 0
    assert tm_run(db, ["sh", "-c", "exit 3"]).returncode == 3
    p = tm_run(db, ["sh", "-c", "kill -TERM $$"])
    assert p.returncode == 143, p.stderr
    assert "killed by SIGTERM" in p.stderr
    runs = runs_json(db)
    assert [r["exit_code"] for r in runs] == [143, 3, 0]  # newest first
    assert runs[0]["status"] == "signaled" and runs[0]["exit_signal"] == 15
    assert runs[1]["status"] == "exited"
    assert runs[2]["command"] == ["sh", "-c", "exit 0"]


def test_missing_command_is_127(tmp_path):
    p = tm_run(tmp_path / "t.db", ["/nonexistent/no-such-program"])
    assert p.returncode == 127
    assert "no-such-program" in p.stderr


def test_no_driver_says_why_and_the_command_still_runs(tmp_path):
    # No NVML: the job runs and is recorded (host and processes), and the reason GPUs are not
    # monitored is said once, at the start, not only "no GPU seen" at the end.
    for args in (["run", "--db", str(tmp_path / "r.db"), "--no-report", "--", "sh", "-c", "exit 4"],
                 ["record", "--db", str(tmp_path / "s.db"), "--duration", "1"]):
        p = subprocess.run([trainmon_bin(), *args], env=env(TRAINMON_NVML_LIBRARY=str(tmp_path / "none.so")),
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == (4 if args[0] == "run" else 0), p.stderr
        assert p.stderr.count("GPUs not monitored: NVML library not loaded") == 1, p.stderr
        assert "none.so" in p.stderr and "no GPU seen" in p.stderr


def test_sigint_is_forwarded_to_the_command(tmp_path):
    ready = tmp_path / "ready"
    got = tmp_path / "got"
    script = (
        "import signal, sys, time, pathlib\n"
        f"def h(s, f):\n    pathlib.Path({str(got)!r}).write_text(str(s)); sys.exit(7)\n"
        "signal.signal(signal.SIGINT, h)\n"
        f"pathlib.Path({str(ready)!r}).write_text('1')\n"
        "time.sleep(60)\n")
    proc = subprocess.Popen([trainmon_bin(), "run", "--db", str(tmp_path / "t.db"), "--interval", "0.2", "--",
                             PY, "-c", script], env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert wait_for(ready.exists, 30), "the command did not start"
        proc.send_signal(signal.SIGINT)  # from another process: trainmon must pass it on
        out, err = proc.communicate(timeout=30)
    finally:
        kill_quietly(proc)
    assert proc.returncode == 7, err
    assert got.read_text() == str(int(signal.SIGINT))  # exactly one SIGINT reached the handler path


def test_run_is_recorded_and_readable(tmp_path):
    db = tmp_path / "t.db"
    p = tm_run(db, [PY, "-c", "import time; time.sleep(1.5)"], "--name", "smoke", "--label", "team=vision",
               "--print-every", "0.5")
    assert p.returncode == 0, p.stderr
    assert "Resource @ 00:00:0" in p.stderr
    assert "GPU0(" in p.stderr and "| Mem: " in p.stderr and "| RSS: " in p.stderr
    assert "run id: 1" in p.stderr

    [r] = runs_json(db)
    assert r["name"] == "smoke" and r["status"] == "exited" and r["exit_code"] == 0
    assert r["labels"]["team"] == "vision"
    assert len(r["gpus"]) == 1 and r["gpus"][0]["uuid"].startswith("GPU-")
    assert 1.0 < r["duration_s"] < 60

    show = run(["show", "smoke", "--json"], db)
    assert show.returncode == 0, show.stderr
    s = json.loads(show.stdout)
    assert s["id"] == r["id"]
    summary = s["summary"]
    assert summary["ticks"] >= 5
    assert summary["gpus"][0]["mean_utilization_pct"] is not None
    assert summary["peak_job_rss_bytes"] > 1 << 20
    text = run(["show", "last"], db)
    assert text.returncode == 0 and "status:   exited (exit status 0)" in text.stdout

    rows = export_jsonl(db)
    gpu = [x for x in rows if x["series"] == "gpu"]
    host = [x for x in rows if x["series"] == "host"]
    procs = [x for x in rows if x["series"] == "process"]
    assert len(gpu) >= 5 and len(host) >= 5
    assert all(x["gpu"] == 0 for x in gpu)
    assert gpu[-1]["memory_total_bytes"] > 0 and gpu[-1]["utilization_gpu_pct"] is not None
    assert host[-1]["memory_total_bytes"] > 0
    assert any(x["comm"].startswith("python") and x["in_job"] and x["rss_bytes"] > 1 << 20 for x in procs)

    # --series picks one kind in JSON Lines too (it used to be ignored)
    for kind, expect in (("host", host), ("gpu", gpu)):
        sel = run(["export", "1", "--format", "jsonl", "--series", kind], db)
        assert sel.returncode == 0, sel.stderr
        assert [json.loads(line) for line in sel.stdout.splitlines()] == expect
    sel = run(["export", "1", "--format", "jsonl", "--series", "hosts"], db)
    assert sel.returncode == 2 and "unknown series 'hosts'" in sel.stderr

    out = tmp_path / "gpu.csv"
    csv = run(["export", "1", "--format", "csv", "-o", str(out)], db)
    assert csv.returncode == 0, csv.stderr
    lines = out.read_text().splitlines()
    assert lines[0].startswith("time_unix_s,gpu,pid,comm,aggregated,responsive,memory_total_bytes")
    assert len(lines) == len(gpu) + 1

    assert run(["rm", "smoke"], db).returncode == 0
    assert runs_json(db) == []
    assert run(["show", "smoke"], db).returncode == 2


def test_children_of_the_command_are_attributed(tmp_path):
    db = tmp_path / "t.db"
    cmd = ["bash", "-c", f"sleep 3 & {PY} -c 'x=bytearray(50<<20); import time; time.sleep(3)'; wait"]
    p = tm_run(db, cmd)
    assert p.returncode == 0, p.stderr
    rows = export_jsonl(db)
    procs = [x for x in rows if x["series"] == "process" and x["in_job"]]
    comms = {x["comm"] for x in procs}
    assert {"bash", "sleep"} <= comms and any(c.startswith("python") for c in comms), comms
    py_rss = max(x["rss_bytes"] or 0 for x in procs if x["comm"].startswith("python"))
    assert py_rss >= 50 << 20
    [r] = runs_json(db)
    assert r["summary"]["peak_job_rss_bytes"] >= py_rss
    assert r["summary"]["peak_job_processes"] >= 3


def test_readers_work_while_recording(tmp_path):
    db = tmp_path / "t.db"
    proc = subprocess.Popen([trainmon_bin(), "run", "--db", str(db), "--interval", "0.2", "--", "sleep", "4"],
                            env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        def live_rows():
            if not db.exists():
                return None
            r = run(["export", "last", "--format", "jsonl"], db)
            return r.returncode == 0 and sum('"series":"gpu"' in line for line in r.stdout.splitlines()) >= 3
        assert wait_for(live_rows, 30)
        [r] = runs_json(db)
        assert r["status"] == "running" and r["end_unix_s"] is None
        # a run still recording lasts up to now, not 0.0 s
        assert r["duration_until"] == "now" and 0.2 < r["duration_s"] < time.time() - r["start_unix_s"] + 1
        assert "so far (still recording)" in run(["show", "last"], db).stdout
        md = run(["report", "last", "--format", "md", "-o", "-"], db)
        assert md.returncode == 0 and "so far (still recording)" in md.stdout, md.stderr
        proc.wait(timeout=60)
    finally:
        kill_quietly(proc)
    assert proc.returncode == 0
    assert runs_json(db)[0]["status"] == "exited"


def test_sigkill_of_the_recorder_leaves_a_readable_store(tmp_path):
    db = tmp_path / "t.db"
    proc = subprocess.Popen([trainmon_bin(), "run", "--db", str(db), "--interval", "0.2", "--", "sleep", "30"],
                            env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sleeper = None
    try:
        def gpu_rows():
            if not db.exists():
                return 0
            r = run(["export", "last", "--format", "jsonl"], db)
            return r.returncode == 0 and [json.loads(x) for x in r.stdout.splitlines()]
        rows = wait_for(lambda: (lambda v: v if v and sum(x["series"] == "gpu" for x in v) >= 5 else None)(gpu_rows()), 30)
        assert rows
        sleeper = next(x["pid"] for x in rows if x["series"] == "process" and x["comm"] == "sleep")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        kill_quietly(proc)
        if sleeper:
            try:
                os.kill(sleeper, signal.SIGKILL)
            except ProcessLookupError:
                pass
    con = sqlite3.connect(str(db))
    assert con.execute("PRAGMA quick_check").fetchone()[0] == "ok"
    con.close()
    [r] = runs_json(db)
    assert r["status"] == "lost"
    after = export_jsonl(db)
    assert sum(x["series"] == "gpu" for x in after) >= 5
    # a lost run lasts up to its last stored sample (it said 0.0 s)
    last_t = max(x["t"] for x in after if "series" in x)
    assert r["duration_until"] == "last_sample"
    assert abs(r["duration_s"] - (last_t - r["start_unix_s"])) < 0.01, (r, last_t)
    assert r["duration_s"] >= 0.6
    assert "up to the last stored sample" in run(["show", "last"], db).stdout
    table = run(["runs"], db).stdout.splitlines()[1]
    assert "lost" in table and "s+ " in table, table


def test_damaged_store_is_refused_and_left_untouched(tmp_path):
    db = tmp_path / "t.db"
    garbage = bytes((i * 7919) % 251 for i in range(8192))
    db.write_bytes(garbage)
    for args in (["runs"], ["show", "last"], ["export", "last"], ["rm", "1"]):
        p = run(args, db)
        assert p.returncode == 1, (args, p.stdout, p.stderr)
        assert "not a trainmon run store" in p.stderr and "left untouched" in p.stderr
    # `run` warns, does not record, and still runs the command with its own status
    p = tm_run(db, ["sh", "-c", "exit 4"])
    assert p.returncode == 4
    assert "not recording" in p.stderr
    rec = subprocess.run([trainmon_bin(), "record", "--db", str(db), "--duration", "1"], env=env(),
                         capture_output=True, text=True, timeout=60)
    assert rec.returncode == 1
    assert db.read_bytes() == garbage
    assert not (tmp_path / "t.db-wal").exists()



def test_another_programs_sqlite_database_is_refused_and_left_untouched(tmp_path):
    db = tmp_path / "other.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)")
    con.execute("INSERT INTO notes (text) VALUES ('keep me')")
    con.commit()
    con.close()
    before = db.read_bytes()
    for args in (["runs"], ["show", "last"], ["export", "last"], ["rm", "1"], ["diagnose", "last"]):
        p = run(args, db)
        assert p.returncode == 1, (args, p.stdout, p.stderr)
        assert "not a trainmon run store" in p.stderr and "left untouched" in p.stderr, (args, p.stderr)
    p = tm_run(db, ["sh", "-c", "exit 4"])
    assert p.returncode == 4 and "not a trainmon run store" in p.stderr and "not recording" in p.stderr
    assert db.read_bytes() == before
    con = sqlite3.connect(db)
    assert [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")] == ["notes"]
    con.close()


def test_an_empty_file_becomes_a_store(tmp_path):
    for make in ("zero", "sqlite"):
        db = tmp_path / f"{make}.db"
        if make == "zero":
            db.write_bytes(b"")
        else:
            con = sqlite3.connect(db)  # a SQLite file without tables (not 0 bytes)
            con.execute("CREATE TABLE t (x)")
            con.execute("DROP TABLE t")
            con.commit()
            con.close()
            assert db.stat().st_size > 0
        p = run(["runs"], db)
        assert p.returncode == 0 and "no runs" in p.stdout, p.stderr
        assert "an empty database" in p.stdout and "no store" not in p.stdout, p.stdout  # it is a store
        assert "no such table" not in p.stderr
        assert tm_run(db, ["true"]).returncode == 0
        assert [r["id"] for r in runs_json(db)] == [1]


def test_unknown_or_ambiguous_run_is_a_bad_argument_everywhere(tmp_path):
    """Every command taking RUN says "no such run" the same way: status 2 (docs/recording.md);
    a store that cannot be read stays status 1."""
    db = tmp_path / "t.db"
    for _ in range(2):
        p = tm_run(db, ["true"], "--no-report", "--name", "twin")
        assert p.returncode == 0, p.stderr
    out = tmp_path / "x.out"
    for args in (["diagnose"], ["report", "--format", "md"], ["report"], ["show"],
                 ["export", "--format", "jsonl", "-o", str(out)], ["rm"]):
        for spec in ("999", "no-such-name", "twin"):
            r = run(args[:1] + [spec] + args[1:], db)
            assert r.returncode == 2, (args, spec, r.stderr)
            assert r.stderr.count("\n") == 1 and r.stderr.startswith(f"trainmon {args[0]}: "), (args, spec, r.stderr)
        r = run(args[:1] + ["last"] + args[1:], tmp_path / "missing.db")
        assert r.returncode == 1, (args, r.stderr)
    assert len(runs_json(db)) == 2, "rm of an unknown RUN deleted nothing"


def test_names_that_run_arguments_read_as_ids_are_refused(tmp_path):
    """`last` and integers are read as the newest run / an id by every RUN argument: refused as --name."""
    db = tmp_path / "t.db"
    for name in ("last", "1", "-3", "007"):
        p = tm_run(db, ["true"], "--no-report", "--name", name)
        assert p.returncode == 2, (name, p.stderr)
        assert f"--name '{name}'" in p.stderr and p.stderr.count("\n") == 1, p.stderr
        r = run(["record", "--name", name, "--duration", "5"], db)
        assert r.returncode == 2, (name, r.stderr)
    assert not db.exists(), "nothing was recorded"
    # A command whose default name would be such a name gets a reachable one.
    script = tmp_path / "42"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o755)
    assert tm_run(db, [str(script)], "--no-report").returncode == 0
    assert [r["name"] for r in runs_json(db)] == ["run-42"]
    assert run(["show", "run-42"], db).returncode == 0


def test_rm_resolves_every_run_first_and_deletes_the_report(tmp_path):
    db = tmp_path / "t.db"
    for _ in range(3):
        assert tm_run(db, ["true"]).returncode == 0
    report3 = tmp_path / "reports" / "t-run-3.html"
    assert report3.exists()  # trainmon run writes the report to its default location
    # An unknown RUN among several deletes nothing.
    p = run(["rm", "2", "99"], db)
    assert p.returncode == 2 and "nothing deleted" in p.stderr, p.stderr
    assert p.stdout == ""
    assert [r["id"] for r in runs_json(db)] == [3, 2, 1]
    # A run named twice is deleted once; its report at the default location goes with it.
    p = run(["rm", "3", "3", "last"], db)
    assert p.returncode == 0, p.stderr
    assert p.stdout.count("deleted run 3") == 1 and f"deleted report {report3}" in p.stdout
    assert not report3.exists() and (tmp_path / "reports" / "t-run-2.html").exists()
    assert [r["id"] for r in runs_json(db)] == [2, 1]


def test_a_command_that_handles_sigterm_gets_its_grace_period_and_is_recorded(tmp_path):
    # The job handles SIGTERM (a checkpoint) and ends by itself 3 s later, inside the default grace
    # period (30 s): run says at once where the signal went and when SIGKILL would follow, kills
    # nothing, and records to the end. (tests/e2e/test_run_stop.py: the grace running out.)
    if os.environ.get("TRAINMON_SANITIZED") == "1":
        return  # 3 s of waiting; signal forwarding itself is tested above in both passes
    ready = tmp_path / "ready"
    script = ("import signal, time, pathlib\n"
              "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
              "import os\n"
              f"pathlib.Path({str(ready)!r}).write_text(str(os.getpid()))\n"
              "time.sleep(3)\n")
    db = tmp_path / "t.db"
    proc = subprocess.Popen([trainmon_bin(), "run", "--db", str(db), "--no-report", "--interval", "0.5", "--",
                             PY, "-c", script], env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        assert wait_for(ready.exists, 30), "the command did not start"
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        kill_quietly(proc)
    assert proc.returncode == 0, err
    pid = int(ready.read_text())
    assert f"SIGTERM passed on to the job's 1 process ({pid}); what still runs in 30 s gets SIGKILL" in err, err
    assert err.index("SIGTERM passed on") < err.index("command exit status 0"), err
    assert "job stop: SIGTERM passed on to 1 process; all ended" in err, err
    assert "still ran" not in err and "SIGKILL to" not in err, err
    assert runs_json(db)[0]["status"] == "exited"
