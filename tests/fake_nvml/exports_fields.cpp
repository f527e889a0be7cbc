// SPDX-License-Identifier: Apache-2.0
// nvmlDeviceGetFieldValues: the field ids trainmon and DCGM-style tools read, answered from the
// same metrics as the dedicated getters (PCIe byte and NVLink KiB counters: integrals of the
// pcie_rx / pcie_tx and nvlink_rx / nvlink_tx timelines); other ids get a per-field NOT_SUPPORTED.
#include <string_view>

#include "exports_util.h"

using namespace fake_nvml;

namespace {

/// The PCIe byte counters first appeared in R545: the older driver variants do not know them.
bool variant_has_pcie_counters() {
  const std::string_view v = variant();
  return v != "r430" && v != "r450" && v != "r535_43";
}

/// NVML_FI_DEV_PCIE_COUNT_{TX,RX}_BYTES: 1024 × the integral of the KB/s timeline since t = 0
/// plus `start_bytes`; from `reset_at_s` on, 1024 × the integral since then (a driver reload).
int pcie_counter(const Call& c, nvmlFieldValue_t& f, bool tx) {
  const Device& d = *c.dev;
  const char* name = tx ? "NVML_FI_DEV_PCIE_COUNT_TX_BYTES" : "NVML_FI_DEV_PCIE_COUNT_RX_BYTES";
  const Timeline* rate = d.metric(tx ? "pcie_tx" : "pcie_rx");
  if (!variant_has_pcie_counters() || d.not_supported.contains(name) || rate == nullptr)
    return NVML_ERROR_NOT_SUPPORTED;
  const PcieCounters& pc = d.pcie_counters;
  const bool after_reset = pc.reset_at_s && c.t >= *pc.reset_at_s;
  const double kb = rate->integral(c.t) - (after_reset ? rate->integral(*pc.reset_at_s) : 0.0);
  unsigned long long bytes = rounded<unsigned long long>(kb * 1024.0) + (after_reset ? 0 : pc.start_bytes);
  if (pc.width_bits == 32) bytes &= 0xFFFFFFFFull;
  if (!pc.timestamps) f.timestamp = 0;
  f.value.ullVal = 0;
  if (pc.unsigned_int) {
    f.valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
    f.value.uiVal = static_cast<unsigned>(bytes);
  } else {
    f.valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
    f.value.ullVal = bytes;
  }
  return NVML_SUCCESS;
}

/// NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_{TX,RX} (138/139): cumulative KiB = the integral of the
/// nvlink_tx / nvlink_rx timeline (KiB/s) since t = 0. scopeId UINT_MAX: the sum over all links;
/// a link id below nvlink_links: that link's even share; any other scope: INVALID_ARGUMENT.
int nvlink_counter(const Call& c, nvmlFieldValue_t& f, bool tx) {
  const Device& d = *c.dev;
  const Timeline* rate = d.metric(tx ? "nvlink_tx" : "nvlink_rx");
  if (d.nvlink_links == 0 || rate == nullptr ||
      d.not_supported.contains(tx ? "NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX"
                                  : "NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX"))
    return NVML_ERROR_NOT_SUPPORTED;
  double kib = rate->integral(c.t);
  if (f.scopeId != 0xFFFFFFFFu) {
    if (f.scopeId >= d.nvlink_links) return NVML_ERROR_INVALID_ARGUMENT;
    kib /= d.nvlink_links;
  }
  f.valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
  f.value.ullVal = rounded<unsigned long long>(kib);
  return NVML_SUCCESS;
}

/// Fills one field; returns the per-field status.
int field(const Call& c, nvmlFieldValue_t& f) {
  const Device& d = *c.dev;
  const bool ecc = d.ecc_current.value_or(0) == 1;
  auto ull = [&](double v) {
    f.valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
    f.value.ullVal = driver_value<unsigned long long>(v);
    return NVML_SUCCESS;
  };
  auto ui = [&](double v) {
    f.valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
    f.value.ullVal = 0;
    f.value.uiVal = driver_value<unsigned>(v);
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
    case NVML_FI_DEV_NVLINK_LINK_COUNT: return ui(d.nvlink_links);
    case NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX: return nvlink_counter(c, f, true);
    case NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX: return nvlink_counter(c, f, false);
    case NVML_FI_DEV_PCIE_REPLAY_COUNTER: return ull(c.metric("pcie_replay_counter").value_or(0));
    case 142: return ecc ? ui(c.metric("remapped_rows_correctable").value_or(0)) : NVML_ERROR_NOT_SUPPORTED;
    case 143: return ecc ? ui(c.metric("remapped_rows_uncorrectable").value_or(0)) : NVML_ERROR_NOT_SUPPORTED;
    case 144: return ecc ? ui(c.metric("remapped_rows_pending").value_or(0)) : NVML_ERROR_NOT_SUPPORTED;
    case 145: return ecc ? ui(c.metric("remapped_rows_failure").value_or(0)) : NVML_ERROR_NOT_SUPPORTED;
    case NVML_FI_DEV_PERF_POLICY_SYNC_BOOST: return ull(c.metric("violation_sync_boost_ns").value_or(0));
    case NVML_FI_DEV_POWER_AVERAGE:  // its own reading where the scenario has one, else the 1 s draw
      if (d.not_supported.contains("NVML_FI_DEV_POWER_AVERAGE")) return NVML_ERROR_NOT_SUPPORTED;
      return metric_ui(c.metric("power_draw_average") ? "power_draw_average" : "power_draw");
    case NVML_FI_DEV_POWER_INSTANT:  // its own reading where the scenario has one, else the average
      return metric_ui(c.metric("power_draw_instant") ? "power_draw_instant" : "power_draw");
    case NVML_FI_DEV_PCIE_COUNT_TX_BYTES: return pcie_counter(c, f, true);
    case NVML_FI_DEV_PCIE_COUNT_RX_BYTES: return pcie_counter(c, f, false);
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
  // When the driver read the values, on the scenario's clock (µs since the epoch): the wall clock
  // at time_scale 1; it stands still with frozen time and runs time_scale times faster otherwise,
  // so rates over counter deltas match the timelines.
  const long long now =
      static_cast<long long>(origin_wall_us()) + std::llround((c.t - c.sc->start_offset_s) * 1e6);
  for (int i = 0; i < valuesCount; ++i) {
    nvmlFieldValue_t& f = values[i];
    f.timestamp = now;
    f.latencyUsec = 0;
    f.nvmlReturn = field(c, f);
  }
  return NVML_SUCCESS;
}
