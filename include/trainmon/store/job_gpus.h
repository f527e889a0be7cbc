// SPDX-License-Identifier: Apache-2.0
// The GPUs a job is meant to use (diagnose::JobFacts::gpus), decided the same way live and offline.
#pragma once

#include <span>
#include <string>
#include <utility>
#include <vector>

#include "trainmon/diagnose/cuda_devices.h"
#include "trainmon/store/run_info.h"

namespace trainmon::store {

/// The NVML indices the CUDA_VISIBLE_DEVICES label names when it can be told
/// (diagnose::nvml_indices_of_cuda_visible_devices over `gpus`): UUIDs always; integers only with a
/// CUDA_DEVICE_ORDER=PCI_BUS_ID label (CUDA's default order is fastest first, which NVML does not
/// know) or when they name every GPU. Else `used`, the GPUs where the job's own processes were seen:
/// never an intent read from an integer alone (D7). Sorted, unique; empty when neither is known.
std::vector<unsigned> job_gpus(std::vector<unsigned> used,
                               const std::vector<std::pair<std::string, std::string>>& labels,
                               std::span<const diagnose::NvmlGpuRef> gpus);
/// The same for a stored run (RunGpu::used_by_job, its UUIDs, and its labels).
std::vector<unsigned> job_gpus(const RunInfo& run);

}  // namespace trainmon::store
