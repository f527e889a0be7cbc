# SPDX-License-Identifier: Apache-2.0
"""trainmon inside a real child PID namespace (`unshare --pid --fork --mount-proc`, as in a
container) against the fake driver: NVML lists host pids, so a number it gives may name another
process here, or nothing. Scenario ns-foreign-pids: NS_SELF_PID (1: trainmon itself, the namespace's
init) and NS_LOCAL_PID (a local `sleep`) name other local processes; NS_HOST_PID is a host `sleep`
the namespace cannot see; 4000000 exists nowhere. In every view none of them gets a local user,
command line or RSS, none counts as the job's, none is a ghost; from the host the same scenario shows
NS_HOST_PID as visible and 4000000 as exited (D9). See include/trainmon/sampler/gpu_process_join.h.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import urllib.request

import pytest

from test_run_helpers import env, trainmon_bin, wait_for

UNSHARE = shutil.which("unshare")
NOWHERE = 4000000
SCALED = ["ghost_for_s=2", "window_s=2", "clear_s=2", "idle_holder_for_s=2"]


def _can_unshare():
    if not UNSHARE or os.geteuid() != 0:
        return False
    try:
        return subprocess.run([UNSHARE, "--pid", "--fork", "--mount-proc", "true"], capture_output=True,
                              timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


pytestmark = pytest.mark.skipif(not _can_unshare(), reason="needs root and unshare --pid --mount-proc")

# In the namespace: sh is pid 1; it starts the local sleep, says its pid, and becomes trainmon (pid 1).
PRELUDE = ('sleep 120 & export NS_LOCAL_PID=$!; export NS_SELF_PID=$$; echo "NS_LOCAL_PID=$NS_LOCAL_PID" >&2; '
           'exec "$@"')


@pytest.fixture(scope="module")
def host_sleep():
    p = subprocess.Popen(["sleep", "300"])
    yield p.pid
    p.kill()
    p.wait()


def ns_env(host_pid, **extra):
    return env("ns-foreign-pids.json", NS_HOST_PID=host_pid, **extra)


def ns_argv(*args, kill_child=False):
    opts = ["--pid", "--fork", "--mount-proc"] + (["--kill-child=SIGTERM"] if kill_child else [])
    return [UNSHARE, *opts, "/bin/sh", "-c", PRELUDE, "sh", trainmon_bin(), *args]


def in_ns(host_pid, *args, timeout=120):
    p = subprocess.run(ns_argv(*args), env=ns_env(host_pid), capture_output=True, text=True, timeout=timeout)
    m = re.search(r"NS_LOCAL_PID=(\d+)", p.stderr)
    assert m, p.stderr
    return p, int(m.group(1))


def on_host(host_pid, *args, timeout=120):
    e = ns_env(host_pid)  # NS_SELF_PID / NS_LOCAL_PID unset: the fake drops those processes
    return subprocess.run([trainmon_bin(), *args], env=e, capture_output=True, text=True, timeout=timeout)


def processes(status_doc):
    return {p["pid"]: p for g in status_doc["gpus"] for p in g["processes"]}


def assert_foreign(p):
    """A GPU process with nothing of a local process next to it."""
    assert p["username"] is None, p
    assert p["host_visibility"] == "not_visible", p
    assert p["na_reasons"]["username"] == "not_visible", p
    assert p["command"] == "python" and p["full_command"] == ["python"], p
    assert p["cpu_memory_usage"] is None and p["cpu_percent"] is None, p
    assert "host_rss_bytes" not in p and "host_state" not in p, p


def test_status_json_in_a_namespace_and_on_the_host(host_sleep):
    p, local = in_ns(host_sleep, "status", "--json")
    assert p.returncode == 0, p.stderr
    procs = processes(json.loads(p.stdout))
    assert set(procs) == {1, local, host_sleep, NOWHERE}, procs
    for pid in procs:
        assert_foreign(procs[pid])  # "exists on the host" or "nowhere": not visible from here, never gone
    # The same driver list seen from the host: the host sleep is visible, the pid that exists nowhere
    # has exited.
    h = on_host(host_sleep, "status", "--json")
    assert h.returncode == 0, h.stderr
    hp = processes(json.loads(h.stdout))
    assert set(hp) == {host_sleep, NOWHERE}, hp
    assert hp[host_sleep]["host_visibility"] == "visible"
    assert hp[host_sleep]["username"] == "root"
    assert hp[host_sleep]["full_command"] == ["sleep", "300"]
    assert hp[NOWHERE]["host_visibility"] == "exited"
    assert hp[NOWHERE]["na_reasons"]["username"] == "exited"


def test_text_views_in_a_namespace(host_sleep):
    p, local = in_ns(host_sleep, "status", "--no-header", "--no-color", "-u", "-c", "-p")
    assert p.returncode == 0, p.stderr
    line = p.stdout
    for pid in (1, local, host_sleep, NOWHERE):
        assert f"--:python/{pid}(" in line, line
    assert "root" not in line and "sleep" not in line and "trainmon" not in line, line
    q, local = in_ns(host_sleep, "query", "--query-compute-apps=pid,process_name,used_memory",
                     "--format=csv,noheader")
    assert q.returncode == 0, q.stderr
    rows = dict(r.split(", ", 1) for r in q.stdout.splitlines())
    assert rows == {"1": "python, 4096 MiB", str(local): "python, 8192 MiB", str(host_sleep): "python, 2048 MiB",
                    str(NOWHERE): "python, 1024 MiB"}, q.stdout
    m, local = in_ns(host_sleep, "pmon", "-c", "1")
    assert m.returncode == 0, m.stderr
    data = [r.split() for r in m.stdout.splitlines() if not r.startswith("#")]
    assert {int(r[1]) for r in data} == {1, local, host_sleep, NOWHERE}, m.stdout
    assert {r[-1] for r in data} == {"python"}, m.stdout


def test_serve_api_and_metrics_in_a_namespace(host_sleep, tmp_path):
    err_path = tmp_path / "serve.stderr"
    with open(err_path, "w") as err:
        proc = subprocess.Popen(ns_argv("serve", "--listen", "127.0.0.1:0", "--db", str(tmp_path / "s.db"),
                                        "--interval", "0.5", kill_child=True),
                                env=ns_env(host_sleep), stdout=subprocess.DEVNULL, stderr=err)
    try:
        def port():
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)/", err_path.read_text())
            return int(m.group(1)) if m else None
        assert wait_for(lambda: port() or proc.poll() is not None, timeout=60) and port(), err_path.read_text()
        base = f"http://127.0.0.1:{port()}"

        def get(path):
            with urllib.request.urlopen(base + path, timeout=30) as r:
                return r.read().decode()
        wait_for(lambda: json.loads(get("/api/v1/snapshot")).get("ticks", 0) >= 2, timeout=60)
        snap = json.loads(get("/api/v1/snapshot"))
        local = int(re.search(r"NS_LOCAL_PID=(\d+)", err_path.read_text()).group(1))
        procs = processes(snap["status"])
        assert set(procs) == {1, local, host_sleep, NOWHERE}
        for p in procs.values():
            assert_foreign(p)
        metrics = get("/metrics")
        comms = re.findall(r'trainmon_process_gpu_memory_bytes\{[^}]*pid="(\d+)",comm="([^"]*)"', metrics)
        assert {(int(pid), c) for pid, c in comms} == {(1, "python"), (local, "python"), (host_sleep, "python"),
                                                      (NOWHERE, "python")}, metrics
        # serve is the namespace's init, as trainmon is a container's first process: the kernel drops
        # a signal init leaves at SIG_DFL unless it is blocked (pid_namespaces(7)); trainmon blocks
        # and waits for SIGTERM (runner::prepare_signals), so `docker stop` ends it. (unshare itself
        # ignores SIGTERM while it waits: signal the init.)
        with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as f:
            [init] = [int(c) for c in f.read().split()]
        os.kill(init, signal.SIGTERM)
        assert proc.wait(timeout=15) == 0, err_path.read_text()
        assert "trainmon serve" in err_path.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()  # --kill-child: the namespace goes with it
            proc.wait(timeout=30)


def _run_args(db):
    args = ["run", "--db", str(db), "--interval", "0.5", "--no-report"]
    for t in SCALED:
        args += ["--threshold", t]
    return args + ["--", "sleep", "6"]


def _diagnose(db, host_sleep):
    args = ["diagnose", "last", "--json", "--db", str(db)]
    for t in SCALED:
        args += ["--threshold", t]
    d = on_host(host_sleep, *args)
    assert d.returncode == 0, d.stderr
    return json.loads(d.stdout)


def test_run_summary_report_and_diagnosis_in_a_namespace(host_sleep, tmp_path):
    # The local sleep is a child of trainmon (it became the shell's pid 1): a process of the job, and
    # NVML lists its number. That number is a host pid: the GPU memory is not the job's.
    ns_db, host_db = tmp_path / "ns.db", tmp_path / "host.db"
    ns_run = subprocess.Popen(ns_argv(*_run_args(ns_db)), env=ns_env(host_sleep), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    host_run = subprocess.Popen([trainmon_bin(), *_run_args(host_db)], env=ns_env(host_sleep),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, ns_err = ns_run.communicate(timeout=120)
    _, host_err = host_run.communicate(timeout=120)
    assert ns_run.returncode == 0, ns_err
    assert host_run.returncode == 0, host_err
    local = int(re.search(r"NS_LOCAL_PID=(\d+)", ns_err).group(1))

    # The run summary: the job used no GPU (none of its processes is known to be on one), no ghost.
    assert "GPU0 NVIDIA H100 80GB HBM3:" in ns_err, ns_err
    assert "(used by the job)" not in ns_err, ns_err
    assert "D9" not in ns_err, ns_err
    show = json.loads(on_host(host_sleep, "show", "last", "--json", "--db", str(ns_db)).stdout)
    assert [g["used_by_job"] for g in show["gpus"]] == [False], show["gpus"]

    # Diagnosis from the store: no ghost, and no finding names a foreign pid as the job's.
    findings = _diagnose(ns_db, host_sleep)
    assert "D9" not in {f["code"] for f in findings}, findings
    for f in findings:
        assert not {host_sleep, NOWHERE} & set(f.get("pids", [])), f

    # The report's process table: the local sleep (the job's, its RSS) and the GPU process with the
    # same number are two rows; the GPU one has the driver's name only.
    rep = on_host(host_sleep, "report", "last", "--format", "json", "--db", str(ns_db))
    assert rep.returncode == 0, rep.stderr
    rows = [r for r in json.loads(rep.stdout)["processes"] if r["pid"] == local]
    by_vis = {r["host_visibility"]: r for r in rows}
    assert set(by_vis) == {"visible", "not_visible"}, rows
    assert by_vis["visible"]["comm"] == "sleep" and by_vis["visible"]["in_job"], rows
    assert by_vis["visible"]["peak_gpu_mem_mib"] is None, rows
    assert by_vis["not_visible"]["comm"] == "python" and not by_vis["not_visible"]["in_job"], rows
    assert by_vis["not_visible"]["user"] == "" and by_vis["not_visible"]["peak_rss_mib"] is None, rows
    assert by_vis["not_visible"]["peak_gpu_mem_mib"] == 8192.0, rows
    md = on_host(host_sleep, "report", "last", "--format", "md", "--db", str(ns_db)).stdout
    assert f"| {local} | `python` (not visible from here) | no |" in md, md

    # From the host the pid that exists nowhere has exited: a ghost, found live and offline.
    assert re.search(rf"  \[warning\] D9 \S+ \S+ GPU0,pid {NOWHERE}: pid {NOWHERE} holds 1024 MiB on GPU0 for "
                     r"\d+ s but is gone \(exited", host_err), host_err
    ghosts = [f for f in _diagnose(host_db, host_sleep) if f["code"] == "D9"]
    assert [f["pids"] for f in ghosts] == [[NOWHERE]], ghosts
    assert "gone (exited" in ghosts[0]["evidence"], ghosts


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_top_in_a_namespace_offers_no_signal(host_sleep, tmp_path):
    from test_top import Tmux, top_env
    t = Tmux(tmp_path)
    e = top_env("ns-foreign-pids.json", NS_HOST_PID=host_sleep)
    try:
        t.start(e, ns_argv("top"), 120, 40)
        screen = t.wait(lambda s: s.count("[not visible] python") == 4)
        assert "sleep" not in screen and "root" not in screen, screen
        t.keys("a")  # every process: the local sleep gets its own row, without GPU memory
        screen = t.wait(lambda s: "sleep 120" in s)
        sleep_rows = [line for line in screen.splitlines() if "sleep 120" in line]
        assert sleep_rows and all("GiB" not in line for line in sleep_rows), screen
        t.keys("Home")
        t.keys("k")  # the first row is a GPU process of another namespace
        screen = t.wait(lambda s: "nothing to signal" in s)
        assert "SIGTERM" not in screen, screen
        t.keys("q")
    finally:
        t.kill()


def test_status_json_in_a_namespace_reading_the_hosts_proc(host_sleep):
    """The other direction (issue 33): trainmon in a child PID namespace reading the host's /proc
    (`unshare --pid --fork` without --mount-proc, as a container given the host's /proc), and a driver
    that numbers processes in trainmon's namespace. NS_LOCAL_PID is a small local number (on the host
    it names another process, or none): mapped through NSpid to the local sleep's host pid, visible,
    its utilisation kept; NS_SELF_PID (1) is trainmon itself, not the host's init; the host sleep is
    listed by its host number and stays visible; the pid that exists nowhere is nobody's."""
    argv = [UNSHARE, "--pid", "--fork", "/bin/sh", "-c", PRELUDE, "sh", trainmon_bin(), "status", "--json"]
    p = subprocess.run(argv, env=ns_env(host_sleep), capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    local = int(re.search(r"NS_LOCAL_PID=(\d+)", p.stderr).group(1))
    procs = processes(json.loads(p.stdout))
    by_cmd = {tuple(q["full_command"] or ()): q for q in procs.values()}
    sleep = by_cmd.get(("sleep", "120"))
    assert sleep is not None, procs
    assert sleep["pid"] != local and sleep["pid"] > 1, sleep  # the /proc number, not the driver's
    assert sleep["host_visibility"] == "visible" and sleep["username"] == "root", sleep
    assert sleep["sm_util"] == 40 and sleep["gpu_memory_usage_bytes"] == 8589934592, sleep
    me = [q for q in procs.values() if q["gpu_memory_usage_bytes"] == 4294967296]
    assert len(me) == 1 and me[0]["pid"] != 1 and me[0]["host_visibility"] == "visible", procs
    assert os.path.basename(me[0]["full_command"][0]) == "trainmon", me
    assert procs[host_sleep]["host_visibility"] == "visible", procs
    assert procs[host_sleep]["full_command"] == ["sleep", "300"], procs
    # Exited where pid 1's namespace link can be read from here (the initial namespace proven), else
    # not visible: never attributed to a process.
    assert procs[NOWHERE]["host_visibility"] in ("exited", "not_visible"), procs
    assert all(q["command"] != "kthreadd" and (q["full_command"] or [""])[0] not in ("/sbin/init", "init")
               for q in procs.values()), procs
