# SPDX-License-Identifier: Apache-2.0
"""The live dashboard's GPU health in a real browser (Chromium): on four fake GPUs made from the
fault scenarios (GPU 0: d10-ecc-errors' failing HBM with its Xid 48 events; GPU 1: d6-power-bound
with HW Slowdown added to its SW Power Cap; GPU 2: healthy until it falls off the bus at 3 s, as in
top-gpu-lost; GPU 3: healthy) each card shows the health words the API's values call for, coloured
by severity, and the open findings that name its GPU linked to their entry; the runs table's
findings column is the store's count; the small charts have a legend with units, labelled axes and
a readable height at 1280 and 400 px wide."""

import copy
import json
import os
import shutil
import sqlite3
import subprocess

import pytest

from test_run_helpers import SOURCE_DIR, kill_quietly, wait_for  # noqa: E402
from test_serve import CHROMIUM, NODE_MODULES, Served  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SCENARIOS = os.environ.get("TRAINMON_SCENARIOS_DIR", os.path.join(SOURCE_DIR, "tests", "scenarios"))
HW_SLOWDOWN, SW_POWER_CAP = 0x8, 0x4  # nvmlClocksEventReason bits


def load(name):
    with open(os.path.join(SCENARIOS, name)) as f:
        return json.load(f)


def four_gpus():
    """One scenario from the fault scenarios' own devices, events and processes (not written twice)."""
    ecc, power, healthy = load("d10-ecc-errors.json"), load("d6-power-bound.json"), load("healthy-1gpu.json")
    s = copy.deepcopy(ecc)
    s["name"], s["description"] = "dashboard-health", __doc__
    throttled = copy.deepcopy(power["devices"][0])
    throttled["metrics"]["clocks_event_reasons"] = SW_POWER_CAP | HW_SLOWDOWN
    s["devices"] = [ecc["devices"][0], throttled, copy.deepcopy(healthy["devices"][0]),
                    copy.deepcopy(healthy["devices"][0])]
    for i, d in enumerate(s["devices"]):
        d["uuid"] = d["uuid"][:-1] + str(i)
        d["serial"] = d.get("serial", "1650123000000")[:-1] + str(i)
        d["pci"] = dict(d["pci"], bus_id=f"00000000:{0x18 + i:02X}:00.0", bus=0x18 + i)
    s["processes"] = [dict(p, gpu=g) for g, p in ((0, ecc["processes"][0]), (1, power["processes"][0]))]
    s["errors"] = [{"function": "*", "gpu": 2, "from_s": 3, "return": "NVML_ERROR_GPU_IS_LOST"}]
    return s


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("health")
    (tmp / "scenarios").mkdir()
    (tmp / "scenarios" / "dashboard-health.json").write_text(json.dumps(four_gpus()))
    job = subprocess.Popen(["sleep", "600"])
    s = Served(str(tmp), os.path.join(str(tmp / "scenarios"), "dashboard-health.json"),
               extra_env={"TRAINMON_TEST_PID": job.pid})

    def settled():  # the Xids and the lost GPU seen, the live diagnosis' D10 open on GPU 0
        snap = s.json("/api/v1/snapshot")
        gpus = (snap.get("status") or {}).get("gpus") or []
        return (len(gpus) == 4 and gpus[2]["responsive"] == "gpu_lost" and
                any(f["code"] == "D10" and f["gpus"] == [0] for f in snap["findings"]) and
                (snap["gpu_health"][0]["xid"] or {}).get("events") == 2)

    wait_for(settled, timeout=90)
    yield s
    out = s.stop()
    kill_quietly(job)
    job.wait()
    assert s.proc.returncode == 0, out


def browser(served, shot_dir):
    node = shutil.which("node")
    if not node:
        pytest.skip("node is not installed")
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip("chromium is not installed (/usr/bin/chromium)")
    if not os.path.isdir(os.path.join(NODE_MODULES, "playwright-core")):
        pytest.skip("web/node_modules/playwright-core is missing (scripts/setup.sh installs it)")
    p = subprocess.run([node, os.path.join(HERE, "browser", "dashboard_health_check.mjs"), served.base, shot_dir],
                       capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-2000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def seen(served, tmp_path_factory):
    shot_dir = os.environ.get("TRAINMON_SCREENSHOT_DIR", str(tmp_path_factory.mktemp("shots")))
    r = browser(served, shot_dir)
    for w in r["widths"].values():
        print(f"dashboard screenshot: {w['screenshot']}")
    return r


def test_snapshot_carries_the_health_the_status_document_lacks(served):
    h = served.json("/api/v1/snapshot")["gpu_health"]
    assert [x["index"] for x in h] == [0, 1, 2, 3]
    # d10: aggregate uncorrected 0 -> 1 -> 3, corrected 95 at the end; two Xid 48 events
    assert h[0]["ecc.errors.uncorrected.aggregate.total"] == 3
    assert h[0]["ecc.errors.corrected.aggregate.total"] == 95
    x = h[0]["xid"]
    assert (x["code"], x["events"], x["severity"]) == (48, 2, "critical"), x
    assert x["meaning"] == "Double-bit ECC error (uncorrectable memory error)"
    assert x["time_unix_ns"] > 1.7e18
    assert h[1]["xid"] is None and h[1]["ecc.errors.uncorrected.aggregate.total"] == 0
    assert h[2]["ecc.errors.uncorrected.aggregate.total"] is None  # lost: not read, never 0


@pytest.mark.parametrize("width", ["1280", "400"])
def test_each_card_shows_its_health_and_its_open_findings(served, seen, width):
    cards = {c["gpu"]: c for c in seen["widths"][width]["cards"]}
    assert sorted(cards) == [0, 1, 2, 3]
    words = {g: {h["what"]: (h["severity"], h["text"]) for h in c["health"]} for g, c in cards.items()}
    assert words[0]["ecc"] == ("critical", "ECC uncorrected: 3 volatile, 3 aggregate"), words[0]
    assert words[0]["xid"] == ("critical", "Xid 48: Double-bit ECC error (uncorrectable memory error)")
    assert "throttle" not in words[0] and "lost" not in words[0]
    assert words[1]["throttle"] == ("critical", "throttled: SW Power Cap, HW Slowdown"), words[1]
    assert words[1]["ecc"] == ("ok", "ECC: no uncorrected errors")
    assert words[2] == {"lost": ("critical", "GPU lost")}, words[2]
    assert words[3] == {"ok": ("ok", "healthy"), "ecc": ("ok", "ECC: no uncorrected errors")}, words[3]
    assert [cards[g]["severity"] for g in range(4)] == ["critical", "critical", "critical", "ok"]
    # coloured: the critical words red (--crit #f85149), the healthy ones green (--ok #3fb950)
    assert {h["color"] for h in cards[0]["health"]} == {"rgb(248, 81, 73)"}
    assert {h["color"] for h in cards[3]["health"]} == {"rgb(63, 185, 80)"}
    # the open findings of the live diagnosis that name each GPU, linked to their entry in the list
    open_now = served.json("/api/v1/findings")
    for g, c in cards.items():
        want = sorted(f["code"] for f in open_now if g in f["gpus"])
        assert sorted(f["code"] for f in c["findings"]) == want, (g, c["findings"], open_now)
        assert all(f["target_found"] for f in c["findings"]), c["findings"]
    assert "D10" in [f["code"] for f in cards[0]["findings"]]
    titles = {f["code"]: f["title"] for f in open_now if 0 in f["gpus"]}
    assert [f["text"] for f in cards[0]["findings"]] == [f["code"] + " " + titles[f["code"]] for f in cards[0]["findings"]]


@pytest.mark.parametrize("width", ["1280", "400"])
def test_runs_table_counts_the_stores_findings(served, seen, width):
    w = seen["widths"][width]
    assert w["runs_header"][-1] == "Findings"
    con = sqlite3.connect(f"file:{served.db}?mode=ro", uri=True)
    try:
        stored = dict(con.execute("SELECT run_id, count(*) FROM findings GROUP BY run_id").fetchall())
    finally:
        con.close()
    assert w["runs"], w
    run_id = served.json("/api/v1/snapshot")["run_id"]
    for r in w["runs"]:
        assert int(r["findings"]) == stored.get(r["id"], 0), (r, stored)
        assert r["findings_visible"], r  # on the screen, not scrolled off at 400 px
    # serve's own run stores its findings so far while it records: D10 and D13 (Xid) at least
    assert int(next(r for r in w["runs"] if r["id"] == run_id)["findings"]) >= 2


@pytest.mark.parametrize("width", ["1280", "400"])
def test_small_charts_have_a_legend_axes_and_a_readable_height(seen, width):
    w = seen["widths"][width]
    for c in w["cards"]:
        ch = c["chart"]
        assert ch, c
        assert ch["legend"] == ["utilisation (%)", "GPU memory (%)"], ch
        assert ch["axis_labels"] == ["time", "%"], ch
        assert ch["canvas"]["height"] >= 140, ch
        assert ch["canvas"]["width"] >= 200 and ch["canvas"]["width"] <= ch["card"]["width"], ch
    if width == "400":  # one column, nothing wider than the phone's screen
        assert w["page_width"] <= 400, w["page_width"]
        assert all(c["chart"]["card"]["width"] >= 340 for c in w["cards"]), [c["chart"] for c in w["cards"]]


def test_run_page_charts_have_legends_with_units_and_axis_titles(served, seen):
    gpus = [f"GPU {i}" for i in range(4)]
    charts = {c["id"]: c for c in seen["run_charts"]}
    want = {"chart-util": (["time"] + [g + " (%)" for g in gpus], ["time", "utilisation (%)"]),
            "chart-mem": (["time"] + [g + " (MiB)" for g in gpus], ["time", "GPU memory (MiB)"]),
            "chart-power": (["time"] + [g + " (W)" for g in gpus], ["time", "power (W)"]),
            "chart-cpu": (["time", "CPU busy (%)"], ["time", "CPU busy (%)"])}
    assert sorted(charts) == sorted(want), charts
    for cid, (legend, axes) in want.items():
        assert (charts[cid]["legend"], charts[cid]["axis_labels"]) == (legend, axes), charts[cid]
        assert charts[cid]["height"] >= 240, charts[cid]
