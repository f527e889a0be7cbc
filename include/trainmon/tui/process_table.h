// SPDX-License-Identifier: Apache-2.0
// The process table of `trainmon top`: rows built from one Snapshot (GPU processes joined to host
// processes), filtered, sorted and optionally arranged as a tree; then drawn into a Canvas.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "trainmon/core/snapshot.h"
#include "trainmon/tui/canvas.h"
#include "trainmon/tui/ui_state.h"

namespace trainmon::tui {

/// GPU indices (ascending, unique) as a short list: runs of three or more as a range ("0-3,5,7");
/// "" for none. The process table's GPU cell, cut with a mark when it still does not fit.
std::string compact_gpu_list(std::span<const unsigned> gpus);

/// One row. GPU figures are summed over the GPUs the process uses.
struct ProcessRow {
  std::uint32_t pid = 0;
  std::uint32_t ppid = 0;
  /// /proc/PID/stat field 22 (clock ticks after boot): with pid, the process's identity for the
  /// signal dialog (signal_target.h). nullopt for a driver-listed process with no /proc entry here.
  std::optional<std::uint64_t> start_time_ticks;
  std::string user;  ///< "?" when the process is not visible from here
  std::string gpus;  ///< compact_gpu_list: "0", "0,3", "0-3,5", "" for a process on no GPU
  bool on_gpu = false;
  double gpu_memory_bytes = -1;  ///< -1: N/A or not on a GPU
  double sm_pct = -1;            ///< -1: N/A
  double cpu_pct = -1;           ///< per-core basis; -1: N/A (first tick)
  double rss_bytes = -1;
  double elapsed_s = -1;
  std::string command;  ///< command line, else comm, else the driver's process name
  /// The process's job (ProcessAttribution::job_key(): "slurm:4242", "pod:ns/name",
  /// "container:<12 hex>"); empty when none is known. The JOB column shows only when a row has one.
  std::string job;
  /// Listed by the driver, no local process shown to be it, and not known to be gone: it is not
  /// visible from this PID namespace (HostVisibility::not_visible). Never offered for signalling.
  bool not_visible = false;
  /// Listed by the driver but its process has exited (HostVisibility::exited): ghost memory.
  bool exited = false;
  /// Zombie that still holds GPU memory: "ghost memory" (MISSION.md D9).
  bool ghost = false;
  int depth = 0;            ///< tree view: nesting level
  std::string tree_prefix;  ///< tree view: "├─ " / "└─ " chains (ASCII "|- " / "`- ")
};

/// Rows for the current view, filtered and sorted as `ui` says (the text filter matches the pid, the
/// user, the command or the job). GPU processes always come before
/// the others; within each group rows follow the sort key (ties by ascending pid). In tree view children
/// follow their parent (a row whose parent is not listed is a root); siblings follow the sort key.
std::vector<ProcessRow> build_process_rows(const Snapshot& snap, const UiState& ui, bool utf8);

/// Index of the selected row: the row whose pid is ui.selected_pid and whose lack of a local process
/// matches ui.selected_no_local (a GPU row of another namespace can share its number with a local
/// process's row), else the first row with that pid, else 0; -1 when `rows` is empty.
int selected_row(const std::vector<ProcessRow>& rows, const UiState& ui) noexcept;

/// Draws the header and as many rows as fit into rows [top, top + height) of `canvas`, scrolled so
/// the selected row is visible (updates ui.scroll). Columns that do not fit the width are dropped
/// (SM %, elapsed and JOB, user, GPU, RSS in that order); the command takes what is left. A JOB column
/// (after USER, at most 24 columns wide) is shown only when some row has a job. `empty_text`, when
/// given, replaces the "no GPU processes" line of an empty table (e.g. some GPUs' lists failed).
void draw_process_table(Canvas& canvas, int top, int height, const std::vector<ProcessRow>& rows, UiState& ui,
                        std::string_view empty_text = {});

}  // namespace trainmon::tui
