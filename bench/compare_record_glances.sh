#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# trainmon record (1 s, 8 fake GPUs from tests/scenarios/ddp-8gpu-healthy.json, the machine's
# processes) against `glances --quiet` over the same window: CPU time (utime + stime from
# /proc/PID/stat, children excluded) and peak RSS (VmHWM).
# Targets: trainmon CPU < 1/20 of glances'; trainmon peak RSS < 20 MB.
# Usage: bench/compare_record_glances.sh BUILD_DIR      (DURATION=60 by default, in seconds)
set -euo pipefail
BUILD=${1:?usage: $0 BUILD_DIR}
DURATION=${DURATION:-60}
SRC=$(cd "$(dirname "$0")/.." && pwd)
TRAINMON=$BUILD/trainmon
FAKE=$(find -L "$BUILD" -maxdepth 3 -name 'libnvidia-ml.so.1' -path '*fake_nvml*' | head -1)
[[ -x $TRAINMON ]] || { echo "no trainmon binary in $BUILD" >&2; exit 2; }
[[ -n $FAKE ]] || { echo "no fake libnvidia-ml.so.1 in $BUILD" >&2; exit 2; }
command -v glances >/dev/null || { echo "glances is not installed (apt-get install glances)" >&2; exit 2; }
TMP=$(mktemp -d)
trap 'kill $TM_PID $GL_PID 2>/dev/null || true; rm -rf "$TMP"' EXIT
TICK=$(getconf CLK_TCK)

cpu_s() {  # utime + stime of PID, seconds
  awk -v t="$TICK" '{ sub(/^.*\) /, ""); printf "%.2f", ($12 + $13) / t }' "/proc/$1/stat"
}
hwm_mb() { awk '/^VmHWM:/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }

TRAINMON_NVML_LIBRARY=$FAKE TRAINMON_FAKE_NVML_SCENARIO=$SRC/tests/scenarios/ddp-8gpu-healthy.json \
  "$TRAINMON" record --db "$TMP/bench.db" --interval 1 -q &
TM_PID=$!
glances --quiet -t 1 >/dev/null 2>&1 &
GL_PID=$!
sleep "$DURATION"
TM_CPU=$(cpu_s $TM_PID); TM_HWM=$(hwm_mb $TM_PID)
GL_CPU=$(cpu_s $GL_PID); GL_HWM=$(hwm_mb $GL_PID)
kill -TERM $TM_PID; wait $TM_PID 2>/dev/null || true
kill -TERM $GL_PID; wait $GL_PID 2>/dev/null || true
RATIO=$(awk -v a="$GL_CPU" -v b="$TM_CPU" 'BEGIN { if (b > 0) printf "%.1f", a / b; else print "inf" }')

printf '%-28s %12s %14s\n' "over ${DURATION} s at 1 s" "CPU time (s)" "peak RSS (MB)"
printf '%-28s %12s %14s\n' "trainmon record (8 GPUs)" "$TM_CPU" "$TM_HWM"
printf '%-28s %12s %14s\n' "glances --quiet" "$GL_CPU" "$GL_HWM"
printf '%-28s %12s %14s\n' "glances / trainmon" "${RATIO}x" ""
printf 'targets: trainmon CPU < 1/20 of glances (ratio > 20x); trainmon peak RSS < 20 MB\n'
printf 'store after the window: %s bytes\n' "$(stat -c %s "$TMP/bench.db" 2>/dev/null || echo 0)"
