// SPDX-License-Identifier: Apache-2.0
// NVLink throughput for DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL: the data (payload) KiB transmitted plus
// received over all links, from the cumulative counters NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX / _RX
// (fields 138/139, scopeId UINT_MAX = "aggregate value summed up across all links", nvml.h), read in
// the tick's batch of field values. Two ticks give the mean rate over the tick, as for the PCIe byte
// counters (nvml_pcie.h: Δt from the driver's timestamps, else CLOCK_MONOTONIC; a counter that went
// backwards is a reset and gives no rate that tick).
//  - NVML_FI_DEV_NVLINK_LINK_COUNT (91) = 0, or either counter NOT_SUPPORTED: the GPU has no NVLink,
//    not_supported (no sample, never a 0).
//  - The first tick, and the tick after a reset or with no elapsed time: not_available.
//  - A rate above 100 TB/s (18 NVLink 5 links move 1.8 TB/s in both directions together): a driver
//    lie, invalid_value.
#include "device/nvml/nvml_device.h"
#include "device/nvml/nvml_validate.h"

namespace trainmon::nvml {

namespace {

/// The counter's KiB, or nullopt for a type that is not an unsigned integer.
std::optional<std::uint64_t> kib_of(const nvmlFieldValue_t& f) {
  switch (f.valueType) {
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: return f.value.ullVal;
    case NVML_VALUE_TYPE_UNSIGNED_LONG: return f.value.ulVal;
    default: return std::nullopt;
  }
}

constexpr double kMaxKibS = 100e12 / 1024.0;

}  // namespace

void read_nvlink_throughput(DeviceContext& ctx, int rc, const nvmlFieldValue_t& count,
                            const nvmlFieldValue_t& tx, const nvmlFieldValue_t& rx, std::int64_t mid_us,
                            GpuSample& s) {
  auto fail = [&](Reading<double> r) {
    s.nvlink_data_kib_s = r;
    ctx.previous_nvlink.reset();
  };
  if (rc != NVML_SUCCESS) return fail(nvml_fail<double>(rc));
  if (count.nvmlReturn == NVML_SUCCESS && count.valueType == NVML_VALUE_TYPE_UNSIGNED_INT &&
      count.value.uiVal == 0)
    return fail(Reading<double>::fail(ReadStatus::not_supported));
  for (const nvmlFieldValue_t* f : {&tx, &rx})
    if (f->nvmlReturn != NVML_SUCCESS) return fail(nvml_fail<double>(f->nvmlReturn));
  const auto t = kib_of(tx), r = kib_of(rx);
  if (!t || !r || *t == kNotAvailableU64 || *r == kNotAvailableU64 || *t > (kNotAvailableU64 >> 11) ||
      *r > (kNotAvailableU64 >> 11))
    return fail(Reading<double>::fail(ReadStatus::invalid_value));
  // In bytes so the PCIe rate function (KiB/s out) applies; < 2^64 by the check above.
  const PcieCounterReading now{(*t + *r) * 1024, tx.timestamp > 0 ? tx.timestamp : 0, mid_us};
  const PcieRate rate = pcie_counter_rate(ctx.previous_nvlink, now);
  ctx.previous_nvlink = now;
  if (rate.status != PcieRateStatus::ok) {
    s.nvlink_data_kib_s = Reading<double>::fail(ReadStatus::not_available);
  } else if (rate.kib_s > kMaxKibS) {
    s.nvlink_data_kib_s = Reading<double>::fail(ReadStatus::invalid_value);
  } else {
    s.nvlink_data_kib_s = Reading<double>::of(rate.kib_s);
  }
}

}  // namespace trainmon::nvml
