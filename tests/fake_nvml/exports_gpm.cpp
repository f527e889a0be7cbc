// SPDX-License-Identifier: Apache-2.0
// GPM (Hopper+): samples record the scenario time they were taken; metrics are the timelines'
// values at the second sample's time.
#include <cstring>

#include "exports_util.h"

/// A GPM sample buffer: which device (and GPU instance) it was taken on, and when.
struct nvmlGpmSample_st {
  bool taken = false;
  unsigned gpu = 0;
  int gpu_instance = -1;  // nvmlGpmMigSampleGet's GPU instance id; -1: the whole GPU
  double t = 0;
};

using namespace fake_nvml;

namespace {

struct MetricDef {
  unsigned id;
  const char* key;
  const char* short_name;
  const char* long_name;
  const char* unit;
};
constexpr MetricDef kMetrics[] = {
    {NVML_GPM_METRIC_GRAPHICS_UTIL, "gpm_graphics_util", "gr_util", "Graphics utilization", "%"},
    {NVML_GPM_METRIC_SM_UTIL, "gpm_sm_util", "sm_util", "SM utilization", "%"},
    {NVML_GPM_METRIC_SM_OCCUPANCY, "gpm_sm_occupancy", "sm_occupancy", "SM occupancy", "%"},
    {NVML_GPM_METRIC_ANY_TENSOR_UTIL, "gpm_tensor_util", "tensor_util", "Any tensor utilization", "%"},
    {NVML_GPM_METRIC_DRAM_BW_UTIL, "gpm_dram_bw_util", "dram_bw_util", "DRAM bandwidth utilization", "%"},
    {NVML_GPM_METRIC_PCIE_TX_PER_SEC, "gpm_pcie_tx", "pcie_tx", "PCIe TX", "MiB/sec"},
    {NVML_GPM_METRIC_PCIE_RX_PER_SEC, "gpm_pcie_rx", "pcie_rx", "PCIe RX", "MiB/sec"},
    {NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC, "gpm_nvlink_rx", "nvlink_rx", "NVLink total RX", "MiB/sec"},
    {NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC, "gpm_nvlink_tx", "nvlink_tx", "NVLink total TX", "MiB/sec"},
};

int take(const Call& c, nvmlGpmSample_t sample, int gpu_instance = -1) {
  FAKE_NEED(sample);
  if (on_mig_handle(c) || !c.dev->gpm_supported) return NVML_ERROR_NOT_SUPPORTED;
  sample->taken = true;
  sample->gpu = c.gpu;
  sample->gpu_instance = gpu_instance;
  sample->t = c.t;
  return NVML_SUCCESS;
}

}  // namespace

FAKE_NVML_EXPORT nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t device, nvmlGpmSupport_t* gpmSupport) {
  FAKE_ENTER(device);
  FAKE_NEED(gpmSupport);
  if (gpmSupport->version != NVML_GPM_SUPPORT_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  gpmSupport->isSupportedDevice = !on_mig_handle(c) && c.dev->gpm_supported ? 1 : 0;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t* gpmSample) {
  Call c = enter("nvmlGpmSampleAlloc", nullptr, false);
  if (c.rc != NVML_SUCCESS) return c.rc;
  FAKE_NEED(gpmSample);
  *gpmSample = new nvmlGpmSample_st();
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t gpmSample) {
  FAKE_NEED(gpmSample);
  delete gpmSample;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t device, nvmlGpmSample_t gpmSample) {
  FAKE_ENTER(device);
  return take(c, gpmSample);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlGpmMigSampleGet(nvmlDevice_t device, unsigned int gpuInstanceId,
                                                  nvmlGpmSample_t gpmSample) {
  FAKE_ENTER(device);
  if (!c.dev->mig_enabled()) return NVML_ERROR_INVALID_ARGUMENT;
  bool found = false;
  for (const auto& m : c.dev->mig_devices) found |= m.gi_id == gpuInstanceId;
  if (!found) return NVML_ERROR_NOT_FOUND;
  return take(c, gpmSample, static_cast<int>(gpuInstanceId));
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t* metricsGet) {
  ::fake_nvml::Call c = ::fake_nvml::enter("nvmlGpmMetricsGet", nullptr, false);
  if (c.rc != NVML_SUCCESS) return c.rc;
  FAKE_NEED(metricsGet);
  if (metricsGet->version != NVML_GPM_METRICS_GET_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  if (metricsGet->numMetrics > NVML_GPM_METRIC_MAX || metricsGet->sample1 == nullptr ||
      metricsGet->sample2 == nullptr || !metricsGet->sample1->taken || !metricsGet->sample2->taken ||
      metricsGet->sample1->gpu != metricsGet->sample2->gpu ||
      metricsGet->sample1->gpu_instance != metricsGet->sample2->gpu_instance ||
      metricsGet->sample2->gpu >= c.sc->devices.size())
    return NVML_ERROR_INVALID_ARGUMENT;
  const Device& d = c.sc->devices[metricsGet->sample2->gpu];
  const double t = metricsGet->sample2->t;
  // A GPU instance's samples read that MIG device's own gpm_* timelines (none: NOT_SUPPORTED).
  const MigDevice* mig = nullptr;
  if (const int gi = metricsGet->sample2->gpu_instance; gi >= 0)
    for (const auto& m : d.mig_devices)
      if (mig == nullptr && m.gi_id == static_cast<unsigned>(gi)) mig = &m;
  auto timeline = [&](const char* key) -> const Timeline* {
    if (metricsGet->sample2->gpu_instance < 0) return d.metric(key);
    if (mig == nullptr) return nullptr;
    auto it = mig->metrics.find(key);
    return it == mig->metrics.end() ? nullptr : &it->second;
  };
  for (unsigned i = 0; i < metricsGet->numMetrics; ++i) {
    nvmlGpmMetric_t& m = metricsGet->metrics[i];
    m.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
    m.value = 0;
    for (const auto& def : kMetrics) {
      if (def.id != m.metricId) continue;
      m.metricInfo.shortName = const_cast<char*>(def.short_name);
      m.metricInfo.longName = const_cast<char*>(def.long_name);
      m.metricInfo.unit = const_cast<char*>(def.unit);
      if (const Timeline* tl = timeline(def.key)) {
        m.value = tl->at(t);
        m.nvmlReturn = NVML_SUCCESS;
      }
    }
  }
  return NVML_SUCCESS;
}
