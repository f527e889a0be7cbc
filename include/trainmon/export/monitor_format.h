// SPDX-License-Identifier: Apache-2.0
// `nvidia-smi dmon` / `pmon` compatible scrolling output: the same column layout (a 5-wide `# gpu`
// index column, 7-wide right-aligned metric columns, a trailing space), the `# Idx` units line and
// `-` for a value that is missing; plus one JSON object per line and CSV for scripts.
#pragma once

#include <cstdint>
#include <expected>
#include <span>
#include <string>
#include <string_view>

#include "trainmon/core/snapshot.h"

namespace trainmon::exp {

/// Output flavour of the monitor commands.
enum class MonitorFormat { text, json, csv };

/// dmon / pmon options that shape the output.
struct MonitorOptions {
  /// Metric groups. dmon: p (power, temperatures), u (utilisation), c (clocks), v (power / thermal
  /// violation, percent of the interval), m (fb, bar1, ccpm memory, MiB), e (ECC sbe/dbe, PCIe
  /// replays), t (PCIe rx/tx MB/s). pmon: u (sm mem enc dec jpg ofa %), m (fb, ccpm MiB).
  std::string groups;
  bool date = false;  ///< -o D: a YYYYMMDD column first
  bool time = false;  ///< -o T: a HH:MM:SS column
  MonitorFormat format = MonitorFormat::text;
};

/// Validate a dmon `-s` value ("puc" is nvidia-smi's default); error names the bad letter.
std::expected<std::string, std::string> parse_dmon_groups(std::string_view s);
/// Validate a pmon `-s` value ("u" is the default; "um" adds memory).
std::expected<std::string, std::string> parse_pmon_groups(std::string_view s);
/// Parse `-o` ("D", "T", "DT"); error names the bad letter.
std::expected<MonitorOptions, std::string> parse_date_time(std::string_view s, MonitorOptions base);

/// The two header lines (`# gpu    pwr ...` and `# Idx      W ...`), each ending in '\n'; for CSV
/// one header line; empty for JSON.
std::string dmon_header(const MonitorOptions& opt);
/// One line per selected GPU (`order` indexes cur.gpus). `prev` (the previous tick, may be null)
/// gives the interval for the violation percentages; without it they print `-`.
std::string dmon_rows(const MonitorOptions& opt, const Snapshot& cur, const Snapshot* prev,
                      std::span<const std::size_t> order);

std::string pmon_header(const MonitorOptions& opt);
/// One line per process of each selected GPU (sorted by pid); a GPU with no process gets one line of
/// `-`. The command column is the basename of the process name, left-aligned in 15 columns.
std::string pmon_rows(const MonitorOptions& opt, const Snapshot& cur, std::span<const std::size_t> order);

}  // namespace trainmon::exp
