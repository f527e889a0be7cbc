# SPDX-License-Identifier: Apache-2.0
"""trainmon rules (docs/cluster.md): the generated Prometheus rules pass `promtool check rules`, every
alert fires on synthetic series of its bad case and stays silent on a near miss (`promtool test
rules`), hostile --threshold values are refused, and end to end three `serve` nodes playing fake
scenarios, a real Prometheus with the rules and a real Alertmanager deliver the right alerts, naming
node and GPU, to a webhook, and none for the healthy node."""

import http.server
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request

import pytest
import yaml

from test_run_helpers import SOURCE_DIR, env, kill_quietly, trainmon_bin, wait_for

PROMETHEUS = "/usr/bin/prometheus"
PROMTOOL = "/usr/bin/promtool"
ALERTMANAGER = "/usr/bin/prometheus-alertmanager"
MIB = 1048576


def need(path, package):
    if not os.access(path, os.X_OK):
        pytest.skip(f"{path} is not installed (Debian package {package})")


def rules_text(*overrides):
    args = [trainmon_bin(), "rules"]
    for o in overrides:
        args += ["--threshold", o]
    r = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


def thresholds_of(text):
    """The thresholds the file was made with, from its header comment (the one source of truth)."""
    th = {}
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        for k, v in re.findall(r"(\w+)=(\S+)", line):
            th[k] = float(v)
    return th


def promtool(*args, cwd=None):
    return subprocess.run([PROMTOOL, *args], capture_output=True, text=True, timeout=120, cwd=cwd)


@pytest.fixture(scope="module")
def default_rules(tmp_path_factory):
    d = tmp_path_factory.mktemp("rules")
    path = d / "trainmon-rules.yml"
    r = subprocess.run([trainmon_bin(), "rules", "-o", str(path)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout == "", r.stderr
    return path


def test_rules_pass_promtool_check(default_rules, tmp_path):
    need(PROMTOOL, "prometheus")
    r = promtool("check", "rules", str(default_rules))
    assert r.returncode == 0, r.stdout + r.stderr
    doc = yaml.safe_load(default_rules.read_text())
    alerts = [x for g in doc["groups"] for x in g["rules"] if "alert" in x]
    codes = {a["labels"]["code"] for a in alerts}
    assert codes == {"D2", "D3", "D7", "D10", "D12", "D13", "D14", "D21", "D23", "D24", "D27"}
    for a in alerts:
        assert a["labels"]["severity"] in ("info", "warning", "critical")
        assert re.fullmatch(r"[a-z0-9-]+", a["labels"]["slug"])
        assert a["annotations"]["code"] == a["labels"]["code"]
        assert len(a["annotations"]["description"]) > 40  # the advice
    # docs/cluster.md's alert table gives the defaults the file was made with.
    th = thresholds_of(default_rules.read_text())
    doc_text = open(os.path.join(SOURCE_DIR, "docs", "cluster.md")).read()
    table = doc_text[doc_text.index("| code | alert |"):doc_text.index("Where they differ")]
    documented = re.findall(r"`([a-z0-9_]+)` ([0-9.]+) \(", table) + re.findall(r"`([a-z0-9_]+)` ([0-9.]+)[,|]", table)
    assert len(documented) >= 15
    for k, v in documented:
        assert th[k] == float(v), (k, v, th[k])
    # The advice text survives YAML quoting as written (backticks, quotes, colons).
    lost = next(a for a in alerts if a["alert"] == "TrainmonGpuLost")
    assert "(`dmesg | grep -i xid`)" in lost["annotations"]["description"]
    # Extreme but valid overrides still make a valid file (numbers and durations PromQL reads).
    extreme = rules_text("window_s=0.1", "held_unused_for_s=1e9", "near_full_pct=0",
                         "leak_min_slope_mib_h=1e-9", "imbalance_spread_pct=100", "throttle_clock_frac=0.123456789",
                         "straggler_min_steps=1000000", "hang_floor_s=86400.5")
    p = tmp_path / "extreme.yml"
    p.write_text(extreme)
    r = promtool("check", "rules", str(p))
    assert r.returncode == 0, r.stdout + r.stderr
    assert thresholds_of(extreme)["throttle_clock_frac"] == 0.123456789
    assert 'for: "315360000s"' in extreme  # 1e9 s capped at 10 years
    assert "[100ms]" in extreme  # the shortest window: 0.1 s


@pytest.mark.parametrize("bad", [
    "near_full_pct=95\"}\n- alert: x", "near_full_pct=95 or vector(1)", "window_s=5s", "window_s=nan",
    "window_s=inf", "window_s=1e999", "near_full_pct=101", "window_s=0", "no_such_threshold=1",
    "straggler_min_steps=2.5", "near_full_pct", "window_s=0.001", "near_full_pct=0x10", "window_s=0x1p4",
    "window_s=+5"])
def test_hostile_thresholds_are_refused(bad, tmp_path):
    out = tmp_path / "rules.yml"
    r = subprocess.run([trainmon_bin(), "rules", "--threshold", bad, "-o", str(out)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2, (bad, r.returncode, r.stdout, r.stderr)
    assert r.stderr.startswith("trainmon rules: --threshold "), r.stderr
    assert "--threshold threshold" not in r.stderr, r.stderr  # no doubled word
    assert "\n" not in r.stderr.strip() or bad.count("\n"), r.stderr
    assert not out.exists() and not (tmp_path / "rules.yml.tmp").exists()


@pytest.mark.parametrize("given, message", [
    (["idle_util_pct=30"], "idle_util_pct=30 must be below busy_util_pct=20"),
    (["busy_util_pct=5"], "idle_util_pct=5 must be below busy_util_pct=5"),
    (["swing_low_pct=90"], "swing_low_pct=90 must be below swing_high_pct=80"),
    (["healthy_util_low_pct=99"], "healthy_util_low_pct=99 must be at most healthy_util_high_pct=95")])
def test_contradicting_thresholds_are_refused(given, message, tmp_path):
    """Each value in range, together contradictory: refused after the last one (the shared reader
    of rules, diagnose, run and record), naming both."""
    out = tmp_path / "rules.yml"
    r = subprocess.run([trainmon_bin(), "rules", *sum((["--threshold", g] for g in given), []), "-o", str(out)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert r.stderr.startswith("trainmon rules: thresholds: " + message), r.stderr
    assert not out.exists()
    # Put right by a later value: accepted.
    ok = subprocess.run([trainmon_bin(), "rules", "--threshold", "idle_util_pct=30", "--threshold", "busy_util_pct=40"],
                        capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stderr
    d = subprocess.run([trainmon_bin(), "diagnose", "last", *sum((["--threshold", g] for g in given), [])],
                       capture_output=True, text=True, timeout=60, env=env(TRAINMON_DB=str(tmp_path / "none.db")))
    assert d.returncode == 2 and d.stderr.startswith("trainmon diagnose: thresholds: " + message), d.stderr


@pytest.mark.parametrize("bad", ["", "node a", "node\x1b[2J", "a" * 254, 'x"} 1\nDCGM_FI_DEV_GPU_UTIL{'])
def test_serve_refuses_a_bad_hostname(bad, tmp_path):
    r = subprocess.run([trainmon_bin(), "serve", "--listen", "127.0.0.1:0", "--hostname", bad, "--db",
                        str(tmp_path / "s.db")], env=env("healthy-1gpu.json"), capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert r.stderr.startswith("trainmon serve: --hostname "), r.stderr
    assert "\x1b" not in r.stderr


# ---- promtool test rules: every alert, its bad case and a near miss -------------------------------

def gpu(host, idx, job=True):
    return {"Hostname": host, "gpu": str(idx), "UUID": f"GPU-{host}-{idx}", "modelName": "NVIDIA H100"}


def dec(v):
    """A number in the plain decimal form promtool's series notation reads."""
    t = f"{v:.6f}".rstrip("0").rstrip(".")
    return t if t not in ("", "-0") else "0"


def series(name, labels, values):
    inner = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    return {"series": f"{name}{{{inner}}}", "values": values}


def node_in_job(host, job="77"):
    return series("trainmon_labels_info", {"Hostname": host, "slurm_job_id": job}, "1x400")


def process_on(host, idx, pid, **attribution):
    """serve's info series of GPU process `pid` on GPU `idx` (docs/cluster.md section 10)."""
    l = {k: v for k, v in gpu(host, idx).items() if k != "modelName"}
    return series("trainmon_gpu_process_info", {**l, "pid": str(pid), **attribution}, "1x400")


def gpu_series(host, idx, util, used_mib=60000, free_mib=20000, reserved_mib=500, clock=1980, reasons=0):
    g = gpu(host, idx)
    return [series("DCGM_FI_DEV_GPU_UTIL", g, f"{dec(util)}x400"),
            series("DCGM_FI_DEV_FB_USED", g, f"{dec(used_mib)}x400"),
            series("DCGM_FI_DEV_FB_FREE", g, f"{dec(free_mib)}x400"),
            series("DCGM_FI_DEV_FB_RESERVED", g, f"{dec(reserved_mib)}x400"),
            series("DCGM_FI_DEV_SM_CLOCK", g, f"{dec(clock)}x400"),
            series("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", g, f"{reasons}x400")]


def rank_series(host, rank, gpu_idx, count, total, p90=1.0, last=None, job="77", data=0.0, phase=None,
                phase_since=None, comm=None):
    """A rank's training series: steps_total / step time sum / data wait grow by `count` / `total` /
    `data` per 15 s; `phase`: {phase name: promtool values of its 0/1 series}, with `phase_since`
    the values of trainmon_train_phase_since_timestamp_seconds (serve exports both)."""
    l = {"Hostname": host, "rank": str(rank), "local_rank": str(rank), "gpu": str(gpu_idx), "run_id": "1"}
    if job is not None:
        l["slurm_job_id"] = job
    out = [series("trainmon_train_step_seconds_count", l, f"0+{dec(count)}x400"),
           series("trainmon_train_step_seconds_sum", l, f"0+{dec(total)}x400"),
           series("trainmon_train_data_wait_seconds_total", l, f"0+{dec(data)}x400"),
           series("trainmon_train_step_seconds", {**l, "quantile": "0.9"}, f"{dec(p90)}x400")]
    if comm is not None:  # a protocol v3 sender's collective wait, per 15 s
        out.append(series("trainmon_train_collective_wait_seconds_total", l, f"0+{dec(comm)}x400"))
    out.append(series("trainmon_train_last_step_timestamp_seconds", l, last if last else "0+15x400"))
    for name, values in (phase or {}).items():
        out.append(series("trainmon_train_phase", {**l, "phase": name}, values))
    if phase_since:
        out.append(series("trainmon_train_phase_since_timestamp_seconds", l, phase_since))
    return out


def fires(alertname, expect, t_s, inputs, name, scope="host"):
    """One promtool test: at t_s the firing `alertname` alerts are exactly `expect` (dicts of the
    labels Hostname, gpu, rank, job_id, severity, code, xid, cause that they carry). `scope`: how
    one_group tells this case's alerts from the others' ("host": their Hostname, "job": their
    job_id, for alerts of a whole job)."""
    by = "alertname, Hostname, gpu, rank, job_id, run_id, severity, code, xid, cause"
    samples = []
    for e in expect:
        lab = ",".join(f'{k}="{v}"' for k, v in sorted({"alertname": alertname, **e}.items()))
        samples.append({"labels": "{" + lab + "}", "value": 1})
    return {"name": name, "interval": "15s", "input_series": inputs, "scope": scope,
            "promql_expr_test": [{"expr": f'count by ({by}) (ALERTS{{alertstate="firing",alertname="{alertname}"}})',
                                  "eval_time": f"{int(t_s)}s", "exp_samples": samples}]}


def unit_tests(th):
    W = th["window_s"]
    job = {"job_id": "77"}
    T = []
    # D7 idle GPU in a job: held and at idle_util_pct; near misses one point above, or not held.
    t = W + th["held_unused_for_s"] + 120
    idle = th["idle_util_pct"]
    held = th["job_gpu_min_mib"]
    T.append(fires("TrainmonGpuIdleInJob", [{"Hostname": "n1", "gpu": "1", "severity": "warning", "code": "D7", **job}], t,
                   [node_in_job("n1"), *gpu_series("n1", 0, 92), *gpu_series("n1", 1, idle, used_mib=held)], "D7 fires"))
    T.append(fires("TrainmonGpuIdleInJob", [], t,
                   [node_in_job("n1"), *gpu_series("n1", 0, 92), *gpu_series("n1", 1, idle + 1, used_mib=held)],
                   "D7 near miss: util above idle"))
    T.append(fires("TrainmonGpuIdleInJob", [], t,
                   [node_in_job("n1"), *gpu_series("n1", 0, 92), *gpu_series("n1", 1, idle, used_mib=held - 1)],
                   "D7 near miss: not held by the job"))
    T.append(fires("TrainmonGpuIdleInJob", [], t,
                   [*gpu_series("n1", 0, 92), *gpu_series("n1", 1, idle, used_mib=held)], "D7 near miss: no job"))
    # Serve as a node service, in no job: the GPUs' processes name the job (a Slurm job id, or a pod
    # as namespace/pod); a GPU whose processes belong to two jobs belongs to neither.
    T.append(fires("TrainmonGpuIdleInJob", [{"Hostname": "n1", "gpu": "1", "severity": "warning", "code": "D7", **job}], t,
                   [process_on("n1", 0, 100, job_id="77", step="0"), process_on("n1", 1, 101, job_id="77"),
                    process_on("n1", 1, 102), *gpu_series("n1", 0, 92), *gpu_series("n1", 1, idle, used_mib=held)],
                   "D7 fires for the job its processes name"))
    T.append(fires("TrainmonGpuIdleInJob", [{"Hostname": "n1", "gpu": "1", "severity": "warning", "code": "D7",
                                             "job_id": "team-a/trainer-0"}], t,
                   [process_on("n1", 0, 100, namespace="team-a", pod="trainer-0"),
                    process_on("n1", 1, 101, namespace="team-a", pod="trainer-0"),
                    *gpu_series("n1", 0, 92), *gpu_series("n1", 1, idle, used_mib=held)], "D7 fires for a pod"))
    T.append(fires("TrainmonGpuIdleInJob", [], t,
                   [process_on("n1", 0, 100, job_id="77"), process_on("n1", 1, 101, job_id="77"),
                    process_on("n1", 1, 102, job_id="88"), *gpu_series("n1", 0, 92),
                    *gpu_series("n1", 1, idle, used_mib=held)], "D7 near miss: the idle GPU is shared by two jobs"))
    # A rank of the job outside the loop now (evaluation on one GPU, the other waits): no D7, no D2.
    in_eval = {"idle": "1x400", "data": "0x400", "compute": "0x400"}
    T.append(fires("TrainmonGpuIdleInJob", [], t,
                   [node_in_job("n1"), *gpu_series("n1", 0, 92), *gpu_series("n1", 1, idle, used_mib=held),
                    *rank_series("n1", 0, 0, 15, 15, phase=in_eval)], "D7 silent while the job evaluates"))
    # D2 straggler across two nodes: the busiest GPU is thermally throttled, the spread just over.
    t = W + th["imbalance_for_s"] + 120
    spread, high = th["imbalance_spread_pct"], th["imbalance_high_pct"]
    hi = max(high, spread) + 10
    lo_fire, lo_miss = hi - spread - 1, hi - spread
    thermal = 0x20
    T.append(fires("TrainmonGpuStraggler", [{"Hostname": "n1", "gpu": "0", "severity": "warning", "code": "D2", **job}], t,
                   [node_in_job("n1"), node_in_job("n2"), *gpu_series("n1", 0, hi, clock=1350, reasons=thermal),
                    *gpu_series("n2", 0, lo_fire)], "D2 straggler fires"))
    T.append(fires("TrainmonGpuStraggler", [], t,
                   [node_in_job("n1"), node_in_job("n2"), *gpu_series("n1", 0, hi, clock=1350, reasons=thermal),
                    *gpu_series("n2", 0, lo_miss)], "D2 straggler near miss: spread not over"))
    frac_clock = th["throttle_clock_frac"] * 2000
    T.append(fires("TrainmonGpuStraggler", [{"Hostname": "n1", "gpu": "0", "severity": "warning", "code": "D2", **job}], t,
                   [node_in_job("n1"), node_in_job("n2"), *gpu_series("n1", 0, hi, clock=frac_clock - 1),
                    *gpu_series("n2", 0, lo_fire, clock=2000)], "D2 straggler by clock fires"))
    T.append(fires("TrainmonGpuStraggler", [], t,
                   [node_in_job("n1"), node_in_job("n2"), *gpu_series("n1", 0, hi, clock=frac_clock),
                    *gpu_series("n2", 0, lo_fire, clock=2000)], "D2 straggler near miss: clock at the fraction"))
    # D2 imbalance without a straggler: the least busy GPU is named; near miss: busiest under high.
    T.append(fires("TrainmonJobImbalance", [{"Hostname": "n2", "gpu": "0", "severity": "warning", "code": "D2", **job}], t,
                   [node_in_job("n1"), node_in_job("n2"), *gpu_series("n1", 0, hi), *gpu_series("n2", 0, lo_fire)],
                   "D2 imbalance fires"))
    T.append(fires("TrainmonJobImbalance", [], t,
                   [node_in_job("n1"), node_in_job("n2"), *gpu_series("n1", 0, high - 1),
                    *gpu_series("n2", 0, max(0, high - 1 - spread - 1))], "D2 imbalance near miss: busiest under high"))
    T.append(fires("TrainmonJobImbalance", [], t,
                   [node_in_job("n1"), node_in_job("n2"), *gpu_series("n1", 0, hi, clock=1350, reasons=thermal),
                    *gpu_series("n2", 0, lo_fire)], "D2 imbalance silent when the straggler explains it"))
    in_eval = {"idle": "1x400", "data": "0x400", "compute": "0x400"}
    T.append(fires("TrainmonJobImbalance", [], t,
                   [node_in_job("n1"), node_in_job("n2"), *gpu_series("n1", 0, hi), *gpu_series("n2", 0, lo_fire),
                    series("trainmon_train_phase", {"Hostname": "n1", "rank": "0", "run_id": "1", "slurm_job_id": "77",
                                                    "phase": "idle"}, "1x400")],
                   "D2 imbalance silent while the job evaluates"))
    # D12 throttling under load; near misses just under busy_util_pct, and the power cap alone.
    t = th["throttle_for_s"] + 120
    busy = th["busy_util_pct"]
    for name, bits, miss_bits in (("TrainmonGpuThermalThrottle", 0x40, 0x4), ("TrainmonGpuHardwareSlowdown", 0x80, 0x4)):
        T.append(fires(name, [{"Hostname": "n3", "gpu": "0", "severity": "warning", "code": "D12"}], t,
                       gpu_series("n3", 0, busy, reasons=bits), f"D12 {name} fires"))
        T.append(fires(name, [], t, gpu_series("n3", 0, busy - 1, reasons=bits), f"D12 {name} near miss: util"))
        T.append(fires(name, [], t, gpu_series("n3", 0, 90, reasons=miss_bits), f"D12 {name} near miss: power cap"))
    # D10, D13, D14: counters and states, with the job label where the node is in one.
    g = gpu("n4", 2)
    T.append(fires("TrainmonEccUncorrectable", [{"Hostname": "n4", "gpu": "2", "severity": "critical", "code": "D10", **job}], 60,
                   [node_in_job("n4"), series("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", g, "0 0 1x20")], "D10 fires"))
    T.append(fires("TrainmonEccUncorrectable", [], 60, [series("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", g, "0x20")], "D10 near miss"))
    # A node two jobs share (each with its own serve): its GPUs' alerts come without job_id, a node
    # in one job keeps it, and nothing fails to evaluate (a many-to-many join stopped every rule).
    g5 = gpu("n5", 0)
    T.append(fires("TrainmonEccUncorrectable",
                   [{"Hostname": "n4", "gpu": "2", "severity": "critical", "code": "D10", **job},
                    {"Hostname": "n5", "gpu": "0", "severity": "critical", "code": "D10"}], 60,
                   [node_in_job("n4"), node_in_job("n5", "77"), node_in_job("n5", "78"),
                    series("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", g, "0 0 1x20"),
                    series("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", g5, "0 0 1x20")], "D10 on a node two jobs share"))
    t7 = W + th["held_unused_for_s"] + 120
    T.append(fires("TrainmonGpuIdleInJob", [{"Hostname": "n1", "gpu": "1", "severity": "warning", "code": "D7", **job}], t7,
                   [node_in_job("n1"), node_in_job("n5", "77"), node_in_job("n5", "78"),
                    *gpu_series("n1", 0, 92), *gpu_series("n1", 1, th["idle_util_pct"], used_mib=th["job_gpu_min_mib"]),
                    *gpu_series("n5", 0, 92), *gpu_series("n5", 1, 0, used_mib=th["job_gpu_min_mib"])],
                   "D7 still fires elsewhere while a node is shared; the shared node is left out"))
    T.append(fires("TrainmonXidError", [{"Hostname": "n4", "gpu": "2", "severity": "critical", "code": "D13", "xid": "79"}], 60,
                   [series("DCGM_FI_DEV_XID_ERRORS", g, "0 79x20")], "D13 Xid 79 fires, critical"))
    T.append(fires("TrainmonXidError", [{"Hostname": "n4", "gpu": "2", "severity": "warning", "code": "D13", "xid": "43"}], 60,
                   [series("DCGM_FI_DEV_XID_ERRORS", g, "0 43x20")], "D13 Xid 43 fires, warning"))
    T.append(fires("TrainmonXidError", [{"Hostname": "n4", "gpu": "2", "severity": "warning", "code": "D13"}], 60,
                   [series("DCGM_FI_DEV_XID_ERRORS", g, "0 77x20")], "D13 an Xid not in the table fires once"))
    T.append(fires("TrainmonXidError", [], 60, [series("DCGM_FI_DEV_XID_ERRORS", g, "0x20")], "D13 near miss"))
    # The gauge holds the last Xid for ever: the alert resolves xid_window_s after it, and fires
    # again when the same Xid comes back (serve's counter grows, the gauge does not move).
    xw = th["xid_window_s"]
    steps = int((xw + 600) // 15)
    held = f"0 0 43x{steps}"
    T.append(fires("TrainmonXidError", [{"Hostname": "n4", "gpu": "2", "severity": "warning", "code": "D13", "xid": "43"}],
                   30 + xw - 30, [series("DCGM_FI_DEV_XID_ERRORS", g, held)], "D13 still firing within the window"))
    T.append(fires("TrainmonXidError", [], 30 + xw + 60, [series("DCGM_FI_DEV_XID_ERRORS", g, held)],
                   "D13 resolves after xid_window_s (the gauge still says 43)"))
    own = {"Hostname": "n4", "gpu": "2", "UUID": g["UUID"]}
    again = int((xw + 120) // 15)
    T.append(fires("TrainmonXidError", [{"Hostname": "n4", "gpu": "2", "severity": "warning", "code": "D13", "xid": "43"}],
                   again * 15 + 60, [series("DCGM_FI_DEV_XID_ERRORS", g, held),
                                     series("trainmon_gpu_xid_errors_total", own, f"0 1x{again} 2x{steps}")],
                   "D13 the same Xid again fires again"))
    T.append(fires("TrainmonXidError", [], again * 15 + 60,
                   [series("DCGM_FI_DEV_XID_ERRORS", g, held), series("trainmon_gpu_xid_errors_total", own, f"0 1x{steps}")],
                   "D13 near miss: no new Xid since the window"))
    T.append(fires("TrainmonGpuLost", [{"Hostname": "n4", "gpu": "2", "severity": "critical", "code": "D14"}], 60,
                   [series("trainmon_gpu_up", {"Hostname": "n4", "gpu": "2"}, "1 0x20")], "D14 fires"))
    T.append(fires("TrainmonGpuLost", [], 60, [series("trainmon_gpu_up", {"Hostname": "n4", "gpu": "2"}, "1x20")],
                   "D14 near miss"))
    # D21: (used + reserved) / total half a point over and under near_full_pct.
    t = th["near_full_for_s"] + 60
    nf = th["near_full_pct"]
    for pct, exp, name in ((min(100, nf + 0.5), True, "D21 fires"), (max(0, nf - 0.5), False, "D21 near miss")):
        used = pct * 10 - 10
        T.append(fires("TrainmonGpuMemoryNearFull",
                       [{"Hostname": "n5", "gpu": "0", "severity": "warning", "code": "D21"}] if exp else [], t,
                       gpu_series("n5", 0, 90, used_mib=used, reserved_mib=10, free_mib=1000 - pct * 10), name))
    # D3: host memory used grows at twice / half the slope threshold; critical when available
    # memory runs out within leak_critical_eta_s.
    t = th["leak_min_span_s"] + 300
    slope = th["leak_min_slope_mib_h"] * MIB / 240  # bytes per 15 s
    hl = {"Hostname": "n6"}
    eta = th["leak_critical_eta_s"]
    # critical: at t, available memory is what the leak eats in half of leak_critical_eta_s
    avail_start = 2 * slope * (t / 15) + 2 * slope * (eta / 15) / 2
    def used_bytes(mul):
        if mul > 0:
            return f"10000000000+{dec(mul * slope)}x400"
        # twice the slope, but only since 10 min short of leak_min_span_s before the evaluation
        gap = int((t - th["leak_min_span_s"] + 600) // 15)
        return f"_x{gap} 10000000000+{dec(-mul * slope)}x400"

    for mul, sev, avail, name in ((2, "warning", "1000000000000000x400", "D3 warning fires"),
                                  (0.5, None, "1000000000000000x400", "D3 near miss: half the slope"),
                                  (-2, None, "1000000000000000x400", "D3 near miss: the fit does not cover the span"),
                                  (2, "critical", f"{dec(avail_start)}-{dec(2 * slope)}x400",
                                   "D3 critical: available memory runs out")):
        T.append(fires("TrainmonHostMemoryLeak",
                       [{"Hostname": "n6", "severity": sev, "code": "D3", **job}] if sev else [], t,
                       [node_in_job("n6"), series("trainmon_host_memory_used_bytes", hl, used_bytes(mul)),
                        series("trainmon_host_memory_available_bytes", hl, avail)], name))
    # D23: rank 0 (p90 1 s: limit hang_floor_s) stopped at t=400 s; rank 1 with a p90 that makes
    # its limit longer than its stall stays silent. One alert for the job (job_id, no rank labels).
    floor, fac = th["hang_floor_s"], th["hang_p90_factor"]
    t_eval = 400 + floor + 60
    p90_long = (floor + 120) / fac
    last = f"0+15x{400 // 15} {400 // 15 * 15}x300"
    hang = [{"severity": "critical", "code": "D23", **job}]
    T.append(fires("TrainmonTrainingHang", hang,
                   t_eval, [*rank_series("n7", 0, 0, 15, 15, p90=1, last=last),
                            *rank_series("n8", 1, 0, 15, 15, p90=p90_long, last=last)], "D23 fires for the job", "job"))
    T.append(fires("TrainmonTrainingHang", [], t_eval, rank_series("n7", 0, 0, 15, 15, p90=1), "D23 near miss: steps go on",
                   "job"))
    # Every rank of the job stuck: still one alert.
    T.append(fires("TrainmonTrainingHang", hang, t_eval,
                   [*rank_series("n7", 0, 0, 15, 15, p90=1, last=last), *rank_series("n8", 1, 0, 15, 15, p90=1, last=last),
                    *rank_series("n8", 2, 1, 15, 15, p90=1, last=last)], "D23 three ranks stuck: one alert", "job"))
    # Ranks without a job label: one alert per run on a node.
    T.append(fires("TrainmonTrainingHang", [{"Hostname": "n7", "run_id": "1", "severity": "critical", "code": "D23"}], t_eval,
                   [*rank_series("n7", 0, 0, 15, 15, p90=1, last=last, job=None),
                    *rank_series("n7", 1, 1, 15, 15, p90=1, last=last, job=None)], "D23 a run without a job"))
    # An evaluation pass (phase idle) is no hang; back in the loop, the stall counts from the return.
    k = 400 // 15
    n_all = 400
    idle_then = {"idle": f"0x{k} 1x{n_all}", "data": f"1x{k} 0x{n_all}", "compute": f"0x{n_all}"}
    T.append(fires("TrainmonTrainingHang", [], t_eval,
                   [*rank_series("n7", 0, 0, 15, 15, p90=1, last=last, phase=idle_then,
                                 phase_since=f"0x{k} {k * 15}x{n_all}"),
                    *rank_series("n8", 1, 0, 15, 15, p90=1, last=last, phase=idle_then,
                                 phase_since=f"0x{k} {k * 15}x{n_all}")], "D23 silent during an evaluation", "job"))
    # One rank evaluates (rank 0 alone, say) while the other waits in its collective: no hang either.
    T.append(fires("TrainmonTrainingHang", [], t_eval,
                   [*rank_series("n7", 0, 0, 15, 15, p90=1, last=last, phase=idle_then,
                                 phase_since=f"0x{k} {k * 15}x{n_all}"),
                    *rank_series("n8", 1, 0, 15, 15, p90=1, last=last)], "D23 silent while one rank evaluates", "job"))
    # Evaluation from 400 s to `back`, then in the loop again (phase data) with no step.
    back_k = (400 + int(floor) + 60) // 15
    back = back_k * 15
    returned = {"idle": f"0x{k} 1x{back_k - k} 0x{n_all}", "data": f"1x{k} 0x{back_k - k} 1x{n_all}", "compute": f"0x{n_all}"}
    since = f"0x{k} {k * 15}x{back_k - k} {back}x{n_all}"
    ranks_back = [*rank_series("n7", 0, 0, 15, 15, p90=1, last=last, phase=returned, phase_since=since)]
    T.append(fires("TrainmonTrainingHang", [], back + floor - 30, ranks_back,
                   "D23 after an evaluation the stall counts from the return", "job"))
    T.append(fires("TrainmonTrainingHang", hang, back + floor + 60, ranks_back,
                   "D23 fires once the return is hang_floor_s ago", "job"))
    # D24: rank 1 on another node is just under / over the score threshold.
    t = th["straggler_window_s"] + th["straggler_for_s"] + 120
    frac = th["straggler_score_frac"]
    steps_fire = 15 * frac * 0.97  # score = steps_rank1 / steps_rank0 at equal time per 15 s
    steps_miss = 15 * frac * 1.03
    T.append(fires("TrainmonStragglerRank", [{"Hostname": "n8", "gpu": "0", "rank": "1", "run_id": "1", "severity": "warning", "code": "D24", **job}],
                   t, [*rank_series("n7", 0, 0, 15, 15), *rank_series("n8", 1, 0, steps_fire, 15)], "D24 fires"))
    T.append(fires("TrainmonStragglerRank", [], t, [*rank_series("n7", 0, 0, 15, 15), *rank_series("n8", 1, 0, steps_miss, 15)],
                   "D24 near miss"))
    # D24 by data wait: in a synchronised job both ranks' steps last as long; rank 1 waits for data
    # (1 - frac) x 1.1 / (1 - frac) x 0.9 of its step more than rank 0.
    wait_fire = 15 * (1 - frac) * 1.1
    wait_miss = 15 * (1 - frac) * 0.9
    T.append(fires("TrainmonStragglerRank", [{"Hostname": "n8", "gpu": "0", "rank": "1", "run_id": "1", "severity": "warning",
                                              "code": "D24", "cause": "data-wait", **job}], t,
                   [*rank_series("n7", 0, 0, 15, 15, data=0.5), *rank_series("n8", 1, 0, 15, 15, data=0.5 + wait_fire)],
                   "D24 data wait fires"))
    T.append(fires("TrainmonStragglerRank", [], t,
                   [*rank_series("n7", 0, 0, 15, 15, data=0.5), *rank_series("n8", 1, 0, 15, 15, data=0.5 + wait_miss)],
                   "D24 data wait near miss"))
    # A rank outside the loop in the window (evaluation) keeps the job's straggler alerts quiet.
    eval_at = int((t - th["straggler_window_s"] / 2) // 15)
    evaluating = {"idle": f"0x{eval_at} 1 0x400", "data": f"1x{eval_at} 0 1x400", "compute": "0x400"}
    T.append(fires("TrainmonStragglerRank", [], t,
                   [*rank_series("n7", 0, 0, 15, 15, phase=evaluating), *rank_series("n8", 1, 0, steps_fire, 15)],
                   "D24 silent when a rank of the job was evaluating in the window"))
    # D24 on compute (protocol v3): both ranks' steps last 15 s per 15 s; rank 0 computes c0, rank 1
    # c1 and rank 0 waits the difference in the collective.
    cfrac = th["straggler_compute_frac"]
    tc = th["straggler_window_s"] + th["straggler_compute_for_s"] + 120
    for c1, exp, what in ((5 / (cfrac * 0.95), True, "fires"), (5 / (cfrac * 1.05), False, "near miss")):
        T.append(fires("TrainmonStragglerRank",
                       [{"Hostname": "n8", "gpu": "0", "rank": "1", "run_id": "1", "severity": "warning", "code": "D24",
                         "cause": "compute", **job}] if exp else [], tc,
                       [*rank_series("n7", 0, 0, 15, 15, data=0.5, comm=15 - 0.5 - 5),
                        *rank_series("n8", 1, 0, 15, 15, data=0.5, comm=15 - 0.5 - c1)], f"D24 compute {what}"))
    # D27: every rank's collective wait at or just under comm_bound_share_pct of its step time.
    share = th["comm_bound_share_pct"] / 100
    td = th["window_s"] + th["comm_bound_for_s"] + 120
    for f, exp, what in ((1.05, True, "fires"), (0.95, False, "near miss")):
        T.append(fires("TrainmonCommBound", [{"severity": "warning", "code": "D27", **job}] if exp else [], td,
                       [*rank_series("n7", 0, 0, 15, 15, comm=15 * min(1, share * f)),
                        *rank_series("n8", 1, 0, 15, 15, comm=15 * min(1, share * f * 1.2))], f"D27 {what}", "job"))
    # ... but not when one rank waits little (a straggler makes the others wait: D24's)
    T.append(fires("TrainmonCommBound", [], td,
                   [*rank_series("n7", 0, 0, 15, 15, comm=15 * min(1, share * 1.5)),
                    *rank_series("n8", 1, 0, 15, 15, comm=15 * share * 0.5)], "D27 silent for a straggler", "job"))
    return T


def one_group(tests):
    """The cases as one promtool test group (one evaluation pass instead of one per case: ~20x
    faster): case i's hosts become c<i>n..., its job j<i>, and its query looks at its hosts only."""
    group = {"name": "every alert", "interval": "15s", "input_series": [], "promql_expr_test": []}
    for i, t in enumerate(tests):
        def rename(text, i=i):
            text = re.sub(r'Hostname="(n\d+)"', lambda m: f'Hostname="c{i}{m.group(1)}"', text)
            return text.replace('slurm_job_id="77"', f'slurm_job_id="j{i}"').replace('job_id="77"', f'job_id="j{i}"')
        group["input_series"] += [{**x, "series": rename(x["series"])} for x in t["input_series"]]
        for e in t["promql_expr_test"]:
            scope = f'job_id="j{i}",' if t["scope"] == "job" else f'Hostname=~"c{i}n.*",'
            expr = e["expr"].replace('ALERTS{', f'ALERTS{{{scope}')
            group["promql_expr_test"].append({**e, "expr": expr, "exp_samples": [
                {**x, "labels": rename(x["labels"])} for x in e["exp_samples"]]})
    return group


@pytest.mark.parametrize("overrides", [(), ("window_s=30", "held_unused_for_s=90", "near_full_pct=80",
                                            "idle_util_pct=10", "straggler_score_frac=0.5", "hang_floor_s=60")])
def test_every_alert_fires_and_near_misses_stay_silent(overrides, tmp_path):
    need(PROMTOOL, "prometheus")
    text = rules_text(*overrides)
    (tmp_path / "rules.yml").write_text(text)
    th = thresholds_of(text)
    for o in overrides:
        k, v = o.split("=")
        assert th[k] == float(v)
    tests = unit_tests(th)
    doc = yaml.safe_load(text)
    alertnames = {x["alert"] for g in doc["groups"] for x in g["rules"] if "alert" in x}
    tested = {t["promql_expr_test"][0]["expr"].split('alertname="')[1].split('"')[0] for t in tests
              if t["promql_expr_test"][0]["exp_samples"]}
    assert tested == alertnames  # every alert has a firing case
    (tmp_path / "tests.yml").write_text(yaml.safe_dump(
        {"rule_files": ["rules.yml"], "evaluation_interval": "30s", "tests": [one_group(tests)]}, sort_keys=False))
    r = promtool("test", "rules", "tests.yml", cwd=tmp_path)
    names = "\n".join(f"c{i}: {t['name']}" for i, t in enumerate(tests))
    assert r.returncode == 0, (r.stdout + r.stderr)[-6000:] + "\ncases:\n" + names


def test_hang_alert_names_the_stuck_ranks(tmp_path):
    """One hang alert for the job; its annotations name the stuck ranks (longest stall first) and
    count them; a rank still stepping is not named."""
    need(PROMTOOL, "prometheus")
    text = rules_text("hang_floor_s=60")
    (tmp_path / "rules.yml").write_text(text)
    doc = yaml.safe_load(text)
    hang = next(r for g in doc["groups"] for r in g["rules"] if r.get("alert") == "TrainmonTrainingHang")
    last0 = "0+15x20 300x100"  # rank 0's last step at 300 s
    last1 = "0+15x24 360x100"  # rank 1's at 360 s
    inputs = [*rank_series("node-a", 0, 0, 15, 15, last=last0), *rank_series("node-b", 1, 3, 15, 15, last=last1),
              *rank_series("node-b", 2, 4, 15, 15)]
    test = {"interval": "15s", "input_series": inputs, "alert_rule_test": [{
        "eval_time": "8m", "alertname": "TrainmonTrainingHang", "exp_alerts": [{
            "exp_labels": {"severity": "critical", "code": "D23", "slug": hang["labels"]["slug"], "job_id": "77"},
            "exp_annotations": {
                **{k: v for k, v in hang["annotations"].items() if k not in ("summary", "ranks")},
                "summary": "job 77: 2 ranks stuck, no step ended for 3m 0s",
                "ranks": "rank 0 on node-a (GPU 0) for 3m 0s, rank 1 on node-b (GPU 3) for 2m 0s"}}]}]}
    # the query the job report reads the hang's ranks with (job_history.cpp): both stuck ranks of job 77
    test["promql_expr_test"] = [{"expr": 'count(max_over_time(trainmon:rank_stalled:seconds{job_id="77"}[300s]))',
                                 "eval_time": "8m", "exp_samples": [{"labels": "{}", "value": 2}]}]
    (tmp_path / "tests.yml").write_text(yaml.safe_dump(
        {"rule_files": ["rules.yml"], "evaluation_interval": "15s", "tests": [test]}, sort_keys=False))
    r = promtool("test", "rules", "tests.yml", cwd=tmp_path)
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]


# ---- end to end: three nodes, Prometheus, Alertmanager, a webhook -------------------------------

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Hook(http.server.BaseHTTPRequestHandler):
    received = []
    lock = threading.Lock()

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with Hook.lock:
            Hook.received.append(json.loads(body))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


NODES = {"node-a": "cluster-node-idle-gpu.json", "node-b": "cluster-node-straggler.json",
         "node-c": "cluster-node-healthy.json"}


class Cluster:
    """Three serve nodes, Alertmanager, Prometheus (scraping every second, the generated rules)."""

    def __init__(self, tmp_path):
        self.tmp = tmp_path
        self.procs = {}
        self.ports = {}
        self.hook = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hook)
        threading.Thread(target=self.hook.serve_forever, daemon=True).start()
        Hook.received = []

    def start(self):
        tmp_path = self.tmp
        for host, scen in NODES.items():
            err = open(tmp_path / f"{host}.stderr", "w")
            p = subprocess.Popen([trainmon_bin(), "serve", "--listen", "127.0.0.1:0", "--hostname", host,
                                  "--db", str(tmp_path / f"{host}.db"), "--interval", "0.5"],
                                 env=env(scen, SLURM_JOB_ID="4242"), stdout=subprocess.DEVNULL, stderr=err)
            self.procs[host] = p

            def port(host=host, p=p):
                m = re.search(r"listening on http://127\.0\.0\.1:(\d+)/", (tmp_path / f"{host}.stderr").read_text())
                return int(m.group(1)) if m else (p.poll() is not None and -1)
            self.ports[host] = wait_for(port, timeout=60)
            assert self.ports[host] and self.ports[host] > 0, (tmp_path / f"{host}.stderr").read_text()
        # every node exports its GPUs under its own name before Prometheus starts
        for host, port in self.ports.items():
            def ready(host=host, port=port):
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                    m = r.read().decode()
                return f'Hostname="{host}"' in m and "DCGM_FI_DEV_GPU_UTIL{" in m and 'slurm_job_id="4242"' in m
            assert wait_for(ready, timeout=30), host

        rules = tmp_path / "trainmon-rules.yml"
        quick = ["window_s=3", "held_unused_for_s=3", "imbalance_for_s=3", "throttle_for_s=3"]
        r = subprocess.run([trainmon_bin(), "rules", "-o", str(rules), *sum((["--threshold", q] for q in quick), [])],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        am_port, self.prom_port = free_port(), free_port()
        (tmp_path / "am.yml").write_text(
            "route:\n  receiver: hook\n  group_by: [alertname, Hostname, gpu]\n  group_wait: 1s\n"
            "  group_interval: 1s\n  repeat_interval: 1h\n"
            f"receivers:\n  - name: hook\n    webhook_configs:\n      - url: http://127.0.0.1:{self.hook.server_port}/\n")
        am_log = open(tmp_path / "alertmanager.log", "w")
        self.procs["alertmanager"] = subprocess.Popen(
            [ALERTMANAGER, f"--config.file={tmp_path / 'am.yml'}", f"--storage.path={tmp_path / 'am-data'}",
             f"--web.listen-address=127.0.0.1:{am_port}", "--cluster.listen-address="], stdout=am_log, stderr=am_log)
        targets = ", ".join(f"'127.0.0.1:{p}'" for p in self.ports.values())
        (tmp_path / "prometheus.yml").write_text(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n"
            f"rule_files: ['{rules}']\n"
            f"alerting:\n  alertmanagers:\n    - static_configs:\n        - targets: ['127.0.0.1:{am_port}']\n"
            f"scrape_configs:\n  - job_name: trainmon\n    static_configs:\n      - targets: [{targets}]\n")
        prom_log = open(tmp_path / "prometheus.log", "w")
        self.procs["prometheus"] = subprocess.Popen(
            [PROMETHEUS, f"--config.file={tmp_path / 'prometheus.yml'}", f"--storage.tsdb.path={tmp_path / 'prom-data'}",
             f"--web.listen-address=127.0.0.1:{self.prom_port}"], stdout=prom_log, stderr=prom_log)
        self.url = f"http://127.0.0.1:{self.prom_port}"

    def logs(self):
        return ((self.tmp / "prometheus.log").read_text()[-3000:] + (self.tmp / "alertmanager.log").read_text()[-2000:])

    def stop(self, name):
        p = self.procs[name]
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            kill_quietly(p)
            p.wait()

    def close(self):
        for name in reversed(list(self.procs)):
            self.stop(name)
        self.hook.shutdown()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """One cluster for the file's end-to-end tests (Prometheus starts once)."""
    if os.environ.get("TRAINMON_SANITIZED") == "1":
        pytest.skip("real-process Prometheus/Alertmanager test: release pass only")
    need(PROMETHEUS, "prometheus")
    need(ALERTMANAGER, "prometheus-alertmanager")
    c = Cluster(tmp_path_factory.mktemp("cluster"))
    try:
        c.start()
        yield c
    finally:
        c.close()


def test_three_nodes_alerts_reach_alertmanager(cluster):
    def alerts():
        with Hook.lock:
            got = {}
            for msg in Hook.received:
                for a in msg["alerts"]:
                    if a["status"] == "firing":
                        lab = a["labels"]
                        got[(lab["alertname"], lab.get("Hostname"), lab.get("gpu"))] = a
            return got

    want = {("TrainmonGpuIdleInJob", "node-a", "1"), ("TrainmonGpuStraggler", "node-b", "0"),
            ("TrainmonGpuThermalThrottle", "node-b", "0")}
    got = wait_for(lambda: want <= set(alerts()) and alerts(), timeout=60, step=0.5)
    assert got, f"received {sorted(alerts())}\n" + cluster.logs()
    time.sleep(3)  # anything else that was pending by now has had its `for:`
    got = alerts()
    assert set(got) == want, sorted(got)
    assert not [k for k in got if k[1] == "node-c"]
    for (name, host, idx), a in got.items():
        lab, ann = a["labels"], a["annotations"]
        assert lab["job_id"] == "4242" and lab["severity"] == "warning", lab
        assert lab["UUID"].startswith("GPU-c1a57e00-"), lab
        assert f"GPU {idx} on {host} (job 4242)" in ann["summary"], ann
        assert ann["code"] == lab["code"] and ann["description"]
    assert got[("TrainmonGpuIdleInJob", "node-a", "1")]["labels"]["code"] == "D7"
    straggler = got[("TrainmonGpuStraggler", "node-b", "0")]
    assert straggler["labels"]["code"] == "D2"
    assert straggler["annotations"]["description"].startswith("GPU0 on node-b is the straggler")
    assert got[("TrainmonGpuThermalThrottle", "node-b", "0")]["labels"]["code"] == "D12"


# ---- the Grafana dashboard's queries on the same cluster -----------------------------------------

DASHBOARD = os.path.join(SOURCE_DIR, "deploy", "grafana", "trainmon-dcgm.json")
# The names the rank and process panels read: the cluster's nodes run no training and no GPU
# process, so they are not in /metrics here. serve exports them (src/serve/metrics_text.cpp;
# tests/e2e/test_train_views.py and test_serve.py check them).
RANK_PROCESS_NAMES = {"trainmon_process_gpu_memory_bytes", "trainmon_train_steps_total", "trainmon_train_samples_total", "trainmon_train_step_seconds",
               "trainmon_train_step_seconds_sum", "trainmon_train_step_seconds_count",
               "trainmon_train_data_wait_seconds_total", "trainmon_train_last_step_timestamp_seconds",
               "trainmon_train_phase", "trainmon_train_phase_since_timestamp_seconds"}


def prom_query(url, expr):
    q = urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(f"{url}/api/v1/query?{q}", timeout=10) as r:
        return json.load(r)


def dashboard_targets():
    """(panel title, expr with the template variables as Grafana's 'All' gives them) of every panel."""
    with open(DASHBOARD) as f:
        d = json.load(f)
    alls = {v["name"]: v.get("allValue") or ".*" for v in d["templating"]["list"] if v["type"] == "query"}
    out = []
    for p in d["panels"]:
        for t in p.get("targets", []):
            expr = t["expr"]
            for name, value in sorted(alls.items(), key=lambda kv: -len(kv[0])):
                expr = expr.replace(f"${name}", value)
            out.append((p["title"], expr))
    for v in d["templating"]["list"]:
        if v["type"] == "query":
            m = re.fullmatch(r"label_values\((.*), *(\w+)\)", v["definition"])
            assert m, v["definition"]
            expr = m.group(1)
            for name, value in alls.items():
                expr = expr.replace(f"${name}", value)
            out.append((f"variable {v['name']}", expr))
    return out


def test_dashboard_queries_run_on_the_cluster(cluster):
    """Every panel and variable query of deploy/grafana/trainmon-dcgm.json is valid PromQL on the
    cluster's Prometheus (with the rules of `trainmon rules`), names only series serve exports, the
    rules record or ALERTS, and the job / node panels show the three nodes of job 4242."""
    def ready():
        try:
            return prom_query(cluster.url, "count(DCGM_FI_DEV_GPU_UTIL)")["data"]["result"]
        except OSError:  # starting: 503, refused
            return None
    assert wait_for(ready, timeout=60), cluster.logs()
    names = set()
    for port in cluster.ports.values():
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            names |= set(re.findall(r"^([A-Za-z_:][A-Za-z0-9_:]*)[{ ]", r.read().decode(), re.M))
    rules = yaml.safe_load((cluster.tmp / "trainmon-rules.yml").read_text())
    recorded = {r["record"] for g in rules["groups"] for r in g["rules"] if "record" in r}
    known = names | recorded | RANK_PROCESS_NAMES | {"ALERTS"}
    targets = dashboard_targets()
    assert len(targets) >= 25, targets
    for title, expr in targets:
        used = set(re.findall(r"\b(DCGM_FI_[A-Z_]+|trainmon[a-z_:]*[a-z]|ALERTS)\b", expr)) - {"trainmon_m"}
        assert used and used <= known, (title, sorted(used - known))
        got = prom_query(cluster.url, expr)
        assert got["status"] == "success", (title, expr, got)

    def by_host(title):
        """The panel's first query by node, once it shows all three nodes (the rules take a few
        evaluations after the first scrapes)."""
        expr = next(e for t, e in targets if t == title)

        def got():
            v = {r["metric"].get("Hostname"): float(r["value"][1]) for r in prom_query(cluster.url, expr)["data"]["result"]}
            return v if len(v) >= 3 else None
        return wait_for(got, timeout=30) or {r["metric"].get("Hostname"): r["value"][1]
                                             for r in prom_query(cluster.url, expr)["data"]["result"]}
    # GPUs per node: the first target (every GPU of the job's nodes)
    assert by_host("GPUs per node") == {"node-a": 8, "node-b": 8, "node-c": 8}
    util = by_host("Job GPU utilisation per node")
    assert set(util) == {"node-a", "node-b", "node-c"} and all(0 <= v <= 100 for v in util.values()), util
    job = wait_for(lambda: [r["metric"] for r in prom_query(cluster.url, next(
        e for t, e in targets if t == "variable job_id"))["data"]["result"]] or None, timeout=30)
    assert {m["job_id"] for m in job} == {"4242"}, job
    # The alerts start firing one evaluation apart (their `for:` differ): wait for the one asserted,
    # not for the first (under load the thermal alert came alone).
    def firing_now():
        return {(r["metric"]["job_id"], r["metric"]["alertname"]) for r in prom_query(
            cluster.url, next(e for t, e in targets if t == "Firing trainmon alerts per job"))["data"]["result"]}
    wait_for(lambda: ("4242", "TrainmonGpuIdleInJob") in firing_now() or None, timeout=60)
    firing = firing_now()
    assert ("4242", "TrainmonGpuIdleInJob") in firing, firing


# ---- top --prometheus: the same cluster in the dashboard ------------------------------------------

def gpu_rows(screen):
    """(node, stale) of each GPU row on the screen (the GPU's name says its job and node)."""
    return re.findall(r"^ *\d+ job 4242 (node-[abc])( STALE \d+s)? ", screen, re.M)


def start_top(tmp_path, url, *args, width=200, height=80, name="tmux.sock"):
    from test_top import Tmux, top_env
    t = Tmux(tmp_path, name)
    t.start(top_env("healthy-1gpu.json", XDG_STATE_HOME=tmp_path), [trainmon_bin(), "top", "--prometheus", url, *args],
            width, height)
    return t


def test_top_prometheus_shows_every_node_and_the_alerts(cluster, tmp_path):
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    t = start_top(tmp_path, cluster.url)
    try:
        screen = t.wait(lambda s: len(gpu_rows(s)) == 24 and "D7" in s and "D12" in s, timeout=60)
        rows = gpu_rows(screen)
        assert [n for n, _ in rows] == ["node-a"] * 8 + ["node-b"] * 8 + ["node-c"] * 8, rows
        assert not any(stale for _, stale in rows), screen
        assert f"127.0.0.1:{cluster.prom_port} (3 nodes, 24 GPUs)" in screen, screen
        assert "Traceback" not in screen and "EXITED" not in screen
        t.keys("q")
        t.wait(lambda s: "EXITED rc=0" in s)
    finally:
        t.kill()


@pytest.mark.parametrize("url, message", [
    ("http://127.0.0.1:{closed}", "Couldn't connect to server"),
    ("http://127.0.0.1:{hook}", "not a Prometheus API answer"),
    ("http://127.0.0.1:{silent}", "Timeout was reached")])
def test_top_prometheus_unreachable_or_not_prometheus_says_so(cluster, tmp_path, url, message):
    """A closed port, a server that answers something else (the webhook receiver), a server that
    accepts and never answers: a message on the screen, top keeps going and quits at once, status 1."""
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # connections wait in the backlog, never accepted, never answered
    url = url.format(closed=free_port(), hook=cluster.hook.server_port, silent=silent.getsockname()[1])
    t = start_top(tmp_path, url, width=120, height=30)
    try:
        screen = t.wait(lambda s: message in s, timeout=30)
        assert "EXITED" not in screen
        t0 = time.monotonic()
        t.keys("q")
        t.wait(lambda s: "EXITED rc=1" in s, timeout=10)
        assert time.monotonic() - t0 < 5
    finally:
        t.kill()
        silent.close()


@pytest.mark.parametrize("bad", ["ftp://x", "127.0.0.1:9090", "http://", "http://h/?q=1", "http://a b", "http://[::1",
                                 "http://h:0", "http://h:99999", "http://h:x", "http://h^/"])
def test_top_prometheus_refuses_a_bad_url(bad):
    r = subprocess.run([trainmon_bin(), "top", "--prometheus", bad], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and r.stderr.startswith("trainmon top: --prometheus "), r.stderr


# ---- report --prometheus: the whole job's report from the same cluster ----------------------------

def report_model(html):
    """The model the HTML page embeds (report.js draws it)."""
    m = re.search(r'<script type="application/json" id="trainmon-data">(.*?)</script>', html, re.S)
    assert m, html[:500]
    return json.loads(m.group(1))


def firing_alerts(url):
    try:
        got = prom_query(url, 'ALERTS{alertstate="firing"}')["data"]["result"]
    except OSError:  # starting: 503, refused
        return set()
    return {(r["metric"]["code"], r["metric"].get("Hostname"), r["metric"].get("gpu")) for r in got}


def test_report_prometheus_has_every_node_gpu_and_alert(cluster, tmp_path):
    """`report --prometheus URL --job 4242` over the cluster's history: the three nodes, their 8 GPUs
    each with the values Prometheus has, the alerts that fired as findings with the rules' codes and
    advice (none on the healthy node); the page draws in Chromium."""
    want = {("D7", "node-a", "1"), ("D2", "node-b", "0"), ("D12", "node-b", "0")}
    assert wait_for(lambda: want <= firing_alerts(cluster.url), timeout=60, step=0.5), cluster.logs()
    time.sleep(2)  # the job's last samples (the range's end) come after the alerts' first evaluation
    out = tmp_path / "job.html"
    r = subprocess.run([trainmon_bin(), "report", "--prometheus", cluster.url, "--job", "4242", "-o", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == str(out), r.stderr
    html = out.read_text()
    assert "<title>trainmon report: job 4242</title>" in html
    m = report_model(html)
    job = m["job"]
    assert job["id"] == "4242" and job["gpus"] == 24 and job["prometheus"] == cluster.url
    assert [n["host"] for n in job["nodes"]] == ["node-a", "node-b", "node-c"]
    # the default range is the job's whole history: from its first sample to its last, <= 1000 points
    first = prom_query(cluster.url, 'min(min_over_time(timestamp(trainmon_labels_info{slurm_job_id="4242"})[10m:1s]))')
    assert abs(job["start_unix_s"] - float(first["data"]["result"][0]["value"][1])) <= 1.5, job
    assert time.time() - 30 < job["end_unix_s"] <= time.time() and m["ticks"] <= 1000, job
    totals = {(r["metric"]["Hostname"], int(r["metric"]["gpu"])): float(r["value"][1]) for r in prom_query(
        cluster.url, "DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE + DCGM_FI_DEV_FB_RESERVED")["data"]["result"]}
    for n in job["nodes"]:
        assert [g["index"] for g in n["gpus"]] == list(range(8)), n
        for g in n["gpus"]:
            assert g["name"] == "NVIDIA H100 80GB HBM3" and not g["lost"], g
            assert g["mem_total_mib"] == totals[(n["host"], g["index"])], (n["host"], g)
            idle = (n["host"], g["index"]) == ("node-a", 1)
            assert (g["mean_util_pct"] <= 5) if idle else (g["mean_util_pct"] >= 70), (n["host"], g)
    clocks = {g["index"]: g["mean_sm_clock_mhz"] for g in job["nodes"][1]["gpus"]}
    assert 1300 <= clocks[0] <= 1400 and clocks[1] >= 1900, clocks  # node-b's throttled GPU0
    # every node's charts, under its name; the job's x axis is shared
    groups = {c["group"] for c in m["charts"]}
    for host in ("node-a", "node-b", "node-c"):
        assert f"{host} · GPU 7 (NVIDIA H100 80GB HBM3)" in groups and f"{host} · All GPUs" in groups, groups
    charts = {c["id"]: c for c in m["charts"]}
    util = next(s for s in charts["n0-gpu1-util"]["series"] if s["label"] == "utilization.gpu")
    assert len(util["mean"]) == len(m["x"]) and max(v for v in util["mean"] if v is not None) <= 5
    # the alerts that fired, as findings: code, node, GPU, the rules' advice; none on node-c
    found = {(f["code"], f["host"], f["gpus"][0] if f["gpus"] else None): f for f in m["findings"]}
    assert {("D7", "node-a", 1), ("D2", "node-b", 0), ("D12", "node-b", 0)} <= set(found), sorted(found)
    assert not [k for k in found if k[1] == "node-c"], sorted(found)
    d2 = found[("D2", "node-b", 0)]
    assert d2["advice"].startswith("GPU0 on node-b is the straggler") and d2["severity"] == "warning", d2
    assert d2["slug"] and "TrainmonGpuStraggler GPU 0 on node-b" in d2["evidence"], d2
    assert 0 <= d2["start_s"] <= d2["end_s"] <= job["duration_s"] + 1, d2
    assert set(d2["charts"]) and all(c.startswith("n1-") for c in d2["charts"]), d2["charts"]
    # a range far wider than the job (--from -30d, --to 40 days ahead): cut to the job's span, the
    # step from that span (not 2595 s), every node and every alert still there; the future is no fault
    far = int(time.time()) + 40 * 86400
    r = subprocess.run([trainmon_bin(), "report", "--prometheus", cluster.url, "--job", "4242", "--from", "-30d",
                        "--to", str(far), "--format", "json", "-o", "-"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    wide = json.loads(r.stdout)
    assert [n["host"] for n in wide["job"]["nodes"]] == ["node-a", "node-b", "node-c"], wide["job"]
    assert abs(wide["job"]["start_unix_s"] - job["start_unix_s"]) <= 1.5 and wide["job"]["step_s"] <= 2, wide["job"]
    assert wide["job"]["duration_s"] <= job["duration_s"] + 30, wide["job"]
    wide_found = {(f["code"], f["host"], f["gpus"][0] if f["gpus"] else None) for f in wide["findings"]}
    assert {("D7", "node-a", 1), ("D2", "node-b", 0), ("D12", "node-b", 0)} <= wide_found, sorted(wide_found)
    assert any("is in the future: the range ends now" in n for n in wide["notes"]), wide["notes"]
    r = subprocess.run([trainmon_bin(), "report", "--prometheus", cluster.url, "--job", "4242", "--from", "0",
                        "--format", "json", "-o", "-"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and len(json.loads(r.stdout)["job"]["nodes"]) == 3, r.stderr  # since 1970
    # the page draws every chart and shades the findings (the same report.js as a run's report)
    from test_report import browser_check
    shot = browser_check(out, tmp_path / "job.png")
    assert shot["console_errors"] == [] and shot["errors"] == [] and shot["requests"] == []
    assert len(shot["charts"]) == len(m["charts"]) == shot["canvases"]
    shaded = {c["id"] for c in shot["charts"] if c["shaded"] > 0}
    assert set(d2["charts"]) <= shaded
    assert shot["title"] == "trainmon report: job 4242"


def test_report_prometheus_failures_say_why(cluster, tmp_path):
    """Unreachable (status 1), a job Prometheus does not have (2, naming the jobs it has), a range
    without the job's samples (2, saying when it has them), a time or URL that is not one (2)."""
    def report(*args):
        return subprocess.run([trainmon_bin(), "report", *args, "-o", str(tmp_path / "x.html")],
                              capture_output=True, text=True, timeout=60)
    r = report("--prometheus", f"http://127.0.0.1:{free_port()}", "--job", "4242", "--timeout", "5")
    assert r.returncode == 1 and "Couldn't connect to server" in r.stderr, r.stderr
    r = report("--prometheus", cluster.url, "--job", "9999")
    assert r.returncode == 2 and "has no node of job 9999" in r.stderr and "the jobs it has: 4242" in r.stderr, r.stderr
    r = report("--prometheus", cluster.url, "--job", "4242", "--from", "2020-01-01T00:00:00Z", "--to", "1577840400")
    assert r.returncode == 2 and "job 4242 has no samples between 2020-01-01T00:00:00Z and 2020-01-01T01:00:00Z" in r.stderr, r.stderr
    r = report("--prometheus", cluster.url, "--job", "4242", "--from", "yesterday")
    assert r.returncode == 2 and "--from: 'yesterday' is not a time" in r.stderr, r.stderr
    r = report("--prometheus", "http://[::1", "--job", "4242")
    assert r.returncode == 2 and "no closing ']'" in r.stderr, r.stderr
    r = report("--job", "4242")
    assert r.returncode == 2 and "need --prometheus" in r.stderr, r.stderr
    assert not (tmp_path / "x.html").exists()
    # a relative range: the last 20 s of the job, a point a second
    out = tmp_path / "last.html"
    r = subprocess.run([trainmon_bin(), "report", "--prometheus", cluster.url, "--job", "4242", "--from", "-20s",
                        "--format", "json"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout)
    assert 15 <= m["job"]["duration_s"] <= 21 and m["job"]["step_s"] == 1 and len(m["job"]["nodes"]) == 3, m["job"]
    assert not out.exists()


def test_top_prometheus_one_frame_exits_non_zero_when_unreachable(cluster, tmp_path):
    """Without a terminal (-n 1): the frame of job 4242 only (filtered in the query), status 0; an
    unreachable Prometheus or one answering an error: the reason on stderr, status 1."""
    r = subprocess.run([trainmon_bin(), "top", "--prometheus", cluster.url, "--job", "4242", "-n", "1"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert f"(3 nodes, 24 GPUs, job 4242)" in r.stdout, r.stdout
    assert r.stdout.count("(3 nodes, 24 GPUs, job 4242)") == 1, r.stdout  # the header once
    # each GPU row names its job and node, and the power limit serve exports (700 W), not "??"
    rows = re.findall(r"^job 4242 (node-[abc]) +\[(\d)\] .*, +\d+ / +(\S+) W \|", r.stdout, re.M)
    assert sorted((h, int(i)) for h, i, _ in rows) == [(h, i) for h in ("node-a", "node-b", "node-c")
                                                       for i in range(8)], r.stdout
    assert {w for _, _, w in rows} == {"700"}, r.stdout
    assert "N/A" not in r.stdout.splitlines()[0], r.stdout  # the driver version of the GPUs' series
    # a job Prometheus does not have: said, with the jobs it has, status 2 (as report)
    r = subprocess.run([trainmon_bin(), "top", "--prometheus", cluster.url, "--job", "none-such", "-n", "1"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert r.stderr.startswith("trainmon top: Prometheus ") and "has no node of job none-such" in r.stderr, r.stderr
    assert "the jobs it has: 4242" in r.stderr, r.stderr
    for url, message in ((f"http://127.0.0.1:{free_port()}", "Couldn't connect to server"),
                         (f"http://127.0.0.1:{cluster.hook.server_port}", "not a Prometheus API answer")):
        r = subprocess.run([trainmon_bin(), "top", "--prometheus", url, "-n", "1", "--timeout", "3"],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 1 and message in r.stderr, (url, r.returncode, r.stderr)
    r = subprocess.run([trainmon_bin(), "top", "--prometheus", "http://[::1", "-n", "1"], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 2 and "no closing ']'" in r.stderr, r.stderr


def test_top_prometheus_marks_a_stale_node(cluster, tmp_path):
    """Last (it stops node-c): its GPUs stay on the screen, marked STALE; the others are not."""
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    cluster.stop("node-c")
    t = start_top(tmp_path, cluster.url, "--stale-after", "3", "--job", "4242")
    try:
        screen = t.wait(lambda s: len(gpu_rows(s)) == 24 and all(bool(st) == (n == "node-c") for n, st in gpu_rows(s)),
                        timeout=60)
        assert "3 nodes, 1 stale, 24 GPUs, job 4242" in screen, screen
    finally:
        t.kill()
    # the text view (a pipe) marks node-c's rows too, and only those
    r = subprocess.run([trainmon_bin(), "top", "--prometheus", cluster.url, "--stale-after", "3", "-n", "1"],
                       capture_output=True, text=True, timeout=60)
    rows = re.findall(r"^job 4242 (node-[abc])( STALE \d+s)? +\[\d\] ", r.stdout, re.M)
    assert len(rows) == 24 and all(bool(st) == (n == "node-c") for n, st in rows), r.stdout
