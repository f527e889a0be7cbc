// SPDX-License-Identifier: Apache-2.0
// dmon columns as a table: group letter, name, unit, and a reader returning the integer to print
// (nullopt prints `-`). Layout measured on nvidia-smi 590 output (captures): "%5u" index, then each
// column "%7s", then one trailing space.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "export/monitor_common.h"
#include "trainmon/export/monitor_format.h"
#include "trainmon/export/units.h"

namespace trainmon::exp {

namespace {

using Value = std::optional<std::uint64_t>;

template <class T>
Value opt(const Reading<T>& r) {
  return r.ok() ? Value(static_cast<std::uint64_t>(*r)) : std::nullopt;
}

struct DmonColumn {
  char group;
  std::string_view name;
  std::string_view unit;
  std::function<Value(const GpuSample& g, const GpuSample* prev, double interval_s)> read;
};

/// Percent of the interval spent in a violation counter (nanoseconds), 0..100.
Value violation_pct(const Reading<std::uint64_t>& cur, const Reading<std::uint64_t>* prev,
                    double interval_s) {
  if (!cur.ok() || !prev || !prev->ok() || interval_s <= 0 || **prev > *cur) return std::nullopt;
  const double pct = static_cast<double>(*cur - **prev) / (interval_s * 1e9) * 100.0;
  return static_cast<std::uint64_t>(std::clamp(pct, 0.0, 100.0));
}

const std::vector<DmonColumn>& dmon_columns() {
  static const std::vector<DmonColumn> cols = {
      {'p', "pwr", "W",
       [](const GpuSample& g, const GpuSample*, double) -> Value {
         return g.power_draw_mw.ok() ? Value(*g.power_draw_mw / 1000) : std::nullopt;
       }},
      {'p', "gtemp", "C",
       [](const GpuSample& g, const GpuSample*, double) { return opt(g.temperature_gpu_c); }},
      {'p', "mtemp", "C",
       [](const GpuSample& g, const GpuSample*, double) { return opt(g.temperature_memory_c); }},
      {'u', "sm", "%",
       [](const GpuSample& g, const GpuSample*, double) { return opt(g.utilization_gpu_pct); }},
      {'u', "mem", "%",
       [](const GpuSample& g, const GpuSample*, double) { return opt(g.utilization_memory_pct); }},
      {'u', "enc", "%",
       [](const GpuSample& g, const GpuSample*, double) { return opt(g.utilization_encoder_pct); }},
      {'u', "dec", "%",
       [](const GpuSample& g, const GpuSample*, double) { return opt(g.utilization_decoder_pct); }},
      {'u', "jpg", "%",
       [](const GpuSample& g, const GpuSample*, double) { return opt(g.utilization_jpeg_pct); }},
      {'u', "ofa", "%",
       [](const GpuSample& g, const GpuSample*, double) { return opt(g.utilization_ofa_pct); }},
      {'c', "mclk", "MHz",
       [](const GpuSample& g, const GpuSample*, double) { return opt(g.clocks_memory_mhz); }},
      {'c', "pclk", "MHz",
       [](const GpuSample& g, const GpuSample*, double) { return opt(g.clocks_graphics_mhz); }},
      {'v', "pviol", "%",
       [](const GpuSample& g, const GpuSample* p, double dt) {
         return violation_pct(g.violation_power_ns, p ? &p->violation_power_ns : nullptr, dt);
       }},
      {'v', "tviol", "%",
       [](const GpuSample& g, const GpuSample* p, double dt) {
         return violation_pct(g.violation_thermal_ns, p ? &p->violation_thermal_ns : nullptr, dt);
       }},
      {'m', "fb", "MB",
       [](const GpuSample& g, const GpuSample*, double) -> Value {
         return g.memory_used_bytes.ok() ? Value(bytes_to_mib(*g.memory_used_bytes)) : std::nullopt;
       }},
      {'m', "bar1", "MB",
       [](const GpuSample& g, const GpuSample*, double) -> Value {
         return g.bar1_used_bytes.ok() ? Value(bytes_to_mib(*g.bar1_used_bytes)) : std::nullopt;
       }},
      {'m', "ccpm", "MB", [](const GpuSample&, const GpuSample*, double) -> Value { return std::nullopt; }},
      {'e', "sbecc", "errs",
       [](const GpuSample& g, const GpuSample*, double) { return opt(g.ecc_corrected_volatile); }},
      {'e', "dbecc", "errs",
       [](const GpuSample& g, const GpuSample*, double) { return opt(g.ecc_uncorrected_volatile); }},
      {'e', "pci", "errs",
       [](const GpuSample& g, const GpuSample*, double) { return opt(g.pcie_replay_count); }},
      {'t', "rxpci", "MB/s",
       [](const GpuSample& g, const GpuSample*, double) -> Value {
         return g.pcie_rx_kib_s.ok() ? Value(*g.pcie_rx_kib_s / 1024) : std::nullopt;
       }},
      {'t', "txpci", "MB/s",
       [](const GpuSample& g, const GpuSample*, double) -> Value {
         return g.pcie_tx_kib_s.ok() ? Value(*g.pcie_tx_kib_s / 1024) : std::nullopt;
       }},
  };
  return cols;
}

std::vector<const DmonColumn*> selected(const std::string& groups) {
  std::vector<const DmonColumn*> out;
  for (const auto& c : dmon_columns())
    if (groups.find(c.group) != std::string::npos) out.push_back(&c);
  return out;
}

}  // namespace

std::expected<std::string, std::string> parse_dmon_groups(std::string_view s) {
  if (s.empty()) return std::string("puc");
  for (char c : s)
    if (std::string_view("pucvmet").find(c) == std::string_view::npos)
      return std::unexpected(fmt::format("Invalid metric group '{}' for -s (use any of p u c v m e t).", c));
  return std::string(s);
}

std::expected<MonitorOptions, std::string> parse_date_time(std::string_view s, MonitorOptions base) {
  for (char c : s) {
    if (c == 'D') {
      base.date = true;
    } else if (c == 'T') {
      base.time = true;
    } else {
      return std::unexpected(fmt::format("Invalid -o option '{}' (use D, T or DT).", c));
    }
  }
  return base;
}

/// Shared with pmon_format.cpp. With -o D/T a row starts " YYYYMMDD HH:MM:SS " and the header
/// lines "#Date     Time     " / "#YYYYMMDD HH:MM:SS " (same width); the index column follows.
std::string monitor_time_header(const MonitorOptions& opt, bool units_line) {
  if (!opt.date && !opt.time) return {};
  std::string out = "#";
  if (opt.date) out += units_line ? "YYYYMMDD " : "Date     ";
  if (opt.time) out += units_line ? "HH:MM:SS " : "Time     ";
  return out;
}

std::string monitor_time_prefix(const MonitorOptions& opt, std::int64_t time_unix_ns) {
  if (!opt.date && !opt.time) return {};
  const std::string ts = nvidia_smi_timestamp(time_unix_ns);  // YYYY/MM/DD HH:MM:SS.mmm
  std::string out = " ";
  if (opt.date) out += ts.substr(0, 4) + ts.substr(5, 2) + ts.substr(8, 2) + " ";
  if (opt.time) out += ts.substr(11, 8) + " ";
  return out;
}

/// "# gpu" / "# Idx" without a time prefix, "  gpu" / "  Idx" after one (5 columns either way).
std::string monitor_index_header(const MonitorOptions& opt, bool units_line) {
  const std::string prefix = monitor_time_header(opt, units_line);
  return prefix + (prefix.empty() ? "# " : "  ") + (units_line ? "Idx" : "gpu");
}

std::string dmon_header(const MonitorOptions& opt) {
  const auto cols = selected(opt.groups);
  if (opt.format == MonitorFormat::json) return {};
  if (opt.format == MonitorFormat::csv) {
    std::string out;
    if (opt.date) out += "date, ";
    if (opt.time) out += "time, ";
    out += "gpu";
    for (const auto* c : cols) fmt::format_to(std::back_inserter(out), ", {} [{}]", c->name, c->unit);
    return out + '\n';
  }
  std::string names = monitor_index_header(opt, false);
  std::string units = monitor_index_header(opt, true);
  for (const auto* c : cols) {
    fmt::format_to(std::back_inserter(names), "{:>7}", c->name);
    fmt::format_to(std::back_inserter(units), "{:>7}", c->unit);
  }
  return names + " \n" + units + " \n";
}

std::string dmon_rows(const MonitorOptions& opt, const Snapshot& cur, const Snapshot* prev,
                      std::span<const std::size_t> order) {
  const auto cols = selected(opt.groups);
  const double interval_s = prev ? static_cast<double>(cur.monotonic_ns - prev->monotonic_ns) / 1e9 : 0.0;
  std::string out;
  for (std::size_t pos : order) {
    const GpuSample& g = cur.gpus.at(pos);
    const GpuSample* pg = nullptr;
    if (prev)
      for (const auto& candidate : prev->gpus)
        if (candidate.index == g.index) pg = &candidate;
    if (opt.format == MonitorFormat::json) {
      nlohmann::ordered_json row;
      row["time"] = iso_local_time(cur.time_unix_ns);
      row["gpu"] = g.index;
      for (const auto* c : cols) {
        const Value v = c->read(g, pg, interval_s);
        row[std::string(c->name)] = v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
      }
      out += row.dump() + '\n';
      continue;
    }
    if (opt.format == MonitorFormat::csv) {
      const std::string ts = nvidia_smi_timestamp(cur.time_unix_ns);
      if (opt.date) out += ts.substr(0, 10) + ", ";
      if (opt.time) out += ts.substr(11, 8) + ", ";
      out += fmt::format("{}", g.index);
      for (const auto* c : cols) {
        const Value v = c->read(g, pg, interval_s);
        out += ", ";
        out += v ? fmt::format("{}", *v) : "-";
      }
      out += '\n';
      continue;
    }
    out += monitor_time_prefix(opt, cur.time_unix_ns);
    fmt::format_to(std::back_inserter(out), "{:>5}", g.index);
    for (const auto* c : cols) {
      const Value v = c->read(g, pg, interval_s);
      fmt::format_to(std::back_inserter(out), "{:>7}", v ? fmt::format("{}", *v) : std::string("-"));
    }
    out += " \n";
  }
  return out;
}

}  // namespace trainmon::exp
