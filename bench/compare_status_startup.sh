#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Start-up cost of `trainmon status` (8 fake GPUs) against a bare Python start-up (what gpustat pays
# before doing anything). Usage: bench/compare_status_startup.sh BUILD_DIR
# Target: trainmon under half of `python3 -c pass`.
set -euo pipefail
build="${1:?usage: $0 BUILD_DIR}"
src="$(cd "$(dirname "$0")/.." && pwd)"
bin="${TRAINMON_BIN:-$build/trainmon}"
fake="$build/fake_nvml/libnvidia-ml.so.1"
scenario="$src/tests/scenarios/ddp-8gpu-healthy.json"
for f in "$bin" "$fake" "$scenario"; do
  [[ -e "$f" ]] || { echo "missing: $f" >&2; exit 1; }
done
command -v hyperfine >/dev/null || { echo "hyperfine not installed" >&2; exit 1; }
export TRAINMON_NVML_LIBRARY="$fake" TRAINMON_FAKE_NVML_SCENARIO="$scenario" TRAINMON_FAKE_NVML_TIME_S=60
json="$(mktemp)"
trap 'rm -f "$json"' EXIT
hyperfine -N --warmup 5 --runs 50 --export-json "$json" \
  -n trainmon-status "$bin status --no-color" \
  -n python-startup "/usr/bin/python3 -c pass" >/dev/null
/usr/bin/python3 - "$json" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
t, p = r["trainmon-status"], r["python-startup"]
print(f"{'command':<24}{'mean ms':>10}{'stddev ms':>12}{'min ms':>10}")
for name, x in (("trainmon status (8 GPUs)", t), ("python3 -c pass", p)):
    print(f"{name:<24}{x['mean']*1e3:>10.2f}{x['stddev']*1e3:>12.2f}{x['min']*1e3:>10.2f}")
ratio = t["mean"] / p["mean"]
print(f"ratio trainmon/python: {ratio:.2f} (target < 0.50: {'met' if ratio < 0.5 else 'NOT met'})")
PY
