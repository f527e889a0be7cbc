# SPDX-License-Identifier: Apache-2.0
"""`trainmon top` in a real tmux server (private socket) on the fake driver: keys sent with
send-keys, the screen read with capture-pane. Every wait polls for a condition."""

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import time

import pytest

from test_run_helpers import env, trainmon_bin, wait_for

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


class Tmux:
    """One tmux server on a socket under tmp_path, one session running one command."""

    def __init__(self, tmp_path, name="tmux.sock"):
        self.sock = str(tmp_path / name)

    def tmux(self, *args, check=True):
        return subprocess.run(["tmux", "-S", self.sock, "-f", "/dev/null", *args], capture_output=True,
                              text=True, check=check, timeout=30)

    def start(self, command_env, argv, width, height):
        """Runs argv with command_env in a detached session of width x height; after the command
        ends the pane prints EXITED rc=N and stays."""
        assigns = " ".join(shlex.quote(f"{k}={v}") for k, v in command_env.items())
        cmd = " ".join(shlex.quote(a) for a in argv)
        shell = f"env -i {assigns} {cmd}; echo EXITED rc=$?; sleep 600"
        server_env = dict(os.environ, LANG="C.UTF-8", LC_ALL="C.UTF-8")
        subprocess.run(["tmux", "-S", self.sock, "-f", "/dev/null", "new-session", "-d", "-x", str(width),
                        "-y", str(height), "sh", "-c", shell], env=server_env, check=True, timeout=30)

    def capture(self):
        return self.tmux("capture-pane", "-p", "-t", "0").stdout

    def keys(self, *keys):
        self.tmux("send-keys", "-t", "0", *keys)

    def literal(self, text):
        self.tmux("send-keys", "-t", "0", "-l", text)

    def wait(self, predicate, timeout=30):
        """Polls the screen until predicate(screen) is truthy; returns the last screen."""
        last = [""]

        def check():
            last[0] = self.capture()
            return predicate(last[0])

        ok = wait_for(check, timeout=timeout, step=0.2)
        assert ok, "screen never matched; last screen:\n" + last[0]
        return last[0]

    def kill(self):
        self.tmux("kill-server", check=False)


def top_env(scenario, **extra):
    """A minimal environment for the program inside tmux (env -i): the fake driver, a terminal, a
    locale, an empty store directory."""
    e = env(scenario)
    # The sanitizer options of an ASan/UBSan build (LSAN_OPTIONS names tests/lsan.supp) must survive env -i.
    names = ("TRAINMON_NVML_LIBRARY", "TRAINMON_FAKE_NVML_SCENARIO", "PATH", "HOME", "ASAN_OPTIONS", "LSAN_OPTIONS",
             "UBSAN_OPTIONS")
    keep = {k: e[k] for k in names if k in e}
    keep.update({"TERM": "screen", "LANG": "C.UTF-8"})  # tmux's default-terminal: its key codes
    keep.update({k: str(v) for k, v in extra.items()})
    # A runtime directory of the test's own: top shows the live runs of its user (their state files
    # there, docs/top.md), and the runs of tests running meanwhile must not appear on this screen.
    if "XDG_RUNTIME_DIR" not in keep and "XDG_STATE_HOME" in keep:
        keep["XDG_RUNTIME_DIR"] = os.path.join(keep["XDG_STATE_HOME"], "runtime")
        os.makedirs(keep["XDG_RUNTIME_DIR"], mode=0o700, exist_ok=True)
    return keep


@pytest.fixture
def tmux(tmp_path):
    t = Tmux(tmp_path)
    yield t
    t.kill()


def table_pids(screen):
    """PIDs of the process table rows, in screen order."""
    lines = screen.splitlines()
    start = next(i for i, l in enumerate(lines) if re.match(r"^\s+PID", l))
    pids = []
    for l in lines[start + 1:]:
        m = re.match(r"^\s*(\d+) ", l)
        if not m:
            break
        pids.append(int(m.group(1)))
    return pids


def test_sort_order_changes_with_keys(tmux, tmp_path):
    tmux.start(top_env("bench-8gpu-64proc.json", XDG_STATE_HOME=tmp_path), [trainmon_bin(), "top"], 120, 60)
    screen = tmux.wait(lambda s: len([p for p in table_pids(s) if p >= 200000]) >= 10 if "PID" in s else False)
    assert "GPU-MEM▼" in screen
    tmux.keys("N", "Home")  # sort by PID, ascending; select the first row
    # capture-pane may catch a redraw half done: wait for the whole table, not its first row
    screen = tmux.wait(lambda s: "PID▲" in s and table_pids(s)[:1] == [200000]
                       and table_pids(s) == sorted(table_pids(s)))
    before = table_pids(screen)
    assert before == sorted(before)
    tmux.keys("r", "Home")  # reverse
    screen = tmux.wait(lambda s: "PID▼" in s and table_pids(s)[:1] == [200707]
                       and table_pids(s) == sorted(table_pids(s), reverse=True))
    after = table_pids(screen)
    assert after == sorted(after, reverse=True) and after != before, after
    tmux.keys("s")  # next column: USER, ascending
    tmux.wait(lambda s: "USER▲" in s)
    tmux.keys("G")  # GPU memory, largest first
    tmux.wait(lambda s: "GPU-MEM▼" in s)
    tmux.keys("q")
    tmux.wait(lambda s: "EXITED rc=0" in s)


def test_sleep_ended_through_signal_dialog(tmux, tmp_path):
    sleeper = subprocess.Popen(["sleep", "1000"])
    try:
        # The fake driver lists the sleep as the GPU process of healthy-1gpu.
        tmux.start(top_env("healthy-1gpu.json", TRAINMON_TEST_PID=sleeper.pid, XDG_STATE_HOME=tmp_path),
                   [trainmon_bin(), "top"], 120, 40)
        tmux.wait(lambda s: "[0] NVIDIA H100" in s and str(sleeper.pid) in s)
        tmux.keys("a")  # all processes, then filter to the sleep
        tmux.keys("/")
        tmux.wait(lambda s: "filter:" in s)
        tmux.literal("sleep 1000")
        tmux.keys("Enter")
        screen = tmux.wait(lambda s: table_pids(s) == [sleeper.pid])
        assert "sleep 1000" in screen
        tmux.keys("k")
        tmux.wait(lambda s: "Send SIGTERM?" in s and f"pid {sleeper.pid}: sleep 1000" in s)
        assert sleeper.poll() is None, "nothing is sent before the confirmation"
        tmux.keys("y")
        assert wait_for(lambda: sleeper.poll() is not None, timeout=20)
        assert sleeper.returncode == -signal.SIGTERM
        tmux.wait(lambda s: "SIGTERM sent" in s and "K: send SIGKILL" in s)
        tmux.keys("Escape")
        tmux.wait(lambda s: "K: send SIGKILL" not in s)
        tmux.keys("q")
        tmux.wait(lambda s: "EXITED rc=0" in s)
    finally:
        if sleeper.poll() is None:
            sleeper.kill()
            sleeper.wait()


def test_signal_dialog_sends_nothing_once_the_process_is_gone(tmux, tmp_path):
    """The dialog remembers (pid, start time): a process that exits while the dialog is open is not
    signalled, nor whatever holds its pid now; top says so on its bottom line."""
    sleeper = subprocess.Popen(["sleep", "1000"])
    try:
        tmux.start(top_env("healthy-1gpu.json", TRAINMON_TEST_PID=sleeper.pid, XDG_STATE_HOME=tmp_path),
                   [trainmon_bin(), "top"], 120, 40)
        tmux.wait(lambda s: "[0] NVIDIA H100" in s and str(sleeper.pid) in s)
        tmux.keys("a")
        tmux.keys("/")
        tmux.wait(lambda s: "filter:" in s)
        tmux.literal("sleep 1000")
        tmux.keys("Enter")
        tmux.wait(lambda s: table_pids(s) == [sleeper.pid])
        tmux.keys("k")
        tmux.wait(lambda s: "Send SIGTERM?" in s and f"pid {sleeper.pid}: sleep 1000" in s)
        os.kill(sleeper.pid, signal.SIGKILL)
        sleeper.wait(timeout=10)  # reaped: /proc/PID is gone
        tmux.keys("y")
        screen = tmux.wait(lambda s: f"process {sleeper.pid} exited" in s and "nothing sent" in s)
        assert "SIGTERM sent" not in screen and "K: send SIGKILL" not in screen, screen
        tmux.keys("q")
        tmux.wait(lambda s: "EXITED rc=0" in s)
    finally:
        if sleeper.poll() is None:
            sleeper.kill()
            sleeper.wait()


def test_sizes_40x12_and_300x80_and_resize(tmux, tmp_path):
    pids = {f"TRAINMON_DDP_PID_{i}": os.getpid() for i in range(8)}
    tmux.start(top_env("ddp-8gpu-healthy.json", XDG_STATE_HOME=tmp_path, **pids), [trainmon_bin(), "top"], 300, 80)
    screen = tmux.wait(lambda s: "[7] NVIDIA H100" in s and "PID" in s and "Mem[" in s)
    lines = screen.splitlines()
    assert len(lines) <= 80 and max(len(l) for l in lines) <= 300
    assert "util [" in screen and "mem  [" in screen and "PCIe rx" in screen
    tmux.tmux("resize-window", "-t", "0", "-x", "40", "-y", "12")
    screen = tmux.wait(lambda s: "more GPUs" in s and "PID" in s)
    lines = screen.splitlines()
    assert len(lines) <= 12 and max(len(l) for l in lines) <= 40, screen
    assert "q quit" in screen
    tmux.tmux("resize-window", "-t", "0", "-x", "12", "-y", "4")
    tmux.wait(lambda s: "too small" in s)
    tmux.tmux("resize-window", "-t", "0", "-x", "100", "-y", "40")
    tmux.wait(lambda s: "[7] NVIDIA H100" in s)
    tmux.keys("q")
    tmux.wait(lambda s: "EXITED rc=0" in s)


def test_keys_and_resize_redraw_between_ticks(tmux, tmp_path):
    """Frames after a sample are drawn by the sampling thread; keys and resizes must be drawn by the
    UI thread at once, not at the next tick (10 s away here): SIGWINCH must reach the UI thread."""
    tmux.start(top_env("bench-8gpu-64proc.json", XDG_STATE_HOME=tmp_path), [trainmon_bin(), "top", "-i", "10"],
               120, 40)
    screen = tmux.wait(lambda s: "GPU-MEM▼" in s and "every 10.0s" in s)
    assert "more GPUs" not in screen, screen
    t0 = time.monotonic()
    tmux.keys("N")  # sort by PID
    tmux.wait(lambda s: "PID▲" in s, timeout=8)
    tmux.tmux("resize-window", "-t", "0", "-x", "40", "-y", "12")
    tmux.wait(lambda s: "more GPUs" in s and "PID▲" in s, timeout=8)  # the compact layout
    tmux.keys("?")
    tmux.wait(lambda s: "help" in s.lower() and "quit" in s.lower(), timeout=8)
    assert time.monotonic() - t0 < 9, "redrawn only by a sampling tick"
    tmux.keys("Escape")
    tmux.keys("q")
    tmux.wait(lambda s: "EXITED rc=0" in s)


def test_xid_and_ecc_findings_show_live(tmux, tmp_path):
    """An Xid 48 event (t = 5 s) and uncorrected ECC errors reach the live diagnosis through the
    per-tick event poll and show in the findings panel (re-evaluated every 10 s)."""
    tmux.start(top_env("d10-ecc-errors.json", XDG_STATE_HOME=tmp_path), [trainmon_bin(), "top"], 160, 50)
    screen = tmux.wait(lambda s: re.search(r"^D13 critical .*Xid", s, re.M) is not None, timeout=45)
    assert re.search(r"^D10 critical ", screen, re.M), screen
    tmux.keys("q")
    tmux.wait(lambda s: "EXITED rc=0" in s)


def test_a_hung_nvml_init_shows_the_host_at_once_and_quits_at_once(tmux, tmp_path):
    """nvmlInit hangs for 60 s: it runs on the backend's start-up worker, so the host is sampled from
    the first tick, the GPU panel says why there are no GPUs, keys work, and q quits at once (the
    sampling thread is never inside the driver)."""
    e = top_env("top-gpu-lost.json", XDG_STATE_HOME=tmp_path)
    with open(e["TRAINMON_FAKE_NVML_SCENARIO"]) as f:
        scenario = json.load(f)
    scenario["errors"] = [{"function": "nvmlInit_v2", "hang_ms": 60000}]
    path = tmp_path / "hang-init.json"
    path.write_text(json.dumps(scenario))
    e["TRAINMON_FAKE_NVML_SCENARIO"] = str(path)
    t0 = time.monotonic()
    tmux.start(e, [trainmon_bin(), "top"], 120, 30)
    tmux.wait(lambda s: "Mem[" in s and "NVML is not answering" in s, timeout=10)
    assert time.monotonic() - t0 < 5
    tmux.keys("?")
    tmux.wait(lambda s: "trainmon top: keys" in s, timeout=10)
    tmux.keys("Escape")
    t0 = time.monotonic()
    tmux.keys("q")
    screen = tmux.wait(lambda s: "EXITED rc=0" in s, timeout=30)
    assert time.monotonic() - t0 < 2.5, screen
    assert "quitting without waiting" not in screen, screen


def test_40x12_from_the_start(tmux, tmp_path):
    tmux.start(top_env("healthy-1gpu.json", XDG_STATE_HOME=tmp_path), [trainmon_bin(), "top"], 40, 12)
    screen = tmux.wait(lambda s: "ut[" in s and "PID" in s)
    assert max(len(l) for l in screen.splitlines()) <= 40
    tmux.keys("?")
    tmux.wait(lambda s: "keys" in s)
    tmux.keys("x", "q")
    tmux.wait(lambda s: "EXITED rc=0" in s)


def test_lang_c_draws_ascii_only(tmux, tmp_path):
    e = top_env("ddp-8gpu-healthy.json", XDG_STATE_HOME=tmp_path, LANG="C", LC_ALL="C")
    tmux.start(e, [trainmon_bin(), "top"], 120, 60)
    screen = tmux.wait(lambda s: "[7] NVIDIA H100" in s and "Mem[" in s)
    screen = tmux.wait(lambda s: "|" in s.split("util [", 1)[-1][:30])  # ASCII bar, after a tick or two
    assert all(ord(c) < 128 for c in screen), [c for c in screen if ord(c) >= 128][:10]
    assert re.search(r"\d+C ", screen), "temperatures without a degree sign"
    tmux.keys("t", "a")  # tree view draws ASCII branches
    screen = tmux.wait(lambda s: "(tree)" in s and "[all]" in s)
    assert all(ord(c) < 128 for c in screen)
    tmux.keys("q")
    tmux.wait(lambda s: "EXITED rc=0" in s)


def test_term_dumb_falls_back_to_status(tmux, tmp_path):
    e = top_env("healthy-1gpu.json", XDG_STATE_HOME=tmp_path, TERM="dumb")
    tmux.start(e, [trainmon_bin(), "top", "-n", "2", "-i", "0.2"], 120, 40)
    screen = tmux.wait(lambda s: "EXITED rc=0" in s)
    assert screen.count("[0] NVIDIA H100 80GB HBM3") == 2, screen
    assert "PID" not in screen and "q quit" not in screen
    e.pop("TERM")
    second = Tmux(tmp_path, "unset.sock")
    try:
        second.start(e, [trainmon_bin(), "top", "-n", "1"], 120, 40)
        second.wait(lambda s: "EXITED rc=0" in s and "[0] NVIDIA H100" in s)
    finally:
        second.kill()


def test_unknown_term_falls_back_to_status(tmux, tmp_path):
    e = top_env("healthy-1gpu.json", XDG_STATE_HOME=tmp_path, TERM="no-such-terminal-h9")
    tmux.start(e, [trainmon_bin(), "top", "-n", "1"], 120, 40)
    screen = tmux.wait(lambda s: "EXITED rc=0" in s)
    assert "[0] NVIDIA H100 80GB HBM3" in screen and "printing the status view" in screen, screen


def test_no_subcommand_opens_top_on_a_terminal(tmux, tmp_path):
    tmux.start(top_env("healthy-1gpu.json", XDG_STATE_HOME=tmp_path), [trainmon_bin()], 100, 30)
    tmux.wait(lambda s: "trainmon top" in s and "[0] NVIDIA H100" in s)
    tmux.keys("q")
    tmux.wait(lambda s: "EXITED rc=0" in s)


def test_pipe_prints_status_not_the_dashboard():
    for argv in ([trainmon_bin(), "top", "-n", "1"], [trainmon_bin()]):
        p = subprocess.run(argv, env=env("healthy-1gpu.json"), capture_output=True, text=True, timeout=60,
                           stdin=subprocess.DEVNULL)
        assert p.returncode == 0, p.stderr
        assert "[0] NVIDIA H100 80GB HBM3" in p.stdout
        assert "\x1b" not in p.stdout


def test_gpu_lost_while_running(tmux, tmp_path):
    tmux.start(top_env("top-gpu-lost.json", XDG_STATE_HOME=tmp_path), [trainmon_bin(), "top", "-i", "0.5"], 120, 40)
    tmux.wait(lambda s: "[1] NVIDIA H100" in s)
    screen = tmux.wait(lambda s: "[1] NVIDIA H100 80GB HBM3  GPU lost" in s, timeout=40)
    assert "util [" in screen.split("[1]")[0], "GPU 0 keeps its readings"
    t0 = re.search(r"\d\d:\d\d:\d\d", screen).group(0)
    tmux.wait(lambda s: re.search(r"\d\d:\d\d:\d\d", s).group(0) != t0)  # still sampling
    tmux.keys("q")
    tmux.wait(lambda s: "EXITED rc=0" in s)


def test_no_driver_shows_host_only(tmux, tmp_path):
    e = top_env("healthy-1gpu.json", XDG_STATE_HOME=tmp_path)
    e["TRAINMON_NVML_LIBRARY"] = str(tmp_path / "missing" / "libnvidia-ml.so.1")
    tmux.start(e, [trainmon_bin(), "top"], 100, 30)
    screen = tmux.wait(lambda s: "GPU: none, host only: NVML" in s and "Mem[" in s)
    assert "0 GPUs" in screen
    tmux.keys("a")
    tmux.wait(lambda s: "[all]" in s and len(table_pids(s)) > 3)
    tmux.keys("q")
    tmux.wait(lambda s: "EXITED rc=0" in s)


def test_wide_characters_and_escape_sequences_in_a_command_line(tmux, tmp_path):
    """A command line in CJK and emoji keeps every character and the columns after it (each wide
    character takes two cells); one carrying an OSC title sequence never reaches the terminal."""
    wide = subprocess.Popen(["训练脚本🚀X|end", "1000"], executable="/bin/sleep")
    hostile = subprocess.Popen(["\x1b]2;PWNED\x07\x1b[2Jevil", "1000"], executable="/bin/sleep")
    try:
        tmux.start(top_env("healthy-1gpu.json", TRAINMON_TEST_PID=wide.pid, XDG_STATE_HOME=tmp_path),
                   [trainmon_bin(), "top"], 120, 40)
        tmux.wait(lambda s: "[0] NVIDIA H100" in s and str(wide.pid) in s)
        screen = tmux.capture()
        row = next(l for l in screen.splitlines() if l.lstrip().startswith(str(wide.pid)))
        assert "训练脚本🚀X|end 1000" in row, row
        # The columns before the command are where the header says (the wide ones only follow).
        header = next(l for l in screen.splitlines() if re.match(r"^\s+PID", l))
        assert row.index("训") == header.index("COMMAND"), (header, row)
        tmux.keys("a")  # all processes, filtered to the hostile one
        tmux.keys("/")
        tmux.wait(lambda s: "filter:" in s)
        tmux.literal("evil")
        tmux.keys("Enter")
        screen = tmux.wait(lambda s: table_pids(s) == [hostile.pid])
        evil = next(l for l in screen.splitlines() if l.lstrip().startswith(str(hostile.pid)))
        assert "]2;PWNED" in evil and "[2Jevil 1000" in evil, evil  # each control a blank or a "?"
        title = tmux.tmux("display-message", "-p", "-t", "0", "#{pane_title}").stdout
        assert "PWNED" not in title, title
        tmux.keys("q")
        tmux.wait(lambda s: "EXITED rc=0" in s)
    finally:
        for p in (wide, hostile):
            p.kill()
            p.wait()
