// SPDX-License-Identifier: Apache-2.0
#include "serve/dcgm_families.h"

#include <algorithm>
#include <cmath>

#include "serve/counter_continuity.h"

namespace trainmon::serve::metrics {

/// dcgm-exporter's label set for one GPU. `with_model`: false for trainmon_* metrics, which leave
/// out the camelCase `modelName` (Prometheus naming lint), the driver version and the MIG labels
/// and keep the rest for joins. `mig`: a GPU instance's series (GPU_I_PROFILE, GPU_I_ID as
/// dcgm-exporter adds them). `driver_version`: the DCGM_FI_DRIVER_VERSION label of dcgm-exporter's
/// default counters (left out when empty).
std::string gpu_labels(const GpuSample& g, const std::string& hostname, bool with_model,
                       std::string_view driver_version, const MigDeviceSample* mig) {
  std::string s;
  add_label(s, "gpu", std::to_string(g.index));
  const auto* info = g.info.get();
  add_label(s, "UUID", info && info->uuid.ok() ? *info->uuid : "");
  add_label(s, "pci_bus_id", info && info->pci_bus_id.ok() ? *info->pci_bus_id : "");
  add_label(s, "device", "nvidia" + std::to_string(g.index));
  if (with_model) add_label(s, "modelName", info && info->name.ok() ? *info->name : "");
  if (mig != nullptr) {
    // The MIG device's name is "<GPU name> MIG 3g.40gb": the profile is what follows "MIG ".
    std::string profile = mig->name.ok() ? *mig->name : "";
    const auto at = profile.rfind("MIG ");
    if (at != std::string::npos) profile = profile.substr(at + 4);
    add_label(s, "GPU_I_PROFILE", profile);
    add_label(s, "GPU_I_ID", mig->gpu_instance_id.ok() ? std::to_string(*mig->gpu_instance_id) : "");
  }
  add_label(s, "Hostname", hostname);
  if (with_model && !driver_version.empty()) add_label(s, "DCGM_FI_DRIVER_VERSION", driver_version);
  return s;
}

namespace {

/// The GPU instances whose series stand for a MIG-enabled GPU: its MIG devices with a readable GPU
/// instance id, the first of each id (compute instances of one GPU instance share its memory and
/// GPM values, and one label set must not be exported twice). Empty without MIG.
std::vector<const MigDeviceSample*> gpu_instances(const GpuSample& g) {
  std::vector<const MigDeviceSample*> out;
  for (const auto& m : g.mig_devices) {
    if (!m.gpu_instance_id.ok()) continue;
    const bool seen = std::any_of(out.begin(), out.end(), [&](const MigDeviceSample* o) {
      return *o->gpu_instance_id == *m.gpu_instance_id;
    });
    if (!seen) out.push_back(&m);
  }
  return out;
}

}  // namespace

/// dcgm-exporter's series for one GPU: one without GPU_I_* labels, or on a MIG-enabled GPU one per
/// GPU instance (GPU_I_PROFILE, GPU_I_ID), which is how dcgm-exporter reports every field of such a
/// GPU (the device-level ones repeat the GPU's value on each; NVIDIA/dcgm-exporter issues #317,
/// #736 show its output).
std::vector<GpuSeries> dcgm_series(const GpuSample& g, const std::string& hostname, std::string_view driver) {
  std::vector<GpuSeries> out;
  for (const MigDeviceSample* m : gpu_instances(g))
    out.push_back({gpu_labels(g, hostname, true, driver, m), m});
  if (out.empty()) out.push_back({gpu_labels(g, hostname, true, driver), nullptr});
  return out;
}

Opt dcgm_value(const gpu_fields::GpuField& f, const GpuSample& g, const MigDeviceSample* mig) {
  const gpu_fields::Value v = mig != nullptr && f.read_mig != nullptr ? f.read_mig(*mig) : f.read(g);
  if (!v.ok) return std::nullopt;
  return v.d * f.dcgm_factor;
}

bool is_counter(const gpu_fields::GpuField& f) {
  return f.dcgm_type == gpu_fields::MetricType::counter;
}

bool gpu_answers(const GpuSample& g) {
  return g.responsive.ok() && *g.responsive;
}

void render_dcgm_families(Writer& w, const Snapshot& snap, const std::vector<std::vector<GpuSeries>>& series,
                          const CounterState& counters) {
  for (const auto* m : kDcgm) {
    bool any = false;
    for (std::size_t i = 0; i < snap.gpus.size(); ++i) {
      const auto& g = snap.gpus[i];
      if (!gpu_answers(g)) continue;
      for (const GpuSeries& ser : series[i]) {
        auto v = dcgm_value(*m, g, ser.mig);
        if (!v || !std::isfinite(*v)) continue;
        if (!any) w.family(m->dcgm, gpu_fields::metric_type_name(m->dcgm_type), m->dcgm_help);
        any = true;
        w.sample(ser.labels, is_counter(*m) ? continued(counters, m->dcgm, ser.labels, *v) : *v);
      }
    }
  }
}

}  // namespace trainmon::serve::metrics
