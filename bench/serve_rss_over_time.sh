#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# RSS of `trainmon serve` over time: 8 fake GPUs (tests/scenarios/ddp-8gpu-healthy.json, 2 rank
# processes) sampled at 1 s, recording into its store, with the traffic of a Prometheus and an open
# dashboard every second (/metrics, /api/v1/snapshot, /api/v1/history, /api/v1/findings, on new and
# kept-alive connections) and a burst of 50 idle connections every 30 s. VmRSS is read every STEP_S
# seconds; the first WARMUP_S (default: a tenth of the duration, at least 60 s) are warm-up (the
# history ring, SQLite's page cache and the allocator's arenas fill). Printed as it goes: RSS once
# a minute (every sample for runs up to 20 minutes); at the end, after warm-up, its minimum,
# maximum, growth (max - min) and least-squares slope. Target: flat within 2 MB after warm-up.
# The live diagnosis keeps the last hour of samples (up to 1.1 h: it trims in tenths), about 2.5 KB a
# tick with 8 GPUs: in a run of an hour it is still filling. Its plateau shows with DURATION_S=7200
# WARMUP_S=4000.
# Usage: bench/serve_rss_over_time.sh BUILD_DIR [DURATION_S]     (default 3600; STEP_S=10)
set -euo pipefail
BUILD=${1:?usage: $0 BUILD_DIR [DURATION_S]}
DURATION_S=${2:-3600}
STEP_S=${STEP_S:-10}
WARMUP_S=${WARMUP_S:-$(( DURATION_S / 10 > 60 ? DURATION_S / 10 : 60 ))}
SRC=$(cd "$(dirname "$0")/.." && pwd)
TRAINMON=$BUILD/trainmon
FAKE=$(find -L "$BUILD" -maxdepth 3 -name 'libnvidia-ml.so.1' -path '*fake_nvml*' | head -1)
[[ -x $TRAINMON ]] || { echo "no trainmon binary in $BUILD" >&2; exit 2; }
[[ -n $FAKE ]] || { echo "no fake libnvidia-ml.so.1 in $BUILD" >&2; exit 2; }
TMP=$(mktemp -d)
SERVE_PID=
CLIENT_PID=
RANK_PIDS=()
cleanup() {
  set +e
  [[ -n $CLIENT_PID ]] && kill "$CLIENT_PID" 2>/dev/null
  [[ -n $SERVE_PID ]] && kill -TERM "$SERVE_PID" 2>/dev/null && wait "$SERVE_PID" 2>/dev/null
  for p in "${RANK_PIDS[@]}"; do kill "$p" 2>/dev/null; done
  rm -rf "$TMP"
  return 0
}
trap cleanup EXIT
sleep $((DURATION_S + 600)) & RANK_PIDS+=($!)
sleep $((DURATION_S + 600)) & RANK_PIDS+=($!)
TRAINMON_NVML_LIBRARY=$FAKE TRAINMON_FAKE_NVML_SCENARIO=$SRC/tests/scenarios/ddp-8gpu-healthy.json \
  TRAINMON_DDP_PID_0=${RANK_PIDS[0]} TRAINMON_DDP_PID_1=${RANK_PIDS[1]} \
  "$TRAINMON" serve --listen 127.0.0.1:0 --db "$TMP/rss.db" --interval 1 -q 2>"$TMP/err" &
SERVE_PID=$!
PORT=
for _ in $(seq 1 300); do
  PORT=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\)/.*|\1|p' "$TMP/err")
  [[ -n $PORT ]] && break
  sleep 0.1
done
[[ -n $PORT ]] || { echo "serve did not start: $(cat "$TMP/err")" >&2; exit 1; }

python3 - "$PORT" <<'PY' > "$TMP/client.log" 2>&1 &
import http.client, socket, sys, time
port = int(sys.argv[1])
keep = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
n = 0
while True:
    t0 = time.monotonic()
    for path in ("/metrics", "/api/v1/snapshot", "/api/v1/history?seconds=900", "/api/v1/findings"):
        try:
            keep.request("GET", path)
            keep.getresponse().read()
        except (OSError, http.client.HTTPException):
            keep.close()
            keep = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:  # Prometheus without keep-alive
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        c.request("GET", "/metrics")
        c.getresponse().read()
        c.close()
    except (OSError, http.client.HTTPException):
        pass
    n += 1
    if n % 30 == 0:  # a burst of idle connections, left to time out
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(50)]
        time.sleep(0.1)
        for s in idle:
            s.close()
    time.sleep(max(0, 1 - (time.monotonic() - t0)))
PY
CLIENT_PID=$!

rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$SERVE_PID/status"; }
echo "trainmon serve RSS, 8 fake GPUs at 1 s, ${DURATION_S} s (warm-up ${WARMUP_S} s), sampled every ${STEP_S} s"
printf '%8s %10s\n' "t [s]" "RSS [KiB]"
EVERY=$(( DURATION_S > 1200 ? 60 : STEP_S ))
START=$(date +%s)
LAST_PRINT=-$EVERY
: > "$TMP/samples"
while :; do
  NOW=$(( $(date +%s) - START ))
  (( NOW > DURATION_S )) && break
  kill -0 "$SERVE_PID" 2>/dev/null || { echo "serve exited: $(cat "$TMP/err")" >&2; exit 1; }
  R=$(rss)
  echo "$NOW $R" >> "$TMP/samples"
  if (( NOW - LAST_PRINT >= EVERY )); then
    printf '%8d %10d\n' "$NOW" "$R"
    LAST_PRINT=$NOW
  fi
  sleep "$STEP_S"
done
awk -v w="$WARMUP_S" '
  $1 >= w { n++; t = $1 / 3600; y = $2; st += t; sy += y; stt += t * t; sty += t * y
            if (n == 1 || y < min) min = y; if (n == 1 || y > max) max = y; last = y; if (n == 1) first = y }
  END {
    slope = (n > 2 && n * stt - st * st > 0) ? (n * sty - st * sy) / (n * stt - st * st) : 0
    printf "after warm-up: %d samples, first %d KiB, last %d KiB, min %d KiB, max %d KiB\n", n, first, last, min, max
    printf "growth (max - min): %d KiB; slope %.0f KiB/h\n", max - min, slope
    printf "target: flat within 2048 KiB after warm-up: %s\n", (max - min <= 2048) ? "met" : "NOT met"
  }' "$TMP/samples"
