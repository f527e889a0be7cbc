// SPDX-License-Identifier: Apache-2.0
#include "trainmon/store/job_gpus.h"

#include <algorithm>

namespace trainmon::store {

std::vector<unsigned> job_gpus(std::vector<unsigned> used,
                               const std::vector<std::pair<std::string, std::string>>& labels,
                               std::span<const diagnose::NvmlGpuRef> gpus) {
  // CUDA_VISIBLE_DEVICES states the intent (D7: the job may run elsewhere): it wins when it names
  // GPUs NVML can be sure of.
  const std::string* visible = nullptr;
  const std::string* order = nullptr;
  for (const auto& [k, v] : labels) {
    if (k == "CUDA_VISIBLE_DEVICES") visible = &v;
    if (k == "CUDA_DEVICE_ORDER") order = &v;
  }
  if (visible) {
    if (auto named = diagnose::nvml_indices_of_cuda_visible_devices(
            *visible, order && diagnose::cuda_pci_bus_id_order(*order), gpus);
        named && !named->empty())
      used = std::move(*named);
  }
  std::sort(used.begin(), used.end());
  used.erase(std::unique(used.begin(), used.end()), used.end());
  return used;
}

std::vector<unsigned> job_gpus(const RunInfo& run) {
  std::vector<unsigned> used;
  std::vector<diagnose::NvmlGpuRef> gpus;
  for (const auto& g : run.gpus) {
    if (g.used_by_job) used.push_back(g.index);
    gpus.push_back(diagnose::NvmlGpuRef{g.index, g.uuid, {}, {}});
  }
  return job_gpus(std::move(used), run.labels, gpus);
}

}  // namespace trainmon::store
