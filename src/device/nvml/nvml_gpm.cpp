// SPDX-License-Identifier: Apache-2.0
// GPM metrics (Hopper+): two nvmlGpmSampleGet samples, the previous tick's and this tick's, then one
// nvmlGpmMetricsGet over the interval between them. The first tick only takes a sample, so every
// GPM field is not_available until the second tick.
#include <utility>

#include "device/nvml/nvml_device.h"

namespace trainmon::nvml {

namespace {

Reading<double>* gpm_field(GpuSample& s, unsigned metric) {
  switch (metric) {
    case NVML_GPM_METRIC_SM_UTIL: return &s.gpm_sm_util_pct;
    case NVML_GPM_METRIC_SM_OCCUPANCY: return &s.gpm_sm_occupancy_pct;
    case NVML_GPM_METRIC_ANY_TENSOR_UTIL: return &s.gpm_tensor_util_pct;
    case NVML_GPM_METRIC_DRAM_BW_UTIL: return &s.gpm_dram_bw_util_pct;
    case NVML_GPM_METRIC_PCIE_TX_PER_SEC: return &s.gpm_pcie_tx_mib_s;
    case NVML_GPM_METRIC_PCIE_RX_PER_SEC: return &s.gpm_pcie_rx_mib_s;
    case NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC: return &s.gpm_nvlink_tx_mib_s;
    case NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC: return &s.gpm_nvlink_rx_mib_s;
    default: return nullptr;
  }
}

bool is_percent(unsigned metric) {
  return metric == NVML_GPM_METRIC_SM_UTIL || metric == NVML_GPM_METRIC_SM_OCCUPANCY ||
         metric == NVML_GPM_METRIC_ANY_TENSOR_UTIL || metric == NVML_GPM_METRIC_DRAM_BW_UTIL;
}

constexpr unsigned kMetrics[] = {NVML_GPM_METRIC_SM_UTIL,
                                 NVML_GPM_METRIC_SM_OCCUPANCY,
                                 NVML_GPM_METRIC_ANY_TENSOR_UTIL,
                                 NVML_GPM_METRIC_DRAM_BW_UTIL,
                                 NVML_GPM_METRIC_PCIE_TX_PER_SEC,
                                 NVML_GPM_METRIC_PCIE_RX_PER_SEC,
                                 NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC,
                                 NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC};

void set_all(GpuSample& s, Reading<double> r) {
  for (unsigned m : kMetrics) *gpm_field(s, m) = r;
}

}  // namespace

void read_gpm(DeviceContext& ctx, Call& call, GpuSample& s) {
  const NvmlApi& a = *ctx.api;
  GpmState& g = ctx.gpm;
  for (nvmlGpmSample_t* slot : {&g.previous, &g.current}) {
    if (*slot != nullptr) continue;
    int rc = call(a.gpm_sample_alloc, slot);
    if (rc != NVML_SUCCESS) {
      *slot = nullptr;
      set_all(s, nvml_fail<double>(rc));
      return;
    }
  }
  int rc = call(a.gpm_sample_get, ctx.handle, g.current);
  if (rc != NVML_SUCCESS) {
    g.previous_valid = false;
    set_all(s, nvml_fail<double>(rc));
    return;
  }
  if (!g.previous_valid) {
    std::swap(g.previous, g.current);
    g.previous_valid = true;
    set_all(s, Reading<double>::fail(ReadStatus::not_available));
    return;
  }
  auto get = std::make_unique<nvmlGpmMetricsGet_t>();
  get->version = NVML_GPM_METRICS_GET_VERSION;
  get->numMetrics = static_cast<unsigned>(std::size(kMetrics));
  get->sample1 = g.previous;
  get->sample2 = g.current;
  for (std::size_t i = 0; i < std::size(kMetrics); ++i) get->metrics[i].metricId = kMetrics[i];
  rc = call(a.gpm_metrics_get, get.get());
  std::swap(g.previous, g.current);  // this tick's sample is next tick's "previous"
  if (rc != NVML_SUCCESS) {
    set_all(s, nvml_fail<double>(rc));
    return;
  }
  for (std::size_t i = 0; i < std::size(kMetrics); ++i) {
    const nvmlGpmMetric_t& m = get->metrics[i];
    Reading<double>* field = gpm_field(s, kMetrics[i]);
    if (m.nvmlReturn != NVML_SUCCESS) {
      *field = nvml_fail<double>(m.nvmlReturn);
    } else if (!(m.value >= 0) || (is_percent(kMetrics[i]) && m.value > 100.0)) {
      *field = Reading<double>::fail(ReadStatus::invalid_value);
    } else {
      *field = Reading<double>::of(m.value);
    }
  }
}

void free_gpm(DeviceContext& ctx) {
  if (ctx.api->gpm_sample_free == nullptr) return;
  for (nvmlGpmSample_t* slot : {&ctx.gpm.previous, &ctx.gpm.current}) {
    if (*slot != nullptr) ctx.api->gpm_sample_free(*slot);
    *slot = nullptr;
  }
}

DeviceContext::~DeviceContext() {
  free_gpm(*this);
}

}  // namespace trainmon::nvml
