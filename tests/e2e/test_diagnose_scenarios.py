"""End-to-end diagnosis: every failure scenario of the fake NVML driver, recorded by `trainmon run`
and diagnosed again offline by `trainmon diagnose last --json`, names its own finding code and no
other critical one; the healthy scenarios give no finding at all (a finding that says "nothing to
do" is not one: no info lines either).

The scenarios last 20 s, the detectors' default durations (MISSION §4, §6) are minutes, so both the
live and the offline pass get the same thresholds scaled down (SCALED below): the detectors' logic is
under test, not the stopwatch. Every scenario runs in parallel (one `trainmon run` each) so the file
takes about 30 s.
"""
import json
import os
import re
import subprocess
import sys

import pytest

BIN = os.environ.get("TRAINMON_BIN")
SCEN = os.environ.get("TRAINMON_SCENARIOS_DIR", "")
FAKE = os.environ.get("TRAINMON_FAKE_NVML_PATH", "")

pytestmark = pytest.mark.skipif(not (BIN and FAKE and SCEN), reason="needs TRAINMON_BIN, TRAINMON_FAKE_NVML_PATH, "
                                "TRAINMON_SCENARIOS_DIR")

# Durations scaled to a 20-s scenario (defaults in docs/diagnosis.md "Thresholds").
SCALED = ["window_s=8", "clear_s=8", "imbalance_for_s=8", "starved_for_s=8", "wrong_device_for_s=8",
          "held_unused_for_s=8", "ghost_for_s=5", "idle_holder_for_s=8", "loading_for_s=8",
          "throttle_for_s=5", "pcie_for_s=8", "pressure_for_s=8", "near_full_for_s=3", "leak_min_span_s=8",
          "util_min_span_s=8", "spike_within_s=3"]

# The leak ends as a leaking job does (killed, or exiting as it is): os._exit, so Python's own teardown
# does not free the list first. On a busy machine a tick sampled that teardown's drop, and the whole
# run's fit (the end summary, offline diagnose) then saw no leak while the live one had.
LEAK = ("import os, time\nx = []\nfor i in range(75):\n    x.append(b'x' * (4 << 20))\n    time.sleep(0.2)\n"
        "os._exit(0)\n")

# scenario -> (expected code or None, CUDA_VISIBLE_DEVICES, extra codes allowed to be critical)
# The scenarios' GPU processes take their pids from TRAINMON_TEST_PID / TRAINMON_DDP_PID_n. They are
# `sleep` helpers started by a shell that then execs trainmon, so trainmon adopts them as its children
# and they belong to the watched job (as the training process would); d9's idle holder must be outside
# the job, so there the helper is the test's own.
OUTSIDE_JOB = {"d9-ghost-process"}
# Extra thresholds per scenario. D4 asks for an idle host CPU (MISSION §4: "CPU < 30 %"); the fake
# driver simulates the GPU side only and this machine's CPUs are busy with the other runs, so the CPU
# sign is given by its other half, the main process pinned at >= main_pinned_pct of a core, set to 0
# (percentages are 0..100, so cpu_low_pct cannot be lifted past a host at 100 %).
EXTRA = {"d4-dataloader-starved": ["main_pinned_pct=0"]}
CASES = {
    "d1-fragmentation-oom": ("D1", "0", {"D21"}),
    "d2-ddp-imbalance": ("D2", "0,1,2,3", set()),
    "d3-host-memory-leak": ("D3", "0", set()),
    "d4-dataloader-starved": ("D4", "0", set()),
    "d5-gpu-memory-growth": ("D5", "0", set()),
    "d6-power-bound": ("D6", "0", set()),
    "d7-wrong-device": ("D7", "0", set()),
    "d8-ddp-not-running": ("D8", "0,1,2,3,4,5,6,7", set()),
    "d9-ghost-process": ("D9", "0", set()),
    # an uncorrectable ECC error comes with its Xid 48 (D13, critical by NVIDIA's catalog)
    "d10-ecc-errors": ("D10", "0", {"D13"}),
    "healthy-1gpu": (None, "0", set()),
    "ddp-8gpu-healthy": (None, "0,1,2,3,4,5,6,7", set()),
}


DBS = {}  # scenario -> (its run store, its environment), filled by the runs fixture


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    helpers = [subprocess.Popen(["sleep", "120"]) for _ in range(9)]
    procs = {}
    try:
        for name, (_, cvd, _) in CASES.items():
            d = tmp_path_factory.mktemp(name)
            env = dict(os.environ)
            for k in ("TRAINMON_EVENTS_SOCKET", "TRAINMON_SNAPSHOT_FILE", "TRAINMON_RUN_ID"):
                env.pop(k, None)
            env["TRAINMON_NVML_LIBRARY"] = FAKE
            env["TRAINMON_FAKE_NVML_SCENARIO"] = os.path.join(SCEN, name + ".json")
            env["CUDA_VISIBLE_DEVICES"] = cvd
            # The scenarios' intent is in NVML (PCI bus) order: say so, as CUDA needs it said
            # (without it an integer is no evidence of a wrong device: test_cuda_order.py).
            env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
            cmd = ["/usr/bin/python3", "-c", LEAK] if name.startswith("d3-") else ["sleep", "20"]
            db = str(d / "runs.db")
            args = [BIN, "run"]
            for t in SCALED + EXTRA.get(name, []):
                args += ["--threshold", t]
            # (a repeatable option right before `--` swallows it in CLI11: end with plain options)
            args += ["--interval", "0.5", "--db", db, "--"] + cmd
            if name in OUTSIDE_JOB:
                env["TRAINMON_TEST_PID"] = str(helpers[0].pid)
                for i in range(8):
                    env[f"TRAINMON_DDP_PID_{i}"] = str(helpers[1 + i].pid)
            else:
                # sh starts the helpers, exports their pids and becomes trainmon: they are its children.
                script = "sleep 30 & export TRAINMON_TEST_PID=$!\n"
                script += "".join(f"sleep 30 & export TRAINMON_DDP_PID_{i}=$!\n" for i in range(8))
                script += 'exec "$@"\n'
                args = ["/bin/sh", "-c", script, "sh"] + args
            procs[name] = (subprocess.Popen(args, env=env, stdout=subprocess.PIPE,
                                            stderr=subprocess.PIPE, text=True), db, env)
        out = {}
        for name, (p, db, env) in procs.items():
            _, err = p.communicate(timeout=120)
            args = [BIN, "diagnose", "last", "--json", "--db", db]
            for t in SCALED + EXTRA.get(name, []):
                args += ["--threshold", t]
            d = subprocess.run(args, env=env, capture_output=True, text=True, timeout=60)
            out[name] = (p.returncode, err, d)
            DBS[name] = (db, env)
        return out
    finally:
        for h in helpers:
            h.kill()
            h.wait()


def test_diagnose_judges_a_run_with_its_thresholds_and_names_what_others_miss(runs):
    # The run found D4 with its windows scaled to 8 s (--threshold, stored with the run): diagnose
    # without options judges it the same way and says with what.
    db, env = DBS["d4-dataloader-starved"]
    d = subprocess.run([BIN, "diagnose", "last", "--db", db], env=env, capture_output=True, text=True, timeout=60)
    assert d.returncode == 0, d.stderr
    assert d.stdout.count(" D4 ") == 1, d.stdout
    assert re.search(r"run 1 was recorded with --threshold \S+=\S+( --threshold \S+=\S+)*: judged with them", d.stderr), d.stderr
    assert "main_pinned_pct=0" in d.stderr and "starved_for_s=8" in d.stderr, d.stderr
    # Other thresholds, given here, win: a 20-s run cannot starve for 10 minutes. diagnose says that
    # the run recorded D4, instead of a bare "nothing found" that the runs table contradicts.
    other = subprocess.run([BIN, "diagnose", "last", "--db", db, "--threshold", "starved_for_s=600"], env=env,
                           capture_output=True, text=True, timeout=60)
    assert other.returncode == 0, other.stderr
    assert " D4 " not in other.stdout, other.stdout
    assert re.search(r"run 1 recorded (\S+, )*D4(, \S+)* when it ran, with the thresholds it ran with", other.stderr), \
        other.stderr
    assert "starved_for_s=8" not in other.stderr, other.stderr  # overridden: not claimed as used
    assert "judged with starved_for_s=600 (recorded 8) instead of what run 1 was recorded with" in other.stderr, \
        other.stderr
    # A --config file's keys replace recorded values as --threshold does, and are said the same way.
    cfg = os.path.join(os.path.dirname(db), "other.toml")
    with open(cfg, "w") as f:
        f.write("[diagnose]\nstarved_for_s = 600\n")
    conf = subprocess.run([BIN, "diagnose", "last", "--db", db, "--config", cfg], env=env, capture_output=True,
                          text=True, timeout=60)
    assert conf.returncode == 0 and " D4 " not in conf.stdout, conf.stdout + conf.stderr
    assert "starved_for_s=8" not in conf.stderr and "starved_for_s=600 (recorded 8)" in conf.stderr, conf.stderr
    # `show` lists what the run was given, text and JSON.
    show = subprocess.run([BIN, "show", "last", "--db", db], env=env, capture_output=True, text=True, timeout=60)
    line = [x for x in show.stdout.splitlines() if x.startswith("  thresholds: ")]
    assert line and "starved_for_s=8" in line[0] and "main_pinned_pct=0" in line[0], show.stdout
    js = subprocess.run([BIN, "show", "last", "--json", "--db", db], env=env, capture_output=True, text=True,
                        timeout=60)
    assert json.loads(js.stdout)["thresholds"]["starved_for_s"] == 8, js.stdout


@pytest.mark.parametrize("name", list(CASES))
def test_scenario_is_diagnosed(runs, name):
    code, _, allowed = CASES[name]
    rc, run_err, d = runs[name]
    assert rc == 0, run_err
    assert d.returncode == 0, d.stderr
    findings = json.loads(d.stdout)
    codes = sorted({f["code"] for f in findings})
    critical = sorted({f["code"] for f in findings if f["severity"] == "critical"})
    ctx = f"{name}: codes {codes}, critical {critical}\n{run_err[-3000:]}"
    if code is None:
        assert findings == [], ctx
        assert "  findings: 0" in run_err, ctx
    else:
        assert code in codes, ctx
        assert set(critical) <= {code} | allowed, ctx
    # the live pass at the run's end found the same codes (summary lines "  [sev] Dn ...")
    live = sorted({line.split()[1] for line in run_err.splitlines() if line.startswith("  [")})
    assert live == codes, ctx
    # ... about the same process: offline the job's main process is found again from the store (the
    # recorder's children include helpers the shell started before it exec'ed trainmon).
    for line in run_err.splitlines():
        m = re.match(r"  \[\w+\] (D\d+) \S+ \S+ pid (\d+):", line)
        if m:
            offline_pids = [f.get("pids", []) for f in findings if f["code"] == m.group(1)]
            assert any(int(m.group(2)) in pids for pids in offline_pids), (line, offline_pids, ctx)


def test_gpu_lost_offline_says_lost_as_live(tmp_path):
    # GPU 1 falls off the bus at t=4 s. The store keeps why a GPU stopped answering (device_state), so
    # `diagnose` from the store says "lost" as the live pass does, not "fails every query".
    env = dict(os.environ, TRAINMON_NVML_LIBRARY=FAKE,
               TRAINMON_FAKE_NVML_SCENARIO=os.path.join(SCEN, "top-gpu-lost.json"))
    for k in ("TRAINMON_EVENTS_SOCKET", "TRAINMON_SNAPSHOT_FILE", "TRAINMON_RUN_ID", "CUDA_VISIBLE_DEVICES"):
        env.pop(k, None)
    db = str(tmp_path / "runs.db")
    args = [BIN, "run"]
    for t in SCALED:
        args += ["--threshold", t]
    p = subprocess.run(args + ["--interval", "0.5", "--no-report", "--db", db, "--", "sleep", "8"], env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    lost = "NVML reports the GPU is lost (fallen off the bus)"
    live = [line for line in p.stderr.splitlines() if line.startswith("  [") and " D14 " in line]
    assert live and lost in live[0], p.stderr[-3000:]
    args = [BIN, "diagnose", "last", "--json", "--db", db]
    for t in SCALED:
        args += ["--threshold", t]
    d = subprocess.run(args, env=env, capture_output=True, text=True, timeout=60)
    assert d.returncode == 0, d.stderr
    [f] = [f for f in json.loads(d.stdout) if f["code"] == "D14"]
    assert f["gpus"] == [1] and lost in f["evidence"], f
    assert f["numbers"]["lost_rows"] > 0 and f["numbers"]["failed_rows"] == 0, f
    # and the stored `responsive` column says 0 for the lost rows (it was empty)
    e = subprocess.run([BIN, "export", "last", "--format", "jsonl", "--series", "gpu", "--db", db], env=env,
                       capture_output=True, text=True, timeout=60)
    rows = [json.loads(x) for x in e.stdout.splitlines() if json.loads(x).get("gpu") == 1]
    assert rows[0]["responsive"] == 1 and rows[-1]["responsive"] == 0 and rows[-1]["device_state"] == 2, rows[-1]
