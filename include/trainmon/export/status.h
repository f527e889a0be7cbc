// SPDX-License-Identifier: Apache-2.0
// `trainmon status`: gpustat's one-line-per-GPU text view and a JSON document whose keys and units
// are a superset of gpustat's `--json` (docs/status-json.md). Both read only a Snapshot.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>

#include "trainmon/core/snapshot.h"

namespace trainmon::exp {

/// Version of the status JSON document; bumped on any incompatible change.
inline constexpr int kStatusSchemaVersion = 1;

/// What the text view shows and how.
struct StatusOptions {
  bool show_header = true;       ///< hostname, time, driver version line (off with --no-header)
  bool show_user = false;        ///< -u: user name even with --show-cmd
  bool show_pid = false;         ///< -p: "/pid" after each process
  bool show_cmd = false;         ///< -c: the process's command
  bool show_power = false;       ///< -P: draw / enforced limit, whole W
  bool power_draw_only = false;  ///< -P draw: the draw alone, without unit (as gpustat 1.1 prints it)
  bool show_fan = false;         ///< -F: fan speed %
  bool show_enc = false;         ///< -e: encoder utilisation
  bool show_dec = false;         ///< -e: decoder utilisation
  bool color = false;            ///< ANSI colours (decided by the caller: TTY, --no-color, NO_COLOR)
  bool utf8 = true;              ///< false: ASCII only ("C" for degrees, '?' for other non-ASCII)
  std::size_t columns = 0;       ///< terminal width; lines are cut to it (0: never cut)
  bool show_full_cmd = false;    ///< -f: a line per process: pid, CPU %, host memory, command line
  bool no_processes = false;     ///< --no-processes: no process list (and no " |" before it)
  /// --gpuname-width: unset, the longest name's width; 0, no name column; N, names cut to N columns
  /// from the left with a leading "…" and padded to N (gpustat 1.1's util.shorten_left).
  std::optional<std::size_t> gpuname_width;
};

/// Temperature level for colours: cool below 50 °C, warm below 80 °C, hot from 80 °C.
enum class TempLevel { cool, warm, hot };
TempLevel temp_level(unsigned celsius) noexcept;

/// The whole text view, every line ending in '\n'. A value that is missing prints "??" (gpustat's
/// convention); a GPU that stopped answering shows its status instead of numbers.
std::string status_text(const Snapshot& snap, std::span<const std::size_t> order, const StatusOptions& opt);

/// The JSON document (pretty-printed with 4 spaces, like gpustat's `--json`), ending in '\n'.
/// `all_processes`: add every host process in the snapshot under "host_processes".
/// `indent`: 4 as gpustat prints it; -1 for one compact line (JSON Lines, `status --json -i`).
std::string status_json(const Snapshot& snap, std::span<const std::size_t> order, bool all_processes,
                        int indent = 4);

}  // namespace trainmon::exp
