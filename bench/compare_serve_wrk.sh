#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# trainmon serve with 8 fake GPUs (tests/scenarios/ddp-8gpu-healthy.json, 2 rank processes) on loopback:
#  1. idle CPU: serve's run time over IDLE_S seconds with no requests, two ways: the sum of every
#     thread's /proc/PID/task/TID/schedstat (nanoseconds; threads that exit inside the window are
#     missed, none do once serve runs) and utime + stime (/proc/PID/stat, 10 ms ticks: coarse), sampling
#     at 1 s (recording into the store and the live diagnosis included), as % of one core, next to a
#     `trainmon record` on the same fake GPUs over the same window (what the shared loop costs alone);
#  2. /metrics latency at 100 requests/s: Debian's wrk 4.1 has no -R (that is wrk2), so a Lua delay()
#     of 10 ms between requests on one connection paces it (-t1 -c1; the achieved rate is printed;
#     wrk's ms timers make it ~80-95/s); p50 / p99 from `--latency`. A second paced loop in Python
#     (http.client, keep-alive, one request every 10 ms on a monotonic schedule) cross-checks it;
#  3. /metrics at full speed on one connection (wrk -t1 -c1), for the ceiling.
# Targets: p99 < 5 ms at 100 requests/s; idle CPU < 0.5 % of a core.
# Usage: bench/compare_serve_wrk.sh BUILD_DIR      (IDLE_S=60, WRK_S=10 by default)
set -euo pipefail
BUILD=${1:?usage: $0 BUILD_DIR}
IDLE_S=${IDLE_S:-60}
WRK_S=${WRK_S:-10}
SRC=$(cd "$(dirname "$0")/.." && pwd)
TRAINMON=$BUILD/trainmon
FAKE=$(find -L "$BUILD" -maxdepth 3 -name 'libnvidia-ml.so.1' -path '*fake_nvml*' | head -1)
[[ -x $TRAINMON ]] || { echo "no trainmon binary in $BUILD" >&2; exit 2; }
[[ -n $FAKE ]] || { echo "no fake libnvidia-ml.so.1 in $BUILD" >&2; exit 2; }
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)" >&2; exit 2; }
TMP=$(mktemp -d)
SERVE_PID=
REC_PID=
RANK_PIDS=()
cleanup() {
  set +e
  [[ -n $REC_PID ]] && kill -TERM "$REC_PID" 2>/dev/null
  [[ -n $SERVE_PID ]] && kill -TERM "$SERVE_PID" 2>/dev/null && wait "$SERVE_PID" 2>/dev/null
  for p in "${RANK_PIDS[@]}"; do kill "$p" 2>/dev/null; done
  rm -rf "$TMP"
  return 0
}
trap cleanup EXIT
TICK=$(getconf CLK_TCK)
cpu_ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }
cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f\n", s }'; }

sleep 3600 & RANK_PIDS+=($!)
sleep 3600 & RANK_PIDS+=($!)
TRAINMON_NVML_LIBRARY=$FAKE TRAINMON_FAKE_NVML_SCENARIO=$SRC/tests/scenarios/ddp-8gpu-healthy.json \
  TRAINMON_DDP_PID_0=${RANK_PIDS[0]} TRAINMON_DDP_PID_1=${RANK_PIDS[1]} \
  "$TRAINMON" serve --listen 127.0.0.1:0 --db "$TMP/bench.db" --interval 1 -q 2>"$TMP/err" &
SERVE_PID=$!
PORT=
for _ in $(seq 1 300); do
  PORT=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\)/.*|\1|p' "$TMP/err")
  [[ -n $PORT ]] && break
  sleep 0.1
done
[[ -n $PORT ]] || { echo "serve did not start: $(cat "$TMP/err")" >&2; exit 1; }
URL=http://127.0.0.1:$PORT/metrics
sleep 3  # a few ticks
BODY=$(curl -s "$URL" | wc -c)
GPUS=$(curl -s "$URL" | grep -c '^DCGM_FI_DEV_GPU_UTIL{' || true)

# 1. idle CPU, with `trainmon record` alongside for reference
TRAINMON_NVML_LIBRARY=$FAKE TRAINMON_FAKE_NVML_SCENARIO=$SRC/tests/scenarios/ddp-8gpu-healthy.json \
  TRAINMON_DDP_PID_0=${RANK_PIDS[0]} TRAINMON_DDP_PID_1=${RANK_PIDS[1]} \
  "$TRAINMON" record --db "$TMP/record.db" --interval 1 -q &
REC_PID=$!
sleep 3
T0=$(cpu_ticks $SERVE_PID); R0=$(cpu_ticks $REC_PID); W0=$(date +%s.%N)
TN0=$(cpu_ns $SERVE_PID); RN0=$(cpu_ns $REC_PID)
sleep "$IDLE_S"
TN1=$(cpu_ns $SERVE_PID); RN1=$(cpu_ns $REC_PID)
T1=$(cpu_ticks $SERVE_PID); R1=$(cpu_ticks $REC_PID); W1=$(date +%s.%N)
kill -TERM $REC_PID; wait $REC_PID 2>/dev/null || true
IDLE=$(awk -v a="$T0" -v b="$T1" -v t="$TICK" -v w0="$W0" -v w1="$W1" 'BEGIN { printf "%.3f", 100 * (b - a) / t / (w1 - w0) }')
REC=$(awk -v a="$R0" -v b="$R1" -v t="$TICK" -v w0="$W0" -v w1="$W1" 'BEGIN { printf "%.3f", 100 * (b - a) / t / (w1 - w0) }')
IDLE_NS=$(awk -v a="$TN0" -v b="$TN1" -v w0="$W0" -v w1="$W1" 'BEGIN { printf "%.3f", 100 * (b - a) / 1e9 / (w1 - w0) }')
REC_NS=$(awk -v a="$RN0" -v b="$RN1" -v w0="$W0" -v w1="$W1" 'BEGIN { printf "%.3f", 100 * (b - a) / 1e9 / (w1 - w0) }')

# 2. paced at ~100 requests/s
cat > "$TMP/pace.lua" <<'LUA'
function delay() return 10 end
LUA
wrk -t1 -c1 -d"${WRK_S}s" --latency -s "$TMP/pace.lua" "$URL" > "$TMP/paced.txt"
python3 - "$PORT" "$WRK_S" > "$TMP/py.txt" <<'PY'
import http.client, sys, time
port, secs = int(sys.argv[1]), float(sys.argv[2])
c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
lat = []
end = time.monotonic() + secs
nxt = time.monotonic()
while time.monotonic() < end:
    t0 = time.perf_counter()
    c.request("GET", "/metrics")
    r = c.getresponse()
    r.read()
    assert r.status == 200
    lat.append(time.perf_counter() - t0)
    nxt += 0.01
    d = nxt - time.monotonic()
    if d > 0:
        time.sleep(d)
lat.sort()
n = len(lat)
ms = lambda x: f"{x * 1e3:.2f}ms"
print(f"{n / secs:.0f} {ms(lat[n // 2])} {ms(lat[min(n - 1, int(n * 0.99))])} {ms(lat[-1])}")
PY
# 3. full speed
wrk -t1 -c1 -d"${WRK_S}s" --latency "$URL" > "$TMP/full.txt"

pct() { awk -v p="$2" '$1 == p { print $2 }' "$1"; }
rate() { awk '/^Requests\/sec:/ { printf "%.0f", $2 }' "$1"; }
errors() { awk '/Non-2xx|Socket errors/ { print; f=1 } END { if (!f) print "none" }' "$1" | tr '\n' ' '; }

printf '%-44s %10s %10s %10s %10s\n' "trainmon serve, /metrics, $GPUS GPUs ($BODY B)" "req/s" "p50" "p99" "max"
printf '%-44s %10s %10s %10s %10s\n' "wrk -t1 -c1, paced 10 ms (~100 req/s)" "$(rate "$TMP/paced.txt")" \
  "$(pct "$TMP/paced.txt" 50%)" "$(pct "$TMP/paced.txt" 99%)" "$(awk '/Latency/ && !/Distribution/ { print $4; exit }' "$TMP/paced.txt")"
read -r PY_RATE PY_P50 PY_P99 PY_MAX < "$TMP/py.txt"
printf '%-44s %10s %10s %10s %10s\n' "python keep-alive, paced 100 req/s" "$PY_RATE" "$PY_P50" "$PY_P99" "$PY_MAX"
printf '%-44s %10s %10s %10s %10s\n' "wrk -t1 -c1, full speed" "$(rate "$TMP/full.txt")" \
  "$(pct "$TMP/full.txt" 50%)" "$(pct "$TMP/full.txt" 99%)" "$(awk '/Latency/ && !/Distribution/ { print $4; exit }' "$TMP/full.txt")"
printf '%-44s %10s %14s\n' "% of a core, ${IDLE_S} s at 1 s sampling" "schedstat" "utime+stime"
printf '%-44s %10s %14s\n' "serve idle CPU" "${IDLE_NS}" "${IDLE}"
printf '%-44s %10s %14s\n' "record alone, same window, same fake GPUs" "${REC_NS}" "${REC}"
printf 'errors: paced: %s full: %s\n' "$(errors "$TMP/paced.txt")" "$(errors "$TMP/full.txt")"
printf 'targets: p99 < 5 ms at 100 requests/s; idle CPU < 0.5 %% of a core\n'
