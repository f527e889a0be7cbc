// SPDX-License-Identifier: Apache-2.0
// Run labels: KEY=VALUE from the command line, plus the scheduler and launcher variables found in
// the environment (SLURM_JOB_ID, TORCHELASTIC_RUN_ID, CUDA_VISIBLE_DEVICES ...).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trainmon::recorder {

/// Environment variables copied into a run's labels when set.
inline constexpr std::string_view kLabelEnvVars[] = {
    "SLURM_JOB_ID",
    "SLURM_JOB_NAME",
    "SLURM_ARRAY_JOB_ID",
    "SLURM_ARRAY_TASK_ID",
    "SLURM_NODEID",
    "SLURM_PROCID",
    "SLURM_JOB_PARTITION",
    "TORCHELASTIC_RUN_ID",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",  // PCI_BUS_ID makes CUDA_VISIBLE_DEVICES integers NVML indices (job_gpus.h)
    "NVIDIA_VISIBLE_DEVICES",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "PBS_JOBID",
    "LSB_JOBID",
    "KUBERNETES_POD_NAME",
    "JOB_ID",
};

/// "KEY=VALUE" split at the first '='; nullopt when there is no '=' or the key is empty.
std::optional<std::pair<std::string, std::string>> parse_label(std::string_view text);

/// Labels: those of kLabelEnvVars present in `env` (KEY=VALUE strings, as `environ`), then `given`
/// (overriding). Sorted by key, one per key.
std::vector<std::pair<std::string, std::string>> collect_labels(
    const std::vector<std::pair<std::string, std::string>>& given, const std::vector<std::string>& env);

}  // namespace trainmon::recorder
