# SPDX-License-Identifier: Apache-2.0
"""scripts/gpu-check.sh against a stand-in nvidia-smi (tests/e2e/replay_nvidia_smi.py) that replays a
real capture, with trainmon on the fake driver playing the scenario built from the same capture: the
script runs both, and its table says equal for every field trainmon reads, unsupported (never
different) for the ones it has no source for. Data-driven over the capture scenarios of
test_views_golden.py; `--bundle` is run and the bundled binary used for one case."""
import os
import subprocess

import pytest

from test_views_golden import CASES, CAPS, FAKE, SCEN, BIN, have_commands

SRC = os.environ.get("TRAINMON_SOURCE_DIR", os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
SCRIPT = os.path.join(SRC, "scripts", "gpu-check.sh")
REPLAY = os.path.join(SRC, "tests", "e2e", "replay_nvidia_smi.py")

pytestmark = pytest.mark.skipif(not have_commands(), reason="trainmon / fake NVML not built")


def stand_in(tmp_path):
    smi = tmp_path / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\nexec /usr/bin/python3 {REPLAY} \"$@\"\n")
    smi.chmod(0o755)
    return str(smi)


def gpu_check(tmp_path, scenario, trainmon=BIN, extra=()):
    cap_file, state = CASES[scenario]
    env = dict(os.environ)
    env.update({"REPLAY_CAPTURE": os.path.join(CAPS, cap_file), "REPLAY_STATE": state,
                "TRAINMON_NVML_LIBRARY": FAKE, "TRAINMON_FAKE_NVML_SCENARIO": os.path.join(SCEN, scenario + ".json"),
                "TRAINMON_FAKE_NVML_TIME_S": "0", "LC_ALL": "C.UTF-8"})
    out = tmp_path / "out"
    r = subprocess.run(["bash", SCRIPT, "-s", stand_in(tmp_path), "-t", trainmon, "-o", str(out), "--no-torch",
                        *extra], env=env, capture_output=True, text=True, timeout=120)
    rows = [l.split("\t") for l in (out / "rows.tsv").read_text().splitlines()] if (out / "rows.tsv").exists() else []
    return r, rows


# One scenario per capture file (its load state): each run takes a few seconds (dmon, pmon -c 3).
ONE_PER_CAPTURE = sorted({cap: name for name, (cap, state) in sorted(CASES.items()) if state == "load"}.values())


@pytest.mark.parametrize("scenario", ONE_PER_CAPTURE)
def test_gpu_check_table_against_a_replayed_capture(scenario, tmp_path):
    r, rows = gpu_check(tmp_path, scenario)
    assert r.returncode in (0, 1), r.stdout + r.stderr
    assert "summary" in r.stdout and "verdict" in r.stdout
    by = {}
    for section, gpu, field, smi, tm, verdict in rows:
        by.setdefault(section, []).append((field, smi, tm, verdict))
    # Every field of the capture's --help-query-gpu has a row (timestamp aside), per GPU.
    assert len(by["query"]) >= 200
    assert len(by["header"]) >= 200
    bad = [row for s in ("query", "header", "list", "pmon") for row in by.get(s, []) if row[3] == "different"]
    assert not bad, bad
    equal = {f for f, _, _, v in by["query"] if v == "equal"}
    assert {"name", "uuid", "memory.total", "driver_version", "pci.bus_id", "power.limit"} <= equal
    # The dmon header is nvidia-smi's byte for byte; its values come from another moment of the
    # capture (the scenario plays the --query-gpu moment), so they are only required to be there.
    assert [v for f, _, _, v in by["dmon"] if f.startswith("header")] == ["equal", "equal"]
    assert len([f for f, _, _, _ in by["dmon"] if not f.startswith("header")]) >= 10
    # The captures hold no `nvidia-smi -q -x`: the status section says so rather than guess.
    assert by["status"][0][3] == "unsupported"


def test_gpu_check_runs_the_bundle(tmp_path):
    bundle = tmp_path / "bundle"
    r = subprocess.run(["bash", SCRIPT, "--bundle", str(bundle), "-t", BIN], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert (bundle / "gpu-check.sh").exists() and (bundle / "lib" / "trainmon.bin").exists()
    v = subprocess.run([str(bundle / "trainmon"), "--version"], capture_output=True, text=True, timeout=30)
    assert v.returncode == 0 and v.stdout.startswith("trainmon ")
    # serve's plugin and the libraries only it links travel too, and the bundled serve loads them
    libs = os.listdir(bundle / "lib")
    assert "trainmon-http.so" in libs and any(l.startswith("libcpp-httplib") for l in libs), libs
    env = dict(os.environ, TRAINMON_NVML_LIBRARY=FAKE, TRAINMON_FAKE_NVML_SCENARIO=os.path.join(SCEN, "h200-idle.json"))
    s = subprocess.run([str(bundle / "trainmon"), "serve", "--listen", "127.0.0.1:0", "--duration", "1",
                        "--db", str(tmp_path / "serve.db")], env=env, capture_output=True, text=True, timeout=120)
    assert s.returncode == 0 and "listening on http://127.0.0.1:" in s.stderr, s.stderr
    # the compiled message catalogue travels too: --lang zh_CN speaks Chinese from the bundle alone
    assert (bundle / "lib" / "locale" / "zh_CN" / "LC_MESSAGES" / "trainmon.mo").is_file()
    alone = {k: v for k, v in env.items() if k not in ("TRAINMON_LOCALEDIR", "TRAINMON_LANG")}
    z = subprocess.run([str(bundle / "trainmon"), "--lang", "zh_CN", "runs", "--db", str(tmp_path / "serve.db")],
                       env=alone, capture_output=True, text=True, timeout=30)
    assert z.returncode == 0 and z.stdout.split()[:3] == ["ID", "名称", "状态"], z.stdout + z.stderr
    r, rows = gpu_check(tmp_path, "h200-idle", trainmon=str(bundle / "trainmon"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert any(s == "query" and f == "name" and v == "equal" for s, _, f, _, _, v in rows)


def test_gpu_check_fails_clearly_without_nvidia_smi(tmp_path):
    r = subprocess.run(["bash", SCRIPT, "-s", str(tmp_path / "missing"), "-t", BIN, "-o", str(tmp_path / "o")],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2
    assert "not found" in r.stderr
