// SPDX-License-Identifier: Apache-2.0
// Dynamic device metrics: memory, utilization, temperature, power, energy, fan and P-state.
#include "exports_util.h"

using namespace fake_nvml;

namespace fake_nvml {

unsigned long long memory_used(const Call& c) {
  if (auto v = c.metric("memory_used")) return rounded<unsigned long long>(*v);
  unsigned long long sum = 0;
  for (const auto& p : c.sc->processes) {
    if (p.gpu != c.gpu || !p.alive(c.t)) continue;
    if (c.mig != nullptr && (p.gi_id != c.mig->gi_id || p.ci_id != c.mig->ci_id)) continue;
    const double used = p.used_memory.at(c.t);
    if (!std::isnan(used)) sum += rounded<unsigned long long>(used);  // a `null` (N/A) process adds nothing
  }
  return sum;
}

}  // namespace fake_nvml

namespace {

struct Mem {
  unsigned long long total, reserved, used, free;
};

Mem memory_of(const Call& c) {
  Mem m{};
  m.total = c.mig ? c.mig->memory_total : c.dev->memory_total;
  m.reserved = rounded<unsigned long long>(c.metric("memory_reserved").value_or(0));
  m.used = memory_used(c);
  m.reserved = std::min(m.reserved, m.total);
  m.used = std::min(m.used, m.total - m.reserved);
  m.free = m.total - m.reserved - m.used;
  // A scenario may give free itself: the driver measures each value on its own, so free need not be
  // total - reserved - used (the captures show nvidia-smi's MiB values off by one or two that way).
  if (auto f = c.metric("memory_free")) m.free = std::min(rounded<unsigned long long>(*f), m.total);
  return m;
}

/// Device-level utilization is unsupported on MIG-enabled GPUs and on MIG device handles.
bool util_unsupported(const Call& c) {
  return c.mig != nullptr || c.dev->mig_enabled();
}

int engine_util(const Call& c, const char* key, unsigned int* utilization, unsigned int* samplingPeriodUs) {
  FAKE_NEED(utilization);
  FAKE_NEED(samplingPeriodUs);
  if (util_unsupported(c)) return NVML_ERROR_NOT_SUPPORTED;
  const int rc = put_metric(c, key, utilization);
  if (rc == NVML_SUCCESS) *samplingPeriodUs = 166666;
  return rc;
}

int power_limit_value(const std::optional<unsigned>& v, unsigned int* out) {
  FAKE_NEED(out);
  if (!v) return NVML_ERROR_NOT_SUPPORTED;
  *out = *v;
  return NVML_SUCCESS;
}

}  // namespace

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  FAKE_ENTER(device);
  FAKE_NEED(memory);
  const Mem m = memory_of(c);
  // v1: "used" includes the driver-reserved memory (gpustat #141).
  *memory = nvmlMemory_t{m.total, m.free, m.used + m.reserved};
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t* memory) {
  FAKE_ENTER(device);
  FAKE_NEED(memory);
  if (memory->version != TRAINMON_NVML_STRUCT_VERSION(nvmlMemory_v2_t, 2))
    return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  const Mem m = memory_of(c);
  memory->total = m.total;
  memory->reserved = m.reserved;
  memory->free = m.free;
  memory->used = m.used;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetBAR1MemoryInfo(nvmlDevice_t device, nvmlBAR1Memory_t* bar1Memory) {
  FAKE_ENTER(device);
  FAKE_NEED(bar1Memory);
  if (on_mig_handle(c) || c.dev->bar1_total == 0) return NVML_ERROR_NOT_SUPPORTED;
  const unsigned long long total = c.dev->bar1_total;
  const unsigned long long used =
      std::min(total, rounded<unsigned long long>(c.metric("bar1_used").value_or(0)));
  *bar1Memory = nvmlBAR1Memory_t{total, total - used, used};
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device,
                                                            nvmlUtilization_t* utilization) {
  FAKE_ENTER(device);
  FAKE_NEED(utilization);
  if (util_unsupported(c)) return NVML_ERROR_NOT_SUPPORTED;
  const auto gpu = c.metric("utilization_gpu");
  if (!gpu) return NVML_ERROR_NOT_SUPPORTED;
  utilization->gpu = std::isnan(*gpu) ? all_ones<unsigned>() : std::min(100u, rounded<unsigned>(*gpu));
  utilization->memory = std::min(100u, rounded<unsigned>(c.metric("utilization_memory").value_or(0)));
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetEncoderUtilization(nvmlDevice_t device, unsigned int* utilization,
                                                              unsigned int* samplingPeriodUs) {
  FAKE_ENTER(device);
  return engine_util(c, "utilization_encoder", utilization, samplingPeriodUs);
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetDecoderUtilization(nvmlDevice_t device, unsigned int* utilization,
                                                              unsigned int* samplingPeriodUs) {
  FAKE_ENTER(device);
  return engine_util(c, "utilization_decoder", utilization, samplingPeriodUs);
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetJpgUtilization(nvmlDevice_t device, unsigned int* utilization,
                                                          unsigned int* samplingPeriodUs) {
  FAKE_ENTER(device);
  return engine_util(c, "utilization_jpeg", utilization, samplingPeriodUs);
}
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetOfaUtilization(nvmlDevice_t device, unsigned int* utilization,
                                                          unsigned int* samplingPeriodUs) {
  FAKE_ENTER(device);
  return engine_util(c, "utilization_ofa", utilization, samplingPeriodUs);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, unsigned int sensorType,
                                                       unsigned int* temp) {
  FAKE_ENTER(device);
  FAKE_NEED(temp);
  if (sensorType != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
  if (on_mig_handle(c)) return NVML_ERROR_NOT_SUPPORTED;
  return put_metric(c, "temperature_gpu", temp);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTemperatureThreshold(nvmlDevice_t device,
                                                                unsigned int thresholdType,
                                                                unsigned int* temp) {
  FAKE_ENTER(device);
  FAKE_NEED(temp);
  if (on_mig_handle(c)) return NVML_ERROR_NOT_SUPPORTED;
  auto it = c.dev->temperature_thresholds.find(thresholdType);
  if (it == c.dev->temperature_thresholds.end()) return NVML_ERROR_NOT_SUPPORTED;
  *temp = it->second;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* power) {
  FAKE_ENTER(device);
  if (on_mig_handle(c)) return NVML_ERROR_NOT_SUPPORTED;
  return put_metric(c, "power_draw", power);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t device, unsigned int* limit) {
  FAKE_ENTER(device);
  if (on_mig_handle(c)) return NVML_ERROR_NOT_SUPPORTED;
  return power_limit_value(c.dev->power_limit, limit);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int* limit) {
  FAKE_ENTER(device);
  if (on_mig_handle(c)) return NVML_ERROR_NOT_SUPPORTED;
  return power_limit_value(c.dev->power_enforced_limit ? c.dev->power_enforced_limit : c.dev->power_limit,
                           limit);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t device,
                                                                       unsigned int* defaultLimit) {
  FAKE_ENTER(device);
  if (on_mig_handle(c)) return NVML_ERROR_NOT_SUPPORTED;
  return power_limit_value(c.dev->power_default_limit, defaultLimit);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t device,
                                                                           unsigned int* minLimit,
                                                                           unsigned int* maxLimit) {
  FAKE_ENTER(device);
  FAKE_NEED(minLimit);
  FAKE_NEED(maxLimit);
  if (on_mig_handle(c) || !c.dev->power_min_limit || !c.dev->power_max_limit) return NVML_ERROR_NOT_SUPPORTED;
  *minLimit = *c.dev->power_min_limit;
  *maxLimit = *c.dev->power_max_limit;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device,
                                                                  unsigned long long* energy) {
  FAKE_ENTER(device);
  FAKE_NEED(energy);
  if (on_mig_handle(c)) return NVML_ERROR_NOT_SUPPORTED;
  if (auto e = c.metric("energy")) {
    *energy = rounded<unsigned long long>(*e);
    return NVML_SUCCESS;
  }
  const Timeline* p = c.dev->metric("power_draw");
  if (p == nullptr) return NVML_ERROR_NOT_SUPPORTED;
  // mW integrated over seconds = mJ; plus the energy counted before the scenario started.
  *energy = rounded<unsigned long long>(p->integral(c.t) + c.metric("energy_start").value_or(0));
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetNumFans(nvmlDevice_t device, unsigned int* numFans) {
  FAKE_ENTER(device);
  FAKE_NEED(numFans);
  if (on_mig_handle(c)) return NVML_ERROR_NOT_SUPPORTED;
  *numFans = c.dev->num_fans;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetFanSpeed(nvmlDevice_t device, unsigned int* speed) {
  FAKE_ENTER(device);
  FAKE_NEED(speed);
  if (on_mig_handle(c) || c.dev->num_fans == 0) return NVML_ERROR_NOT_SUPPORTED;  // passively cooled
  return put_metric(c, "fan_speed", speed);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPerformanceState(nvmlDevice_t device, unsigned int* pState) {
  FAKE_ENTER(device);
  FAKE_NEED(pState);
  if (on_mig_handle(c)) return NVML_ERROR_NOT_SUPPORTED;
  return put_metric(c, "pstate", pState);
}
