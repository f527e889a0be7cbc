// SPDX-License-Identifier: Apache-2.0
// NvmlBackend: DeviceBackend over NVML (dlopen'ed). Created by open_nvml_backend(); this header
// exists so that `trainmon doctor` and tests can see which symbols were bound (dynamic_cast).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "device/device_worker.h"
#include "device/nvml/nvml_device.h"
#include "device/nvml/nvml_events.h"
#include "device/nvml/nvml_loader.h"
#include "trainmon/device/backend.h"

namespace trainmon::nvml {

class NvmlBackend final : public DeviceBackend {
 public:
  /// Loads the library, then runs nvmlInit, the driver versions and the device count (and creates
  /// the event set) on a start-up worker, waiting up to BackendOptions::init_wait for the count:
  /// a driver that hangs there leaves the backend starting (DriverInfo::starting) instead of
  /// blocking its caller. Device handles and event registration happen in each device's own ticks.
  explicit NvmlBackend(const BackendOptions& options);
  /// Stops the workers and the event thread with a bounded wait (clamp(device_timeout, 100 ms,
  /// 1 s)), none at all when a worker is known to be stuck (inside one call for longer than
  /// device_timeout, or in nvmlInit): then every worker still inside NVML is detached, nvmlShutdown
  /// is skipped and the library is never dlclose()d (the stuck call may still return into it).
  ~NvmlBackend() override;

  DriverInfo driver_info() const override;
  unsigned device_count() const override { return static_cast<unsigned>(devices_.size()); }
  using DeviceBackend::sample;
  void sample(std::vector<GpuSample>& gpus, std::vector<GpuProcessSample>& processes,
              const std::function<void()>& meanwhile) override;
  std::vector<GpuEvent> drain_events() override;

  /// Which name each table entry was bound to (empty when NVML was not loaded).
  std::vector<SymbolBinding> bindings() const;
  /// Devices sampled by the shared worker at the next tick (see Device; for tests and `doctor`).
  unsigned devices_on_shared_worker() const;
  /// The event poll's state: "" when watching, else why not.
  std::string events_status() const;
  /// Worker threads held now: devices' own, the shared worker, the event watcher's (detached ones,
  /// stuck in a call past a shutdown, are not counted). 1 once the GPUs all share (for tests).
  unsigned worker_threads() const;

 private:
  struct TickResult {
    GpuSample sample;
    std::vector<GpuProcessSample> processes;
    bool slow = false;              ///< the tick took longer than kQuickTick
    std::atomic<bool> done{false};  ///< set (release) by the worker after the fields above
  };
  /// Where each device is sampled. A worker per GPU isolates a GPU that hangs, but costs one thread
  /// wake-up per GPU per tick, which on an idle (virtual) machine costs more CPU than the NVML calls
  /// themselves. So devices whose ticks are quick share one worker that samples them one after the
  /// other (one wake-up a tick), and a device gets a worker of its own
  ///  - at the start (the first ticks read the static facts and may make blocking calls),
  ///  - when its tick was slow, longer than kQuickTick (nvmlDeviceGetPcieThroughput waits 20 ms per
  ///    direction where the driver has no PCIe byte counters: such waits run in parallel, not one
  ///    GPU after another),
  ///  - when the shared worker had not finished within half of device_timeout: that worker, inside
  ///    the device's calls, becomes the device's own, and the devices after it in the tick are each
  ///    given a worker of their own, so they still answer in that tick, and the tick still ends by
  ///    device_timeout (also when more GPUs hang in it),
  ///  - when it did not answer or is lost;
  /// and goes back to the shared worker after kCalmTicksToShare quick ticks in a row.
  /// The NVML event poll runs in the shared worker's job too, after the devices (no wake-up of its
  /// own, and a hung nvmlEventSetWait never delays a GPU): if the worker is still inside it at half
  /// of device_timeout, the worker is handed over to the EventWatcher (later polls are skipped while
  /// it is stuck) and a new shared worker serves the devices from the next tick on. A tick without a
  /// shared job polls on the watcher's own worker.
  struct Device {
    std::shared_ptr<DeviceContext> ctx;
    std::unique_ptr<device::DeviceWorker> own;       ///< nullptr: sampled by shared_worker_
    unsigned calm_ticks = 0;                         ///< quick, answered ticks in a row on `own`
    std::shared_ptr<const GpuStaticInfo> last_info;  ///< what a timed-out tick shows
    /// The job still running (or done after its tick ended) whose answer no tick has shown yet: the
    /// next tick shows it when that tick's own job is not done by then.
    std::shared_ptr<TickResult> pending;
    std::chrono::steady_clock::time_point job_started;  ///< when the job `pending` began
  };
  /// What the start-up job found; shared with it (it may outlive the backend when init hangs).
  struct Startup {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;  ///< init, versions and count are in
    int init_rc = NVML_SUCCESS;
    int count_rc = NVML_SUCCESS;
    unsigned count = 0;
    Reading<std::string> driver_version, nvml_version;
    int cuda_rc = NVML_SUCCESS;
    int cuda = 0;
  };
  static std::function<void()> startup_job(std::shared_ptr<NvmlLibrary> lib, std::shared_ptr<Startup> st,
                                           std::function<void()> then);
  /// Waits for the start-up job until `deadline` (polling options_.stop_requested); true when done.
  bool wait_startup(std::chrono::steady_clock::time_point deadline);
  /// The start-up job is done: the driver's facts and the devices (no driver call here).
  void finish_startup();
  /// Waits on `latch` until `deadline`, polling options_.stop_requested; true when all arrived.
  bool wait_latch(device::TickLatch& latch, std::chrono::steady_clock::time_point deadline);
  /// One tick of the shared worker: which devices it may still start (claimed under `mu`, so that a
  /// device is never sampled by two threads) and which one it is inside.
  struct SharedTick {
    std::mutex mu;
    bool abandoned = false;            ///< the sampler took the unstarted devices (and the poll): stop
    int running = -1;                  ///< device index inside its NVML calls now, kPolling, -1 between them
    std::function<bool()> poll;        ///< the event poll, after the devices; empty: none this tick
    bool poll_claimed = false;         ///< the poll was started (here, or by the sampler elsewhere)
    std::atomic<bool> arrived{false};  ///< the latch was told this job is over (only once)
    std::vector<std::size_t> devices;
    std::vector<bool> claimed;
    std::vector<std::shared_ptr<DeviceContext>> ctx;
    std::vector<std::shared_ptr<TickResult>> slots;
  };
  static constexpr int kPolling = -2;  ///< SharedTick::running: inside the event poll
  static constexpr unsigned kCalmTicksToShare = 3;
  /// A tick quicker than this may share the worker: 8 such GPUs one after another take < 80 ms, well
  /// inside any sampling interval (>= 100 ms) and the default 2 s device timeout.
  static constexpr std::chrono::milliseconds kQuickTick{10};
  static void run_tick(DeviceContext& ctx, TickResult& out);
  static void run_into(DeviceContext& ctx, TickResult& out);
  static std::function<void()> shared_job(std::shared_ptr<SharedTick> t);
  /// The watcher polls on its own worker, arriving at `latch` when done.
  void start_poll_on_watcher(const std::shared_ptr<device::TickLatch>& latch);
  /// Give device `i` a worker of its own and start its tick there, arriving at `latch` when done.
  void start_on_own_worker(std::size_t i, const std::shared_ptr<TickResult>& slot,
                           const std::shared_ptr<device::TickLatch>& latch);

  BackendOptions options_;
  DriverInfo driver_;
  std::shared_ptr<NvmlLibrary> lib_;
  bool initialised_ = false;
  std::shared_ptr<Startup> startup_;                      ///< null once finished (or never started)
  std::unique_ptr<device::DeviceWorker> startup_worker_;  ///< runs startup_job; kept while busy
  std::chrono::steady_clock::time_point startup_began_;
  std::chrono::system_clock::time_point startup_began_wall_;  ///< for the "not answering" line
  std::vector<Device> devices_;
  std::unique_ptr<device::DeviceWorker> shared_worker_;
  std::unique_ptr<EventWatcher> events_;
  std::function<bool()> event_poll_;  ///< events_->poll_job(), made once
};

}  // namespace trainmon::nvml
