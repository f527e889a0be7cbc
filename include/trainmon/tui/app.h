// SPDX-License-Identifier: Apache-2.0
// `trainmon top` application: sampling thread, live diagnosis, store look-ups, ncurses I/O loop.
#pragma once

#include <optional>
#include <string>

#include "trainmon/cluster/cluster_view.h"
#include "trainmon/sampler/sampler.h"

namespace trainmon::tui {

struct TopOptions {
  SamplerOptions sampler;  ///< host.all_processes is ignored: every process is read only in the "all" view
  int interval_ms = 1000;
  bool utf8 = true;      ///< false: ASCII drawing (non-UTF-8 locale)
  bool color = true;     ///< false: attributes only (NO_COLOR, --no-color)
  bool diagnose = true;  ///< run the live diagnosis on the snapshots
  std::string db_path;   ///< store to look for the active run in; empty: none
  /// Set: the cluster from Prometheus (`top --prometheus`) instead of this machine: every node's
  /// GPUs, the jobs' ranks and the firing alerts, drawn by the same panels (no sampler, no local
  /// diagnosis). A failed read is shown on screen and tried again next interval.
  std::optional<cluster::ClusterOptions> cluster;
};

/// Runs the dashboard on the controlling terminal (stdin / stdout) until `q` or SIGINT / SIGTERM.
/// Returns 0; 1 when a pipe cannot be made or (options.cluster) the last frame could not be read from
/// Prometheus; kTerminalUnusable (nothing drawn, a message on stderr)
/// when ncurses cannot drive the terminal (a TERM without a terminfo entry): the caller falls back.
inline constexpr int kTerminalUnusable = 2;
int run_top(const TopOptions& options);

}  // namespace trainmon::tui
