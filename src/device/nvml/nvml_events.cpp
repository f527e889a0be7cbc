// SPDX-License-Identifier: Apache-2.0
#include "device/nvml/nvml_events.h"

#include <chrono>
#include <thread>
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
  std::vector<std::pair<nvmlDevice_t, unsigned>> index_of;
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
    index_of.emplace_back(handles[i], i);
    ++registered_;
  }
  if (registered_ == 0) {
    status_ = "events not watched: no device supports Xid/ECC/clock events";
    a.event_set_free(set_);
    set_ = nullptr;
    return;
  }
  thread_ = std::make_unique<device::DeviceWorker>();
  // The loop holds its own references (library, queue), so a detached, stuck loop stays valid.
  thread_->try_submit([lib = lib_, set = set_, shared = shared_, index_of = std::move(index_of)] {
    const NvmlApi& api = lib->api();
    while (!shared->stop.load(std::memory_order_relaxed)) {
      nvmlEventData_t data{};
      int rc = api.event_set_wait(set, &data, kEventWaitMs);
      if (rc == NVML_ERROR_TIMEOUT) continue;
      if (rc != NVML_SUCCESS) {  // e.g. a lost GPU: do not spin
        std::this_thread::sleep_for(std::chrono::milliseconds(kEventWaitMs));
        continue;
      }
      GpuEvent e;
      e.time_unix_ns = now_unix_ns();
      e.gpu_index = 0xFFFFFFFFu;
      for (const auto& [h, idx] : index_of) {
        if (h == data.device) e.gpu_index = idx;
      }
      e.event_type = data.eventType;
      e.xid = (data.eventType & nvmlEventTypeXidCriticalError) ? data.eventData : 0;
      e.gpu_instance_id = data.gpuInstanceId;
      e.compute_instance_id = data.computeInstanceId;
      std::lock_guard lock(shared->mu);
      if (shared->queue.size() >= kMaxQueuedEvents) {
        ++shared->dropped;
      } else {
        shared->queue.push_back(e);
      }
    }
  });
}

EventWatcher::~EventWatcher() {
  stop(std::chrono::steady_clock::now() + std::chrono::seconds(1));
}

std::vector<GpuEvent> EventWatcher::drain() {
  std::lock_guard lock(shared_->mu);
  return std::exchange(shared_->queue, {});
}

bool EventWatcher::stop(std::chrono::steady_clock::time_point deadline) {
  if (stopped_) return true;
  stopped_ = true;
  shared_->stop.store(true);
  bool joined = true;
  if (thread_) {
    thread_->request_stop();
    joined = thread_->stop_until(deadline);
  }
  if (joined && set_ != nullptr) lib_->api().event_set_free(set_);
  if (!joined) lib_->leak();
  set_ = nullptr;
  return joined;
}

}  // namespace trainmon::nvml
