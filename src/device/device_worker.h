// SPDX-License-Identifier: Apache-2.0
// DeviceWorker: one thread per GPU so that an NVML call that hangs (a GPU falling off the bus)
// cannot freeze the program. The sampler hands each worker one job per tick and waits for all of
// them up to a common deadline; a worker still inside a previous job is reported as busy and gets
// no new work.
//
// Shutdown choice: bounded join, then detach. stop() waits up to `grace` for the thread to leave
// its current job; a thread still stuck is detached. Everything the job touches is held by
// shared_ptr inside the job itself, so a detached thread that returns later finds its data alive;
// the owner must also keep the NVML library mapped (NvmlLibrary::leak()) and skip nvmlShutdown when
// stop() returns false.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace trainmon::device {

/// Counts the jobs of one tick still running, so that the sampler sleeps once until all of them
/// are done (or a deadline passes) instead of waking once per worker.
class TickLatch {
 public:
  /// One more job to wait for.
  void expect();
  /// One job is done (or was never started).
  void arrive();
  /// Waits until every expected job arrived or `deadline` passes. True when all arrived.
  bool wait_until(std::chrono::steady_clock::time_point deadline);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::size_t pending_ = 0;
};

class DeviceWorker {
 public:
  DeviceWorker();
  /// Calls stop() with a 1 s grace period if the owner did not.
  ~DeviceWorker();
  DeviceWorker(const DeviceWorker&) = delete;
  DeviceWorker& operator=(const DeviceWorker&) = delete;

  /// Start `job` on the worker thread. False (job dropped) when the previous job is still running
  /// or the worker is stopped. `on_idle`, when given, runs on the worker thread right after the job,
  /// once the worker accepts work again (busy() is false), so a caller told by it may submit at once.
  bool try_submit(std::function<void()> job, std::function<void()> on_idle = {});
  /// Wait until the current job has finished or `deadline` passes. True when idle.
  bool wait_until(std::chrono::steady_clock::time_point deadline);
  /// True while a job is running (e.g. stuck in a hung NVML call).
  bool busy() const;
  /// Ask the thread to exit and wait up to `grace`. True when it exited and was joined; false when
  /// it was still inside a job and has been detached (see the file comment).
  bool stop(std::chrono::milliseconds grace);
  /// The two halves of stop(), so that many workers can be told first and then waited for with
  /// one common deadline.
  void request_stop();
  bool stop_until(std::chrono::steady_clock::time_point deadline);

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    std::function<void()> job;
    std::function<void()> on_idle;
    bool busy = false;
    bool stopping = false;
    bool exited = false;
  };
  static void run(std::shared_ptr<State> state);

  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace trainmon::device
