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

/// Output flavour of the monitor commands: nvidia-smi's columns, one JSON object per line, our CSV
/// ("gpu, pwr [W], ...", --csv), and nvidia-smi's own `--format csv[,nounit][,noheader]`
/// ("#gpu, pwr, ..." then "#Idx, W, ..." then "0, 36, ...").
enum class MonitorFormat { text, json, csv, smi_csv };

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
  bool smi_csv_header = true;  ///< smi_csv: the "#gpu, ..." line (off with `noheader`)
  bool smi_csv_units = true;   ///< smi_csv: the "#Idx, W, ..." line (off with `nounit`)
};

/// Parse nvidia-smi dmon / pmon's `--format` value: "csv" with optional "nounit" and "noheader";
/// error names the offending token. Returns `base` with format = smi_csv and the two flags set.
std::expected<MonitorOptions, std::string> parse_monitor_format(std::string_view spec, MonitorOptions base);

/// nvidia-smi repeats pmon's two header lines after every this many process rows (counted across
/// samples, so the header can land inside a sample): the two Windows 591.86 captures of
/// utkuozdemir/nvidia_gpu_exporter, with 10 and 12 processes, both repeat it after 44 rows.
inline constexpr long kPmonHeaderEveryRows = 44;
/// dmon's header repeats every 20 samples.
inline constexpr long kDmonHeaderEverySamples = 20;

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
/// One line per process of each selected GPU (sorted by pid, as nvidia-smi's pmon lists them in
/// every capture); a GPU with no process gets one line of `-`. The command column is the basename of
/// the process name, cut and padded to 15 columns. An engine without a sample in the interval prints
/// `-`, a sampled zero prints 0 (nvidia-smi 595: "0 0 13 - - -"); JSON gives null / 0.
std::string pmon_rows(const MonitorOptions& opt, const Snapshot& cur, std::span<const std::size_t> order);
/// One line per GPU of `order` whose process lists failed this tick ("GPU 0: processes unknown:
/// <reason>"; its pmon row shows `?`), for stderr. Empty when every list was read.
std::vector<std::string> pmon_warnings(const Snapshot& cur, std::span<const std::size_t> order);

}  // namespace trainmon::exp
