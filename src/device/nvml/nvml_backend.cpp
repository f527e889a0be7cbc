// SPDX-License-Identifier: Apache-2.0
// open_nvml_backend: load, init, enumerate, then sample the devices on worker threads with a common
// deadline per tick (BackendOptions::device_timeout): quick devices one after the other on one shared
// worker, followed there by the NVML event poll, the others (first ticks, blocking calls, hung or lost
// GPUs) each on its own.
#include "device/nvml/nvml_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <ctime>
#include <exception>

#include "device/nvml/nvml_error.h"
#include "device/nvml/nvml_validate.h"

namespace trainmon::nvml {

namespace {

std::string init_failure_line(const NvmlLibrary& lib, int rc) {
  // The reason and the advice first, the library and the driver's own code last (driver_failure_line).
  const std::string detail =
      lib.bound_name("nvmlInit_v2") + ": " + nvml_error_name_or_number(rc) + ", library " + lib.path();
  switch (rc) {
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return driver_failure_line(
          "NVIDIA driver not loaded",
          "load it (`sudo modprobe nvidia`) or check `lsmod | grep nvidia`, `dmesg` and "
          "`nvidia-smi`",
          detail);
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
      return driver_failure_line(
          "NVIDIA driver/library version mismatch",
          "the driver was probably upgraded without reloading the kernel module: reboot, or compare "
          "`cat /proc/driver/nvidia/version` with the library version",
          detail);
    case NVML_ERROR_NO_PERMISSION:
      return driver_failure_line("no permission to use the NVIDIA driver",
                                 "check that your user may open /dev/nvidiactl and /dev/nvidia* (its groups; "
                                 "in a container, the devices it was given)",
                                 detail);
    case NVML_ERROR_LIBRARY_NOT_FOUND:
      // What the CUDA toolkit's stub libnvidia-ml.so answers.
      return driver_failure_line("NVML library is the CUDA toolkit's stub",
                                 "point TRAINMON_NVML_LIBRARY at the driver's libnvidia-ml.so.1, not at "
                                 ".../stubs/",
                                 detail);
    default:
      return driver_failure_line("NVML failed to start (" + std::string(nvml_error_sentence(rc)) + ")",
                                 kNvmlHint, detail);
  }
}

template <std::size_t N>
Reading<std::string> read_version(int rc, const std::array<char, N>& buf) {
  if (rc != NVML_SUCCESS) return nvml_fail<std::string>(rc);
  return checked_string(buf.data(), N);
}

}  // namespace

NvmlBackend::NvmlBackend(const BackendOptions& options) : options_(options) {
  driver_.device_count = Reading<unsigned>::fail(ReadStatus::not_collected);
  auto loaded = load_nvml_library(nvml_library_candidates(options.library_path));
  if (!loaded) {
    driver_.error = loaded.error().message;
    driver_.device_count = Reading<unsigned>::fail(ReadStatus::failed, loaded.error().code);
    return;
  }
  lib_ = std::make_shared<NvmlLibrary>(std::move(*loaded));
  driver_.library_path = lib_->path();
  if (options_.watch_events) events_ = std::make_unique<EventWatcher>(lib_);

  // nvmlInit and the device count run on a worker: a driver that hangs in them (a GPU stuck in a
  // reset, a wedged kernel module) must not block the caller, whose host monitoring goes on.
  startup_ = std::make_shared<Startup>();
  startup_worker_ = std::make_unique<device::DeviceWorker>();
  startup_began_ = std::chrono::steady_clock::now();
  startup_began_wall_ = std::chrono::system_clock::now();
  (void)startup_worker_->try_submit(
      startup_job(lib_, startup_, events_ ? events_->create_set_job() : nullptr));
  const auto deadline = startup_began_ + options_.init_wait;
  if (wait_startup(deadline)) {
    // The event set is created right after the count: give it the rest of the wait too, so that a
    // quick driver leaves no start-up thread behind.
    (void)startup_worker_->wait_until(
        std::min(deadline, std::chrono::steady_clock::now() + options_.device_timeout));
    finish_startup();
  }
}

std::function<void()> NvmlBackend::startup_job(std::shared_ptr<NvmlLibrary> lib, std::shared_ptr<Startup> st,
                                               std::function<void()> then) {
  return [lib = std::move(lib), st = std::move(st), then = std::move(then)] {
    const NvmlApi& a = lib->api();
    const int rc = a.init();
    if (rc != NVML_SUCCESS) {
      {
        std::lock_guard lock(st->mu);
        st->init_rc = rc;
        st->done = true;
      }
      st->cv.notify_all();
      return;
    }
    std::array<char, NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE> dv{};
    auto driver_version =
        read_version(a.system_get_driver_version ? a.system_get_driver_version(dv.data(), unsigned{dv.size()})
                                                 : NVML_ERROR_FUNCTION_NOT_FOUND,
                     dv);
    std::array<char, NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE> nv{};
    auto nvml_version =
        read_version(a.system_get_nvml_version ? a.system_get_nvml_version(nv.data(), unsigned{nv.size()})
                                               : NVML_ERROR_FUNCTION_NOT_FOUND,
                     nv);
    int cuda = 0;
    const int crc = a.system_get_cuda_driver_version ? a.system_get_cuda_driver_version(&cuda)
                                                     : NVML_ERROR_FUNCTION_NOT_FOUND;
    unsigned count = 0;
    const int count_rc = a.device_get_count(&count);
    {
      std::lock_guard lock(st->mu);
      st->driver_version = std::move(driver_version);
      st->nvml_version = std::move(nvml_version);
      st->cuda_rc = crc;
      st->cuda = cuda;
      st->count_rc = count_rc;
      st->count = count_rc == NVML_SUCCESS ? count : 0;
      st->done = true;
    }
    st->cv.notify_all();
    if (then) then();  // the event set (the devices register in their own first ticks)
  };
}

bool NvmlBackend::wait_startup(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(startup_->mu);
  for (;;) {
    auto step = deadline;
    if (options_.stop_requested)
      step = std::min(deadline, std::chrono::steady_clock::now() + kStopPollInterval);
    if (startup_->cv.wait_until(lock, step, [&] { return startup_->done; })) return true;
    if (step >= deadline) return false;
    lock.unlock();
    const bool stop = options_.stop_requested();
    lock.lock();
    if (stop) return startup_->done;
  }
}

void NvmlBackend::finish_startup() {
  std::shared_ptr<Startup> st = std::move(startup_);
  std::unique_lock lock(st->mu);
  if (st->init_rc != NVML_SUCCESS) {
    driver_.error = init_failure_line(*lib_, st->init_rc);
    driver_.device_count = nvml_fail<unsigned>(st->init_rc);
    lock.unlock();
    // The job returned right after init failed: nothing of the library is used any more.
    if (startup_worker_ && startup_worker_->stop(std::chrono::milliseconds(1000))) {
      startup_worker_.reset();
      events_.reset();
      lib_.reset();  // dlclose
    }
    return;
  }
  initialised_ = true;
  driver_.loaded = true;
  driver_.driver_version = st->driver_version;
  driver_.nvml_version = st->nvml_version;
  driver_.cuda_driver_version =
      st->cuda_rc != NVML_SUCCESS
          ? nvml_fail<int>(st->cuda_rc)
          : (st->cuda > 0 ? Reading<int>::of(st->cuda) : Reading<int>::fail(ReadStatus::invalid_value));
  unsigned count = st->count;
  if (st->count_rc != NVML_SUCCESS) {
    driver_.device_count = nvml_fail<unsigned>(st->count_rc);
    driver_.error = driver_failure_line(
        "NVML cannot count the GPUs (" + std::string(nvml_error_sentence(st->count_rc)) + ")",
        "check `nvidia-smi -L` and `dmesg`",
        nvml_error_name_or_number(st->count_rc) + " from " + lib_->bound_name("nvmlDeviceGetCount_v2") +
            ", library " + lib_->path());
  } else {
    driver_.device_count = Reading<unsigned>::of(count);
    if (count == 0) {
      driver_.error = driver_failure_line("NVML reports no GPUs",
                                          "check `nvidia-smi -L`, and in a container the --gpus option "
                                          "(CUDA_VISIBLE_DEVICES is not applied by "
                                          "NVML)",
                                          "library " + lib_->path());
    }
  }
  lock.unlock();
  if (count > 1024) count = 1024;  // a corrupt count must not allocate the world
  std::function<bool(nvmlDevice_t, unsigned)> register_events;
  if (events_) {
    events_->expect_devices(count);
    register_events = events_->register_job();
    if (count > 0) event_poll_ = events_->poll_job();
  }
  for (unsigned i = 0; i < count; ++i) {
    // The handle is looked up by the device's own first tick (under device_timeout): a GPU that
    // hangs there holds up nothing else.
    Device d;
    d.ctx = std::make_shared<DeviceContext>(lib_, nullptr, i, options_);
    d.ctx->register_events = register_events;
    d.ctx->events_done = !register_events;
    d.ctx->options.stop_requested = nullptr;  // the workers never call it
    if (!options_.first_tick_shared) d.own = std::make_unique<device::DeviceWorker>();
    auto info = std::make_shared<GpuStaticInfo>();
    info->index = i;
    d.last_info = std::move(info);
    devices_.push_back(std::move(d));
  }
  if (startup_worker_ && !startup_worker_->busy()) {
    // Its thread serves the first tick's shared job when the devices start there (one thread less).
    if (options_.first_tick_shared && !shared_worker_) shared_worker_ = std::move(startup_worker_);
    startup_worker_.reset();
  }
}

DriverInfo NvmlBackend::driver_info() const {
  if (!startup_) return driver_;
  DriverInfo d = driver_;
  d.starting = true;
  // The same line on every tick while it lasts (views say a changed message again): the time it
  // began, not for how long.
  const std::time_t began = std::chrono::system_clock::to_time_t(startup_began_wall_);
  std::tm tm{};
  localtime_r(&began, &tm);
  char at[16];
  std::strftime(at, sizeof at, "%H:%M:%S", &tm);
  d.error = driver_failure_line(
      fmt::format("NVML is not answering: {} has not returned since {}", lib_->bound_name("nvmlInit_v2"), at),
      "a hung driver: check `nvidia-smi` and `dmesg` for Xid errors; the GPUs are not monitored until it "
      "returns",
      "library " + lib_->path());
  return d;
}

NvmlBackend::~NvmlBackend() {
  const auto now = std::chrono::steady_clock::now();
  const auto grace =
      std::clamp(options_.device_timeout, std::chrono::milliseconds(100), std::chrono::milliseconds(1000));
  auto deadline = now + grace;
  // A worker inside one call for longer than device_timeout (or in nvmlInit) is hung: then the
  // library stays mapped and NVML initialised anyway, so nothing is worth waiting for.
  bool stuck = startup_worker_ && startup_worker_->busy() && now - startup_began_ >= options_.device_timeout;
  for (const auto& d : devices_) {
    if (d.own && d.own->busy() && now - d.job_started >= options_.device_timeout) stuck = true;
  }
  if (stuck) deadline = now;
  bool all_joined = true;
  if (startup_worker_) startup_worker_->request_stop();
  for (auto& d : devices_) {
    if (d.own) d.own->request_stop();
  }
  if (shared_worker_) shared_worker_->request_stop();
  if (events_) all_joined = events_->stop(deadline, options_.device_timeout) && all_joined;
  if (startup_worker_) all_joined = startup_worker_->stop_until(deadline) && all_joined;
  for (auto& d : devices_) {
    if (d.own) all_joined = d.own->stop_until(deadline) && all_joined;
  }
  if (shared_worker_) all_joined = shared_worker_->stop_until(deadline) && all_joined;
  if (!all_joined) {
    // A detached thread may still be inside the driver: keep it mapped, do not shut it down.
    if (lib_) lib_->leak();
    return;
  }
  events_.reset();
  devices_.clear();  // frees GPM samples while NVML is still initialised
  if (initialised_ && lib_) lib_->api().shutdown();
}

void NvmlBackend::run_tick(DeviceContext& ctx, TickResult& out) {
  const NvmlApi& a = *ctx.api;
  const bool processes = ctx.options.collect_processes;
  if (ctx.handle == nullptr) {  // the first tick, or the look-up failed: look it up (again)
    nvmlDevice_t h = nullptr;
    int rc = a.device_get_handle_by_index(ctx.index, &h);
    if (rc != NVML_SUCCESS || h == nullptr) {
      out.sample.index = ctx.index;
      out.sample.info = ctx.info;
      set_all_status(out.sample, nvml_read_status(rc == NVML_SUCCESS ? NVML_ERROR_UNKNOWN : rc), rc,
                     processes);
      if (out.sample.responsive.status == ReadStatus::not_supported)
        out.sample.responsive.status = ReadStatus::failed;
      return;
    }
    ctx.handle = h;
  }
  {
    // Static facts count apart: a GPU whose dynamic calls all fail is "failed" on every tick,
    // including the first one where its static facts still read.
    Call static_call;
    read_static_info(ctx, static_call);
    if (static_call.fatal() != 0) {
      out.sample.index = ctx.index;
      out.sample.info = ctx.info;
      set_all_status(out.sample, ReadStatus::gpu_lost, static_call.fatal(), processes);
      return;
    }
  }
  Call call;
  out.sample = read_sample(ctx, call);
  if (call.fatal() != 0) {
    set_all_status(out.sample, ReadStatus::gpu_lost, call.fatal(), processes);
    return;
  }
  if (call.ok_count() == 0 && call.failed_count() > 0) {
    out.sample.responsive = Reading<bool>::fail(ReadStatus::failed, call.last_failure());
  } else {
    out.sample.responsive = Reading<bool>::of(true);
  }
  if (processes) {
    Call pcall;
    const bool mig = out.sample.mig_mode_current.ok() && *out.sample.mig_mode_current == 1;
    out.processes = read_processes(ctx, pcall, out.sample.process_count, mig);
  }
}

void NvmlBackend::run_into(DeviceContext& ctx, TickResult& out) {
  const auto start = std::chrono::steady_clock::now();
  run_tick(ctx, out);
  out.slow = std::chrono::steady_clock::now() - start > kQuickTick;
  out.done.store(true, std::memory_order_release);  // `out` is the sampler's from here on
  // Event registration after the tick's values are handed over: one that hangs keeps this worker
  // busy (the device's next ticks report it as not answering), not this tick's values.
  if (!ctx.events_done.load(std::memory_order_relaxed) && ctx.handle != nullptr)
    ctx.events_done.store(ctx.register_events(ctx.handle, ctx.index), std::memory_order_release);
}

std::function<void()> NvmlBackend::shared_job(std::shared_ptr<SharedTick> t) {
  return [t = std::move(t)] {
    for (std::size_t k = 0; k < t->devices.size(); ++k) {
      {
        std::lock_guard lock(t->mu);
        if (t->abandoned) return;  // the sampler gave up on this tick and took the rest
        if (t->claimed[k]) continue;
        t->claimed[k] = true;
        t->running = static_cast<int>(t->devices[k]);
      }
      run_into(*t->ctx[k], *t->slots[k]);
      std::lock_guard lock(t->mu);
      t->running = -1;
    }
    // The event poll comes last: the devices never wait for it, and one that hangs is found at the
    // handover with every device of this job answered.
    {
      std::lock_guard lock(t->mu);
      if (t->abandoned || !t->poll || t->poll_claimed) return;
      t->poll_claimed = true;
      t->running = kPolling;
    }
    (void)t->poll();  // false: skipped (an earlier poll is still inside the driver)
    std::lock_guard lock(t->mu);
    t->running = -1;
  };
}

void NvmlBackend::start_poll_on_watcher(const std::shared_ptr<device::TickLatch>& latch) {
  latch->expect();
  if (!events_->poll([latch] { latch->arrive(); })) latch->arrive();
}

void NvmlBackend::start_on_own_worker(std::size_t i, const std::shared_ptr<TickResult>& slot,
                                      const std::shared_ptr<device::TickLatch>& latch) {
  Device& d = devices_[i];
  d.own = std::make_unique<device::DeviceWorker>();
  d.calm_ticks = 0;  // its job_started stays the tick's start: the tick asked for it then
  latch->expect();
  if (!d.own->try_submit([ctx = d.ctx, slot] { run_into(*ctx, *slot); }, [latch] { latch->arrive(); }))
    latch->arrive();
}

bool NvmlBackend::wait_latch(device::TickLatch& latch, std::chrono::steady_clock::time_point deadline) {
  if (!options_.stop_requested) return latch.wait_until(deadline);
  for (;;) {
    const auto step = std::min(deadline, std::chrono::steady_clock::now() + kStopPollInterval);
    if (latch.wait_until(step)) return true;
    if (step >= deadline || options_.stop_requested()) return false;
  }
}

void NvmlBackend::sample(std::vector<GpuSample>& gpus, std::vector<GpuProcessSample>& processes,
                         const std::function<void()>& meanwhile) {
  if (startup_) {
    bool done = false;
    {
      std::lock_guard lock(startup_->mu);
      done = startup_->done;
    }
    if (done) {
      finish_startup();  // the devices are sampled from the next tick
    }
    if (meanwhile) meanwhile();  // nothing to overlap with: the caller's own work, and the tick is over
    return;
  }
  if (startup_worker_ && !startup_worker_->busy()) startup_worker_.reset();
  const auto start = std::chrono::steady_clock::now();
  const auto wait = options_.tick_wait.count() > 0 ? std::min(options_.tick_wait, options_.device_timeout)
                                                   : options_.device_timeout;
  const auto deadline = start + wait;
  const auto handover = start + wait / 2;
  // Every job owns what it touches (context, result slot, latch): a job that outlives this tick, or
  // the backend, writes only into memory it keeps alive itself.
  std::vector<std::shared_ptr<TickResult>> slots(devices_.size());
  std::vector<bool> submitted(devices_.size(), false);
  for (auto& slot : slots) slot = std::make_shared<TickResult>();
  // One wake-up for the whole tick: every worker arrives at the latch when its job is done.
  auto latch = std::make_shared<device::TickLatch>();
  auto shared = std::make_shared<SharedTick>();
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    Device& d = devices_[i];
    if (!d.own) {
      shared->devices.push_back(i);
      shared->ctx.push_back(d.ctx);
      shared->slots.push_back(slots[i]);
      shared->claimed.push_back(false);
      submitted[i] = true;
      d.job_started = start;
      continue;
    }
    latch->expect();
    if (d.own->try_submit([ctx = d.ctx, slot = slots[i]] { run_into(*ctx, *slot); },
                          [latch] { latch->arrive(); })) {
      submitted[i] = true;
      d.job_started = start;
    } else {
      latch->arrive();  // still inside an earlier tick's call: nothing to wait for
    }
  }
  // Events pending in the driver join this tick's snapshot (drain_events() after sample()): polled
  // by the shared worker after its devices, else (no shared job this tick) on the watcher's worker.
  bool shared_started = false;
  if (!shared->devices.empty()) {
    if (!shared_worker_) shared_worker_ = std::make_unique<device::DeviceWorker>();
    shared->poll = event_poll_;
    latch->expect();
    shared_started = shared_worker_->try_submit(shared_job(shared), [shared, latch] {
      if (!shared->arrived.exchange(true)) latch->arrive();
    });
    if (!shared_started) {
      // Still finishing an earlier tick (late, not hung: a hung one is handed over below): this
      // tick, each of these devices runs on a worker of its own.
      latch->arrive();
      for (std::size_t i : shared->devices) start_on_own_worker(i, slots[i], latch);
    }
  }
  // While devices still register for events (their first ticks), the poll waits for them: events
  // pending since before the start arrive in the first tick, for every device.
  const bool registering = events_ && std::any_of(devices_.begin(), devices_.end(), [](const Device& d) {
                             return !d.ctx->events_done.load(std::memory_order_acquire);
                           });
  if (events_) {
    if (!shared_started) {
      if (!registering) start_poll_on_watcher(latch);
    } else {
      events_->release_idle_workers();  // the poll has a home without a wake-up of its own
    }
  }
  // The caller's work overlaps the workers'. The deadlines stay where they were: if it took past the
  // handover, the wait below returns at once and the handover happens all the same.
  std::exception_ptr meanwhile_failed;
  if (meanwhile) {
    try {
      meanwhile();
    } catch (...) {
      meanwhile_failed = std::current_exception();
    }
  }
  // The shared worker has half the budget: the devices it has not started by then run on workers of
  // their own in the other half, so the tick still ends by the deadline even when it hangs (and when
  // more GPUs hang in the same tick).
  if (shared_started && !wait_latch(*latch, handover)) {
    int stuck = -1;
    std::vector<std::size_t> taken;  // devices the shared worker did not reach in time
    bool take_poll = false;
    {
      std::lock_guard lock(shared->mu);
      shared->abandoned = true;
      stuck = shared->running;
      for (std::size_t k = 0; k < shared->devices.size(); ++k) {
        if (!shared->claimed[k]) {
          shared->claimed[k] = true;
          taken.push_back(shared->devices[k]);
        }
      }
      if (shared->poll && !shared->poll_claimed) {
        shared->poll_claimed = true;
        take_poll = true;
      }
    }
    if (stuck == kPolling) {
      // Inside the event poll, every device of the job answered: the watcher keeps that worker
      // (polls are skipped while it is stuck), a new one serves the quick devices from the next
      // tick on, and this tick waits for it no longer.
      events_->adopt(std::move(shared_worker_));
      if (!shared->arrived.exchange(true)) latch->arrive();
    } else if (stuck >= 0) {
      // The shared worker is inside this device's calls: it becomes that device's own worker (while
      // busy, the device does not answer), and a new one serves the quick devices from now on.
      Device& d = devices_[static_cast<std::size_t>(stuck)];
      d.own = std::move(shared_worker_);
      d.calm_ticks = 0;
    }
    for (std::size_t i : taken) start_on_own_worker(i, slots[i], latch);
    if (take_poll) start_poll_on_watcher(latch);  // a hung GPU does not cost this tick its events
  }
  if (wait_latch(*latch, deadline) && registering && !shared_started) {
    auto poll_latch = std::make_shared<device::TickLatch>();
    start_poll_on_watcher(poll_latch);
    (void)wait_latch(*poll_latch, deadline);
  }
  const auto end = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    Device& d = devices_[i];
    TickResult& r = *slots[i];
    const bool answered = r.done.load(std::memory_order_acquire);
    const bool calm = answered && !r.slow && r.sample.responsive.ok();
    // This tick's answer, else the answer of an earlier tick's job that came after its tick ended.
    std::shared_ptr<TickResult> late;
    if (!answered && d.pending && d.pending->done.load(std::memory_order_acquire))
      late = std::move(d.pending);
    if (answered) {
      d.pending.reset();
    } else if (submitted[i]) {
      d.pending = slots[i];  // its answer, if it comes, is a later tick's
    }
    TickResult* use = answered ? &r : late.get();
    if (use != nullptr) {
      if (use->sample.info) d.last_info = use->sample.info;
      use->sample.info = d.last_info;
      gpus.push_back(std::move(use->sample));
      for (auto& p : use->processes) processes.push_back(std::move(p));
    } else {
      // Still inside NVML calls (this tick's, or an earlier tick's): past device_timeout the device
      // does not respond; before that it is only slower than this tick (nothing collected yet).
      GpuSample s;
      s.index = static_cast<unsigned>(i);
      s.info = d.last_info;
      const bool hung = end - d.job_started >= options_.device_timeout;
      set_all_status(s, hung ? ReadStatus::timeout : ReadStatus::not_collected, 0,
                     options_.collect_processes && hung);
      gpus.push_back(std::move(s));
    }
    // Where the device is sampled next tick: a device that was slow (e.g. the 20 ms PCIe call) or did
    // not answer keeps (or gets) a worker of its own, so its wait runs in parallel with the others;
    // one that answered quickly kCalmTicksToShare ticks in a row joins the shared worker.
    if (d.own) {
      d.calm_ticks = calm ? d.calm_ticks + 1 : 0;
      if (d.calm_ticks >= kCalmTicksToShare && !d.own->busy()) d.own.reset();
    } else if (answered && r.slow) {
      d.own = std::make_unique<device::DeviceWorker>();
      d.calm_ticks = 0;
    }
  }
  if (meanwhile_failed) std::rethrow_exception(meanwhile_failed);
}

std::vector<GpuEvent> NvmlBackend::drain_events() {
  return events_ ? events_->drain() : std::vector<GpuEvent>{};
}

std::vector<SymbolBinding> NvmlBackend::bindings() const {
  return lib_ ? lib_->bindings() : std::vector<SymbolBinding>{};
}

unsigned NvmlBackend::devices_on_shared_worker() const {
  return static_cast<unsigned>(
      std::count_if(devices_.begin(), devices_.end(), [](const Device& d) { return !d.own; }));
}

unsigned NvmlBackend::worker_threads() const {
  unsigned n = shared_worker_ ? 1u : 0u;
  for (const auto& d : devices_) n += d.own ? 1u : 0u;
  return n + (events_ ? events_->worker_threads() : 0u);
}

std::string NvmlBackend::events_status() const {
  if (!options_.watch_events) return "events not watched: disabled";
  return events_ ? events_->status() : "events not watched: NVML not loaded or no devices";
}

}  // namespace trainmon::nvml

namespace trainmon {

std::unique_ptr<DeviceBackend> open_nvml_backend(const BackendOptions& options) {
  return std::make_unique<nvml::NvmlBackend>(options);
}

}  // namespace trainmon
