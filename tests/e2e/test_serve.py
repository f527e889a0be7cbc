# SPDX-License-Identifier: Apache-2.0
"""trainmon serve end to end: /metrics through promtool and a real Prometheus, the JSON API, the
token, path traversal, the loopback rule and the dashboard in a real browser (Chromium)."""

import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.request

import pytest

from test_run_helpers import SOURCE_DIR, env, kill_quietly, trainmon_bin, wait_for

PROMETHEUS = "/usr/bin/prometheus"
PROMTOOL = "/usr/bin/promtool"
CHROMIUM = "/usr/bin/chromium"
NODE_MODULES = os.path.join(SOURCE_DIR, "web", "node_modules")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Served:
    """A running `trainmon serve` on a free loopback port."""

    def __init__(self, tmp, scenario, *extra, extra_env=None):
        self.tmp = tmp
        self.db = os.path.join(tmp, "serve.db")
        self.err_path = os.path.join(tmp, "serve.stderr")
        self.err = open(self.err_path, "w")
        e = env(scenario, **(extra_env or {}))
        self.proc = subprocess.Popen(
            [trainmon_bin(), "serve", "--listen", "127.0.0.1:0", "--db", self.db, "--interval", "0.5", *extra],
            env=e, stdout=subprocess.DEVNULL, stderr=self.err)

        def port():
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)/", open(self.err_path).read())
            return int(m.group(1)) if m else None

        self.port = wait_for(lambda: port() or self.proc.poll() is not None, timeout=60) and port()
        assert self.port, "serve did not start: " + open(self.err_path).read()
        self.base = f"http://127.0.0.1:{self.port}"

    def get(self, path, headers=None, method="GET"):
        """(status, headers, body bytes) of one request, with the path sent exactly as given."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            c.putrequest(method, path, skip_accept_encoding=True)
            for k, v in (headers or {}).items():
                c.putheader(k, v)
            c.endheaders()
            r = c.getresponse()
            return r.status, dict(r.getheaders()), r.read()
        finally:
            c.close()

    def json(self, path, **kw):
        status, _, body = self.get(path, **kw)
        assert status == 200, (path, status, body[:300])
        return json.loads(body)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                kill_quietly(self.proc)
                self.proc.wait()
        self.err.close()
        return open(self.err_path).read()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp("serve"))
    ranks = [subprocess.Popen(["sleep", "600"]) for _ in range(2)]
    s = Served(tmp, "ddp-8gpu-healthy.json", "--label", "SLURM_JOB_ID=4242",
               extra_env={"TRAINMON_DDP_PID_0": ranks[0].pid, "TRAINMON_DDP_PID_1": ranks[1].pid})
    s.rank_pids = [r.pid for r in ranks]
    # wait for a few ticks so history, processes and rates are there
    wait_for(lambda: s.json("/api/v1/snapshot").get("ticks", 0) >= 3, timeout=60)
    yield s
    out = s.stop()
    for r in ranks:
        kill_quietly(r)
        r.wait()
    assert s.proc.returncode == 0, out


def parse_metrics(text):
    """{name: [(labels dict, value)]} from the exposition text."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r'^([A-Za-z_:][A-Za-z0-9_:]*)(\{(.*)\})? (\S+)$', line)
        assert m, line
        labels = dict(re.findall(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
        out.setdefault(m.group(1), []).append((labels, float(m.group(4))))
    return out


def scenario_uuids():
    d = json.load(open(os.path.join(os.environ.get("TRAINMON_SCENARIOS_DIR", os.path.join(SOURCE_DIR, "tests", "scenarios")),
                                    "ddp-8gpu-healthy.json")))
    return [dev["uuid"] for dev in d["devices"]]


def scenario_driver_version():
    d = json.load(open(os.path.join(os.environ.get("TRAINMON_SCENARIOS_DIR", os.path.join(SOURCE_DIR, "tests", "scenarios")),
                                    "ddp-8gpu-healthy.json")))
    return d["driver_version"]


def test_metrics_dcgm_names_labels_and_values(served):
    status, headers, body = served.get("/metrics")
    assert status == 200
    assert headers["Content-Type"].startswith("text/plain; version=0.0.4")
    m = parse_metrics(body.decode())
    util = m["DCGM_FI_DEV_GPU_UTIL"]
    assert len(util) == 8
    assert sorted(lab["UUID"] for lab, _ in util) == sorted(scenario_uuids())
    for lab, v in util:
        assert set(lab) == {"gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname",
                            "DCGM_FI_DRIVER_VERSION"}
        assert lab["DCGM_FI_DRIVER_VERSION"] == scenario_driver_version()
        assert lab["modelName"] == "NVIDIA H100 80GB HBM3"
        assert lab["device"] == "nvidia" + lab["gpu"]
        assert 50 <= v <= 100, v  # the scenario plays 85-95 % with noise
    # FB in MiB: ~60 GiB used of 80 GB
    for lab, v in m["DCGM_FI_DEV_FB_USED"]:
        assert 40_000 < v < 81_560, v
    for lab, v in m["DCGM_FI_DEV_POWER_USAGE"]:
        assert 300 < v <= 700, v  # W
    # GPM's graphics engine as a ratio (the scenario: 92 +- 2 %)
    assert sorted(int(lab["gpu"]) for lab, _ in m["DCGM_FI_PROF_GR_ENGINE_ACTIVE"]) == list(range(8))
    for lab, v in m["DCGM_FI_PROF_GR_ENGINE_ACTIVE"]:
        assert 0.89 <= v <= 0.95, v
    # NVLink data tx + rx over all 18 links: 2 x 1,500,000 KiB/s = 2929.7 MiB/s ("MB/s", a gauge)
    assert len(m["DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"]) == 8
    for lab, v in m["DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"]:
        assert abs(v - 3_000_000 / 1024) < 30, v
    assert all(v == 1 for _, v in m["trainmon_gpu_up"])
    procs = m["trainmon_process_gpu_memory_bytes"]
    assert {int(lab["pid"]) for lab, _ in procs} == set(served.rank_pids)
    assert all(v > 1e9 for _, v in procs)
    labels_info = m["trainmon_labels_info"][0][0]
    assert labels_info["slurm_job_id"] == "4242"
    assert m["trainmon_exporter_ticks_total"][0][1] >= 3
    assert m["trainmon_host_memory_total_bytes"][0][1] > 1e8


def assert_promtool_clean(body):
    """promtool check metrics finds nothing but what dcgm-exporter's own names draw."""
    if not os.access(PROMTOOL, os.X_OK):
        pytest.skip("promtool is not installed (Debian package prometheus)")
    p = subprocess.run([PROMTOOL, "check", "metrics"], input=body, capture_output=True, timeout=60)
    problems = [line for line in (p.stdout + p.stderr).decode().splitlines() if line.strip()]
    # rc 0: clean; rc 3: lint problems only (1 would be a parse error). The only problems allowed are
    # the two that dcgm-exporter's own names have and that we keep for dashboard compatibility.
    assert p.returncode in (0, 3), problems
    allowed = re.compile(r'^DCGM_FI_\w+ (label names should be written in \'snake_case\' not \'camelCase\''
                         r'|counter metrics should have "_total" suffix'
                         r'|metric name should not include type \'counter\')$')
    bad = [line for line in problems if not allowed.match(line)]
    assert not bad, bad
    assert not any(line.startswith("trainmon_") for line in problems)


def test_promtool_check_metrics(served):
    _, _, body = served.get("/metrics")
    assert_promtool_clean(body)


def test_mig_gpu_has_every_dcgm_series_per_gpu_instance(tmp_path):
    """As dcgm-exporter: on a MIG-enabled GPU every DCGM_FI_* series carries GPU_I_PROFILE and
    GPU_I_ID, one per GPU instance (device-level fields repeat the GPU's value), none without."""
    scen = json.load(open(os.path.join(os.environ.get("TRAINMON_SCENARIOS_DIR",
                                                      os.path.join(SOURCE_DIR, "tests", "scenarios")),
                                       "h100-mig.json")))
    migs = scen["devices"][0]["mig_devices"]
    want = sorted(str(m["gpu_instance_id"]) for m in migs)
    s = Served(str(tmp_path), "h100-mig.json")
    try:
        wait_for(lambda: s.json("/api/v1/snapshot").get("ticks", 0) >= 2, timeout=60)
        _, _, body = s.get("/metrics")
    finally:
        out = s.stop()
    assert s.proc.returncode == 0, out
    m = parse_metrics(body.decode())
    dcgm = {name: series for name, series in m.items() if name.startswith("DCGM_FI_")}
    assert "DCGM_FI_DEV_GPU_TEMP" in dcgm and "DCGM_FI_DEV_POWER_USAGE" in dcgm
    for name, series in dcgm.items():
        assert sorted(lab.get("GPU_I_ID", "-") for lab, _ in series) == want, name
    profiles = {lab["GPU_I_ID"]: lab["GPU_I_PROFILE"] for lab, _ in dcgm["DCGM_FI_DEV_GPU_TEMP"]}
    assert profiles == {str(x["gpu_instance_id"]): x["name"].split(" MIG ")[1] for x in migs}
    assert len({v for _, v in dcgm["DCGM_FI_DEV_GPU_TEMP"]}) == 1, "the GPU's temperature on each"
    fb = {lab["GPU_I_ID"]: v for lab, v in dcgm["DCGM_FI_DEV_FB_USED"]}
    assert fb == {str(x["gpu_instance_id"]): x["metrics"]["memory_used"] // (1024 * 1024) for x in migs}
    assert [lab.get("GPU_I_ID") for lab, _ in m["trainmon_gpu_up"]] == [None], "trainmon_* stay per GPU"
    assert_promtool_clean(body)


def test_prometheus_scrapes_serve(served, tmp_path):
    if not os.access(PROMETHEUS, os.X_OK):
        pytest.skip("prometheus is not installed (Debian package prometheus)")
    port = free_port()
    cfg = tmp_path / "prometheus.yml"
    cfg.write_text(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
        "scrape_configs:\n  - job_name: trainmon\n    static_configs:\n"
        f"      - targets: ['127.0.0.1:{served.port}']\n")
    log = open(tmp_path / "prometheus.log", "w")
    prom = subprocess.Popen([PROMETHEUS, f"--config.file={cfg}", f"--storage.tsdb.path={tmp_path / 'data'}",
                             f"--web.listen-address=127.0.0.1:{port}"], stdout=log, stderr=log)
    try:
        def query():
            try:
                url = f"http://127.0.0.1:{port}/api/v1/query?query=DCGM_FI_DEV_GPU_UTIL"
                with urllib.request.urlopen(url, timeout=5) as r:
                    d = json.load(r)
                res = d["data"]["result"]
                return res if len(res) == 8 else None
            except OSError:
                return None
        res = wait_for(query, timeout=120, step=0.5)
        assert res, open(tmp_path / "prometheus.log").read()[-3000:]
        uuids = sorted(r["metric"]["UUID"] for r in res)
        assert uuids == sorted(scenario_uuids())
        for r in res:
            assert r["metric"]["job"] == "trainmon"
            assert r["metric"]["modelName"] == "NVIDIA H100 80GB HBM3"
            assert 50 <= float(r["value"][1]) <= 100
        # a base-unit metric too
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/query?query=sum(trainmon_gpu_memory_used_bytes)",
                                    timeout=5) as r:
            total = float(json.load(r)["data"]["result"][0]["value"][1])
        assert 8 * 40e9 < total < 8 * 85.6e9
    finally:
        prom.send_signal(signal.SIGTERM)
        try:
            prom.wait(timeout=30)
        except subprocess.TimeoutExpired:
            kill_quietly(prom)
            prom.wait()
        log.close()


def test_json_api(served):
    snap = served.json("/api/v1/snapshot")
    run_id = snap["run_id"]
    assert run_id > 0
    assert len(snap["status"]["gpus"]) == 8
    assert snap["status"]["gpus"][0]["uuid"] in scenario_uuids()
    hist = served.json("/api/v1/history?seconds=60")
    assert len(hist["gpus"]) == 8 and len(hist["t"]) >= 3
    assert all(len(g["util_gpu_pct"]) == len(hist["t"]) for g in hist["gpus"])
    assert isinstance(served.json("/api/v1/findings"), list)
    runs = served.json("/api/v1/runs")
    mine = [r for r in runs if r["id"] == run_id]
    assert mine and mine[0]["status"] == "running" and mine[0]["labels"]["SLURM_JOB_ID"] == "4242"
    run = served.json(f"/api/v1/runs/{run_id}")
    assert run["name"] == "serve" and len(run["gpus"]) == 8
    # samples: wait until the writer has flushed a few rows
    def samples():
        s = served.json(f"/api/v1/runs/{run_id}/samples")
        return s if len(s["t"]) >= 3 else None
    s = wait_for(samples, timeout=60, step=0.5)
    assert s, "no samples in the store"
    assert len(s["gpus"]) == 8
    assert all(v is None or 0 <= v <= 100 for v in s["gpus"][0]["util_gpu_pct"])
    assert any(v is not None and v > 50 for v in s["gpus"][0]["util_gpu_pct"])
    stepped = served.json(f"/api/v1/runs/{run_id}/samples?from=0&to=1000&step=1000")
    assert len(stepped["t"]) == 1
    assert served.get(f"/api/v1/runs/{run_id}/samples?step=abc")[0] == 400
    assert isinstance(served.json(f"/api/v1/runs/{run_id}/findings"), list)
    ev = served.json(f"/api/v1/runs/{run_id}/events")
    assert ev.keys() == {"gpu_events", "train_events"}
    assert served.get("/api/v1/runs/999999")[0] == 404
    status, headers, body = served.get(f"/runs/{run_id}/report")
    assert status == 200 and headers["Content-Type"].startswith("text/html"), (status, body[:300])
    assert b"<html" in body.lower() and b"uPlot" in body
    assert served.get("/runs/999999/report")[0] == 404


def test_static_assets_and_traversal(served):
    status, headers, body = served.get("/")
    assert status == 200 and b"trainmon" in body and headers["Content-Type"].startswith("text/html")
    assert served.get("/runs/1")[0] == 200
    status, headers, body = served.get("/assets/uplot/uPlot.iife.min.js")
    assert status == 200 and headers["Content-Type"].startswith("text/javascript") and b"uPlot" in body
    assert served.get("/assets/dashboard/app.js")[0] == 200
    for path in ["/../../../etc/passwd", "/assets/../../CMakeLists.txt", "/assets/%2e%2e/%2e%2e/etc/passwd",
                 "/assets/dashboard/%2e%2e/dashboard/app.js", "/assets/%2E%2E%2Fdashboard/app.js",
                 "/assets//etc/passwd", "/assets/..%5c..%5cetc%5cpasswd", "/assets/dashboard/app.js%00.html",
                 "/etc/passwd", "/assets/", "/CMakeLists.txt", "/runs/1/../../etc/passwd"]:
        status, _, body = served.get(path)
        assert status in (400, 404), (path, status)
        assert b"root:" not in body and b"cmake_minimum_required" not in body


def test_read_only_and_limits(served):
    assert served.get("/metrics", method="POST")[0] in (400, 405)
    assert served.get("/api/v1/runs/1", method="DELETE")[0] in (400, 405)
    # a huge header is refused, the server keeps serving
    try:
        status = served.get("/metrics", headers={"X-Big": "a" * 20000})[0]
    except (ConnectionError, http.client.HTTPException):
        status = None  # closed without an answer: refused as well
    assert status is None or status >= 400
    assert served.get("/metrics")[0] == 200


def browser_check(base, run_id, shot_dir, *token):
    """Runs tests/e2e/browser/serve_check.mjs in Chromium; returns its result (skips without a browser)."""
    script = os.path.join(SOURCE_DIR, "tests", "e2e", "browser", "serve_check.mjs")
    node = shutil.which("node")
    if not node:
        pytest.skip("node is not installed")
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip("chromium is not installed (/usr/bin/chromium)")
    if not os.path.isdir(os.path.join(NODE_MODULES, "playwright-core")):
        pytest.skip("web/node_modules/playwright-core is missing (scripts/setup.sh installs it)")
    p = subprocess.run([node, script, base, str(run_id), shot_dir, *token], capture_output=True, text=True,
                       timeout=240)
    assert p.returncode == 0, p.stdout + p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_browser_dashboard(served, tmp_path):
    shot_dir = os.environ.get("TRAINMON_SCREENSHOT_DIR", str(tmp_path))
    run_id = served.json("/api/v1/snapshot")["run_id"]
    result = browser_check(served.base, run_id, shot_dir)
    assert result["changed"], result
    assert result["gpu_cards"] == 8
    assert result["run_charts"] >= 4
    assert os.path.getsize(result["screenshot"]) > 10_000
    assert result["console_errors"] == []


def test_token_required(tmp_path):
    token = tmp_path / "token"
    token.write_text("s3cret-token\n")
    s = Served(str(tmp_path), "h200-load.json", "--token-file", str(token))
    try:
        for path in ["/metrics", "/api/v1/snapshot", "/api/v1/runs", "/", "/assets/dashboard/app.js"]:
            status, headers, _ = s.get(path)
            assert status == 401, path
            assert headers.get("WWW-Authenticate", "").startswith("Bearer")
        assert s.get("/metrics", headers={"Authorization": "Bearer wrong"})[0] == 401
        assert s.get("/metrics", headers={"Authorization": "Basic czNjcmV0LXRva2Vu"})[0] == 401
        assert s.get("/metrics", headers={"Authorization": "Bearer s3cret-token"})[0] == 200
        status, headers, _ = s.get("/?token=s3cret-token")
        assert status == 200
        assert "trainmon_token=s3cret-token" in headers.get("Set-Cookie", "")
        assert "HttpOnly" in headers["Set-Cookie"]
        assert s.get("/api/v1/snapshot", headers={"Cookie": "trainmon_token=s3cret-token"})[0] == 200
        assert s.get("/?token=nope")[0] == 401
        result = browser_check(s.base, 1, str(tmp_path), "s3cret-token")
        assert result["without_token_status"] == 401 and result["with_token_status"] == 200
        assert result["gpu_cards"] == 1
    finally:
        assert s.stop() is not None


def test_wide_listen_needs_explicit_flag(tmp_path):
    p = subprocess.run([trainmon_bin(), "serve", "--listen", "0.0.0.0:0", "--db", str(tmp_path / "x.db")],
                       env=env("h200-idle.json"), capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    assert "--allow-remote" in p.stderr
    assert not (tmp_path / "x.db").exists()
    p = subprocess.run([trainmon_bin(), "serve", "--listen", "nonsense", "--db", str(tmp_path / "x.db")],
                       env=env("h200-idle.json"), capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "HOST:PORT" in p.stderr
    # with the flag and no token: it starts, and warns
    p = subprocess.run([trainmon_bin(), "serve", "--listen", "0.0.0.0:0", "--allow-remote", "--duration", "1",
                        "--db", str(tmp_path / "y.db")],
                       env=env("h200-idle.json"), capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "without a token" in p.stderr


def test_port_in_use_by_another_serve_is_refused(served, tmp_path):
    # A second serve on a port trainmon already listens on must fail, not share it (SO_REUSEPORT
    # would split the scrapes between the two machines' data).
    p = subprocess.run([trainmon_bin(), "serve", "--listen", f"127.0.0.1:{served.port}", "--duration", "5",
                        "--db", str(tmp_path / "second.db")],
                       env=env("rtx2080-idle.json"), capture_output=True, text=True, timeout=60)
    assert p.returncode == 1, p.stderr
    assert f"cannot listen on 127.0.0.1:{served.port}" in p.stderr
    # and the first one still answers alone
    assert "NVIDIA H100" in served.get("/api/v1/snapshot")[2].decode()


def test_health_and_dcgm_exporter_listen_spellings(tmp_path):
    """/health answers 200 OK while samples come (dcgm-exporter's probe path); dcgm-exporter's -a and
    its DCGM_EXPORTER_LISTEN variable choose the address as --listen does."""
    port = free_port()
    s = Served(str(tmp_path), "healthy-1gpu.json", extra_env={"DCGM_EXPORTER_LISTEN": f"127.0.0.1:{port}"})
    try:
        # Served passes --listen 127.0.0.1:0, which wins over the variable (a flag beats the environment).
        assert s.port != port
        wait_for(lambda: s.get("/health")[0] == 200, timeout=30)
        status, headers, body = s.get("/health")
        assert (status, body) == (200, b"OK\n")
        assert headers["Content-Type"].startswith("text/plain")
    finally:
        assert "listening" in s.stop()
    e = env("healthy-1gpu.json", DCGM_EXPORTER_LISTEN=f"127.0.0.1:{port}")
    db = str(tmp_path / "env.db")
    for args in ([], ["-a", f"127.0.0.1:{port}"]):
        p = subprocess.Popen([trainmon_bin(), "serve", "--db", db, "--interval", "0.5", *args], env=e,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            def up():
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=1):
                        return True
                except OSError:
                    return p.poll() is not None
            assert wait_for(up, timeout=60) and p.poll() is None, p.stderr.read()
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            c.request("GET", "/health")
            r = c.getresponse()
            assert r.status in (200, 503)  # 503 "no sample yet" right at start
            c.close()
        finally:
            p.send_signal(signal.SIGTERM)
            out = p.communicate(timeout=60)[1]
        assert p.returncode == 0, out
        assert f"listening on http://127.0.0.1:{port}/" in out


def test_http_server_is_a_plugin_only_serve_loads(served, tmp_path):
    """cpp-httplib and its TLS / compression libraries are not linked into the binary (every command
    would pay for loading them): serve loads them with its plugin, trainmon-http.so, next to the
    binary; a missing or broken plugin is a clear error naming the path, never a crash."""
    linked = subprocess.run([trainmon_bin(), "--version"], env=dict(os.environ, LD_TRACE_LOADED_OBJECTS="1"),
                            capture_output=True, text=True, timeout=60).stdout
    assert "libc.so" in linked, linked
    for lib in ("libcpp-httplib", "libssl", "libcrypto", "libbrotli"):
        assert lib not in linked, linked
    maps = open(f"/proc/{served.proc.pid}/maps").read()
    plugin = os.path.join(os.path.dirname(trainmon_bin()), "trainmon-http.so")
    assert plugin in maps and "libcpp-httplib" in maps
    # the binary alone, without its plugin
    alone = tmp_path / "bin"
    alone.mkdir()
    shutil.copy(trainmon_bin(), alone / "trainmon")
    args = [str(alone / "trainmon"), "serve", "--listen", "127.0.0.1:0", "--db", str(tmp_path / "p.db")]
    p = subprocess.run(args, env=env("h200-idle.json"), capture_output=True, text=True, timeout=60)
    assert p.returncode == 1, p.stderr
    assert f"looked for {alone}/trainmon-http.so, {alone}/../lib/trainmon/trainmon-http.so" in p.stderr, p.stderr
    assert not (tmp_path / "p.db").exists()
    # a file that is not a loadable library
    (alone / "trainmon-http.so").write_text("not an ELF file\n")
    p = subprocess.run(args, env=env("h200-idle.json"), capture_output=True, text=True, timeout=60)
    assert p.returncode == 1, p.stderr
    assert f"cannot load the HTTP server plugin {alone}/trainmon-http.so (" in p.stderr, p.stderr
    # a real shared library that is not the plugin
    shutil.copy(os.environ["TRAINMON_FAKE_NVML_PATH"], alone / "trainmon-http.so")
    p = subprocess.run(args, env=env("h200-idle.json"), capture_output=True, text=True, timeout=60)
    assert p.returncode == 1, p.stderr
    assert "is not trainmon's HTTP server plugin (no trainmon_http_plugin())" in p.stderr, p.stderr
    # the installed layout: <prefix>/bin/trainmon and <prefix>/lib/trainmon/trainmon-http.so
    (alone / "trainmon-http.so").unlink()
    (tmp_path / "lib" / "trainmon").mkdir(parents=True)
    shutil.copy(plugin, tmp_path / "lib" / "trainmon" / "trainmon-http.so")
    p = subprocess.run(args + ["--duration", "1"], env=env("h200-idle.json"), capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0 and "listening on http://127.0.0.1:" in p.stderr, p.stderr
