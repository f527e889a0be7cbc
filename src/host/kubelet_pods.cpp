// SPDX-License-Identifier: Apache-2.0
// The kubelet's pod log directories: pod uid -> namespace, pod and container names.
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

#include "trainmon/host/attribution.h"

namespace trainmon {

namespace {

/// DNS-1123 names (namespaces, pods, containers) and uids hold neither '_' nor '/' nor control bytes.
bool is_name(std::string_view s) {
  return !s.empty() && s.size() <= 253 && std::all_of(s.begin(), s.end(), [](char c) {
    return c != '_' && c != '/' && static_cast<unsigned char>(c) > 0x20 && c != 0x7f;
  });
}

bool is_hex64(std::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
         });
}

/// Calls `fn(name, d_type)` for at most `max` entries of the directory `fd` (closed on return),
/// "." and ".." left out.
template <class Fn>
void list_dir(int fd, std::size_t max, Fn&& fn) {
  if (fd < 0) return;
  DIR* d = ::fdopendir(fd);
  if (!d) {
    ::close(fd);
    return;
  }
  std::size_t n = 0;
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name = e->d_name;
    if (name == "." || name == "..") continue;
    if (++n > max) break;
    fn(name, e->d_type);
  }
  ::closedir(d);
}

}  // namespace

std::optional<KubeletPod> parse_pod_log_dir_name(std::string_view name) {
  const auto a = name.find('_');
  if (a == std::string_view::npos) return std::nullopt;
  const auto b = name.find('_', a + 1);
  if (b == std::string_view::npos || name.find('_', b + 1) != std::string_view::npos) return std::nullopt;
  KubeletPod p;
  const auto ns = name.substr(0, a), pod = name.substr(a + 1, b - a - 1), uid = name.substr(b + 1);
  if (!is_name(ns) || !is_name(pod) || !is_name(uid)) return std::nullopt;
  p.pod_namespace = std::string(ns);
  p.pod_name = std::string(pod);
  p.pod_uid = std::string(uid);
  return p;
}

std::optional<ContainerLogName> parse_container_log_name(std::string_view name) {
  if (!name.ends_with(".log")) return std::nullopt;
  name.remove_suffix(4);
  if (name.size() < 66 || name[name.size() - 65] != '-') return std::nullopt;
  const auto cid = name.substr(name.size() - 64);
  if (!is_hex64(cid)) return std::nullopt;
  name.remove_suffix(65);
  const auto a = name.find('_');
  if (a == std::string_view::npos) return std::nullopt;
  const auto b = name.find('_', a + 1);
  if (b == std::string_view::npos || name.find('_', b + 1) != std::string_view::npos) return std::nullopt;
  ContainerLogName c;
  const auto pod = name.substr(0, a), ns = name.substr(a + 1, b - a - 1), ctr = name.substr(b + 1);
  if (!is_name(pod) || !is_name(ns) || !is_name(ctr)) return std::nullopt;
  c.pod_name = std::string(pod);
  c.pod_namespace = std::string(ns);
  c.container_name = std::string(ctr);
  c.container_id = std::string(cid);
  return c;
}

KubeletPods::KubeletPods(std::string root, std::chrono::milliseconds refresh)
    : root_(std::move(root)), every_(refresh) {}

void KubeletPods::refresh() {
  listed_at_ = std::chrono::steady_clock::now();
  pods_.clear();
  containers_.clear();
  if (root_.empty()) return;
  const int root_fd = ::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (root_fd < 0) return;
  std::vector<KubeletPod> found;
  list_dir(::dup(root_fd), kMaxEntries, [&](std::string_view name, unsigned char type) {
    if (type != DT_DIR && type != DT_UNKNOWN) return;
    if (auto p = parse_pod_log_dir_name(name)) found.push_back(std::move(*p));
  });
  for (auto& p : found) {
    const std::string dir = p.pod_namespace + "_" + p.pod_name + "_" + p.pod_uid;
    list_dir(::openat(root_fd, dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC), 64,
             [&](std::string_view name, unsigned char type) {
               if ((type == DT_DIR || type == DT_UNKNOWN) && is_name(name)) p.containers.emplace_back(name);
             });
    std::sort(p.containers.begin(), p.containers.end());
    std::string uid = p.pod_uid;
    pods_.emplace(std::move(uid), std::move(p));
  }
  ::close(root_fd);
  // The container log symlinks live next to the pod directories: <root>/../containers.
  std::string containers_dir = root_;
  while (containers_dir.size() > 1 && containers_dir.back() == '/') containers_dir.pop_back();
  const auto slash = containers_dir.rfind('/');
  containers_dir =
      (slash == std::string::npos ? std::string(".") : containers_dir.substr(0, slash + 1)) + "containers";
  list_dir(::open(containers_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC), kMaxEntries,
           [&](std::string_view name, unsigned char) {
             if (auto c = parse_container_log_name(name)) {
               std::string id = c->container_id;
               containers_.emplace(std::move(id), std::move(*c));
             }
           });
}

bool KubeletPods::apply(ProcessAttribution& a) {
  if (a.pod_uid.empty() || root_.empty()) return false;
  const auto now = std::chrono::steady_clock::now();
  auto it = pods_.find(a.pod_uid);
  // A pod not listed yet (started after the last listing) waits for the next refresh.
  if (!listed_at_ || (it == pods_.end() && now - *listed_at_ >= every_)) {
    refresh();
    it = pods_.find(a.pod_uid);
  }
  if (it == pods_.end()) return false;
  const KubeletPod& p = it->second;
  a.pod_namespace = p.pod_namespace;
  a.pod_name = p.pod_name;
  if (!a.container_id.empty()) {
    if (const auto c = containers_.find(a.container_id); c != containers_.end() &&
                                                         c->second.pod_name == p.pod_name &&
                                                         c->second.pod_namespace == p.pod_namespace)
      a.container_name = c->second.container_name;
  }
  if (a.container_name.empty() && p.containers.size() == 1) a.container_name = p.containers.front();
  a.sources |= kAttributionKubelet;
  return true;
}

}  // namespace trainmon
