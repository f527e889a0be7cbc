// SPDX-License-Identifier: Apache-2.0
// Slurm jobs, Kubernetes pods and containers in the cgroup paths of /proc/PID/cgroup.
#include <algorithm>

#include "trainmon/host/attribution.h"

namespace trainmon {

namespace {

std::vector<std::string_view> components(std::string_view path) {
  std::vector<std::string_view> out;
  while (!path.empty()) {
    const auto slash = path.find('/');
    const std::string_view c = path.substr(0, slash);
    if (!c.empty()) out.push_back(c);
    path = slash == std::string_view::npos ? std::string_view{} : path.substr(slash + 1);
  }
  return out;
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool is_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/// A pod uid as the cgroup path writes it: hex digits with dashes (cgroupfs) or underscores
/// (systemd); a static pod's uid is 32 hex digits without either.
bool is_pod_uid(std::string_view s) {
  return s.size() >= 8 && s.size() <= 64 &&
         std::all_of(s.begin(), s.end(), [](char c) { return is_hex(c) || c == '-' || c == '_'; });
}

std::string canonical_uid(std::string_view s) {
  std::string out(s);
  std::replace(out.begin(), out.end(), '_', '-');
  return out;
}

/// The uid of a pod component: "pod<uid>" (cgroupfs) or "[<root>-]kubepods[-<qos>]-pod<uid>.slice"
/// (systemd; a kubelet whose cgroup root is /kubelet writes "kubelet-kubepods-...").
std::optional<std::string_view> pod_component_uid(std::string_view c) {
  if (c.starts_with("pod") && is_pod_uid(c.substr(3))) return c.substr(3);
  if (const auto kp = c.find("kubepods"); kp != std::string_view::npos && c.ends_with(".slice")) {
    const auto at = c.find("-pod", kp);
    if (at != std::string_view::npos) {
      const auto uid = c.substr(at + 4, c.size() - at - 4 - 6);
      if (is_pod_uid(uid)) return uid;
    }
  }
  return std::nullopt;
}

/// The last run of exactly 64 hex digits of `c`, bounded by non-hex characters.
std::optional<std::string_view> hex64(std::string_view c) {
  std::optional<std::string_view> found;
  std::size_t i = 0;
  while (i < c.size()) {
    if (!is_hex(c[i])) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < c.size() && is_hex(c[j])) ++j;
    if (j - i == 64) found = c.substr(i, 64);
    i = j;
  }
  return found;
}

std::string_view runtime_of(std::string_view c, std::string_view parent) {
  if (c.starts_with("docker-")) return "docker";
  if (c.starts_with("cri-containerd-") || c.starts_with("containerd-")) return "containerd";
  if (c.starts_with("crio-")) return "crio";
  if (c.starts_with("libpod-")) return "podman";
  if (parent == "docker" || parent == "docker.slice") return "docker";
  if (parent == "libpod_parent" || parent.starts_with("libpod-")) return "podman";
  return {};
}

std::optional<ContainerCgroupPath> container_in(const std::vector<std::string_view>& comps,
                                                std::size_t from) {
  for (std::size_t i = comps.size(); i-- > from;) {
    const auto id = hex64(comps[i]);
    if (!id) continue;
    ContainerCgroupPath out;
    out.container_id = std::string(*id);
    out.runtime = std::string(runtime_of(comps[i], i > 0 ? comps[i - 1] : std::string_view{}));
    return out;
  }
  return std::nullopt;
}

bool is_step_name(std::string_view s) {
  return all_digits(s) || s == "batch" || s == "extern" || s == "interactive";
}

}  // namespace

std::optional<SlurmCgroupPath> slurm_from_cgroup_path(std::string_view path) {
  const auto comps = components(path);
  bool under_slurm = false;
  for (std::size_t i = 0; i < comps.size(); ++i) {
    const std::string_view c = comps[i];
    if (!under_slurm) {
      under_slurm = c.find("slurm") != std::string_view::npos;
      continue;
    }
    if (!c.starts_with("job_") || !all_digits(c.substr(4))) continue;
    SlurmCgroupPath out;
    out.job_id = std::string(c.substr(4));
    if (i > 0 && comps[i - 1].starts_with("uid_") && all_digits(comps[i - 1].substr(4)))
      out.uid = std::string(comps[i - 1].substr(4));
    if (i + 1 < comps.size() && comps[i + 1].starts_with("step_") && is_step_name(comps[i + 1].substr(5))) {
      out.step = std::string(comps[i + 1].substr(5));
      // v1: .../step_S/task_T; v2: .../step_S/user/task_T.
      for (std::size_t k = i + 2; k < comps.size() && k <= i + 3; ++k) {
        if (comps[k].starts_with("task_") && all_digits(comps[k].substr(5))) {
          out.task = std::string(comps[k].substr(5));
          break;
        }
      }
    }
    return out;
  }
  return std::nullopt;
}

std::optional<ContainerCgroupPath> container_from_cgroup_path(std::string_view path) {
  return container_in(components(path), 0);
}

std::optional<KubepodsCgroupPath> kubepods_from_cgroup_path(std::string_view path) {
  const auto comps = components(path);
  bool under_kubepods = false;
  std::string qos;
  for (std::size_t i = 0; i < comps.size(); ++i) {
    const std::string_view c = comps[i];
    if (const auto uid = pod_component_uid(c); uid && (under_kubepods || !c.starts_with("pod"))) {
      KubepodsCgroupPath out;
      out.pod_uid = canonical_uid(*uid);
      if (qos.empty()) {
        if (c.find("kubepods-burstable-") != std::string_view::npos) qos = "burstable";
        if (c.find("kubepods-besteffort-") != std::string_view::npos) qos = "besteffort";
      }
      out.qos = qos.empty() ? "guaranteed" : qos;
      if (auto ct = container_in(comps, i + 1)) out.container = std::move(*ct);
      return out;
    }
    if (c == "kubepods" || c.ends_with("kubepods.slice")) {
      under_kubepods = true;
    } else if (under_kubepods) {
      if (c == "burstable" || c.ends_with("kubepods-burstable.slice")) qos = "burstable";
      if (c == "besteffort" || c.ends_with("kubepods-besteffort.slice")) qos = "besteffort";
    }
  }
  return std::nullopt;
}

bool apply_cgroup_attribution(const std::vector<CgroupLine>& lines, ProcessAttribution& out) {
  // The unified (v2) line first, then the memory hierarchy, then the others: on a hybrid host the v2
  // line may only say "/" while the v1 controllers hold the job's path.
  std::vector<const CgroupLine*> order;
  order.reserve(lines.size());
  for (const auto& l : lines)
    if (l.hierarchy_id == 0 && l.controllers.empty()) order.push_back(&l);
  if (const auto mem = memory_cgroup_line(lines))
    for (const auto& l : lines)
      if (l.hierarchy_id == mem->hierarchy_id && l.controllers == mem->controllers && l.hierarchy_id != 0)
        order.push_back(&l);
  for (const auto& l : lines)
    if (std::find(order.begin(), order.end(), &l) == order.end()) order.push_back(&l);

  bool any = false;
  bool slurm_done = false, pod_done = false, container_done = false;
  for (const CgroupLine* l : order) {
    if (!slurm_done) {
      if (auto s = slurm_from_cgroup_path(l->path)) {
        slurm_done = true;
        if (out.slurm_job_id.empty()) {
          out.slurm_job_id = std::move(s->job_id);
          if (out.slurm_step.empty()) out.slurm_step = std::move(s->step);
          any = true;
        } else if (out.slurm_job_id == s->job_id && out.slurm_step.empty() && !s->step.empty()) {
          out.slurm_step = std::move(s->step);
          any = true;
        }
      }
    }
    if (!pod_done) {
      if (auto k = kubepods_from_cgroup_path(l->path)) {
        pod_done = true;
        out.pod_uid = std::move(k->pod_uid);
        any = true;
        if (!k->container.container_id.empty()) {
          container_done = true;
          out.container_id = std::move(k->container.container_id);
          out.container_runtime = std::move(k->container.runtime);
        }
      }
    }
    if (!container_done) {
      if (auto c = container_from_cgroup_path(l->path)) {
        container_done = true;
        out.container_id = std::move(c->container_id);
        out.container_runtime = std::move(c->runtime);
        any = true;
      }
    }
  }
  if (any) out.sources |= kAttributionCgroup;
  return any;
}

}  // namespace trainmon
