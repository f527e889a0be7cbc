# SPDX-License-Identifier: Apache-2.0
"""A GPU the user lacks permission for is "no permission" in every view, never a hardware alarm
(issue 33 "the same failure told differently"): no D14 "GPU stopped responding" finding, no reset
advice, in `status`, `top` (its TUI on a pseudo-terminal), a recording and its offline diagnosis.
The refusals are the fake driver's NVML_ERROR_NO_PERMISSION rules (docs/fake-nvml.md), in variants:
every call for the GPU, only its handle look-up."""
import json
import os
import pty
import select
import signal
import subprocess
import time

import pytest

from test_driver_faults import env_for, scenario
from test_run_helpers import trainmon_bin

RULES = {
    "every-call": [{"function": "*", "gpu": 1, "return": "NVML_ERROR_NO_PERMISSION"}],
    "handle": [{"function": "nvmlDeviceGetHandleByIndex_v2", "gpu": 1, "return": "NVML_ERROR_NO_PERMISSION"},
               {"function": "nvmlDeviceGetHandleByIndex", "gpu": 1, "return": "NVML_ERROR_NO_PERMISSION"}],
}
ALARMS = ("D14", "stopped responding", "has not responded", "failed to read", "reset", "not responding")


def top_screen(e, seconds=4.0):
    """What top's TUI drew in `seconds` on a pseudo-terminal (then `q`)."""
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(trainmon_bin(), [trainmon_bin(), "top", "-i", "0.5"], e)
    out = b""
    end = time.monotonic() + seconds
    try:
        while time.monotonic() < end:
            if select.select([fd], [], [], 0.1)[0]:
                try:
                    out += os.read(fd, 65536)
                except OSError:
                    break
        os.write(fd, b"q")
        for _ in range(50):
            if os.waitpid(pid, os.WNOHANG)[0]:
                pid = 0
                break
            if select.select([fd], [], [], 0.1)[0]:
                try:
                    out += os.read(fd, 65536)
                except OSError:
                    pass
    finally:
        if pid:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(fd)
    return out.decode("utf-8", "replace")


@pytest.mark.parametrize("variant", list(RULES))
def test_no_permission_is_never_a_hardware_alarm(tmp_path, variant):
    e = env_for(scenario(tmp_path, f"{variant}.json", RULES[variant]), tmp_path)
    e["COLUMNS"], e["LINES"] = "160", "50"
    p = subprocess.run([trainmon_bin(), "status", "--json"], env=e, capture_output=True, text=True, timeout=60)
    gpus = {g["index"]: g for g in json.loads(p.stdout)["gpus"]}
    assert gpus[1]["responsive"] == "no_permission", gpus[1]
    assert gpus[0]["responsive"] == "ok"

    db = tmp_path / "r.db"
    r = subprocess.run([trainmon_bin(), "record", "--db", str(db), "--duration", "3", "--interval", "0.5"], env=e,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert not [a for a in ALARMS if a in r.stderr], r.stderr
    d = subprocess.run([trainmon_bin(), "diagnose", "last", "--json", "--db", str(db)], env=e,
                       capture_output=True, text=True, timeout=60)
    assert d.stdout.strip().startswith(("{", "[")), (d.returncode, d.stderr)
    assert "D14" not in d.stdout and "gpu-lost" not in d.stdout, d.stdout

    screen = top_screen(e)
    assert "no permission" in screen, screen[-2000:]
    assert not [a for a in ALARMS if a in screen], [a for a in ALARMS if a in screen]
