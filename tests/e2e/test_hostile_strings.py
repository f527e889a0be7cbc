# SPDX-License-Identifier: Apache-2.0
"""Strings from the driver, /proc, the training process and the user reach every output neutralised
(docs/cli.md "Untrusted text"): a GPU name, serial and process name from the (fake) driver, a process
whose name and command line carry escape sequences, a run name and a label, all with terminal
controls (7- and 8-bit CSI, OSC, BEL, newlines, bidi overrides) and the delimiters of each format
(comma, quote, pipe, backtick, HTML). Each output is then read with its own format's reader: CSV
with Python's csv module, /metrics with promtool, JSON with json, the Markdown report by its table
structure, the HTML report by where the strings land."""

import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from test_run_helpers import PY, SOURCE_DIR, env, kill_quietly, trainmon_bin, wait_for

# What a hostile neighbour or a broken driver can put into a name.
CONTROLS = "\x1b]2;PWNED\x07\x1b[31m\u009b1m\u202e\n\r\t"
DEVICE_NAME = "Evil" + CONTROLS + 'GPU, "quoted" |pipe| `tick` <b>bold</b>'
PROC_NAME = "py\x1b[2J,thon|<i>`x`\n"
RUN_NAME = "run\x1b]0;T\x07|<b>`"
LABEL = "team=ml\x1b[5m, \"x\" |<script>"
# Bytes that must never reach a reader raw: ESC, BEL, 8-bit CSI (raw or UTF-8 encoded), RLO.
FORBIDDEN = [b"\x1b", b"\x07", b"\x9b", "\u009b".encode(), "\u202e".encode()]


def hostile_scenario(tmp_path):
    with open(os.path.join(SOURCE_DIR, "tests", "scenarios", "healthy-1gpu.json")) as f:
        s = json.load(f)
    dev = s["devices"][0]
    dev["name"] = DEVICE_NAME
    dev["serial"] = "SER,\x1b[1mIAL\n"
    s["processes"][0]["name"] = PROC_NAME
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(s))
    return str(path)


def assert_clean(data, what):
    raw = data if isinstance(data, bytes) else data.encode("utf-8", "surrogateescape")
    for bad in FORBIDDEN:
        assert bad not in raw, f"{what}: {bad!r} reached the output:\n{raw[:3000]!r}"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """One `trainmon run` of a job with a hostile name and command line, on a hostile driver."""
    tmp = tmp_path_factory.mktemp("hostile")
    scen = hostile_scenario(tmp)
    # The GPU process: a real process whose command line carries controls and delimiters.
    gpu_proc = subprocess.Popen([PY, "-c", "import time; time.sleep(120)", CONTROLS, "a,b", "|<b>|"],
                                stdin=subprocess.DEVNULL)
    # The job: renames itself (comm, 15 bytes) to controls and sleeps through a few ticks.
    job = tmp / "job.py"
    job.write_text("import ctypes, sys, time\n"
                   "ctypes.CDLL(None).prctl(15, b'\\x1b[31m|<b>,\\n', 0, 0, 0)\n"
                   "time.sleep(2)\n")
    db = tmp / "h.db"
    e = env(scenario=scen, TRAINMON_TEST_PID=gpu_proc.pid)
    e["TRAINMON_FAKE_NVML_SCENARIO"] = scen
    p = subprocess.run([trainmon_bin(), "run", "--db", str(db), "--interval", "0.2", "--print-every", "0.5",
                        "--name", RUN_NAME, "--label", LABEL, "--", PY, str(job), CONTROLS, "x,y", "|`z`|"],
                       env=e, capture_output=True, timeout=120)
    yield {"tmp": tmp, "db": db, "env": e, "run": p, "gpu_proc": gpu_proc}
    kill_quietly(gpu_proc)
    gpu_proc.wait()


def tm(recorded, *args, check=True):
    p = subprocess.run([trainmon_bin(), *args], env=recorded["env"], capture_output=True, timeout=120)
    if check:
        assert p.returncode == 0, (args, p.stderr)
    return p


def test_run_summary_and_resource_lines(recorded):
    p = recorded["run"]
    assert p.returncode == 0, p.stderr
    assert_clean(p.stderr, "run stderr")
    text = p.stderr.decode()
    assert "Evil?]2;PWNED??[31m?1m???" in text, text  # the name is there, each control a '?'


@pytest.mark.parametrize("args", [["show", "last"], ["runs"], ["diagnose", "last"], ["status"], ["status", "-c", "-u"],
                                  ["dmon", "-c", "1"], ["pmon", "-c", "1"]], ids=lambda a: " ".join(a))
def test_terminal_views(recorded, args):
    if args[0] in ("show", "runs", "diagnose"):
        args = args + ["--db", str(recorded["db"])]
    p = tm(recorded, *args)
    assert_clean(p.stdout, " ".join(args))
    assert_clean(p.stderr, " ".join(args) + " stderr")


def test_show_keeps_one_line_per_field(recorded):
    out = tm(recorded, "show", "last", "--db", str(recorded["db"])).stdout.decode()
    lines = out.splitlines()
    assert any(l.startswith("  label:    team=ml?[5m, \"x\" |<script>") for l in lines), out
    gpu = [l for l in lines if l.startswith("  GPU0:")]
    assert len(gpu) == 1 and "PWNED" in gpu[0], out  # the name's newline did not start a line


def read_smi_csv(text):
    rows = list(csv.reader(io.StringIO(text), skipinitialspace=True))
    assert rows and all(len(r) == len(rows[0]) for r in rows), rows
    return rows


def test_query_csv_is_one_field_per_value(recorded):
    p = tm(recorded, "query", "--query-gpu=index,name,serial,uuid", "--format=csv")
    assert_clean(p.stdout, "query")
    rows = read_smi_csv(p.stdout.decode())
    assert len(rows) == 2
    assert rows[1][1].startswith("Evil?]2;PWNED") and rows[1][1].endswith("<b>bold</b>"), rows
    assert '"quoted"' in rows[1][1]
    assert rows[1][2] == "SER,?[1mIAL?"
    p = tm(recorded, "query", "--query-compute-apps=pid,process_name,used_memory", "--format=csv,noheader")
    assert_clean(p.stdout, "query apps")
    rows = read_smi_csv(p.stdout.decode())
    assert rows[0][1] == "py?[2J,thon|<i>`x`?", rows


def test_normal_names_stay_byte_identical_to_nvidia_smi(recorded):
    e = dict(recorded["env"])
    e["TRAINMON_FAKE_NVML_SCENARIO"] = os.path.join(SOURCE_DIR, "tests", "scenarios", "healthy-1gpu.json")
    p = subprocess.run([trainmon_bin(), "query", "--query-gpu=name,uuid", "--format=csv"], env=e,
                       capture_output=True, text=True, timeout=60)
    assert p.stdout == "name, uuid\nNVIDIA H100 80GB HBM3, GPU-6f8e2a10-0000-4000-8000-000000000001\n"


def test_pmon_csv(recorded):
    p = tm(recorded, "pmon", "-c", "1", "--csv")
    assert_clean(p.stdout, "pmon csv")
    rows = read_smi_csv(p.stdout.decode())
    assert len(rows) >= 2


def test_export_csv_and_jsonl(recorded):
    for series in ("process", "gpu_process", "events"):
        p = tm(recorded, "export", "last", "--db", str(recorded["db"]), "--format", "csv", "--series", series)
        assert_clean(p.stdout, "export " + series)
        text = p.stdout.decode()
        rows = list(csv.reader(io.StringIO(text)))
        assert all(len(r) == len(rows[0]) for r in rows), series
        assert len(rows) == len(text.splitlines()), "a value broke a line: " + series
    p = tm(recorded, "export", "last", "--db", str(recorded["db"]), "--format", "jsonl")
    assert_clean(p.stdout, "export jsonl")
    for line in p.stdout.decode().splitlines():
        json.loads(line)


def test_json_outputs_parse_and_carry_no_raw_controls(recorded):
    for args in (["runs", "--json", "--db", str(recorded["db"])], ["show", "last", "--json", "--db", str(recorded["db"])],
                 ["status", "--json"], ["dmon", "-c", "1", "--json"], ["pmon", "-c", "1", "--json"]):
        p = tm(recorded, *args)
        assert_clean(p.stdout, " ".join(args))
        for line in ([p.stdout] if args[0] in ("runs", "show", "status") else p.stdout.splitlines()):
            json.loads(line)
    run = json.loads(tm(recorded, "show", "last", "--json", "--db", str(recorded["db"])).stdout)
    assert run["name"] == RUN_NAME, "JSON keeps the exact string (escaped, not replaced)"


def md_cells(line):
    """Cells of a Markdown table row, split on pipes that are not escaped."""
    assert line.startswith("|") and line.endswith("|"), line
    return re.split(r"(?<!\\)\|", line[1:-1])


def test_markdown_report(recorded):
    p = tm(recorded, "report", "last", "--db", str(recorded["db"]), "--format", "md")
    assert_clean(p.stdout, "report md")
    text = p.stdout.decode()
    lines = text.splitlines()
    tables = []
    for l in lines:
        if l.startswith("|"):
            if tables and tables[-1][-1] is not None:
                tables[-1].append(l)
            else:
                tables.append([l])
        elif tables and tables[-1][-1] is not None:
            tables[-1].append(None)
    for t in tables:
        rows = [r for r in t if r is not None]
        widths = {len(md_cells(r)) for r in rows}
        assert len(widths) == 1, "a value split or joined cells:\n" + "\n".join(rows)
    # Outside code spans no raw HTML and no unescaped backtick run that could open one.
    no_code = re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", text)
    assert "<b>" not in no_code and "<script>" not in no_code and "<i>" not in no_code, no_code
    assert "Evil" in text and "team=ml" in text


def test_html_report_keeps_strings_in_the_data_only(recorded):
    out = recorded["tmp"] / "r.html"
    tm(recorded, "report", "last", "--db", str(recorded["db"]), "-o", str(out))
    html = out.read_bytes()
    assert_clean(html.replace(b"\\u001b", b""), "report html")
    text = html.decode()
    assert "<b>bold</b>" not in text and "<script>\"" not in text
    # The run name reaches the title escaped, and the data only JSON-escaped.
    title = re.search(r"<title>(.*?)</title>", text, re.S).group(1)
    assert "&lt;b&gt;" in title and "<b>" not in title, title
    data = re.search(r'<script type="application/json" id="trainmon-data">(.*?)</script>', text, re.S).group(1)
    assert "<" not in data
    assert json.loads(data)["run"]["name"] == RUN_NAME


def test_metrics_pass_promtool(recorded, tmp_path):
    promtool = shutil.which("promtool")
    e = recorded["env"]
    err = open(tmp_path / "serve.err", "w")
    proc = subprocess.Popen([trainmon_bin(), "serve", "--listen", "127.0.0.1:0", "--db", str(tmp_path / "s.db"),
                             "--interval", "0.5", "--label", LABEL], env=e, stdout=subprocess.DEVNULL, stderr=err)
    try:
        port = wait_for(lambda: (re.search(r"127\.0\.0\.1:(\d+)/", open(tmp_path / "serve.err").read()) or [None, None])[1],
                        timeout=60)
        assert port, open(tmp_path / "serve.err").read()
        import urllib.request
        body = b""
        for _ in range(100):
            body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read()
            if b"modelName" in body:
                break
            time.sleep(0.2)
        assert_clean(body, "/metrics")
        assert b'modelName="Evil?]2;PWNED??[31m?1m?\\n' in body, body[:2000]
        if promtool:
            r = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True, timeout=60)
            # promtool's lint of names is not ours to fix (dcgm-exporter's names); the format must parse.
            assert b"error while linting" not in r.stdout + r.stderr and b"text format parsing error" not in r.stderr, r
        snap = urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/snapshot", timeout=10).read()
        assert_clean(snap, "/api/v1/snapshot")
        json.loads(snap)
    finally:
        kill_quietly(proc)
        proc.wait()
