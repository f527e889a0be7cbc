# SPDX-License-Identifier: Apache-2.0
"""Golden tests for trainmon query / dmon / pmon / status against real nvidia-smi captures.

Each capture scenario (tests/scenarios/<name>.json, built from tests/captures by
scripts/capture_to_scenario.py) is played by the fake libnvidia-ml.so.1 with its clock frozen at the
moment of the view compared: t=0 for --query-gpu / --query-compute-apps, the time of each dmon / pmon
sample for those rows. trainmon's output must equal the capture's for every field trainmon supports.
Skips (never fails) while the binary lacks the commands or the scenarios are not there yet.
"""
import importlib.util
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
    "h100-mig-idle": ("linux-x86_64__nvidia-h100-mig__590.48.01.txt", "idle"),
}

# Fields nvidia-smi prints that the comparison leaves out, and why.
EXCLUDED = {
    "timestamp": "wall-clock time of the run, differs by construction",
}


def run(args, scenario, check=False, time_s=0):
    """trainmon on the fake driver playing `scenario`, its clock frozen at `time_s` scenario seconds
    (0: the capture's --query-gpu moment)."""
    env = dict(os.environ)
    env["TRAINMON_NVML_LIBRARY"] = FAKE
    env["TRAINMON_FAKE_NVML_SCENARIO"] = os.path.join(SCEN, scenario + ".json")
    env["TRAINMON_FAKE_NVML_TIME_S"] = str(time_s)
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
    # In the capture's order: nvidia-smi lists the processes as the driver does, not by pid.
    assert [strip_ts(l) for l in out[1:]] == [strip_ts(l) for l in lines[1:]]


def _capture_moments():
    """PMON_T0 / DMON_T0 of scripts/capture_to_scenario.py: the scenario seconds at which it plays the
    capture's pmon / dmon samples (sample k at T0 + k)."""
    src = os.environ.get("TRAINMON_SOURCE_DIR", os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))
    spec = importlib.util.spec_from_file_location("capture_to_scenario",
                                                  os.path.join(src, "scripts", "capture_to_scenario.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.PMON_T0, mod.DMON_T0


PMON_T0, DMON_T0 = _capture_moments()
SAMPLES = 5  # every capture ran `nvidia-smi dmon -c 5` / `pmon -c 5`


def monitor_capture(scenario, what):
    """(the two header lines, [rows of sample 0, rows of sample 1, ...]) of the capture's dmon / pmon
    section; a sample ends where a row's gpu (dmon) or gpu and pid (pmon) repeats."""
    cap_file, state = CASES[scenario]
    _, lines = section(open(os.path.join(CAPS, cap_file)).read(), f"{state} :: {what}")
    header, rows = lines[:2], lines[2:]
    samples, seen = [], set()
    for row in rows:
        cols = row.split()
        key = (cols[0], cols[1]) if what == "pmon" else cols[0]
        if not samples or key in seen:
            samples.append([])
            seen = set()
        seen.add(key)
        samples[-1].append(row)
    assert len(samples) == SAMPLES, f"{len(samples)} samples in the capture's {what}"
    return header, samples


MONITOR_CASES = [(s, k) for s in sorted(CASES) for k in range(SAMPLES)]


@pytest.mark.parametrize("scenario,k", MONITOR_CASES)
def test_dmon_matches_capture(scenario, k):
    """Frozen at the scenario time of the capture's k-th dmon sample, `dmon -c 1` prints that sample's
    lines byte for byte (headers with their trailing space included)."""
    need(scenario)
    header, samples = monitor_capture(scenario, "dmon")
    r = run(["dmon", "-c", "1"], scenario, time_s=DMON_T0 + k)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.split("\n")[:-1] == header + samples[k]


@pytest.mark.parametrize("scenario,k", MONITOR_CASES)
def test_pmon_matches_capture(scenario, k):
    """Frozen at the scenario time of the capture's k-th pmon sample, `pmon -c 1` prints that sample's
    lines byte for byte: the same processes in the same order, '-' where nvidia-smi prints '-'."""
    need(scenario)
    header, samples = monitor_capture(scenario, "pmon")
    r = run(["pmon", "-c", "1"], scenario, time_s=PMON_T0 + k)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.split("\n")[:-1] == header + samples[k]


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


@pytest.mark.parametrize("scenario", sorted(CASES))
def test_list_gpus_matches_capture(scenario):
    """`query -L` prints the capture's `nvidia-smi -L` section line for line (MIG devices included)."""
    need(scenario)
    cap_file, _ = CASES[scenario]
    _, lines = section(open(os.path.join(CAPS, cap_file)).read(), "capabilities :: list (-L)")
    assert lines
    r = run(["query", "-L"], scenario)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.split("\n")[:-1] == lines


def query_text_capture(scenario):
    """The capture's `nvidia-smi -q` lines of the scenario's state (blank lines dropped)."""
    cap_file, state = CASES[scenario]
    text = open(os.path.join(CAPS, cap_file)).read().split("\n")
    for i, line in enumerate(text):
        if line.startswith(f"# {state} :: query (-q)"):
            out = []
            for l in text[i + 3:]:
                if l.startswith("####"):
                    break
                if l.strip():
                    out.append(l.rstrip())
            return out
    return []


# -q rows whose value moves between the capture's -q and its --query-gpu moment.
VOLATILE_Q_ROWS = {"GPU Current Temp", "Memory Current Temp", "GPU T.Limit Temp", "Average Power Draw",
                   "Instantaneous Power Draw", "GPU", "Memory", "Encoder", "Decoder", "Graphics", "SM",
                   "Video", "Used", "Free", "Fan Speed", "Used GPU Memory", "Performance State",
                   # clock event reasons and their counters
                   "Idle", "Applications Clocks Setting", "SW Power Cap", "HW Slowdown", "HW Thermal Slowdown",
                   "HW Power Brake Slowdown", "Sync Boost", "SW Thermal Slowdown", "Display Clock Setting",
                   "SW Power Capping", "HW Power Braking",
                   # PCIe traffic over the driver's 20 ms window
                   "Tx Throughput", "Rx Throughput"}


def q_shape(line):
    """A -q row with its numbers and its Active / Not Active word blurred."""
    return re.sub(r": (Not )?Active$", ": A", re.sub(r"\d+", "9", line))


@pytest.mark.parametrize("scenario", sorted(CASES))
def test_query_text_matches_capture(scenario):
    """`query -q`: every line trainmon prints is the capture's line, byte for byte (key padding,
    units, N/A, deprecation texts), and the lines come in the capture's order: rows trainmon has no
    source for are left out, never invented. The Timestamp row is the run's time."""
    need(scenario)
    want = query_text_capture(scenario)
    assert len(want) > 100
    r = run(["query", "-q"], scenario)
    assert r.returncode == 0, r.stdout + r.stderr
    got = [l for l in r.stdout.split("\n") if l.strip()]
    missing = unmatched_q_lines(got, want)
    assert not missing, "not in the capture (or out of its order):\n" + "\n".join(missing)
    assert len(got) >= 110, "too few rows printed"
    # the sections trainmon has data for: ECC Errors (the ecc.errors.*.total counters) and the PCIe
    # traffic (dmon -s t's)
    assert "    ECC Errors" in got and any(l.startswith("        Tx Throughput ") for l in got)


def unmatched_q_lines(got, want):
    """The lines of trainmon's -q (`got`) that are not the capture's (`want`) in its order (a moving
    reading may differ in its digits, VOLATILE_Q_ROWS)."""
    assert got[0] == want[0] == "==============NVSMI LOG=============="
    at, missing = 0, []
    for line in got[1:]:
        if line.startswith("Timestamp "):
            assert re.match(r"^Timestamp {46}: \w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}$", line), line
            at = next(i for i in range(at, len(want)) if want[i].startswith("Timestamp ")) + 1
            continue
        try:
            at = want.index(line, at) + 1
            continue
        except ValueError:
            pass
        # The scenario plays the --query-gpu CSV's moment, taken seconds after -q: a reading that
        # moves under load (power, temperatures, clocks, utilisation, memory in use) keeps its row
        # and its layout ("631.95 W" for "629.10 W"), everything else must be equal.
        key = line.split(":", 1)[0]
        nxt = next((i for i in range(at, len(want)) if want[i].split(":", 1)[0] == key), None)
        if nxt is not None and key.strip() in VOLATILE_Q_ROWS and q_shape(want[nxt]) == q_shape(line):
            at = nxt + 1
        else:
            missing.append(line)
    return missing


# nvidia-smi -q -d TYPE: the GPU's sections each display type selects (nvidia-smi's grouping; the
# captures hold no -d output, so the capture's -q restricted to these sections is the golden).
DISPLAY_SECTIONS = {
    "MEMORY": {"FB Memory Usage", "BAR1 Memory Usage", "Conf Compute Protected Memory Usage"},
    "UTILIZATION": {"Utilization"},
    "ECC": {"ECC Mode", "ECC Errors"},
    "TEMPERATURE": {"Temperature"},
    "POWER": {"GPU Power Readings", "GPU Memory Power Readings", "Module Power Readings"},
    "CLOCK": {"Clocks", "Applications Clocks", "Default Applications Clocks", "Deferred Clocks", "Max Clocks",
              "Max Customer Boost Clocks", "Clock Policy"},
    "COMPUTE": {"Compute Mode"},
    "PIDS": {"Processes"},
    "PERFORMANCE": {"Performance State", "Clocks Event Reasons", "Clocks Event Reasons Counters",
                    "Sparse Operation Mode"},
    "SUPPORTED_CLOCKS": {"Supported Clocks"},
    "PAGE_RETIREMENT": {"Retired Pages"},
    "ACCOUNTING": {"Accounting Mode", "Accounting Mode Buffer Size", "Accounted Processes"},
    "ENCODER_STATS": {"Encoder Stats"},
    "FBC_STATS": {"FBC Stats"},
    "ROW_REMAPPER": {"Remapped Rows"},
    "GSP_FIRMWARE_VERSION": {"GSP Firmware Version"},
    "POWER_SMOOTHING": {"Power Smoothing"},
    "POWER_PROFILES": {"Workload Power Profiles"},
    "VOLTAGE": {"Voltage"},
    "SUPPORTED_GPU_TARGET_TEMP": {"Supported GPU Target Temp"},
}


def display_types(cap_file):
    """The -d types a capture's `nvidia-smi -h` lists ("-d, --display=" up to "Flags can be combined")."""
    text = open(os.path.join(CAPS, cap_file)).read()
    block = text[text.index("--display="):text.index("Flags can be combined")]
    return re.findall(r"\b[A-Z][A-Z_]{2,}\b", block.split(":", 1)[1])


def gpu_sections(lines):
    """The level-1 headings (4 spaces of indent) of -q lines, by key."""
    return [l.split(":")[0].strip() for l in lines if re.match(r"^ {4}\S", l)]


DISPLAY_CASES = sorted({(sc, d) for sc, (cap, _) in CASES.items() if CAPS and os.path.isdir(CAPS)
                        for d in display_types(cap)})


@pytest.mark.parametrize("scenario,display", DISPLAY_CASES)
def test_query_display_matches_capture(scenario, display):
    """`query -q -d TYPE` for every type the capture's -h lists: the log header, each GPU's line,
    then exactly the sections of that type that plain -q prints, each line the capture's, in its
    order; nothing of another type (no identity rows)."""
    need(scenario)
    assert display in DISPLAY_SECTIONS, f"{display}: a -d type this test does not know yet"
    want = query_text_capture(scenario)
    full = [l for l in run(["query", "-q"], scenario).stdout.split("\n") if l.strip()]
    r = run(["query", "-q", "-d", display], scenario)
    assert r.returncode == 0, r.stdout + r.stderr
    got = [l for l in r.stdout.split("\n") if l.strip()]
    def head(lines):  # the log header and the GPU lines (the Timestamp is each run's own)
        return [l for l in lines if not l.startswith((" ", "Timestamp "))]
    assert head(got) == head(full)
    assert any(l.startswith("GPU ") for l in got)
    expected = [k for k in gpu_sections(full) if k in DISPLAY_SECTIONS[display]]
    shown = gpu_sections(got)
    if display == "SUPPORTED_CLOCKS":  # not part of plain -q: nvidia-smi prints it for -d only
        assert shown == ["Supported Clocks"], shown
        got = [l for l in got if not l.startswith("    Supported Clocks")]
    else:
        assert shown == expected, (shown, expected)
    missing = unmatched_q_lines(got, want)
    assert not missing, "not in the capture (or out of its order):\n" + "\n".join(missing)


def test_query_display_combined_and_refused():
    """Types combine with commas (any case), in -q's order; an unknown type or -d without -q is
    refused (status 2) naming the valid types."""
    need("h100-idle")
    r = run(["query", "-q", "-d", "power, ecc"], "h100-idle")
    assert r.returncode == 0, r.stderr
    assert gpu_sections(r.stdout.split("\n")) == ["ECC Mode", "ECC Errors", "GPU Power Readings"]
    r = run(["query", "-q", "-d", "ECC,BOGUS"], "h100-idle")
    assert r.returncode == 2 and '"BOGUS" is not a display type for -d' in r.stderr and "PAGE_RETIREMENT" in r.stderr
    r = run(["query", "-q", "-d", "ECC,"], "h100-idle")
    assert r.returncode == 2 and "an empty display type" in r.stderr
    r = run(["query", "-L", "-d", "ECC"], "h100-idle")
    assert r.returncode == 2 and "give -q with it" in r.stderr


def test_query_display_supported_clocks(tmp_path):
    """-d SUPPORTED_CLOCKS: each memory clock, then its graphics clocks one level deeper."""
    need("h200-idle")
    path = scenario_with(tmp_path, "h200-idle", device={"supported_clocks": [
        {"memory": 3201, "graphics": [1980, 1965]}, {"memory": 1593, "graphics": [1410]}]})
    r = run_file(["query", "-q", "-d", "SUPPORTED_CLOCKS"], path)
    assert r.returncode == 0, r.stderr
    rows = r.stdout.split("\n")
    at = rows.index("    Supported Clocks")
    assert rows[at + 1:at + 6] == [f"{' ' * 8}{'Memory':<47}: 3201 MHz", f"{' ' * 12}{'Graphics':<43}: 1980 MHz",
                                   f"{' ' * 12}{'Graphics':<43}: 1965 MHz", f"{' ' * 8}{'Memory':<47}: 1593 MHz",
                                   f"{' ' * 12}{'Graphics':<43}: 1410 MHz"], rows[at:]


def test_help_query_supported_clocks_lists_the_accepted_fields():
    """--help-query-supported-clocks, like the other --help-query-* options: every name (and alias)
    it lists is accepted by --query-supported-clocks."""
    need("h200-idle")
    r = run(["query", "--help-query-supported-clocks"], "h200-idle")
    assert r.returncode == 0 and r.stdout.startswith(
        'List of valid properties to query for the switch "--query-supported-clocks":')
    names = [n for l in r.stdout.split("\n") if re.fullmatch(r'"[\w.]+"( or "[\w.]+")*', l)
             for n in re.findall(r'"([^"]+)"', l)]
    assert {"timestamp", "gpu_uuid", "memory", "mem", "graphics", "gr"} <= set(names), names
    q = run(["query", "--query-supported-clocks=" + ",".join(names), "--format=csv"], "h200-idle")
    assert q.returncode == 0 and len(q.stdout.split("\n")[1].split(", ")) == len(names), q.stdout + q.stderr


def capture_field_names(path):
    """Every field name (aliases included) of a capture's `nvidia-smi --help-query-gpu` section."""
    lines = open(path).read().split("\n")
    start = next(i for i, l in enumerate(lines) if l.startswith("# capabilities :: help-query-gpu"))
    names = []
    for line in lines[start + 3:]:
        if line.startswith("####"):
            break
        if re.fullmatch(r'"[\w.]+"( or "[\w.]+")*', line.strip()):  # not the '"0: Default"' value lists
            names += re.findall(r'"([^"]+)"', line)
    return names


CAPTURE_FILES = (sorted(f for f in os.listdir(CAPS) if "__" in f and f.endswith(".txt"))
                 if CAPS and os.path.isdir(CAPS) else [])


@pytest.mark.parametrize("cap_file", CAPTURE_FILES)
def test_every_field_of_the_capture_is_accepted(cap_file):
    """Every name a capture's --help-query-gpu lists is a valid --query-gpu field for trainmon, in
    one query (exit 0, one value per field), and the CSV header unit of each field the capture
    queried is nvidia-smi's."""
    need("h200-idle")
    names = capture_field_names(os.path.join(CAPS, cap_file))
    assert len(names) > 200
    r = run(["query", "--query-gpu=" + ",".join(names), "--format=csv"], "h200-idle")
    assert r.returncode == 0, r.stdout[:500] + r.stderr
    header, row = r.stdout.split("\n")[:2]
    assert len(header.split(", ")) == len(row.split(", ")) == len(names)
    assert "not a valid field" not in r.stdout
    cmd, csv = section(open(os.path.join(CAPS, cap_file)).read(), "idle :: query-gpu (csv")
    fields = re.search(r"--query-gpu=(\S+)", cmd).group(1)
    r = run(["query", f"--query-gpu={fields}", "--format=csv"], "h200-idle")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[0] == csv[0], "header (names and units) differs"


@pytest.mark.parametrize("scenario,k", [(s, 0) for s in sorted(CASES)])
def test_dmon_and_pmon_smi_csv_and_file(scenario, k, tmp_path):
    """`--format csv` prints the text view's cells as nvidia-smi's CSV ("#gpu, pwr, ..." then
    "#Idx, W, ..." then "0, 36, ..."), `nounit` / `noheader` drop those lines, `-f FILE` writes the
    same bytes to FILE."""
    need(scenario)
    for what, t0 in (("dmon", DMON_T0), ("pmon", PMON_T0)):
        header, samples = monitor_capture(scenario, what)
        cells = lambda line: ", ".join(re.sub(r"^# ", "#", line.strip()).split())
        want = [cells(header[0]), cells(header[1])] + [cells(r) for r in samples[k]]
        if what == "pmon":  # the command column keeps its name whole (the text view pads it)
            want = want[:2] + [", ".join(r.split()) for r in samples[k]]
        r = run([what, "-c", "1", "--format", "csv"], scenario, time_s=t0 + k)
        assert r.returncode == 0, r.stderr
        assert r.stdout.split("\n")[:-1] == want
        r = run([what, "-c", "1", "--format", "csv,nounit,noheader"], scenario, time_s=t0 + k)
        assert r.stdout.split("\n")[:-1] == want[2:]
        out = tmp_path / f"{what}.txt"
        r = run([what, "-c", "1", "-f", str(out)], scenario, time_s=t0 + k)
        assert r.returncode == 0 and r.stdout == ""
        assert out.read_text().split("\n")[:-1] == header + samples[k]
    r = run(["dmon", "-c", "1", "--format", "xml"], scenario)
    assert r.returncode == 2 and '"xml" is not a valid --format option' in r.stderr


def test_pmon_header_repeats_after_44_rows():
    """nvidia-smi repeats pmon's two header lines after every 44 process rows, inside a sample if
    need be (64 processes: the header at the top and again before row 45)."""
    r = run(["pmon", "-c", "2"], "bench-8gpu-64proc", time_s=5)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.split("\n")[:-1]
    heads = [i for i, l in enumerate(lines) if l.startswith("# gpu")]
    rows = [l for l in lines if not l.startswith("#")]
    assert len(rows) >= 128
    # header at 0; then after 44 rows each (each header is 2 lines)
    assert heads[:3] == [0, 2 + 44, 2 + 44 + 2 + 44]
    assert all(lines[i + 1].startswith("# Idx") for i in heads)


def scenario_with(tmp_path, base, **changes):
    doc = json.load(open(os.path.join(SCEN, base + ".json")))
    for key, value in changes.items():
        if key == "device":
            doc["devices"][0].update(value)
        else:
            doc[key] = value
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(doc))
    return str(path)


def run_file(args, scenario_path):
    env = dict(os.environ, TRAINMON_NVML_LIBRARY=FAKE, TRAINMON_FAKE_NVML_SCENARIO=scenario_path,
               TRAINMON_FAKE_NVML_TIME_S="0", LC_ALL="C.UTF-8")
    return subprocess.run([BIN] + args, env=env, capture_output=True, text=True, timeout=60)


def test_query_supported_clocks(tmp_path):
    """One line per (memory, graphics) pair in the driver's order; a GPU without the table gets
    nvidia-smi's [N/A]; an unknown field is nvidia-smi's error."""
    need("h200-idle")
    path = scenario_with(tmp_path, "h200-idle", device={"supported_clocks": [
        {"memory": 3201, "graphics": [1980, 1965]}, {"memory": 1593, "graphics": [1410]}]})
    r = run_file(["query", "--query-supported-clocks=gpu_uuid,mem,gr", "--format=csv"], path)
    assert r.returncode == 0, r.stderr
    uuid = "GPU-00000000-0000-0000-0000-000000000000"
    assert r.stdout.split("\n")[:-1] == ["gpu_uuid, memory [MHz], graphics [MHz]",
                                         f"{uuid}, 3201 MHz, 1980 MHz", f"{uuid}, 3201 MHz, 1965 MHz",
                                         f"{uuid}, 1593 MHz, 1410 MHz"]
    r = run_file(["query", "--query-supported-clocks=memory,graphics", "--format=csv,noheader,nounits"], path)
    assert r.stdout == "3201, 1980\n3201, 1965\n1593, 1410\n"
    r = run(["query", "--query-supported-clocks=memory", "--format=csv,noheader"], "h200-idle")
    assert r.returncode == 0 and r.stdout == "[N/A]\n", r.stdout
    r = run(["query", "--query-supported-clocks=memory,foo", "--format=csv"], "h200-idle")
    assert r.returncode == 2 and r.stdout.startswith('Field "foo" is not a valid field to query.')


def test_not_supported_before_r450(tmp_path):
    """Drivers before R450 print [Not Supported] where current ones print [N/A] (fan.speed of a
    fan-less GPU); a field that is merely not available stays [N/A]."""
    need("h200-idle")
    old = scenario_with(tmp_path, "h200-idle", driver_version="440.33.01", generation="430")
    r = run_file(["query", "--query-gpu=fan.speed,name", "--format=csv,noheader"], old)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "[Not Supported], NVIDIA H200\n"
    r = run(["query", "--query-gpu=fan.speed", "--format=csv,noheader"], "h200-idle")
    assert r.stdout == "[N/A]\n"


def test_query_text_ecc_rows_by_location(tmp_path):
    """-q's ECC Errors rows are nvmlDeviceGetMemoryErrorCounter's SRAM and DRAM counts, in the
    capture's layout; Hopper's SRAM parity / SEC-DED split, threshold and sources are
    nvmlDeviceGetSramEccErrorStatus's; a driver without that call (r535) has the split 0 only while
    the SRAM uncorrectable count is 0, else N/A."""
    need("h100-idle")
    doc = json.load(open(os.path.join(SCEN, "h100-idle.json")))
    # the fake driver: SRAM as scripted (`<counter>_sram`), DRAM the rest of each total
    doc["devices"][0]["metrics"].update({
        "ecc_volatile_corrected": 5, "ecc_volatile_corrected_sram": 2, "ecc_volatile_uncorrected": 0,
        "ecc_aggregate_corrected": 9, "ecc_aggregate_uncorrected": 4, "ecc_aggregate_uncorrected_sram": 1,
        # nvmlDeviceGetSramEccErrorStatus: the one aggregate SRAM error a SEC-DED one, in an SM
        "ecc_aggregate_uncorrected_sram_parity": 0, "ecc_aggregate_uncorrected_sram_secded": 1,
        "ecc_aggregate_uncorrected_sram_sm": 1, "sram_threshold_exceeded": 1})
    path = tmp_path / "ecc.json"
    path.write_text(json.dumps(doc))
    r = run_file(["query", "-q", "-d", "ECC"], str(path))
    assert r.returncode == 0, r.stderr
    got = [l for l in r.stdout.split("\n") if l.strip()]
    want_rows = {
        "Volatile": {"SRAM Correctable": "2", "SRAM Uncorrectable Parity": "0",
                     "SRAM Uncorrectable SEC-DED": "0", "DRAM Correctable": "3", "DRAM Uncorrectable": "0"},
        "Aggregate": {"SRAM Correctable": "0", "SRAM Uncorrectable Parity": "0",
                      "SRAM Uncorrectable SEC-DED": "1", "DRAM Correctable": "9", "DRAM Uncorrectable": "3",
                      "SRAM Threshold Exceeded": "Yes"},
        "Aggregate Uncorrectable SRAM Sources": {"SRAM L2": "0", "SRAM SM": "1", "SRAM Microcontroller": "0",
                                                 "SRAM PCIE": "0", "SRAM Other": "0"},
    }
    # the capture's rows (key padding, order) with these values
    cap = query_text_capture("h100-idle")
    at = cap.index("    ECC Errors")
    want, part = [cap[at]], None
    for line in cap[at + 1:]:
        key = line.split(":", 1)[0].strip()
        if line.strip() in want_rows and line.startswith("        ") and not line.startswith("         "):
            part = key
            want.append(line)
        elif part and key in want_rows[part]:
            want.append(line.split(":", 1)[0] + ": " + want_rows[part][key])
        elif not line.startswith("            "):
            break
    assert len(want) == 20, want
    start = got.index("    ECC Errors")
    assert got[start:start + 20] == want
    # a driver before NVML 12.4 (no nvmlDeviceGetSramEccErrorStatus): the split only where it is 0
    r = subprocess.run([BIN, "query", "-q", "-d", "ECC"], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, TRAINMON_NVML_LIBRARY=FAKE.replace("/fake_nvml/", "/fake_nvml_r535_43/"),
                                TRAINMON_FAKE_NVML_SCENARIO=str(path), TRAINMON_FAKE_NVML_TIME_S="0", LC_ALL="C.UTF-8"))
    assert r.returncode == 0, r.stderr
    rows = [l.split(":", 1)[0].strip() + "=" + l.split(":", 1)[1].strip() for l in r.stdout.split("\n") if ":" in l]
    assert rows.count("SRAM Uncorrectable Parity=0") == 1 and rows.count("SRAM Uncorrectable Parity=N/A") == 1, rows
    assert not any(x.startswith("SRAM Threshold Exceeded") or x.startswith("SRAM L2") for x in rows), rows
    # a GPU without ECC (the Turing capture): every row N/A, as its -q prints
    need("rtx2080-idle")
    got = [l for l in run(["query", "-q", "-d", "ECC"], "rtx2080-idle").stdout.split("\n") if l.strip()]
    start = got.index("    ECC Errors")
    rows = [l for l in got[start + 1:start + 11] if l.startswith("            ")]
    assert len(rows) == 8 and all(l.endswith(": N/A") for l in rows), rows
