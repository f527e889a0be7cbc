// SPDX-License-Identifier: Apache-2.0
// The NVML event thread: one event set registered for Xid critical errors, single/double-bit ECC
// errors and clock changes (only the types each device supports), waited on with a bounded timeout
// so that shutdown takes at most kEventWaitMs. MIG device handles do not support events and are never
// registered.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "device/device_worker.h"
#include "device/nvml/nvml_loader.h"
#include "trainmon/core/gpu_sample.h"

namespace trainmon::nvml {

/// The event types trainmon asks for (nvmlEventType bits).
inline constexpr unsigned long long kWantedEvents = nvmlEventTypeXidCriticalError |
                                                    nvmlEventTypeSingleBitEccError |
                                                    nvmlEventTypeDoubleBitEccError | nvmlEventTypeClock;
/// nvmlEventSetWait timeout per wait (ms): the longest shutdown waits on a healthy driver (every
/// `run`, `record` and `serve` pays up to this at exit: 500 ms made `trainmon run -- true` take
/// 0.5 s instead of 0.1 s), against 1000 / kEventWaitMs driver calls a second with no event.
inline constexpr unsigned kEventWaitMs = 100;
/// Events kept between two drain() calls; older ones are dropped (and counted) beyond this.
inline constexpr std::size_t kMaxQueuedEvents = 10000;

class EventWatcher {
 public:
  /// Registers every handle (index = position in `handles`; null handles are skipped) and starts
  /// the thread. `status()` says why nothing is watched when no device could be registered.
  EventWatcher(std::shared_ptr<NvmlLibrary> lib, const std::vector<nvmlDevice_t>& handles);
  /// Stops with a bounded wait; see stop().
  ~EventWatcher();
  EventWatcher(const EventWatcher&) = delete;
  EventWatcher& operator=(const EventWatcher&) = delete;

  /// Events received since the previous call, oldest first.
  std::vector<GpuEvent> drain();
  /// Stop the thread, waiting until `deadline`. False when the thread is stuck inside
  /// nvmlEventSetWait past the deadline (it is then detached and the event set is not freed).
  bool stop(std::chrono::steady_clock::time_point deadline);
  /// "" when watching; otherwise one line saying why not (no symbols, no supported types ...).
  const std::string& status() const noexcept { return status_; }
  /// Devices registered (for tests and doctor output).
  unsigned registered_devices() const noexcept { return registered_; }

 private:
  struct Shared {
    std::mutex mu;
    std::vector<GpuEvent> queue;
    std::uint64_t dropped = 0;
    std::atomic<bool> stop{false};
  };
  std::shared_ptr<NvmlLibrary> lib_;
  nvmlEventSet_t set_ = nullptr;
  std::shared_ptr<Shared> shared_;
  std::unique_ptr<device::DeviceWorker> thread_;
  std::string status_;
  unsigned registered_ = 0;
  bool stopped_ = false;
};

}  // namespace trainmon::nvml
