// SPDX-License-Identifier: Apache-2.0
// dmon columns as a table: group letter, name, unit, and a reader returning the integer to print
// (nullopt prints `-`). Names, units and order as nvidia-smi 590 prints them (captures, published
// `dmon -s pucvmet` output); the layout helpers are in monitor_common.h.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "export/monitor_common.h"
#include "trainmon/core/text_escape.h"
#include "trainmon/core/units.h"
#include "trainmon/export/monitor_format.h"

namespace trainmon::exp {

namespace {

using DmonColumn =
    MonitorColumn<std::function<MonitorValue(const GpuSample& g, const GpuSample* prev, double interval_s)>>;

/// pviol: percent of the interval the power-violation counter (ns) ran, 0..100. On the first sample
/// (no previous one) a readable counter prints 0, as nvidia-smi's first row does.
MonitorValue violation_pct(const Reading<std::uint64_t>& cur, const Reading<std::uint64_t>* prev,
                           double interval_s) {
  if (!cur.ok()) return std::nullopt;
  if (!prev || !prev->ok() || interval_s <= 0 || **prev > *cur) return 0;
  const double pct = static_cast<double>(*cur - **prev) / (interval_s * 1e9) * 100.0;
  return static_cast<std::uint64_t>(std::clamp(pct, 0.0, 100.0));
}

/// tviol: 1 when the thermal-violation counter (ns) advanced during the interval, else 0 (nvidia-smi's
/// unit for this column is "bool").
MonitorValue violation_bool(const Reading<std::uint64_t>& cur, const Reading<std::uint64_t>* prev) {
  if (!cur.ok()) return std::nullopt;
  return prev && prev->ok() && *cur > **prev ? 1 : 0;
}

const std::vector<DmonColumn>& dmon_columns() {
  static const std::vector<DmonColumn> cols = {
      {'p', "pwr", "W",
       [](const GpuSample& g, const GpuSample*, double) -> MonitorValue {
         return g.power_draw_mw.ok() ? MonitorValue(*g.power_draw_mw / 1000) : std::nullopt;
       }},
      {'p', "gtemp", "C",
       [](const GpuSample& g, const GpuSample*, double) { return reading_value(g.temperature_gpu_c); }},
      {'p', "mtemp", "C",
       [](const GpuSample& g, const GpuSample*, double) { return reading_value(g.temperature_memory_c); }},
      {'u', "sm", "%",
       [](const GpuSample& g, const GpuSample*, double) { return reading_value(g.utilization_gpu_pct); }},
      {'u', "mem", "%",
       [](const GpuSample& g, const GpuSample*, double) { return reading_value(g.utilization_memory_pct); }},
      {'u', "enc", "%",
       [](const GpuSample& g, const GpuSample*, double) { return reading_value(g.utilization_encoder_pct); }},
      {'u', "dec", "%",
       [](const GpuSample& g, const GpuSample*, double) { return reading_value(g.utilization_decoder_pct); }},
      {'u', "jpg", "%",
       [](const GpuSample& g, const GpuSample*, double) { return reading_value(g.utilization_jpeg_pct); }},
      {'u', "ofa", "%",
       [](const GpuSample& g, const GpuSample*, double) { return reading_value(g.utilization_ofa_pct); }},
      {'c', "mclk", "MHz",
       [](const GpuSample& g, const GpuSample*, double) { return reading_value(g.clocks_memory_mhz); }},
      {'c', "pclk", "MHz",
       [](const GpuSample& g, const GpuSample*, double) { return reading_value(g.clocks_graphics_mhz); }},
      {'v', "pviol", "%",
       [](const GpuSample& g, const GpuSample* p, double dt) {
         return violation_pct(g.violation_power_ns, p ? &p->violation_power_ns : nullptr, dt);
       }},
      {'v', "tviol", "bool",
       [](const GpuSample& g, const GpuSample* p, double) {
         return violation_bool(g.violation_thermal_ns, p ? &p->violation_thermal_ns : nullptr);
       }},
      {'m', "fb", "MB",
       [](const GpuSample& g, const GpuSample*, double) -> MonitorValue {
         return g.memory_used_bytes.ok() ? MonitorValue(bytes_to_mib(*g.memory_used_bytes)) : std::nullopt;
       }},
      {'m', "bar1", "MB",
       [](const GpuSample& g, const GpuSample*, double) -> MonitorValue {
         return g.bar1_used_bytes.ok() ? MonitorValue(bytes_to_mib(*g.bar1_used_bytes)) : std::nullopt;
       }},
      // Confidential-computing protected memory: not read by the backend yet, so `-`.
      {'m', "ccpm", "MB",
       [](const GpuSample&, const GpuSample*, double) -> MonitorValue { return std::nullopt; }},
      {'e', "sbecc", "errs",
       [](const GpuSample& g, const GpuSample*, double) { return reading_value(g.ecc_corrected_volatile); }},
      {'e', "dbecc", "errs",
       [](const GpuSample& g, const GpuSample*, double) {
         return reading_value(g.ecc_uncorrected_volatile);
       }},
      {'e', "pci", "errs",
       [](const GpuSample& g, const GpuSample*, double) { return reading_value(g.pcie_replay_count); }},
      {'t', "rxpci", "MB/s",
       [](const GpuSample& g, const GpuSample*, double) -> MonitorValue {
         return g.pcie_rx_kib_s.ok() ? MonitorValue(*g.pcie_rx_kib_s / 1024) : std::nullopt;
       }},
      {'t', "txpci", "MB/s",
       [](const GpuSample& g, const GpuSample*, double) -> MonitorValue {
         return g.pcie_tx_kib_s.ok() ? MonitorValue(*g.pcie_tx_kib_s / 1024) : std::nullopt;
       }},
  };
  return cols;
}

}  // namespace

std::expected<std::string, std::string> parse_dmon_groups(std::string_view s) {
  if (s.empty()) return std::string("puc");
  if (auto bad = first_bad_group(s, "pucvmet"))
    return std::unexpected(fmt::format("Invalid metric group '{}' for -s (use any of p u c v m e t).", *bad));
  return std::string(s);
}

std::expected<MonitorOptions, std::string> parse_monitor_format(std::string_view spec, MonitorOptions base) {
  bool csv = false;
  std::size_t start = 0;
  while (start <= spec.size()) {
    const std::size_t comma = std::min(spec.find(',', start), spec.size());
    std::string_view tok = spec.substr(start, comma - start);
    while (!tok.empty() && tok.front() == ' ') tok.remove_prefix(1);
    while (!tok.empty() && tok.back() == ' ') tok.remove_suffix(1);
    if (tok == "csv") {
      csv = true;
    } else if (tok == "nounit" || tok == "nounits") {
      base.smi_csv_units = false;
    } else if (tok == "noheader") {
      base.smi_csv_header = false;
    } else {
      return std::unexpected(
          fmt::format("\"{}\" is not a valid --format option (use csv, nounit, noheader).", tok));
    }
    start = comma + 1;
  }
  if (!csv) return std::unexpected(std::string("--format must include csv."));
  base.format = MonitorFormat::smi_csv;
  return base;
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

std::string dmon_header(const MonitorOptions& opt) {
  const auto cols = select_columns(dmon_columns(), opt.groups);
  if (opt.format == MonitorFormat::json) return {};
  if (opt.format == MonitorFormat::smi_csv) return monitor_smi_csv_header(opt, cols);
  if (opt.format == MonitorFormat::csv) {
    std::string out = monitor_csv_time_header(opt) + "gpu";
    for (const auto* c : cols) fmt::format_to(std::back_inserter(out), ", {} [{}]", c->name, c->unit);
    return out + '\n';
  }
  auto [names, units] = monitor_header_leads(opt);
  append_column_headers(cols, names, units);
  return names + " \n" + units + " \n";
}

std::string dmon_rows(const MonitorOptions& opt, const Snapshot& cur, const Snapshot* prev,
                      std::span<const std::size_t> order) {
  const auto cols = select_columns(dmon_columns(), opt.groups);
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
      row["time"] = monitor_json_time(cur.time_unix_ns);
      row["gpu"] = g.index;
      for (const auto* c : cols) {
        const MonitorValue v = c->read(g, pg, interval_s);
        row[std::string(c->name)] = v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
      }
      out += text::json_dump(row) + '\n';
      continue;
    }
    if (opt.format == MonitorFormat::csv || opt.format == MonitorFormat::smi_csv) {
      out += opt.format == MonitorFormat::csv
                 ? monitor_csv_time_cells(opt, cur.time_unix_ns) + fmt::format("{}", g.index)
                 : monitor_smi_csv_lead(opt, cur.time_unix_ns, g.index);
      for (const auto* c : cols) out += ", " + monitor_cell(c->read(g, pg, interval_s));
      out += '\n';
      continue;
    }
    out += monitor_row_lead(opt, cur.time_unix_ns, g.index);
    for (const auto* c : cols) append_cell(out, monitor_cell(c->read(g, pg, interval_s)), 7);
    out += " \n";
  }
  return out;
}

}  // namespace trainmon::exp
