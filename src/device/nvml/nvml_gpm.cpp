// SPDX-License-Identifier: Apache-2.0
// GPM metrics (Hopper+): two samples, the previous tick's and this tick's, then one
// nvmlGpmMetricsGet over the interval between them. The first tick only takes a sample, so every
// GPM field is not_available until the second tick. The whole GPU is sampled with
// nvmlGpmSampleGet; on a MIG-enabled GPU each GPU instance also with nvmlGpmMigSampleGet (its
// gpu_instance_id, on the parent's handle: nvml.h), each with its own pair of samples.
#include <array>
#include <map>
#include <memory>
#include <utility>

#include "device/nvml/nvml_device.h"

namespace trainmon::nvml {

namespace {

constexpr unsigned kMetrics[] = {
    NVML_GPM_METRIC_GRAPHICS_UTIL,          NVML_GPM_METRIC_SM_UTIL,
    NVML_GPM_METRIC_SM_OCCUPANCY,           NVML_GPM_METRIC_ANY_TENSOR_UTIL,
    NVML_GPM_METRIC_DRAM_BW_UTIL,           NVML_GPM_METRIC_PCIE_TX_PER_SEC,
    NVML_GPM_METRIC_PCIE_RX_PER_SEC,        NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC,
    NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC};
constexpr std::size_t kCount = std::size(kMetrics);

/// Where each of kMetrics goes, in kMetrics' order.
using GpmFields = std::array<Reading<double>*, kCount>;

template <class S>
GpmFields fields_of(S& s) {
  return {&s.gpm_graphics_util_pct, &s.gpm_sm_util_pct,      &s.gpm_sm_occupancy_pct,
          &s.gpm_tensor_util_pct,   &s.gpm_dram_bw_util_pct, &s.gpm_pcie_tx_mib_s,
          &s.gpm_pcie_rx_mib_s,     &s.gpm_nvlink_tx_mib_s,  &s.gpm_nvlink_rx_mib_s};
}

bool is_percent(unsigned metric) {
  return metric == NVML_GPM_METRIC_GRAPHICS_UTIL || metric == NVML_GPM_METRIC_SM_UTIL ||
         metric == NVML_GPM_METRIC_SM_OCCUPANCY || metric == NVML_GPM_METRIC_ANY_TENSOR_UTIL ||
         metric == NVML_GPM_METRIC_DRAM_BW_UTIL;
}

void set_all(const GpmFields& out, Reading<double> r) {
  for (Reading<double>* f : out) *f = r;
}

void free_state(const NvmlApi& a, GpmState& g) {
  for (nvmlGpmSample_t* slot : {&g.previous, &g.current}) {
    if (*slot != nullptr && a.gpm_sample_free != nullptr) a.gpm_sample_free(*slot);
    *slot = nullptr;
  }
  g.previous_valid = false;
}

/// One interval of GPM metrics into `out`: `take(sample)` fills this tick's sample (its NVML code).
template <class Take>
void gpm_interval(const NvmlApi& a, Call& call, GpmState& g, Take take, const GpmFields& out) {
  for (nvmlGpmSample_t* slot : {&g.previous, &g.current}) {
    if (*slot != nullptr) continue;
    int rc = call(a.gpm_sample_alloc, slot);
    if (rc != NVML_SUCCESS) {
      *slot = nullptr;
      set_all(out, nvml_fail<double>(rc));
      return;
    }
  }
  int rc = take(g.current);
  if (rc != NVML_SUCCESS) {
    g.previous_valid = false;
    set_all(out, nvml_fail<double>(rc));
    return;
  }
  if (!g.previous_valid) {
    std::swap(g.previous, g.current);
    g.previous_valid = true;
    set_all(out, Reading<double>::fail(ReadStatus::not_available));
    return;
  }
  auto get = std::make_unique<nvmlGpmMetricsGet_t>();
  get->version = NVML_GPM_METRICS_GET_VERSION;
  get->numMetrics = static_cast<unsigned>(kCount);
  get->sample1 = g.previous;
  get->sample2 = g.current;
  for (std::size_t i = 0; i < kCount; ++i) get->metrics[i].metricId = kMetrics[i];
  rc = call(a.gpm_metrics_get, get.get());
  std::swap(g.previous, g.current);  // this tick's sample is next tick's "previous"
  if (rc != NVML_SUCCESS) {
    set_all(out, nvml_fail<double>(rc));
    return;
  }
  for (std::size_t i = 0; i < kCount; ++i) {
    const nvmlGpmMetric_t& m = get->metrics[i];
    Reading<double>* field = out[i];
    if (m.nvmlReturn != NVML_SUCCESS) {
      *field = nvml_fail<double>(m.nvmlReturn);
    } else if (!(m.value >= 0) || (is_percent(kMetrics[i]) && m.value > 100.0)) {
      *field = Reading<double>::fail(ReadStatus::invalid_value);
    } else {
      *field = Reading<double>::of(m.value);
    }
  }
}

}  // namespace

void read_gpm(DeviceContext& ctx, Call& call, GpuSample& s) {
  const NvmlApi& a = *ctx.api;
  gpm_interval(
      a, call, ctx.gpm, [&](nvmlGpmSample_t smp) { return call(a.gpm_sample_get, ctx.handle, smp); },
      fields_of(s));

  // Per GPU instance: one state per gpu_instance_id seen this tick (several compute instances of one
  // GPU instance share its values); states of instances that are gone are freed.
  std::map<unsigned, GpmState> kept;
  std::map<unsigned, std::size_t> first_of;  // gpu_instance_id → the first MIG row read for it
  for (std::size_t r = 0; r < s.mig_devices.size(); ++r) {
    MigDeviceSample& m = s.mig_devices[r];
    if (!m.gpu_instance_id.ok()) {
      set_all(fields_of(m), Reading<double>::fail(m.gpu_instance_id.status, m.gpu_instance_id.code));
      continue;
    }
    const unsigned gi = *m.gpu_instance_id;
    if (auto done = first_of.find(gi); done != first_of.end()) {
      const GpmFields from = fields_of(s.mig_devices[done->second]);
      const GpmFields to = fields_of(m);
      for (std::size_t i = 0; i < kCount; ++i) *to[i] = *from[i];
      continue;
    }
    first_of[gi] = r;
    GpmState& st = kept[gi];
    if (auto it = ctx.gpm_mig.find(gi); it != ctx.gpm_mig.end()) {
      st = it->second;
      ctx.gpm_mig.erase(it);
    }
    gpm_interval(
        a, call, st, [&](nvmlGpmSample_t smp) { return call(a.gpm_mig_sample_get, ctx.handle, gi, smp); },
        fields_of(m));
  }
  for (auto& [gi, st] : ctx.gpm_mig) free_state(a, st);
  ctx.gpm_mig = std::move(kept);
}

void set_gpm_status(GpuSample& s, ReadStatus status) {
  set_all(fields_of(s), Reading<double>::fail(status));
  for (MigDeviceSample& m : s.mig_devices) set_all(fields_of(m), Reading<double>::fail(status));
}

void free_gpm(DeviceContext& ctx) {
  free_state(*ctx.api, ctx.gpm);
  for (auto& [gi, st] : ctx.gpm_mig) free_state(*ctx.api, st);
  ctx.gpm_mig.clear();
}

DeviceContext::~DeviceContext() {
  free_gpm(*this);
}

}  // namespace trainmon::nvml
