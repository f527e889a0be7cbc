// SPDX-License-Identifier: Apache-2.0
// DeviceBackend: the GPU seam (DESIGN.md "The GPU seam"). One implementation per vendor; NVML now.
// A backend never throws; every per-field failure is a Reading status, every whole-call failure
// an Error. One failing or hung device never blanks the others.
#pragma once

#include <algorithm>
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
  /// A device whose NVML calls have not returned after this long (its handle look-up and event
  /// registration included) is reported as ReadStatus::timeout ("not responding") and sampled on a
  /// worker of its own from then on.
  std::chrono::milliseconds device_timeout{2000};
  /// The longest one sample() waits for the devices, counted from its start; 0: device_timeout.
  /// A looping caller sets it below its interval (kTickWaitShare of it) so that a device that hangs
  /// never stretches a tick. A device still inside younger calls at that point is reported as not
  /// collected this tick (every Reading not_collected, `responsive` too), and its answer, when it
  /// comes later, is the next tick's sample.
  std::chrono::milliseconds tick_wait{0};
  /// How long open_nvml_backend() waits for nvmlInit and the device count before it returns with
  /// the driver still starting (DriverInfo::starting; sample() then reports no GPUs, and picks the
  /// devices up at the first tick after the driver answered). Device handles and event registration
  /// are not part of it: each device does them in its own first tick, under device_timeout.
  std::chrono::milliseconds init_wait{2000};
  /// Polled about every kStopPollInterval while open_nvml_backend() or sample() waits for the driver:
  /// when it returns true the wait ends at once (a SIGTERM does not wait for a hung GPU); the devices
  /// that have not answered are reported as for tick_wait. Empty: never. Called on the waiting thread.
  std::function<bool()> stop_requested;
  bool collect_processes = true;         ///< compute/graphics process lists + per-process utilisation
  bool collect_high_res_samples = true;  ///< nvmlDeviceGetSamples since the previous tick
  bool collect_pcie_throughput = true;   ///< byte counters; else a ~20 ms blocking call per direction
  bool collect_gpm = true;               ///< Hopper+ GPM metrics
  bool watch_events = true;              ///< poll Xid/ECC/clock events at each tick
  /// nvidia-smi's rarer --query-gpu fields (inforom, accounting, driver model, display attached,
  /// T.Limit temperature, encoder stats, fabric): about 14 more NVML calls a tick, so off for the
  /// monitors and on for `query` and `status --json`.
  bool collect_extended = false;
  bool collect_supported_clocks = false;  ///< the supported memory / graphics clock table (static)
  /// Where the devices' first ticks run (handle look-up, static facts, event registration). false:
  /// a worker thread each, so that a device slow or hung there holds up no other (the monitors).
  /// true: one after another on the shared worker, the thread that ran nvmlInit: a one-shot command
  /// (status, query) starts no thread per GPU, which on a busy machine is most of its wall time. A
  /// device that hangs there still costs the others at most half the tick's wait: then they move
  /// to workers of their own, as in every tick.
  bool first_tick_shared = false;
};

/// The share of a looping caller's interval that sample() may wait for the devices (tick_wait): the
/// rest is left for the host reads after it, so the loop keeps its interval.
inline constexpr double kTickWaitShare = 0.75;
/// How often a wait polls BackendOptions::stop_requested (only while waiting for a slow driver).
inline constexpr std::chrono::milliseconds kStopPollInterval{50};

/// BackendOptions::init_wait of the commands that show only GPUs (dmon, pmon, query, status): they
/// have nothing to show without the driver, so they wait for a slow nvmlInit (seconds on a machine
/// without persistence mode, where the driver sets up every GPU first) before saying it does not
/// answer. Monitoring loops (record, serve, run, top, agent) wait only their tick_wait: the host is
/// sampled meanwhile and the GPUs join when the driver answers.
inline constexpr std::chrono::milliseconds kGpuCommandInitWait{10000};

/// tick_wait for a loop sampling every `interval`: kTickWaitShare of it, at most device_timeout.
inline std::chrono::milliseconds tick_wait_for(std::chrono::nanoseconds interval,
                                               std::chrono::milliseconds device_timeout) {
  const auto share = std::chrono::duration_cast<std::chrono::milliseconds>(interval * kTickWaitShare);
  return std::max(std::chrono::milliseconds(1), std::min(share, device_timeout));
}

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;

  /// Driver-wide facts (versions, count); `loaded == false` with `error` set when init failed.
  virtual DriverInfo driver_info() const = 0;
  /// Number of devices found at init (0 when not loaded).
  virtual unsigned device_count() const = 0;
  /// Sample every device: dynamic metrics and, if enabled, processes. Appends to `gpus` and
  /// `processes` in index order. Never throws; a lost or hung device yields a GpuSample whose
  /// `responsive` says so (not_collected while its calls are younger than device_timeout). Returns
  /// within tick_wait (device_timeout when 0), at once when stop_requested; while the driver is still
  /// starting (DriverInfo::starting) it appends nothing and only runs `meanwhile`.
  void sample(std::vector<GpuSample>& gpus, std::vector<GpuProcessSample>& processes) {
    sample(gpus, processes, {});
  }
  /// The same, calling `meanwhile` (when set) once on the caller's thread while the devices are
  /// sampled: after their jobs are submitted, before waiting for them, so the caller's own work (the
  /// host's /proc reads) overlaps the driver calls and, when they are done by then, the caller does
  /// not sleep at all. The tick's deadlines (BackendOptions::tick_wait) count from the start of the
  /// call, so a slow `meanwhile` shortens the wait that follows; it does not extend the tick.
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
