// SPDX-License-Identifier: Apache-2.0
// Internal helpers shared by dmon_format.cpp and pmon_format.cpp (not part of the public API): the
// column table type, group selection in -s order, the cells, and the date / time / index columns.
// Layout measured on nvidia-smi 590 output (tests/captures and published `dmon -o DT` /
// `pmon -s um -o DT` output): a lead character ('#' on the two header lines, ' ' on rows), with -o D
// the date (YYYYMMDD) and with -o T the time (HH:MM:SS), each left-aligned in 12 columns, then the
// GPU index right-aligned in 4, then each metric right-aligned in 7.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trainmon/core/reading.h"
#include "trainmon/core/units.h"
#include "trainmon/export/monitor_format.h"

namespace trainmon::exp {

/// A printed value: the integer, or nullopt for `-`.
using MonitorValue = std::optional<std::uint64_t>;

/// The value of a reading, nullopt when it was not read.
template <class T>
MonitorValue reading_value(const Reading<T>& r) {
  return r.ok() ? MonitorValue(static_cast<std::uint64_t>(*r)) : std::nullopt;
}

/// One metric column: its -s group letter, header name, unit (second header line) and reader.
template <class Reader>
struct MonitorColumn {
  char group;
  std::string_view name;
  std::string_view unit;
  Reader read;
};

/// The columns of the groups in `groups`, in the order the letters are given (nvidia-smi prints
/// `-s pucvmte` and `-s pucvmet` in their own orders), each group's columns in table order.
template <class Column>
std::vector<const Column*> select_columns(const std::vector<Column>& table, std::string_view groups) {
  std::vector<const Column*> out;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    if (groups.find(groups[i]) != i) continue;  // a letter given twice counts once
    for (const auto& c : table)
      if (c.group == groups[i]) out.push_back(&c);
  }
  return out;
}

/// The first letter of `s` that is not in `allowed`; nullopt when all are.
inline std::optional<char> first_bad_group(std::string_view s, std::string_view allowed) {
  for (char c : s)
    if (allowed.find(c) == std::string_view::npos) return c;
  return std::nullopt;
}

/// A value as the text view prints it: the number, or `-`.
inline std::string monitor_cell(const MonitorValue& v) {
  return v ? fmt::format("{}", *v) : std::string("-");
}

/// Appends `text` right-aligned in `width` (nvidia-smi's "%7s"); a value as wide as the column or
/// wider (a 1 PB frame buffer in MiB) still gets one space before it, so no two cells ever merge.
inline void append_cell(std::string& out, std::string_view text, std::size_t width) {
  if (text.size() >= width) out += ' ';
  fmt::format_to(std::back_inserter(out), "{:>{}}", text, width);
}

/// Appends each column's name (or unit) right-aligned in 7 to the two header lines.
template <class Column>
void append_column_headers(const std::vector<const Column*>& cols, std::string& names, std::string& units) {
  for (const auto* c : cols) {
    fmt::format_to(std::back_inserter(names), "{:>7}", c->name);
    fmt::format_to(std::back_inserter(units), "{:>7}", c->unit);
  }
}

/// The columns before the metrics: `lead`, then the -o date and time cells (12 wide, left-aligned),
/// then `index` right-aligned in 4. Without -o: "# gpu", "# Idx", "    0".
inline std::string monitor_lead(const MonitorOptions& opt, char lead, std::string_view date,
                                std::string_view time, std::string_view index) {
  std::string out(1, lead);
  if (opt.date) fmt::format_to(std::back_inserter(out), "{:<12}", date);
  if (opt.time) fmt::format_to(std::back_inserter(out), "{:<12}", time);
  fmt::format_to(std::back_inserter(out), "{:>4}", index);
  return out;
}

/// The two header lines' lead columns: {"#Date        Time         gpu", "#YYYYMMDD    HH:MM:SS     Idx"}.
inline std::pair<std::string, std::string> monitor_header_leads(const MonitorOptions& opt) {
  return {monitor_lead(opt, '#', "Date", "Time", "gpu"),
          monitor_lead(opt, '#', "YYYYMMDD", "HH:MM:SS", "Idx")};
}

/// A row's lead columns at local time `time_unix_ns`: " 20260816    09:22:34       0".
inline std::string monitor_row_lead(const MonitorOptions& opt, std::int64_t time_unix_ns,
                                    unsigned gpu_index) {
  std::string date, time;
  if (opt.date || opt.time) {
    const std::string ts = nvidia_smi_timestamp(time_unix_ns);  // YYYY/MM/DD HH:MM:SS.mmm
    date = ts.substr(0, 4) + ts.substr(5, 2) + ts.substr(8, 2);
    time = ts.substr(11, 8);
  }
  return monitor_lead(opt, ' ', date, time, fmt::format("{}", gpu_index));
}

/// nvidia-smi's `--format csv`: "#Date, Time, gpu, " / "#YYYYMMDD, HH:MM:SS, Idx, " leads.
inline std::pair<std::string, std::string> monitor_smi_csv_leads(const MonitorOptions& opt) {
  std::string names = "#", units = "#";
  if (opt.date) names += "Date, ", units += "YYYYMMDD, ";
  if (opt.time) names += "Time, ", units += "HH:MM:SS, ";
  return {names + "gpu", units + "Idx"};
}

/// nvidia-smi's `--format csv` header lines for `cols` (each ending in '\n', as selected).
template <class Column>
std::string monitor_smi_csv_header(const MonitorOptions& opt, const std::vector<const Column*>& cols,
                                   std::string_view extra_names = {}, std::string_view extra_units = {},
                                   std::string_view tail_name = {}, std::string_view tail_unit = {}) {
  auto [names, units] = monitor_smi_csv_leads(opt);
  names += extra_names;
  units += extra_units;
  for (const auto* c : cols) {
    names += ", " + std::string(c->name);
    units += ", " + std::string(c->unit);
  }
  names += tail_name;
  units += tail_unit;
  return (opt.smi_csv_header ? names + '\n' : std::string()) +
         (opt.smi_csv_units ? units + '\n' : std::string());
}

/// nvidia-smi's `--format csv` row lead: "20260816, 09:22:34, 0".
inline std::string monitor_smi_csv_lead(const MonitorOptions& opt, std::int64_t time_unix_ns, unsigned gpu) {
  std::string out;
  if (opt.date || opt.time) {
    const std::string ts = nvidia_smi_timestamp(time_unix_ns);
    if (opt.date) out += ts.substr(0, 4) + ts.substr(5, 2) + ts.substr(8, 2) + ", ";
    if (opt.time) out += ts.substr(11, 8) + ", ";
  }
  return out + fmt::format("{}", gpu);
}

/// CSV: "date, time, " as selected by -o (header line).
inline std::string monitor_csv_time_header(const MonitorOptions& opt) {
  return std::string(opt.date ? "date, " : "") + (opt.time ? "time, " : "");
}

/// CSV: "2026/08/16, 09:22:34, " as selected by -o (rows).
inline std::string monitor_csv_time_cells(const MonitorOptions& opt, std::int64_t time_unix_ns) {
  if (!opt.date && !opt.time) return {};
  const std::string ts = nvidia_smi_timestamp(time_unix_ns);
  return (opt.date ? ts.substr(0, 10) + ", " : std::string()) +
         (opt.time ? ts.substr(11, 8) + ", " : std::string());
}

/// JSON rows' `time`: RFC 3339 in local time with microseconds and the zone's offset
/// ("2026-07-03T22:10:46.109000+02:00"; "+00:00" in UTC), so that a row read elsewhere is one instant.
inline std::string monitor_json_time(std::int64_t time_unix_ns) {
  std::int64_t secs = time_unix_ns / 1'000'000'000, rem = time_unix_ns % 1'000'000'000;
  if (rem < 0) {
    rem += 1'000'000'000;
    --secs;
  }
  const std::time_t t = static_cast<std::time_t>(secs);
  std::tm tm{};
  ::localtime_r(&t, &tm);
  const long off_min = tm.tm_gmtoff / 60;
  const long abs_min = off_min < 0 ? -off_min : off_min;
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}{}{:02}:{:02}", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, rem / 1000,
                     off_min < 0 ? '-' : '+', abs_min / 60, abs_min % 60);
}

}  // namespace trainmon::exp
