// SPDX-License-Identifier: Apache-2.0
// serve's dcgm-exporter compatible GPU families on /metrics: their label sets (dcgm-exporter's, one
// series per GPU instance on a MIG-enabled GPU) and their values, read through the GPU field
// registry (trainmon/core/gpu_fields.h: the rows with a dcgm name, in dcgm_order).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "serve/prometheus_text.h"
#include "trainmon/core/gpu_fields.h"
#include "trainmon/core/snapshot.h"
#include "trainmon/serve/metrics_text.h"

namespace trainmon::serve::metrics {

/// The dcgm-exporter families, in /metrics order: the GPU field registry's rows with a dcgm name
/// (core/gpu_fields.h has their names, types, units and help).
inline constexpr auto kDcgm = gpu_fields::dcgm_in_order();

/// dcgm-exporter's label set for one GPU. `with_model`: false for trainmon_* metrics, which leave
/// out the camelCase `modelName` (Prometheus naming lint), the driver version and the MIG labels
/// and keep the rest for joins. `mig`: a GPU instance's series (GPU_I_PROFILE, GPU_I_ID as
/// dcgm-exporter adds them). `driver_version`: the DCGM_FI_DRIVER_VERSION label of dcgm-exporter's
/// default counters (left out when empty).
std::string gpu_labels(const GpuSample& g, const std::string& hostname, bool with_model,
                       std::string_view driver_version = {}, const MigDeviceSample* mig = nullptr);

/// One exported series of a GPU: its labels and, on a MIG GPU, the GPU instance it stands for.
struct GpuSeries {
  std::string labels;
  const MigDeviceSample* mig = nullptr;
};

/// dcgm-exporter's series for one GPU: one without GPU_I_* labels, or on a MIG-enabled GPU one per
/// GPU instance (GPU_I_PROFILE, GPU_I_ID).
std::vector<GpuSeries> dcgm_series(const GpuSample& g, const std::string& hostname, std::string_view driver);

/// One dcgm family's value for one series, in dcgm-exporter's unit: a GPU instance's own value
/// where the field has one (frame buffer, GPM), else the GPU's. nullopt when not read.
Opt dcgm_value(const gpu_fields::GpuField& f, const GpuSample& g, const MigDeviceSample* mig);

bool is_counter(const gpu_fields::GpuField& f);

/// The GPU answered this tick (its families are exported only then).
bool gpu_answers(const GpuSample& g);

/// Writes every dcgm family with a value for some GPU: `series[i]` are snap.gpus[i]'s; counters
/// take their continued value from `counters` where followed.
void render_dcgm_families(Writer& w, const Snapshot& snap, const std::vector<std::vector<GpuSeries>>& series,
                          const CounterState& counters);

}  // namespace trainmon::serve::metrics
