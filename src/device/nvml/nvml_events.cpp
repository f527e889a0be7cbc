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

EventWatcher::EventWatcher(std::shared_ptr<NvmlLibrary> lib, const std::vector<nvmlDevice_t>& handles)
    : lib_(std::move(lib)), shared_(std::make_shared<Shared>()) {
  const NvmlApi& a = lib_->api();
  if (!a.event_set_create || !a.device_register_events || !a.event_set_wait || !a.event_set_free) {
    status_ = "events not watched: the driver lacks the nvmlEventSet entry points";
    return;
  }
  if (int rc = a.event_set_create(&set_); rc != NVML_SUCCESS || set_ == nullptr) {
    status_ = "events not watched: " + nvml_error(rc, "nvmlEventSetCreate").message;
    set_ = nullptr;
    return;
  }
  for (unsigned i = 0; i < handles.size(); ++i) {
    if (handles[i] == nullptr) continue;
    unsigned long long supported = kWantedEvents;
    if (a.device_get_supported_event_types != nullptr &&
        a.device_get_supported_event_types(handles[i], &supported) != NVML_SUCCESS) {
      continue;
    }
    const unsigned long long types = supported & kWantedEvents;
    if (types == 0) continue;
    if (a.device_register_events(handles[i], types, set_) != NVML_SUCCESS) continue;
    shared_->index_of.emplace_back(handles[i], i);
    ++registered_;
  }
  if (registered_ == 0) {
    status_ = "events not watched: no device supports Xid/ECC/clock events";
    a.event_set_free(set_);
    set_ = nullptr;
    return;
  }
}

bool EventWatcher::run_poll(const NvmlLibrary& lib, nvmlEventSet_t set, Shared& shared) {
  {
    std::lock_guard lock(shared.mu);
    if (shared.stopped || shared.polling) return false;
    shared.polling = true;
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
    for (const auto& [h, idx] : shared.index_of) {
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
  bool free_set = false;
  {
    std::lock_guard lock(shared.mu);
    shared.polling = false;
    free_set = shared.free_set_after_poll;
  }
  shared.idle.notify_all();               // stop() may be waiting for this poll
  if (free_set) api.event_set_free(set);  // stop() gave up on this poll: the set is ours to free
  return true;
}

std::function<bool()> EventWatcher::poll_job() const {
  if (set_ == nullptr) return {};
  // The job holds its own references (library, queue), so a detached, stuck job stays valid.
  return [lib = lib_, set = set_, shared = shared_] { return run_poll(*lib, set, *shared); };
}

bool EventWatcher::poll(std::function<void()> on_done) {
  if (set_ == nullptr || stopped_) return false;
  {
    std::lock_guard lock(shared_->mu);
    if (shared_->polling) return false;  // still inside the driver: skip this tick
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

bool EventWatcher::stop(std::chrono::steady_clock::time_point deadline) {
  if (stopped_) return true;
  stopped_ = true;
  {
    std::lock_guard lock(shared_->mu);
    shared_->stopped = true;  // no poll starts from now on, on any thread
  }
  bool joined = true;
  if (thread_) thread_->request_stop();
  for (auto& w : retired_) w->request_stop();
  if (thread_) joined = thread_->stop_until(deadline) && joined;
  for (auto& w : retired_) joined = w->stop_until(deadline) && joined;
  bool idle = false;
  {
    // A poll on a thread that is not ours (the backend's shared worker) uses the set too.
    std::unique_lock lock(shared_->mu);
    idle = shared_->idle.wait_until(lock, deadline, [&] { return !shared_->polling; });
    if (!idle) shared_->free_set_after_poll = true;  // the stuck poll frees it if it returns
  }
  if (idle && set_ != nullptr) lib_->api().event_set_free(set_);
  joined = joined && idle;
  if (!joined) lib_->leak();
  set_ = nullptr;
  return joined;
}

}  // namespace trainmon::nvml
