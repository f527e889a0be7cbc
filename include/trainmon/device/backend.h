// SPDX-License-Identifier: Apache-2.0
// DeviceBackend: the GPU seam (DESIGN.md "The GPU seam"). One implementation per vendor; NVML now.
// A backend never throws; every per-field failure is a Reading status, every whole-call failure
// an Error. One failing or hung device never blanks the others.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "trainmon/core/error.h"
#include "trainmon/core/gpu_sample.h"
#include "trainmon/core/snapshot.h"

namespace trainmon {

/// Options for opening a backend.
struct BackendOptions {
  /// Library to dlopen. Empty: $TRAINMON_NVML_LIBRARY, then "libnvidia-ml.so.1", then "libnvidia-ml.so".
  std::string library_path;
  /// Deadline for one device's sample; a device whose NVML calls take longer is reported as
  /// ReadStatus::timeout for that tick and sampled on its own worker from then on.
  std::chrono::milliseconds device_timeout{2000};
  bool collect_processes = true;         ///< compute/graphics process lists + per-process utilisation
  bool collect_high_res_samples = true;  ///< nvmlDeviceGetSamples since the previous tick
  bool collect_pcie_throughput = true;   ///< byte counters; else a ~20 ms blocking call per direction
  bool collect_gpm = true;               ///< Hopper+ GPM metrics
  bool watch_events = true;              ///< poll Xid/ECC/clock events at each tick
};

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;

  /// Driver-wide facts (versions, count); `loaded == false` with `error` set when init failed.
  virtual DriverInfo driver_info() const = 0;
  /// Number of devices found at init (0 when not loaded).
  virtual unsigned device_count() const = 0;
  /// Sample every device: dynamic metrics and, if enabled, processes. Appends to `gpus` and
  /// `processes` in index order. Never throws; a lost or hung device yields a GpuSample whose
  /// `responsive` says so.
  void sample(std::vector<GpuSample>& gpus, std::vector<GpuProcessSample>& processes) {
    sample(gpus, processes, {});
  }
  /// The same, calling `meanwhile` (when set) once on the caller's thread while the devices are
  /// sampled: after their jobs are submitted, before waiting for them, so the caller's own work (the
  /// host's /proc reads) overlaps the driver calls and, when they are done by then, the caller does
  /// not sleep at all. The tick's deadlines (BackendOptions::device_timeout) count from the start of
  /// the call, so a slow `meanwhile` shortens the wait that follows; it does not extend the tick.
  /// `meanwhile` must not call back into the backend; an exception from it is rethrown once the
  /// tick is over.
  virtual void sample(std::vector<GpuSample>& gpus, std::vector<GpuProcessSample>& processes,
                      const std::function<void()>& meanwhile) = 0;
  /// Events received since the previous call (moved out). The NVML backend reads pending events
  /// from the driver during sample() (a zero-timeout poll), so they arrive with the tick's snapshot;
  /// their time is that poll's, at most one sampling interval after the event.
  virtual std::vector<GpuEvent> drain_events() = 0;
};

/// Open the NVML backend. Returns a backend even when NVML cannot be loaded or initialised: its
/// driver_info() then says what was tried, and device_count() is 0 (host monitoring goes on).
std::unique_ptr<DeviceBackend> open_nvml_backend(const BackendOptions& options = {});

}  // namespace trainmon
