// SPDX-License-Identifier: Apache-2.0
// Who a process works for: its Slurm job, Kubernetes pod, container and training rank, read from the
// host alone (the process's environment and its cgroup path, and the kubelet's pod log directories),
// with no scheduler plug-in, API server or kubelet socket. Filled by the host process reader
// (src/host/attribution*.cpp); shown by status, top, pmon, serve's /metrics and stored per process
// series; the usage ledger groups by it. An empty string means "not known" (not read, or the process
// has no such attribution); no field is ever a placeholder such as "N/A".
#pragma once

#include <optional>
#include <string>

namespace trainmon {

/// Where an attribution's fields came from (bit set).
enum AttributionSource : unsigned {
  kAttributionEnviron = 1u << 0,  ///< /proc/PID/environ (same user or root only; capped read)
  kAttributionCgroup = 1u << 1,   ///< /proc/PID/cgroup paths (slurm job_N/step_M, kubepods pod<uid>)
  kAttributionKubelet = 1u << 2,  ///< the kubelet's /var/log/pods/<ns>_<pod>_<uid>/<container>/
};

struct ProcessAttribution {
  // --- Slurm (https://slurm.schedmd.com/sbatch.html#SECTION_OUTPUT-ENVIRONMENT-VARIABLES and the
  // cgroup layouts of slurmd's proctrack/task cgroup plugins: v1 "/slurm/uid_U/job_J/step_S/...",
  // v2 ".../slurmstepd.scope/job_J/step_S/user/task_T").
  std::string slurm_job_id;     ///< SLURM_JOB_ID (or SLURM_JOBID), else job_<N> of the cgroup path
  std::string slurm_step;       ///< SLURM_STEP_ID, else step_<S> of the path ("0", "batch", "extern")
  std::string slurm_user;       ///< SLURM_JOB_USER
  std::string slurm_partition;  ///< SLURM_JOB_PARTITION
  std::string slurm_account;    ///< SLURM_JOB_ACCOUNT
  std::string slurm_array_job_id, slurm_array_task_id;  ///< SLURM_ARRAY_JOB_ID / _TASK_ID
  // --- Kubernetes (kubelet cgroup layouts, cgroupfs and systemd drivers, v1 and v2:
  // "/kubepods/burstable/pod<uid>/<cid>", "/kubepods.slice/kubepods-besteffort.slice/
  // kubepods-besteffort-pod<uid_with_underscores>.slice/cri-containerd-<cid>.scope").
  std::string pod_uid;         ///< canonical form with dashes
  std::string pod_namespace;   ///< from the kubelet's pod log directory name, else empty
  std::string pod_name;        ///< idem
  std::string container_name;  ///< the kubelet's container log directory matching the container id
  // --- container runtime (Docker, containerd, CRI-O, Podman).
  std::string container_runtime;  ///< "docker", "containerd", "crio", "podman", or empty
  std::string container_id;       ///< 64 hex digits, or empty
  // --- torch.distributed launcher environment (torchrun / torch.multiprocessing / mpirun).
  std::optional<int> rank;        ///< RANK (or OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID)
  std::optional<int> local_rank;  ///< LOCAL_RANK (or OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID)
  unsigned sources = 0;           ///< AttributionSource bits that gave at least one field

  bool empty() const noexcept {
    return slurm_job_id.empty() && pod_uid.empty() && container_id.empty() && !rank && !local_rank;
  }
  /// The job a ledger or a /metrics grouping uses: "slurm:<job>[.<step>]", else
  /// "pod:<namespace>/<name>" (or "pod:<uid>" without names), else "container:<12-hex>", else "".
  std::string job_key(bool with_step = false) const;
};

}  // namespace trainmon
