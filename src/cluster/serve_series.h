// SPDX-License-Identifier: Apache-2.0
// The per-GPU series `serve` exports (docs/serve.md) that the cluster views read from Prometheus:
// `top --prometheus` (cluster_view.cpp) and the job report (job_history.cpp), one list for both.
#pragma once

#include <string>
#include <string_view>

#include "trainmon/core/gpu_fields.h"

namespace trainmon::cluster {

/// One series: the key the views file its values under, its metric name, and how the series of a
/// MIG-enabled GPU's instances make the GPU's value (per_gpu).
struct ServeSeries {
  const char* key;
  const char* name;
  bool sum_over_instances = false;  ///< memory (each instance's own); else the GPU's value repeated
};

/// The metric serve exports a GPU field under (core/gpu_fields.h, the row whose key is `key`): its
/// dcgm-exporter name, or with `prom` its trainmon_* name. A key without that name does not compile.
/// The registry's names are string literals, so data() ends with a NUL.
consteval const char* served_name(std::string_view key, bool prom = false) {
  const std::size_t i = gpu_fields::key_index(key);
  if (i == gpu_fields::kGpuFieldCount) throw "no such GPU field";
  const std::string_view name = prom ? gpu_fields::kGpuFields[i].prom : gpu_fields::kGpuFields[i].dcgm;
  if (name.empty()) throw "no such served GPU field";
  return name.data();
}

/// Per GPU (labels gpu, UUID, Hostname, ...), in the order the views read them.
inline constexpr ServeSeries kServeGpuSeries[] = {
    {"util", served_name("utilization_gpu_pct")},
    {"mem_util", served_name("utilization_memory_pct")},
    {"fb_used", served_name("memory_used_bytes"), true},
    {"fb_free", served_name("memory_free_bytes"), true},
    {"fb_reserved", served_name("memory_reserved_bytes"), true},
    {"temp", served_name("temperature_gpu_c")},
    {"power", served_name("power_draw_mw")},
    {"power_limit", served_name("enforced_power_limit_mw")},
    {"sm_clock", served_name("clocks_sm_mhz")},
    {"reasons", served_name("clocks_event_reasons_active")},
    {"up", "trainmon_gpu_up"},  // not a field: whether the GPU answered (metrics_text.cpp)
    // bytes, one per GPU even with MIG: the total nvmlDeviceGetMemoryInfo gives (status' figure);
    // used + free + reserved of the MiB fields is off by their rounding, and on MIG the instances'
    {"fb_total", served_name("memory_total_bytes", true)},
};

/// `expr` (an instant vector of series `s`) as one series per GPU. On a MIG-enabled GPU serve
/// exports, as dcgm-exporter does, one series per GPU instance (labels GPU_I_ID, GPU_I_PROFILE):
/// frame-buffer memory is the instance's own, summed to the GPU's; every other field repeats the
/// GPU's value on each instance (max keeps it). A GPU without MIG has one series, kept as it is
/// (`without` drops labels it does not have); the metric name goes, the views key on theirs.
inline std::string per_gpu(const ServeSeries& s, const std::string& expr) {
  return std::string(s.sum_over_instances ? "sum" : "max") + " without (GPU_I_ID, GPU_I_PROFILE) (" + expr +
         ")";
}

}  // namespace trainmon::cluster
