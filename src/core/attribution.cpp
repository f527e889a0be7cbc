// SPDX-License-Identifier: Apache-2.0
#include "trainmon/core/attribution.h"

namespace trainmon {

std::string ProcessAttribution::job_key(bool with_step) const {
  if (!slurm_job_id.empty()) {
    std::string key = "slurm:" + slurm_job_id;
    if (with_step && !slurm_step.empty()) key += "." + slurm_step;
    return key;
  }
  if (!pod_uid.empty()) {
    if (!pod_namespace.empty() && !pod_name.empty()) return "pod:" + pod_namespace + "/" + pod_name;
    return "pod:" + pod_uid;
  }
  if (!container_id.empty()) return "container:" + container_id.substr(0, 12);
  return {};
}

}  // namespace trainmon
