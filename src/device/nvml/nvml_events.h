// SPDX-License-Identifier: Apache-2.0
// NVML events: one event set registered for Xid critical errors, single/double-bit ECC errors and
// clock changes (only the types each device supports), polled once per sampling tick with a zero
// timeout (nvmlEventSetWait returns NVML_ERROR_TIMEOUT at once when nothing is pending). MIG device
// handles do not support events and are never registered.
//
// Where the poll runs: on the NVML backend's shared worker, in the same job as the quick devices and
// after them (poll_job()), so that it costs no thread wake-up of its own; when a tick has no shared
// job (the first ticks, every device on a worker of its own), on a worker of the watcher's own,
// started on first use (poll()). Either way a driver call that hangs cannot hold up the tick: at most
// one poll is inside the driver at a time, later ones are skipped while it is (that tick gets no new
// events), and a shared worker stuck in the poll is handed over to the watcher (adopt()).
//
// Why a poll per tick and not a thread blocked in nvmlEventSetWait: the events are only used at the
// next tick anyway (the sampler hands them out with the tick's snapshot), while a blocking wait has to
// time out every so often to let the program exit: at 100 ms that was 10 driver calls and wake-ups a
// second on an idle machine, the largest single wake-up source of `trainmon serve`, and every exit
// waited up to one timeout. An event's time is now the tick's poll time: at most one interval late.
#pragma once

#include <chrono>
#include <condition_variable>
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
  /// Registers every handle (index = position in `handles`; null handles are skipped); no thread is
  /// started yet. `status()` says why nothing is watched when no device could be registered.
  EventWatcher(std::shared_ptr<NvmlLibrary> lib, const std::vector<nvmlDevice_t>& handles);
  /// Stops with a bounded wait; see stop().
  ~EventWatcher();
  EventWatcher(const EventWatcher&) = delete;
  EventWatcher& operator=(const EventWatcher&) = delete;

  /// Starts one poll on the watcher's own worker thread (started on first use): nvmlEventSetWait with
  /// a zero timeout until it answers NVML_ERROR_TIMEOUT (or an error, or kMaxEventsPerPoll events),
  /// each event queued for drain() with the poll's wall-clock time. `on_done` runs on the worker
  /// thread when the poll is over (see DeviceWorker::try_submit). False, and `on_done` not called,
  /// when nothing is watched, the watcher is stopped, or an earlier poll (on any thread) is still
  /// inside the driver (a hung call: this tick gets no new events).
  bool poll(std::function<void()> on_done = {});
  /// The same poll as a job for a thread of the caller's (the backend's shared worker). Calling it
  /// polls and returns true, or returns false at once, polling nothing, when the watcher is stopped
  /// or another poll is still inside the driver. It holds what it touches (library, queue; the event
  /// set is freed only once no poll runs), so it may outlive the watcher. Empty when nothing is
  /// watched.
  std::function<bool()> poll_job() const;
  /// `worker` is stuck inside a poll_job() call (a hung nvmlEventSetWait): it becomes the watcher's
  /// own, so that stop() waits for it (with its bound) and polls are skipped while it is busy.
  void adopt(std::unique_ptr<device::DeviceWorker> worker);
  /// Ends the watcher's own worker threads that are idle (the polls run on the shared worker now).
  void release_idle_workers();
  /// Worker threads the watcher holds now (0 while the polls run elsewhere; for tests).
  unsigned worker_threads() const noexcept;
  /// Events received since the previous call, oldest first.
  std::vector<GpuEvent> drain();
  /// Events dropped because kMaxQueuedEvents were waiting (no drain() for a long time).
  std::uint64_t dropped() const;
  /// Stop the workers and wait until `deadline` for them and for a poll running on another thread.
  /// False when a poll is still inside nvmlEventSetWait at the deadline (a worker of ours stuck in it
  /// is detached, the library stays mapped, and that poll frees the event set if it ever returns).
  bool stop(std::chrono::steady_clock::time_point deadline);
  /// "" when watching; otherwise one line saying why not (no symbols, no supported types ...).
  const std::string& status() const noexcept { return status_; }
  /// Devices registered (for tests and doctor output).
  unsigned registered_devices() const noexcept { return registered_; }

 private:
  struct Shared {
    std::mutex mu;
    std::condition_variable idle;  ///< notified when a poll ends
    std::vector<GpuEvent> queue;
    std::uint64_t dropped = 0;
    bool polling = false;  ///< a poll is inside the driver (on whichever thread)
    bool stopped = false;  ///< no poll may start: the set is being (or was) freed
    /// stop() gave up waiting for a stuck poll: that poll frees the set when it returns (NVML is
    /// then still initialised and the library mapped: the owner skips nvmlShutdown and dlclose).
    bool free_set_after_poll = false;
    std::vector<std::pair<nvmlDevice_t, unsigned>> index_of;  // registered handle -> GPU index
  };
  /// One poll (see poll()); false when skipped.
  static bool run_poll(const NvmlLibrary& lib, nvmlEventSet_t set, Shared& shared);
  std::shared_ptr<NvmlLibrary> lib_;
  nvmlEventSet_t set_ = nullptr;
  std::shared_ptr<Shared> shared_;
  std::unique_ptr<device::DeviceWorker> thread_;  ///< runs poll(); nullptr until needed
  /// Adopted workers stuck in a poll, and an own worker replaced while busy: stopped with the rest.
  std::vector<std::unique_ptr<device::DeviceWorker>> retired_;
  std::string status_;
  unsigned registered_ = 0;
  bool stopped_ = false;
};

}  // namespace trainmon::nvml
