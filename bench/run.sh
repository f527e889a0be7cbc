#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Build the release preset and run every benchmark: the Google Benchmark binaries (bench_*.cpp),
# the side-by-side comparison scripts (compare_*.sh) and train_overhead.py (a real job bare and under
# `trainmon run`), each printing its own table.
#   bench/run.sh              everything
#   bench/run.sh host gpu     only benchmarks whose name contains one of the words
# Needs the bench tools: scripts/setup.sh --bench
set -uo pipefail
cd "$(dirname "$0")/.."
cmake --preset release >/dev/null && cmake --build --preset release >/dev/null || exit 1
build=$PWD/build/release
filters=("$@")
want() {
  ((${#filters[@]} == 0)) && return 0
  for f in "${filters[@]}"; do [[ "$1" == *"$f"* ]] && return 0; done
  return 1
}
status=0
for exe in "$build"/bench/bench_*; do
  [ -x "$exe" ] || continue
  name=$(basename "$exe")
  want "$name" || continue
  echo "=== $name"
  "$exe" --benchmark_min_time=0.2 --benchmark_counters_tabular=true || status=1
  echo
done
for script in bench/compare_*.sh; do
  [ -f "$script" ] || continue
  name=$(basename "$script" .sh)
  want "$name" || continue
  echo "=== $name"
  bash "$script" "$build" || status=1
  echo
done
# A real job bare and under `trainmon run`, interleaved (issue 30's 1 % budget): its own script.
if want train_overhead; then
  echo "=== train_overhead"
  /usr/bin/python3 bench/train_overhead.py --build "$build" || status=1
  echo
fi
exit $status
