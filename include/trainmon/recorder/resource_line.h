// SPDX-License-Identifier: Apache-2.0
// The one-line resource report printed every --print-every seconds (MISSION.md §3):
//   Resource @ 00:12:30: GPU0 94.2%/87.1% GPU1 12.3%/15.6% | Mem 62.3% (38.2G/61.4G) | CPU 42.1% | RSS 5.1G
// GPU utilisation % / GPU memory used %, host memory used % (used/total GiB), host CPU busy %, the
// job tree's RSS (GiB). A value that is N/A prints as "N/A".
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "trainmon/core/snapshot.h"

namespace trainmon::recorder {

/// Sums over the watched job's processes at one tick.
struct JobTotals {
  std::size_t processes = 0;
  std::uint64_t rss_bytes = 0;
  double cpu_pct = 0;  ///< per-core basis (250 = two and a half cores)
};

/// Utilisation to report for a GPU: the mean of the driver's high-resolution samples of this tick
/// when there are any, else utilization.gpu; nullopt when neither is available.
std::optional<double> gpu_utilization(const GpuSample& gpu);

/// The resource line for `snap`, `elapsed_ms` after the start. `job` adds "| RSS x.yG"; `epoch`
/// (e.g. "45/200", from the training process: a later issue) replaces the time with "epoch 45/200".
std::string format_resource_line(const Snapshot& snap, std::int64_t elapsed_ms,
                                 const std::optional<JobTotals>& job,
                                 const std::optional<std::string>& epoch = std::nullopt);

}  // namespace trainmon::recorder
