#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Report speed on a long run: a synthetic 3-day x 8-GPU run at 1 s (bench/report_synth_run.cpp)
# in a store; `trainmon report` timed for HTML, Markdown and JSON; the HTML opened in headless
# Chromium (tests/e2e/browser/report_check.mjs) and the page's own chart-creation time
# (performance.now() around it, window.trainmonReport.renderMs) read over several loads.
# Usage: bench/compare_report_render.sh BUILD_DIR [HOURS=72] [GPUS=8]
# Targets (issue 8): browser render < 2 s.
set -euo pipefail
build="${1:?usage: $0 BUILD_DIR [HOURS] [GPUS]}"
hours="${2:-72}"
gpus="${3:-8}"
src="$(cd "$(dirname "$0")/.." && pwd)"
bin="${TRAINMON_BIN:-$build/trainmon}"
gen="$build/bench/report_synth_run"
for f in "$bin" "$gen"; do
  [[ -x "$f" ]] || { echo "missing: $f (build the trainmon and report_synth_run targets)" >&2; exit 1; }
done
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", b - a}'; }
t0=$(now)
id=$("$gen" "$tmp/runs.db" "$hours" "$gpus")
t1=$(now)
db_mb=$(awk -v b="$(stat -c %s "$tmp/runs.db")" 'BEGIN{printf "%.1f", b/1e6}')
t2=$(now); "$bin" report "$id" --db "$tmp/runs.db" -o "$tmp/report.html" >/dev/null; t3=$(now)
"$bin" report "$id" --db "$tmp/runs.db" --format md -o "$tmp/report.md" >/dev/null; t4=$(now)
"$bin" report "$id" --db "$tmp/runs.db" --format json -o "$tmp/report.json" >/dev/null; t5=$(now)
html_mb=$(awk -v b="$(stat -c %s "$tmp/report.html")" 'BEGIN{printf "%.2f", b/1e6}')
render="n/a (no /usr/bin/chromium or web/node_modules/playwright-core)"
charts="?"
if [[ -x /usr/bin/chromium && -d "$src/web/node_modules/playwright-core" ]]; then
  out=$(REPEAT=3 node "$src/tests/e2e/browser/report_check.mjs" "$tmp/report.html" "$tmp/report.png")
  read -r render charts < <(/usr/bin/python3 -c '
import json, statistics, sys
r = json.loads(sys.stdin.read().strip().splitlines()[-1])
ms = [r["renderMs"]] + r["reloads"]
print(f"{statistics.median(ms):.0f}ms(median-of-{len(ms)};first={ms[0]:.0f}ms)", len(r["charts"]))' <<<"$out")
fi
printf '\n%-44s %s\n' "report render, ${hours} h x ${gpus} GPUs at 1 s" "value"
printf '%-44s %s\n' "--------------------------------------------" "------------------------------"
printf '%-44s %s s (%s MB store)\n' "synthesize the run (report_synth_run)" "$(secs "$t0" "$t1")" "$db_mb"
printf '%-44s %s s\n' "trainmon report (html)" "$(secs "$t2" "$t3")"
printf '%-44s %s s\n' "trainmon report --format md" "$(secs "$t3" "$t4")"
printf '%-44s %s s\n' "trainmon report --format json" "$(secs "$t4" "$t5")"
printf '%-44s %s MB\n' "HTML size" "$html_mb"
printf '%-44s %s\n' "charts" "$charts"
printf '%-44s %s   (target < 2000 ms)\n' "browser render (chart creation, Chromium)" "$render"
