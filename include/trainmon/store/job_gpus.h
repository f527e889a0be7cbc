// SPDX-License-Identifier: Apache-2.0
// The GPUs a job is meant to use (diagnose::JobFacts::gpus), decided the same way live and offline.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "trainmon/store/run_info.h"

namespace trainmon::store {

/// The integer indices of the CUDA_VISIBLE_DEVICES label when it has them (the job's intent), else
/// `used` (GPUs where the job's tree had processes). UUIDs / MIG names in the label: `used`. Sorted, unique.
std::vector<unsigned> job_gpus(std::vector<unsigned> used,
                               const std::vector<std::pair<std::string, std::string>>& labels);
/// The same for a stored run (RunGpu::used_by_job and its labels).
std::vector<unsigned> job_gpus(const RunInfo& run);

}  // namespace trainmon::store
