// SPDX-License-Identifier: Apache-2.0
// PCIe throughput from NVML's cumulative byte counters, with the blocking
// nvmlDeviceGetPcieThroughput as the fallback. The rules and their reasons are in nvml_pcie.h.
#include "device/nvml/nvml_pcie.h"

#include <array>
#include <chrono>

#include "device/nvml/nvml_device.h"
#include "device/nvml/nvml_validate.h"

namespace trainmon::nvml {

PcieRate pcie_counter_rate(const std::optional<PcieCounterReading>& previous,
                           const PcieCounterReading& current) {
  if (!previous) return {PcieRateStatus::no_previous, 0};
  const bool driver_time = previous->driver_us != 0 && current.driver_us != 0;
  const std::int64_t dt_us =
      driver_time ? current.driver_us - previous->driver_us : current.monotonic_us - previous->monotonic_us;
  if (dt_us <= 0) return {PcieRateStatus::no_elapsed_time, 0};
  if (current.bytes < previous->bytes) return {PcieRateStatus::counter_went_backwards, 0};
  const double bytes = static_cast<double>(current.bytes - previous->bytes);
  return {PcieRateStatus::ok, bytes / (static_cast<double>(dt_us) / 1e6) / 1024.0};
}

std::int64_t monotonic_now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

namespace {

/// One direction through nvmlDeviceGetPcieThroughput (blocks ~20 ms).
Reading<unsigned> read_blocking(DeviceContext& ctx, Call& call, unsigned counter) {
  ++ctx.pcie.blocking_calls;
  unsigned v = 0;
  return checked(call(ctx.api->device_get_pcie_throughput, ctx.handle, counter, &v), v, checked_u32);
}

void use_blocking(DeviceContext& ctx, Call& call, GpuSample& s) {
  s.pcie_rx_kib_s = read_blocking(ctx, call, NVML_PCIE_UTIL_RX_BYTES);
  s.pcie_tx_kib_s = read_blocking(ctx, call, NVML_PCIE_UTIL_TX_BYTES);
}

/// Switch the device to the blocking call until the next re-probe.
void demote(PcieThroughputState& st) {
  st.source = PcieSource::blocking;
  st.ticks_since_decision = 0;
  st.misses = 0;
  st.proven_wide = false;
  st.previous_rx.reset();
  st.previous_tx.reset();
}

/// The link's maximum from the static info (max generation and width), if known.
std::optional<double> link_max(const DeviceContext& ctx) {
  if (!ctx.info || !ctx.info->pcie_link_gen_max.ok() || !ctx.info->pcie_link_width_max.ok())
    return std::nullopt;
  return pcie_link_max_bytes_s(*ctx.info->pcie_link_gen_max, *ctx.info->pcie_link_width_max);
}

}  // namespace

void read_pcie_throughput(DeviceContext& ctx, Call& call, GpuSample& s) {
  PcieThroughputState& st = ctx.pcie;
  if (st.source == PcieSource::blocking) {
    if (++st.ticks_since_decision < kFullReprobeTicks) {
      use_blocking(ctx, call, s);
      return;
    }
    st.source = PcieSource::unknown;  // re-probe the counters this tick
  }

  std::array<nvmlFieldValue_t, 2> fv{};
  fv[0].fieldId = NVML_FI_DEV_PCIE_COUNT_RX_BYTES;
  fv[1].fieldId = NVML_FI_DEV_PCIE_COUNT_TX_BYTES;
  const std::int64_t before = monotonic_now_us();
  const int rc = call(ctx.api->device_get_field_values, ctx.handle, static_cast<int>(fv.size()), fv.data());
  const std::int64_t mid = before + (monotonic_now_us() - before) / 2;
  bool usable = rc == NVML_SUCCESS;
  for (const auto& f : fv) {
    usable = usable && f.nvmlReturn == NVML_SUCCESS && f.valueType == NVML_VALUE_TYPE_UNSIGNED_LONG_LONG &&
             f.value.ullVal != kNotAvailableU64;
  }
  if (!usable) {
    demote(st);
    use_blocking(ctx, call, s);
    return;
  }
  st.source = PcieSource::counters;
  if (!st.proven_wide && (fv[0].value.ullVal > kMax32BitCounter || fv[1].value.ullVal > kMax32BitCounter))
    st.proven_wide = true;
  if (!st.proven_wide) {  // could still be a 32-bit counter: keep the values, answer with the blocking call
    st.previous_rx = PcieCounterReading{fv[0].value.ullVal, fv[0].timestamp > 0 ? fv[0].timestamp : 0, mid};
    st.previous_tx = PcieCounterReading{fv[1].value.ullVal, fv[1].timestamp > 0 ? fv[1].timestamp : 0, mid};
    use_blocking(ctx, call, s);
    return;
  }

  const std::optional<double> bound = link_max(ctx);
  bool missed = false;
  bool looks_32bit = false;
  auto direction = [&](const nvmlFieldValue_t& f, std::optional<PcieCounterReading>& previous,
                       Reading<unsigned>& out, unsigned counter) {
    const PcieCounterReading now{f.value.ullVal, f.timestamp > 0 ? f.timestamp : 0, mid};
    const bool had_previous = previous.has_value();
    const PcieRate r = pcie_counter_rate(previous, now);
    if (r.status == PcieRateStatus::counter_went_backwards && previous->bytes <= kMax32BitCounter)
      looks_32bit = true;
    previous = now;  // restart from the new value whatever happened
    if (r.status == PcieRateStatus::ok) {
      out = checked_pcie_rate_kib_s(r.kib_s, bound);
      return;
    }
    if (had_previous) missed = true;
    out = read_blocking(ctx, call, counter);
  };
  direction(fv[0], st.previous_rx, s.pcie_rx_kib_s, NVML_PCIE_UTIL_RX_BYTES);
  direction(fv[1], st.previous_tx, s.pcie_tx_kib_s, NVML_PCIE_UTIL_TX_BYTES);
  if (looks_32bit) {
    demote(st);
  } else if (!missed) {
    st.misses = 0;
  } else if (++st.misses >= kPcieCounterMaxMisses) {
    demote(st);
  }
}

}  // namespace trainmon::nvml
