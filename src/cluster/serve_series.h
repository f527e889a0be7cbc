// SPDX-License-Identifier: Apache-2.0
// The per-GPU series `serve` exports (docs/serve.md) that the cluster views read from Prometheus:
// `top --prometheus` (cluster_view.cpp) and the job report (job_history.cpp), one list for both.
#pragma once

#include <string>

namespace trainmon::cluster {

/// One series: the key the views file its values under, its metric name, and how the series of a
/// MIG-enabled GPU's instances make the GPU's value (per_gpu).
struct ServeSeries {
  const char* key;
  const char* name;
  bool sum_over_instances = false;  ///< memory (each instance's own); else the GPU's value repeated
};

/// Per GPU (labels gpu, UUID, Hostname, ...), in the order the views read them.
inline constexpr ServeSeries kServeGpuSeries[] = {
    {"util", "DCGM_FI_DEV_GPU_UTIL"},
    {"mem_util", "DCGM_FI_DEV_MEM_COPY_UTIL"},
    {"fb_used", "DCGM_FI_DEV_FB_USED", true},
    {"fb_free", "DCGM_FI_DEV_FB_FREE", true},
    {"fb_reserved", "DCGM_FI_DEV_FB_RESERVED", true},
    {"temp", "DCGM_FI_DEV_GPU_TEMP"},
    {"power", "DCGM_FI_DEV_POWER_USAGE"},
    {"power_limit", "DCGM_FI_DEV_POWER_MGMT_LIMIT"},
    {"sm_clock", "DCGM_FI_DEV_SM_CLOCK"},
    {"reasons", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"},
    {"up", "trainmon_gpu_up"},
    // bytes, one per GPU even with MIG: the total nvmlDeviceGetMemoryInfo gives (status' figure);
    // used + free + reserved of the MiB fields is off by their rounding, and on MIG the instances'
    {"fb_total", "trainmon_gpu_memory_total_bytes"},
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
