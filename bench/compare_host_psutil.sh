#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Compares the CPU cost of one full host snapshot (every process + memory + per-CPU times) between
# trainmon's HostCollector and psutil, on the same generated /proc tree of 1,000 processes.
# Usage: bench/compare_host_psutil.sh [BUILD_DIR] [ITERATIONS]     (default build/host-release, 200)
# Both sides are measured as process CPU time (user + system) over N snapshots, after one warm-up
# snapshot, excluding interpreter / program start-up.
set -euo pipefail
BUILD=${1:-build/host-release}
N=${2:-200}
BENCH="$BUILD/bench/bench_host"
[ -x "$BENCH" ] || BENCH="$BUILD/bench_host"
[ -x "$BENCH" ] || { echo "bench_host not found under $BUILD (build the bench target first)" >&2; exit 2; }
TREE=$(mktemp -d "${TMPDIR:-/tmp}/trainmon-psutil-XXXXXX")
trap 'rm -rf "$TREE"' EXIT
"$BENCH" --generate-tree="$TREE" --processes=1000 --cpus=32

read -r TM_US TM_N < <("$BENCH" --cpu-time="$TREE" --iterations="$N")

read -r PS_US PS_N < <(/usr/bin/python3 - "$TREE/proc" "$N" <<'PY'
import resource, sys
import psutil
psutil.PROCFS_PATH = sys.argv[1]
n = int(sys.argv[2])
ATTRS = ["memory_info", "cpu_times", "status", "ppid", "create_time", "uids", "username", "cmdline",
         "num_threads", "io_counters"]

def snapshot():
    psutil.virtual_memory()
    psutil.cpu_times(percpu=True)
    procs = []
    for p in psutil.process_iter():
        # One oneshot() per process, as psutil recommends for reading several fields.
        with p.oneshot():
            d = {}
            for a in ATTRS:
                try:
                    d[a] = getattr(p, a)()
                except (psutil.AccessDenied, psutil.ZombieProcess, psutil.NoSuchProcess, AttributeError):
                    d[a] = None
            procs.append(d)
    return procs

procs = snapshot()  # warm-up
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
t0 = cpu()
for _ in range(n):
    procs = snapshot()
t1 = cpu()
print(f"{(t1 - t0) * 1e6 / n:.1f} {len(procs)}")
PY
)

printf '%-34s %14s %10s\n' "host snapshot, 1000 processes" "µs/snapshot" "processes"
printf '%-34s %14s %10s\n' "trainmon (HostCollector)" "$TM_US" "$TM_N"
printf '%-34s %14s %10s\n' "psutil $(/usr/bin/python3 -c 'import psutil; print(psutil.__version__)')" "$PS_US" "$PS_N"
awk -v a="$PS_US" -v b="$TM_US" 'BEGIN { r = a / b; printf "%-34s %13.1fx %10s\n", "ratio psutil / trainmon", r, (r >= 10 ? "target met (>=10x)" : "below the 10x target") }'
