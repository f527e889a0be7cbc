#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# trainmon serve (8 fake GPUs, tests/scenarios/ddp-8gpu-healthy.json, sampling at 1 s) while IDLE
# clients hold connections open without sending a byte (a keeper reopens any the server closes, so
# IDLE stay open the whole time, as hung clients or an attacker would), and a scraper fetches
# /metrics on a fresh connection every 100 ms for SCRAPE_S seconds, each with a 30 s time-out (a
# time-out counts as 30 s). Printed: the scraper's p50 / p99 / max latency and failures, for this
# build and, when BASELINE names another trainmon binary (the version before the connection hub,
# e.g. a build of main), for that one too in the same run, with the p99 ratio.
# Target: p99 under 100 ms with 1000 idle connections.
# Usage: bench/compare_serve_idle_connections.sh BUILD_DIR     (IDLE=1000 SCRAPE_S=30 BASELINE=...)
set -euo pipefail
BUILD=${1:?usage: $0 BUILD_DIR}
IDLE=${IDLE:-1000}
SCRAPE_S=${SCRAPE_S:-30}
SRC=$(cd "$(dirname "$0")/.." && pwd)
TRAINMON=$BUILD/trainmon
FAKE=$(find -L "$BUILD" -maxdepth 3 -name 'libnvidia-ml.so.1' -path '*fake_nvml*' | head -1)
[[ -x $TRAINMON ]] || { echo "no trainmon binary in $BUILD" >&2; exit 2; }
[[ -n $FAKE ]] || { echo "no fake libnvidia-ml.so.1 in $BUILD" >&2; exit 2; }
TMP=$(mktemp -d)
SERVE_PID=
RANK_PIDS=()
cleanup() {
  set +e
  [[ -n $SERVE_PID ]] && kill -TERM "$SERVE_PID" 2>/dev/null && wait "$SERVE_PID" 2>/dev/null
  for p in "${RANK_PIDS[@]}"; do kill "$p" 2>/dev/null; done
  rm -rf "$TMP"
  return 0
}
trap cleanup EXIT
sleep 3600 & RANK_PIDS+=($!)
sleep 3600 & RANK_PIDS+=($!)

# One measurement: serve from binary $1; prints "p50_ms p99_ms max_ms scrapes failed closed_by_server"
measure() {
  local bin=$1 label=$2
  ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
  TRAINMON_NVML_LIBRARY=$FAKE TRAINMON_FAKE_NVML_SCENARIO=$SRC/tests/scenarios/ddp-8gpu-healthy.json \
    TRAINMON_DDP_PID_0=${RANK_PIDS[0]} TRAINMON_DDP_PID_1=${RANK_PIDS[1]} \
    "$bin" serve --listen 127.0.0.1:0 --db "$TMP/$label.db" --interval 1 -q 2>"$TMP/$label.err" &
  SERVE_PID=$!
  local port=
  for _ in $(seq 1 300); do
    port=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\)/.*|\1|p' "$TMP/$label.err")
    [[ -n $port ]] && break
    sleep 0.1
  done
  [[ -n $port ]] || { echo "serve did not start: $(cat "$TMP/$label.err")" >&2; exit 1; }
  sleep 3  # a few ticks
  python3 - "$port" "$IDLE" "$SCRAPE_S" <<'PY'
import resource, socket, sys, threading, time
port, idle_n, secs = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
stop = False
reopened = [0]

def connect():
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=30)
    except OSError:
        return None
    s.setblocking(False)
    return s

def keeper():
    conns = [connect() for _ in range(idle_n)]
    while not stop:
        for i, c in enumerate(conns):
            if c is not None:
                try:
                    if c.recv(1, socket.MSG_PEEK) != b"":
                        continue  # the server sent something: still open
                except BlockingIOError:
                    continue  # open and quiet
                except OSError:
                    pass
                c.close()
            conns[i] = connect()
            reopened[0] += 1
        time.sleep(0.2)
    for c in conns:
        if c is not None:
            c.close()

t = threading.Thread(target=keeper, daemon=True)
t.start()
time.sleep(2)  # all idle connections open
lat, failed = [], 0
end = time.monotonic() + secs
while time.monotonic() < end:
    t0 = time.monotonic()
    try:
        c = socket.create_connection(("127.0.0.1", port), timeout=30)
        c.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        data = b""
        while True:
            chunk = c.recv(65536)
            if not chunk:
                break
            data += chunk
        c.close()
        if not data.startswith(b"HTTP/1.1 200"):
            failed += 1
        lat.append(time.monotonic() - t0)
    except OSError:
        failed += 1
        lat.append(30.0)
    time.sleep(max(0, 0.1 - (time.monotonic() - t0)))
stop = True
t.join()
lat.sort()
n = len(lat)
ms = lambda x: x * 1e3
print(f"{ms(lat[n // 2]):.1f} {ms(lat[min(n - 1, int(n * 0.99))]):.1f} {ms(lat[-1]):.1f} {n} {failed} {reopened[0]}")
PY
  kill -TERM "$SERVE_PID"; wait "$SERVE_PID" 2>/dev/null || true
  SERVE_PID=
}

printf '%-34s %6s %10s %10s %10s %8s %7s %9s\n' "serve /metrics, $IDLE idle conns" "idle" "p50 ms" "p99 ms" \
  "max ms" "scrapes" "failed" "reopened"
read -r A50 A99 AMAX AN AFAIL AREOPEN < <(measure "$TRAINMON" this)
printf '%-34s %6s %10s %10s %10s %8s %7s %9s\n' "this build" "$IDLE" "$A50" "$A99" "$AMAX" "$AN" "$AFAIL" "$AREOPEN"
if [[ -n ${BASELINE:-} ]]; then
  read -r B50 B99 BMAX BN BFAIL BREOPEN < <(measure "$BASELINE" baseline)
  printf '%-34s %6s %10s %10s %10s %8s %7s %9s\n' "baseline" "$IDLE" "$B50" "$B99" "$BMAX" "$BN" "$BFAIL" \
    "$BREOPEN"
  awk -v a="$A99" -v b="$B99" 'BEGIN { printf "p99 baseline / this build: %.0fx\n", b / (a > 0 ? a : 0.001) }'
fi
[[ -n ${BASELINE:-} ]] && echo "baseline: $BASELINE"
echo "reopened: idle connections the server closed (idle time-out or eviction) and the keeper opened again"
echo "target: p99 < 100 ms with $IDLE idle connections"
