#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What a misbehaving driver costs the other GPUs, the host and the user (issue #22), through the fake
# driver's hang rules: (1) the times of dmon's rows with a GPU that hangs in every NVML call from the
# start (targets: the first sample within its interval, then one per interval, no burst); (2) how long
# each command takes to end after SIGTERM and SIGINT, sent 3 s after its start, with that hung GPU and
# with a hung nvmlInit (target: under 2 s, whatever the driver does); (3) how long
# `record --duration 20` lasts with each fault (target: 20 s).
# Usage: bench/compare_driver_faults.sh BUILD_DIR      (about 3 minutes)
set -euo pipefail
build="${1:?usage: $0 BUILD_DIR}"
src="$(cd "$(dirname "$0")/.." && pwd)"
bin="${TRAINMON_BIN:-$build/trainmon}"
fake="$build/fake_nvml/libnvidia-ml.so.1"
for f in "$bin" "$fake"; do
  [[ -e "$f" ]] || { echo "missing: $f" >&2; exit 1; }
done
/usr/bin/python3 - "$bin" "$fake" "$src/tests/unit/device/scenarios/hang-2gpu.json" <<'PY'
import json, os, pty, select, signal, subprocess, sys, tempfile, time
TM, FAKE, BASE = sys.argv[1:4]
work = tempfile.mkdtemp(prefix="trainmon-driver-faults-")

def scenario(name, errors):
    s = json.load(open(BASE))
    s["errors"] = errors
    path = os.path.join(work, name + ".json")
    json.dump(s, open(path, "w"))
    return path

FAULTS = {"hung GPU": scenario("hung-gpu", [{"function": "*", "gpu": 1, "hang_ms": 60000}]),
          "hung nvmlInit": scenario("hung-init", [{"function": "nvmlInit_v2", "hang_ms": 60000}])}

def env(path):
    e = dict(os.environ, TRAINMON_NVML_LIBRARY=FAKE, TRAINMON_FAKE_NVML_SCENARIO=path, TERM="xterm")
    e["XDG_STATE_HOME"] = tempfile.mkdtemp(dir=work)
    e["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(dir=work)
    return e

def commands(d):
    return {"top": [TM, "top"], "status -i": [TM, "status", "-i", "1"], "dmon": [TM, "dmon"],
            "pmon": [TM, "pmon"], "query -l": [TM, "query", "--query-gpu=index", "--format=csv", "-l", "1"],
            "record": [TM, "record", "--db", d + "/r.db"],
            "serve": [TM, "serve", "--listen", "127.0.0.1:0", "--db", d + "/s.db"],
            "run": [TM, "run", "--db", d + "/run.db", "--", "sleep", "100"],
            "agent": [TM, "agent", "--snapshot-file", d + "/a/agent.json"]}

def exit_time(name, argv, e, sig):
    if name == "top":  # the real TUI, on a pseudo-terminal
        pid, fd = pty.fork()
        if pid == 0:
            os.execve(argv[0], argv, e)
    else:
        pid, fd = subprocess.Popen(argv, env=e, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL).pid, None
    time.sleep(3)
    t = time.monotonic()
    os.kill(pid, sig)
    while True:
        if fd is not None and select.select([fd], [], [], 0.02)[0]:
            try:
                os.read(fd, 65536)
            except OSError:
                pass
        if os.waitpid(pid, os.WNOHANG)[0]:
            return time.monotonic() - t
        if time.monotonic() - t > 70:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return float("inf")
        time.sleep(0.01)

p = subprocess.Popen([TM, "dmon", "-d", "1", "-c", "6", "--json"], env=env(FAULTS["hung GPU"]),
                     stdout=subprocess.PIPE, text=True)
t0 = time.monotonic()
rows = [round(time.monotonic() - t0, 2) for line in p.stdout if json.loads(line)["gpu"] == 0]
p.wait()
print("dmon -d 1, GPU 1 hung from the start: GPU 0's rows at (s):", " ".join(f"{t:.2f}" for t in rows))
print()
print(f"{'command':<10} | " + " | ".join(f"{f + ', ' + s:>22}" for f in FAULTS for s in ("SIGTERM", "SIGINT")))
print("-" * 11 + "|" + "|".join(["-" * 24] * 4))
names = list(commands(work))
for name in names:
    cells = []
    for fault, path in FAULTS.items():
        for sig in (signal.SIGTERM, signal.SIGINT):
            d = tempfile.mkdtemp(dir=work)
            cells.append(exit_time(name, commands(d)[name], env(path), sig))
    print(f"{name:<10} | " + " | ".join(f"{c:>20.2f} s" for c in cells))
print()
for fault, path in FAULTS.items():
    d = tempfile.mkdtemp(dir=work)
    t = time.monotonic()
    subprocess.run([TM, "record", "--db", d + "/x.db", "--duration", "20"], env=env(path),
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
    print(f"record --duration 20, {fault}: {time.monotonic() - t:.2f} s")
PY
