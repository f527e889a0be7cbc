// SPDX-License-Identifier: Apache-2.0
// Who a process works for (core/attribution.h), read from the host alone: pure parsers for
// /proc/PID/environ and for the cgroup paths Slurm, the kubelet and container runtimes create, and a
// cached reader of the kubelet's pod log directories. The parsers take untrusted bytes and never
// throw; an unrecognised input leaves the fields empty. Sources of the layouts:
// - Slurm: sbatch(1) "OUTPUT ENVIRONMENT VARIABLES"; cgroup.conf(5) and the proctrack/task cgroup
//   plugins (v1 "/slurm[_<node>]/uid_<U>/job_<J>/step_<S>[/task_<T>]", v2
//   ".../slurmstepd.scope/job_<J>/step_<S>/user/task_<T>", step names "batch", "extern",
//   "interactive" or a number).
// - Kubernetes: the kubelet's cgroup manager (pkg/kubelet/cm/cgroup_manager_linux.go), cgroupfs
//   driver "/kubepods[/burstable|/besteffort]/pod<uid>/<cid>", systemd driver
//   "/kubepods.slice/kubepods-<qos>.slice/kubepods-<qos>-pod<uid_with_underscores>.slice/
//   <runtime>-<cid>.scope", possibly below a prefix ("/kubelet.slice/...", kind's "/kubelet/...").
// - Pod log directories: the kubelet's "/var/log/pods/<namespace>_<pod>_<uid>/<container>/N.log" and
//   the symlinks "/var/log/containers/<pod>_<namespace>_<container>-<cid>.log" (pkg/kubelet/kuberuntime
//   legacy and current log paths).
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "trainmon/core/attribution.h"
#include "trainmon/host/parse_process.h"

namespace trainmon {

/// At most this many bytes of /proc/PID/environ are read (a process may hold megabytes of
/// environment; the variables we use are set by the launcher and sit near the start). An entry cut
/// by the cap is dropped.
inline constexpr std::size_t kEnvironMaxBytes = 256 * 1024;
/// A value longer than this (bytes) is ignored: no Slurm or launcher variable we read is that long.
inline constexpr std::size_t kAttributionValueMaxBytes = 1024;

/// Fills the environment's fields of `out` from the raw bytes of /proc/PID/environ (NUL-separated
/// KEY=VALUE entries): SLURM_JOB_ID (else SLURM_JOBID), SLURM_STEP_ID (else SLURM_STEPID),
/// SLURM_JOB_USER, SLURM_JOB_PARTITION, SLURM_JOB_ACCOUNT, SLURM_ARRAY_JOB_ID, SLURM_ARRAY_TASK_ID;
/// rank from RANK, else OMPI_COMM_WORLD_RANK, else PMI_RANK, else SLURM_PROCID; local rank from
/// LOCAL_RANK, else OMPI_COMM_WORLD_LOCAL_RANK, else SLURM_LOCALID. Other keys are ignored, as are
/// entries without '=', empty or over-long values, and ranks that are not a non-negative decimal.
/// Values are made valid UTF-8 (U+FFFD) and otherwise kept as written (quotes, newlines: outputs
/// escape them). `truncated`: the bytes were cut by a read cap, so an unterminated last entry is
/// dropped. Sets kAttributionEnviron in out.sources when it set a field; returns whether it did.
bool parse_environ_attribution(std::string_view raw, ProcessAttribution& out, bool truncated = false);

/// A Slurm job found in a cgroup path.
struct SlurmCgroupPath {
  std::string job_id;  ///< the N of "job_N"
  std::string step;    ///< the S of "step_S": a number, "batch", "extern" or "interactive"; may be empty
  std::string uid;     ///< the U of v1's "uid_U"; empty on v2
  std::string task;    ///< the T of "task_T"; empty when the path stops at the step
};
/// The Slurm job of a cgroup path: a "job_<digits>" component below a component naming Slurm
/// ("slurm", "slurm_<node>", "slurmstepd.scope", "<node>_slurmstepd.scope"), with the step and task
/// that follow it. nullopt for any other path.
std::optional<SlurmCgroupPath> slurm_from_cgroup_path(std::string_view path);

/// A container found in a cgroup path.
struct ContainerCgroupPath {
  std::string runtime;       ///< "docker", "containerd", "crio", "podman", or empty (unknown)
  std::string container_id;  ///< 64 hex digits, lower case as written
};
/// The container of a cgroup path: the deepest component holding a 64-hex-digit id, with the runtime
/// named by its prefix ("docker-", "cri-containerd-"/"containerd-", "crio-", "libpod-") or by its
/// parent ("/docker/<id>", "/libpod_parent/..."). nullopt when no component holds an id.
std::optional<ContainerCgroupPath> container_from_cgroup_path(std::string_view path);

/// A Kubernetes pod found in a cgroup path.
struct KubepodsCgroupPath {
  std::string pod_uid;            ///< canonical (underscores of the systemd driver turned into dashes)
  std::string qos;                ///< "burstable", "besteffort", or "guaranteed" (no QoS level in the path)
  ContainerCgroupPath container;  ///< empty for the pod's own cgroup
};
/// The pod of a kubelet cgroup path (either driver, v1 or v2, under any prefix): the component
/// "pod<uid>" (cgroupfs) or "kubepods[-<qos>]-pod<uid>.slice" (systemd) below a "kubepods" component.
/// nullopt for any other path.
std::optional<KubepodsCgroupPath> kubepods_from_cgroup_path(std::string_view path);

/// Fills the cgroup's fields of `out` from /proc/PID/cgroup's lines (the v2 line and every v1
/// hierarchy are looked at; the first match wins): the Slurm job and step unless the environment
/// already gave them (the environment wins; the two agree in practice), the pod uid, the container
/// id and runtime. Sets kAttributionCgroup in out.sources when it set a field; returns whether it did.
bool apply_cgroup_attribution(const std::vector<CgroupLine>& lines, ProcessAttribution& out);

/// One pod of the kubelet's pod log directory.
struct KubeletPod {
  std::string pod_namespace, pod_name, pod_uid;
  std::vector<std::string> containers;  ///< the container subdirectories, sorted
};
/// Splits a pod log directory name "<namespace>_<pod>_<uid>" (neither the namespace nor the pod name
/// may hold '_', DNS-1123; the uid is the last field). nullopt when it has not that shape.
std::optional<KubeletPod> parse_pod_log_dir_name(std::string_view name);
/// A container log symlink's name in /var/log/containers: "<pod>_<namespace>_<container>-<cid>.log".
struct ContainerLogName {
  std::string pod_name, pod_namespace, container_name, container_id;
};
/// nullopt when the name has not that shape (cid: 64 hex digits).
std::optional<ContainerLogName> parse_container_log_name(std::string_view name);

/// Default of --pod-logs-root (and of $TRAINMON_POD_LOGS_ROOT).
inline constexpr std::string_view kDefaultPodLogsRoot = "/var/log/pods";

/// Namespace, pod and container names from the kubelet's log directories under `root` (default
/// /var/log/pods) and the container log symlinks in its sibling "containers" directory
/// (/var/log/containers). Listed only when asked about a pod, at most every `refresh` (a new pod's
/// directory shows up within one refresh), at most kMaxEntries entries per directory. A missing or
/// unreadable root gives no names (not an error). Not thread-safe: one per collector.
class KubeletPods {
 public:
  static constexpr std::size_t kMaxEntries = 8192;
  explicit KubeletPods(std::string root = std::string(kDefaultPodLogsRoot),
                       std::chrono::milliseconds refresh = std::chrono::seconds(5));
  /// Sets pod_namespace, pod_name and container_name (and kAttributionKubelet) of `a` when a.pod_uid
  /// names a listed pod; container_name only when the container id matches a container log symlink
  /// or the pod has exactly one container directory. Returns whether it set a field.
  bool apply(ProcessAttribution& a);
  /// Lists the directories now (tests; apply() does it when due).
  void refresh();
  [[nodiscard]] const std::string& root() const noexcept { return root_; }

 private:
  std::string root_;
  std::chrono::milliseconds every_;
  std::optional<std::chrono::steady_clock::time_point> listed_at_;
  std::unordered_map<std::string, KubeletPod> pods_;              ///< by uid
  std::unordered_map<std::string, ContainerLogName> containers_;  ///< by container id
};

}  // namespace trainmon
