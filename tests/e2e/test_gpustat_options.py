# SPDX-License-Identifier: Apache-2.0
"""gpustat's options on `trainmon status`, against every capture (data-driven: each scenario of
test_views_golden.CASES, built from tests/captures, adds its cases).

The expected gpustat line is built from the capture's own `--query-gpu` CSV with gpustat 1.1's
layout (gpustat/core.py print_to: name cut by util.shorten_left, `{:>3}` temperature, fan and
utilisation, `E:`/`D:` codec columns, `-P draw` without a unit, `{:>5}` MiB), so a new capture
checks the same rules without new code."""
import json
import os
import re
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from test_views_golden import CASES, CAPS, SCEN, need, run, scenario_with, run_file, section  # noqa: E402


def capture_gpus(scenario):
    """One dict per GPU of the capture's --query-gpu CSV (field name -> printed value)."""
    cap_file, state = CASES[scenario]
    cmd, lines = section(open(os.path.join(CAPS, cap_file)).read(), f"{state} :: query-gpu (csv")
    names = re.search(r"--query-gpu=(\S+)", cmd).group(1).split(",")
    return [dict(zip(names, l.split(", "))) for l in lines[1:]]


def num(text):
    """gpustat's value of a CSV cell: the integer part of the number, '??' for what NVML refused."""
    m = re.match(r"^(\d+)(\.\d+)?( .*)?$", text)
    return int(m.group(1)) if m else "??"


def shorten_left(name, width):
    """gpustat util.shorten_left with its '…' placeholder."""
    if len(name) <= width:
        return name
    return "…" + name[len(name) - width + 1:] if width > 1 else "…"[:width]


def gpustat_line(g, name_width, fan=False, codec="", power=""):
    """The text gpustat 1.1 prints for one GPU (--no-processes), from capture values."""
    line = f"[{g['index']}] "
    if name_width != 0:
        line += f"{shorten_left(g['name'], name_width):{name_width}} |"
    line += f"{num(g['temperature.gpu']):>3}°C, "
    if fan:
        line += f"{num(g['fan.speed']):>3} %, "
    line += f"{num(g['utilization.gpu']):>3} %"
    if codec:
        parts = []
        if "enc" in codec:
            parts.append(f"E: {num(g['utilization.encoder']):>3} %")
        if "dec" in codec:
            parts.append(f"D: {num(g['utilization.decoder']):>3} %")
        line += " (" + "  ".join(parts) + ")"
    if power:
        line += f",  {num(g['power.draw']):>3}"
        if "limit" in power:
            line += f" / {num(g['enforced.power.limit']):>3} W"
    line += f" | {num(g['memory.used']):>5} / {num(g['memory.total']):>5} MB"
    return line


def status(args, scenario):
    r = run(["status", "--no-header", "--no-color", "--no-processes"] + args, scenario)
    assert r.returncode == 0, r.stderr
    return r.stdout.split("\n")[:-1]


@pytest.mark.parametrize("scenario", sorted(CASES))
def test_columns_match_gpustat_on_every_capture(scenario):
    need(scenario)
    gpus = capture_gpus(scenario)
    longest = max(len(g["name"]) for g in gpus)
    cases = [
        ([], dict()),
        (["-F"], dict(fan=True)),
        (["--show-fan"], dict(fan=True)),
        (["-e"], dict(codec="enc,dec")),
        (["-e", "enc"], dict(codec="enc")),
        (["--show-codec=dec"], dict(codec="dec")),
        (["-P"], dict(power="draw,limit")),
        (["-P", "draw"], dict(power="draw")),
        (["-P", "limit"], dict(power="limit")),
        (["--show-power", "draw,limit"], dict(power="draw,limit")),
        (["-F", "-e", "-P"], dict(fan=True, codec="enc,dec", power="draw,limit")),
    ]
    for args, kw in cases:
        assert status(args, scenario) == [gpustat_line(g, longest, **kw) for g in gpus], args
    for width in (0, 1, 5, 12, 40):
        assert status(["--gpuname-width", str(width)], scenario) == [gpustat_line(g, width) for g in gpus], width


@pytest.mark.parametrize("scenario", sorted(CASES))
def test_show_all_is_every_detail(scenario):
    need(scenario)
    base = ["status", "--no-header", "--no-color"]
    a = run(base + ["-a"], scenario)
    b = run(base + ["-c", "-u", "-p", "-F", "-e", "enc,dec", "-P", "draw,limit"], scenario)
    assert a.returncode == 0 and a.stdout == b.stdout, a.stdout + a.stderr
    # and the processes follow the columns, as gpustat's " |" then "user:cmd/pid(MEM M)"
    assert re.search(r" MB \| \S+:\S+/\d+\(\d+M\)", a.stdout) or "processes unknown" in a.stdout or \
        a.stdout.rstrip().endswith("MB |"), a.stdout


def test_bad_values_are_refused_like_gpustat():
    need("h200-idle")
    for args in (["-P", "watts"], ["-e", "video"], ["--gpuname-width", "-1"], ["-i", "0"], ["--watch", "x"]):
        r = run(["status"] + args, "h200-idle")
        assert r.returncode == 2 and r.stderr, (args, r.stdout, r.stderr)


def test_watch_without_a_value_is_one_second():
    """`-i` / `--watch` with no value redraw every second (appended on a pipe)."""
    need("h200-idle")
    env = dict(os.environ, TRAINMON_NVML_LIBRARY=os.environ["TRAINMON_FAKE_NVML_PATH"],
               TRAINMON_FAKE_NVML_SCENARIO=os.path.join(SCEN, "h200-idle.json"), LC_ALL="C.UTF-8")
    for flag in ("-i", "--watch"):
        p = subprocess.Popen([os.environ["TRAINMON_BIN"], "status", flag, "--no-processes"], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(2.6)
        p.terminate()
        out, err = p.communicate(timeout=30)
        frames = [l for l in out.split("\n") if l.startswith("[0] ")]
        assert 2 <= len(frames) <= 4, (flag, out, err)


def test_full_command_lines_and_json_types(tmp_path):
    """-f: a line per process under its GPU (pid, CPU %, host memory, the full command line), the
    last with └─; --json types as gpustat's: cpu_percent a float, the memories integers."""
    need("h200-load")
    child = subprocess.Popen(["/usr/bin/python3", "-c", "import time; time.sleep(60)", "gpustat-f-test"])
    try:
        doc = json.load(open(os.path.join(SCEN, "h200-load.json")))
        procs = [{"pid": "env:GPUSTAT_TEST_PID", "gpu": 0, "type": "C", "name": "python3",
                  "used_memory": 512 << 20}] + [p for p in doc["processes"] if p["gpu"] == 0][:1]
        path = scenario_with(tmp_path, "h200-load", processes=procs)
        os.environ["GPUSTAT_TEST_PID"] = str(child.pid)
        try:
            r = run_file(["status", "--no-header", "--no-color", "-f"], path)
            j = run_file(["status", "--json"], path)
        finally:
            del os.environ["GPUSTAT_TEST_PID"]
        assert r.returncode == 0, r.stderr
        lines = r.stdout.split("\n")[:-1]
        assert lines[0].startswith("[0] NVIDIA H200 |"), lines
        assert re.fullmatch(r" ├─ {1,6}%d \( {1,3}\d+%%, [ \d]{1,5}\d(B|KB|MB|GB)\): "
                            r"/usr/bin/python3 -c import time; time\.sleep\(60\) gpustat-f-test" % child.pid,
                            lines[1]), lines[1]
        other = procs[1]["pid"]
        assert re.fullmatch(r" └─ {1,6}%d \(.{4}%%, .{6}\): .+" % other, lines[2]), lines[2]
        assert len([l for l in lines if l.startswith("[")]) == len(doc["devices"])
        assert j.returncode == 0, j.stderr
        gpu0 = json.loads(j.stdout)["gpus"][0]
        mine = [p for p in gpu0["processes"] if p["pid"] == child.pid][0]
        assert isinstance(mine["cpu_percent"], float), mine
        assert isinstance(mine["cpu_memory_usage"], int) and mine["cpu_memory_usage"] > 0, mine
        assert mine["gpu_memory_usage"] == 512 and isinstance(mine["gpu_memory_usage"], int), mine
        assert mine["full_command"] == ["/usr/bin/python3", "-c", "import", "time;", "time.sleep(60)",
                                        "gpustat-f-test"] or mine["full_command"][0] == "/usr/bin/python3", mine
        for k in ("power.draw", "enforced.power.limit", "memory.used", "memory.total", "temperature.gpu",
                  "utilization.gpu"):
            assert isinstance(gpu0[k], int), (k, gpu0[k])
    finally:
        child.kill()
        child.wait()


def test_print_completion_after_the_command():
    """gpustat's --print-completion works where a gpustat user types it: after `status`."""
    r = subprocess.run([os.environ["TRAINMON_BIN"], "status", "--print-completion", "bash"], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 0 and "complete -o default -F _trainmon trainmon" in r.stdout, r.stderr
    for opt in ("--show-all", "--show-full-cmd", "--no-processes", "--show-fan", "--watch", "--gpuname-width"):
        assert opt in r.stdout, opt
