// SPDX-License-Identifier: Apache-2.0
// Process trees over one tick's process list: a training job's launcher, its DDP ranks and their
// DataLoader workers, summed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "trainmon/core/host_sample.h"

namespace trainmon {

/// Indices into `processes` of `root_pid` and all its descendants (children, grandchildren ...),
/// root first, then breadth-first (siblings in pid order). A child counts only when it started no earlier
/// than its parent (pid + start time identity: a stale ppid never adopts an older process); cycles in
/// malformed data are ignored. Empty when the root is not in the list, or when `root_start_ticks` is given
/// and differs from the listed root's (the pid was reused). The list must hold every process (collected with
/// HostOptions::all_processes) for grandchildren to be found.
std::vector<std::size_t> process_tree_indices(std::span<const ProcessSample> processes,
                                              std::uint32_t root_pid,
                                              std::optional<std::uint64_t> root_start_ticks = std::nullopt);

/// Sums over a tree. A Reading that is not ok in some member is left out of the sum and counted in
/// the matching `*_missing` field, so a total is a lower bound when that count is not zero.
struct ProcessTreeTotals {
  std::size_t process_count = 0;
  std::size_t zombie_count = 0;
  std::uint64_t rss_bytes = 0;  ///< sum of RSS (shared pages are counted in every process)
  std::size_t rss_missing = 0;
  double cpu_pct = 0;           ///< per-core basis: 250 % = two and a half cores
  std::size_t cpu_missing = 0;  ///< members on their first tick (no rate yet)
  std::uint64_t threads = 0;
  std::uint64_t read_bytes = 0, write_bytes = 0;  ///< cumulative, /proc/PID/io
  double read_bytes_per_s = 0, write_bytes_per_s = 0;
  std::size_t io_missing = 0;  ///< members whose io was unreadable or not asked for
  double cpu_time_s = 0;       ///< utime + stime of the living members
};
ProcessTreeTotals process_tree_totals(std::span<const ProcessSample> processes,
                                      std::span<const std::size_t> indices);

}  // namespace trainmon
