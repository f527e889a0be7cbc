#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `trainmon top --prometheus URL` at cluster scale against local `trainmon top`, in one run. For each
# node count in SIZES, a Prometheus TSDB is filled with HISTORY_S seconds of synthetic history (a sample
# every 15 s, ending now) of N nodes x 8 GPUs and one rank per GPU, in the names and labels `serve`
# exports (bench/cluster_history.py; jobs of 10 nodes), by `promtool tsdb create-blocks-from
# openmetrics`; a real `prometheus` (no scrape targets, no rules) serves those blocks on a free
# loopback port. Measured, the non-terminal text mode of top (stdout a file; cmd_top.cpp):
#   one-shot: `top --prometheus URL -n 1`, RUNS times: median wall time and mean CPU time (user+sys)
#             of the process, start-up included; how many runs drew every GPU (else top's error);
#   loop:     `top --prometheus URL -n FRAMES -i 0.1`: wall and CPU per frame (wall is at least the
#             0.1 s interval when a frame is faster), frames that failed (top's error line);
#   server:   Prometheus' own time for top's frame query (its query log: execTotalTime, median), the
#             answer's size, and Prometheus' CPU time per frame (/proc/PID/stat during the loop).
#   --job:    `top --prometheus URL --job 5000 -n 1` (one job of JOB_NODES nodes, filtered in the query):
#             median wall.
#   report:   `report --prometheus URL --job 5000` (JOB_NODES nodes x 8 GPUs, a rank each, the whole history),
#             REPORT_RUNS times: median wall and mean CPU, Prometheus' CPU and its execTotalTime summed
#             over the report's queries (mean per report), the HTML's size, and what it holds.
# The local reference, the same measures: `trainmon top -n 1` / `-n FRAMES -i 0.1` on the fake driver
# (8 GPUs, 64 processes, tests/scenarios/bench-8gpu-64proc.json); ratios are cluster / local.
# No target: a table for docs/cluster.md "Scale". top --prometheus gives up on a request after 2 s (--timeout).
# Usage: bench/compare_cluster_top.sh BUILD_DIR   (SIZES="10 100", HISTORY_S=1200, RUNS=5, FRAMES=10,
#        REPORT_RUNS=3, JOB_NODES=10: nodes per job)
set -euo pipefail
BUILD=${1:?usage: $0 BUILD_DIR}
SIZES=${SIZES:-10 100}
HISTORY_S=${HISTORY_S:-1200}
RUNS=${RUNS:-5}
FRAMES=${FRAMES:-10}
REPORT_RUNS=${REPORT_RUNS:-3}
JOB_NODES=${JOB_NODES:-10}
SRC=$(cd "$(dirname "$0")/.." && pwd)
TRAINMON=$BUILD/trainmon
FAKE=$(find -L "$BUILD" -maxdepth 3 -name 'libnvidia-ml.so.1' -path '*fake_nvml*' | head -1)
PY=/usr/bin/python3
[[ -x $TRAINMON ]] || { echo "no trainmon binary in $BUILD" >&2; exit 2; }
[[ -n $FAKE ]] || { echo "no fake libnvidia-ml.so.1 in $BUILD (build the fake_nvml target)" >&2; exit 2; }
for c in prometheus promtool curl; do
  command -v $c >/dev/null || { echo "$c is not installed (apt-get install prometheus curl)" >&2; exit 2; }
done
TMP=$(mktemp -d)
PROM_PID=
cleanup() {
  [[ -n $PROM_PID ]] && kill "$PROM_PID" 2>/dev/null && wait "$PROM_PID" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
TICK=$(getconf CLK_TCK)

free_port() {
  $PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# measure OUTFILE CMD... : runs CMD (stdout to OUTFILE); prints "wall_s cpu_s" (children's rusage).
measure() {
  local out=$1
  shift
  $PY - "$out" "$@" <<'EOF'
import resource, subprocess, sys, time
out, cmd = sys.argv[1], sys.argv[2:]
t0 = time.monotonic()
with open(out, "w") as f:
    subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
wall = time.monotonic() - t0
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{wall:.6f} {r.ru_utime + r.ru_stime:.6f}")
EOF
}

# oneshot ROWS CMD... : RUNS one-shot runs; sets OS_WALL_MS (median), OS_CPU_MS (mean), OS_OK (runs
# that drew ROWS GPU rows), OS_ERR (the last error top printed).
oneshot() {
  local want=$1 i w c walls=() cpus=()
  shift
  OS_OK=0 OS_ERR=
  for ((i = 0; i < RUNS; i++)); do
    read -r w c < <(measure "$TMP/oneshot.txt" "$@")
    walls+=("$w")
    cpus+=("$c")
    [[ $(grep -c '^\[' "$TMP/oneshot.txt" || true) == "$want" ]] && OS_OK=$((OS_OK + 1))
    e=$(grep -m1 '^trainmon top:' "$TMP/oneshot.txt" | sed -E 's/^trainmon top: Prometheus [^ ]*: //' || true)
    [[ -n $e ]] && OS_ERR=$e
  done
  OS_WALL_MS=$(printf '%s\n' "${walls[@]}" | sort -g | awk '{ a[NR] = $1 } END { printf "%.1f", a[int((NR + 1) / 2)] * 1000 }')
  OS_CPU_MS=$(printf '%s\n' "${cpus[@]}" | awk '{ s += $1 } END { printf "%.1f", s / NR * 1000 }')
  OS_OUT=$TMP/oneshot.txt
}

# loop CMD... : one run of FRAMES frames; sets LP_WALL_MS, LP_CPU_MS per frame.
loop() {
  local w c
  read -r w c < <(measure "$TMP/loop.txt" "$@" -n "$FRAMES" -i 0.1)
  LP_WALL_MS=$(awk -v w="$w" -v n="$FRAMES" 'BEGIN { printf "%.1f", w / n * 1000 }')
  LP_CPU_MS=$(awk -v c="$c" -v n="$FRAMES" 'BEGIN { printf "%.1f", c / n * 1000 }')
  LP_FAILED=$(grep -c '^trainmon top:' "$TMP/loop.txt" || true)
}

cpu_ticks() {  # utime + stime of PID, clock ticks
  awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"
}

# --- local top on the fake driver ----------------------------------------------------------------
LOCAL=(env XDG_STATE_HOME="$TMP/state" TRAINMON_NVML_LIBRARY="$FAKE"
  TRAINMON_FAKE_NVML_SCENARIO="$SRC/tests/scenarios/bench-8gpu-64proc.json" "$TRAINMON" top)
oneshot 8 "${LOCAL[@]}" -n 1
L_OS_WALL=$OS_WALL_MS L_OS_CPU=$OS_CPU_MS
[[ $OS_OK == "$RUNS" ]] || { echo "local top did not draw 8 GPU rows:" >&2; head -5 "$OS_OUT" >&2; exit 1; }
L_ROWS="$OS_OK/$RUNS x 8"
loop "${LOCAL[@]}"
L_LP_WALL=$LP_WALL_MS L_LP_CPU=$LP_CPU_MS

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1fx", a / b; else print "-" }'; }

ROWS_OUT=()
REPORT_OUT=()
for N in $SIZES; do
  D=$TMP/n$N
  mkdir -p "$D"
  END=$(($(date +%s) - 15))
  t0=$(date +%s.%N)
  $PY "$SRC/bench/cluster_history.py" "$N" 8 "$HISTORY_S" 15 "$END" "$JOB_NODES" >"$D/history.om"
  promtool tsdb create-blocks-from openmetrics "$D/history.om" "$D/data" >"$D/promtool.log" 2>&1 ||
    { cat "$D/promtool.log" >&2; exit 1; }
  SAMPLES=$(awk 'length($1) == 26 && $1 ~ /^[0-9A-Z]+$/ { s += $5 } END { print s + 0 }' "$D/promtool.log")
  SERIES=$(awk 'length($1) == 26 && $1 ~ /^[0-9A-Z]+$/ { if ($7 > s) s = $7 } END { print s + 0 }' "$D/promtool.log")
  rm -f "$D/history.om"
  FILL_S=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')
  PORT=$(free_port)
  printf 'global:\n  query_log_file: %s\n' "$D/query.log" >"$D/prometheus.yml"
  # Retention far beyond the history; the blocks' dir is the TSDB path, nothing scraped, no rules.
  prometheus --config.file="$D/prometheus.yml" --storage.tsdb.path="$D/data" \
    --storage.tsdb.retention.time=100y --web.listen-address="127.0.0.1:$PORT" >"$D/prometheus.log" 2>&1 &
  PROM_PID=$!
  URL=http://127.0.0.1:$PORT
  for ((i = 0; i < 100; i++)); do
    n=$(curl -s --max-time 5 "$URL/api/v1/query?query=count(DCGM_FI_DEV_GPU_UTIL)" |
      $PY -c 'import json, sys; r = json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)' \
        2>/dev/null || echo 0)
    [[ $n == $((N * 8)) ]] && break
    sleep 0.3
  done
  [[ $n == $((N * 8)) ]] || { echo "Prometheus on $URL sees $n GPUs, not $((N * 8))" >&2; tail -5 "$D/prometheus.log" >&2; exit 1; }
  : >"$D/query.log"
  oneshot $((N * 8)) "$TRAINMON" top --prometheus "$URL" -n 1
  C_OS_WALL=$OS_WALL_MS C_OS_CPU=$OS_CPU_MS
  P0=$(cpu_ticks "$PROM_PID")
  loop "$TRAINMON" top --prometheus "$URL"
  P1=$(cpu_ticks "$PROM_PID")
  C_LP_WALL=$LP_WALL_MS C_LP_CPU=$LP_CPU_MS
  drawn="$OS_OK/$RUNS x $((N * 8)), frames failed $LP_FAILED/$FRAMES"
  [[ -n $OS_ERR ]] && drawn="$drawn (1shot: $OS_ERR)"
  P_CPU=$(awk -v a="$P0" -v b="$P1" -v t="$TICK" -v n="$FRAMES" 'BEGIN { printf "%.0f", (b - a) / t / n * 1000 }')
  # The frame query (the one with "trainmon_m"): Prometheus' execution time, median over the runs.
  Q_MS=$($PY - "$D/query.log" <<'EOF'
import json, statistics, sys
t = []
for line in open(sys.argv[1]):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if "trainmon_m" in e.get("params", {}).get("query", ""):
        t.append(e.get("stats", {}).get("timings", {}).get("execTotalTime", 0) * 1000)
print(f"{statistics.median(t):.0f}" if t else "-")
EOF
)
  BYTES=$(curl -s --max-time 30 -o /dev/null -w '%{size_download}' --compressed -H 'Accept-Encoding: gzip' \
    --data-urlencode "query=$($PY - "$D/query.log" <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    q = json.loads(line).get("params", {}).get("query", "")
    if "trainmon_m" in q:
        print(q)
        break
EOF
)" "$URL/api/v1/query")
  # top --job: one job's nodes, picked inside the query
  JG=$((JOB_NODES < N ? JOB_NODES * 8 : N * 8))
  oneshot "$JG" "$TRAINMON" top --prometheus "$URL" --job 5000 -n 1
  J_OS_WALL=$OS_WALL_MS
  [[ $OS_OK == "$RUNS" ]] || J_OS_WALL="$J_OS_WALL (drew $JG GPUs $OS_OK/$RUNS)"
  # the job report: job 5000's whole history
  : >"$D/query.log"
  P0=$(cpu_ticks "$PROM_PID")
  walls=() cpus=()
  for ((i = 0; i < REPORT_RUNS; i++)); do
    read -r w c < <(measure "$TMP/report.txt" "$TRAINMON" report --prometheus "$URL" --job 5000 -o "$D/job.html")
    walls+=("$w")
    cpus+=("$c")
  done
  P1=$(cpu_ticks "$PROM_PID")
  R_WALL=$(printf '%s\n' "${walls[@]}" | sort -g | awk '{ a[NR] = $1 } END { printf "%.0f", a[int((NR + 1) / 2)] * 1000 }')
  R_CPU=$(printf '%s\n' "${cpus[@]}" | awk '{ s += $1 } END { printf "%.0f", s / NR * 1000 }')
  R_PCPU=$(awk -v a="$P0" -v b="$P1" -v t="$TICK" -v n="$REPORT_RUNS" 'BEGIN { printf "%.0f", (b - a) / t / n * 1000 }')
  R_Q=$($PY - "$D/query.log" "$REPORT_RUNS" <<'EOF'
import json, sys
t = 0
for line in open(sys.argv[1]):
    try:
        t += json.loads(line).get("stats", {}).get("timings", {}).get("execTotalTime", 0)
    except ValueError:
        pass
print(f"{t * 1000 / int(sys.argv[2]):.0f}")
EOF
)
  R_HOLDS=$($PY - "$D/job.html" "$TMP/report.txt" <<'EOF'
import json, os, re, sys
try:
    html = open(sys.argv[1]).read()
    m = json.loads(re.search(r'id="trainmon-data">(.*?)</script>', html, re.S).group(1))
    j = m["job"]
    print(f'{os.path.getsize(sys.argv[1]) // 1024} {len(j["nodes"])} nodes, {j["gpus"]} GPUs, '
          f'{len((m.get("train") or {}).get("ranks", []))} ranks, {len(m["x"])} points, {len(m["charts"])} charts')
except (OSError, AttributeError, ValueError, KeyError):
    print("- failed: " + open(sys.argv[2]).read().strip()[:200])
EOF
)
  REPORT_OUT+=("$(printf '%-20s %9s %10s %10s %11s %11s %9s  %s' "$N x 8 (${HISTORY_S}s)" "$J_OS_WALL" "$R_WALL" \
    "$R_CPU" "$R_Q" "$R_PCPU" "${R_HOLDS%% *}" "${R_HOLDS#* }")")
  kill "$PROM_PID" && wait "$PROM_PID" 2>/dev/null || true
  PROM_PID=
  ROWS_OUT+=("$(printf '%-20s %8s %10s %6s %9s %9s %9s %9s %9s %9s %8s  %s' "$N x 8 (${HISTORY_S}s)" \
    "$SERIES" "$SAMPLES" "$FILL_S" "$C_OS_WALL" "$C_OS_CPU" "$C_LP_WALL" "$C_LP_CPU" "$Q_MS" "$P_CPU" \
    "$((BYTES / 1024))" "$drawn")")
  ROWS_OUT+=("$(printf '%-20s %8s %10s %6s %9s %9s %9s %9s' "  / local top" "" "" "" \
    "$(ratio "$C_OS_WALL" "$L_OS_WALL")" "$(ratio "$C_OS_CPU" "$L_OS_CPU")" \
    "$(ratio "$C_LP_WALL" "$L_LP_WALL")" "$(ratio "$C_LP_CPU" "$L_LP_CPU")")")
done

printf '%-20s %8s %10s %6s %9s %9s %9s %9s %9s %9s %8s  %s\n' "nodes x GPUs" "series" "samples" "fill s" \
  "1shot ms" "1shot cpu" "frame ms" "frame cpu" "prom q ms" "prom cpu" "gz KiB" "drew all GPUs"
printf '%-20s %8s %10s %6s %9s %9s %9s %9s %9s %9s %8s  %s\n' "local top, fake 8" "" "" "" \
  "$L_OS_WALL" "$L_OS_CPU" "$L_LP_WALL" "$L_LP_CPU" "" "" "" "$L_ROWS"
printf '%s\n' "${ROWS_OUT[@]}"
printf '1shot: top -n 1, median wall / mean CPU of %s runs (start-up included); frame: -n %s -i 0.1, per frame\n' \
  "$RUNS" "$FRAMES"
printf '(wall at least 0.1 s); prom q: Prometheus execTotalTime of the frame query (median); prom cpu: its CPU ms\n'
printf 'per frame; gz KiB: the answer, gzip; load average %s, %s CPUs\n' "$(cut -d' ' -f1-3 /proc/loadavg)" "$(nproc)"
printf '\n%-20s %9s %10s %10s %11s %11s %9s  %s\n' "nodes x GPUs" "--job ms" "report ms" "report cpu" \
  "prom q ms" "prom cpu ms" "html KiB" "the report holds (job 5000, jobs of $JOB_NODES nodes)"
printf '%s\n' "${REPORT_OUT[@]}"
printf -- '--job: top --prometheus --job 5000 -n 1, median wall; report: report --prometheus --job 5000, median wall /\n'
printf 'mean CPU of %s runs; prom q: execTotalTime of its queries, summed, per report; prom cpu: per report\n' \
  "$REPORT_RUNS"
