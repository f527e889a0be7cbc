// SPDX-License-Identifier: Apache-2.0
#include "device/nvml/nvml_events.h"

#include <chrono>
#include <utility>

#include "device/nvml/nvml_error.h"

namespace trainmon::nvml {

namespace {

std::int64_t now_unix_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

EventWatcher::EventWatcher(std::shared_ptr<NvmlLibrary> lib)
    : lib_(std::move(lib)), shared_(std::make_shared<Shared>()) {
  const NvmlApi& a = lib_->api();
  has_symbols_ = a.event_set_create && a.device_register_events && a.event_set_wait && a.event_set_free;
  if (!has_symbols_) {
    shared_->set_state = SetState::failed;
    shared_->set_error = "the driver lacks the nvmlEventSet entry points";
  }
}

void EventWatcher::release_set(const NvmlLibrary& lib, Shared& shared, std::unique_lock<std::mutex>& lock) {
  --shared.users;
  nvmlEventSet_t to_free = nullptr;
  if (shared.users == 0 && shared.free_set_after_use && shared.set != nullptr) {
    to_free = std::exchange(shared.set, nullptr);
  }
  lock.unlock();
  shared.idle.notify_all();  // stop() may be waiting for this call
  if (to_free != nullptr) lib.api().event_set_free(to_free);
}

std::function<void()> EventWatcher::create_set_job() const {
  if (!has_symbols_) return {};
  return [lib = lib_, shared = shared_] {
    {
      std::lock_guard lock(shared->mu);
      if (shared->stopped) return;
      ++shared->users;
    }
    nvmlEventSet_t set = nullptr;
    const int rc = lib->api().event_set_create(&set);
    std::unique_lock lock(shared->mu);
    if (rc != NVML_SUCCESS || set == nullptr) {
      shared->set_state = SetState::failed;
      shared->set_error = nvml_error(rc, "nvmlEventSetCreate").message;
    } else {
      shared->set = set;  // freed by stop(), or by release_set() when stop() gave up on a call
      shared->set_state = SetState::ready;
      if (shared->stopped) shared->free_set_after_use = true;  // created after stop(): nobody wants it
    }
    release_set(*lib, *shared, lock);
  };
}

std::function<bool(nvmlDevice_t, unsigned)> EventWatcher::register_job() const {
  if (!has_symbols_) return {};
  return [lib = lib_, shared = shared_](nvmlDevice_t h, unsigned index) {
    nvmlEventSet_t set = nullptr;
    {
      std::lock_guard lock(shared->mu);
      if (shared->set_state == SetState::pending) return false;  // not created yet: next tick
      if (shared->stopped || shared->set_state == SetState::failed || h == nullptr) {
        ++shared->tried;
        return true;
      }
      set = shared->set;
      ++shared->users;
    }
    const NvmlApi& a = lib->api();
    unsigned long long supported = kWantedEvents;
    bool registered = false;
    if (a.device_get_supported_event_types == nullptr ||
        a.device_get_supported_event_types(h, &supported) == NVML_SUCCESS) {
      const unsigned long long types = supported & kWantedEvents;
      registered = types != 0 && a.device_register_events(h, types, set) == NVML_SUCCESS;
    }
    std::unique_lock lock(shared->mu);
    ++shared->tried;
    if (registered) shared->index_of.emplace_back(h, index);
    release_set(*lib, *shared, lock);
    return true;
  };
}

void EventWatcher::expect_devices(unsigned count) {
  std::lock_guard lock(shared_->mu);
  shared_->expected = count;
}

bool EventWatcher::run_poll(const NvmlLibrary& lib, Shared& shared) {
  nvmlEventSet_t set = nullptr;
  std::vector<std::pair<nvmlDevice_t, unsigned>> index_of;
  {
    std::lock_guard lock(shared.mu);
    if (shared.stopped || shared.polling || shared.set == nullptr || shared.index_of.empty()) return false;
    shared.polling = true;
    shared.poll_started = std::chrono::steady_clock::now();
    ++shared.users;
    set = shared.set;
    index_of = shared.index_of;
  }
  const NvmlApi& api = lib.api();
  const std::int64_t t = now_unix_ns();
  for (std::size_t n = 0; n < kMaxEventsPerPoll; ++n) {
    nvmlEventData_t data{};
    // Timeout 0: answers at once; NVML_ERROR_TIMEOUT means nothing is pending. Any other error (a
    // lost GPU, ...) ends this poll; the next tick polls again.
    if (api.event_set_wait(set, &data, 0) != NVML_SUCCESS) break;
    GpuEvent e;
    e.time_unix_ns = t;
    e.gpu_index = 0xFFFFFFFFu;
    for (const auto& [h, idx] : index_of) {
      if (h == data.device) e.gpu_index = idx;
    }
    e.event_type = data.eventType;
    e.xid = (data.eventType & nvmlEventTypeXidCriticalError) ? data.eventData : 0;
    e.gpu_instance_id = data.gpuInstanceId;
    e.compute_instance_id = data.computeInstanceId;
    std::lock_guard lock(shared.mu);
    if (shared.queue.size() >= kMaxQueuedEvents) {
      ++shared.dropped;
    } else {
      shared.queue.push_back(e);
    }
  }
  std::unique_lock lock(shared.mu);
  shared.polling = false;
  release_set(lib, shared, lock);
  return true;
}

std::function<bool()> EventWatcher::poll_job() const {
  if (!has_symbols_) return {};
  // The job holds its own references (library, queue), so a detached, stuck job stays valid.
  return [lib = lib_, shared = shared_] { return run_poll(*lib, *shared); };
}

bool EventWatcher::poll(std::function<void()> on_done) {
  if (!has_symbols_ || stopped_) return false;
  {
    std::lock_guard lock(shared_->mu);
    // Nothing registered yet, or still inside the driver: skip this tick.
    if (shared_->polling || shared_->set == nullptr || shared_->index_of.empty()) return false;
  }
  if (!thread_) thread_ = std::make_unique<device::DeviceWorker>();
  return thread_->try_submit([job = poll_job()] { (void)job(); }, std::move(on_done));
}

void EventWatcher::adopt(std::unique_ptr<device::DeviceWorker> worker) {
  if (!worker) return;
  if (stopped_) {
    worker->request_stop();
    (void)worker->stop_until(std::chrono::steady_clock::now());  // stuck: detach, never wait
  }
  retired_.push_back(std::move(worker));
}

void EventWatcher::release_idle_workers() {
  // An idle worker joins at once: ending it costs its one wake-up, not a wait.
  if (thread_ && !thread_->busy()) thread_.reset();
  std::erase_if(retired_, [](const auto& w) { return !w->busy(); });
}

unsigned EventWatcher::worker_threads() const noexcept {
  return static_cast<unsigned>(retired_.size()) + (thread_ ? 1u : 0u);
}

EventWatcher::~EventWatcher() {
  stop(std::chrono::steady_clock::now() + std::chrono::seconds(1));
}

std::vector<GpuEvent> EventWatcher::drain() {
  std::lock_guard lock(shared_->mu);
  return std::exchange(shared_->queue, {});
}

std::uint64_t EventWatcher::dropped() const {
  std::lock_guard lock(shared_->mu);
  return shared_->dropped;
}

unsigned EventWatcher::registered_devices() const {
  std::lock_guard lock(shared_->mu);
  return static_cast<unsigned>(shared_->index_of.size());
}

std::string EventWatcher::status() const {
  std::lock_guard lock(shared_->mu);
  if (!shared_->index_of.empty()) return "";
  if (shared_->set_state == SetState::failed) return "events not watched: " + shared_->set_error;
  if (shared_->expected && *shared_->expected == 0) return "events not watched: no devices";
  if (shared_->set_state == SetState::ready && shared_->expected && shared_->tried >= *shared_->expected)
    return "events not watched: no device supports Xid/ECC/clock events";
  return "events not watched yet: no device has answered its event registration";
}

bool EventWatcher::stop(std::chrono::steady_clock::time_point deadline,
                        std::chrono::steady_clock::duration stuck_after) {
  if (stopped_) return true;
  stopped_ = true;
  {
    std::lock_guard lock(shared_->mu);
    shared_->stopped = true;  // no call starts from now on, on any thread
  }
  bool joined = true;
  if (thread_) thread_->request_stop();
  for (auto& w : retired_) w->request_stop();
  {
    // A poll inside the driver for longer than stuck_after is hung: wait for nothing.
    std::lock_guard lock(shared_->mu);
    if (shared_->polling && std::chrono::steady_clock::now() - shared_->poll_started >= stuck_after)
      deadline = std::chrono::steady_clock::now();
  }
  if (thread_) joined = thread_->stop_until(deadline) && joined;
  for (auto& w : retired_) joined = w->stop_until(deadline) && joined;
  nvmlEventSet_t to_free = nullptr;
  {
    // A call on a thread that is not ours (the backend's workers) uses the set too.
    std::unique_lock lock(shared_->mu);
    const bool idle = shared_->idle.wait_until(lock, deadline, [&] { return shared_->users == 0; });
    if (idle) {
      to_free = std::exchange(shared_->set, nullptr);
    } else {
      shared_->free_set_after_use = true;  // the last stuck call frees it if it returns
      joined = false;
    }
  }
  if (to_free != nullptr) lib_->api().event_set_free(to_free);
  if (!joined) lib_->leak();
  return joined;
}

}  // namespace trainmon::nvml
