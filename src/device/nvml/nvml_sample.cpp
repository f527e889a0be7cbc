// SPDX-License-Identifier: Apache-2.0
// One tick of dynamic metrics for one GPU. Each field is read and checked on its own: one failing
// call never blanks the row (only a lost GPU does, and then every field says so).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "device/nvml/nvml_device.h"
#include "device/nvml/nvml_validate.h"

namespace trainmon::nvml {

namespace {

Reading<bool> as_bool(const unsigned& v) {
  return Reading<bool>::of(v != 0);
}

MemoryReadings read_memory(Call& call, const NvmlApi& a, nvmlDevice_t h) {
  nvmlMemory_v2_t m2{};
  m2.version = TRAINMON_NVML_STRUCT_VERSION(nvmlMemory_v2_t, 2);
  int rc = call(a.device_get_memory_info_v2, h, &m2);
  if (rc == NVML_SUCCESS) return checked_memory(m2.total, m2.reserved, m2.used, m2.free);
  if (nvml_answer_means_try_older(rc) || rc == NVML_ERROR_ARGUMENT_VERSION_MISMATCH) {
    nvmlMemory_t m1{};
    const int rc1 = call(a.device_get_memory_info_v1, h, &m1);
    if (rc1 == NVML_SUCCESS) return checked_memory(m1.total, std::nullopt, m1.used, m1.free);
    if (rc1 != NVML_ERROR_FUNCTION_NOT_FOUND) rc = rc1;  // else the newer one's answer says more
  }
  auto f = nvml_fail<std::uint64_t>(rc);
  return {f, f, f, f};
}

double value_as_double(unsigned type, const nvmlValue_t& v) {
  switch (type) {
    case NVML_VALUE_TYPE_DOUBLE: return v.dVal;
    case NVML_VALUE_TYPE_UNSIGNED_INT: return v.uiVal;
    case NVML_VALUE_TYPE_UNSIGNED_LONG: return static_cast<double>(v.ulVal);
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: return static_cast<double>(v.ullVal);
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG: return static_cast<double>(v.sllVal);
    case NVML_VALUE_TYPE_SIGNED_INT: return v.siVal;
    case NVML_VALUE_TYPE_UNSIGNED_SHORT: return v.usVal;
    default: return -1;
  }
}

/// Field value as an unsigned 64-bit integer; nullopt for negative or non-integer types.
std::optional<std::uint64_t> value_as_u64(unsigned type, const nvmlValue_t& v) {
  switch (type) {
    case NVML_VALUE_TYPE_UNSIGNED_INT: return v.uiVal == kNotAvailableU32 ? kNotAvailableU64 : v.uiVal;
    case NVML_VALUE_TYPE_UNSIGNED_LONG: return v.ulVal;
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: return v.ullVal;
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
      return v.sllVal < 0 ? std::nullopt : std::optional<std::uint64_t>(static_cast<std::uint64_t>(v.sllVal));
    case NVML_VALUE_TYPE_SIGNED_INT:
      return v.siVal < 0 ? std::nullopt : std::optional<std::uint64_t>(static_cast<std::uint64_t>(v.siVal));
    case NVML_VALUE_TYPE_UNSIGNED_SHORT: return v.usVal;
    case NVML_VALUE_TYPE_DOUBLE:
      return v.dVal >= 0 && v.dVal < 1.8e19 ? std::optional<std::uint64_t>(static_cast<std::uint64_t>(v.dVal))
                                            : std::nullopt;
    default: return std::nullopt;
  }
}

/// Driver ring-buffer samples newer than `last_seen_us` (µs since epoch); advances last_seen_us.
/// Samples that fail a sanity check (utilisation above 100 %, power sentinels) are dropped.
std::vector<TimedValue> read_samples(Call& call, const NvmlApi& a, nvmlDevice_t h, unsigned type,
                                     std::uint64_t& last_seen_us, bool percent) {
  std::vector<TimedValue> out;
  // First tick: the last ~1 s; a "last seen" after now (a clock stepped back) starts again there.
  last_seen_us = sample_window_start(last_seen_us, now_unix_us());
  unsigned value_type = 0;
  unsigned count = 0;
  int rc = call(a.device_get_samples, h, type, static_cast<unsigned long long>(last_seen_us), &value_type,
                &count, static_cast<nvmlSample_t*>(nullptr));
  if (rc != NVML_SUCCESS || count == 0) return out;
  count = count + 8;  // a few more may arrive between the two calls
  std::vector<nvmlSample_t> buf(count);
  rc = call(a.device_get_samples, h, type, static_cast<unsigned long long>(last_seen_us), &value_type, &count,
            buf.data());
  if (rc != NVML_SUCCESS) return out;
  if (count > buf.size()) count = static_cast<unsigned>(buf.size());
  const std::uint64_t now_us = now_unix_us();
  std::uint64_t newest = last_seen_us;
  out.reserve(count);
  for (unsigned i = 0; i < count; ++i) {
    const auto& smp = buf[i];
    // Not newer than asked for, undated, or dated in the future: not a sample of this window (and a
    // future date must not become "last seen", which would blank every read until that date).
    if (!sample_dated_in_window(smp.timeStamp, last_seen_us, now_us)) continue;
    newest = std::max<std::uint64_t>(newest, std::min<std::uint64_t>(smp.timeStamp, now_us));
    double v = value_as_double(value_type, smp.sampleValue);
    if (v < 0 || (percent && v > 100) || (!percent && v >= 4294967295.0)) continue;
    out.push_back({smp.timeStamp, v});
  }
  last_seen_us = newest;
  return out;
}

void read_mig_devices(Call& call, const NvmlApi& a, nvmlDevice_t h, GpuSample& s) {
  unsigned max_count = 0;
  if (call(a.device_get_max_mig_device_count, h, &max_count) != NVML_SUCCESS) return;
  for (unsigned i = 0; i < max_count && i < 64; ++i) {
    nvmlDevice_t mh = nullptr;
    if (call(a.device_get_mig_device_handle_by_index, h, i, &mh) != NVML_SUCCESS || mh == nullptr) continue;
    MigDeviceSample m;
    m.index = i;
    unsigned gi = 0, ci = 0;
    m.gpu_instance_id = checked(call(a.device_get_gpu_instance_id, mh, &gi), gi, checked_u32);
    m.compute_instance_id = checked(call(a.device_get_compute_instance_id, mh, &ci), ci, checked_u32);
    std::array<char, NVML_DEVICE_UUID_V2_BUFFER_SIZE> uuid{};
    int rc = call(a.device_get_uuid, mh, uuid.data(), unsigned{uuid.size()});
    m.uuid = rc == NVML_SUCCESS ? checked_string(uuid.data(), uuid.size()) : nvml_fail<std::string>(rc);
    std::array<char, NVML_DEVICE_NAME_V2_BUFFER_SIZE> name{};
    rc = call(a.device_get_name, mh, name.data(), unsigned{name.size()});
    m.name = rc == NVML_SUCCESS ? checked_string(name.data(), name.size()) : nvml_fail<std::string>(rc);
    MemoryReadings mem = read_memory(call, a, mh);
    m.memory_total_bytes = mem.total;
    m.memory_used_bytes = mem.used;
    m.memory_free_bytes = mem.free;
    m.memory_reserved_bytes = mem.reserved;
    s.mig_devices.push_back(std::move(m));
  }
}

/// nvmlDeviceGetMemoryErrorCounter for SRAM and DRAM, corrected and uncorrected, of one counter type.
void read_ecc_locations(Call& call, const NvmlApi& a, nvmlDevice_t h, unsigned counter,
                        EccLocationCounts& out) {
  const struct {
    Reading<std::uint64_t>* field;
    unsigned type, location;
  } rows[] = {{&out.sram_corrected, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_MEMORY_LOCATION_SRAM},
              {&out.sram_uncorrected, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_MEMORY_LOCATION_SRAM},
              {&out.dram_corrected, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_MEMORY_LOCATION_DRAM},
              {&out.dram_uncorrected, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_MEMORY_LOCATION_DRAM}};
  for (const auto& r : rows) {
    unsigned long long n = 0;
    const int rc = call(a.device_get_memory_error_counter, h, r.type, counter, r.location, &n);
    *r.field = checked(rc, std::uint64_t{n}, checked_u64);  // n read after the call
  }
}

/// nvmlDeviceGetSramEccErrorStatus: every field the call's status (a failed call fails them all).
void read_sram_ecc(Call& call, const NvmlApi& a, nvmlDevice_t h, SramEccStatus& out) {
  nvmlEccSramErrorStatus_v1_t st{};
  st.version = TRAINMON_NVML_STRUCT_VERSION(nvmlEccSramErrorStatus_v1_t, 1);
  const int rc = call(a.device_get_sram_ecc_error_status, h, &st);
  const struct {
    Reading<std::uint64_t>* field;
    unsigned long long value;
  } rows[] = {{&out.volatile_uncorrected_parity, st.volatileUncParity},
              {&out.volatile_uncorrected_secded, st.volatileUncSecDed},
              {&out.aggregate_uncorrected_parity, st.aggregateUncParity},
              {&out.aggregate_uncorrected_secded, st.aggregateUncSecDed},
              {&out.aggregate_uncorrected_l2, st.aggregateUncBucketL2},
              {&out.aggregate_uncorrected_sm, st.aggregateUncBucketSm},
              {&out.aggregate_uncorrected_pcie, st.aggregateUncBucketPcie},
              {&out.aggregate_uncorrected_mcu, st.aggregateUncBucketMcu},
              {&out.aggregate_uncorrected_other, st.aggregateUncBucketOther}};
  for (const auto& r : rows) *r.field = checked(rc, std::uint64_t{r.value}, checked_u64);
  out.threshold_exceeded = checked(rc, st.bThresholdExceeded, as_bool);
}

/// nvidia-smi's rarer --query-gpu fields (BackendOptions::collect_extended).
void read_extended(Call& call, const NvmlApi& a, nvmlDevice_t h, GpuSample& s) {
  read_ecc_locations(call, a, h, NVML_VOLATILE_ECC, s.ecc_volatile_by_location);
  read_ecc_locations(call, a, h, NVML_AGGREGATE_ECC, s.ecc_aggregate_by_location);
  read_sram_ecc(call, a, h, s.sram_ecc);
  {
    unsigned v = 0;
    s.display_attached = checked(call(a.device_get_display_mode, h, &v), v, as_bool);
    s.accounting_mode = checked(call(a.device_get_accounting_mode, h, &v), v, as_bool);
    s.accounting_buffer_size = checked(call(a.device_get_accounting_buffer_size, h, &v), v, checked_u32);
  }
  {
    nvmlMarginTemperature_v1_t m{};
    m.version = TRAINMON_NVML_STRUCT_VERSION(nvmlMarginTemperature_v1_t, 1);
    s.temperature_tlimit_c =
        checked(call(a.device_get_margin_temperature, h, &m), m.marginTemperature, [](const int& c) {
          return c > -300 && c < 300 ? Reading<int>::of(c) : Reading<int>::fail(ReadStatus::invalid_value);
        });
  }
  {
    unsigned n = 0, fps = 0, latency = 0;
    const int rc = call(a.device_get_encoder_stats, h, &n, &fps, &latency);
    s.encoder_session_count = checked(rc, n, checked_u32);
    s.encoder_average_fps = checked(rc, fps, checked_u32);
    s.encoder_average_latency_us = checked(rc, latency, checked_u32);
  }
  {
    // The versioned call where the driver has it (12.3+), else the v1 struct.
    nvmlGpuFabricInfo_v2_t f{};
    f.version = TRAINMON_NVML_STRUCT_VERSION(nvmlGpuFabricInfo_v2_t, 2);
    int rc = call(a.device_get_gpu_fabric_info_v, h, &f);
    if (rc == NVML_ERROR_FUNCTION_NOT_FOUND || rc == NVML_ERROR_ARGUMENT_VERSION_MISMATCH) {
      nvmlGpuFabricInfo_t f1{};
      rc = call(a.device_get_gpu_fabric_info_v1, h, &f1);
      std::copy(std::begin(f1.clusterUuid), std::end(f1.clusterUuid), std::begin(f.clusterUuid));
      f.status = f1.status;
      f.cliqueId = f1.cliqueId;
      f.state = f1.state;
    }
    if (rc == NVML_SUCCESS && f.state == NVML_GPU_FABRIC_STATE_NOT_SUPPORTED) rc = NVML_ERROR_NOT_SUPPORTED;
    s.fabric_state = checked(rc, unsigned{f.state}, [](const unsigned& v) {
      return v <= NVML_GPU_FABRIC_STATE_COMPLETED ? Reading<unsigned>::of(v)
                                                  : Reading<unsigned>::fail(ReadStatus::invalid_value);
    });
    const bool done = rc == NVML_SUCCESS && f.state == NVML_GPU_FABRIC_STATE_COMPLETED;
    s.fabric_status =
        done ? Reading<int>::of(f.status)
             : (rc == NVML_SUCCESS ? Reading<int>::fail(ReadStatus::not_available) : nvml_fail<int>(rc));
    s.fabric_clique_id = checked(rc, f.cliqueId, checked_u32);
    if (rc == NVML_SUCCESS) {
      const unsigned char* u = f.clusterUuid;
      s.fabric_cluster_uuid =
          Reading<std::string>::of(fmt::format("{:02x}{:02x}{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:"
                                               "02x}-{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}",
                                               u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9],
                                               u[10], u[11], u[12], u[13], u[14], u[15]));
    } else {
      s.fabric_cluster_uuid = nvml_fail<std::string>(rc);
    }
  }
}

}  // namespace

std::uint64_t now_unix_us() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count());
}

bool sample_dated_in_window(std::uint64_t ts_us, std::uint64_t since_us, std::uint64_t now_us) noexcept {
  return ts_us != 0 && ts_us > since_us && ts_us <= now_us + kSampleFutureSlackUs;
}

std::uint64_t sample_window_start(std::uint64_t last_seen_us, std::uint64_t now_us) noexcept {
  if (last_seen_us == 0 || last_seen_us > now_us + kSampleFutureSlackUs)
    return now_us > 1'000'000 ? now_us - 1'000'000 : 0;
  return last_seen_us;
}

GpuSample read_sample(DeviceContext& ctx, Call& call) {
  const NvmlApi& a = *ctx.api;
  nvmlDevice_t h = ctx.handle;
  GpuSample s;
  s.index = ctx.index;
  s.info = ctx.info;

  // ---- memory ----
  MemoryReadings mem = read_memory(call, a, h);
  s.memory_total_bytes = mem.total;
  s.memory_reserved_bytes = mem.reserved;
  s.memory_used_bytes = mem.used;
  s.memory_free_bytes = mem.free;
  {
    nvmlBAR1Memory_t b{};
    int rc = call(a.device_get_bar1_memory_info, h, &b);
    MemoryReadings bar = checked_memory(b.bar1Total, std::nullopt, b.bar1Used, b.bar1Free);
    s.bar1_used_bytes = rc == NVML_SUCCESS ? bar.used : nvml_fail<std::uint64_t>(rc);
    s.bar1_free_bytes = rc == NVML_SUCCESS ? bar.free : nvml_fail<std::uint64_t>(rc);
  }

  // ---- utilisation ----
  {
    nvmlUtilization_t u{};
    int rc = call(a.device_get_utilization_rates, h, &u);
    s.utilization_gpu_pct = checked(rc, u.gpu, checked_percent);
    s.utilization_memory_pct = checked(rc, u.memory, checked_percent);
  }
  auto codec = [&](Reading<unsigned>& field, auto fn) {
    unsigned v = 0, period_us = 0;
    field = checked(call(fn, h, &v, &period_us), v, checked_percent);
  };
  codec(s.utilization_encoder_pct, a.device_get_encoder_utilization);
  codec(s.utilization_decoder_pct, a.device_get_decoder_utilization);
  codec(s.utilization_jpeg_pct, a.device_get_jpg_utilization);
  codec(s.utilization_ofa_pct, a.device_get_ofa_utilization);
  if (ctx.options.collect_high_res_samples) {
    s.gpu_utilization_samples =
        read_samples(call, a, h, NVML_GPU_UTILIZATION_SAMPLES, ctx.last_gpu_util_sample_us, true);
    s.power_samples = read_samples(call, a, h, NVML_TOTAL_POWER_SAMPLES, ctx.last_power_sample_us, false);
  }

  // ---- thermals, power, energy ----
  auto u32 = [&](Reading<unsigned>& field, auto check, auto fn, auto... args) {
    unsigned v = 0;
    field = checked(call(fn, h, args..., &v), v, check);
  };
  u32(s.temperature_gpu_c, checked_temperature, a.device_get_temperature, NVML_TEMPERATURE_GPU);
  u32(s.power_draw_mw, checked_power, a.device_get_power_usage);
  u32(s.power_limit_mw, checked_power_limit, a.device_get_power_management_limit);
  u32(s.enforced_power_limit_mw, checked_power_limit, a.device_get_enforced_power_limit);
  {
    unsigned long long e = 0;
    int rc = call(a.device_get_total_energy_consumption, h, &e);
    s.total_energy_mj = checked(
        rc, std::uint64_t{e}, [&](const std::uint64_t& v) { return checked_counter(v, ctx.prev_energy_mj); });
    if (rc == NVML_SUCCESS && e != kNotAvailableU64) ctx.prev_energy_mj = e;
  }
  u32(s.fan_speed_pct, checked_percent, a.device_get_fan_speed);
  u32(s.pstate, checked_pstate, a.device_get_performance_state);

  // ---- clocks ----
  u32(s.clocks_graphics_mhz, checked_u32, a.device_get_clock_info, NVML_CLOCK_GRAPHICS);
  u32(s.clocks_sm_mhz, checked_u32, a.device_get_clock_info, NVML_CLOCK_SM);
  u32(s.clocks_memory_mhz, checked_u32, a.device_get_clock_info, NVML_CLOCK_MEM);
  u32(s.clocks_video_mhz, checked_u32, a.device_get_clock_info, NVML_CLOCK_VIDEO);
  {
    unsigned long long r = 0;
    const int rc = call(a.device_get_current_clocks_event_reasons, h, &r);
    s.clocks_event_reasons_active = checked(rc, std::uint64_t{r}, checked_u64);
  }

  // ---- field values: violation counters, memory temperature, instant power (one call) ----
  {
    constexpr unsigned kIds[] = {
        NVML_FI_DEV_PERF_POLICY_POWER, NVML_FI_DEV_PERF_POLICY_THERMAL,
        NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN, NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN,
        NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN, NVML_FI_DEV_PERF_POLICY_SYNC_BOOST,
        NVML_FI_DEV_MEMORY_TEMP, NVML_FI_DEV_POWER_INSTANT, NVML_FI_DEV_POWER_AVERAGE,
        // NVLink (nvml_nvlink.cpp): link count, then data counters of all links
        NVML_FI_DEV_NVLINK_LINK_COUNT, NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX,
        NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX};
    constexpr std::size_t kNvlink = std::size(kIds) - 3;
    std::array<nvmlFieldValue_t, std::size(kIds)> fv{};
    for (std::size_t i = 0; i < fv.size(); ++i) fv[i].fieldId = kIds[i];
    fv[kNvlink + 1].scopeId = fv[kNvlink + 2].scopeId = 0xFFFFFFFFu;  // UINT_MAX: summed over all links
    const std::int64_t before_us = monotonic_now_us();
    int rc = call(a.device_get_field_values, h, static_cast<int>(fv.size()), fv.data());
    const std::int64_t mid_us = before_us + (monotonic_now_us() - before_us) / 2;
    read_nvlink_throughput(ctx, rc, fv[kNvlink], fv[kNvlink + 1], fv[kNvlink + 2], mid_us, s);
    Reading<std::uint64_t>* violation[] = {&s.violation_power_ns,          &s.violation_thermal_ns,
                                           &s.violation_sw_thermal_ns,     &s.violation_hw_thermal_ns,
                                           &s.violation_hw_power_brake_ns, &s.violation_sync_boost_ns};
    for (std::size_t i = 0; i < kNvlink; ++i) {
      int frc = rc != NVML_SUCCESS ? rc : fv[i].nvmlReturn;
      std::optional<std::uint64_t> v = value_as_u64(fv[i].valueType, fv[i].value);
      if (frc == NVML_SUCCESS && !v) frc = -1;  // negative or unknown type: invalid below
      auto as_u64 = [&]() -> Reading<std::uint64_t> {
        if (frc == -1) return Reading<std::uint64_t>::fail(ReadStatus::invalid_value);
        if (frc != NVML_SUCCESS) return nvml_fail<std::uint64_t>(frc);
        return checked_u64(*v);
      };
      auto as_u32 = [&](auto check) -> Reading<unsigned> {
        Reading<std::uint64_t> r = as_u64();
        if (!r.ok()) return Reading<unsigned>::fail(r.status, r.code);
        if (*r > 0xFFFFFFFEull) return Reading<unsigned>::fail(ReadStatus::invalid_value);
        return check(static_cast<unsigned>(*r));
      };
      if (i < 6) {
        Reading<std::uint64_t> r = as_u64();
        if (r.ok()) {
          std::uint64_t now = *r;
          r = checked_counter(now, ctx.prev_violation[i]);
          ctx.prev_violation[i] = now;
        }
        *violation[i] = r;
      } else if (kIds[i] == NVML_FI_DEV_MEMORY_TEMP) {
        s.temperature_memory_c = as_u32(checked_temperature);
      } else if (kIds[i] == NVML_FI_DEV_POWER_INSTANT) {
        s.power_draw_instant_mw = as_u32(checked_power);
      } else {
        s.power_draw_average_mw = as_u32(checked_power);
      }
    }
  }

  // ---- ECC and memory health ----
  {
    unsigned cur = 0, pend = 0;
    int rc = call(a.device_get_ecc_mode, h, &cur, &pend);
    s.ecc_mode_current = checked(rc, cur, as_bool);
    s.ecc_mode_pending = checked(rc, pend, as_bool);
  }
  {
    struct {
      Reading<std::uint64_t>* field;
      unsigned type, counter;
    } ecc[] = {{&s.ecc_corrected_volatile, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC},
               {&s.ecc_uncorrected_volatile, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC},
               {&s.ecc_corrected_aggregate, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC},
               {&s.ecc_uncorrected_aggregate, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC}};
    for (std::size_t i = 0; i < std::size(ecc); ++i) {
      unsigned long long n = 0;
      int rc = call(a.device_get_total_ecc_errors, h, ecc[i].type, ecc[i].counter, &n);
      *ecc[i].field = checked(rc, std::uint64_t{n},
                              [&](const std::uint64_t& v) { return checked_counter(v, ctx.prev_ecc[i]); });
      if (rc == NVML_SUCCESS && n != kNotAvailableU64) ctx.prev_ecc[i] = n;
    }
  }
  auto retired = [&](Reading<unsigned>& field, unsigned cause) {
    unsigned count = 0;  // count-only call: no address buffer
    int rc = call(a.device_get_retired_pages, h, cause, &count, static_cast<unsigned long long*>(nullptr));
    if (rc == NVML_ERROR_INSUFFICIENT_SIZE) rc = NVML_SUCCESS;
    field = checked(rc, count, checked_u32);
  };
  retired(s.retired_pages_sbe, NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS);
  retired(s.retired_pages_dbe, NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR);
  {
    unsigned p = 0;
    s.retired_pages_pending = checked(call(a.device_get_retired_pages_pending_status, h, &p), p, as_bool);
  }
  {
    unsigned cor = 0, unc = 0, pend = 0, fail = 0;
    int rc = call(a.device_get_remapped_rows, h, &cor, &unc, &pend, &fail);
    s.remapped_rows_correctable = checked(rc, cor, checked_u32);
    s.remapped_rows_uncorrectable = checked(rc, unc, checked_u32);
    s.remapped_rows_pending = checked(rc, pend, as_bool);
    s.remapped_rows_failure = checked(rc, fail, as_bool);
  }

  // ---- PCIe ----
  u32(s.pcie_link_gen_current, checked_u32, a.device_get_curr_pcie_link_generation);
  u32(s.pcie_link_width_current, checked_u32, a.device_get_curr_pcie_link_width);
  if (ctx.options.collect_pcie_throughput) read_pcie_throughput(ctx, call, s);
  u32(s.pcie_replay_count, checked_u32, a.device_get_pcie_replay_counter);

  // ---- modes ----
  {
    unsigned v = 0;
    s.persistence_mode = checked(call(a.device_get_persistence_mode, h, &v), v, as_bool);
    s.display_active = checked(call(a.device_get_display_active, h, &v), v, as_bool);
  }
  u32(s.compute_mode, checked_u32, a.device_get_compute_mode);
  {
    unsigned cur = 0, pend = 0;
    int rc = call(a.device_get_mig_mode, h, &cur, &pend);
    s.mig_mode_current = checked(rc, cur, checked_u32);
    s.mig_mode_pending = checked(rc, pend, checked_u32);
    if (rc == NVML_SUCCESS && cur == 1) read_mig_devices(call, a, h, s);
  }

  if (ctx.options.collect_extended) read_extended(call, a, h, s);

  // ---- GPM (Hopper+) ----
  if (ctx.options.collect_gpm && ctx.info && ctx.info->gpm_supported.value_or(false)) {
    read_gpm(ctx, call, s);
  } else {
    set_gpm_status(s, ctx.options.collect_gpm ? ReadStatus::not_supported : ReadStatus::not_collected);
  }
  return s;
}

void set_all_status(GpuSample& s, ReadStatus st, std::int32_t code, bool processes) {
  if (processes) s.process_count = Reading<unsigned>::fail(st, code);
  auto set = [&](auto&... r) { ((r.status = st, r.code = code, r.value = {}), ...); };
  set(s.responsive, s.memory_total_bytes, s.memory_reserved_bytes, s.memory_used_bytes, s.memory_free_bytes,
      s.bar1_used_bytes, s.bar1_free_bytes, s.utilization_gpu_pct, s.utilization_memory_pct,
      s.utilization_encoder_pct, s.utilization_decoder_pct, s.utilization_jpeg_pct, s.utilization_ofa_pct,
      s.temperature_gpu_c, s.temperature_memory_c, s.power_draw_mw, s.power_draw_instant_mw, s.power_limit_mw,
      s.enforced_power_limit_mw, s.total_energy_mj, s.fan_speed_pct, s.pstate, s.clocks_graphics_mhz,
      s.clocks_sm_mhz, s.clocks_memory_mhz, s.clocks_video_mhz, s.clocks_event_reasons_active,
      s.violation_power_ns, s.violation_thermal_ns, s.violation_sw_thermal_ns, s.violation_hw_thermal_ns,
      s.violation_hw_power_brake_ns, s.ecc_mode_current, s.ecc_mode_pending, s.ecc_corrected_volatile,
      s.ecc_uncorrected_volatile, s.ecc_corrected_aggregate, s.ecc_uncorrected_aggregate, s.retired_pages_sbe,
      s.retired_pages_dbe, s.retired_pages_pending, s.remapped_rows_correctable,
      s.remapped_rows_uncorrectable, s.remapped_rows_pending, s.remapped_rows_failure,
      s.pcie_link_gen_current, s.pcie_link_width_current, s.pcie_rx_kib_s, s.pcie_tx_kib_s,
      s.pcie_replay_count, s.persistence_mode, s.compute_mode, s.display_active, s.mig_mode_current,
      s.mig_mode_pending, s.gpm_sm_util_pct, s.gpm_sm_occupancy_pct, s.gpm_tensor_util_pct,
      s.gpm_dram_bw_util_pct, s.gpm_pcie_tx_mib_s, s.gpm_pcie_rx_mib_s, s.gpm_nvlink_tx_mib_s,
      s.gpm_nvlink_rx_mib_s, s.power_draw_average_mw, s.violation_sync_boost_ns, s.display_attached,
      s.accounting_mode, s.accounting_buffer_size, s.temperature_tlimit_c, s.encoder_session_count,
      s.encoder_average_fps, s.encoder_average_latency_us, s.fabric_state, s.fabric_status,
      s.fabric_clique_id, s.fabric_cluster_uuid, s.gpm_graphics_util_pct, s.nvlink_data_kib_s);
  for (EccLocationCounts* e : {&s.ecc_volatile_by_location, &s.ecc_aggregate_by_location})
    set(e->sram_corrected, e->sram_uncorrected, e->dram_corrected, e->dram_uncorrected);
  {
    SramEccStatus& e = s.sram_ecc;
    set(e.volatile_uncorrected_parity, e.volatile_uncorrected_secded, e.aggregate_uncorrected_parity,
        e.aggregate_uncorrected_secded, e.aggregate_uncorrected_l2, e.aggregate_uncorrected_sm,
        e.aggregate_uncorrected_pcie, e.aggregate_uncorrected_mcu, e.aggregate_uncorrected_other,
        e.threshold_exceeded);
  }
  for (auto& m : s.mig_devices) {
    set(m.gpu_instance_id, m.compute_instance_id, m.uuid, m.name, m.memory_total_bytes, m.memory_used_bytes,
        m.memory_free_bytes, m.memory_reserved_bytes, m.gpm_graphics_util_pct, m.gpm_sm_util_pct,
        m.gpm_sm_occupancy_pct, m.gpm_tensor_util_pct, m.gpm_dram_bw_util_pct, m.gpm_pcie_tx_mib_s,
        m.gpm_pcie_rx_mib_s, m.gpm_nvlink_tx_mib_s, m.gpm_nvlink_rx_mib_s);
  }
  s.gpu_utilization_samples.clear();
  s.power_samples.clear();
}

}  // namespace trainmon::nvml
