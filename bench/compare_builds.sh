#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Two builds of trainmon side by side, in one run (a change's "before" and "after"), with glances
# as the yardstick: `record` at 1 s on 8 fake GPUs (tests/scenarios/ddp-8gpu-healthy.json), both
# builds and glances over the same window (CPU time = utime + stime from /proc/PID/stat, peak RSS
# = VmHWM), then `status` start-up (CPU per call, mean of N calls, each build in turn).
# Usage: bench/compare_builds.sh BEFORE_BIN AFTER_BIN FAKE_NVML_SO   (DURATION=60, CALLS=50)
set -euo pipefail
BEFORE=${1:?usage: $0 BEFORE_BIN AFTER_BIN FAKE_NVML_SO}
AFTER=${2:?usage: $0 BEFORE_BIN AFTER_BIN FAKE_NVML_SO}
FAKE=${3:?usage: $0 BEFORE_BIN AFTER_BIN FAKE_NVML_SO}
DURATION=${DURATION:-60}
CALLS=${CALLS:-50}
SRC=$(cd "$(dirname "$0")/.." && pwd)
command -v glances >/dev/null || { echo "glances is not installed (apt-get install glances)" >&2; exit 2; }
TMP=$(mktemp -d)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$TMP"' EXIT
TICK=$(getconf CLK_TCK)
cpu_s() { awk -v t="$TICK" '{ sub(/^.*\) /, ""); printf "%.2f", ($12 + $13) / t }' "/proc/$1/stat"; }
hwm_mb() { awk '/^VmHWM:/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }
export TRAINMON_NVML_LIBRARY=$FAKE TRAINMON_FAKE_NVML_SCENARIO=$SRC/tests/scenarios/ddp-8gpu-healthy.json

"$BEFORE" record --db "$TMP/before.db" --interval 1 -q & B_PID=$!; PIDS+=($B_PID)
"$AFTER" record --db "$TMP/after.db" --interval 1 -q & A_PID=$!; PIDS+=($A_PID)
glances --quiet -t 1 >/dev/null 2>&1 & G_PID=$!; PIDS+=($G_PID)
sleep "$DURATION"
B_CPU=$(cpu_s $B_PID); B_HWM=$(hwm_mb $B_PID)
A_CPU=$(cpu_s $A_PID); A_HWM=$(hwm_mb $A_PID)
G_CPU=$(cpu_s $G_PID); G_HWM=$(hwm_mb $G_PID)
for p in $B_PID $A_PID $G_PID; do kill -TERM "$p"; wait "$p" 2>/dev/null || true; done
PIDS=()

status_cpu_ms() {  # mean CPU ms of `BIN status` (children's utime + stime from bash's `times`)
  local bin=$1
  bash -c 'for ((i = 0; i < '"$CALLS"'; i++)); do "'"$bin"'" status >/dev/null 2>&1; done; times' |
    awk -v n="$CALLS" 'NR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/);
      printf "%.2f", ((u[1] * 60 + u[2]) + (s[1] * 60 + s[2])) * 1000 / n }'
}
B_ST=$(status_cpu_ms "$BEFORE"); A_ST=$(status_cpu_ms "$AFTER")
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1fx", a / b; else print "inf" }'; }

printf '%-34s %14s %14s %16s %18s\n' "" "record CPU (s)" "peak RSS (MB)" "glances / build" "status CPU (ms)"
printf '%-34s %14s %14s %16s %18s\n' "before: $(basename "$(dirname "$BEFORE")")" "$B_CPU" "$B_HWM" "$(ratio "$G_CPU" "$B_CPU")" "$B_ST"
printf '%-34s %14s %14s %16s %18s\n' "after:  $(basename "$(dirname "$AFTER")")" "$A_CPU" "$A_HWM" "$(ratio "$G_CPU" "$A_CPU")" "$A_ST"
printf '%-34s %14s %14s\n' "glances --quiet -t 1" "$G_CPU" "$G_HWM"
echo "over ${DURATION} s at 1 s, 8 fake GPUs, all three at once; status: mean of ${CALLS} calls"
