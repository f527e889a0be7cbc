// SPDX-License-Identifier: Apache-2.0
// Key handling of `trainmon top` as a state machine over UiState, independent of ncurses: the
// terminal layer maps its key codes to these (terminal_output.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trainmon/tui/ui_state.h"

namespace trainmon::tui {

/// Special keys (outside Unicode's range so printable keys keep their code points).
enum KeyCode : int {
  kKeyEnter = '\n',
  kKeyEsc = 27,
  kKeyBackspace = 127,
  kKeyUp = 0x110000,
  kKeyDown,
  kKeyPageUp,
  kKeyPageDown,
  kKeyHome,
  kKeyEnd,
  kKeyLeft,
  kKeyRight,
  kKeyF1,
  kKeyF9,
  kKeyF10,
  kKeyResize,
};

/// What the view looks like now (rows as drawn), for selection moves and the signal dialog.
struct KeyContext {
  std::vector<std::uint32_t> pids;    ///< pids of the table rows, in display order
  std::vector<std::string> commands;  ///< their commands (same order)
  int page_rows = 10;                 ///< process rows visible at once
  /// their /proc/PID/stat start times (same order; nullopt: no /proc entry): see SignalDialog
  std::vector<std::optional<std::uint64_t>> start_times_ticks{};
};

/// What the application must do after a key.
struct KeyResult {
  enum Kind : std::uint8_t { none, redraw, quit, send_signal, interval_changed } kind = none;
  std::uint32_t pid = 0;
  int signal = 0;  ///< SIGTERM or SIGKILL
  /// send_signal: the start time the dialog remembered; signal only if /proc/PID/stat still shows
  /// it (send_signal_checked, signal_target.h). nullopt: identity unknown, send nothing.
  std::optional<std::uint64_t> start_time_ticks;
};

/// Applies one key. Keys (docs/top.md): q / F10 quit; ? h F1 help; arrows PgUp PgDn Home End select;
/// s > next sort column, < previous, r reverse, P M T G N sort by CPU, RSS, elapsed, GPU memory, pid;
/// / text filter, u user filter (Enter applies, Esc cancels, empty clears); t tree; a all / GPU
/// processes; k F9 signal dialog for the selected row; + - interval up / down; Esc clears filters.
KeyResult handle_key(UiState& ui, int key, const KeyContext& ctx);

/// Records the outcome of a signal sent for the dialog: `err` 0 (sent) or an errno (ESRCH, EPERM).
void signal_result(UiState& ui, int signal, int err);

/// Records that the dialog's signal was NOT sent because the pid no longer names the selected
/// process (or its identity is unknown): `text` goes to the bottom line, the dialog closes.
void signal_not_sent(UiState& ui, const std::string& text);

}  // namespace trainmon::tui
