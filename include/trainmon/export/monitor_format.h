// SPDX-License-Identifier: Apache-2.0
// `nvidia-smi dmon` / `pmon` compatible scrolling output: the same column layout (a 5-wide `# gpu`
// index column, 7-wide right-aligned metric columns, a trailing space; with -o D / T 12-wide date and
// time columns first), the `# Idx` units line and `-` for a value that is missing; plus one JSON
// object per line and CSV for scripts.
#pragma once

#include <cstdint>
#include <expected>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "trainmon/core/snapshot.h"

namespace trainmon::exp {

/// Output flavour of the monitor commands.
enum class MonitorFormat { text, json, csv };

/// dmon / pmon options that shape the output.
struct MonitorOptions {
  /// Metric groups, printed in the order given (as nvidia-smi does). dmon: p (pwr W, gtemp, mtemp
  /// C), u (sm mem enc dec jpg ofa %), c (mclk pclk MHz), v (pviol: percent of the interval under a
  /// power violation; tviol: 1 when a thermal violation ran in the interval, "bool"), m (fb, bar1,
  /// ccpm MiB, printed "MB"), e (sbecc, dbecc, pci: volatile ECC and PCIe replay counts, "errs"),
  /// t (rxpci txpci MB/s). pmon: u (sm mem enc dec jpg ofa %), m (fb, ccpm MiB).
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
/// gives the interval for the violation columns; without it a readable counter prints 0 (nvidia-smi's
/// first row). With -o D / T each row starts with the local date / time.
std::string dmon_rows(const MonitorOptions& opt, const Snapshot& cur, const Snapshot* prev,
                      std::span<const std::size_t> order);

std::string pmon_header(const MonitorOptions& opt);
/// One line per process of each selected GPU (sorted by pid); a GPU with no process gets one line of
/// `-`. The command column is the basename of the process name, cut and padded to 15 columns. In
/// the text view a utilisation of 0 prints `-`, as nvidia-smi 590 does; JSON and CSV keep the 0.
std::string pmon_rows(const MonitorOptions& opt, const Snapshot& cur, std::span<const std::size_t> order);
/// One line per GPU of `order` whose process lists failed this tick ("GPU 0: processes unknown:
/// <reason>"; its pmon row shows `?`), for stderr. Empty when every list was read.
std::vector<std::string> pmon_warnings(const Snapshot& cur, std::span<const std::size_t> order);

}  // namespace trainmon::exp
