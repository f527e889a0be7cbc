// SPDX-License-Identifier: Apache-2.0
// The GPU field registry: one row per sampled GpuSample value (and the few GpuStaticInfo facts the
// store keeps per tick), with every name that value goes by and how each output scales it. The
// store's gpu columns (store/series_fields.cpp), the alert metrics (alerts/rules.cpp, engine.cpp),
// the dcgm-exporter families of /metrics (serve/dcgm_families.cpp), the series the cluster views
// read back from Prometheus (cluster/serve_series.h), the generated Prometheus rules
// (diagnose/prom_rules.cpp) and the nvidia-smi-named keys of status --json (export/status_json.cpp)
// all derive from kGpuFields.
//
// Names, and where each comes from:
//   key    the GpuSample (or GpuStaticInfo) member, also the row's stable identifier.
//   store  the column of the stored `gpu` series; its order is a database format (below).
//   nvsmi  nvidia-smi's --query-gpu name (`nvidia-smi --help-query-gpu`; trainmon query accepts the
//          same, src/export/query_fields.cpp formats them).
//   dcgm   dcgm-exporter's metric name (its etc/default-counters.csv and dcp-metrics-included.csv;
//          DCGM field ids DCGM_FI_*), exported by serve's /metrics with dcgm-exporter's units.
//   prom   trainmon's own Prometheus metric in base units (trainmon_gpu_*), where there is one
//          (the cluster reader asks for it; serve/metrics_text.cpp still writes these two families
//          itself, after trainmon_gpu_up).
//   alert  the metric name an alert rule uses (docs/alerts.md): nvidia-smi's name or alias where
//          one exists, in the units of `alert_unit`.
// An empty name means the value has no such name: it is not stored, nvidia-smi has no query field
// for it, dcgm-exporter has no such counter, no trainmon_* metric, or no alert metric.
//
// Units: `unit` is the unit of the value read() returns, the GpuSample member's own (base units as
// NVML reports them: bytes "B", milliwatts "mW", millijoules "mJ", degrees Celsius "C", "MHz",
// percent "%", "KiB/s", "MiB/s", nanoseconds "ns"; "" a count, a code, a bitmask or a 0/1 flag).
// Each output converts with its own factor: the store keeps integer values as they are and stores
// a floating-point one as llround(value x `store_scale`) (percent x 100 keeps two decimals); /metrics
// multiplies by `dcgm_factor` (mW x 1e-3 = W, bytes x 2^-20 = MiB, percent x 0.01 = ratio); alerts divide by
// `alert_divisor` (bytes / 2^20 = MiB, mW / 1000 = W). These are the exact floating-point operations each
// output did before the registry, so outputs are byte-identical.
//
// Orders. The stored gpu columns are the rows with a `store` name, in table order: append-only (a
// chunk written earlier simply has fewer columns), so a new stored row goes right after the last
// stored one (tests/unit/core/gpu_fields_test.cpp pins the order). /metrics writes the dcgm
// families in `dcgm_order` and the alert metric list (`trainmon alerts metrics`) is in
// `alert_order`: both are positions, dense from 0, that kept the lists as they were printed before
// the registry (the consumers check at compile time that no two rows share one).
//
// Adding a field: add the member to GpuSample (gpu_sample.h) and the NVML read that fills it, then
// one row here. Give it a `store` name to record it (append after the last stored row), a `dcgm`
// name with the next free dcgm_order (the count of dcgm rows) to export it on /metrics, an `alert`
// name with the next free alert_order (the length of `trainmon alerts metrics`' list: the metrics
// that are not one field hold their own positions in alerts/rules.cpp) to make it an alert metric.
// That is all the store, alerts, /metrics, rules and cluster names need; the views that show the
// field by their own layout are listed in docs/architecture.md ("Adding a GPU field").
//
// Not rows: what is not one number per GPU and tick (the MIG devices, ECC counts by location, the
// SRAM ECC status, the driver's sample buffers, strings such as the fabric cluster UUID).
//
// Reading a row costs a function call and no allocation (the record tick reads every stored row
// each tick for every GPU).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string_view>
#include <type_traits>

#include "trainmon/core/gpu_sample.h"

namespace trainmon::gpu_fields {

/// One value read from a sample. `ok` false: the Reading was not ok (or the derived value is
/// unknown); then `i` and `d` are 0 and meaningless. `real`: the member is floating point (`i` is
/// then 0); otherwise `i` is the value as an integer (bool as 0/1) and `d` the same value as a
/// double, converted from the member's own type.
struct Value {
  bool ok = false;
  bool real = false;
  std::int64_t i = 0;
  double d = 0;
};

template <class T>
Value value_of(const Reading<T>& r) noexcept {
  if (!r.ok()) return {};
  if constexpr (std::is_same_v<T, bool>) {
    return {true, false, r.value ? 1 : 0, r.value ? 1.0 : 0.0};
  } else if constexpr (std::is_floating_point_v<T>) {
    return {true, true, 0, static_cast<double>(r.value)};
  } else {
    return {true, false, static_cast<std::int64_t>(r.value), static_cast<double>(r.value)};
  }
}

/// Readers for a row: a GpuSample member, a GpuStaticInfo member (not ok without info), a
/// MigDeviceSample member (a GPU instance's own value).
template <auto M>
Value member(const GpuSample& g) noexcept {
  return value_of(g.*M);
}
template <auto M>
Value info_member(const GpuSample& g) noexcept {
  return g.info ? value_of((*g.info).*M) : Value{};
}
template <auto M>
Value mig_member(const MigDeviceSample& m) noexcept {
  return value_of(m.*M);
}

/// GpuSample::responsive as the stored `device_state` code (store::kDeviceState* alias these):
/// answers; fails (responsive false or another error); NVML_ERROR_GPU_IS_LOST; its calls hang past
/// the per-device deadline; NVML_ERROR_NO_PERMISSION. Not ok when the sampler did not judge.
inline constexpr std::int64_t kDeviceStateOk = 0;
inline constexpr std::int64_t kDeviceStateFailed = 1;
inline constexpr std::int64_t kDeviceStateLost = 2;
inline constexpr std::int64_t kDeviceStateTimeout = 3;
inline constexpr std::int64_t kDeviceStateNoPermission = 4;
Value device_state(const GpuSample& g) noexcept;
/// 1 answers, 0 does not (lost, hung, failing or refused); not ok when not judged.
Value responsive(const GpuSample& g) noexcept;
/// The NVML code with which the GPU's process lists failed (GpuSample::process_count); not ok when
/// they were read, not asked for, or the whole GPU did not answer (device_state says so).
Value processes_unknown_nvml_code(const GpuSample& g) noexcept;

/// How /metrics types a dcgm family (Prometheus TYPE); counters are kept monotonic across driver
/// reloads (serve's counter continuity).
enum class MetricType : std::uint8_t { gauge, counter };

constexpr std::string_view metric_type_name(MetricType t) noexcept {
  return t == MetricType::counter ? "counter" : "gauge";
}

/// One registry row. Fields are listed in the order designated initialisers must follow.
struct GpuField {
  std::string_view key;                      ///< the member's name: "utilization_gpu_pct"
  Value (*read)(const GpuSample&) noexcept;  ///< never null
  std::string_view unit;                     ///< of read(): see the top of this file
  std::string_view help;                     ///< one line, English, for docs and listings
  std::string_view store = {};               ///< gpu series column; empty: not stored
  double store_scale = 1;                    ///< stored as llround(value x scale) for real values
  std::string_view nvsmi = {};               ///< nvidia-smi --query-gpu name; empty: none
  std::string_view dcgm = {};                ///< dcgm-exporter metric; empty: not on /metrics
  MetricType dcgm_type = MetricType::gauge;  ///< its Prometheus TYPE
  double dcgm_factor = 1;                    ///< /metrics value = value x factor (dcgm's unit)
  std::string_view dcgm_help = {};           ///< its # HELP (dcgm-exporter's wording)
  int dcgm_order = -1;                       ///< family position on /metrics
  Value (*read_mig)(const MigDeviceSample&) noexcept = nullptr;  ///< a GPU instance's own value;
                                                                 ///< null: the GPU's on each instance
  std::string_view prom = {};        ///< trainmon_gpu_* metric (base units); empty: none
  std::string_view alert = {};       ///< alert metric; empty: none
  double alert_divisor = 1;          ///< alert value = value / divisor
  std::string_view alert_unit = {};  ///< "%", "MiB", "W", "C", "MHz", ""
  std::string_view alert_help = {};  ///< as `trainmon alerts metrics` lists it
  int alert_order = -1;              ///< position in that list
};

inline constexpr double kMiB = 1024.0 * 1024.0;

using G = GpuSample;
using I = GpuStaticInfo;
using M = MigDeviceSample;

// clang-format off
inline constexpr GpuField kGpuFields[] = {
    // ---- stored columns, in stored order (append-only) ----
    {.key = "responsive", .read = responsive, .unit = "", .help = "1 while the GPU answers, 0 when lost, hung, failing or refused",
     .store = "responsive"},
    {.key = "memory_total_bytes", .read = member<&G::memory_total_bytes>, .unit = "B", .help = "framebuffer memory total",
     .store = "memory_total_bytes", .nvsmi = "memory.total", .prom = "trainmon_gpu_memory_total_bytes",
     .alert = "memory.total", .alert_divisor = kMiB, .alert_unit = "MiB", .alert_help = "framebuffer memory total", .alert_order = 4},
    {.key = "memory_reserved_bytes", .read = member<&G::memory_reserved_bytes>, .unit = "B", .help = "framebuffer memory the driver reserves",
     .store = "memory_reserved_bytes", .nvsmi = "memory.reserved",
     .dcgm = "DCGM_FI_DEV_FB_RESERVED", .dcgm_factor = 1.0 / kMiB, .dcgm_help = "Framebuffer memory reserved (in MiB).", .dcgm_order = 21,
     .read_mig = mig_member<&M::memory_reserved_bytes>},
    {.key = "memory_used_bytes", .read = member<&G::memory_used_bytes>, .unit = "B", .help = "framebuffer memory used",
     .store = "memory_used_bytes", .nvsmi = "memory.used",
     .dcgm = "DCGM_FI_DEV_FB_USED", .dcgm_factor = 1.0 / kMiB, .dcgm_help = "Framebuffer memory used (in MiB).", .dcgm_order = 20,
     .read_mig = mig_member<&M::memory_used_bytes>, .prom = "trainmon_gpu_memory_used_bytes",
     .alert = "memory.used", .alert_divisor = kMiB, .alert_unit = "MiB", .alert_help = "framebuffer memory used", .alert_order = 2},
    {.key = "memory_free_bytes", .read = member<&G::memory_free_bytes>, .unit = "B", .help = "framebuffer memory free",
     .store = "memory_free_bytes", .nvsmi = "memory.free",
     .dcgm = "DCGM_FI_DEV_FB_FREE", .dcgm_factor = 1.0 / kMiB, .dcgm_help = "Framebuffer memory free (in MiB).", .dcgm_order = 19,
     .read_mig = mig_member<&M::memory_free_bytes>,
     .alert = "memory.free", .alert_divisor = kMiB, .alert_unit = "MiB", .alert_help = "framebuffer memory free", .alert_order = 3},
    {.key = "bar1_used_bytes", .read = member<&G::bar1_used_bytes>, .unit = "B", .help = "BAR1 memory used",
     .store = "bar1_used_bytes"},
    {.key = "bar1_free_bytes", .read = member<&G::bar1_free_bytes>, .unit = "B", .help = "BAR1 memory free",
     .store = "bar1_free_bytes"},
    {.key = "utilization_gpu_pct", .read = member<&G::utilization_gpu_pct>, .unit = "%", .help = "GPU busy percent over the driver's sample period",
     .store = "utilization_gpu_pct", .nvsmi = "utilization.gpu",
     .dcgm = "DCGM_FI_DEV_GPU_UTIL", .dcgm_help = "GPU utilization (in %).", .dcgm_order = 12,
     .alert = "utilization.gpu", .alert_unit = "%", .alert_help = "GPU busy percent (nvmlDeviceGetUtilizationRates)", .alert_order = 0},
    {.key = "utilization_memory_pct", .read = member<&G::utilization_memory_pct>, .unit = "%", .help = "memory controller busy percent",
     .store = "utilization_memory_pct", .nvsmi = "utilization.memory",
     .dcgm = "DCGM_FI_DEV_MEM_COPY_UTIL", .dcgm_help = "Memory utilization (in %).", .dcgm_order = 13,
     .alert = "utilization.memory", .alert_unit = "%", .alert_help = "memory controller busy percent", .alert_order = 1},
    {.key = "utilization_encoder_pct", .read = member<&G::utilization_encoder_pct>, .unit = "%", .help = "video encoder busy percent",
     .store = "utilization_encoder_pct", .nvsmi = "utilization.encoder",
     .dcgm = "DCGM_FI_DEV_ENC_UTIL", .dcgm_help = "Encoder utilization (in %).", .dcgm_order = 14},
    {.key = "utilization_decoder_pct", .read = member<&G::utilization_decoder_pct>, .unit = "%", .help = "video decoder busy percent",
     .store = "utilization_decoder_pct", .nvsmi = "utilization.decoder",
     .dcgm = "DCGM_FI_DEV_DEC_UTIL", .dcgm_help = "Decoder utilization (in %).", .dcgm_order = 15},
    {.key = "utilization_jpeg_pct", .read = member<&G::utilization_jpeg_pct>, .unit = "%", .help = "JPEG decoder busy percent",
     .store = "utilization_jpeg_pct", .nvsmi = "utilization.jpeg"},
    {.key = "utilization_ofa_pct", .read = member<&G::utilization_ofa_pct>, .unit = "%", .help = "optical flow accelerator busy percent",
     .store = "utilization_ofa_pct", .nvsmi = "utilization.ofa"},
    {.key = "temperature_gpu_c", .read = member<&G::temperature_gpu_c>, .unit = "C", .help = "GPU core temperature",
     .store = "temperature_gpu_c", .nvsmi = "temperature.gpu",
     .dcgm = "DCGM_FI_DEV_GPU_TEMP", .dcgm_help = "GPU temperature (in C).", .dcgm_order = 3,
     .alert = "temperature.gpu", .alert_unit = "C", .alert_help = "GPU core temperature", .alert_order = 6},
    {.key = "temperature_memory_c", .read = member<&G::temperature_memory_c>, .unit = "C", .help = "HBM temperature",
     .store = "temperature_memory_c", .nvsmi = "temperature.memory",
     .dcgm = "DCGM_FI_DEV_MEMORY_TEMP", .dcgm_help = "Memory temperature (in C).", .dcgm_order = 2,
     .alert = "temperature.memory", .alert_unit = "C", .alert_help = "HBM temperature", .alert_order = 7},
    {.key = "power_draw_mw", .read = member<&G::power_draw_mw>, .unit = "mW", .help = "power draw (nvmlDeviceGetPowerUsage)",
     .store = "power_draw_mw", .nvsmi = "power.draw",
     .dcgm = "DCGM_FI_DEV_POWER_USAGE", .dcgm_factor = 1e-3, .dcgm_help = "Power draw (in W).", .dcgm_order = 4,
     .alert = "power.draw", .alert_divisor = 1000, .alert_unit = "W", .alert_help = "power draw", .alert_order = 8},
    {.key = "power_draw_instant_mw", .read = member<&G::power_draw_instant_mw>, .unit = "mW", .help = "instantaneous power draw",
     .store = "power_draw_instant_mw", .nvsmi = "power.draw.instant"},
    {.key = "power_limit_mw", .read = member<&G::power_limit_mw>, .unit = "mW", .help = "software power limit",
     .store = "power_limit_mw", .nvsmi = "power.limit"},
    {.key = "enforced_power_limit_mw", .read = member<&G::enforced_power_limit_mw>, .unit = "mW", .help = "enforced power limit",
     .store = "enforced_power_limit_mw", .nvsmi = "enforced.power.limit",
     .dcgm = "DCGM_FI_DEV_POWER_MGMT_LIMIT", .dcgm_factor = 1e-3, .dcgm_help = "Enforced power limit (in W).", .dcgm_order = 5,
     .alert = "power.limit", .alert_divisor = 1000, .alert_unit = "W", .alert_help = "enforced power limit", .alert_order = 9},
    {.key = "total_energy_mj", .read = member<&G::total_energy_mj>, .unit = "mJ", .help = "energy since the driver loaded",
     .store = "total_energy_mj",
     .dcgm = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", .dcgm_type = MetricType::counter, .dcgm_help = "Total energy consumption since boot (in mJ).", .dcgm_order = 6},
    {.key = "fan_speed_pct", .read = member<&G::fan_speed_pct>, .unit = "%", .help = "fan speed, percent of maximum",
     .store = "fan_speed_pct", .nvsmi = "fan.speed",
     .alert = "fan.speed", .alert_unit = "%", .alert_help = "fan speed", .alert_order = 11},
    {.key = "pstate", .read = member<&G::pstate>, .unit = "", .help = "performance state number (0 = P0)",
     .store = "pstate", .nvsmi = "pstate",
     .alert = "pstate", .alert_unit = "", .alert_help = "performance state number (0 = P0)", .alert_order = 14},
    {.key = "clocks_graphics_mhz", .read = member<&G::clocks_graphics_mhz>, .unit = "MHz", .help = "graphics clock",
     .store = "clocks_graphics_mhz", .nvsmi = "clocks.current.graphics"},
    {.key = "clocks_sm_mhz", .read = member<&G::clocks_sm_mhz>, .unit = "MHz", .help = "SM clock",
     .store = "clocks_sm_mhz", .nvsmi = "clocks.current.sm",
     .dcgm = "DCGM_FI_DEV_SM_CLOCK", .dcgm_help = "SM clock frequency (in MHz).", .dcgm_order = 0,
     .alert = "clocks.sm", .alert_unit = "MHz", .alert_help = "SM clock", .alert_order = 12},
    {.key = "clocks_memory_mhz", .read = member<&G::clocks_memory_mhz>, .unit = "MHz", .help = "memory clock",
     .store = "clocks_memory_mhz", .nvsmi = "clocks.current.memory",
     .dcgm = "DCGM_FI_DEV_MEM_CLOCK", .dcgm_help = "Memory clock frequency (in MHz).", .dcgm_order = 1,
     .alert = "clocks.mem", .alert_unit = "MHz", .alert_help = "memory clock", .alert_order = 13},
    {.key = "clocks_video_mhz", .read = member<&G::clocks_video_mhz>, .unit = "MHz", .help = "video clock",
     .store = "clocks_video_mhz", .nvsmi = "clocks.current.video"},
    {.key = "clocks_event_reasons_active", .read = member<&G::clocks_event_reasons_active>, .unit = "", .help = "active clock event (throttle) reasons, bitmask of clock_event::*",
     .store = "clocks_event_reasons_active", .nvsmi = "clocks_event_reasons.active",
     .dcgm = "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", .dcgm_help = "Current clock throttle reasons (bitmask of nvmlClocksEventReason*).", .dcgm_order = 18},
    {.key = "violation_power_ns", .read = member<&G::violation_power_ns>, .unit = "ns", .help = "cumulative time held by the power cap",
     .store = "violation_power_ns", .nvsmi = "clocks_event_reasons_counters.sw_power_cap",
     .dcgm = "DCGM_FI_DEV_POWER_VIOLATION", .dcgm_type = MetricType::counter, .dcgm_factor = 1e-3, .dcgm_help = "Throttling duration due to power constraints (in us).", .dcgm_order = 16},
    {.key = "violation_thermal_ns", .read = member<&G::violation_thermal_ns>, .unit = "ns", .help = "cumulative time held by thermal limits",
     .store = "violation_thermal_ns",
     .dcgm = "DCGM_FI_DEV_THERMAL_VIOLATION", .dcgm_type = MetricType::counter, .dcgm_factor = 1e-3, .dcgm_help = "Throttling duration due to thermal constraints (in us).", .dcgm_order = 17},
    {.key = "violation_sw_thermal_ns", .read = member<&G::violation_sw_thermal_ns>, .unit = "ns", .help = "cumulative time in software thermal slowdown",
     .store = "violation_sw_thermal_ns", .nvsmi = "clocks_event_reasons_counters.sw_thermal_slowdown"},
    {.key = "violation_hw_thermal_ns", .read = member<&G::violation_hw_thermal_ns>, .unit = "ns", .help = "cumulative time in hardware thermal slowdown",
     .store = "violation_hw_thermal_ns", .nvsmi = "clocks_event_reasons_counters.hw_thermal_slowdown"},
    {.key = "violation_hw_power_brake_ns", .read = member<&G::violation_hw_power_brake_ns>, .unit = "ns", .help = "cumulative time in power brake slowdown",
     .store = "violation_hw_power_brake_ns", .nvsmi = "clocks_event_reasons_counters.hw_power_brake_slowdown"},
    {.key = "ecc_mode_current", .read = member<&G::ecc_mode_current>, .unit = "", .help = "ECC enabled (1) or not (0)",
     .store = "ecc_mode_current", .nvsmi = "ecc.mode.current"},
    {.key = "ecc_mode_pending", .read = member<&G::ecc_mode_pending>, .unit = "", .help = "ECC mode after the next reboot",
     .store = "ecc_mode_pending", .nvsmi = "ecc.mode.pending"},
    {.key = "ecc_corrected_volatile", .read = member<&G::ecc_corrected_volatile>, .unit = "", .help = "corrected ECC errors since the driver loaded",
     .store = "ecc_corrected_volatile", .nvsmi = "ecc.errors.corrected.volatile.total",
     .dcgm = "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", .dcgm_type = MetricType::counter, .dcgm_help = "Total number of single-bit volatile ECC errors.", .dcgm_order = 22,
     .alert = "ecc.errors.corrected.volatile.total", .alert_unit = "", .alert_help = "corrected ECC errors since driver load", .alert_order = 16},
    {.key = "ecc_uncorrected_volatile", .read = member<&G::ecc_uncorrected_volatile>, .unit = "", .help = "uncorrected ECC errors since the driver loaded",
     .store = "ecc_uncorrected_volatile", .nvsmi = "ecc.errors.uncorrected.volatile.total",
     .dcgm = "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", .dcgm_type = MetricType::counter, .dcgm_help = "Total number of double-bit volatile ECC errors.", .dcgm_order = 23,
     .alert = "ecc.errors.uncorrected.volatile.total", .alert_unit = "", .alert_help = "uncorrected ECC errors since driver load", .alert_order = 15},
    {.key = "ecc_corrected_aggregate", .read = member<&G::ecc_corrected_aggregate>, .unit = "", .help = "corrected ECC errors over the GPU's lifetime",
     .store = "ecc_corrected_aggregate", .nvsmi = "ecc.errors.corrected.aggregate.total",
     .dcgm = "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", .dcgm_type = MetricType::counter, .dcgm_help = "Total number of single-bit persistent ECC errors.", .dcgm_order = 24},
    {.key = "ecc_uncorrected_aggregate", .read = member<&G::ecc_uncorrected_aggregate>, .unit = "", .help = "uncorrected ECC errors over the GPU's lifetime",
     .store = "ecc_uncorrected_aggregate", .nvsmi = "ecc.errors.uncorrected.aggregate.total",
     .dcgm = "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", .dcgm_type = MetricType::counter, .dcgm_help = "Total number of double-bit persistent ECC errors.", .dcgm_order = 25},
    {.key = "retired_pages_sbe", .read = member<&G::retired_pages_sbe>, .unit = "", .help = "pages retired for single-bit errors",
     .store = "retired_pages_sbe", .nvsmi = "retired_pages.single_bit_ecc.count",
     .dcgm = "DCGM_FI_DEV_RETIRED_SBE", .dcgm_type = MetricType::counter, .dcgm_help = "Total number of retired pages due to single-bit errors.", .dcgm_order = 26},
    {.key = "retired_pages_dbe", .read = member<&G::retired_pages_dbe>, .unit = "", .help = "pages retired for double-bit errors",
     .store = "retired_pages_dbe", .nvsmi = "retired_pages.double_bit.count",
     .dcgm = "DCGM_FI_DEV_RETIRED_DBE", .dcgm_type = MetricType::counter, .dcgm_help = "Total number of retired pages due to double-bit errors.", .dcgm_order = 27},
    {.key = "retired_pages_pending", .read = member<&G::retired_pages_pending>, .unit = "", .help = "a page waits for retirement (1) or not (0)",
     .store = "retired_pages_pending", .nvsmi = "retired_pages.pending",
     .dcgm = "DCGM_FI_DEV_RETIRED_PENDING", .dcgm_type = MetricType::counter, .dcgm_help = "Total number of pages pending retirement.", .dcgm_order = 28},
    {.key = "remapped_rows_correctable", .read = member<&G::remapped_rows_correctable>, .unit = "", .help = "rows remapped for correctable errors",
     .store = "remapped_rows_correctable", .nvsmi = "remapped_rows.correctable",
     .dcgm = "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", .dcgm_type = MetricType::counter, .dcgm_help = "Number of remapped rows for correctable errors", .dcgm_order = 30},
    {.key = "remapped_rows_uncorrectable", .read = member<&G::remapped_rows_uncorrectable>, .unit = "", .help = "rows remapped for uncorrectable errors",
     .store = "remapped_rows_uncorrectable", .nvsmi = "remapped_rows.uncorrectable",
     .dcgm = "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", .dcgm_type = MetricType::counter, .dcgm_help = "Number of remapped rows for uncorrectable errors", .dcgm_order = 29},
    {.key = "remapped_rows_pending", .read = member<&G::remapped_rows_pending>, .unit = "", .help = "a row remap waits for a GPU reset (1) or not (0)",
     .store = "remapped_rows_pending", .nvsmi = "remapped_rows.pending"},
    {.key = "remapped_rows_failure", .read = member<&G::remapped_rows_failure>, .unit = "", .help = "a row remap failed (1) or not (0)",
     .store = "remapped_rows_failure", .nvsmi = "remapped_rows.failure",
     .dcgm = "DCGM_FI_DEV_ROW_REMAP_FAILURE", .dcgm_help = "Whether remapping of rows has failed", .dcgm_order = 31},
    {.key = "pcie_link_gen_current", .read = member<&G::pcie_link_gen_current>, .unit = "", .help = "PCIe link generation in use",
     .store = "pcie_link_gen_current", .nvsmi = "pcie.link.gen.current",
     .dcgm = "DCGM_FI_DEV_PCIE_LINK_GEN", .dcgm_help = "PCIe link generation in use.", .dcgm_order = 10,
     .alert = "pcie.link.gen.current", .alert_unit = "", .alert_help = "current PCIe generation", .alert_order = 17},
    {.key = "pcie_link_width_current", .read = member<&G::pcie_link_width_current>, .unit = "", .help = "PCIe lanes in use",
     .store = "pcie_link_width_current", .nvsmi = "pcie.link.width.current",
     .dcgm = "DCGM_FI_DEV_PCIE_LINK_WIDTH", .dcgm_help = "PCIe link width in use (lanes).", .dcgm_order = 11,
     .alert = "pcie.link.width.current", .alert_unit = "", .alert_help = "current PCIe lanes", .alert_order = 18},
    {.key = "pcie_rx_kib_s", .read = member<&G::pcie_rx_kib_s>, .unit = "KiB/s", .help = "PCIe receive rate",
     .store = "pcie_rx_kib_s",
     .dcgm = "DCGM_FI_DEV_PCIE_RX_THROUGHPUT", .dcgm_help = "PCIe RX throughput (in KB/s): the mean since the last sample from NVML's byte counters, or NVML's 20 ms window.", .dcgm_order = 8},
    {.key = "pcie_tx_kib_s", .read = member<&G::pcie_tx_kib_s>, .unit = "KiB/s", .help = "PCIe transmit rate",
     .store = "pcie_tx_kib_s",
     .dcgm = "DCGM_FI_DEV_PCIE_TX_THROUGHPUT", .dcgm_help = "PCIe TX throughput (in KB/s): the mean since the last sample from NVML's byte counters, or NVML's 20 ms window.", .dcgm_order = 7},
    {.key = "pcie_replay_count", .read = member<&G::pcie_replay_count>, .unit = "", .help = "PCIe replays (retries) since the driver loaded",
     .store = "pcie_replay_count",
     .dcgm = "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", .dcgm_type = MetricType::counter, .dcgm_help = "Total number of PCIe retries.", .dcgm_order = 9},
    {.key = "persistence_mode", .read = member<&G::persistence_mode>, .unit = "", .help = "persistence mode on (1) or off (0)",
     .store = "persistence_mode", .nvsmi = "persistence_mode"},
    {.key = "compute_mode", .read = member<&G::compute_mode>, .unit = "", .help = "nvmlComputeMode_t",
     .store = "compute_mode", .nvsmi = "compute_mode"},
    {.key = "display_active", .read = member<&G::display_active>, .unit = "", .help = "a display is initialised on the GPU (1) or not (0)",
     .store = "display_active", .nvsmi = "display_active"},
    {.key = "mig_mode_current", .read = member<&G::mig_mode_current>, .unit = "", .help = "MIG enabled (1) or not (0)",
     .store = "mig_mode_current", .nvsmi = "mig.mode.current"},
    {.key = "mig_mode_pending", .read = member<&G::mig_mode_pending>, .unit = "", .help = "MIG mode after the next reset",
     .store = "mig_mode_pending", .nvsmi = "mig.mode.pending"},
    {.key = "gpm_sm_util_pct", .read = member<&G::gpm_sm_util_pct>, .unit = "%", .help = "GPM SM activity",
     .store = "gpm_sm_util_pct", .store_scale = 100,
     .dcgm = "DCGM_FI_PROF_SM_ACTIVE", .dcgm_factor = 0.01, .dcgm_help = "The ratio of cycles an SM has at least 1 warp assigned (GPM).", .dcgm_order = 33,
     .read_mig = mig_member<&M::gpm_sm_util_pct>},
    {.key = "gpm_sm_occupancy_pct", .read = member<&G::gpm_sm_occupancy_pct>, .unit = "%", .help = "GPM SM occupancy",
     .store = "gpm_sm_occupancy_pct", .store_scale = 100,
     .dcgm = "DCGM_FI_PROF_SM_OCCUPANCY", .dcgm_factor = 0.01, .dcgm_help = "The ratio of number of warps resident on an SM (GPM).", .dcgm_order = 34,
     .read_mig = mig_member<&M::gpm_sm_occupancy_pct>},
    {.key = "gpm_tensor_util_pct", .read = member<&G::gpm_tensor_util_pct>, .unit = "%", .help = "GPM tensor pipe activity",
     .store = "gpm_tensor_util_pct", .store_scale = 100,
     .dcgm = "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", .dcgm_factor = 0.01, .dcgm_help = "Ratio of cycles the tensor (HMMA) pipe is active (GPM).", .dcgm_order = 35,
     .read_mig = mig_member<&M::gpm_tensor_util_pct>},
    {.key = "gpm_dram_bw_util_pct", .read = member<&G::gpm_dram_bw_util_pct>, .unit = "%", .help = "GPM device memory interface activity",
     .store = "gpm_dram_bw_util_pct", .store_scale = 100,
     .dcgm = "DCGM_FI_PROF_DRAM_ACTIVE", .dcgm_factor = 0.01, .dcgm_help = "Ratio of cycles the device memory interface is active (GPM).", .dcgm_order = 36,
     .read_mig = mig_member<&M::gpm_dram_bw_util_pct>},
    {.key = "gpm_pcie_tx_mib_s", .read = member<&G::gpm_pcie_tx_mib_s>, .unit = "MiB/s", .help = "GPM PCIe transmit rate",
     .store = "gpm_pcie_tx_mib_s", .store_scale = 100,
     .dcgm = "DCGM_FI_PROF_PCIE_TX_BYTES", .dcgm_factor = kMiB, .dcgm_help = "The rate of data transmitted over the PCIe bus, in bytes per second (GPM).", .dcgm_order = 37,
     .read_mig = mig_member<&M::gpm_pcie_tx_mib_s>},
    {.key = "gpm_pcie_rx_mib_s", .read = member<&G::gpm_pcie_rx_mib_s>, .unit = "MiB/s", .help = "GPM PCIe receive rate",
     .store = "gpm_pcie_rx_mib_s", .store_scale = 100,
     .dcgm = "DCGM_FI_PROF_PCIE_RX_BYTES", .dcgm_factor = kMiB, .dcgm_help = "The rate of data received over the PCIe bus, in bytes per second (GPM).", .dcgm_order = 38,
     .read_mig = mig_member<&M::gpm_pcie_rx_mib_s>},
    {.key = "gpm_nvlink_tx_mib_s", .read = member<&G::gpm_nvlink_tx_mib_s>, .unit = "MiB/s", .help = "GPM NVLink transmit rate",
     .store = "gpm_nvlink_tx_mib_s", .store_scale = 100,
     .dcgm = "DCGM_FI_PROF_NVLINK_TX_BYTES", .dcgm_factor = kMiB, .dcgm_help = "The rate of data transmitted over NVLink, in bytes per second (GPM).", .dcgm_order = 39,
     .read_mig = mig_member<&M::gpm_nvlink_tx_mib_s>},
    {.key = "gpm_nvlink_rx_mib_s", .read = member<&G::gpm_nvlink_rx_mib_s>, .unit = "MiB/s", .help = "GPM NVLink receive rate",
     .store = "gpm_nvlink_rx_mib_s", .store_scale = 100,
     .dcgm = "DCGM_FI_PROF_NVLINK_RX_BYTES", .dcgm_factor = kMiB, .dcgm_help = "The rate of data received over NVLink, in bytes per second (GPM).", .dcgm_order = 40,
     .read_mig = mig_member<&M::gpm_nvlink_rx_mib_s>},
    // Static facts the detectors compare against (D12, D16), stored per tick (constant per GPU: cost
    // ~nothing encoded).
    {.key = "temperature_slowdown_c", .read = info_member<&I::temperature_slowdown_c>, .unit = "C", .help = "temperature at which the GPU slows down",
     .store = "temperature_slowdown_c"},
    {.key = "clocks_max_sm_mhz", .read = info_member<&I::clocks_max_sm_mhz>, .unit = "MHz", .help = "maximum SM clock",
     .store = "clocks_max_sm_mhz", .nvsmi = "clocks.max.sm"},
    {.key = "pcie_link_gen_max", .read = info_member<&I::pcie_link_gen_max>, .unit = "", .help = "maximum PCIe generation of GPU and system",
     .store = "pcie_link_gen_max", .nvsmi = "pcie.link.gen.max"},
    {.key = "pcie_link_width_max", .read = info_member<&I::pcie_link_width_max>, .unit = "", .help = "maximum PCIe lanes",
     .store = "pcie_link_width_max", .nvsmi = "pcie.link.width.max"},
    // Why a GPU does not answer, so offline diagnosis tells "lost" from "hung".
    {.key = "device_state", .read = device_state, .unit = "", .help = "kDeviceState* code of GpuSample::responsive",
     .store = "device_state"},
    {.key = "processes_unknown_nvml_code", .read = processes_unknown_nvml_code, .unit = "", .help = "NVML code of the failed process lists",
     .store = "processes_unknown_nvml_code"},
    {.key = "gpm_graphics_util_pct", .read = member<&G::gpm_graphics_util_pct>, .unit = "%", .help = "GPM graphics/compute engine activity",
     .store = "gpm_graphics_util_pct", .store_scale = 100,
     .dcgm = "DCGM_FI_PROF_GR_ENGINE_ACTIVE", .dcgm_factor = 0.01, .dcgm_help = "Ratio of time the graphics engine is active (GPM).", .dcgm_order = 32,
     .read_mig = mig_member<&M::gpm_graphics_util_pct>},
    // dcgm-exporter's field 449: data sent plus received over all links, a rate (its current
    // default-counters.csv: gauge, "in MB/s"; 4.x typed it counter). KiB/s / 1024 = MiB/s.
    {.key = "nvlink_data_kib_s", .read = member<&G::nvlink_data_kib_s>, .unit = "KiB/s", .help = "NVLink data sent plus received, all links",
     .store = "nvlink_data_kib_s", .store_scale = 100,
     .dcgm = "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", .dcgm_factor = 1.0 / 1024.0,
     .dcgm_help = "Aggregate NVLink throughput across all lanes (in MB/s): data transmitted plus received over all links, the mean since the last sample.", .dcgm_order = 41},
    // (a new stored field goes here)

    // ---- sampled, not stored ----
    {.key = "power_draw_average_mw", .read = member<&G::power_draw_average_mw>, .unit = "mW", .help = "average power draw (field 185)",
     .nvsmi = "power.draw.average"},
    {.key = "violation_sync_boost_ns", .read = member<&G::violation_sync_boost_ns>, .unit = "ns", .help = "cumulative time held down by a sync-boost group",
     .nvsmi = "clocks_event_reasons_counters.sync_boost"},
    {.key = "process_count", .read = member<&G::process_count>, .unit = "", .help = "processes the driver lists on the GPU"},
    {.key = "display_attached", .read = member<&G::display_attached>, .unit = "", .help = "a monitor is connected (1) or not (0)",
     .nvsmi = "display_attached"},
    {.key = "accounting_mode", .read = member<&G::accounting_mode>, .unit = "", .help = "per-process accounting on (1) or off (0)",
     .nvsmi = "accounting.mode"},
    {.key = "accounting_buffer_size", .read = member<&G::accounting_buffer_size>, .unit = "", .help = "processes the accounting buffer holds",
     .nvsmi = "accounting.buffer_size"},
    {.key = "temperature_tlimit_c", .read = member<&G::temperature_tlimit_c>, .unit = "C", .help = "degrees left before the GPU slows down",
     .nvsmi = "temperature.gpu.tlimit"},
    {.key = "encoder_session_count", .read = member<&G::encoder_session_count>, .unit = "", .help = "encoder sessions",
     .nvsmi = "encoder.stats.sessionCount"},
    {.key = "encoder_average_fps", .read = member<&G::encoder_average_fps>, .unit = "", .help = "encoder frames per second",
     .nvsmi = "encoder.stats.averageFps"},
    {.key = "encoder_average_latency_us", .read = member<&G::encoder_average_latency_us>, .unit = "us", .help = "encoder latency",
     .nvsmi = "encoder.stats.averageLatency"},
    {.key = "fabric_state", .read = member<&G::fabric_state>, .unit = "", .help = "nvmlGpuFabricState_t",
     .nvsmi = "fabric.state"},
    {.key = "fabric_status", .read = member<&G::fabric_status>, .unit = "", .help = "nvmlReturn_t of the fabric registration",
     .nvsmi = "fabric.status"},
    {.key = "fabric_clique_id", .read = member<&G::fabric_clique_id>, .unit = "", .help = "NVLink fabric clique id"},
};
// clang-format on

inline constexpr std::size_t kGpuFieldCount = std::size(kGpuFields);

/// The index in kGpuFields of the row whose `key` is `key`; kGpuFieldCount when none. For lookups
/// in constant expressions (consteval): GCC 12 under -fsanitize=address,undefined does not accept a
/// pointer into the table compared with null there (the sanitizer pass), an index it does.
constexpr std::size_t key_index(std::string_view key) noexcept {
  for (std::size_t i = 0; i < kGpuFieldCount; ++i)
    if (kGpuFields[i].key == key) return i;
  return kGpuFieldCount;
}
/// The row whose `key` is `key`; null when none. A scan (about 85 rows): for setup, not per tick.
constexpr const GpuField* find_key(std::string_view key) noexcept {
  for (const auto& f : kGpuFields)
    if (f.key == key) return &f;
  return nullptr;
}
/// The row whose dcgm-exporter name is `dcgm`; null when none.
constexpr const GpuField* find_dcgm(std::string_view dcgm) noexcept {
  for (const auto& f : kGpuFields)
    if (!f.dcgm.empty() && f.dcgm == dcgm) return &f;
  return nullptr;
}
/// The row whose alert metric is `alert`; null when none.
constexpr const GpuField* find_alert(std::string_view alert) noexcept {
  for (const auto& f : kGpuFields)
    if (!f.alert.empty() && f.alert == alert) return &f;
  return nullptr;
}

/// How many rows have a name of the given kind (compile-time sizes for the consumers' arrays).
constexpr std::size_t count_stored() noexcept {
  std::size_t n = 0;
  for (const auto& f : kGpuFields) n += f.store.empty() ? 0 : 1;
  return n;
}
constexpr std::size_t count_dcgm() noexcept {
  std::size_t n = 0;
  for (const auto& f : kGpuFields) n += f.dcgm.empty() ? 0 : 1;
  return n;
}
constexpr std::size_t count_alert() noexcept {
  std::size_t n = 0;
  for (const auto& f : kGpuFields) n += f.alert.empty() ? 0 : 1;
  return n;
}

/// The dcgm rows in /metrics order. Compile error (a throw in a constant expression) when two rows
/// share a dcgm_order or one is out of range.
constexpr auto dcgm_in_order() {
  std::array<const GpuField*, count_dcgm()> out{};
  for (const auto& f : kGpuFields) {
    if (f.dcgm.empty()) continue;
    if (f.dcgm_order < 0 || static_cast<std::size_t>(f.dcgm_order) >= out.size() ||
        out[f.dcgm_order] != nullptr)
      throw "gpu_fields: dcgm_order must be unique and dense from 0";
    out[static_cast<std::size_t>(f.dcgm_order)] = &f;
  }
  return out;
}

}  // namespace trainmon::gpu_fields
