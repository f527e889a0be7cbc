#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What the Python callback costs the training loop (MISSION.md section 3: "under 1 ms per call").
#
#   bench/compare_python_callback.sh BUILD_DIR [STEPS] [ROUNDS]
#
# Prints a table:
#   1. per-call cost of each hook kind, microseconds, over 10,000 calls (events going to a live
#      recorder socket; lines thinned by `interval` as in real use, and one row printing every call);
#   2. the same small CNN training loop (torch, CPU, synthetic images) timed without the callback
#      and with it on every batch, alternating ABAB over ROUNDS rounds, median loop time, % slower.
# Runs under `BUILD_DIR/trainmon run` with the fake NVML driver when that subcommand exists (events
# really reach the recorder); otherwise a Python thread stands in for the recorder's socket.
# No pass/fail: numbers for the report. Python: /usr/bin/python3 with python3-torch.
set -euo pipefail

BUILD=${1:?usage: $0 BUILD_DIR [STEPS] [ROUNDS]}
STEPS=${2:-300}
ROUNDS=${3:-5}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN="$BUILD/trainmon"
PY=/usr/bin/python3
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

cat >"$WORK/bench.py" <<'PYEOF'
import io, os, socket, statistics, sys, threading, time
sys.path.insert(0, os.environ["TRAINMON_PYTHON_DIR"])
steps, rounds = int(sys.argv[1]), int(sys.argv[2])

if not os.environ.get("TRAINMON_EVENTS_SOCKET"):
    # Stand-in recorder: accept and read everything (as the EventServer thread does).
    path = os.path.join(os.environ["BENCH_WORK"], "events.sock")
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    srv.bind(path); srv.listen(8)
    def serve():
        while True:
            c, _ = srv.accept()
            threading.Thread(target=lambda c=c: [None for _ in iter(lambda: c.recv(70000), b"")], daemon=True).start()
    threading.Thread(target=serve, daemon=True).start()
    os.environ["TRAINMON_EVENTS_SOCKET"] = path
    recorder = "python stand-in"
else:
    recorder = "trainmon run"

import torch
import trainmon
from trainmon import ultralytics

torch.manual_seed(0); torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                            torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(),
                            torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(32, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(32, 3, 32, 32); y = torch.randint(0, 10, (32,))

class Trainer:  # what Ultralytics hands a callback
    def __init__(self):
        self.epoch, self.epochs, self.batch_size, self.tloss = 0, 100, 32, None
        self.args = type("A", (), {"imgsz": 32})()

def per_call(fn, n=10000):
    fn()  # warm
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n * 1e6

sink = io.StringIO()
tr = Trainer()
rows = []
m = ultralytics.ResourceMonitor(interval=30, stream=sink)
rows.append(("on_train_batch_end, default (<=10 events/s, line every 30 s)", per_call(lambda: m.on_train_batch_end(tr))))
m_all = ultralytics.ResourceMonitor(interval=30, stream=sink, batch_events_per_s=0)
rows.append(("on_train_batch_end, an event every call", per_call(lambda: m_all.on_train_batch_end(tr))))
rows.append(("on_train_epoch_end (event with RSS + torch memory)", per_call(lambda: m_all.on_train_epoch_end(tr))))
m_line = ultralytics.ResourceMonitor(interval=0, stream=sink)
rows.append(("on_train_epoch_end printing a line every call (interval=0)", per_call(lambda: m_line.on_train_epoch_end(tr), 2000)))
off = trainmon.Monitor(interval=30, stream=sink, env={"TRAINMON_DISABLE": "1"})
rows.append(("disabled (TRAINMON_DISABLE=1)", per_call(lambda: off.batch_end(epoch=0, batch=1))))

def loop(callback):
    t0 = time.perf_counter()
    for i in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward(); opt.step()
        if callback is not None:
            tr.tloss = loss.detach()
            callback(tr)
    return time.perf_counter() - t0

cb = ultralytics.ResourceMonitor(interval=30, stream=sink, batch_events_per_s=0).on_train_batch_end
loop(None); loop(cb)  # warm
without, with_cb = [], []
for _ in range(rounds):
    without.append(loop(None)); with_cb.append(loop(cb))
a, b = statistics.median(without), statistics.median(with_cb)

print("recorder: %s; events sent by the loop's callback: %d, dropped: %d" % (recorder, m_all.monitor.sent, m_all.monitor.dropped))
print()
print("%-64s %12s" % ("hook (10,000 calls unless noted)", "us per call"))
print("-" * 77)
for name, us in rows:
    print("%-64s %12.1f" % (name, us))
print("%-64s %12s" % ("the article's callback: psutil.cpu_percent(interval=1)", ">= 1000000"))
print()
print("%-40s %12s %12s %10s" % ("training loop (%d steps, median of %d)" % (steps, rounds), "without s", "with s", "slower"))
print("-" * 77)
print("%-40s %12.3f %12.3f %9.2f%%" % ("small CNN, callback on every batch", a, b, 100 * (b - a) / a))
print("%-40s %12.1f %12.1f" % ("per step, ms", a / steps * 1e3, b / steps * 1e3))
ratios = sorted(100 * (w - wo) / wo for wo, w in zip(without, with_cb))
print("%-40s %38s" % ("slower, per round (paired, sorted)", " ".join("%.2f%%" % r for r in ratios)))
print("%-40s %38.3f%%" % ("expected from the per-call cost", 100 * rows[1][1] * 1e-6 * steps / a))
print("(on a loaded machine the loop times wander by more than the hook costs; the last row is the")
print(" hook's share of a step computed from its measured per-call cost)")
PYEOF

export TRAINMON_PYTHON_DIR="$ROOT/python" BENCH_WORK="$WORK" TRAINMON_NO_AGENT=1
if [[ -x "$BIN" ]] && "$BIN" --help 2>/dev/null | grep -qE "^[[:space:]]+run[[:space:]]"; then
  export TRAINMON_NVML_LIBRARY="${TRAINMON_FAKE_NVML_PATH:-$BUILD/tests/fake_nvml/libnvidia-ml.so.1}"
  export TRAINMON_FAKE_NVML_SCENARIO="$ROOT/tests/scenarios/healthy-1gpu.json"
  export TRAINMON_DB="$WORK/bench.db"
  "$BIN" run -- "$PY" "$WORK/bench.py" "$STEPS" "$ROUNDS"
else
  "$PY" "$WORK/bench.py" "$STEPS" "$ROUNDS"
fi
