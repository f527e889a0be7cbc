# SPDX-License-Identifier: Apache-2.0
"""deploy/: the systemd units pass `systemd-analyze verify`, the Kubernetes manifest passes `yamllint`
(Debian's packages; a test whose tool is absent is skipped and says which package brings it) and has
the shape docs/cluster.md section 10 promises (host PID namespace, read-only mounts of what serve
reads, the NVIDIA runtime, a read-only root filesystem, a metrics port), and every trainmon option it
passes is one this trainmon accepts."""
import os
import re
import shutil
import subprocess

import pytest
import yaml

from test_run_helpers import SOURCE_DIR, trainmon_bin

DEPLOY = os.path.join(SOURCE_DIR, "deploy")
UNITS = [os.path.join(DEPLOY, "systemd", u) for u in ("trainmon-serve.service", "trainmon-record.service")]
DAEMONSET = os.path.join(DEPLOY, "kubernetes", "trainmon-daemonset.yaml")


def tool(name, package):
    path = shutil.which(name)
    if not path:
        pytest.skip(f"{name} is not installed (Debian package {package}; scripts/setup.sh installs it)")
    return path


@pytest.mark.parametrize("unit", UNITS, ids=os.path.basename)
def test_unit_passes_systemd_analyze_verify(unit, tmp_path):
    exe = tool("systemd-analyze", "systemd")
    # verify checks that ExecStart's binary exists: the built one stands for /usr/local/bin/trainmon.
    text = open(unit).read()
    assert "ExecStart=/usr/local/bin/trainmon " in text
    copy = tmp_path / os.path.basename(unit)
    copy.write_text(text.replace("/usr/local/bin/trainmon", os.path.abspath(trainmon_bin())))
    r = subprocess.run([exe, "verify", str(copy)], capture_output=True, text=True, timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert not re.search(r"Unknown (key|section)|bad unit file|Invalid|Failed to parse", out), out
    # the options the unit passes are the binary's
    cmd = re.search(r"^ExecStart=(.*)$", text, re.M).group(1).split()
    check_options(cmd[1:])


def check_options(args):
    """Every --option in `args` (global ones, the command, its options) is in trainmon's --help."""
    command = next(a for a in args if a in ("serve", "record"))
    helps = {}
    for where in ("", command):
        r = subprocess.run([trainmon_bin(), *([where] if where else []), "--help"], capture_output=True, text=True,
                           timeout=30, env={**os.environ, "TRAINMON_LANG": "en"})
        assert r.returncode == 0, r.stderr
        helps[where] = r.stdout
    for i, a in enumerate(args):
        if not a.startswith("--"):
            continue
        name = a.split("=", 1)[0]
        where = "" if i < args.index(command) else command
        assert re.search(rf"(^|[\s,]){re.escape(name)}\b", helps[where], re.M), f"{name} not in trainmon {where} --help"


def test_daemonset_passes_yamllint():
    exe = tool("yamllint", "yamllint")
    conf = "{extends: default, rules: {line-length: {max: 120}, document-start: disable}}"
    r = subprocess.run([exe, "-s", "-d", conf, DAEMONSET], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def test_daemonset_shape_and_options():
    docs = [d for d in yaml.safe_load_all(open(DAEMONSET)) if d]
    kinds = {d["kind"]: d for d in docs}
    assert set(kinds) == {"Namespace", "DaemonSet", "Service"}
    pod = kinds["DaemonSet"]["spec"]["template"]["spec"]
    assert pod["hostPID"] is True
    assert pod["runtimeClassName"] == "nvidia"
    assert pod["automountServiceAccountToken"] is False  # no API server access
    (c,) = pod["containers"]
    env = {e["name"]: e.get("value") for e in c["env"]}
    assert env["NVIDIA_VISIBLE_DEVICES"] == "all" and env["NVIDIA_DRIVER_CAPABILITIES"] == "utility"
    assert "nvidia.com/gpu" not in str(c.get("resources")), "a GPU request would take a GPU from the jobs"
    sc = c["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"]["drop"] == ["ALL"] and not sc.get("privileged")
    assert c["resources"]["limits"]["memory"] and c["resources"]["requests"]["cpu"]

    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    host_of = {path: volumes[m["name"]].get("hostPath", {}).get("path") for path, m in mounts.items()}
    # what serve reads, read-only, where its options say
    for host_path, mount in (("/proc", "/host/proc"), ("/sys", "/host/sys"), ("/sys/fs/cgroup", "/sys/fs/cgroup"),
                             ("/var/log/pods", "/host/var/log/pods"),
                             ("/var/log/containers", "/host/var/log/containers")):
        assert host_of.get(mount) == host_path, (mount, host_of)
        assert mounts[mount].get("readOnly") is True, mount
    writable = [p for p, m in mounts.items() if not m.get("readOnly")]
    assert sorted(writable) == ["/tmp", "/var/lib/trainmon"], writable

    args = c["command"][1:] + c["args"]
    assert "--proc-root=/host/proc" in args and "--sys-root=/host/sys" in args
    assert "--pod-logs-root=/host/var/log/pods" in args
    db = next(a for a in args if a.startswith("--db="))
    assert db.startswith("--db=/var/lib/trainmon/")
    listen = next(a for a in args if a.startswith("--listen="))
    port = int(listen.rsplit(":", 1)[1])
    (cport,) = c["ports"]
    assert cport["containerPort"] == port
    (sport,) = kinds["Service"]["spec"]["ports"]
    assert sport["targetPort"] == cport["name"]
    assert kinds["Service"]["spec"]["selector"].items() <= \
        kinds["DaemonSet"]["spec"]["template"]["metadata"]["labels"].items()
    check_options(args)
