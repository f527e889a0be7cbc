#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Turn the `nvidia-smi -q` sections of a capture (tests/captures) into fake-NVML scenarios.

Usage: capture_to_scenario.py CAPTURE.txt STATE OUT.json [--name NAME]
STATE is "idle" or "load". Values are copied exactly (MiB x 1048576 bytes, W x 1000 mW, ...).

A capture holds several moments: the --query-gpu CSV line, then (seconds later) `nvidia-smi pmon -c 5`
and `nvidia-smi dmon -c 5`, one row per GPU / process per second. The scenario plays them on one
timeline (scenario seconds, see MOMENTS):
  t < PMON_T0 (and again from PMON_T0 + n, and from DMON_T0 + n on): the --query-gpu moment;
  PMON_T0 + k: the k-th pmon sample (per-process sm / mem / enc / dec utilisation);
  DMON_T0 + k: the k-th dmon sample (power, temperatures, utilisation, clocks).
Frozen at any of those times (TRAINMON_FAKE_NVML_TIME_S), the scenario reproduces that view.
Standard library only.
"""
import argparse
import json
import re
import sys

MIB = 1048576

# Scenario seconds at which the capture's pmon and dmon samples are played (sample k at T0 + k).
PMON_T0 = 10
DMON_T0 = 20


def section(text, state, what):
    """The body of the section headed '# <state> :: <what>'."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("# %s :: %s" % (state, what)):
            j = i + 1
            while j < len(lines) and lines[j].startswith("#"):
                j += 1
            body = []
            while j < len(lines) and not lines[j].startswith("#####"):
                body.append(lines[j])
                j += 1
            return body
    raise SystemExit("no section '%s :: %s'" % (state, what))


def clean_value(value):
    """A -q value without the deprecation note newer drivers append:
    '610.57.04 [Deprecated; will be removed in CUDA 14.0. Use KMD Version instead]' -> '610.57.04'."""
    return re.sub(r"\s*\[Deprecated[^\]]*\]\s*$", "", value.strip())


def parse_tree(body):
    """-q output -> nested [key, value, children] nodes by 4-space indentation."""
    root = []
    stack = [(-1, root)]
    for line in body:
        if line.startswith("GPU "):  # "GPU 00000000:83:00.0" opens a device
            node = ["GPU", line[4:].strip(), []]
            root.append(node)
            stack = [(-1, root), (0, node[2])]
            continue
        if not line.strip() or line.startswith("="):
            continue
        if not line.startswith(" "):  # "Driver Version : 590.48.01" and friends
            key, _, value = line.partition(":")
            root.append([key.strip(), clean_value(value), []])
            continue
        indent = len(line) - len(line.lstrip(" "))
        key, _, value = line.strip().partition(":")
        node = [key.strip(), clean_value(value), []]
        while stack[-1][0] >= indent:
            stack.pop()
        stack[-1][1].append(node)
        stack.append((indent, node[2]))
    return root


def get(nodes, *path, default=None):
    for key in path:
        found = [n for n in nodes if n[0] == key]
        if not found:
            return default
        node = found[0]
        nodes = node[2]
    return node[1]


def find(nodes, key):
    """The value of the first node called `key` anywhere below `nodes` (depth first): drivers move
    rows between subsections (610 put the power limits under "GPU Ceiling Power Limit")."""
    for k, v, kids in nodes:
        if k == key:
            return v
    for k, v, kids in nodes:
        found = find(kids, key)
        if found is not None:
            return found
    return None


def children(nodes, *path):
    for key in path:
        found = [n for n in nodes if n[0] == key]
        if not found:
            return []
        nodes = found[0][2]
    return nodes


def num(value, unit=""):
    """'627.32 W' -> 627.32; None for N/A and friends."""
    if value is None:
        return None
    m = re.match(r"^(-?[0-9.]+)\s*%s" % re.escape(unit), value)
    return float(m.group(1)) if m else None


def mib(value):
    v = num(value, "MiB")
    return None if v is None else int(v) * MIB


def mw(value):
    v = num(value, "W")
    return None if v is None else int(round(v * 1000))


def flag(value):
    return {"Enabled": True, "Disabled": False, "Yes": True, "No": False}.get(value)


def put(d, key, value):
    if value is not None:
        d[key] = value


def processes(gpu_nodes, state):
    out = []
    nodes = children(gpu_nodes, "Processes")
    gi = ci = None
    for key, value, kids in nodes:
        if key == "GPU instance ID":
            gi = None if value == "N/A" else int(value)
        elif key == "Compute instance ID":
            ci = None if value == "N/A" else int(value)
        elif key == "Process ID":
            p = {"pid": int(value), "gpu": 0, "type": get(kids, "Type"), "name": get(kids, "Name")}
            memory = get(kids, "Used GPU Memory")
            used = mib(memory)
            if used is not None:
                p["used_memory"] = used
            elif memory is not None and memory.startswith("Not available"):
                # WDDM: "Not available in WDDM driver model"; the driver answers NVML_VALUE_NOT_AVAILABLE
                p["used_memory"] = None
            if gi is not None:
                p["gpu_instance_id"] = gi
                p["compute_instance_id"] = ci
            out.append(p)
    return out


def monitor_samples(text, state, what):
    """The samples of the state's `nvidia-smi dmon` or `pmon` section: a list (one per sample, in
    order) of lists of rows, each row a {column name: int, or None for '-'} dict plus "gpu" and, for
    pmon, "pid" (None on an idle GPU's row). A sample ends where a row's key (gpu, or gpu and pid)
    repeats. Empty when the capture has no such section."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("# %s :: %s " % (state, what))]
    if not starts:
        return []
    body = []
    for line in lines[starts[0] + 2:]:  # after the heading and the command line
        if line.startswith("#####"):
            if body:
                break
            continue
        body.append(line)
    names = None
    samples, seen = [], set()
    for line in body:
        cols = line.split()
        if line.startswith("# gpu"):
            names = cols[1:]
            continue
        if line.startswith("#") or not cols or not cols[0].isdigit() or names is None:
            continue
        row = {}
        for name, v in zip(names, cols):
            if name in ("type", "command"):
                row[name] = v
            else:
                row[name] = int(v) if v.isdigit() else None
        key = (row["gpu"], row.get("pid")) if what == "pmon" else row["gpu"]
        if not samples or key in seen:
            samples.append([])
            seen = set()
        seen.add(key)
        samples[-1].append(row)
    return samples


def stepped(rest, points):
    """A timeline: `rest` (the --query-gpu moment's value) except at the given [t, v] points, each
    holding one second; constant when nothing differs."""
    if all(v == rest for _, v in points):
        return rest
    out, last_t = [[0, rest]], None
    for t, v in sorted(points):
        out.append([t, v])
        last_t = t
    out.append([last_t + 1, rest])
    return out


# dmon column -> the scenario metrics it shows, and the scale from the printed unit.
DMON_METRICS = {
    "pwr": (("power_draw", "power_draw_instant"), 1000),
    "gtemp": (("temperature_gpu",), 1), "mtemp": (("temperature_memory",), 1),
    "sm": (("utilization_gpu",), 1), "mem": (("utilization_memory",), 1),
    "enc": (("utilization_encoder",), 1), "dec": (("utilization_decoder",), 1),
    "jpg": (("utilization_jpeg",), 1), "ofa": (("utilization_ofa",), 1),
    "mclk": (("clock_memory",), 1), "pclk": (("clock_graphics", "clock_sm"), 1),
}
# Device-level utilisation a MIG-enabled GPU answers NOT_SUPPORTED for (dmon prints '-').
MIG_UNSUPPORTED = {"sm", "mem", "enc", "dec", "jpg", "ofa"}


def apply_dmon(m, index, samples, mig):
    """Play each dmon sample of GPU `index` at DMON_T0 + k on the metrics it shows."""
    for col, (keys, scale) in DMON_METRICS.items():
        points = []
        for k, sample in enumerate(samples):
            for row in sample:
                if row["gpu"] != index or col not in row:
                    continue
                v = row[col]
                if v is None:
                    if not (mig and col in MIG_UNSUPPORTED) and any(key in m for key in keys):
                        raise SystemExit("dmon prints '-' for %s but the scenario has %s" % (col, keys))
                    continue
                points.append([DMON_T0 + k, v * scale])
        if not points:
            continue
        for key in keys:
            if key not in m and key != keys[0]:
                continue  # e.g. no instantaneous power reading on this GPU
            rest = m.get(key, points[0][1])
            if isinstance(rest, list):
                rest = rest[0][1]
            m[key] = stepped(rest, points)


def apply_pmon(p, index, samples):
    """Play each pmon sample at PMON_T0 + k on the process's utilisation: a number is a sample (0
    included), '-' is no sample (null: the fake driver answers NVML's all-ones value for that
    engine, or leaves the process out of its sample list when no engine has one)."""
    for col, key in (("sm", "sm_util"), ("mem", "mem_util"), ("enc", "enc_util"), ("dec", "dec_util")):
        points = []
        for k, sample in enumerate(samples):
            for row in sample:
                if row["gpu"] == index and row.get("pid") == p["pid"]:
                    points.append([PMON_T0 + k, row.get(col)])
        if points and any(v is not None for _, v in points):
            p[key] = stepped(points[0][1], points)


# -q's "Product Architecture" -> the fake driver's nvmlDeviceArchitecture_t names.
ARCHITECTURES = {"Kepler": "kepler", "Maxwell": "maxwell", "Pascal": "pascal", "Volta": "volta",
                 "Turing": "turing", "Ampere": "ampere", "Ada Lovelace": "ada", "Ada": "ada",
                 "Hopper": "hopper", "Blackwell": "blackwell"}


def device(gpu_nodes, bus_id):
    d = {}
    put(d, "name", get(gpu_nodes, "Product Name"))
    put(d, "uuid", get(gpu_nodes, "GPU UUID"))
    serial = get(gpu_nodes, "Serial Number")
    if serial and serial != "N/A":
        d["serial"] = serial
    put(d, "vbios_version", get(gpu_nodes, "VBIOS Version"))
    part = get(gpu_nodes, "Board Part Number")
    if part and part != "N/A":
        d["board_part_number"] = part
    pci = children(gpu_nodes, "PCI")
    d["pci"] = {"bus_id": get(pci, "Bus Id"), "domain": int(get(pci, "Domain"), 16),
                "bus": int(get(pci, "Bus"), 16), "device": int(get(pci, "Device"), 16),
                "device_id": get(pci, "Device Id"), "subsystem_id": get(pci, "Sub System Id")}
    put(d, "brand", {"NVIDIA": "NVIDIA", "GeForce": "GEFORCE", "Tesla": "TESLA",
                     "Quadro": "QUADRO", "NVIDIA RTX": "NVIDIA_RTX"}.get(get(gpu_nodes, "Product Brand")))
    put(d, "architecture", ARCHITECTURES.get(get(gpu_nodes, "Product Architecture") or ""))
    fb = children(gpu_nodes, "FB Memory Usage")
    d["memory_total"] = mib(get(fb, "Total"))
    put(d, "bar1_total", mib(get(gpu_nodes, "BAR1 Memory Usage", "Total")))
    pw = children(gpu_nodes, "GPU Power Readings")
    limits = {}
    # 610 moved Current / Requested / Default under "GPU Ceiling Power Limit": search the section.
    put(limits, "current", mw(find(pw, "Requested Power Limit") or find(pw, "Current Power Limit")))
    put(limits, "enforced", mw(find(pw, "Current Power Limit")))
    put(limits, "default", mw(find(pw, "Default Power Limit")))
    put(limits, "min", mw(find(pw, "Min Power Limit")))
    put(limits, "max", mw(find(pw, "Max Power Limit")))
    if limits:
        d["power_limits"] = limits
    temp = children(gpu_nodes, "Temperature")
    thresholds = {}
    # Absolute thresholds only; the "T.Limit" rows are offsets and have no NVML threshold here.
    for key, label in (("shutdown", "GPU Shutdown Temp"), ("slowdown", "GPU Slowdown Temp"),
                       ("gpu_max", "GPU Max Operating Temp"), ("mem_max", "Memory Max Operating Temp")):
        put(thresholds, key, None if num(get(temp, label), "C") is None else int(num(get(temp, label), "C")))
    if thresholds:
        d["temperature_thresholds"] = thresholds
    mx = children(gpu_nodes, "Max Clocks")
    clocks = {}
    for key, label in (("graphics", "Graphics"), ("sm", "SM"), ("memory", "Memory"), ("video", "Video")):
        v = num(get(mx, label), "MHz")
        if v is not None:
            clocks[key] = int(v)
    d["max_clocks"] = clocks
    fan = get(gpu_nodes, "Fan Speed")
    d["num_fans"] = 0 if fan in (None, "N/A") else 1
    ecc = children(gpu_nodes, "ECC Mode")
    if flag(get(ecc, "Current")) is not None:
        d["ecc_mode"] = {"current": flag(get(ecc, "Current")), "pending": flag(get(ecc, "Pending"))}
    mig = children(gpu_nodes, "MIG Mode")
    if flag(get(mig, "Current")) is not None:
        d["mig_mode"] = {"current": flag(get(mig, "Current")), "pending": flag(get(mig, "Pending"))}
    put(d, "persistence_mode", flag(get(gpu_nodes, "Persistence Mode")))
    put(d, "display_mode", flag(get(gpu_nodes, "Display Attached")))
    put(d, "accounting_mode", flag(get(gpu_nodes, "Accounting Mode")))
    size = get(gpu_nodes, "Accounting Mode Buffer Size")
    if size and size.isdigit():
        d["accounting_buffer_size"] = int(size)
    model = children(gpu_nodes, "Driver Model")
    if get(model, "Current") not in (None, "N/A"):
        d["driver_model"] = {"current": get(model, "Current"), "pending": get(model, "Pending")}
    rom = children(gpu_nodes, "Inforom Version")
    inforom = {}
    for key, label in (("image", "Image Version"), ("oem", "OEM Object"), ("ecc", "ECC Object"),
                       ("power", "Power Management Object")):
        v = get(rom, label)
        if v not in (None, "N/A"):
            inforom[key] = v
    if inforom:
        d["inforom"] = inforom
    fab = children(gpu_nodes, "Fabric")
    if get(fab, "State") not in (None, "N/A"):
        d["fabric"] = {"state": get(fab, "State"),
                       "status": "NVML_SUCCESS" if get(fab, "Status") == "Success" else "NVML_ERROR_UNKNOWN",
                       "clique_id": int(get(fab, "CliqueId")), "cluster_uuid": get(fab, "ClusterUUID")}
    put(d, "compute_mode", get(gpu_nodes, "Compute Mode"))
    put(d, "display_active", flag(get(gpu_nodes, "Display Active")))
    link = children(pci, "GPU Link Info")
    gen = children(link, "PCIe Generation")
    width = children(link, "Link Width")
    d["pcie"] = {"gen_max": int(get(gen, "Max")), "gen_gpu_max": int(get(gen, "Device Max")),
                 "gen_current": int(get(gen, "Current")),
                 "width_max": int(get(width, "Max").rstrip("x")),
                 "width_current": int(get(width, "Current").rstrip("x"))}
    d["gpm_supported"] = d.get("architecture") in ("hopper", "blackwell")
    reasons = children(gpu_nodes, "Clocks Event Reasons")
    if reasons:
        d["supported_clocks_event_reasons"] = "0x1FF" if d["gpm_supported"] else "0x1EF"
    return d


def metrics(gpu_nodes, d):
    m = {}
    util = children(gpu_nodes, "Utilization")
    for key, label in (("utilization_gpu", "GPU"), ("utilization_memory", "Memory"),
                       ("utilization_encoder", "Encoder"), ("utilization_decoder", "Decoder"),
                       ("utilization_jpeg", "JPEG"), ("utilization_ofa", "OFA")):
        v = num(get(util, label), "%")
        if v is not None:
            m[key] = int(v)
    fb = children(gpu_nodes, "FB Memory Usage")
    m["memory_used"] = mib(get(fb, "Used"))
    m["memory_reserved"] = mib(get(fb, "Reserved")) or 0
    put(m, "bar1_used", mib(get(gpu_nodes, "BAR1 Memory Usage", "Used")))
    temp = children(gpu_nodes, "Temperature")
    put(m, "temperature_gpu", None if num(get(temp, "GPU Current Temp"), "C") is None
        else int(num(get(temp, "GPU Current Temp"), "C")))
    put(m, "temperature_memory", None if num(get(temp, "Memory Current Temp"), "C") is None
        else int(num(get(temp, "Memory Current Temp"), "C")))
    pw = children(gpu_nodes, "GPU Power Readings")
    # nvidia-smi's power.draw is the average reading on current drivers; fall back to instantaneous.
    power = mw(get(pw, "Average Power Draw"))
    if power is None:
        power = mw(get(pw, "Instantaneous Power Draw"))
    put(m, "power_draw", power)
    fan = num(get(gpu_nodes, "Fan Speed"), "%")
    if fan is not None:
        m["fan_speed"] = int(fan)
    ps = get(gpu_nodes, "Performance State")
    if ps and ps.startswith("P"):
        m["pstate"] = int(ps[1:])
    clk = children(gpu_nodes, "Clocks")
    for key, label in (("clock_graphics", "Graphics"), ("clock_sm", "SM"), ("clock_memory", "Memory"),
                       ("clock_video", "Video")):
        v = num(get(clk, label), "MHz")
        if v is not None:
            m[key] = int(v)
    bits = {"Idle": 0x1, "Applications Clocks Setting": 0x2, "SW Power Cap": 0x4, "HW Slowdown": 0x8,
            "Sync Boost": 0x10, "SW Thermal Slowdown": 0x20, "HW Thermal Slowdown": 0x40,
            "HW Power Brake Slowdown": 0x80, "Display Clock Setting": 0x100}
    reasons = children(gpu_nodes, "Clocks Event Reasons")
    if reasons:
        active = 0
        stack = list(reasons)
        while stack:
            key, value, kids = stack.pop()
            if value == "Active":
                active |= bits.get(key, 0)
            stack.extend(kids)
        m["clocks_event_reasons"] = active
    counters = children(gpu_nodes, "Clocks Event Reasons Counters")
    for key, label in (("violation_power_ns", "SW Power Capping"), ("violation_sync_boost_ns", "Sync Boost"),
                       ("violation_sw_thermal_ns", "SW Thermal Slowdown"),
                       ("violation_hw_thermal_ns", "HW Thermal Slowdown"),
                       ("violation_hw_power_brake_ns", "HW Power Braking")):
        v = num(get(counters, label), "us")
        if v is not None:
            m[key] = int(v) * 1000
    ecc_err = children(gpu_nodes, "ECC Errors")
    if d.get("ecc_mode", {}).get("current"):
        for kind in ("Volatile", "Aggregate"):
            node = children(ecc_err, kind)
            corr = num(get(node, "DRAM Correctable"))
            unc = num(get(node, "DRAM Uncorrectable"))
            put(m, "ecc_%s_corrected" % kind.lower(), None if corr is None else int(corr))
            put(m, "ecc_%s_uncorrected" % kind.lower(), None if unc is None else int(unc))
    rows = children(gpu_nodes, "Remapped Rows")
    if rows:
        put(m, "remapped_rows_correctable", None if num(get(rows, "Correctable Error")) is None
            else int(num(get(rows, "Correctable Error"))))
        put(m, "remapped_rows_uncorrectable", None if num(get(rows, "Uncorrectable Error")) is None
            else int(num(get(rows, "Uncorrectable Error"))))
        put(m, "remapped_rows_pending", {"Yes": 1, "No": 0}.get(get(rows, "Pending")))
        put(m, "remapped_rows_failure", {"Yes": 1, "No": 0}.get(get(rows, "Remapping Failure Occurred")))
    pci = children(gpu_nodes, "PCI")
    put(m, "pcie_tx", None if num(get(pci, "Tx Throughput"), "KB/s") is None
        else int(num(get(pci, "Tx Throughput"), "KB/s")))
    put(m, "pcie_rx", None if num(get(pci, "Rx Throughput"), "KB/s") is None
        else int(num(get(pci, "Rx Throughput"), "KB/s")))
    replays = num(get(pci, "Replays Since Reset"))
    put(m, "pcie_replay_counter", None if replays is None else int(replays))
    return {k: v for k, v in m.items() if v is not None}


def compute_apps_order(text, state):
    """The pids of the state's --query-compute-apps section, in the order the driver listed them."""
    try:
        body = [l for l in section(text, state, "query-compute-apps") if l.strip()]
    except SystemExit:
        return []
    if not body:
        return []
    header = [h.strip() for h in body[0].split(", ")]
    if "pid" not in header:
        return []
    col = header.index("pid")
    out = []
    for row in body[1:]:
        cells = row.split(", ")
        if len(cells) > col and cells[col].strip().isdigit():
            out.append(int(cells[col]))
    return out


def csv_rows(text, state):
    """The --query-gpu CSV of a state as one {header: value} dict per GPU."""
    body = [l for l in section(text, state, "query-gpu") if l.strip()]
    header = [h.strip() for h in body[0].split(", ")]
    return [dict(zip(header, (v.strip() for v in row.split(", ")))) for row in body[1:]]


def apply_csv(m, row):
    """The -q and CSV sections were taken moments apart: dynamic values come from the CSV, which is
    what a scenario must reproduce."""
    def val(key, unit=""):
        v = row.get(key)
        return num(v, unit) if v is not None else None
    for key, col, unit, scale in (
            ("memory_used", "memory.used [MiB]", "MiB", MIB), ("memory_reserved", "memory.reserved [MiB]", "MiB", MIB),
            ("utilization_gpu", "utilization.gpu [%]", "%", 1), ("utilization_memory", "utilization.memory [%]", "%", 1),
            ("utilization_encoder", "utilization.encoder [%]", "%", 1),
            ("utilization_decoder", "utilization.decoder [%]", "%", 1),
            ("utilization_jpeg", "utilization.jpeg [%]", "%", 1), ("utilization_ofa", "utilization.ofa [%]", "%", 1),
            ("temperature_gpu", "temperature.gpu", "", 1), ("temperature_memory", "temperature.memory", "", 1),
            ("fan_speed", "fan.speed [%]", "%", 1),
            ("clock_graphics", "clocks.current.graphics [MHz]", "MHz", 1),
            ("clock_sm", "clocks.current.sm [MHz]", "MHz", 1),
            ("clock_memory", "clocks.current.memory [MHz]", "MHz", 1),
            ("clock_video", "clocks.current.video [MHz]", "MHz", 1),
            ("violation_power_ns", "clocks_event_reasons_counters.sw_power_cap [us]", "us", 1000),
            ("violation_sync_boost_ns", "clocks_event_reasons_counters.sync_boost [us]", "us", 1000),
            ("violation_sw_thermal_ns", "clocks_event_reasons_counters.sw_thermal_slowdown [us]", "us", 1000),
            ("violation_hw_thermal_ns", "clocks_event_reasons_counters.hw_thermal_slowdown [us]", "us", 1000),
            ("violation_hw_power_brake_ns", "clocks_event_reasons_counters.hw_power_brake_slowdown [us]", "us", 1000)):
        v = val(col, unit)
        if v is not None:
            m[key] = int(v) * scale
        elif col in row and key in m:
            del m[key]  # [N/A] in the CSV
    for key, col in (("encoder_sessions", "encoder.stats.sessionCount"), ("encoder_fps", "encoder.stats.averageFps"),
                     ("encoder_latency", "encoder.stats.averageLatency"), ("temperature_tlimit", "temperature.gpu.tlimit")):
        v = row.get(col)
        if v is not None and re.match(r"^-?[0-9]+$", v):
            m[key] = int(v)
    average = val("power.draw.average [W]", "W")
    if average is not None:
        m["power_draw_average"] = int(round(average * 1000))
    power = val("power.draw [W]", "W")
    if power is not None:
        m["power_draw"] = int(round(power * 1000))
    instant = val("power.draw.instant [W]", "W")
    if instant is not None:
        m["power_draw_instant"] = int(round(instant * 1000))
    # nvidia-smi floors each of total/reserved/used/free from its own byte count, so free is not
    # total - reserved - used in whole MiB: carry the capture's free value itself.
    free = val("memory.free [MiB]", "MiB")
    if free is not None:
        m["memory_free"] = int(free) * MIB
    ps = row.get("pstate", "")
    if ps.startswith("P"):
        m["pstate"] = int(ps[1:])
    active = row.get("clocks_event_reasons.active", "")
    if active.startswith("0x"):
        m["clocks_event_reasons"] = int(active, 16)
    for key, col in (("pcie_gen_current", "pcie.link.gen.gpucurrent"), ("pcie_width_current", "pcie.link.width.current")):
        v = val(col)
        if v is not None:
            m[key] = int(v)


def apply_csv_device(d, row):
    """Static device properties the -q section lacks or reports differently, from the CSV."""
    supported = row.get("clocks_event_reasons.supported", "")
    if supported.startswith("0x"):
        d["supported_clocks_event_reasons"] = "0x%X" % int(supported, 16)
    cc = row.get("compute_cap", "")
    if re.match(r"^[0-9]+\.[0-9]+$", cc):
        d["compute_capability"] = cc
    # Entry points the GPU answers NOT_SUPPORTED (nvidia-smi prints [N/A] for their fields): page
    # retirement on row-remapping GPUs, remapped rows on MIG-enabled ones.
    valid = row.get("inforom.checksum_validation")
    if valid in ("valid", "invalid"):
        d.setdefault("inforom", {})["valid"] = valid == "valid"
    not_supported = set(d.get("not_supported", []))
    if row.get("power.draw.average [W]") == "[N/A]":
        not_supported.add("NVML_FI_DEV_POWER_AVERAGE")
    for col, fns in (("retired_pages.single_bit_ecc.count", ["nvmlDeviceGetRetiredPages"]),
                     ("retired_pages.pending", ["nvmlDeviceGetRetiredPagesPendingStatus"]),
                     ("remapped_rows.correctable", ["nvmlDeviceGetRemappedRows"])):
        if row.get(col) == "[N/A]":
            not_supported.update(fns)
    if not_supported:
        d["not_supported"] = sorted(not_supported)


def list_gpus(text):
    """The `-L` section: {gpu index: {mig device index: (profile, uuid)}}."""
    out, gpu = {}, None
    try:
        lines = section(text, "capabilities", "list (-L)")
    except SystemExit:
        return out
    for line in lines:
        m = re.match(r"^GPU (\d+): ", line)
        if m:
            gpu = int(m.group(1))
            out[gpu] = {}
            continue
        m = re.match(r"^\s+MIG (\S+)\s+Device\s+(\d+): \(UUID: (\S+)\)", line)
        if m and gpu is not None:
            out[gpu][int(m.group(2))] = (m.group(1), m.group(3))
    return out


def mig_devices(gpu_nodes, name, listed):
    out = []
    for key, _, kids in gpu_nodes:
        if key != "MIG Device":
            continue
        fb = children(kids, "Shared FB Memory Usage")
        index = int(get(kids, "Index"))
        profile, uuid = listed.get(index, (None, "MIG-00000000-0000-0000-0000-%012d" % index))
        out.append({"gpu_instance_id": int(get(kids, "GPU Instance ID")),
                    "compute_instance_id": int(get(kids, "Compute Instance ID")),
                    "uuid": uuid,
                    "name": "%s MIG %s" % (name, profile) if profile else name,
                    "memory_total": mib(get(fb, "Total")),
                    "metrics": {"memory_used": mib(get(fb, "Used")),
                                "memory_reserved": mib(get(fb, "Reserved")) or 0}})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("capture")
    ap.add_argument("state", choices=["idle", "load"])
    ap.add_argument("out")
    ap.add_argument("--name")
    args = ap.parse_args()
    text = open(args.capture, encoding="utf-8").read()
    tree = parse_tree(section(text, args.state, "query (-q)"))
    cuda = get(tree, "CUDA Version")
    gpus = [n for n in tree if n[0] == "GPU"]
    rows = csv_rows(text, args.state)
    pmon = monitor_samples(text, args.state, "pmon")
    dmon = monitor_samples(text, args.state, "dmon")
    listed = list_gpus(text)
    order = compute_apps_order(text, args.state)
    devices, procs = [], []
    for index, gpu in enumerate(gpus):
        d = device(gpu[2], gpu[1])
        d["metrics"] = metrics(gpu[2], d)
        apply_csv(d["metrics"], rows[index])
        apply_csv_device(d, rows[index])
        mig = bool(d.get("mig_mode", {}).get("current"))
        apply_dmon(d["metrics"], index, dmon, mig)
        if mig:
            d["mig_devices"] = mig_devices(gpu[2], d["name"], listed.get(index, {}))
        devices.append(d)
        gpu_procs = processes(gpu[2], args.state)
        # The driver's order: --query-compute-apps lists the compute list as the driver gives it;
        # the other processes follow in -q's order.
        gpu_procs.sort(key=lambda p: order.index(p["pid"]) if p["pid"] in order else len(order))
        for p in gpu_procs:
            p["gpu"] = index
            apply_pmon(p, index, pmon)
            procs.append(p)
    driver = get(tree, "Driver Version")
    scenario = {
        "name": args.name or args.out.rsplit("/", 1)[-1].removesuffix(".json"),
        "description": "Generated by scripts/capture_to_scenario.py from %s (%s): the capture's --query-gpu "
                       "moment (-q section and CSV), its pmon samples at t=%d+k s and its dmon samples at "
                       "t=%d+k s." % (args.capture.rsplit("/", 1)[-1], args.state, PMON_T0, DMON_T0),
        "generation": driver.split(".")[0],
        "driver_version": driver,
        "nvml_version": "%s.%s" % (cuda.split(".")[0], driver),
        "cuda_version": cuda,
        "time_scale": 1.0,
        "devices": devices,
        "processes": procs,
    }
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(scenario, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    sys.exit(main())
