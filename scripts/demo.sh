#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The built-in demo: no GPU needed. trainmon loads the fake NVML driver (a real libnvidia-ml.so.1
# built from tests/fake_nvml/) playing a bundled scenario, through its real dlopen loader, and
# watches a real PyTorch training job (examples/train_cnn.py, CPU) under `trainmon run`.
#   scripts/demo.sh [SCENARIO]   (default: healthy-1gpu; see tests/scenarios/)
set -euo pipefail
cd "$(dirname "$0")/.."
build=build/release
scenario=${1:-healthy-1gpu}
tm=$PWD/$build/trainmon
[ -x "$tm" ] || { echo "demo: $build/trainmon missing; run scripts/setup.sh first" >&2; exit 1; }
export TRAINMON_NVML_LIBRARY=$PWD/$build/fake_nvml/libnvidia-ml.so.1
export TRAINMON_FAKE_NVML_SCENARIO=$PWD/tests/scenarios/$scenario.json
[ -f "$TRAINMON_FAKE_NVML_SCENARIO" ] || { echo "demo: no scenario $scenario" >&2; exit 1; }
# Keep the demo's recordings apart from the user's own store.
export TRAINMON_DB=${TRAINMON_DB:-$PWD/build/demo.db}

echo "== trainmon status (gpustat's job) on fake GPUs: $scenario"
"$tm" status
echo
echo "== trainmon query (nvidia-smi --query-gpu compatible)"
"$tm" query --query-gpu=index,name,utilization.gpu,memory.used,memory.total,power.draw,temperature.gpu --format=csv
echo
echo "== trainmon run: a real PyTorch CNN (3 epochs, 2 DataLoader workers), timed by the zero-code hook, watched and recorded"
"$tm" run --name demo-cnn --print-every 2 -- /usr/bin/python3 examples/train_cnn.py --steps 150 --epochs 3 --workers 2
echo
# The same job reading its images from a "slow disk" (4 ms per image): the DataLoader starves the
# loop. The measured data-wait finding (D25) needs 120 s by default; a 6-s demo shortens its window.
short=(--threshold data_wait_for_s=4 --threshold window_s=4)
echo "== trainmon run: the same CNN on a slow disk (--io-ms 4): the loop waits for data (thresholds shortened for a short demo: ${short[*]})"
"$tm" run --name demo-slow-disk --print-every 2 "${short[@]}" -- /usr/bin/python3 examples/train_cnn.py --steps 150 --epochs 3 --workers 2 --io-ms 4
echo
echo "== trainmon runs / diagnose last (database: $TRAINMON_DB)"
"$tm" runs
"$tm" diagnose last "${short[@]}"
echo
echo "== trainmon report last --format md (the HTML report's path is in the run's summary above)"
"$tm" report last --format md
echo
# Two DDP ranks over gloo where rank 1 computes twice as long each step: in a synchronous job both
# ranks' steps last as long (the step times alone tell nothing); the collective wait tells them apart.
# D24 holds for 60 s by default; a 25-s demo shortens its window and hold.
ddp=(--threshold straggler_window_s=6 --threshold straggler_compute_for_s=6)
echo "== trainmon run: a 2-rank DistributedDataParallel job, rank 1 computes 2x longer (thresholds shortened: ${ddp[*]})"
"$tm" run --name demo-ddp-straggler --print-every 5 "${ddp[@]}" -- /usr/bin/python3 examples/train_ddp.py --ranks 2 --steps 450 --slow-rank 1 --slow-factor 2
"$tm" diagnose last "${ddp[@]}"
