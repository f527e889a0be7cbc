// SPDX-License-Identifier: Apache-2.0
// The upper panels of `trainmon top`: GPUs, host, findings / active run. Each draws into a
// Canvas region and returns the rows it used. All read only the Snapshot and precomputed data.
#pragma once

#include <string>
#include <vector>

#include "trainmon/core/snapshot.h"
#include "trainmon/diagnose/finding.h"
#include "trainmon/ipc/run_state_file.h"
#include "trainmon/tui/canvas.h"
#include "trainmon/tui/history.h"

namespace trainmon::tui {

/// Rows the GPU panel needs for `gpu_count` GPUs in full form (3 per GPU) and compact form (1 each).
int gpu_panel_full_rows(std::size_t gpu_count) noexcept;
int gpu_panel_compact_rows(std::size_t gpu_count) noexcept;

/// Clock-event ("throttle") reason bits in words: "power cap, HW slowdown"; "none" for 0; the idle
/// bit alone is "idle". Source: nvmlClocksEventReason* (NVML reference).
std::string throttle_words(std::uint64_t reasons);

/// GPU panel in rows [top, top + max_rows): full form (two bar rows with history per GPU) when it
/// fits, else one compact row per GPU, else as many GPUs as fit and "+N more". A GPU that stopped
/// answering says so instead of numbers. Without a driver or GPU: one line saying why. Returns rows used.
int draw_gpu_panel(Canvas& canvas, int top, int max_rows, const Snapshot& snap, const History& history);

/// Host panel: per-core CPU bars (or one total bar when they do not fit), memory used / available /
/// cache, swap, load, CPU temperature, disk and network rates. Returns rows used (at most max_rows).
int draw_host_panel(Canvas& canvas, int top, int max_rows, const Snapshot& snap);

/// What the findings panel shows besides the snapshot.
struct LiveInfo {
  std::vector<diagnose::Finding> findings;  ///< open findings of the live diagnosis
  std::string active_run;                   ///< "run 12 'name' since 11:02 (recorder pid 4242)"; empty: none
  bool diagnosis_enabled = true;
  /// The runs of this user going on now, from their live state files (ipc::read_live_runs).
  std::vector<ipc::LiveRunState> runs;
};

/// Rows the training panel wants for `runs`: per run with step timing, its job line, and with several
/// ranks one line per rank.
int train_panel_rows(const std::vector<ipc::LiveRunState>& runs) noexcept;

/// Training panel: per live run with step timing a job line (name, samples/s, step time, data-wait
/// share, ranks, age of the oldest last step) and, with several ranks, one line per rank (rank, host,
/// GPU, step time, p90, data-wait share, age of its last step, phase), each as far as the width allows
/// (the least needed columns go first). Rows beyond max_rows become "+N more ranks". `now_unix_s`:
/// the time the ages are measured to. Returns rows used.
int draw_train_panel(Canvas& canvas, int top, int max_rows, const std::vector<ipc::LiveRunState>& runs,
                     double now_unix_s);

/// One line of the findings panel: a finding (pointing into LiveInfo) and the run it is from (empty:
/// top's own diagnosis, or the only run with findings).
struct PanelFinding {
  const diagnose::Finding* finding = nullptr;
  std::string run;
};
/// The findings the panel shows: every live run's open findings (their state files; the run's own
/// diagnosis sees its training loop, D23-D26) and top's own, less those a run already gives (same
/// code, GPUs and processes); most severe first, their order otherwise. Pointers into `live`.
std::vector<PanelFinding> panel_findings(const LiveInfo& live);
/// Rows the findings panel wants: the active run, up to 3 findings, and up to 8 stuck lines of hangs.
int findings_panel_rows(const LiveInfo& live);

/// Findings (one line each, most severe first; after a hang one line per rank with the line it is stuck
/// on, from the stacks stored with it) and the active run, at most max_rows. Returns rows used (0 when
/// there is nothing to show).
int draw_findings_panel(Canvas& canvas, int top, int max_rows, const LiveInfo& live);

}  // namespace trainmon::tui
