#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The built-in demo: no GPU needed. trainmon loads the fake NVML driver (a real libnvidia-ml.so.1
# built from tests/fake_nvml/) playing a bundled scenario, through its real dlopen loader.
#   scripts/demo.sh [SCENARIO]   (default: ddp-8gpu-healthy; see tests/scenarios/)
set -euo pipefail
cd "$(dirname "$0")/.."
build=build/release
scenario=${1:-ddp-8gpu-healthy}
[ -x "$build/trainmon" ] || { echo "demo: $build/trainmon missing; run scripts/setup.sh first" >&2; exit 1; }
export TRAINMON_NVML_LIBRARY=$PWD/$build/fake_nvml/libnvidia-ml.so.1
export TRAINMON_FAKE_NVML_SCENARIO=$PWD/tests/scenarios/$scenario.json
[ -f "$TRAINMON_FAKE_NVML_SCENARIO" ] || { echo "demo: no scenario $scenario" >&2; exit 1; }

echo "== trainmon status (gpustat's job) on fake GPUs: $scenario"
"$build/trainmon" status
echo
echo "== trainmon query (nvidia-smi --query-gpu compatible)"
"$build/trainmon" query --query-gpu=index,name,utilization.gpu,memory.used,memory.total,power.draw,temperature.gpu --format=csv
