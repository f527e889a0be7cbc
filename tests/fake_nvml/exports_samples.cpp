// SPDX-License-Identifier: Apache-2.0
// The driver's sample ring buffers: nvmlDeviceGetSamples and the per-process utilization samples.
// Samples are synthesized on demand: one every 1/6 s of wall time since the time origin, timestamped
// in µs since the Unix epoch, valued from the timelines at the scenario time of that instant; the
// newest kRingSize are "buffered".
#include "exports_util.h"

using namespace fake_nvml;

namespace {

constexpr unsigned long long kTickUs = 166667;  // 1/6 s
constexpr unsigned long long kRingSize = 120;

/// The sample ticks (wall µs, one every `tick_us`) newer than lastSeen, oldest first, at most kRingSize.
std::vector<unsigned long long> ticks_after(unsigned long long lastSeen,
                                            unsigned long long tick_us = kTickUs) {
  const unsigned long long origin = origin_wall_us();
  const unsigned long long now = wall_now_us();
  const unsigned long long kmax = now > origin ? (now - origin) / tick_us : 0;
  const unsigned long long kmin = kmax >= kRingSize ? kmax - kRingSize + 1 : 0;
  std::vector<unsigned long long> out;
  for (unsigned long long k = kmin; k <= kmax; ++k) {
    const unsigned long long ts = origin + k * tick_us;
    if (ts > lastSeen) out.push_back(ts);
  }
  return out;
}

/// The metric key and value type of a sampling type; nullptr when not modelled.
const char* sample_key(unsigned type, bool* is_util) {
  *is_util = true;
  switch (type) {
    case NVML_TOTAL_POWER_SAMPLES: *is_util = false; return "power_draw";
    case NVML_GPU_UTILIZATION_SAMPLES: return "utilization_gpu";
    case NVML_MEMORY_UTILIZATION_SAMPLES: return "utilization_memory";
    case 3: return "utilization_encoder";
    case 4: return "utilization_decoder";
    case 5: *is_util = false; return "clock_graphics";  // PROCESSOR_CLK
    case 6: *is_util = false; return "clock_memory";    // MEMORY_CLK
    case 8: return "utilization_jpeg";
    case 9: return "utilization_ofa";
    default: return nullptr;
  }
}

struct ProcSample {
  unsigned pid;
  unsigned long long ts;
  unsigned sm, mem, enc, dec;
};

/// One sample per live process with a sampled engine at the newest tick after lastSeen.
/// Returns NOT_FOUND (as the driver does) when there is no newer tick or no sampled process.
int proc_samples(const Call& c, unsigned long long lastSeen, std::vector<ProcSample>* out) {
  if (c.mig != nullptr || c.dev->mig_enabled()) return NVML_ERROR_NOT_SUPPORTED;
  // The driver refreshes per-process samples on its own period (process_util_period_ms): a read
  // sooner than that after the previous one finds nothing newer (NOT_FOUND).
  const unsigned long long period_us =
      c.dev->process_util_period_ms > 0 ? 1000ULL * c.dev->process_util_period_ms : kTickUs;
  const auto ticks = ticks_after(lastSeen, period_us);
  if (ticks.empty()) return NVML_ERROR_NOT_FOUND;
  const unsigned long long ts = ticks.back();
  const double t = scenario_at_wall_us(*c.sc, ts);
  for (const auto& p : c.sc->processes) {
    if (p.gpu != c.gpu || !p.alive(t)) continue;
    // An engine without a sample (a `null` or absent timeline) answers NVML's all-ones value; a
    // process none of whose engines has a sample is not in the list at all (nvidia-smi pmon: "-").
    bool sampled = false;
    auto engine = [&](const Timeline& tl) {
      const double v = tl.at(t);
      if (std::isnan(v)) return all_ones<unsigned>();
      sampled = true;
      return std::min(100u, rounded<unsigned>(v));
    };
    // A badly dated sample (sample_time_offset_s): seconds added to the tick's timestamp; a date
    // before the epoch is 0 (undated).
    const double off_us = std::round(p.sample_time_offset_s.at(t) * 1e6);
    const double dated = static_cast<double>(ts) + (std::isnan(off_us) ? 0.0 : off_us);
    const unsigned long long sts = dated <= 0        ? 0ULL
                                   : dated >= 1.8e19 ? ~0ULL
                                                     : static_cast<unsigned long long>(dated);
    ProcSample s{p.pid, sts, engine(p.sm_util), engine(p.mem_util), engine(p.enc_util), engine(p.dec_util)};
    if (sampled) out->push_back(s);
  }
  return out->empty() ? NVML_ERROR_NOT_FOUND : NVML_SUCCESS;
}

}  // namespace

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetSamples(nvmlDevice_t device, unsigned int type,
                                                   unsigned long long lastSeenTimeStamp,
                                                   unsigned int* sampleValType, unsigned int* sampleCount,
                                                   nvmlSample_t* samples) {
  FAKE_ENTER(device);
  FAKE_NEED(sampleValType);
  FAKE_NEED(sampleCount);
  bool is_util = false;
  const char* key = sample_key(type, &is_util);
  if (key == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (c.mig != nullptr || (is_util && c.dev->mig_enabled())) return NVML_ERROR_NOT_SUPPORTED;
  const Timeline* tl = c.dev->metric(key);
  if (tl == nullptr) return NVML_ERROR_NOT_SUPPORTED;
  const auto ticks = ticks_after(lastSeenTimeStamp);
  if (ticks.empty()) return NVML_ERROR_NOT_FOUND;
  *sampleValType = NVML_VALUE_TYPE_UNSIGNED_INT;
  if (samples == nullptr) {  // size query
    *sampleCount = static_cast<unsigned>(ticks.size());
    return NVML_SUCCESS;
  }
  if (*sampleCount < ticks.size()) {
    *sampleCount = static_cast<unsigned>(ticks.size());
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  for (std::size_t i = 0; i < ticks.size(); ++i) {
    double v = tl->at(scenario_at_wall_us(*c.sc, ticks[i]));
    if (is_util) v = std::min(v, 100.0);
    samples[i].timeStamp = ticks[i];
    samples[i].sampleValue.ullVal = 0;
    samples[i].sampleValue.uiVal = rounded<unsigned>(v);
  }
  *sampleCount = static_cast<unsigned>(ticks.size());
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device,
                                                              nvmlProcessUtilizationSample_t* utilization,
                                                              unsigned int* processSamplesCount,
                                                              unsigned long long lastSeenTimeStamp) {
  FAKE_ENTER(device);
  FAKE_NEED(processSamplesCount);
  std::vector<ProcSample> s;
  const int rc = proc_samples(c, lastSeenTimeStamp, &s);
  if (rc != NVML_SUCCESS) return rc;
  if (utilization == nullptr || *processSamplesCount < s.size()) {
    *processSamplesCount = static_cast<unsigned>(s.size());
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  for (std::size_t i = 0; i < s.size(); ++i)
    utilization[i] = nvmlProcessUtilizationSample_t{s[i].pid, s[i].ts, s[i].sm, s[i].mem, s[i].enc, s[i].dec};
  *processSamplesCount = static_cast<unsigned>(s.size());
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetProcessesUtilizationInfo(nvmlDevice_t device,
                                                                    nvmlProcessesUtilizationInfo_v1_t* info) {
  FAKE_ENTER(device);
  FAKE_NEED(info);
  if (info->version != TRAINMON_NVML_STRUCT_VERSION(nvmlProcessesUtilizationInfo_v1_t, 1))
    return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  std::vector<ProcSample> s;
  const int rc = proc_samples(c, info->lastSeenTimeStamp, &s);
  if (rc != NVML_SUCCESS) return rc;
  if (info->procUtilArray == nullptr || info->processSamplesCount < s.size()) {
    info->processSamplesCount = static_cast<unsigned>(s.size());
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  for (std::size_t i = 0; i < s.size(); ++i)
    info->procUtilArray[i] =
        nvmlProcessUtilizationInfo_v1_t{s[i].ts, s[i].pid, s[i].sm, s[i].mem, s[i].enc, s[i].dec, 0, 0};
  info->processSamplesCount = static_cast<unsigned>(s.size());
  return NVML_SUCCESS;
}
