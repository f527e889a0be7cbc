// SPDX-License-Identifier: Apache-2.0
// The one-line resource report printed every --print-every seconds (MISSION.md §3), in the article's
// format, byte for byte the one python/trainmon prints (python/trainmon/_format.py):
//   Resource @ epoch 45/200: GPU0(V100): 94.2%/87.1% GPU1(V100): 12.3%/15.6% | Mem: 62.3%(38.2G/61.4G)
//   | CPU: 42.1% | RSS: 5.1G | train: 1234.5 samples/s step 0.412s data 12.3%
// (one line). GPU utilisation % / GPU memory used %, host memory used % (total - MemAvailable, with
// used/total GiB), host CPU busy %, the job tree's RSS (GiB), and the training loop's throughput,
// median step time and data-wait share over the last interval. An N/A GPU value prints as "N/A";
// parts without data are left out. Without an epoch the progress is the elapsed time ("@ 00:12:30").
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "trainmon/core/snapshot.h"
#include "trainmon/diagnose/train_series.h"

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

/// The model part of a GPU name, as in the article's line: "Tesla V100-SXM2-32GB" -> "V100",
/// "NVIDIA H200" -> "H200", "NVIDIA GeForce RTX 4090" -> "RTX 4090"; "?" for an empty name. The same
/// rule as python/trainmon/_format.py short_gpu_name.
std::string short_gpu_name(std::string_view name);

/// The resource line for `snap`, `elapsed_ms` after the start. `job` adds "| RSS: x.yG"; `epoch`
/// (e.g. "45/200", from the training process) replaces the time with "epoch 45/200"; `train` (the
/// last interval's figures; null or empty: none) adds "| train: ...". Terminal-safe (text::terminal:
/// GPU names come from the driver). The labels "Resource", "Mem", "train:" and "data" are in the
/// selected language (i18n::tr, the same msgids as python/trainmon/_format.py, whose
/// RESOURCE_LINE_RE matches both); numbers, units, "epoch", "step" and "samples/s" never change.
std::string format_resource_line(const Snapshot& snap, std::int64_t elapsed_ms,
                                 const std::optional<JobTotals>& job,
                                 const std::optional<std::string>& epoch = std::nullopt,
                                 const diagnose::TrainStats* train = nullptr);

/// The train part's text ("1234.5 samples/s step 0.412s data 12.3%"), empty when nothing is known.
std::string format_train_part(const diagnose::TrainStats& train);

}  // namespace trainmon::recorder
