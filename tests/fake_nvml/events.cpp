// SPDX-License-Identifier: Apache-2.0
// Event sets: scripted Xid / ECC / ... events delivered by nvmlEventSetWait(_v2) once scenario time
// reaches them, only for registered (device, type) pairs, each once per set.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include "exports_util.h"

/// An event set: registrations and the scripted events already delivered through it.
struct nvmlEventSet_st {
  std::mutex mu;
  std::vector<std::pair<unsigned, unsigned long long>> regs;  // (gpu, event type mask)
  std::set<std::size_t> delivered;                            // indices into Scenario::events
};

using namespace fake_nvml;

namespace {

/// `v2`: write the whole nvmlEventData_t; the plain name writes the old 24-byte layout (no GI/CI ids).
int wait(const char* fn, bool v2, nvmlEventSet_t set, nvmlEventData_t* data, unsigned int timeoutms) {
  Call c = enter(fn, nullptr, false);
  if (c.rc != NVML_SUCCESS) return c.rc;
  FAKE_NEED(set);
  FAKE_NEED(data);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutms);
  for (;;) {
    double next_t = -1;  // scenario time of the next scripted event, -1 when none is left
    double now = 0;
    {
      std::lock_guard lk(set->mu);
      now = scenario_now(*c.sc);
      for (std::size_t i = 0; i < c.sc->events.size(); ++i) {
        const Event& e = c.sc->events[i];
        if (e.t > now) {  // sorted by time
          next_t = e.t;
          break;
        }
        if (set->delivered.contains(i)) continue;
        bool registered = false;
        for (const auto& [gpu, mask] : set->regs) registered |= gpu == e.gpu && (mask & e.type) != 0;
        if (!registered) continue;
        set->delivered.insert(i);
        data->device = handle_of(e.gpu);
        data->eventType = e.type;
        data->eventData = e.data;
        if (v2) {
          data->gpuInstanceId = e.gi_id;
          data->computeInstanceId = e.ci_id;
        }
        return NVML_SUCCESS;
      }
    }
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::steady_clock::duration::zero()) return NVML_ERROR_TIMEOUT;
    // Block like the real call: until the next scripted event is due or the timeout, not in short
    // polls (a 5 ms poll made the fake's event thread the largest CPU cost of a whole `record`).
    // Frozen time: nothing becomes due by waiting.
    std::chrono::steady_clock::duration step = left;
    const double scale = time_scale(*c.sc) > 0 ? time_scale(*c.sc) : 1.0;
    if (next_t >= 0 && !std::getenv("TRAINMON_FAKE_NVML_TIME_S")) {
      const auto due = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>((next_t - now) / scale));
      step = std::clamp<std::chrono::steady_clock::duration>(due, std::chrono::milliseconds(1), left);
    }
    std::this_thread::sleep_for(step);
  }
}

}  // namespace

FAKE_NVML_EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  Call c = enter("nvmlEventSetCreate", nullptr, false);
  if (c.rc != NVML_SUCCESS) return c.rc;
  FAKE_NEED(set);
  *set = new nvmlEventSet_st();
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device,
                                                               unsigned long long* eventTypes) {
  FAKE_ENTER(device);
  FAKE_NEED(eventTypes);
  if (on_mig_handle(c)) return NVML_ERROR_NOT_SUPPORTED;
  *eventTypes = c.dev->supported_event_types;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes,
                                                       nvmlEventSet_t set) {
  FAKE_ENTER(device);
  FAKE_NEED(set);
  if (on_mig_handle(c)) return NVML_ERROR_NOT_SUPPORTED;  // MIG handles cannot register events
  if ((eventTypes & ~c.dev->supported_event_types) != 0) return NVML_ERROR_NOT_SUPPORTED;
  std::lock_guard lk(set->mu);
  set->regs.emplace_back(c.gpu, eventTypes);
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t* data,
                                               unsigned int timeoutms) {
  return wait("nvmlEventSetWait", false, set, data, timeoutms);
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data,
                                                  unsigned int timeoutms) {
  return wait("nvmlEventSetWait_v2", true, set, data, timeoutms);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  FAKE_NEED(set);
  delete set;  // allowed after nvmlShutdown too, so callers never leak a set
  return NVML_SUCCESS;
}
