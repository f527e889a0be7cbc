# SPDX-License-Identifier: Apache-2.0
"""Issue 32, real processes: who a GPU process works for, read from the host alone.

Real `sleep` processes are put into real cgroups laid out as Slurm and the kubelet lay them out
(cgroup v1 memory and pids hierarchies, and the v2 hierarchy mounted at /sys/fs/cgroup/unified), one
of them with a real Slurm / torchrun environment; a fixture tree stands for the kubelet's pod log
directories (--pod-logs-root, $TRAINMON_POD_LOGS_ROOT). The fake driver lists those pids as GPU
processes; `status --json`, `status` text and `pmon --json` must name the job, step, pod, container
and rank each one has, and nothing for a process that has none. Values with quotes and newlines come
back exactly from JSON and escaped on the terminal.

Needs root and writable cgroup hierarchies (skipped, with the reason, otherwise). Every cgroup made
here is removed and every process started here is killed, even when an assertion fails."""
import errno
import json
import os
import random
import re
import signal
import subprocess
import time
import uuid

import pytest

from test_run_helpers import SOURCE_DIR, env, trainmon_bin

V1 = "/sys/fs/cgroup"
V2 = "/sys/fs/cgroup/unified"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to create cgroups and move processes")


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


class Cgroups:
    """Directories made under cgroup mounts, removed deepest first (only those made here)."""

    def __init__(self):
        self.made = []

    def make(self, root, rel):
        """mkdir -p root/rel; returns the leaf. Raises OSError when the hierarchy is not writable."""
        path = root
        for part in rel.strip("/").split("/"):
            path = os.path.join(path, part)
            if not os.path.isdir(path):
                os.mkdir(path)
                self.made.append(path)
        return path

    def cleanup(self):
        for d in reversed(self.made):
            for _ in range(50):  # a killed process leaves its cgroup once it is reaped
                try:
                    os.rmdir(d)
                    break
                except FileNotFoundError:
                    break
                except OSError as e:
                    if e.errno not in (errno.EBUSY, errno.ENOTEMPTY):
                        break
                    # ENOTEMPTY on a shared parent (another run's cgroup below it): leave it
                    if e.errno == errno.ENOTEMPTY and any(
                            os.path.isdir(os.path.join(d, c)) for c in os.listdir(d)):
                        break
                    time.sleep(0.1)
        self.made.clear()


def _writable(root):
    probe = os.path.join(root, f"trainmon-probe-{uuid.uuid4().hex[:8]}")
    try:
        os.mkdir(probe)
        os.rmdir(probe)
        return None
    except OSError as e:
        return f"{root}: {e.strerror}"


@pytest.fixture
def world(tmp_path):
    """Starts the processes, lays out the cgroups and the kubelet's files; yields what to expect."""
    for root in (os.path.join(V1, "memory"), os.path.join(V1, "pids")):
        if not os.path.isdir(root):
            pytest.skip(f"no cgroup v1 hierarchy at {root}")
        why = _writable(root)
        if why:
            pytest.skip("cgroup hierarchy not writable: " + why)
    v2 = os.path.exists(os.path.join(V2, "cgroup.procs")) and _writable(V2) is None

    cg = Cgroups()
    procs = []
    rnd = random.Random()
    w = {"v2": v2}
    try:
        def start(extra_env=None):
            e = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C"}
            e.update(extra_env or {})
            p = subprocess.Popen(["sleep", "300"], env=e)
            procs.append(p)
            return p

        # 1. A Slurm step, cgroup v1 (memory and pids), with the job's environment. Hostile values.
        job1 = str(rnd.randrange(900000, 999999))
        w["slurm_env"] = {
            # no SLURM_STEP_ID: the step comes from the cgroup path, the rest from the environment
            "SLURM_JOB_ID": job1, "SLURM_JOB_USER": "alice",
            "SLURM_JOB_PARTITION": 'gpu "a100"\nlong', "SLURM_JOB_ACCOUNT": "lab\t'x'",
            "RANK": "3", "LOCAL_RANK": "1", "SLURM_PROCID": "7",
        }
        p1 = start(w["slurm_env"])
        for ctl in ("memory", "pids"):
            d = cg.make(os.path.join(V1, ctl), f"slurm/uid_0/job_{job1}/step_0/task_0")
            _write(os.path.join(d, "cgroup.procs"), str(p1.pid))
        w["p1"], w["job1"] = p1.pid, job1

        # 2. A pod (cgroupfs driver, v1, burstable), no environment; the kubelet's log directory names it.
        uid2 = str(uuid.uuid4())
        cid2 = "%064x" % rnd.getrandbits(256)
        p2 = start()
        d = cg.make(os.path.join(V1, "memory"), f"kubepods/burstable/pod{uid2}/{cid2}")
        _write(os.path.join(d, "cgroup.procs"), str(p2.pid))
        pods = tmp_path / "log" / "pods"
        (pods / f"team-a_trainer-0_{uid2}" / "pytorch").mkdir(parents=True)
        (pods / f"team-a_trainer-0_{uid2}" / "pytorch" / "0.log").write_text("")
        w.update(p2=p2.pid, uid2=uid2, cid2=cid2, pods=str(pods))

        # 3. A process on no GPU-side attribution at all (the root cgroups, a plain environment).
        p3 = start()
        w["p3"] = p3.pid

        if v2:
            # 4. A Slurm batch step, cgroup v2 layout, no environment: the path alone gives the job.
            job4 = str(rnd.randrange(800000, 899999))
            p4 = start()
            d = cg.make(V2, f"system.slice/slurmstepd.scope/job_{job4}/step_batch/user/task_0")
            _write(os.path.join(d, "cgroup.procs"), str(p4.pid))
            # 5. A two-container pod, systemd driver on v2, containerd: the container's name comes from
            # the /var/log/containers symlink that carries its id.
            uid5 = str(uuid.uuid4())
            cid5 = "%064x" % rnd.getrandbits(256)
            p5 = start()
            u = uid5.replace("-", "_")
            d = cg.make(V2, f"kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{u}.slice/"
                            f"cri-containerd-{cid5}.scope")
            _write(os.path.join(d, "cgroup.procs"), str(p5.pid))
            for c in ("main", "sidecar"):
                (pods / f"ml_two-ctr_{uid5}" / c).mkdir(parents=True)
                (pods / f"ml_two-ctr_{uid5}" / c / "0.log").write_text("")
            (tmp_path / "log" / "containers").mkdir()
            os.symlink(pods / f"ml_two-ctr_{uid5}" / "sidecar" / "0.log",
                       tmp_path / "log" / "containers" / f"two-ctr_ml_sidecar-{cid5}.log")
            w.update(p4=p4.pid, job4=job4, p5=p5.pid, uid5=uid5, cid5=cid5)

        # The fake driver lists every one of them on GPU 0.
        scen = json.load(open(os.path.join(SOURCE_DIR, "tests", "scenarios", "healthy-1gpu.json")))
        names = [k for k in ("p1", "p2", "p3", "p4", "p5") if k in w]
        scen["processes"] = [{"pid": f"env:ATTR_{k.upper()}", "gpu": 0, "type": "C", "name": "sleep",
                              "used_memory": (i + 1) << 30, "sm_util": 10, "mem_util": 5}
                             for i, k in enumerate(names)]
        scen.pop("errors", None)
        path = tmp_path / "attribution.json"
        path.write_text(json.dumps(scen))
        w["env"] = env(str(path), **{f"ATTR_{k.upper()}": w[k] for k in names})
        yield w
    finally:
        for p in procs:
            try:
                p.kill()
            except ProcessLookupError:
                pass
            p.wait()
        cg.cleanup()


def _tm(w, *args, extra_env=None):
    e = dict(w["env"], **(extra_env or {}))
    p = subprocess.run([trainmon_bin(), *args], env=e, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout


def _by_pid(doc):
    return {p["pid"]: p for g in doc["gpus"] for p in g["processes"]}


def _expected(w):
    out = {
        w["p1"]: {
            "job": f"slurm:{w['job1']}", "slurm_job_id": w["job1"], "slurm_step": "0",
            "slurm_user": "alice", "slurm_partition": 'gpu "a100"\nlong', "slurm_account": "lab\t'x'",
            "rank": 3, "local_rank": 1, "sources": ["environ", "cgroup"]},
        w["p2"]: {
            "job": "pod:team-a/trainer-0", "pod_uid": w["uid2"], "pod_namespace": "team-a",
            "pod_name": "trainer-0", "container_name": "pytorch", "container_id": w["cid2"],
            "sources": ["cgroup", "kubelet"]},
    }
    if w["v2"]:
        out[w["p4"]] = {"job": f"slurm:{w['job4']}", "slurm_job_id": w["job4"], "slurm_step": "batch",
                        "sources": ["cgroup"]}
        out[w["p5"]] = {
            "job": "pod:ml/two-ctr", "pod_uid": w["uid5"], "pod_namespace": "ml", "pod_name": "two-ctr",
            "container_name": "sidecar", "container_runtime": "containerd", "container_id": w["cid5"],
            "sources": ["cgroup", "kubelet"]}
    return out


def test_status_json_text_and_pmon_name_each_process_job(world):
    w = world
    expected = _expected(w)

    # status --json, the kubelet's directory given by the option
    doc = json.loads(_tm(w, "--pod-logs-root", w["pods"], "status", "--json"))
    procs = _by_pid(doc)
    for pid, want in expected.items():
        assert procs[pid].get("attribution") == want, (pid, procs[pid])
    assert "attribution" not in procs[w["p3"]], procs[w["p3"]]  # nothing known: no key

    # status text: the job after the user (gpustat's layout otherwise); quotes/newlines never printed raw
    text = _tm(w, "--pod-logs-root", w["pods"], "status", "--no-color", "-p")
    assert f"/{w['p1']}[slurm:{w['job1']}](" in text, text
    assert f"/{w['p2']}[pod:team-a/trainer-0](" in text, text
    assert re.search(rf"/{w['p3']}\(", text), text
    if w["v2"]:
        assert f"/{w['p4']}[slurm:{w['job4']}](" in text, text
        assert f"/{w['p5']}[pod:ml/two-ctr](" in text, text
    # -f: one line per process, with the job and step
    full = _tm(w, "--pod-logs-root", w["pods"], "status", "--no-color", "-f")
    assert re.search(rf"{w['p1']} \(.*\): \[slurm:{w['job1']}\.0\] sleep 300", full), full

    # pmon --json, the kubelet's directory given by the environment variable
    out = _tm(w, "pmon", "--json", "-c", "1", extra_env={"TRAINMON_POD_LOGS_ROOT": w["pods"]})
    rows = {r["pid"]: r for r in map(json.loads, out.splitlines())}
    for pid, want in expected.items():
        assert rows[pid].get("attribution") == want, (pid, rows[pid])
    assert "attribution" not in rows[w["p3"]]


def test_without_the_kubelet_directory_pods_keep_their_uid(world):
    w = world
    doc = json.loads(_tm(w, "--pod-logs-root", "/nonexistent/trainmon-pods", "status", "--json"))
    a = _by_pid(doc)[w["p2"]]["attribution"]
    assert a["job"] == f"pod:{w['uid2']}" and a["pod_uid"] == w["uid2"], a
    assert "pod_name" not in a and a["sources"] == ["cgroup"], a
    text = _tm(w, "--pod-logs-root", "/nonexistent/trainmon-pods", "status", "--no-color", "-p")
    assert f"/{w['p2']}[pod:{w['uid2']}](" in text, text
