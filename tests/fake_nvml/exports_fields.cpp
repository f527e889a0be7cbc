// SPDX-License-Identifier: Apache-2.0
// nvmlDeviceGetFieldValues: the field ids trainmon and DCGM-style tools read, answered from the
// same metrics as the dedicated getters; other ids get a per-field NOT_SUPPORTED.
#include "exports_util.h"

using namespace fake_nvml;

namespace {

/// Fills one field; returns the per-field status.
int field(const Call& c, nvmlFieldValue_t& f) {
  const Device& d = *c.dev;
  const bool ecc = d.ecc_current.value_or(0) == 1;
  auto ull = [&](double v) {
    f.valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
    f.value.ullVal = rounded<unsigned long long>(v);
    return NVML_SUCCESS;
  };
  auto ui = [&](double v) {
    f.valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
    f.value.ullVal = 0;
    f.value.uiVal = rounded<unsigned>(v);
    return NVML_SUCCESS;
  };
  auto metric_ui = [&](const char* key) {
    const auto v = c.metric(key);
    return v ? ui(*v) : NVML_ERROR_NOT_SUPPORTED;
  };
  if (c.mig != nullptr) return NVML_ERROR_NOT_SUPPORTED;
  switch (f.fieldId) {
    case NVML_FI_DEV_ECC_CURRENT: return d.ecc_current ? ui(*d.ecc_current) : NVML_ERROR_NOT_SUPPORTED;
    case NVML_FI_DEV_ECC_PENDING:
      return d.ecc_current ? ui(d.ecc_pending.value_or(*d.ecc_current)) : NVML_ERROR_NOT_SUPPORTED;
    case 3: return ecc ? ull(c.metric("ecc_volatile_corrected").value_or(0)) : NVML_ERROR_NOT_SUPPORTED;
    case 4: return ecc ? ull(c.metric("ecc_volatile_uncorrected").value_or(0)) : NVML_ERROR_NOT_SUPPORTED;
    case 5: return ecc ? ull(c.metric("ecc_aggregate_corrected").value_or(0)) : NVML_ERROR_NOT_SUPPORTED;
    case 6: return ecc ? ull(c.metric("ecc_aggregate_uncorrected").value_or(0)) : NVML_ERROR_NOT_SUPPORTED;
    case 29: return ecc ? ull(c.metric("retired_pages_sbe").value_or(0)) : NVML_ERROR_NOT_SUPPORTED;
    case 30: return ecc ? ull(c.metric("retired_pages_dbe").value_or(0)) : NVML_ERROR_NOT_SUPPORTED;
    case 31: return ecc ? ull(c.metric("retired_pages_pending").value_or(0)) : NVML_ERROR_NOT_SUPPORTED;
    case NVML_FI_DEV_PERF_POLICY_POWER: return ull(c.metric("violation_power_ns").value_or(0));
    case NVML_FI_DEV_PERF_POLICY_THERMAL: return ull(c.metric("violation_thermal_ns").value_or(0));
    case NVML_FI_DEV_MEMORY_TEMP: return metric_ui("temperature_memory");
    case NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION: {
      if (auto e = c.metric("energy")) return ull(*e);
      const Timeline* p = d.metric("power_draw");
      return p ? ull(p->integral(c.t) + c.metric("energy_start").value_or(0)) : NVML_ERROR_NOT_SUPPORTED;
    }
    case NVML_FI_DEV_PCIE_REPLAY_COUNTER: return ull(c.metric("pcie_replay_counter").value_or(0));
    case 142: return ecc ? ui(c.metric("remapped_rows_correctable").value_or(0)) : NVML_ERROR_NOT_SUPPORTED;
    case 143: return ecc ? ui(c.metric("remapped_rows_uncorrectable").value_or(0)) : NVML_ERROR_NOT_SUPPORTED;
    case 144: return ecc ? ui(c.metric("remapped_rows_pending").value_or(0)) : NVML_ERROR_NOT_SUPPORTED;
    case 145: return ecc ? ui(c.metric("remapped_rows_failure").value_or(0)) : NVML_ERROR_NOT_SUPPORTED;
    case 185: return metric_ui("power_draw");  // POWER_AVERAGE
    case NVML_FI_DEV_POWER_INSTANT:            // its own reading where the scenario has one, else the average
      return metric_ui(c.metric("power_draw_instant") ? "power_draw_instant" : "power_draw");
    case 190: return d.power_limit ? ui(*d.power_limit) : NVML_ERROR_NOT_SUPPORTED;  // POWER_CURRENT_LIMIT
    case 193:
    case 194:
    case 195:
    case 196: {  // TEMPERATURE_{SHUTDOWN,SLOWDOWN,MEM_MAX,GPU_MAX}_TLIMIT
      auto it = d.temperature_thresholds.find(f.fieldId - 193);
      if (it == d.temperature_thresholds.end()) return NVML_ERROR_NOT_SUPPORTED;
      f.valueType = NVML_VALUE_TYPE_SIGNED_INT;
      f.value.ullVal = 0;
      f.value.siVal = static_cast<int>(it->second);
      return NVML_SUCCESS;
    }
    case NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN:
      return ull(c.metric("violation_sw_thermal_ns").value_or(0));
    case NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN:
      return ull(c.metric("violation_hw_thermal_ns").value_or(0));
    case NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN:
      return ull(c.metric("violation_hw_power_brake_ns").value_or(0));
    default: return NVML_ERROR_NOT_SUPPORTED;
  }
}

}  // namespace

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount,
                                                       nvmlFieldValue_t* values) {
  FAKE_ENTER(device);
  if (valuesCount < 0 || (valuesCount > 0 && values == nullptr)) return NVML_ERROR_INVALID_ARGUMENT;
  const long long now = static_cast<long long>(wall_now_us());
  for (int i = 0; i < valuesCount; ++i) {
    nvmlFieldValue_t& f = values[i];
    f.timestamp = now;
    f.latencyUsec = 0;
    f.nvmlReturn = field(c, f);
  }
  return NVML_SUCCESS;
}
