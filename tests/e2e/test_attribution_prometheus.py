# SPDX-License-Identifier: Apache-2.0
"""Issue 32, the Prometheus side: two real `trainmon serve` nodes on the fake driver, real processes
carrying Slurm environments (and one in a real kubelet-style cgroup, named by a fixture pod log
tree), a real Prometheus scraping both; every PromQL join of docs/cluster.md "Who uses the GPUs" is
read from the document and asked through Prometheus' HTTP API, and must give the numbers the fake
driver was told (memory per job = the sum of its processes' memory on both nodes).

Slow (two serve processes and Prometheus): skipped under the sanitizer pass. Every process started
here is killed and every cgroup made here removed, even when an assertion fails."""
import json
import os
import random
import re
import subprocess
import time
import uuid

import pytest

from test_prom_rules import PROMETHEUS, free_port, need, prom_query
from test_run_helpers import SOURCE_DIR, env, kill_quietly, trainmon_bin, wait_for

GIB = 1 << 30
CGROUP_V1_MEMORY = "/sys/fs/cgroup/memory"
DOC = os.path.join(SOURCE_DIR, "docs", "cluster.md")

pytestmark = pytest.mark.skipif(os.environ.get("TRAINMON_SANITIZED") == "1",
                                reason="real-process Prometheus test: release pass only")


def doc_queries():
    """{title: PromQL} of the ```promql blocks of docs/cluster.md's "Who uses the GPUs" section, each
    block a comment line `# title` followed by the expression."""
    text = open(DOC).read()
    section = text[text.index("## 10. Who uses the GPUs"):]
    section = section[:section.find("\n## ", 5)] if "\n## " in section[5:] else section
    out = {}
    for block in re.findall(r"```promql\n(.*?)```", section, re.S):
        title, _, expr = block.partition("\n")
        assert title.startswith("# "), block
        out[title[2:].strip()] = expr.strip()
    return out


def scenario(gpus):
    """A 2-GPU fake machine: gpus[i] = (GPU utilisation %, [(pid env name, GiB, SM %)])."""
    base = json.load(open(os.path.join(SOURCE_DIR, "tests", "scenarios", "ddp-8gpu-healthy.json")))
    base["devices"] = base["devices"][:len(gpus)]
    procs = []
    for i, (util, plist) in enumerate(gpus):
        m = base["devices"][i]["metrics"]
        m["utilization_gpu"] = util
        m["memory_used"] = sum(g for _, g, _ in plist) * GIB + GIB // 4
        for name, gib, sm in plist:
            procs.append({"pid": f"env:{name}", "gpu": i, "type": "C", "name": "python", "start_s": 0,
                          "used_memory": gib * GIB, "sm_util": sm, "mem_util": 5})
    base["processes"] = procs
    base.pop("errors", None)
    return base


class World:
    def __init__(self, tmp):
        self.tmp = tmp
        self.procs = []       # started here, killed at the end
        self.cgroups = []     # made here, removed deepest first
        self.nodes = {}       # Hostname -> port

    def start_process(self, extra_env, user=None):
        e = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C", **extra_env}
        p = subprocess.Popen(["sleep", "600"], env=e, user=user)
        self.procs.append(p)
        return p.pid

    def pod_cgroup(self, pid, pod_uid, cid):
        path = CGROUP_V1_MEMORY
        for part in ("kubepods", "burstable", f"pod{pod_uid}", cid):
            path = os.path.join(path, part)
            try:
                os.mkdir(path)
                self.cgroups.append(path)
            except FileExistsError:  # another test's (tests/e2e/test_attribution.py): not ours to remove
                pass
        with open(os.path.join(path, "cgroup.procs"), "w") as f:
            f.write(str(pid))

    def serve(self, host, scen, pids, pod_logs):
        path = self.tmp / f"{host}.json"
        path.write_text(json.dumps(scen))
        err_path = self.tmp / f"{host}.stderr"
        err = open(err_path, "w")
        p = subprocess.Popen([trainmon_bin(), "--pod-logs-root", str(pod_logs), "serve", "--listen", "127.0.0.1:0",
                              "--hostname", host, "--db", str(self.tmp / f"{host}.db"), "--interval", "0.5", "-q"],
                             env=env(str(path), **pids), stdout=subprocess.DEVNULL, stderr=err)
        self.procs.append(p)

        def port():
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)/", err_path.read_text())
            return int(m.group(1)) if m else (p.poll() is not None and -1)
        self.nodes[host] = wait_for(port, timeout=60)
        assert self.nodes[host] and self.nodes[host] > 0, err_path.read_text()

    def close(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                kill_quietly(p, 15)
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    kill_quietly(p)
                    p.wait()
        for d in reversed(self.cgroups):
            for _ in range(50):
                try:
                    os.rmdir(d)
                    break
                except FileNotFoundError:
                    break
                except OSError:  # busy until the killed process is reaped
                    time.sleep(0.1)


def cgroup_writable():
    if os.geteuid() != 0 or not os.path.isdir(CGROUP_V1_MEMORY):
        return False
    probe = os.path.join(CGROUP_V1_MEMORY, f"trainmon-probe-{uuid.uuid4().hex[:8]}")
    try:
        os.mkdir(probe)
        os.rmdir(probe)
        return True
    except OSError:
        return False


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    need(PROMETHEUS, "prometheus")
    if not cgroup_writable():
        pytest.skip(f"needs root and a writable cgroup v1 hierarchy at {CGROUP_V1_MEMORY} (the pod's process)")
    tmp = tmp_path_factory.mktemp("attrprom")
    w = World(tmp)
    rnd = random.Random()
    try:
        job1, job2 = str(rnd.randrange(100000, 499999)), str(rnd.randrange(500000, 999999))
        slurm = {"SLURM_JOB_ID": job1, "SLURM_STEP_ID": "0", "SLURM_JOB_USER": "alice", "SLURM_JOB_PARTITION": "gpu"}
        # node-a: GPU 0 busy with job1's rank 0 (10 GiB, SM 80 %); GPU 1 held idle by job2 (3 GiB).
        a1 = w.start_process({**slurm, "RANK": "0"})
        a2 = w.start_process({"SLURM_JOB_ID": job2, "SLURM_STEP_ID": "batch"})
        # node-b: GPU 0 shared by job1's rank 1 (6 GiB, SM 60 %) and a plain process of user nobody
        # (1 GiB, SM 5 %); GPU 1 held idle by a pod of namespace team-a (5 GiB).
        b1 = w.start_process({**slurm, "RANK": "1"})
        b2 = w.start_process({}, user=65534)
        b3 = w.start_process({})
        pod_uid, cid = str(uuid.uuid4()), "%064x" % rnd.getrandbits(256)
        w.pod_cgroup(b3, pod_uid, cid)
        pod_logs = tmp / "log" / "pods"
        (pod_logs / f"team-a_trainer-0_{pod_uid}" / "pytorch").mkdir(parents=True)
        (pod_logs / f"team-a_trainer-0_{pod_uid}" / "pytorch" / "0.log").write_text("")

        w.serve("node-a", scenario([(85, [("P_A1", 10, 80)]), (0, [("P_A2", 3, 0)])]),
                {"P_A1": a1, "P_A2": a2}, pod_logs)
        w.serve("node-b", scenario([(70, [("P_B1", 6, 60), ("P_B2", 1, 5)]), (0, [("P_B3", 5, 0)])]),
                {"P_B1": b1, "P_B2": b2, "P_B3": b3}, pod_logs)
        w.expect = {"job1": job1, "job2": job2, "pids": {"a1": a1, "a2": a2, "b1": b1, "b2": b2, "b3": b3}}

        # Both nodes name their processes' jobs and the pod before Prometheus starts.
        for host, port in w.nodes.items():
            def ready(port=port, host=host):
                import urllib.request
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                    m = r.read().decode()
                return f'job_id="{job1}"' in m and (host == "node-a" or 'namespace="team-a"' in m)
            assert wait_for(ready, timeout=60), (tmp / f"{host}.stderr").read_text()

        prom_port = free_port()
        targets = ", ".join(f"'127.0.0.1:{p}'" for p in w.nodes.values())
        (tmp / "prometheus.yml").write_text(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
            f"scrape_configs:\n  - job_name: trainmon\n    static_configs:\n      - targets: [{targets}]\n")
        log = open(tmp / "prometheus.log", "w")
        w.procs.append(subprocess.Popen(
            [PROMETHEUS, f"--config.file={tmp / 'prometheus.yml'}", f"--storage.tsdb.path={tmp / 'prom-data'}",
             f"--web.listen-address=127.0.0.1:{prom_port}"], stdout=log, stderr=log))
        w.url = f"http://127.0.0.1:{prom_port}"

        def scraped():
            try:
                r = prom_query(w.url, "count(trainmon_gpu_process_info) == 5 and on() "
                                      "count(trainmon_gpu_process_sm_utilization_ratio) == 5")
            except OSError:
                return False
            return r["data"]["result"]
        assert wait_for(scraped, timeout=90, step=0.5), (tmp / "prometheus.log").read_text()[-3000:]
        # a few scrapes of every process, so that the reports' ranges hold both nodes
        assert wait_for(lambda: prom_query(w.url, "min(count_over_time(trainmon_gpu_process_info[1m])) >= 4")
                        ["data"]["result"], timeout=30, step=0.5)
        yield w
    finally:
        w.close()


def vector(w, expr):
    """{tuple of label values sorted by label name, without __name__: value} of an instant query."""
    r = prom_query(w.url, expr)
    assert r["status"] == "success", r
    return {tuple(sorted(s["metric"].items())): float(s["value"][1]) for s in r["data"]["result"]}


def test_documented_joins_give_the_drivers_numbers(world):
    q = doc_queries()
    assert set(q) >= {"GPU memory per Slurm job", "Idle GPUs held per namespace",
                      "GPU memory held idle per namespace", "SM utilisation per user"}, sorted(q)
    j1, j2 = world.expect["job1"], world.expect["job2"]

    got = vector(world, q["GPU memory per Slurm job"])
    assert got == {((("job_id", j1),)): 16 * GIB, ((("job_id", j2),)): 3 * GIB}, got

    got = vector(world, q["Idle GPUs held per namespace"])
    assert got == {((("namespace", "team-a"),)): 1}, got
    got = vector(world, q["GPU memory held idle per namespace"])
    assert got == {((("namespace", "team-a"),)): 5 * GIB}, got

    # user: passwd names of the real processes (the test runs as root; b2 as nobody); ratio 0..1.
    got = vector(world, q["SM utilisation per user"])
    assert got.keys() == {((("user", "root"),)), ((("user", "nobody"),))}, got
    assert got[(("user", "root"),)] == pytest.approx(0.8 + 0.6 + 0 + 0, abs=1e-9), got
    assert got[(("user", "nobody"),)] == pytest.approx(0.05, abs=1e-9), got

    got = vector(world, q["Idle GPUs held per Slurm job"])
    assert got == {((("job_id", j2),)): 1}, got


def test_info_labels_and_no_job_on_dcgm_series(world):
    pids = world.expect["pids"]
    info = {int(dict(k)["pid"]): dict(k) for k in vector(world, "trainmon_gpu_process_info")}
    assert set(info) == set(pids.values())
    a1 = info[pids["a1"]]
    assert (a1["Hostname"], a1["gpu"], a1["job_id"], a1["step"], a1["rank"], a1["partition"]) == \
        ("node-a", "0", world.expect["job1"], "0", "0", "gpu"), a1
    assert a1["UUID"].startswith("GPU-") and a1["user"] == "root"
    b3 = info[pids["b3"]]
    assert (b3["namespace"], b3["pod"], b3["container"]) == ("team-a", "trainer-0", "pytorch"), b3
    assert "job_id" not in b3, "an empty label is absent in Prometheus"
    assert info[pids["b2"]]["user"] == "nobody" and "job_id" not in info[pids["b2"]]
    # The GPU series stay as dcgm-exporter has them: no job, pod or user label.
    for k in vector(world, "DCGM_FI_DEV_FB_USED"):
        assert not {"job_id", "pod", "namespace", "user", "pid"} & set(dict(k)), k


def test_report_and_top_take_the_attributed_job(world):
    """`report --prometheus --job` and `top --prometheus` on nodes whose serve runs in no job: the job
    is the GPUs its processes hold (a Slurm job id, or a pod as namespace/pod)."""
    j1 = world.expect["job1"]

    def report(job):
        r = subprocess.run([trainmon_bin(), "report", "--prometheus", world.url, "--job", job, "--format", "json",
                            "-o", "-"], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)["job"]

    job = report(j1)
    assert [(n["host"], [g["index"] for g in n["gpus"]]) for n in job["nodes"]] == [("node-a", [0]), ("node-b", [0])]
    job = report("team-a/trainer-0")
    assert [(n["host"], [g["index"] for g in n["gpus"]]) for n in job["nodes"]] == [("node-b", [1])]

    r = subprocess.run([trainmon_bin(), "top", "--prometheus", world.url, "-n", "1"], capture_output=True, text=True,
                       timeout=60, env={**os.environ, "TRAINMON_LANG": "en"})
    assert r.returncode == 0, r.stderr
    for group in (f"job {j1} node-a", f"job {j1} node-b", f"job {world.expect['job2']} node-a",
                  "job team-a/trainer-0 node-b"):
        assert group in r.stdout, r.stdout
