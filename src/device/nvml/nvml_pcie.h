// SPDX-License-Identifier: Apache-2.0
// PCIe rx/tx throughput without the blocking call (issues #9, #11: CPU cost).
//
// nvmlDeviceGetPcieThroughput measures over a 20 ms window and blocks the calling thread that long
// per direction (nvml.h; ~21 ms measured), i.e. 40 ms per GPU per tick plus the wake-ups around it.
// NVML R545+ also answers NVML_FI_DEV_PCIE_COUNT_{TX,RX}_BYTES (197/198) from
// nvmlDeviceGetFieldValues: cumulative byte counters read without a measurement window. Two ticks
// of them give a rate over the whole tick (not a 20 ms snapshot):
//   rate [KiB/s] = Δbytes / Δt / 1024
// (KiB/s is the unit of GpuSample::pcie_*_kib_s; nvmlDeviceGetPcieThroughput's "KB/s" is 1024 B/s.)
//
// Rules (each with its reason; the state machine is read_pcie_throughput in nvml_pcie.cpp):
//  - Counters are used only when the driver answers BOTH fields with NVML_SUCCESS and valueType
//    NVML_VALUE_TYPE_UNSIGNED_LONG_LONG. nvml.h says "Value can be wrapped" without a width: a
//    32-bit counter wraps in < 0.1 s at PCIe Gen5 x16 rates, so at 1 s ticks it is useless. A
//    32-bit answer, NOT_SUPPORTED, a missing nvmlDeviceGetFieldValues or any per-field error makes
//    the device use the blocking call, decided once and re-probed every kFullReprobeTicks ticks (a
//    driver update or a transient error is not fatal forever; both calls are never paid every tick).
//  - Δt comes from the driver's field timestamps (µs, when it read the value) when both samples
//    carry one (nonzero): that is the interval the bytes were counted over, whatever our thread's
//    scheduling delay. Otherwise from CLOCK_MONOTONIC taken around the call (midpoint).
//  - Δt <= 0 (a frozen clock) or a counter below its previous value (a 64-bit wrap takes centuries
//    at PCIe rates, so this is a reset: driver reload, GPU reset) gives no rate this tick: that
//    direction falls back to the blocking call for the tick and restarts from the new value.
//    kPcieCounterMaxMisses such ticks in a row switch the device to the blocking call (until the
//    next re-probe), so a driver whose counters never advance does not cost both calls every tick.
//  - A 64-bit field may still hold a 32-bit counter (a driver could fill ullVal from a 32-bit
//    register). Such a counter wraps within a tick above 4 GiB/s, and a wrap that ends above the
//    previous value cannot be told from traffic: it would show a wrong rate. So the counters give
//    rates only once one of them has been seen above 2^32 - 1 (proven 64-bit); until then the
//    blocking call answers (the counters are still read, to keep the previous value). 4 GiB since
//    the driver loaded is passed within seconds to minutes on a GPU that moves data. A counter that
//    goes backwards from a value that fits in 32 bits sends the device to the blocking call too.
//  - The first tick has no previous value: the blocking call answers it (the first sample and
//    `dmon -c 1` still have a value) and the counters are kept for the next tick.
//  - A rate above twice the link's theoretical maximum (or above 1 TB/s when the link is unknown)
//    is a driver lie: invalid_value (checked_pcie_rate_kib_s in nvml_validate.h), never shown.
#pragma once

#include <cstdint>
#include <optional>

namespace trainmon::nvml {

/// One direction's counter as read at one tick.
struct PcieCounterReading {
  std::uint64_t bytes = 0;        ///< cumulative bytes (NVML_FI_DEV_PCIE_COUNT_*_BYTES)
  std::int64_t driver_us = 0;     ///< nvmlFieldValue_t::timestamp (µs since the epoch); 0: none
  std::int64_t monotonic_us = 0;  ///< CLOCK_MONOTONIC (µs) at the middle of the call
};

enum class PcieRateStatus : std::uint8_t {
  ok,                      ///< kib_s holds the rate
  no_previous,             ///< first reading (or first after a restart): nothing to subtract
  no_elapsed_time,         ///< Δt <= 0: frozen or stepped-back clock
  counter_went_backwards,  ///< reset (driver reload, GPU reset) or a 32-bit wrap slipped through
};

struct PcieRate {
  PcieRateStatus status = PcieRateStatus::no_previous;
  double kib_s = 0;  ///< only meaningful when status == ok
};

/// CLOCK_MONOTONIC now, microseconds (steady_clock): the time of a counter read when the driver
/// gives none, here and for NVLink's counters (nvml_sample.cpp).
std::int64_t monotonic_now_us();

/// The rate between `previous` and `current` (pure; tested in tests/unit/device/nvml_pcie_test.cpp).
/// Δt from driver timestamps when both are nonzero, else from the monotonic times.
PcieRate pcie_counter_rate(const std::optional<PcieCounterReading>& previous,
                           const PcieCounterReading& current);

/// Which source a device's PCIe throughput comes from.
enum class PcieSource : std::uint8_t {
  unknown,   ///< not probed yet (or due for a re-probe)
  counters,  ///< fields 197/198 as 64-bit counters
  blocking,  ///< nvmlDeviceGetPcieThroughput (20 ms per direction)
};

/// The largest value of a 32-bit counter (see the rules above).
inline constexpr std::uint64_t kMax32BitCounter = 0xFFFFFFFFull;

/// Ticks in a row without a counter rate (after the first) before the device goes blocking.
inline constexpr unsigned kPcieCounterMaxMisses = 5;

/// Per-device state kept between ticks (in DeviceContext; only the device's worker touches it).
struct PcieThroughputState {
  PcieSource source = PcieSource::unknown;
  unsigned ticks_since_decision = 0;  ///< ticks on the blocking path since it was chosen
  unsigned misses = 0;                ///< consecutive counter ticks without a rate
  std::optional<PcieCounterReading> previous_rx, previous_tx;
  /// A counter value above kMax32BitCounter was seen: the counters are 64-bit for sure.
  bool proven_wide = false;
  /// Blocking calls made since the context was created (tests and diagnostics).
  std::uint64_t blocking_calls = 0;
};

}  // namespace trainmon::nvml
