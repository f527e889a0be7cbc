#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Build and run every test (unit, end-to-end, Python), once normally and once under
# AddressSanitizer + UBSan. Warnings are errors. Exits non-zero on any failure.
#   scripts/test.sh            both passes
#   scripts/test.sh release    one pass (release | dev | asan)
set -euo pipefail
cd "$(dirname "$0")/.."
presets=("${@:-release asan}")
read -r -a presets <<<"${presets[*]}"
jobs=$(nproc 2>/dev/null || echo 2)
for preset in "${presets[@]}"; do
  echo "=== test pass: $preset"
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j "$jobs"
  ctest --preset "$preset" -j "$jobs"
done
echo "all test passes green: ${presets[*]}"
