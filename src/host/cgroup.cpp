// SPDX-License-Identifier: Apache-2.0
// Memory cgroup of a process (v1 and v2): limit (effective over ancestors), usage, peak, OOM kills.
#include "trainmon/host/cgroup.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "file_reader.h"
#include "parse_util.h"
#include "trainmon/host/parse_process.h"

namespace trainmon {

using namespace host_detail;

std::optional<CgroupLimit> parse_cgroup_memory_limit(std::string_view text) {
  text = trim(text);
  if (text == "max") return CgroupLimit{true, 0};
  const auto v = to_number<std::uint64_t>(text);
  if (!v) return std::nullopt;
  if (*v >= kCgroupUnlimitedFloor) return CgroupLimit{true, 0};
  return CgroupLimit{false, *v};
}

std::optional<std::uint64_t> parse_oom_kill_count(std::string_view text) {
  std::string_view line;
  while (next_line(text, line)) {
    std::string_view rest = line;
    std::string_view key;
    if (next_token(rest, key) && key == "oom_kill") return next_number<std::uint64_t>(rest);
  }
  return std::nullopt;
}

namespace {

bool is_dir(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

Error os_error(int err, std::string message) {
  return Error{ErrorDomain::os, err, err == ENOENT ? "ENOENT" : (err == EACCES ? "EACCES" : "errno"),
               std::move(message)};
}

/// The directory for `path` under `mount`: the path itself, else its shorter suffixes (a cgroup
/// mount that is rooted at the container's own cgroup), else the mount root.
std::optional<std::string> locate(const std::string& mount, std::string_view path) {
  if (!is_dir(mount)) return std::nullopt;
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  std::string_view suffix = path;
  while (!suffix.empty()) {
    const std::string candidate = mount + std::string(suffix);
    if (is_dir(candidate)) return candidate;
    const auto next = suffix.find('/', 1);
    if (next == std::string_view::npos) break;
    suffix = suffix.substr(next);
  }
  return mount;
}

Reading<std::uint64_t> read_u64(FileReader& r, const std::string& path) {
  if (const int err = r.read(path, 4096); err != 0)
    return Reading<std::uint64_t>::fail(status_from_errno(err), err);
  if (const auto v = to_number<std::uint64_t>(r.text())) return Reading<std::uint64_t>::of(*v);
  return Reading<std::uint64_t>::fail(ReadStatus::invalid_value);
}

}  // namespace

Expected<CgroupMemory> read_cgroup_memory(std::uint32_t pid, const std::string& proc_root,
                                          const std::string& sys_root) {
  FileReader r;
  const std::string cg_path = proc_root + "/" + std::to_string(pid) + "/cgroup";
  if (const int err = r.read(cg_path, 65536); err != 0) {
    return std::unexpected(os_error(err, "cannot read " + cg_path + ": " + std::strerror(err)));
  }
  const auto line = memory_cgroup_line(parse_cgroup(r.text()));
  if (!line) {
    return std::unexpected(
        Error{ErrorDomain::os, 0, "", cg_path + " names no memory cgroup (v1 memory or v2 0::)"});
  }
  CgroupMemory m;
  m.version = line->hierarchy_id == 0 && line->controllers.empty() ? 2 : 1;
  m.path = line->path;
  std::string mount;
  std::optional<std::string> dir;
  if (m.version == 2) {
    for (const char* sub : {"/fs/cgroup", "/fs/cgroup/unified"}) {
      mount = sys_root + sub;
      // A v2 mount has cgroup.controllers at its root.
      struct stat st {};
      if (::stat((mount + "/cgroup.controllers").c_str(), &st) != 0) continue;
      dir = locate(mount, m.path);
      if (dir) break;
    }
  } else {
    mount = sys_root + "/fs/cgroup/memory";
    dir = locate(mount, m.path);
  }
  if (!dir) {
    return std::unexpected(Error{ErrorDomain::os, ENOENT, "ENOENT",
                                 "no cgroup v" + std::to_string(m.version) + " memory directory under " +
                                     sys_root + "/fs/cgroup for " + m.path});
  }
  m.directory = *dir;
  const char* limit_file = m.version == 2 ? "/memory.max" : "/memory.limit_in_bytes";
  // Effective limit: walk from the cgroup up to the mount root, keep the smallest finite limit.
  std::optional<std::uint64_t> effective;
  bool any_limit_file = false;
  int limit_err = 0;
  std::string level = *dir;
  while (true) {
    const int err = r.read(level + limit_file, 4096);
    if (err == 0) {
      if (const auto lim = parse_cgroup_memory_limit(r.text())) {
        any_limit_file = true;
        if (!lim->unlimited && (!effective || lim->bytes < *effective)) effective = lim->bytes;
      }
    } else if (level == *dir) {
      limit_err = err;
    }
    if (level.size() <= mount.size()) break;
    const auto slash = level.rfind('/');
    if (slash == std::string::npos || slash < mount.size()) break;
    level.resize(slash);
  }
  if (effective) {
    m.limit_bytes = Reading<std::uint64_t>::of(*effective);
  } else if (any_limit_file) {
    m.unlimited = true;
    m.limit_bytes = Reading<std::uint64_t>::fail(ReadStatus::not_available);
  } else {
    m.limit_bytes = Reading<std::uint64_t>::fail(
        limit_err ? status_from_errno(limit_err) : ReadStatus::failed, limit_err);
  }
  if (m.version == 2) {
    m.usage_bytes = read_u64(r, *dir + "/memory.current");
    m.peak_bytes = read_u64(r, *dir + "/memory.peak");
  } else {
    m.usage_bytes = read_u64(r, *dir + "/memory.usage_in_bytes");
    m.peak_bytes = read_u64(r, *dir + "/memory.max_usage_in_bytes");
  }
  const std::string events = *dir + (m.version == 2 ? "/memory.events" : "/memory.oom_control");
  if (const int err = r.read(events, 4096); err != 0) {
    m.oom_kill_count = Reading<std::uint64_t>::fail(status_from_errno(err), err);
  } else if (const auto n = parse_oom_kill_count(r.text())) {
    m.oom_kill_count = Reading<std::uint64_t>::of(*n);
  } else {
    m.oom_kill_count = Reading<std::uint64_t>::fail(ReadStatus::not_supported);
  }
  return m;
}

}  // namespace trainmon
