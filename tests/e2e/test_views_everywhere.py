# SPDX-License-Identifier: Apache-2.0
"""The "everywhere" rules of status / query / dmon / pmon (docs/cli.md, "Output rules everywhere" and
"Exit status"), end to end through the fake libnvidia-ml.so.1: no escape codes on pipes and files,
narrow terminals cut lines instead of wrapping them, non-UTF-8 locales get ASCII, extreme values
(7-digit PIDs, 1000 W+, 100+ GPUs, 1 PB of memory) keep the layouts, and the documented exit statuses.
"""
import datetime
import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import termios
import time

import pytest

BIN = os.environ.get("TRAINMON_BIN", "")
FAKE = os.environ.get("TRAINMON_FAKE_NVML_PATH", "")
SCEN = os.environ.get("TRAINMON_SCENARIOS_DIR", "")

pytestmark = pytest.mark.skipif(not (BIN and FAKE and os.path.exists(BIN) and os.path.exists(FAKE)),
                                reason="trainmon / fake NVML not built (run under ctest)")

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
VIEWS = [["status"], ["status", "-P", "-F", "-e", "-c", "-p"], ["dmon", "-c", "1", "-s", "pucvmet"],
         ["pmon", "-c", "1", "-s", "um"], ["query", "--query-gpu=index,name,power.draw,memory.used",
                                            "--format=csv"]]


def env_for(scenario_path, **extra):
    e = {k: v for k, v in os.environ.items() if k not in ("LC_ALL", "LC_CTYPE", "LANG", "NO_COLOR", "COLUMNS")}
    e.update({"TRAINMON_NVML_LIBRARY": FAKE, "TRAINMON_FAKE_NVML_SCENARIO": scenario_path,
              "TRAINMON_FAKE_NVML_TIME_S": "0", "LC_ALL": "C.UTF-8", "TERM": "xterm-256color"})
    e.update({k: str(v) for k, v in extra.items()})
    return e


def scen(name):
    return os.path.join(SCEN, name + ".json")


def run(args, scenario_path, **extra):
    return subprocess.run([BIN] + args, env=env_for(scenario_path, **extra), capture_output=True, text=True,
                          timeout=60)


def run_on_pty(args, scenario_path, columns, **extra):
    """Run with stdout on a pseudo-terminal `columns` wide; returns (exit status, output text)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~termios.ONLCR  # keep "\n" as written
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    p = subprocess.Popen([BIN] + args, env=env_for(scenario_path, COLUMNS=columns, **extra), stdout=slave,
                         stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    os.close(slave)
    out = b""
    while True:
        r, _, _ = select.select([master], [], [], 30)
        if not r:
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    rc = p.wait(timeout=60)
    return rc, out.decode("utf-8", "replace")


# ---- pipes and files ----

@pytest.mark.parametrize("args", VIEWS, ids=lambda a: " ".join(a[:2]))
def test_pipes_get_no_escape_codes(args):
    r = run(args, scen("h200-load"))
    assert r.returncode == 0, r.stderr
    assert "\x1b" not in r.stdout and r.stdout.strip()


def test_files_get_no_escape_codes(tmp_path):
    out = tmp_path / "q.csv"
    r = run(["query", "--query-gpu=index,name", "--format=csv", "-f", str(out)], scen("h200-load"))
    assert r.returncode == 0 and r.stdout == ""
    assert out.read_text() == "index, name\n0, NVIDIA H200\n"
    with open(tmp_path / "status.txt", "w") as f:
        p = subprocess.run([BIN, "status"], env=env_for(scen("h200-load")), stdout=f, timeout=60)
    assert p.returncode == 0
    text = (tmp_path / "status.txt").read_text()
    assert "\x1b" not in text and "NVIDIA H200" in text


def test_terminal_gets_colours_unless_no_color():
    rc, out = run_on_pty(["status"], scen("h200-load"), 200)
    assert rc == 0 and "\x1b[" in out and "NVIDIA H200" in ANSI.sub("", out)
    rc, out = run_on_pty(["status"], scen("h200-load"), 200, NO_COLOR=1)
    assert rc == 0 and "\x1b" not in out
    rc, out = run_on_pty(["status", "--no-color"], scen("h200-load"), 200)
    assert rc == 0 and "\x1b" not in out


# ---- narrow terminals ----

@pytest.mark.parametrize("columns", [20, 40, 60])
def test_narrow_terminal_cuts_lines_and_never_wraps(columns):
    rc, out = run_on_pty(["status", "-P", "-c", "-p"], scen("h200-load"), columns)
    assert rc == 0
    lines = out.split("\n")[:-1]
    assert len(lines) == 2  # header + one GPU: nothing wrapped onto an extra line
    for line in lines:
        assert len(ANSI.sub("", line)) <= columns, repr(line)
    assert ANSI.sub("", lines[1]).startswith("[0] NVID")


def test_wide_terminal_keeps_whole_lines():
    rc, out = run_on_pty(["status", "-P"], scen("h200-load"), 300)
    assert rc == 0
    plain = ANSI.sub("", out)
    assert "[0] NVIDIA H200" in plain and "143771 MB |" in plain


# ---- locales ----

@pytest.mark.parametrize("locale", [{"LANG": "C"}, {"LC_ALL": "POSIX"}, {"LANG": "en_US.ISO-8859-1"}])
def test_non_utf8_locale_gets_ascii(locale):
    e = env_for(scen("h200-load"))
    e.pop("LC_ALL", None)
    e.update(locale)
    for args in VIEWS:
        p = subprocess.run([BIN] + args, env=e, capture_output=True, timeout=60)
        assert p.returncode == 0, p.stderr
        assert all(b < 0x80 for b in p.stdout), (args, p.stdout)
    p = subprocess.run([BIN, "status"], env=e, capture_output=True, text=True, timeout=60)
    assert re.search(r"\| 52C, 100 % \|", p.stdout), p.stdout


def test_utf8_locale_gets_the_degree_sign():
    r = run(["status"], scen("h200-load"))
    assert "| 52°C, 100 % |" in r.stdout


# ---- extreme values: many GPUs, 1 PB, 1500 W, 7-digit PIDs ----
# The fake driver holds at most 64 devices, so 100+ GPU indices are covered by the unit tests
# (tests/unit/export: status and dmon / pmon rows built for GPU 123); here 64 GPUs, the last one huge.

PB = 1 << 50
NGPU = 64
BIG = NGPU - 1


def extreme_scenario(tmp_path):
    devices, procs = [], []
    for i in range(NGPU):
        big = i == BIG
        devices.append({
            "name": "NVIDIA Future GPU" if big else "NVIDIA H200",
            "uuid": "GPU-00000000-0000-4000-8000-%012d" % i,
            "pci": {"bus_id": "00000000:%02X:00.0" % (i + 1), "domain": 0, "bus": i + 1, "device": 0,
                    "device_id": "0x233510DE", "subsystem_id": "0x18BE10DE"},
            "memory_total": PB if big else 150754820096,
            "power_limits": {"current": 1_600_000 if big else 700_000, "min": 200_000, "max": 1_600_000},
            "max_clocks": {"graphics": 1980, "sm": 1980, "memory": 3201, "video": 1545},
            "num_fans": 0,
            "metrics": {"utilization_gpu": 100, "utilization_memory": 8, "temperature_gpu": 52,
                        "temperature_memory": 41, "power_draw": 1_512_000 if big else 630_000,
                        "clock_graphics": 1980, "clock_memory": 3201,
                        "memory_used": PB - (1 << 30) if big else 33_933_164_544},
        })
    procs.append({"pid": 4194303, "gpu": BIG, "type": "C", "name": "python", "used_memory": PB - (1 << 30),
                  "sm_util": 99, "mem_util": 8})
    procs.append({"pid": 1234567, "gpu": 0, "type": "C", "name": "train", "used_memory": 1 << 30})
    path = tmp_path / "extreme.json"
    path.write_text(json.dumps({"name": "views-extreme", "driver_version": "590.48.01", "devices": devices,
                                "processes": procs}))
    return str(path)


def test_extreme_values_fit_dmon(tmp_path):
    path = extreme_scenario(tmp_path)
    r = run(["dmon", "-c", "1", "-s", "pum"], path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.split("\n")[:-1]
    assert len(lines) == 2 + NGPU
    header = lines[0].split()
    for line in lines[2:]:
        assert len(line.split()) == len(header) - 1, line  # every cell separated, none merged
    big = lines[-1].split()
    assert big[0] == str(BIG) and big[1] == "1512"
    assert big[header.index("fb") - 1] == str((PB - (1 << 30)) >> 20)
    # Up to 6 digits the columns hold exactly nvidia-smi's widths.
    assert lines[2].startswith("    0    630     52     41    100      8")


def test_extreme_values_fit_pmon(tmp_path):
    path = extreme_scenario(tmp_path)
    r = run(["pmon", "-c", "1", "-s", "um", "-i", f"0,{BIG}"], path)
    assert r.returncode == 0, r.stderr
    rows = r.stdout.split("\n")[2:-1]
    assert rows[0] == "    0    1234567     C      -      -      -      -      -      -   1024      -    train          "
    assert rows[1].startswith(f"{BIG:>5}    4194303     C     99      8      -      -      -      -")
    assert rows[1].split()[9] == str((PB - (1 << 30)) >> 20)


def test_pmon_and_dmon_json_times_carry_the_zone_offset(tmp_path):
    # RFC 3339 with the offset of the zone the reader's TZ names (POSIX TZ strings: no tzdata needed),
    # and the instant it reads as is the sample's (the wall clock of the run)
    path = extreme_scenario(tmp_path)
    for tz, offset in (("UTC", "+00:00"), ("CST-8", "+08:00"), ("EST+5", "-05:00")):
        for args in (["pmon", "-c", "1", "-s", "um", "--json"], ["dmon", "-c", "1", "--json"]):
            before = time.time()
            r = run(args, path, TZ=tz)
            after = time.time()
            assert r.returncode == 0, r.stderr
            rows = [json.loads(line) for line in r.stdout.splitlines()]
            assert rows and all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}" + re.escape(offset), row["time"])
                                for row in rows), (tz, args, rows[:2])
            t = datetime.datetime.fromisoformat(rows[0]["time"]).timestamp()
            assert before - 1 <= t <= after + 1, (tz, args, rows[0]["time"])


def test_extreme_values_fit_status_and_query(tmp_path):
    path = extreme_scenario(tmp_path)
    r = run(["status", "-P", "-p"], path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.split("\n")[:-1]
    assert len(lines) == 1 + NGPU
    mib = (PB - (1 << 30)) >> 20
    want = rf"^\[{BIG}\] NVIDIA Future GPU +\| 52°C, 100 %,  1512 / 1600 W \| {mib} / {PB >> 20} MB \|"
    assert re.search(want, lines[-1]), lines[-1]
    assert "/4194303(%dM)" % mib in lines[-1]
    assert "/1234567(1024M)" in lines[1]
    # [0] .. [63]: the names and the '|' columns line up across one- and two-digit indexes
    assert lines[1].startswith("[0]  NVIDIA H200 ") and lines[11].startswith("[10] NVIDIA H200 ")
    assert len({line.index("|") for line in lines[1:]}) == 1, lines[1:12]
    q = run(["query", "--query-gpu=index,memory.total,power.draw", "--format=csv,noheader", "-i", str(BIG)], path)
    assert q.stdout == "%d, %d MiB, 1512.00 W\n" % (BIG, PB >> 20)
    doc = json.loads(run(["status", "--json"], path).stdout)
    assert len(doc["gpus"]) == NGPU and doc["gpus"][BIG]["memory.total"] == PB >> 20


# ---- exit statuses (docs/cli.md, src/cli/exit_codes.h) ----

COMMANDS = [["status"], ["status", "--json"], ["status", "--no-header"], ["query", "--query-gpu=index", "--format=csv"], ["dmon", "-c", "1"], ["pmon", "-c", "1"]]


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: a[0])
def test_exit_status_no_gpu(args, tmp_path):
    path = tmp_path / "none.json"
    path.write_text(json.dumps({"name": "no-gpu", "devices": []}))
    assert run(args, str(path)).returncode == 3


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: a[0])
def test_exit_status_no_driver(args):
    e = env_for(scen("h200-load"))
    e["TRAINMON_NVML_LIBRARY"] = "/nonexistent/libnvidia-ml.so.1"
    p = subprocess.run([BIN] + args, env=e, capture_output=True, text=True, timeout=60)
    assert p.returncode == 3, p.stdout + p.stderr
    # The loader's error is said once, on stderr (not again in the text output; --json keeps it as data).
    said = p.stderr + ("" if "--json" in args else p.stdout)
    assert said.count("NVML library not loaded") == 1, p.stdout + p.stderr
    assert p.stderr.startswith(f"trainmon {args[0]}: NVML library not loaded"), p.stderr


@pytest.mark.parametrize("extra", [[], ["--json"]], ids=["text", "json"])
def test_status_id_without_any_gpu_is_the_drivers_status(extra, tmp_path):
    # --id cannot match when there is no GPU at all: the reason is the driver (3), not the id (2).
    p = run(["status", "--id", "0", *extra], scen("h200-load"), TRAINMON_NVML_LIBRARY="/nonexistent/libnvidia-ml.so.1")
    assert p.returncode == 3, p.stdout + p.stderr
    assert "NVML library not loaded" in p.stderr and "matches" not in p.stderr
    if extra:
        assert json.loads(p.stdout)["gpus"] == []
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"name": "empty", "devices": []}))
    p = run(["status", "--id", "0", *extra], str(empty))
    assert p.returncode == 3, p.stdout + p.stderr
    assert p.stderr.count("No devices were found") == 1, p.stderr


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: a[0])
def test_exit_status_nvml_failure(args, tmp_path):
    path = tmp_path / "broken.json"
    path.write_text(json.dumps({"name": "broken", "init_error": "NVML_ERROR_UNKNOWN", "devices": []}))
    assert run(args, str(path)).returncode == 4


@pytest.mark.parametrize("args", [["dmon", "-s", "x"], ["pmon", "-s", "p"], ["dmon", "-o", "X"],
                                  ["query", "--query-gpu=index", "--format=xml"], ["query", "--query-gpu=foo"],
                                  ["status", "--no-such-option"], ["dmon", "-i", "7"], ["status", "--id", "9"],
                                  ["query", "--query-gpu=index", "-lms", "soon"],
                                  # loop intervals and sample counts must be positive and finite
                                  ["status", "-i", "0"], ["status", "-i", "-1"], ["status", "--interval", "nan"],
                                  ["query", "--query-gpu=index", "-l", "-1"], ["query", "--query-gpu=index", "-l", "0"],
                                  ["query", "--query-gpu=index", "-lms", "0"], ["query", "--query-gpu=index", "-l", "inf"],
                                  ["query", "--query-gpu=index", "-l", "1e300"], ["dmon", "-d", "0"], ["top", "-n", "0"], ["top", "-n", "-1"],
                                  ["--proc-root", "/nonexistent", "status"], ["--sys-root", "/nonexistent", "record", "--duration", "1"],
                                  ["pmon", "-d", "-1"], ["dmon", "-c", "0"], ["pmon", "-c", "-2"], ["dmon", "-c", "1.5"],
                                  # one output format at a time
                                  ["dmon", "--csv", "--json", "-c", "1"], ["pmon", "--json", "--csv", "-c", "1"],
                                  ["record", "--interval", "0", "--duration", "1"],
                                  ["record", "--interval", "nan", "--duration", "1"],
                                  ["run", "--interval", "-1", "--", "true"],
                                  # durations too long to represent, NaN, infinite (1e12 s wrapped to < 0)
                                  ["record", "--duration", "1e12"], ["record", "--duration", "nan"],
                                  ["record", "--duration", "1", "--retention", "1e300d"],
                                  ["record", "--duration", "1", "--print-every", "inf"],
                                  ["run", "--print-every", "1e30", "--", "true"],
                                  ["run", "--interval", "1e12", "--", "true"],
                                  # diagnosis thresholds outside their range
                                  ["record", "--duration", "1", "--threshold", "window_s=0"],
                                  ["run", "--threshold", "cpu_low_pct=101", "--", "true"],
                                  ["diagnose", "last", "--threshold", "power_cap_frac=2"]],
                         ids=lambda a: " ".join(a))
def test_exit_status_bad_argument(args, tmp_path):
    p = run(args, scen("h200-load"), TRAINMON_DB=tmp_path / "t.db")
    assert p.returncode == 2, p.stdout + p.stderr
    assert (p.stderr + p.stdout).strip(), "a bad argument is explained"
    assert not (tmp_path / "t.db").exists(), "nothing was recorded"


# ---- -lms, spelled as nvidia-smi spells it ----

def test_query_loop_in_milliseconds_nvidia_smi_spelling(tmp_path):
    for n, spelling in enumerate((["-lms", "100"], ["-lms=100"], ["--lms", "100"], ["--loop-ms=100"])):
        out = tmp_path / f"loop{n}.csv"
        p = subprocess.Popen([BIN, "query", "--query-gpu=index,utilization.gpu", "--format=csv,noheader",
                              "-f", str(out)] + spelling, env=env_for(scen("h200-load")), stderr=subprocess.PIPE)
        try:
            end = time.monotonic() + 30
            while time.monotonic() < end:
                if out.exists() and out.read_text().count("\n") >= 3:
                    break
                time.sleep(0.05)
            assert out.read_text().startswith("0, 100 %\n0, 100 %\n0, 100 %\n"), spelling
        finally:
            p.terminate()
            rc = p.wait(timeout=30)
        assert rc == 0, (spelling, p.stderr.read())


def test_control_characters_in_names_never_reach_the_terminal(tmp_path):
    # A process name (from the driver) and a recorded command line with a newline and an escape
    # sequence: every view prints '?' for them, rows stay whole.
    d = json.load(open(scen("h200-load")))
    for proc in d["processes"]:
        proc["name"] = "/opt/bad\nname\x1b[31mRED"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(d))
    for args in (["pmon", "-c", "1"], ["status", "-c"], ["status", "-c", "--force-color"]):
        p = run(args, str(path))
        assert p.returncode == 0, p.stderr
        assert "\x1b[31mRED" not in p.stdout and "bad\n" not in p.stdout, (args, p.stdout)
    assert "bad?name?[31mRE" in run(["pmon", "-c", "1"], str(path)).stdout
    db = tmp_path / "t.db"
    e = env_for(scen("h200-load"), TRAINMON_DB=db)
    r = subprocess.run([BIN, "run", "--no-report", "-q", "--", "true", "a\nb\x1b[31mRED"], env=e, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    for args in (["runs"], ["show", "last"], ["report", "last", "--format", "md", "-o", "-"]):
        p = subprocess.run([BIN, *args], env=e, capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, (args, p.stderr)
        assert "\x1b" not in p.stdout and "a\nb" not in p.stdout, (args, p.stdout)


def test_status_json_with_interval_is_json_lines(tmp_path):
    e = env_for(scen("h200-load"))
    e.pop("TRAINMON_FAKE_NVML_TIME_S")
    p = subprocess.Popen([BIN, "status", "--json", "-i", "0.2"], env=e, stdout=subprocess.PIPE, text=True)
    try:
        lines = [p.stdout.readline() for _ in range(3)]
    finally:
        p.terminate()
        p.wait(timeout=30)
    docs = [json.loads(line) for line in lines]  # one whole document per line
    assert all(d["gpus"][0]["name"] == "NVIDIA H200" for d in docs)


def test_runs_table_never_wraps_on_a_terminal(tmp_path):
    db = tmp_path / "t.db"
    e = env_for(scen("h200-load"), TRAINMON_DB=db)
    for cmd in (["sh", "-c", "kill -SEGV $$"], ["true", "x" * 200]):
        subprocess.run([BIN, "run", "--no-report", "-q", "--", *cmd], env=e, capture_output=True, timeout=120)
    status, text = run_on_pty(["runs"], scen("h200-load"), 80, TRAINMON_DB=db)
    assert status == 0, text
    lines = [line for line in text.replace("\r", "").split("\n") if line]
    assert len(lines) == 3, text
    assert all(len(line) <= 80 for line in lines), text
    # a signal by its name, not 128 + its number
    assert "signaled(SIGSEGV)" in text and "(139)" not in text, text
    md = subprocess.run([BIN, "report", "1", "--format", "md"], env=e, capture_output=True, text=True, timeout=60)
    assert md.returncode == 0 and "signaled, SIGSEGV (signal 11)" in md.stdout, (md.stdout[:800], md.stderr)
    # the STATUS column is as wide as "signaled(SIGSEGV)": START lines up on every row
    assert len({line.index("START") if i == 0 else line.index("20") for i, line in enumerate(lines)}) == 1, text
