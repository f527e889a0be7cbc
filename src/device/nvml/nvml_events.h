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
#include <optional>
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
  /// Makes no driver call: the event set is created by create_set_job() (on the backend's start-up
  /// worker) and each device is registered by register_device() (in that device's own tick), so a
  /// driver that hangs there holds up nothing else. `status()` says why nothing is watched.
  explicit EventWatcher(std::shared_ptr<NvmlLibrary> lib);
  /// Stops with a bounded wait; see stop().
  ~EventWatcher();
  EventWatcher(const EventWatcher&) = delete;
  EventWatcher& operator=(const EventWatcher&) = delete;

  /// nvmlEventSetCreate as a job for another thread; it holds what it touches, so it may outlive the
  /// watcher (a set created after stop() is freed at once). Empty when the driver lacks the
  /// nvmlEventSet entry points.
  std::function<void()> create_set_job() const;
  /// Registers device `index` for the wanted types it supports (nvmlDeviceGetSupportedEventTypes,
  /// nvmlDeviceRegisterEvents), for the device's own worker. True when done with the device
  /// (registered, or it supports none of the types, or registration failed); false when the set does
  /// not exist yet (call again at a later tick). The job holds what it touches.
  std::function<bool(nvmlDevice_t, unsigned)> register_job() const;
  /// The GPU count, once known (for status(): every device tried and none registered).
  void expect_devices(unsigned count);

  /// Starts one poll on the watcher's own worker thread (started on first use): nvmlEventSetWait with
  /// a zero timeout until it answers NVML_ERROR_TIMEOUT (or an error, or kMaxEventsPerPoll events),
  /// each event queued for drain() with the poll's wall-clock time. `on_done` runs on the worker
  /// thread when the poll is over (see DeviceWorker::try_submit). False, and `on_done` not called,
  /// when nothing is watched yet, the watcher is stopped, or an earlier poll (on any thread) is still
  /// inside the driver (a hung call: this tick gets no new events).
  bool poll(std::function<void()> on_done = {});
  /// The same poll as a job for a thread of the caller's (the backend's shared worker). Calling it
  /// polls and returns true, or returns false at once, polling nothing, when nothing is registered
  /// yet, the watcher is stopped, or another poll is still inside the driver. It holds what it
  /// touches (library, queue; the event set is freed only once no call uses it), so it may outlive
  /// the watcher. Empty when the driver lacks the nvmlEventSet entry points.
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
  /// Stop the workers and wait until `deadline` for them and for any call using the set on another
  /// thread (a poll, a registration, the set's creation); a poll inside the driver for longer than
  /// `stuck_after` is not waited for at all (it is hung: a shutdown must not wait for it). False
  /// when such a call is still inside the driver (a worker of ours stuck in it is detached, the
  /// library stays mapped, and the last such call frees the event set if it ever returns).
  bool stop(std::chrono::steady_clock::time_point deadline,
            std::chrono::steady_clock::duration stuck_after = std::chrono::steady_clock::duration::max());
  /// "" when watching; otherwise one line saying why not (no symbols, no supported types ...).
  std::string status() const;
  /// Devices registered (for tests and doctor output).
  unsigned registered_devices() const;

 private:
  enum class SetState : std::uint8_t { pending, ready, failed };
  struct Shared {
    mutable std::mutex mu;
    std::condition_variable idle;  ///< notified when a call using the set ends
    std::vector<GpuEvent> queue;
    std::uint64_t dropped = 0;
    SetState set_state = SetState::pending;
    nvmlEventSet_t set = nullptr;
    std::string set_error;  ///< why the set could not be created
    bool polling = false;   ///< a poll is inside the driver (on whichever thread)
    std::chrono::steady_clock::time_point poll_started;
    unsigned users = 0;    ///< calls using the set now (polls, registrations, its creation)
    bool stopped = false;  ///< no call may start: the set is being (or was) freed
    /// stop() gave up waiting for a stuck call: the last one to return frees the set (NVML is then
    /// still initialised and the library mapped: the owner skips nvmlShutdown and dlclose).
    bool free_set_after_use = false;
    std::optional<unsigned> expected;                         ///< GPUs in the system, once the count is known
    unsigned tried = 0;                                       ///< devices done with (registered or not)
    std::vector<std::pair<nvmlDevice_t, unsigned>> index_of;  // registered handle -> GPU index
  };
  /// One poll (see poll()); false when skipped.
  static bool run_poll(const NvmlLibrary& lib, Shared& shared);
  /// A call using the set is over: frees the set when stop() left that to it.
  static void release_set(const NvmlLibrary& lib, Shared& shared, std::unique_lock<std::mutex>& lock);
  std::shared_ptr<NvmlLibrary> lib_;
  std::shared_ptr<Shared> shared_;
  std::unique_ptr<device::DeviceWorker> thread_;  ///< runs poll(); nullptr until needed
  /// Adopted workers stuck in a poll, and an own worker replaced while busy: stopped with the rest.
  std::vector<std::unique_ptr<device::DeviceWorker>> retired_;
  bool has_symbols_ = false;
  bool stopped_ = false;
};

}  // namespace trainmon::nvml
