# SPDX-License-Identifier: Apache-2.0
"""Stopping a wrapped job stops all of it (docs/recording.md "Stopping"): a stop signal to
`trainmon run` reaches every process of the job (children, grandchildren that setsid() or
double-forked away and were adopted by trainmon as subreaper), what still runs after --kill-after gets
SIGKILL, a second stop signal kills at once, and what the command leaves behind when it ends is
stopped too. Every test records the pids its job started and asserts that each one is gone when
trainmon has exited; the clean-up ends only those (pid and start time checked)."""

import os
import re
import signal
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_run_helpers import PY, env, kill_quietly, trainmon_bin, wait_for  # noqa: E402

SANITIZED = os.environ.get("TRAINMON_SANITIZED") == "1"


def start_ticks(pid):
    """(state, start time) of a pid from /proc, or None when it does not exist."""
    try:
        text = open(f"/proc/{pid}/stat").read()
    except OSError:
        return None
    f = text[text.rindex(")") + 2:].split()
    return f[0], int(f[19])


class Job:
    """A job under `trainmon run` whose processes append "ROLE PID" lines to a file."""

    def __init__(self, tmp_path, script, expect, *opts, shell=False):
        self.pids_file = tmp_path / "pids"
        self.pids_file.write_text("")
        if shell:
            cmd = ["sh", "-c", script]
        else:  # a file, not -c: multiprocessing's spawn imports the main module again
            (tmp_path / "job.py").write_text(script)
            cmd = [PY, str(tmp_path / "job.py")]
        self.proc = subprocess.Popen(
            [trainmon_bin(), "run", "--db", str(tmp_path / "t.db"), "--no-report", "--interval", "0.2", *opts,
             "--", *cmd],
            env=env(JOB_PIDS=str(self.pids_file)), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.started = {}
        assert wait_for(lambda: len(self.roles()) >= expect, 90), f"the job did not start: {self.roles()}"
        time.sleep(0.3)  # every process has its signal dispositions in place
        for role, pid in self.roles().items():
            st = start_ticks(pid)
            assert st, f"{role} ({pid}) ended before the test could see it"
            self.started[role] = (pid, st[1])

    def roles(self):
        out = {}
        for line in self.pids_file.read_text().splitlines():
            role, pid = line.split()
            out[role] = int(pid)
        return out

    def alive(self):
        """The roles whose process (same pid and start time) still runs."""
        out = []
        for role, (pid, ticks) in self.started.items():
            st = start_ticks(pid)
            if st and st[1] == ticks and st[0] not in "ZX":
                out.append(role)
        return out

    def finish(self, timeout=90):
        try:
            out, err = self.proc.communicate(timeout=timeout)
            return self.proc.returncode, err
        finally:
            kill_quietly(self.proc)
            for role in self.alive():  # only what this test started
                os.kill(self.started[role][0], signal.SIGKILL)


# A shell job: a child in the job's process group, one that setsid() away (own session and group),
# a double-forked one (its parent exits: trainmon adopts it), and one that ignores SIGTERM, SIGINT, SIGHUP.
SHELL_TREE = r"""
echo "main $$" >> "$JOB_PIDS"
sh -c 'echo "child $$" >> "$JOB_PIDS"; exec sleep 300' &
setsid sh -c 'echo "setsid $$" >> "$JOB_PIDS"; exec sleep 300' &
( sh -c 'echo "orphan $$" >> "$JOB_PIDS"; exec sleep 300' & )
/usr/bin/python3 -c '
import os, signal, time
for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(s, signal.SIG_IGN)
open(os.environ["JOB_PIDS"], "a").write("stubborn %d\n" % os.getpid())
time.sleep(300)' &
wait
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_reaches_the_whole_tree_and_sigkill_ends_the_rest(tmp_path, sig):
    job = Job(tmp_path, SHELL_TREE, 5, "--kill-after", "2", shell=True)
    t0 = time.monotonic()
    job.proc.send_signal(sig)
    rc, err = job.finish()
    took = time.monotonic() - t0
    assert job.alive() == [], (job.alive(), err)
    name = signal.Signals(sig).name
    # the shell died of the signal: trainmon's status is the command's (128 + N)
    assert rc == 128 + sig, err
    assert f"{name} passed on to the job's 5 processes" in err, err
    # only the stubborn one was left for SIGKILL, after the grace period, not before
    assert f"1 process of the job still ran 2 s after {name}: SIGKILL ({job.started['stubborn'][0]})" in err, err
    assert 2 <= took < 30, took
    assert f"job stop: {name} passed on to 5 processes; SIGKILL to 1 still running after 2 s; all ended" in err


def test_a_parent_that_catches_sigint_and_keeps_running_is_killed_after_the_grace(tmp_path):
    script = r"""
import multiprocessing as mp, os, signal, time
def worker():
    open(os.environ["JOB_PIDS"], "a").write("worker %d\n" % os.getpid())
    time.sleep(300)
if __name__ == "__main__":
    mp.set_start_method("fork")
    p = mp.Process(target=worker); p.start()
    signal.signal(signal.SIGINT, lambda s, f: open(os.environ["JOB_PIDS"] + ".got", "a").write("INT\n"))
    open(os.environ["JOB_PIDS"], "a").write("main %d\n" % os.getpid())
    while True:
        time.sleep(0.1)
"""
    job = Job(tmp_path, script, 2, "--kill-after", "1.5")
    job.proc.send_signal(signal.SIGINT)
    rc, err = job.finish()
    assert job.alive() == [], (job.alive(), err)
    assert (tmp_path / "pids.got").read_text() == "INT\n"  # passed on once, handled, ignored
    assert rc == 137, err  # the main process ended by SIGKILL
    assert "command killed by SIGKILL" in err
    # the worker died of SIGINT (KeyboardInterrupt) at once; the main one needed SIGKILL
    assert "job stop: SIGINT passed on to 2 processes; SIGKILL to 1 still running after 1.5 s; all ended" in err


def test_a_second_stop_signal_kills_at_once(tmp_path):
    job = Job(tmp_path, SHELL_TREE, 5, shell=True)  # the default grace: 30 s
    job.proc.send_signal(signal.SIGTERM)
    assert wait_for(lambda: job.alive() == ["stubborn"], 10), job.alive()
    t0 = time.monotonic()
    job.proc.send_signal(signal.SIGINT)
    rc, err = job.finish()
    assert time.monotonic() - t0 < 10
    assert job.alive() == [], (job.alive(), err)
    assert "what still runs in 30 s gets SIGKILL" in err, err
    assert f"stop signal again: SIGKILL to the job's 1 process ({job.started['stubborn'][0]})" in err, err
    assert "SIGKILL to 1 at the second stop signal; all ended" in err


@pytest.mark.parametrize("how", ["setsid", "double-fork", "stubborn"])
def test_what_the_command_leaves_behind_is_stopped_when_it_ends(tmp_path, how):
    start = {
        "setsid": """setsid sh -c 'echo "left $$" >> "$JOB_PIDS"; exec sleep 300' &""",
        "double-fork": """( sh -c 'echo "left $$" >> "$JOB_PIDS"; exec sleep 300' & )""",
        "stubborn": """/usr/bin/python3 -c '
import os, signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
open(os.environ["JOB_PIDS"], "a").write("left %d\\n" % os.getpid())
time.sleep(300)' &""",
    }[how]
    script = start + """
while ! grep -q left "$JOB_PIDS"; do sleep 0.05; done
echo "main $$" >> "$JOB_PIDS"
sleep 1.5
exit 3
"""
    job = Job(tmp_path, script, 2, "--kill-after", "1", shell=True)
    rc, err = job.finish()
    assert job.alive() == [], (job.alive(), err)
    assert rc == 3, err  # the command's own status, not the leftovers'
    left = job.started["left"][0]
    assert f"ended but left 1 process running ({left}): SIGTERM" in err, err
    if how == "stubborn":
        assert f"still ran 1 s after SIGTERM: SIGKILL ({left})" in err, err
        assert "job stop: the command left 1 process running; SIGTERM sent; SIGKILL to 1 still running after 1 s" in err
    else:
        assert "still ran" not in err and "SIGKILL to" not in err, err
        assert "job stop: the command left 1 process running; SIGTERM sent; all ended" in err


def test_a_job_that_leaves_nothing_says_nothing_about_stopping(tmp_path):
    p = subprocess.run([trainmon_bin(), "run", "--db", str(tmp_path / "t.db"), "--no-report", "--", "sh", "-c",
                        "sleep 0.2 & wait; exit 0"], env=env(), capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "job stop" not in p.stderr and "SIGTERM" not in p.stderr


def test_the_grace_period_option_is_checked(tmp_path):
    p = subprocess.run([trainmon_bin(), "run", "--db", str(tmp_path / "t.db"), "--kill-after", "soon", "--",
                        "true"], env=env(), capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "--kill-after wants" in p.stderr, p.stderr


TORCH_JOB = r"""
import functools, os, sys, torch, torch.multiprocessing as mp
from torch.utils.data import DataLoader, IterableDataset

def note(role):
    open(os.environ["JOB_PIDS"], "a").write("%s %d\n" % (role, os.getpid()))

class Forever(IterableDataset):
    def __iter__(self):
        while True:
            yield torch.zeros(2)

def loader_started(r, w):
    note("rank%d-loader%d" % (r, w))

def rank(r):
    note("rank%d" % r)
    loader = DataLoader(Forever(), batch_size=2, num_workers=2,
                        worker_init_fn=functools.partial(loader_started, r))
    for _ in loader:
        pass

if __name__ == "__main__":
    note("main")
    mp.spawn(rank, nprocs=2)
"""


@pytest.mark.skipif(SANITIZED, reason="real PyTorch jobs run in the release pass only")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_torch_spawn_ranks_and_their_dataloader_workers_all_end(tmp_path, sig):
    pytest.importorskip("torch")
    # main + 2 spawned ranks + 2 DataLoader workers each (and multiprocessing's helpers, not listed)
    job = Job(tmp_path, TORCH_JOB, 7, "--kill-after", "5")
    job.proc.send_signal(sig)
    rc, err = job.finish(timeout=120)
    assert job.alive() == [], (job.alive(), err)
    name = signal.Signals(sig).name
    assert f"{name} passed on to the job's" in err, err
    assert rc != 0 and "all ended" in err, err
    assert "NOT ended" not in err and "could not end" not in err


def test_ctrl_c_from_the_terminal_also_reaches_what_left_the_process_group(tmp_path):
    # On a pseudo-terminal: Ctrl-C reaches trainmon's foreground process group (the job's main
    # process and its plain child) from the terminal; the child in its own session gets it from
    # trainmon, once. Nothing needs SIGKILL.
    import pty
    import select
    pids = tmp_path / "pids"
    pids.write_text("")
    (tmp_path / "job.py").write_text(r"""
import os, subprocess, sys, time
note = lambda role, pid: open(os.environ["JOB_PIDS"], "a").write("%s %d\n" % (role, pid))
a = subprocess.Popen(["sleep", "300"])
b = subprocess.Popen(["sleep", "300"], start_new_session=True)
note("plain", a.pid); note("session", b.pid); note("main", os.getpid())
time.sleep(300)
""")
    e = env(JOB_PIDS=str(pids))
    pid, fd = pty.fork()
    if pid == 0:
        argv = [trainmon_bin(), "run", "--db", str(tmp_path / "t.db"), "--no-report", "--kill-after", "20", "--",
                PY, str(tmp_path / "job.py")]
        os.execve(argv[0], argv, e)
    out = b""
    status = None

    def pump(seconds):
        nonlocal out, status
        end = time.monotonic() + seconds
        while time.monotonic() < end and status is None:
            if select.select([fd], [], [], 0.05)[0]:
                try:
                    out += os.read(fd, 65536)
                except OSError:
                    pass
            got, st = os.waitpid(pid, os.WNOHANG)
            if got:
                status = os.waitstatus_to_exitcode(st)

    started = {}
    try:
        end = time.monotonic() + 60
        while len(pids.read_text().splitlines()) < 3 and time.monotonic() < end:
            pump(0.1)
        for line in pids.read_text().splitlines():
            role, p = line.split()
            started[role] = (int(p), start_ticks(int(p))[1])
        pump(0.3)
        os.write(fd, b"\x03")  # Ctrl-C
        pump(30)
    finally:
        if status is None:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        for role, (p, ticks) in started.items():
            st = start_ticks(p)
            if st and st[1] == ticks and st[0] not in "ZX":
                os.kill(p, signal.SIGKILL)
        os.close(fd)
    text = out.decode("utf-8", "replace").replace("\r\n", "\n")
    alive = [r for r, (p, t) in started.items() if (start_ticks(p) or ("Z", 0))[0] not in "ZX"
             and start_ticks(p)[1] == t]
    assert status == 130, (status, text[-3000:])  # the main process died of SIGINT (KeyboardInterrupt)
    assert alive == [], (alive, text[-3000:])
    # the plain sleep may have died of the terminal's SIGINT before trainmon looked: 2 or 3 processes
    assert re.search(r"SIGINT from the terminal reached the job \([23] processes; trainmon passed it on to the 1 "
                     r"outside its process group\)", text), text[-3000:]
    assert re.search(r"job stop: SIGINT from the terminal reached [23] processes; all ended", text), text[-3000:]


@pytest.mark.parametrize("tool", ["record", "serve"])
def test_what_an_alert_command_left_running_ends_with_record_and_serve(tmp_path, tool):
    # The alert command starts a process in its own session and exits: trainmon adopted it
    # (subreaper), and stops it when it stops itself.
    left = tmp_path / "left"
    script = tmp_path / "hook.sh"
    script.write_text(f"#!/bin/sh\nsetsid sleep 300 >/dev/null 2>&1 &\necho $! > {left}\nexit 0\n")
    script.chmod(0o755)
    rules = tmp_path / "alerts.toml"
    rules.write_text(f'''
[delivery]
spool_dir = "{tmp_path / 'spool'}"

[defaults]
sinks = ["script"]

[sinks.script]
type = "command"
command = ["{script}"]

[[rule]]
name = "always"
metric = "utilization.gpu"
condition = "> -1"
''')
    args = {"record": ["record", "--duration", "3"],
            "serve": ["serve", "--listen", "127.0.0.1:0"]}[tool]
    p = subprocess.Popen([trainmon_bin(), *args, "--db", str(tmp_path / "t.db"), "--interval", "0.2",
                          "--alerts", str(rules)], env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True)
    pid = ticks = None
    try:
        assert wait_for(lambda: left.exists() and left.read_text().strip(), 30), "the alert command did not run"
        pid = int(left.read_text())
        ticks = start_ticks(pid)[1]
        if tool == "serve":
            time.sleep(0.5)
            p.send_signal(signal.SIGTERM)
        err = p.communicate(timeout=60)[1]
    finally:
        kill_quietly(p)
        st = start_ticks(pid) if pid else None
        if st and st[1] == ticks and st[0] not in "ZX":
            os.kill(pid, signal.SIGKILL)
    assert p.returncode == 0, err
    st = start_ticks(pid)
    assert not st or st[1] != ticks or st[0] in "ZX", err
    assert f"trainmon {tool}: 1 process started by its helpers still runs ({pid}): SIGTERM" in err, err
