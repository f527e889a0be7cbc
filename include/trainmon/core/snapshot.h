// SPDX-License-Identifier: Apache-2.0
// Snapshot: one immutable picture of the machine at one tick. Views only read snapshots;
// only device/ and host/ touch the machine (DESIGN.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainmon/core/gpu_sample.h"
#include "trainmon/core/host_sample.h"
#include "trainmon/core/reading.h"

namespace trainmon {

/// State of the GPU backend as a whole (one per snapshot).
struct DriverInfo {
  bool loaded = false;  ///< NVML library loaded and initialised
  /// nvmlInit (or the device count) has not returned yet: a slow or hung driver. `loaded` is false
  /// and `error` says for how long; the GPUs are sampled from the first tick after it answers.
  bool starting = false;
  std::string library_path;             ///< what dlopen() opened
  std::string error;                    ///< one clear line when !loaded (what was tried)
  Reading<std::string> driver_version;  ///< "590.48.01"
  Reading<std::string> nvml_version;    ///< "13.590.48.01"
  Reading<int> cuda_driver_version;     ///< 13010 means 13.1
  Reading<unsigned> device_count;
};

struct Snapshot {
  std::int64_t time_unix_ns = 0;  ///< wall clock when the tick started
  std::int64_t monotonic_ns = 0;  ///< CLOCK_MONOTONIC, for rates and intervals
  DriverInfo driver;
  std::vector<GpuSample> gpus;                  ///< in NVML index order
  std::vector<GpuProcessSample> gpu_processes;  ///< every GPU's processes, by gpu then pid
  std::vector<GpuEvent> events;                 ///< events received since the previous snapshot
  HostSample host;
  std::vector<ProcessSample> processes;  ///< the host processes that were asked for
};

/// The local process the join matched `gp` to (joined_to_host), or nullptr: a GPU process that is
/// not visible from here, or exited, has no local process even when one has the same pid number.
/// Every view that shows a GPU process's user, command line or host memory goes through this.
inline const ProcessSample* host_process_of(const Snapshot& snap, const GpuProcessSample& gp) noexcept {
  if (!joined_to_host(gp.host)) return nullptr;
  for (const auto& p : snap.processes)
    if (p.pid == gp.pid) return &p;
  return nullptr;
}

}  // namespace trainmon
