#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Build and run every test (unit, end-to-end, Python), once normally and once under
# AddressSanitizer + UBSan. Warnings are errors. Exits non-zero on any failure.
#   scripts/test.sh            both passes
#   scripts/test.sh release    one pass (release | dev | asan)
# Compiles go through ccache (scripts/setup.sh installs it; CMakeLists.txt, TRAINMON_CCACHE), so a
# second clone on the same machine reuses the first one's objects. Each phase's time is printed at
# the end, so that a slower build or test pass shows in CI's log.
set -euo pipefail
cd "$(dirname "$0")/.."
presets=("${@:-release asan}")
read -r -a presets <<<"${presets[*]}"
jobs=$(nproc 2>/dev/null || echo 2)
phases=()
phase() {  # phase NAME COMMAND...: run it, remember its wall time
  local name=$1 start=$SECONDS
  shift
  "$@"
  phases+=("$(printf '%-22s %5d s' "$name" $((SECONDS - start)))")
}
report() {
  echo "=== phase times"
  printf '  %s\n' "${phases[@]}"
  if command -v ccache >/dev/null 2>&1; then ccache --show-stats 2>/dev/null | grep -iE 'hits|misses' | sed 's/^/  ccache: /' || true; fi
}
trap report EXIT
for preset in "${presets[@]}"; do
  echo "=== test pass: $preset"
  phase "$preset configure" cmake --preset "$preset" >/dev/null
  phase "$preset build" cmake --build --preset "$preset" -j "$jobs"
  phase "$preset tests" ctest --preset "$preset" -j "$jobs"
done
echo "all test passes green: ${presets[*]}"
