// SPDX-License-Identifier: Apache-2.0
#include "trainmon/export/attribution_json.h"

namespace trainmon::exp {

nlohmann::ordered_json attribution_json(const ProcessAttribution& a) {
  nlohmann::ordered_json o = nlohmann::ordered_json::object();
  if (a.empty() && a.sources == 0) return o;
  if (std::string job = a.job_key(); !job.empty()) o["job"] = std::move(job);
  auto str = [&](const char* key, const std::string& v) {
    if (!v.empty()) o[key] = v;
  };
  str("slurm_job_id", a.slurm_job_id);
  str("slurm_step", a.slurm_step);
  str("slurm_user", a.slurm_user);
  str("slurm_partition", a.slurm_partition);
  str("slurm_account", a.slurm_account);
  str("slurm_array_job_id", a.slurm_array_job_id);
  str("slurm_array_task_id", a.slurm_array_task_id);
  str("pod_uid", a.pod_uid);
  str("pod_namespace", a.pod_namespace);
  str("pod_name", a.pod_name);
  str("container_name", a.container_name);
  str("container_runtime", a.container_runtime);
  str("container_id", a.container_id);
  if (a.rank) o["rank"] = *a.rank;
  if (a.local_rank) o["local_rank"] = *a.local_rank;
  nlohmann::ordered_json sources = nlohmann::ordered_json::array();
  if (a.sources & kAttributionEnviron) sources.push_back("environ");
  if (a.sources & kAttributionCgroup) sources.push_back("cgroup");
  if (a.sources & kAttributionKubelet) sources.push_back("kubelet");
  if (!sources.empty()) o["sources"] = std::move(sources);
  return o;
}

}  // namespace trainmon::exp
