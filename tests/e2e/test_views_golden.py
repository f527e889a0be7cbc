# SPDX-License-Identifier: Apache-2.0
"""Golden tests for trainmon query / dmon / pmon / status against real nvidia-smi captures.

Each capture scenario (tests/scenarios/<name>.json, built from /work/shared/captures) is played by the
fake libnvidia-ml.so.1; trainmon's output must equal the capture's for every field trainmon supports.
Skips (never fails) while the binary lacks the commands or the scenarios are not there yet.
"""
import json
import os
import re
import subprocess

import pytest

BIN = os.environ.get("TRAINMON_BIN", "")
FAKE = os.environ.get("TRAINMON_FAKE_NVML_PATH", "")
SCEN = os.environ.get("TRAINMON_SCENARIOS_DIR", "")
CAPS = os.environ.get("TRAINMON_CAPTURES_DIR", "")

# scenario -> (capture file, capture state)
CASES = {
    "h100-idle": ("linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt", "idle"),
    "h100-load": ("linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt", "load"),
    "h200-idle": ("linux-x86_64__nvidia-h200__590.48.01.txt", "idle"),
    "h200-load": ("linux-x86_64__nvidia-h200__590.48.01.txt", "load"),
    "rtx2080-idle": ("linux-x86_64__nvidia-geforce-rtx-2080-super__595.71.05.txt", "idle"),
    "rtx2080-load": ("linux-x86_64__nvidia-geforce-rtx-2080-super__595.71.05.txt", "load"),
    "h100-mig": ("linux-x86_64__nvidia-h100-mig__590.48.01.txt", "load"),
}

# Fields nvidia-smi prints that the comparison leaves out, and why.
EXCLUDED = {
    "timestamp": "wall-clock time of the run, differs by construction",
}


def run(args, scenario, check=False):
    env = dict(os.environ)
    env["TRAINMON_NVML_LIBRARY"] = FAKE
    env["TRAINMON_FAKE_NVML_SCENARIO"] = os.path.join(SCEN, scenario + ".json")
    env.setdefault("TRAINMON_FAKE_NVML_TIME_S", "0")
    env["LC_ALL"] = "C.UTF-8"
    return subprocess.run([BIN] + args, env=env, capture_output=True, text=True, timeout=60, check=check)


def have_commands():
    if not BIN or not os.path.exists(BIN) or not FAKE or not os.path.exists(FAKE):
        return False
    r = subprocess.run([BIN, "query", "--help-query-gpu"], capture_output=True, text=True, timeout=30)
    return r.returncode == 0 and "List of valid properties" in r.stdout


pytestmark = pytest.mark.skipif(not have_commands(), reason="trainmon query/fake NVML not built yet")


def section(text, title):
    """Lines of the capture section whose heading line contains `title` (after the command and rule)."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("# ") and title in line:
            out = []
            for l in lines[i + 3:]:
                if l.startswith("####") or (not l.strip() and out):
                    break
                if l.strip():
                    out.append(l)
            return lines[i + 1], out
    return None, []


def supported_fields():
    r = subprocess.run([BIN, "query", "--help-query-gpu"], capture_output=True, text=True, check=True)
    head = r.stdout.split("Accepted for compatibility")[0]
    return set(re.findall(r'^"([^"]+)"', head, re.M))


def need(scenario):
    path = os.path.join(SCEN, scenario + ".json")
    if not os.path.exists(path):
        pytest.skip(f"scenario {scenario} not written yet")


@pytest.mark.parametrize("scenario", sorted(CASES))
def test_query_gpu_matches_capture(scenario):
    need(scenario)
    cap_file, state = CASES[scenario]
    text = open(os.path.join(CAPS, cap_file)).read()
    cmd, lines = section(text, f"{state} :: query-gpu (csv")
    assert cmd and len(lines) >= 2
    fields = re.search(r"--query-gpu=(\S+)", cmd).group(1)
    r = run(["query", f"--query-gpu={fields}", "--format=csv"], scenario)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout.strip("\n").split("\n")
    assert out[0] == lines[0], "header differs"
    names = fields.split(",")
    want = lines[1].split(", ")
    got = out[1].split(", ")
    assert len(got) == len(want) == len(names)
    supported = supported_fields()
    diffs = []
    compared = 0
    for name, w, g in zip(names, want, got):
        if name in EXCLUDED or name not in supported:
            continue
        compared += 1
        if w != g:
            diffs.append(f"{name}: capture {w!r} trainmon {g!r}")
    assert compared >= 70
    assert not diffs, "\n".join(diffs)


@pytest.mark.parametrize("scenario", sorted(CASES))
def test_query_compute_apps_matches_capture(scenario):
    need(scenario)
    cap_file, state = CASES[scenario]
    text = open(os.path.join(CAPS, cap_file)).read()
    cmd, lines = section(text, f"{state} :: query-compute-apps")
    fields = re.search(r"--query-compute-apps=(\S+)", cmd).group(1)
    r = run(["query", f"--query-compute-apps={fields}", "--format=csv"], scenario)
    assert r.returncode == 0, r.stdout + r.stderr
    out = [l for l in r.stdout.split("\n") if l]
    assert out[0] == lines[0]
    strip_ts = lambda l: l.split(", ", 1)[1]
    assert sorted(strip_ts(l) for l in out[1:]) == sorted(strip_ts(l) for l in lines[1:])


# Known gap (issue 4 stays open): the capture scenarios hold the values of the --query-gpu moment,
# while each capture's dmon/pmon rows were taken seconds later (other power, clocks, per-process
# enc/dec shown as "-"). Until scenarios carry those later moments, these rows cannot match.
DMON_GAP = {"h100-load", "h100-mig", "h200-load", "rtx2080-idle", "rtx2080-load"}
PMON_GAP = {"h100-load", "h200-load", "rtx2080-load"}


def _gap(names, why):
    return [pytest.param(s, marks=pytest.mark.xfail(reason=why, strict=False)) if s in names else s
            for s in sorted(CASES)]


@pytest.mark.parametrize("scenario", _gap(DMON_GAP, "scenario lacks the capture's dmon moment"))
def test_dmon_matches_capture(scenario):
    need(scenario)
    cap_file, state = CASES[scenario]
    _, lines = section(open(os.path.join(CAPS, cap_file)).read(), f"{state} :: dmon")
    r = run(["dmon", "-c", "1"], scenario)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout.split("\n")
    assert out[0] == lines[0] and out[1] == lines[1]
    assert out[2] in lines[2:], f"{out[2]!r} not among the capture's rows"


@pytest.mark.parametrize("scenario", _gap(PMON_GAP, "enc/dec '-' vs 0 not modelled by the scenarios"))
def test_pmon_matches_capture(scenario):
    need(scenario)
    cap_file, state = CASES[scenario]
    _, lines = section(open(os.path.join(CAPS, cap_file)).read(), f"{state} :: pmon")
    r = run(["pmon", "-c", "1"], scenario)
    assert r.returncode == 0, r.stdout + r.stderr
    out = [l for l in r.stdout.split("\n") if l]
    assert out[0] == lines[0] and out[1] == lines[1]
    for row in out[2:]:
        assert row in lines[2:], f"{row!r} not among the capture's rows"


def test_unknown_field_is_an_error_like_nvidia_smi():
    need("h200-idle")
    r = run(["query", "--query-gpu=memory.used,foo", "--format=csv"], "h200-idle")
    assert r.returncode == 2
    assert r.stdout == 'Field "foo" is not a valid field to query.\n\n'


GPUSTAT_USER_SCRIPT = r"""
import json, sys
stats = json.load(sys.stdin)
print(stats["hostname"], stats["driver_version"], stats["query_time"])
for gpu in stats["gpus"]:
    line = "[{}] {} | {} % | {} / {} MB |".format(
        gpu["index"], gpu["name"], gpu["utilization.gpu"], gpu["memory.used"], gpu["memory.total"])
    for p in gpu["processes"]:
        line += " {}/{}({}M)".format(p["username"], p["pid"], p["gpu_memory_usage"])
    print(line)
"""


@pytest.mark.parametrize("scenario", ["h200-load", "h100-load"])
def test_status_json_works_with_a_gpustat_script(scenario):
    need(scenario)
    r = run(["status", "--json"], scenario)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["schema_version"] == 1
    s = subprocess.run(["/usr/bin/python3", "-c", GPUSTAT_USER_SCRIPT], input=r.stdout, capture_output=True,
                       text=True, check=True)
    assert "[0] NVIDIA H" in s.stdout
    for gpu in doc["gpus"]:
        assert isinstance(gpu["memory.total"], int) and gpu["memory.total"] > 0
        for p in gpu["processes"]:
            assert isinstance(p["pid"], int)


def test_status_on_a_pipe_has_no_escape_codes():
    need("h200-load")
    r = run(["status"], "h200-load")
    assert r.returncode == 0, r.stderr
    assert "\x1b" not in r.stdout
    assert "NVIDIA H200" in r.stdout
