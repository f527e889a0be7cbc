// SPDX-License-Identifier: Apache-2.0
// Everything the user has chosen in `trainmon top` (sort, filters, view, selection, dialogs). Pure
// data: key handling (keys.h) changes it, rendering (screen.h) reads it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace trainmon::tui {

/// Which processes the table lists.
enum class ProcessView : std::uint8_t {
  gpu,  ///< processes the driver lists on some GPU (default, as nvitop)
  all,  ///< every host process, GPU processes first
};

/// Sort column of the process table.
enum class SortKey : std::uint8_t { pid, user, gpu, gpu_memory, sm, cpu, rss, elapsed, command };
inline constexpr int kSortKeyCount = 9;
/// Column title of a sort key ("PID", "GPU-MEM", ...).
std::string_view sort_key_title(SortKey key) noexcept;

/// A text prompt at the bottom line.
enum class InputMode : std::uint8_t { none, filter_text, filter_user };

/// Signal dialog: SIGTERM first; SIGKILL only after a second confirmation.
enum class DialogStage : std::uint8_t {
  none,
  confirm_term,  ///< "send SIGTERM to PID?" y / n
  term_sent,     ///< SIGTERM sent (or refused): K offers SIGKILL, anything else closes
  confirm_kill,  ///< "send SIGKILL to PID?" y / n
};

struct SignalDialog {
  DialogStage stage = DialogStage::none;
  std::uint32_t pid = 0;
  /// /proc/PID/stat start time of the selected process when the dialog opened: with pid, its
  /// identity; a signal goes out only while the pid still has this start time (pid reuse).
  /// nullopt: the row had no /proc entry (another PID namespace): nothing is ever sent.
  std::optional<std::uint64_t> start_time_ticks;
  std::string command;  ///< what the process runs (shown in the dialog)
  std::string result;   ///< outcome of the last signal ("SIGTERM sent", "not permitted: ...")
};

struct UiState {
  ProcessView view = ProcessView::gpu;
  bool tree = false;
  SortKey sort = SortKey::gpu_memory;
  bool descending = true;
  std::string filter_text;  ///< substring of pid, user or command; empty = none
  std::string filter_user;  ///< exact user name; empty = none
  InputMode input = InputMode::none;
  std::string input_buffer;        ///< text typed so far in a prompt
  std::uint32_t selected_pid = 0;  ///< 0: the first row
  /// The selected row is a driver-listed process without a local process (no start time): with
  /// selected_pid, tells it from a local process that has the same number.
  bool selected_no_local = false;
  int scroll = 0;          ///< first process row shown
  int interval_ms = 1000;  ///< sampling interval (100 ms .. 10 s)
  bool help = false;       ///< help overlay shown
  SignalDialog dialog;
  std::string message;  ///< one-line notice on the bottom line until the next key
  bool quit = false;
};

inline constexpr int kMinIntervalMs = 100;
inline constexpr int kMaxIntervalMs = 10000;

}  // namespace trainmon::tui
