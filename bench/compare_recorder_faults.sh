#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Recorder loss under SIGKILL and under a 7 s lock, and the cost of the WAL fsync cadence
# (bench/recorder_faults.py has the details). Needs strace for the cadence rows.
# Usage: bench/compare_recorder_faults.sh BUILD_DIR [BASELINE_TRAINMON]   (TRIALS=5 by default)
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/recorder_faults.py" "$@"
