// SPDX-License-Identifier: Apache-2.0
// open_nvml_backend: load, init (on a start-up worker, so that a hung driver blocks no caller),
// enumerate, and at the end stop the workers and shut NVML down (or leave it mapped when a call hangs).
// The ticks' scheduling on worker threads is in nvml_tick_schedule.cpp.
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

std::vector<SymbolBinding> NvmlBackend::bindings() const {
  return lib_ ? lib_->bindings() : std::vector<SymbolBinding>{};
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
