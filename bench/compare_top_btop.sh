#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `trainmon top` (8 fake GPUs with 64 GPU processes from tests/scenarios/bench-8gpu-64proc.json, and
# every process of this machine) against btop, each in its own tmux server at the same size, both
# refreshing every second (btop: update_ms=1000 in a private XDG_CONFIG_HOME). CPU time is counted
# from WARMUP seconds after start for DURATION seconds (start-up excluded), children excluded, two ways:
# the sum over every thread of the run time in /proc/PID/task/TID/schedstat (nanoseconds, what the
# ratio uses: a program using 3 ms a second is only 18 ticks in 60 s, so tick counts are coarse), and
# utime + stime from /proc/PID/stat (clock ticks, 10 ms each; also counts threads that exited).
# Target: trainmon top's CPU time under a third of btop's (ratio > 3x).
# Usage: bench/compare_top_btop.sh BUILD_DIR   (DURATION=60, WARMUP=5, SIZE=200x50 by default;
#        VIEW=all shows every process in top's table, as btop does, instead of the GPU processes)
set -euo pipefail
BUILD=${1:?usage: $0 BUILD_DIR}
DURATION=${DURATION:-60}
WARMUP=${WARMUP:-5}
SIZE=${SIZE:-200x50}
VIEW=${VIEW:-gpu}
COLS=${SIZE%x*}
ROWS=${SIZE#*x}
SRC=$(cd "$(dirname "$0")/.." && pwd)
TRAINMON=$BUILD/trainmon
FAKE=$(find -L "$BUILD" -maxdepth 3 -name 'libnvidia-ml.so.1' -path '*fake_nvml*' | head -1)
[[ -x $TRAINMON ]] || { echo "no trainmon binary in $BUILD" >&2; exit 2; }
[[ -n $FAKE ]] || { echo "no fake libnvidia-ml.so.1 in $BUILD" >&2; exit 2; }
command -v tmux >/dev/null || { echo "tmux is not installed" >&2; exit 2; }
command -v btop >/dev/null || { echo "btop is not installed (apt-get install btop)" >&2; exit 2; }
TMP=$(mktemp -d)
TM_SOCK=$TMP/top.sock
BT_SOCK=$TMP/btop.sock
cleanup() {
  tmux -S "$TM_SOCK" kill-server 2>/dev/null || true
  tmux -S "$BT_SOCK" kill-server 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT
TICK=$(getconf CLK_TCK)

cpu_ticks() {  # utime + stime of PID, clock ticks
  awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"
}

cpu_ns() {  # run time of every live thread of PID, nanoseconds (first field of schedstat)
  cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f\n", s }'
}

mkdir -p "$TMP/config/btop" "$TMP/state"
cat >"$TMP/config/btop/btop.conf" <<EOF
update_ms = 1000
proc_sorting = "cpu lazy"
shown_boxes = "cpu mem net proc"
EOF

start() {  # SOCKET COMMAND... ; prints the pid of the command in the pane
  local sock=$1
  shift
  LANG=C.UTF-8 LC_ALL=C.UTF-8 tmux -S "$sock" -f /dev/null new-session -d -x "$COLS" -y "$ROWS" \
    env TERM=screen-256color LANG=C.UTF-8 LC_ALL=C.UTF-8 "$@"
  tmux -S "$sock" display-message -p -t 0 '#{pane_pid}'
}

TM_PID=$(start "$TM_SOCK" XDG_STATE_HOME="$TMP/state" TRAINMON_NVML_LIBRARY="$FAKE" \
  TRAINMON_FAKE_NVML_SCENARIO="$SRC/tests/scenarios/bench-8gpu-64proc.json" "$TRAINMON" top -i 1)
BT_PID=$(start "$BT_SOCK" XDG_CONFIG_HOME="$TMP/config" btop)
if [[ $VIEW == all ]]; then
  sleep 1
  tmux -S "$TM_SOCK" send-keys -t 0 a
fi
sleep "$WARMUP"
TM0=$(cpu_ticks "$TM_PID")
BT0=$(cpu_ticks "$BT_PID")
TMN0=$(cpu_ns "$TM_PID")
BTN0=$(cpu_ns "$BT_PID")
sleep "$DURATION"
TMN1=$(cpu_ns "$TM_PID")
BTN1=$(cpu_ns "$BT_PID")
TM1=$(cpu_ticks "$TM_PID")
BT1=$(cpu_ticks "$BT_PID")
# Both must still be drawing: a crashed program would use no CPU and win.
tmux -S "$TM_SOCK" capture-pane -p -t 0 | grep -q 'trainmon top' || { echo "trainmon top is not on screen" >&2; exit 1; }
tmux -S "$BT_SOCK" capture-pane -p -t 0 | grep -qi 'cpu' || { echo "btop is not on screen" >&2; exit 1; }

TM_CPU=$(awk -v a="$TM0" -v b="$TM1" -v t="$TICK" 'BEGIN { printf "%.2f", (b - a) / t }')
BT_CPU=$(awk -v a="$BT0" -v b="$BT1" -v t="$TICK" 'BEGIN { printf "%.2f", (b - a) / t }')
TICK_RATIO=$(awk -v a="$BT_CPU" -v b="$TM_CPU" 'BEGIN { if (b > 0) printf "%.1f", a / b; else print "inf" }')
TM_MS=$(awk -v a="$TMN0" -v b="$TMN1" -v d="$DURATION" 'BEGIN { printf "%.2f", (b - a) / 1e6 / d }')
BT_MS=$(awk -v a="$BTN0" -v b="$BTN1" -v d="$DURATION" 'BEGIN { printf "%.2f", (b - a) / 1e6 / d }')
RATIO=$(awk -v a="$BTN0" -v b="$BTN1" -v c="$TMN0" -v e="$TMN1" \
  'BEGIN { if (e > c) printf "%.2f", (b - a) / (e - c); else print "inf" }')
NPROC=$(ls -d /proc/[0-9]* | wc -l)

printf '%-34s %14s %14s\n' "${DURATION} s at 1 s, tmux ${SIZE}" "CPU ms/s" "utime+stime s"
printf '%-34s %14s %14s\n' "trainmon top ($VIEW view, 8 GPUs)" "$TM_MS" "$TM_CPU"
printf '%-34s %14s %14s\n' "btop (update_ms=1000)" "$BT_MS" "$BT_CPU"
printf '%-34s %14s %14s\n' "btop / trainmon top" "${RATIO}x" "${TICK_RATIO}x"
printf 'CPU ms/s: schedstat run time of all threads; utime+stime: /proc/PID/stat in %s ms ticks\n' \
  "$(awk -v t="$TICK" 'BEGIN { printf "%g", 1000 / t }')"
printf 'host processes: %s; target: trainmon top under a third of btop (ratio > 3x)\n' "$NPROC"
