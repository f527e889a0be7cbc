// SPDX-License-Identifier: Apache-2.0
// A process's attribution (core/attribution.h) as the JSON object status --json and pmon --json
// print under "attribution" (docs/status-json.md).
#pragma once

#include <nlohmann/json.hpp>

#include "trainmon/core/attribution.h"

namespace trainmon::exp {

/// The non-empty fields of `a`, named as ProcessAttribution's members ("slurm_job_id", "slurm_step",
/// "slurm_user", "slurm_partition", "slurm_account", "slurm_array_job_id", "slurm_array_task_id",
/// "pod_uid", "pod_namespace", "pod_name", "container_name", "container_runtime", "container_id",
/// "rank", "local_rank" as numbers), preceded by "job" (job_key(): "slurm:4242", "pod:ns/name",
/// "pod:<uid>", "container:<12 hex>") when there is one and followed by "sources" (["environ",
/// "cgroup", "kubelet"]: where they came from). Strings are as read (valid UTF-8; the JSON writer
/// escapes quotes and control characters). An empty object when `a` is empty.
nlohmann::ordered_json attribution_json(const ProcessAttribution& a);

}  // namespace trainmon::exp
