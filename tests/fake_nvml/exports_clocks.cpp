// SPDX-License-Identifier: Apache-2.0
// Clocks, clock event (throttle) reasons, violation counters, PCIe throughput and link details.
#include <chrono>
#include <thread>

#include "exports_util.h"

using namespace fake_nvml;

namespace {

const char* clock_key(unsigned type) {
  switch (type) {
    case NVML_CLOCK_GRAPHICS: return "clock_graphics";
    case NVML_CLOCK_SM: return "clock_sm";
    case NVML_CLOCK_MEM: return "clock_memory";
    case NVML_CLOCK_VIDEO: return "clock_video";
    default: return nullptr;
  }
}

int current_reasons(const Call& c, unsigned long long* reasons) {
  FAKE_NEED(reasons);
  if (on_mig_handle(c)) return NVML_ERROR_NOT_SUPPORTED;
  if (auto v = c.metric("clocks_event_reasons")) {
    *reasons = rounded<unsigned long long>(*v);
    return NVML_SUCCESS;
  }
  if (!c.dev->supported_clock_reasons) return NVML_ERROR_NOT_SUPPORTED;
  *reasons = 0;
  return NVML_SUCCESS;
}

int supported_reasons(const Call& c, unsigned long long* reasons) {
  FAKE_NEED(reasons);
  if (on_mig_handle(c) || !c.dev->supported_clock_reasons) return NVML_ERROR_NOT_SUPPORTED;
  *reasons = *c.dev->supported_clock_reasons;
  return NVML_SUCCESS;
}

}  // namespace

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, unsigned int type,
                                                     unsigned int* clock) {
  FAKE_ENTER(device);
  FAKE_NEED(clock);
  const char* key = clock_key(type);
  if (key == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (on_mig_handle(c)) return NVML_ERROR_NOT_SUPPORTED;
  return put_metric(c, key, clock);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, unsigned int type,
                                                        unsigned int* clock) {
  FAKE_ENTER(device);
  FAKE_NEED(clock);
  if (clock_key(type) == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (on_mig_handle(c)) return NVML_ERROR_NOT_SUPPORTED;
  auto it = c.dev->max_clocks.find(type);
  if (it == c.dev->max_clocks.end()) return NVML_ERROR_NOT_SUPPORTED;
  *clock = it->second;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetClock(nvmlDevice_t device, unsigned int clockType,
                                                 unsigned int clockId, unsigned int* clockMHz) {
  FAKE_ENTER(device);
  FAKE_NEED(clockMHz);
  const char* key = clock_key(clockType);
  if (key == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (on_mig_handle(c)) return NVML_ERROR_NOT_SUPPORTED;
  if (clockId == 0) return put_metric(c, key, clockMHz);  // NVML_CLOCK_ID_CURRENT
  if (clockId == 3) {                                     // CUSTOMER_BOOST_MAX
    auto it = c.dev->max_clocks.find(clockType);
    if (it == c.dev->max_clocks.end()) return NVML_ERROR_NOT_SUPPORTED;
    *clockMHz = it->second;
    return NVML_SUCCESS;
  }
  return NVML_ERROR_NOT_SUPPORTED;  // application clocks are not modelled
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device,
                                                                     unsigned long long* clocksEventReasons) {
  FAKE_ENTER(device);
  return current_reasons(c, clocksEventReasons);
}
FAKE_NVML_EXPORT nvmlReturn_t
nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device, unsigned long long* clocksThrottleReasons) {
  FAKE_ENTER(device);
  return current_reasons(c, clocksThrottleReasons);
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetSupportedClocksEventReasons(
    nvmlDevice_t device, unsigned long long* supportedClocksEventReasons) {
  FAKE_ENTER(device);
  return supported_reasons(c, supportedClocksEventReasons);
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetSupportedClocksThrottleReasons(
    nvmlDevice_t device, unsigned long long* supportedClocksThrottleReasons) {
  FAKE_ENTER(device);
  return supported_reasons(c, supportedClocksThrottleReasons);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetViolationStatus(nvmlDevice_t device, unsigned int perfPolicyType,
                                                           nvmlViolationTime_t* violTime) {
  static const char* const kKeys[] = {"violation_power_ns",      "violation_thermal_ns",
                                      "violation_sync_boost_ns", "violation_board_limit_ns",
                                      "violation_low_util_ns",   "violation_reliability_ns"};
  FAKE_ENTER(device);
  FAKE_NEED(violTime);
  if (perfPolicyType >= std::size(kKeys)) return NVML_ERROR_NOT_SUPPORTED;
  if (on_mig_handle(c)) return NVML_ERROR_NOT_SUPPORTED;
  violTime->referenceTime = wall_now_us();
  violTime->violationTime = rounded<unsigned long long>(c.metric(kKeys[perfPolicyType]).value_or(0));
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t device, unsigned int counter,
                                                          unsigned int* value) {
  FAKE_ENTER(device);
  FAKE_NEED(value);
  if (counter != NVML_PCIE_UTIL_TX_BYTES && counter != NVML_PCIE_UTIL_RX_BYTES)
    return NVML_ERROR_INVALID_ARGUMENT;
  if (on_mig_handle(c)) return NVML_ERROR_NOT_SUPPORTED;
  // The driver measures over a 20 ms window and blocks that long (btop runs it on a thread).
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return put_metric(c, counter == NVML_PCIE_UTIL_TX_BYTES ? "pcie_tx" : "pcie_rx", value);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t device, unsigned int* value) {
  FAKE_ENTER(device);
  if (on_mig_handle(c) || c.dev->pcie_gen_max == 0) return NVML_ERROR_NOT_SUPPORTED;
  return put_metric_or(c, "pcie_replay_counter", value, 0);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPcieSpeed(nvmlDevice_t device, unsigned int* pcieSpeed) {
  static const unsigned kMbpsPerLane[] = {0, 2500, 5000, 8000, 16000, 32000, 64000};
  FAKE_ENTER(device);
  FAKE_NEED(pcieSpeed);
  if (on_mig_handle(c) || c.dev->pcie_gen_max == 0) return NVML_ERROR_NOT_SUPPORTED;
  const unsigned gen = rounded<unsigned>(c.metric("pcie_gen_current").value_or(c.dev->pcie_gen_current));
  *pcieSpeed = gen < std::size(kMbpsPerLane) ? kMbpsPerLane[gen] : 0;  // MB/s per lane, as the driver reports
  return NVML_SUCCESS;
}
