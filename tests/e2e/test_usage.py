# SPDX-License-Identifier: Apache-2.0
"""`trainmon usage`: the ledger over a real `trainmon record` of the fake driver listing real
processes of two local users (this test's and a second one, created with useradd when missing), each
user's processes in their own Slurm job (SLURM_JOB_ID in their environment). The expected numbers
come from the scenario's settings and the ticks the store holds (docs/cli.md "usage" formulas).
Needs root (useradd, a process of another user); skipped otherwise, and under the sanitizer pass
(a real recording of several seconds)."""

import csv
import io
import json
import os
import pwd
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_run_helpers import env, export_jsonl, kill_quietly, record_while, run  # noqa: E402

OTHER = "trainmon-ledger"
GIB = 1 << 30
INTERVAL_S = 0.2
UTIL = [80, 0]  # GPU 0 busy, GPU 1 idle (under idle_util_pct, 5 %)
POWER_MW = [200_000, 100_000]

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root to create and run as a second user"),
    pytest.mark.skipif(os.environ.get("TRAINMON_SANITIZED") == "1", reason="a real recording: slow under sanitizers"),
]


@pytest.fixture(scope="module")
def other():
    try:
        pwd.getpwnam(OTHER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", OTHER],
                       check=True, capture_output=True, timeout=60)
    return pwd.getpwnam(OTHER)


def device(i):
    return {"name": "NVIDIA H100 80GB HBM3", "uuid": f"GPU-1ed9e000-0000-4000-8000-00000000000{i}",
            "pci": {"bus_id": f"00000000:{0x18 + i:02X}:00.0", "bus": 0x18 + i},
            "memory_total": 85520809984,
            "metrics": {"utilization_gpu": UTIL[i], "power_draw": POWER_MW[i]}}


def proc(env_name, gpu, used):
    # no per-process SM samples: busy and energy are the GPU's, split among its holders
    return {"pid": f"env:{env_name}", "gpu": gpu, "type": "C", "name": "python3", "used_memory": used}


def test_usage_by_user_and_job_from_a_real_recording(tmp_path, other):
    scenario = tmp_path / "ledger.json"
    scenario.write_text(json.dumps({
        "name": "ledger", "time_scale": 1.0, "devices": [device(0), device(1)],
        # this test's user: 4 GiB on GPU 0; the other user: 2 GiB on GPU 0 (shared) and 8 GiB on GPU 1 (idle)
        "processes": [proc("LEDGER_A", 0, 4 * GIB), proc("LEDGER_B0", 0, 2 * GIB), proc("LEDGER_B1", 1, 8 * GIB)],
    }))
    me = pwd.getpwuid(os.geteuid()).pw_name
    sleeper = ["sleep", "120"]
    procs = []
    try:
        procs.append(subprocess.Popen(sleeper, env={"PATH": "/usr/bin:/bin", "SLURM_JOB_ID": "7001"}))
        for _ in range(2):
            procs.append(subprocess.Popen(sleeper, env={"PATH": "/usr/bin:/bin", "SLURM_JOB_ID": "7002"},
                                          user=other.pw_uid, group=other.pw_gid, extra_groups=[]))
    except BaseException:  # a sleeper that did not start: end the ones that did
        for p in procs:
            kill_quietly(p)
            p.wait(timeout=30)
        raise
    db = tmp_path / "u.db"
    e = env(str(scenario), LEDGER_A=procs[0].pid, LEDGER_B0=procs[1].pid, LEDGER_B1=procs[2].pid)
    record_while(db, e, procs, INTERVAL_S)

    # What the store holds: the ticks each process held memory, each GPU's energy counter.
    rows = export_jsonl(db)
    held = {}  # (gpu, pid) -> ticks with memory
    for r in rows:
        if r["series"] == "gpu_process" and (r.get("used_memory_bytes") or 0) > 0:
            held[(r["gpu"], r["pid"])] = held.get((r["gpu"], r["pid"]), 0) + 1
    a, b0, b1 = (procs[i].pid for i in range(3))
    n_a, n_b0, n_b1 = held[(0, a)], held[(0, b0)], held[(1, b1)]
    assert n_a == n_b0 and n_a >= 10, held
    ticks_gpu0 = n_a
    # energy per GPU from the stored counter (the recorder's rule: the counter's difference since the
    # previous tick, the first tick power x interval)
    energy = {}
    for g in (0, 1):
        gr = sorted((r for r in rows if r["series"] == "gpu" and r["gpu"] == g), key=lambda r: r["t"])
        total = POWER_MW[g] / 1e3 * INTERVAL_S
        for prev, cur in zip(gr, gr[1:]):
            if cur["t"] - prev["t"] <= 1.5 * INTERVAL_S + 1e-3:
                total += (cur["total_energy_mj"] - prev["total_energy_mj"]) / 1e3
            else:
                total += POWER_MW[g] / 1e3 * INTERVAL_S
        energy[g] = total
    dt_h = INTERVAL_S / 3600
    expect = {
        me: {"gpu_hours_held": ticks_gpu0 * dt_h / 2, "gpu_hours_busy": ticks_gpu0 * dt_h * 0.8 / 2,
             "gpu_hours_held_idle": 0.0, "memory_gib_hours": ticks_gpu0 * dt_h * 4,
             "energy_kwh": energy[0] / 2 / 3.6e6, "processes": 1},
        OTHER: {"gpu_hours_held": ticks_gpu0 * dt_h / 2 + n_b1 * dt_h, "gpu_hours_busy": ticks_gpu0 * dt_h * 0.8 / 2,
                "gpu_hours_held_idle": n_b1 * dt_h, "memory_gib_hours": ticks_gpu0 * dt_h * 2 + n_b1 * dt_h * 8,
                "energy_kwh": (energy[0] / 2 + energy[1]) / 3.6e6, "processes": 2},
    }

    p = run(["usage", "--since", "1h", "--by", "user", "--json"], db, env=env())
    assert p.returncode == 0, p.stderr
    j = json.loads(p.stdout)
    assert j["by"] == "user"
    assert [r["key"] for r in j["rows"]] == [OTHER, me]  # the idle holder first
    for r in j["rows"]:
        want = expect[r["key"]]
        for k in ("gpu_hours_held", "gpu_hours_busy", "gpu_hours_held_idle", "memory_gib_hours"):
            assert r[k] == pytest.approx(want[k], rel=1e-9, abs=1e-12), (r["key"], k)
        assert r["energy_kwh"] == pytest.approx(want["energy_kwh"], rel=0.02), r["key"]
        assert r["processes"] == want["processes"]
    assert j["coverage"]["runs"] == 1 and j["coverage"]["usage_from_unix_ms"] > 0
    assert j["total"]["gpu_hours_held"] == pytest.approx(ticks_gpu0 * dt_h + n_b1 * dt_h, rel=1e-9)

    # CSV: the same numbers, stable columns
    p = run(["usage", "--since", "1h", "--by", "user", "--csv"], db, env=env())
    assert p.returncode == 0, p.stderr
    lines = list(csv.DictReader(io.StringIO(p.stdout)))
    assert list(lines[0].keys()) == ["key", "gpu_uuid", "gpu_hours_held", "gpu_hours_busy", "gpu_hours_held_idle",
                                     "memory_gib_hours", "energy_kwh", "processes", "first_unix_ms", "last_unix_ms"]
    by_key = {r["key"]: r for r in lines}
    assert float(by_key[OTHER]["gpu_hours_held_idle"]) == pytest.approx(n_b1 * dt_h, rel=1e-9)
    assert float(by_key[me]["memory_gib_hours"]) == pytest.approx(expect[me]["memory_gib_hours"], rel=1e-9)

    # By job: the Slurm job ids the attribution reader found in the processes' environment
    p = run(["usage", "--since", "1h", "--by", "job", "--json"], db, env=env())
    assert p.returncode == 0, p.stderr
    jobs = {r["key"]: r for r in json.loads(p.stdout)["rows"]}
    assert set(jobs) == {"slurm:7001", "slurm:7002"}, jobs
    assert jobs["slurm:7002"]["gpu_hours_held_idle"] == pytest.approx(n_b1 * dt_h, rel=1e-9)
    assert jobs["slurm:7002"]["processes"] == 2
    assert jobs["slurm:7001"]["gpu_hours_held"] == pytest.approx(expect[me]["gpu_hours_held"], rel=1e-9)
    assert jobs["slurm:7001"]["energy_kwh"] == pytest.approx(expect[me]["energy_kwh"], rel=0.02)

    # By GPU: index and UUID; the text table fits 80 columns
    p = run(["usage", "--since", "1h", "--by", "gpu", "--json"], db, env=env())
    gpus = json.loads(p.stdout)["rows"]
    assert [r["key"] for r in gpus] == ["1", "0"]
    assert gpus[0]["gpu_uuid"] == "GPU-1ed9e000-0000-4000-8000-000000000001"
    p = run(["usage", "--since", "1h", "--by", "gpu"], db, env=env())
    assert p.returncode == 0, p.stderr
    assert all(len(line) <= 80 for line in p.stdout.splitlines()), p.stdout
    assert "IDLE h" in p.stdout


def test_usage_options_and_empty_store(tmp_path):
    db = tmp_path / "none.db"
    p = run(["usage", "--by", "team"], db, env=env())
    assert p.returncode == 2 and "--by" in p.stderr
    p = run(["usage", "--since", "yesterday"], db, env=env())
    assert p.returncode == 2 and "--since" in p.stderr
    p = run(["usage", "--json"], db, env=env())
    assert p.returncode == 0, p.stderr
    j = json.loads(p.stdout)
    assert j["rows"] == [] and j["coverage"]["usage_from_unix_ms"] == 0
    p = run(["usage", "--by", "job"], db, env=env(LANG="zh_CN.UTF-8", TRAINMON_LANG="zh_CN"))
    assert p.returncode == 0 and "按作业" in p.stdout, p.stdout
