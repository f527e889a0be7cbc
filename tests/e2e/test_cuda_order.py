# SPDX-License-Identifier: Apache-2.0
"""CUDA_VISIBLE_DEVICES and D7 (wrong device), on the repro scenario cuda-order-fastest-first: a T400
at NVML index 0 (idle) and an H100 at index 1 where the job's process runs. An integer names an NVML
index only with CUDA_DEVICE_ORDER=PCI_BUS_ID (CUDA's default order is fastest first: the H100 is then
CUDA device 0), so `CUDA_VISIBLE_DEVICES=0` alone is no evidence of a wrong device; with PCI_BUS_ID,
or with the T400's UUID, it is. Checked live (`trainmon run`'s summary) and offline (`diagnose`).
The three runs go side by side (~10 s)."""
import json
import os
import re
import subprocess

import pytest

from test_run_helpers import env, trainmon_bin

pytestmark = pytest.mark.skipif(os.environ.get("TRAINMON_SANITIZED") == "1",
                                reason="real-process runs: the release pass covers them")

T400_UUID = "GPU-0000aaaa-0000-4000-8000-000000000000"
SCALED = ["window_s=2", "clear_s=2", "wrong_device_for_s=3", "held_unused_for_s=3"]
CASES = {
    "integer_fastest_first": ({"CUDA_VISIBLE_DEVICES": "0"}, False),
    "integer_pci_bus_id": ({"CUDA_VISIBLE_DEVICES": "0", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}, True),
    "uuid": ({"CUDA_VISIBLE_DEVICES": T400_UUID}, True),
}


def thresholds():
    out = []
    for t in SCALED:
        out += ["--threshold", t]
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    procs = {}
    for name, (extra, _) in CASES.items():
        db = str(tmp_path_factory.mktemp(name) / "runs.db")
        e = env("cuda-order-fastest-first.json", **extra)
        for k in ("TRAINMON_EVENTS_SOCKET", "TRAINMON_SNAPSHOT_FILE", "TRAINMON_RUN_ID"):
            e.pop(k, None)
        if "CUDA_DEVICE_ORDER" not in extra:
            e.pop("CUDA_DEVICE_ORDER", None)
        # The GPU process (BR20_P0) is a helper the shell starts before it becomes trainmon: the job's.
        script = 'sleep 30 & export BR20_P0=$!\nexec "$@"\n'
        args = ["/bin/sh", "-c", script, "sh", trainmon_bin(), "run", *thresholds(), "--interval", "0.5",
                "--no-report", "--db", db, "--", "sleep", "8"]
        procs[name] = (subprocess.Popen(args, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True),
                       db, e)
    out = {}
    for name, (p, db, e) in procs.items():
        _, err = p.communicate(timeout=120)
        d = subprocess.run([trainmon_bin(), "diagnose", "last", "--json", "--db", db, *thresholds()], env=e,
                           capture_output=True, text=True, timeout=60)
        show = subprocess.run([trainmon_bin(), "show", "last", "--json", "--db", db], env=e,
                              capture_output=True, text=True, timeout=60)
        out[name] = (p.returncode, err, d, show)
    return out


@pytest.mark.parametrize("name", list(CASES))
def test_wrong_device_only_on_evidence(runs, name):
    rc, err, d, show = runs[name]
    expected = CASES[name][1]
    assert rc == 0, err
    assert d.returncode == 0, d.stderr
    offline = [f for f in json.loads(d.stdout) if f["code"] == "D7"]
    live = [line for line in err.splitlines() if re.match(r"  \[\w+\] D7 ", line)]
    # The job's process was seen on GPU 1 (the H100) in every case.
    gpus = {g["index"]: g["used_by_job"] for g in json.loads(show.stdout)["gpus"]}
    assert gpus == {0: False, 1: True}, show.stdout
    if expected:
        assert [f["numbers"]["intended_gpu"] for f in offline] == [0], offline
        assert "intended GPU0" in offline[0]["evidence"], offline
        assert len(live) == 1 and "intended GPU0" in live[0], err
    else:
        assert offline == [], offline  # never from the integer alone
        assert live == [], err
