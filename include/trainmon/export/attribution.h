// SPDX-License-Identifier: Apache-2.0
// A process's attribution (core/attribution.h) in the views: the JSON object status --json and
// pmon --json print under "attribution" (docs/status-json.md), and the job the text views show.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

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

/// The job a text view (status, top) shows for a process: a.job_key(with_step), except "" for a
/// process known only by its container when that container is the monitor's own
/// (HostSample::own_container_id): in a container every process would carry it. Not escaped.
std::string shown_job(const ProcessAttribution& a, std::string_view own_container_id, bool with_step = false);

}  // namespace trainmon::exp
