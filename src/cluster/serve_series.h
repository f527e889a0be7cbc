// SPDX-License-Identifier: Apache-2.0
// The per-GPU series `serve` exports (docs/serve.md) that the cluster views read from Prometheus:
// `top --prometheus` (cluster_view.cpp) and the job report (job_history.cpp), one list for both.
#pragma once

namespace trainmon::cluster {

/// One series: the key the views file its values under, and its metric name.
struct ServeSeries {
  const char* key;
  const char* name;
};

/// Per GPU (labels gpu, UUID, Hostname, ...), in the order the views read them.
inline constexpr ServeSeries kServeGpuSeries[] = {
    {"util", "DCGM_FI_DEV_GPU_UTIL"},
    {"mem_util", "DCGM_FI_DEV_MEM_COPY_UTIL"},
    {"fb_used", "DCGM_FI_DEV_FB_USED"},
    {"fb_free", "DCGM_FI_DEV_FB_FREE"},
    {"fb_reserved", "DCGM_FI_DEV_FB_RESERVED"},
    {"temp", "DCGM_FI_DEV_GPU_TEMP"},
    {"power", "DCGM_FI_DEV_POWER_USAGE"},
    {"power_limit", "DCGM_FI_DEV_POWER_MGMT_LIMIT"},
    {"sm_clock", "DCGM_FI_DEV_SM_CLOCK"},
    {"reasons", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"},
    {"up", "trainmon_gpu_up"},
};

}  // namespace trainmon::cluster
