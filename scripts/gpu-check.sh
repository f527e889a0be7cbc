#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# trainmon next to nvidia-smi on a machine with a real NVIDIA driver: the same views from both, and
# a field-by-field table of what is equal, what differs and what trainmon cannot read.
#
# Usage:
#   scripts/gpu-check.sh [-t TRAINMON] [-s NVIDIA_SMI] [-o OUTDIR] [--loop-s SEC] [--no-torch]
#   scripts/gpu-check.sh --bundle DIR     # copy trainmon, its plugin, their libraries, its message
#                                         # catalogues and this script into DIR
#
# Needs bash, coreutils and awk only; python3 (any version, standard library) adds the
# `status --json` against `nvidia-smi -q -x` section, python3 with a CUDA PyTorch adds the step-time
# section. Nothing is installed: where no package can be installed, build here, run `--bundle DIR`,
# carry DIR over and run DIR/gpu-check.sh there (DIR/trainmon starts the binary with the loader and
# libraries it was built with, so the other machine's libraries do not matter; NVML still comes from
# that machine's driver).
#
# Sections (each row: section, gpu, field, nvidia-smi's value, trainmon's value, verdict):
#   query   every --query-gpu field nvidia-smi's --help-query-gpu lists, one query per tool;
#           nvidia-smi is read before and after trainmon, so a reading that moves (power,
#           temperatures, clocks ...) is `close` when trainmon's value lies between the two reads
#   header  the --query-gpu CSV header (names and units) of the same fields
#   list    `-L` line by line
#   dmon    header lines, then each column of the last sample (readings: `close` within 10 % or 3)
#   pmon    header lines, then the processes seen (gpu, pid, type, command)
#   status  `status --json` against `nvidia-smi -q -x` (name, uuid, memory, temperature, power ...)
#   train   median step time of a short PyTorch CUDA loop alone and under `trainmon run --interval 1`
#   coll    a CUDA all_reduce's time from the collective hook's CUDA events against the wall time
# Verdicts: equal; close (a moving reading, see above); different; unsupported (trainmon prints N/A
# where nvidia-smi has a value). Exit status: 0 nothing different, 1 something different, 2 usage
# or setup error. Every raw output is kept under OUTDIR.
set -u

SMI=${NVIDIA_SMI:-nvidia-smi}
TM=${TRAINMON:-}
OUT=
LOOP_S=10
TORCH=1
BUNDLE=

usage() { sed -n '5,8p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    -t) TM=$2; shift 2 ;;
    -s) SMI=$2; shift 2 ;;
    -o) OUT=$2; shift 2 ;;
    --loop-s) LOOP_S=$2; shift 2 ;;
    --no-torch) TORCH=0; shift ;;
    --bundle) BUNDLE=$2; shift 2 ;;
    -h|--help) usage ;;
    *) echo "gpu-check: unknown option $1" >&2; usage ;;
  esac
done

HERE=$(cd "$(dirname "$0")" && pwd)

# ---- --bundle: the binary with its own loader and libraries ------------------------------------
if [ -n "$BUNDLE" ]; then
  BIN=${TM:-$HERE/../build/release/trainmon}
  [ -x "$BIN" ] || { echo "gpu-check: no trainmon binary at $BIN (-t PATH)" >&2; exit 2; }
  # serve's HTTP server plugin: next to the binary in a build tree, in ../lib/trainmon installed.
  # In the bundle it lies in lib/, next to the loader that runs trainmon.bin (/proc/self/exe).
  PLUGIN=$(dirname "$BIN")/trainmon-http.so
  [ -f "$PLUGIN" ] || PLUGIN=$(dirname "$BIN")/../lib/trainmon/trainmon-http.so
  [ -f "$PLUGIN" ] || { echo "gpu-check: no trainmon-http.so next to $BIN (serve's plugin)" >&2; exit 2; }
  mkdir -p "$BUNDLE/lib" || exit 2
  cp "$BIN" "$BUNDLE/lib/trainmon.bin" || exit 2
  cp "$PLUGIN" "$BUNDLE/lib/trainmon-http.so" || exit 2
  loader=
  while read -r lib; do
    [ -n "$lib" ] || continue
    cp -L "$lib" "$BUNDLE/lib/" || exit 2
    case "$lib" in */ld-linux*) loader=$(basename "$lib") ;; esac
  done < <( (ldd "$BIN"; ldd "$PLUGIN") | awk '/=>/ && $3 ~ /^\// {print $3} /^\t\/.*ld-linux/ {print $1}' | sort -u)
  [ -n "$loader" ] || { echo "gpu-check: no ELF loader in ldd $BIN" >&2; exit 2; }
  # The compiled message catalogues (--lang zh_CN, docs/language.md): <build>/locale next to the
  # binary, or <prefix>/share/locale installed. In the bundle they lie in lib/locale, next to the
  # loader (/proc/self/exe), where trainmon looks first after $TRAINMON_LOCALEDIR.
  LOCALES=$(dirname "$BIN")/locale
  [ -d "$LOCALES" ] || LOCALES=$(dirname "$BIN")/../share/locale
  found=0
  for mo in "$LOCALES"/*/LC_MESSAGES/trainmon.mo; do
    [ -f "$mo" ] || continue
    lang=$(basename "$(dirname "$(dirname "$mo")")")
    mkdir -p "$BUNDLE/lib/locale/$lang/LC_MESSAGES" || exit 2
    cp "$mo" "$BUNDLE/lib/locale/$lang/LC_MESSAGES/trainmon.mo" || exit 2
    found=$((found + 1))
  done
  [ "$found" -gt 0 ] || echo "gpu-check: no message catalogue near $BIN: the bundle speaks English only" >&2
  cat > "$BUNDLE/trainmon" <<EOF
#!/bin/sh
# trainmon with the loader and libraries it was built with (scripts/gpu-check.sh --bundle).
d=\$(cd "\$(dirname "\$0")" && pwd)
# the catalogues for the job's Python package too (trainmon run passes the environment on)
TRAINMON_LOCALEDIR=\${TRAINMON_LOCALEDIR:-\$d/lib/locale}
export TRAINMON_LOCALEDIR
exec "\$d/lib/$loader" --library-path "\$d/lib" "\$d/lib/trainmon.bin" "\$@"
EOF
  chmod +x "$BUNDLE/trainmon"
  cp "$0" "$BUNDLE/gpu-check.sh"
  echo "gpu-check: bundle in $BUNDLE ($(du -sh "$BUNDLE" | cut -f1)); run $BUNDLE/gpu-check.sh there"
  exit 0
fi

if [ -z "$TM" ]; then
  if [ -x "$HERE/trainmon" ]; then TM=$HERE/trainmon
  elif [ -x "$HERE/../build/release/trainmon" ]; then TM=$HERE/../build/release/trainmon
  else TM=trainmon; fi
fi
command -v "$SMI" >/dev/null 2>&1 || { echo "gpu-check: $SMI not found (-s PATH)" >&2; exit 2; }
command -v "$TM" >/dev/null 2>&1 || { echo "gpu-check: $TM not found (-t PATH)" >&2; exit 2; }
OUT=${OUT:-$(mktemp -d /tmp/gpu-check.XXXXXX)}
mkdir -p "$OUT" || exit 2
ROWS=$OUT/rows.tsv
: > "$ROWS"

row() { printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >> "$ROWS"; }

# ---- versions ----------------------------------------------------------------------------------
"$SMI" --version > "$OUT/smi-version.txt" 2>&1
"$TM" --version > "$OUT/trainmon-version.txt" 2>&1
"$SMI" -L > "$OUT/smi-L.txt" 2>&1
"$TM" query -L > "$OUT/trainmon-L.txt" 2>&1

# ---- query: every field of nvidia-smi's --help-query-gpu ---------------------------------------
"$SMI" --help-query-gpu > "$OUT/help-query-gpu.txt" 2>&1 || { echo "gpu-check: $SMI --help-query-gpu failed" >&2; exit 2; }
FIELDS=$(grep -E '^"[A-Za-z0-9_.]+"( or "[A-Za-z0-9_.]+")*$' "$OUT/help-query-gpu.txt" | sed 's/^"\([^"]*\)".*/\1/' | paste -sd, -)
[ -n "$FIELDS" ] || { echo "gpu-check: no field names in $SMI --help-query-gpu" >&2; exit 2; }
echo "$FIELDS" | tr , '\n' > "$OUT/fields.txt"
"$SMI" --query-gpu="$FIELDS" --format=csv,noheader > "$OUT/smi-query-1.csv" 2>&1
"$TM" query --query-gpu="$FIELDS" --format=csv,noheader > "$OUT/trainmon-query.csv" 2>&1
tm_rc=$?
"$SMI" --query-gpu="$FIELDS" --format=csv,noheader > "$OUT/smi-query-2.csv" 2>&1
"$SMI" --query-gpu="$FIELDS" --format=csv > "$OUT/smi-header.csv" 2>&1
"$TM" query --query-gpu="$FIELDS" --format=csv > "$OUT/trainmon-header.csv" 2>&1
[ $tm_rc -eq 0 ] || row query - "(all fields)" "exit 0" "exit $tm_rc: $(head -c 200 "$OUT/trainmon-query.csv" | tr '\n\t' '  ')" different

# One row per (gpu line, field); moving readings compare against the two nvidia-smi reads.
awk -F', ' -v OFS='\t' -v fields="$OUT/fields.txt" '
  function na(v) { return v ~ /^\[.*\]$/ || v == "N/A" }
  function num(v) { sub(/ [A-Za-z%\/]+$/, "", v); return (v ~ /^-?[0-9]+(\.[0-9]+)?$/) ? v + 0 : "x" }
  function unit(v) { return (match(v, / [A-Za-z%\/]+$/) ? substr(v, RSTART) : "") }
  BEGIN { n = 0; while ((getline f < fields) > 0) name[++n] = f
          moving = "^(timestamp|power\\.draw|module\\.power\\.draw|temperature\\.|utilization\\.|clocks\\.current\\.|clocks\\.(sm|mem|gr|video)$|clocks_event_reasons\\.|clocks_event_reasons_counters\\.|clocks_throttle_reasons\\.|memory\\.(used|free)|fan\\.speed|pstate|pcie\\.link\\.(gen|width)\\.(current|gpucurrent)|encoder\\.stats\\.|enc\\.|dec\\.|power_smoothing\\.)" }
  FILENAME == ARGV[1] { a[FNR] = $0; next }
  FILENAME == ARGV[2] { t[FNR] = $0; next }
  FILENAME == ARGV[3] { b[FNR] = $0; next }
  END {
    for (g = 1; g in a; g++) {
      na1 = split(a[g], s1, ", "); nt = split(t[g], tv, ", "); split(b[g], s2, ", ")
      if (na1 != n || nt != n) { print "query", g - 1, "(columns)", na1, nt, "different"; continue }
      for (i = 1; i <= n; i++) {
        x = s1[i]; y = tv[i]; z = s2[i]
        if (name[i] == "timestamp") continue
        if (y == x || y == z) v = "equal"
        else if (na(y) && !na(x)) v = "unsupported"
        else if (name[i] ~ moving && num(x) != "x" && num(y) != "x" && num(z) != "x" && unit(x) == unit(y)) {
          lo = num(x) < num(z) ? num(x) : num(z); hi = num(x) < num(z) ? num(z) : num(x)
          tol = (hi - lo) * 0.1 + (hi > 0 ? hi * 0.05 : 0) + 1
          v = (num(y) >= lo - tol && num(y) <= hi + tol) ? "close" : "different"
        } else if (name[i] ~ moving && x != z) v = "close"   # a word that changed between the reads
        else v = "different"
        print "query", g - 1, name[i], x, y, v
      }
    }
  }' "$OUT/smi-query-1.csv" "$OUT/trainmon-query.csv" "$OUT/smi-query-2.csv" >> "$ROWS"

h1=$(head -n1 "$OUT/smi-header.csv"); h2=$(head -n1 "$OUT/trainmon-header.csv")
awk -F', ' -v OFS='\t' -v t="$h2" 'NR == 1 { n = split($0, s); split(t, m)
  for (i = 1; i <= n; i++) print "header", "-", "column " i, s[i], m[i], (s[i] == m[i] ? "equal" : "different") }' \
  <<< "$h1" >> "$ROWS"

# ---- -L ----------------------------------------------------------------------------------------
paste -d '\t' "$OUT/smi-L.txt" "$OUT/trainmon-L.txt" | awk -F'\t' -v OFS='\t' \
  '{ print "list", "-", "line " NR, $1, $2, ($1 == $2 ? "equal" : "different") }' >> "$ROWS"

# ---- dmon / pmon: side by side, 3 samples ------------------------------------------------------
"$SMI" dmon -c 3 > "$OUT/smi-dmon.txt" 2>&1 &
"$TM" dmon -c 3 > "$OUT/trainmon-dmon.txt" 2>&1
wait
"$SMI" pmon -c 3 > "$OUT/smi-pmon.txt" 2>&1 &
"$TM" pmon -c 3 > "$OUT/trainmon-pmon.txt" 2>&1
wait
for m in dmon pmon; do
  for i in 1 2; do
    a=$(sed -n "${i}p" "$OUT/smi-$m.txt"); b=$(sed -n "${i}p" "$OUT/trainmon-$m.txt")
    row "$m" - "header line $i" "$a" "$b" "$([ "$a" = "$b" ] && echo equal || echo different)"
  done
done
# dmon: each column of each GPU's last row.
awk -v OFS='\t' '
  function close_enough(x, y) { d = x - y; if (d < 0) d = -d; m = (x > y ? x : y); return d <= 3 || d <= m * 0.1 }
  FNR == 1 { file++ }
  /^#/ { if (FNR == 1) hdr[file] = $0; next }
  { last[file, $1] = $0; gpus[$1] = 1 }
  END {
    n = split(hdr[1], col, " +")
    for (g in gpus) {
      split(last[1, g], x, " +"); split(last[2, g], y, " +")
      for (i = 3; i <= n; i++) {
        a = x[i - 1]; b = y[i - 1]
        if (a == b) v = "equal"
        else if (b == "-") v = "unsupported"
        else if (a ~ /^[0-9]+$/ && b ~ /^[0-9]+$/ && close_enough(a, b)) v = "close"
        else v = "different"
        print "dmon", g, col[i], a, b, v
      }
    }
  }' <(sed 's/^ *//; s/ *$//' "$OUT/smi-dmon.txt") <(sed 's/^ *//; s/ *$//' "$OUT/trainmon-dmon.txt") >> "$ROWS"
# pmon: the processes each tool saw (gpu pid type command), utilisation left out (it moves).
procs() { awk '!/^#/ && $2 != "-" { print $1, $2, $3, $NF }' "$1" | sort -u; }
procs "$OUT/smi-pmon.txt" > "$OUT/smi-pmon-procs.txt"
procs "$OUT/trainmon-pmon.txt" > "$OUT/trainmon-pmon-procs.txt"
join -a1 -a2 -e '(none)' -o 0,1.2,2.2 <(awk '{ print $1 ":" $2, $3 "/" $4 }' "$OUT/smi-pmon-procs.txt") \
  <(awk '{ print $1 ":" $2, $3 "/" $4 }' "$OUT/trainmon-pmon-procs.txt") 2>/dev/null |
  awk -v OFS='\t' '{ split($1, k, ":"); print "pmon", k[1], "pid " k[2], $2, $3, ($2 == $3 ? "equal" : "different") }' >> "$ROWS"

# ---- status --json against nvidia-smi -q -x ----------------------------------------------------
"$TM" status --json > "$OUT/trainmon-status.json" 2>&1
"$SMI" -q -x > "$OUT/smi-q.xml" 2>&1
if command -v python3 >/dev/null 2>&1; then
  python3 - "$OUT/smi-q.xml" "$OUT/trainmon-status.json" >> "$ROWS" <<'EOF'
import json, re, sys
import xml.etree.ElementTree as ET

def emit(gpu, field, a, b, verdict):
    print("\t".join(["status", str(gpu), field, str(a), str(b), verdict]))

try:
    doc = json.load(open(sys.argv[2]))
except ValueError as e:
    emit("-", "(trainmon status --json)", "", "not JSON: %s" % e, "different")
    sys.exit(0)
try:
    root = ET.parse(sys.argv[1]).getroot()
except ET.ParseError as e:  # this nvidia-smi gave no XML: nothing to compare against
    emit("-", "(nvidia-smi -q -x)", "no XML: %s" % e, "", "unsupported")
    sys.exit(0)

def text(node, *paths):
    """The first of `paths` the node has (tag names differ between drivers)."""
    for p in paths:
        n = node.find(p)
        if n is not None and n.text is not None:
            return n.text.strip()
    return None

def number(v):
    m = re.match(r"^\s*(-?[0-9]+(?:\.[0-9]+)?)", v or "")
    return float(m.group(1)) if m else None

def compare(gpu, field, smi, tm, moving=False):
    if smi is None:
        return
    if tm is None:
        emit(gpu, field, smi, "null", "unsupported" if number(smi) is not None or smi not in ("N/A",) else "equal")
        return
    a, b = number(smi), (tm if isinstance(tm, (int, float)) else number(str(tm)))
    if a is None or b is None:
        emit(gpu, field, smi, tm, "equal" if str(smi) == str(tm) else "different")
    elif int(a) == int(b) or (abs(a - b) < 1.0 and not moving):
        emit(gpu, field, smi, tm, "equal")
    elif moving and abs(a - b) <= max(3.0, 0.1 * max(abs(a), abs(b))):
        emit(gpu, field, smi, tm, "close")
    else:
        emit(gpu, field, smi, tm, "different")

compare("-", "driver_version", text(root, "driver_version"), doc.get("driver_version"))
gpus = root.findall("gpu")
for i, g in enumerate(gpus):
    tm = next((x for x in doc.get("gpus", []) if x.get("index") == i), None)
    if tm is None:
        emit(i, "(gpu)", text(g, "product_name"), "missing", "different")
        continue
    compare(i, "name", text(g, "product_name"), tm.get("name"))
    compare(i, "uuid", text(g, "uuid", "gpu_uuid"), tm.get("uuid"))
    compare(i, "memory.total", text(g, "fb_memory_usage/total"), tm.get("memory.total"))
    compare(i, "memory.used", text(g, "fb_memory_usage/used"), tm.get("memory.used"), moving=True)
    compare(i, "temperature.gpu", text(g, "temperature/gpu_temp", "temperature/gpu_current_temp"),
            tm.get("temperature.gpu"), moving=True)
    compare(i, "utilization.gpu", text(g, "utilization/gpu_util", "utilization/gpu"), tm.get("utilization.gpu"),
            moving=True)
    compare(i, "power.draw", text(g, "gpu_power_readings/power_draw", "gpu_power_readings/instant_power_draw",
                                  "gpu_power_readings/instantaneous_power_draw", "power_readings/power_draw"),
            tm.get("power.draw"), moving=True)
    compare(i, "enforced.power.limit", text(g, "gpu_power_readings/current_power_limit",
                                            "power_readings/enforced_power_limit"), tm.get("enforced.power.limit"))
    fan = text(g, "fan_speed")
    compare(i, "fan.speed", None if fan == "N/A" and tm.get("fan.speed") is None else fan, tm.get("fan.speed"),
            moving=True)
    smi_pids = sorted(int(p.text) for p in g.findall("processes/process_info/pid") if p.text and p.text.strip().isdigit())
    tm_pids = sorted(int(p["pid"]) for p in tm.get("processes", []))
    emit(i, "processes (pids)", " ".join(map(str, smi_pids)) or "none", " ".join(map(str, tm_pids)) or "none",
         "equal" if smi_pids == tm_pids else "different")
EOF
else
  row status - "(python3)" "" "" unsupported
fi

# ---- train: step time alone and under trainmon run ---------------------------------------------
TRAIN_NOTE=
if [ "$TORCH" = 1 ] && command -v python3 >/dev/null 2>&1 &&
   python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
  cat > "$OUT/loop.py" <<EOF
import statistics, sys, time
import torch
x = torch.randn(4096, 4096, device="cuda")
for _ in range(20):
    y = x @ x
torch.cuda.synchronize()
steps, end = [], time.perf_counter() + $LOOP_S
while time.perf_counter() < end:
    t = time.perf_counter()
    for _ in range(8):
        y = x @ x
    torch.cuda.synchronize()
    steps.append(time.perf_counter() - t)
print("%.4f %d" % (statistics.median(steps) * 1000, len(steps)))
EOF
  plain1=$(python3 "$OUT/loop.py" 2>>"$OUT/train.err")
  under1=$("$TM" run --interval 1 --no-report -q --db "$OUT/run.db" -- python3 "$OUT/loop.py" 2>>"$OUT/train.err")
  plain2=$(python3 "$OUT/loop.py" 2>>"$OUT/train.err")
  under2=$("$TM" run --interval 1 --no-report -q --db "$OUT/run.db" -- python3 "$OUT/loop.py" 2>>"$OUT/train.err")
  echo "plain $plain1 | $plain2; under trainmon run $under1 | $under2" > "$OUT/train.txt"
  p=$(printf '%s\n%s\n' "${plain1% *}" "${plain2% *}" | sort -n | head -n1)
  u=$(printf '%s\n%s\n' "${under1% *}" "${under2% *}" | sort -n | head -n1)
  if [ -n "$p" ] && [ -n "$u" ]; then
    ratio=$(awk -v p="$p" -v u="$u" 'BEGIN { printf "%.3f", u / p }')
    verdict=$(awk -v r="$ratio" 'BEGIN { print (r <= 1.02 ? "equal" : "different") }')
    row train - "median step ms (8 matmuls 4096^2)" "$p" "$u (x$ratio)" "$verdict"
  else
    row train - "median step ms" "${plain1:-failed}" "${under1:-failed}" different
  fi
  # coll: a CUDA all_reduce timed by the collective hook's CUDA events (docs/python.md "Collective
  # wait"), read with query() after a synchronize, against the host's wall time around the same calls
  # and that synchronize (one rank, NCCL; 10 calls of 256 MiB)
  cat > "$OUT/coll.py" <<'EOF'
import os, sys, tempfile, time
import torch
import torch.distributed as dist
from trainmon import _collectives, _timing
if _collectives.installed() is None:
    print("not-installed"); sys.exit(0)
dist.init_process_group("nccl", init_method="file://" + os.path.join(tempfile.mkdtemp(), "rdv"), rank=0, world_size=1)
x = torch.ones(64 * 1024 * 1024, device="cuda")
for _ in range(3):
    dist.all_reduce(x)
torch.cuda.synchronize()
time.sleep(1.1)  # the hook looks at CUDA's state once a second
_collectives.poll_cuda()
before = _timing._tls.comm or 0.0
t = time.perf_counter()
for _ in range(10):
    dist.all_reduce(x)
torch.cuda.synchronize()
wall = time.perf_counter() - t
_collectives.poll_cuda()
print("%.4f %.4f" % (((_timing._tls.comm or 0.0) - before) * 1000, wall * 1000))
dist.destroy_process_group()
EOF
  coll=$("$TM" run --interval 1 --no-report -q --db "$OUT/run.db" -- python3 "$OUT/coll.py" 2>>"$OUT/coll.err" | tail -n1)
  echo "$coll" > "$OUT/coll.txt"
  if [ -n "$coll" ] && [ "$coll" != "not-installed" ]; then
    verdict=$(awk -v c="${coll% *}" -v w="${coll#* }" 'BEGIN { print (c > 0 && c <= w * 1.05 && c >= w * 0.5 ? "close" : "different") }')
    row coll - "all_reduce 10 x 256 MiB: event ms vs wall ms" "${coll#* }" "${coll% *}" "$verdict"
  else
    row coll - "all_reduce CUDA event timing" "" "${coll:-failed}" different
  fi
else
  TRAIN_NOTE="train: skipped (no python3 with a CUDA PyTorch, or --no-torch)"
fi

# ---- the table ---------------------------------------------------------------------------------
echo "nvidia-smi: $(grep -m1 -i 'version' "$OUT/smi-version.txt" | tr -s ' ')"
echo "GPU:        $(head -n1 "$OUT/smi-L.txt")"
echo "trainmon:   $(head -n1 "$OUT/trainmon-version.txt")"
echo "raw output: $OUT"
echo
awk -F'\t' '{ printf "%-7s %-3s %-58s %-34s %-34s %s\n", $1, $2, substr($3, 1, 58), substr($4, 1, 34), substr($5, 1, 34), $6 }' \
  <(printf 'section\tgpu\tfield\tnvidia-smi\ttrainmon\tverdict\n'; cat "$ROWS")
echo
[ -n "$TRAIN_NOTE" ] && echo "$TRAIN_NOTE"
awk -F'\t' '{ c[$1 "\t" $6]++; s[$1] = 1; v[$6] = 1; tot[$6]++ }
  END { printf "%-8s", "summary"; for (x in v) printf " %s=%d", x, tot[x]; print ""
        for (a in s) { printf "  %-6s", a; for (x in v) if (c[a "\t" x]) printf " %s=%d", x, c[a "\t" x]; print "" } }' "$ROWS"
grep -q $'\tdifferent$' "$ROWS" && exit 1
exit 0
