// SPDX-License-Identifier: Apache-2.0
// NVML events: one event set registered for Xid critical errors, single/double-bit ECC errors and
// clock changes (only the types each device supports), polled once per sampling tick with a zero
// timeout (nvmlEventSetWait returns NVML_ERROR_TIMEOUT at once when nothing is pending) on a worker
// thread of its own, so that a driver call that hangs cannot hold up the tick. MIG device handles do
// not support events and are never registered.
//
// Why a poll per tick and not a thread blocked in nvmlEventSetWait: the events are only used at the
// next tick anyway (the sampler hands them out with the tick's snapshot), while a blocking wait has to
// time out every so often to let the program exit: at 100 ms that was 10 driver calls and wake-ups a
// second on an idle machine, the largest single wake-up source of `trainmon serve`, and every exit
// waited up to one timeout. An event's time is now the tick's poll time: at most one interval late.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "device/device_worker.h"
#include "device/nvml/nvml_loader.h"
#include "trainmon/core/gpu_sample.h"

namespace trainmon::nvml {

/// The event types trainmon asks for (nvmlEventType bits).
inline constexpr unsigned long long kWantedEvents = nvmlEventTypeXidCriticalError |
                                                    nvmlEventTypeSingleBitEccError |
                                                    nvmlEventTypeDoubleBitEccError | nvmlEventTypeClock;
/// Events read by one poll at most: a driver that never answers NVML_ERROR_TIMEOUT (an event storm, or
/// a driver that lies) cannot keep the poll going forever; the rest wait for the next tick.
inline constexpr std::size_t kMaxEventsPerPoll = 1000;
/// Events kept between two drain() calls; newer ones are dropped (and counted) beyond this.
inline constexpr std::size_t kMaxQueuedEvents = 10000;

class EventWatcher {
 public:
  /// Registers every handle (index = position in `handles`; null handles are skipped) and starts
  /// the worker thread. `status()` says why nothing is watched when no device could be registered.
  EventWatcher(std::shared_ptr<NvmlLibrary> lib, const std::vector<nvmlDevice_t>& handles);
  /// Stops with a bounded wait; see stop().
  ~EventWatcher();
  EventWatcher(const EventWatcher&) = delete;
  EventWatcher& operator=(const EventWatcher&) = delete;

  /// Starts one poll on the worker thread: nvmlEventSetWait with a zero timeout until it answers
  /// NVML_ERROR_TIMEOUT (or an error, or kMaxEventsPerPoll events), each event queued for drain()
  /// with the poll's wall-clock time. `on_done` runs on the worker thread when the poll is over
  /// (see DeviceWorker::try_submit). False, and `on_done` not called, when nothing is watched or the
  /// previous poll is still inside the driver (a hung call: this tick gets no new events).
  bool poll(std::function<void()> on_done = {});
  /// Events received since the previous call, oldest first.
  std::vector<GpuEvent> drain();
  /// Events dropped because kMaxQueuedEvents were waiting (no drain() for a long time).
  std::uint64_t dropped() const;
  /// Stop the worker, waiting until `deadline`. False when it is stuck inside nvmlEventSetWait past
  /// the deadline (it is then detached and the event set is not freed).
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
    std::vector<std::pair<nvmlDevice_t, unsigned>> index_of;  // registered handle -> GPU index
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
