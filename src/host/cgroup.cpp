// SPDX-License-Identifier: Apache-2.0
// Memory cgroup of a process (v1 and v2): limit (effective over ancestors), usage, peak, OOM kills.
#include "trainmon/host/cgroup.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <initializer_list>
#include <vector>

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

namespace {

/// Where a process's cgroup for one controller is: the hierarchy and the directory.
struct Located {
  int version = 0;
  std::string path, mount, dir;
};

Expected<Located> locate_cgroup(FileReader& r, std::uint32_t pid, const std::string& proc_root,
                                const std::string& sys_root, std::string_view controller,
                                std::initializer_list<const char*> v1_mounts) {
  const std::string cg_path = proc_root + "/" + std::to_string(pid) + "/cgroup";
  if (const int err = r.read(cg_path, 65536); err != 0) {
    return std::unexpected(os_error(err, "cannot read " + cg_path + ": " + std::strerror(err)));
  }
  const auto line = controller_cgroup_line(parse_cgroup(r.text()), controller);
  if (!line) {
    return std::unexpected(Error{ErrorDomain::os, 0, "",
                                 cg_path + " names no " + std::string(controller) + " cgroup (v1 " +
                                     std::string(controller) + " or v2 0::)"});
  }
  Located out;
  out.version = line->hierarchy_id == 0 && line->controllers.empty() ? 2 : 1;
  out.path = line->path;
  std::optional<std::string> dir;
  if (out.version == 2) {
    for (const char* sub : {"/fs/cgroup", "/fs/cgroup/unified"}) {
      out.mount = sys_root + sub;
      // A v2 mount has cgroup.controllers at its root.
      struct stat st {};
      if (::stat((out.mount + "/cgroup.controllers").c_str(), &st) != 0) continue;
      dir = locate(out.mount, out.path);
      if (dir) break;
    }
  } else {
    for (const char* sub : v1_mounts) {
      out.mount = sys_root + "/fs/cgroup/" + sub;
      dir = locate(out.mount, out.path);
      if (dir) break;
    }
  }
  if (!dir) {
    return std::unexpected(Error{ErrorDomain::os, ENOENT, "ENOENT",
                                 "no cgroup v" + std::to_string(out.version) + " " + std::string(controller) +
                                     " directory under " + sys_root + "/fs/cgroup for " + out.path});
  }
  out.dir = *dir;
  return out;
}

/// The levels from `dir` up to `mount`, the cgroup's own first.
std::vector<std::string> levels(const std::string& dir, const std::string& mount) {
  std::vector<std::string> out;
  std::string level = dir;
  while (true) {
    out.push_back(level);
    if (level.size() <= mount.size()) break;
    const auto slash = level.rfind('/');
    if (slash == std::string::npos || slash < mount.size()) break;
    level.resize(slash);
  }
  return out;
}

}  // namespace

const char* cgroup_memory_limit_file(int version) noexcept {
  return version == 2 ? "memory.max" : "memory.limit_in_bytes";
}

const char* cgroup_cpu_limit_file(int version) noexcept {
  return version == 2 ? "cpu.max" : "cpu.cfs_quota_us";
}

std::optional<CgroupCpuMax> parse_cgroup_cpu_max(std::string_view text) {
  std::string_view rest = trim(text);
  std::string_view quota;
  if (!next_token(rest, quota)) return std::nullopt;
  const auto period = next_number<std::uint64_t>(rest);
  if (!period || *period == 0 || !trim(rest).empty()) return std::nullopt;
  if (quota == "max") return CgroupCpuMax{true, 0, *period};
  const auto q = to_number<std::uint64_t>(quota);
  if (!q) return std::nullopt;
  return CgroupCpuMax{false, *q, *period};
}

std::optional<std::uint64_t> parse_keyed_count(std::string_view text, std::string_view key) {
  std::string_view line;
  while (next_line(text, line)) {
    std::string_view rest = line;
    std::string_view k;
    if (next_token(rest, k) && k == key) return next_number<std::uint64_t>(rest);
  }
  return std::nullopt;
}

Expected<CgroupMemory> read_cgroup_memory(std::uint32_t pid, const std::string& proc_root,
                                          const std::string& sys_root) {
  FileReader r;
  auto where = locate_cgroup(r, pid, proc_root, sys_root, "memory", {"memory"});
  if (!where) return std::unexpected(where.error());
  CgroupMemory m;
  m.version = where->version;
  m.path = where->path;
  m.mount = where->mount;
  m.directory = where->dir;
  const std::string limit_file = std::string("/") + cgroup_memory_limit_file(m.version);
  // Effective limit: walk from the cgroup up to the mount root, keep the smallest finite limit.
  std::optional<std::uint64_t> effective;
  bool any_limit_file = false;
  int limit_err = 0;
  for (const auto& level : levels(m.directory, m.mount)) {
    const int err = r.read(level + limit_file, 4096);
    if (err == 0) {
      if (const auto lim = parse_cgroup_memory_limit(r.text())) {
        any_limit_file = true;
        if (!lim->unlimited && (!effective || lim->bytes < *effective)) {
          effective = lim->bytes;
          m.limit_directory = level;
        }
      }
    } else if (level == m.directory) {
      limit_err = err;
    }
  }
  if (effective) {
    m.limit_bytes = Reading<std::uint64_t>::of(*effective);
    if (m.version == 2) {
      if (const int err = r.read(m.limit_directory + "/memory.events", 4096); err != 0) {
        m.limit_hit_count = Reading<std::uint64_t>::fail(status_from_errno(err), err);
      } else if (const auto n = parse_keyed_count(r.text(), "oom")) {
        m.limit_hit_count = Reading<std::uint64_t>::of(*n);
      } else {
        m.limit_hit_count = Reading<std::uint64_t>::fail(ReadStatus::not_supported);
      }
      m.limit_peak_bytes = read_u64(r, m.limit_directory + "/memory.peak");
    } else {
      m.limit_hit_count = read_u64(r, m.limit_directory + "/memory.failcnt");
      m.limit_peak_bytes = read_u64(r, m.limit_directory + "/memory.max_usage_in_bytes");
    }
  } else {
    m.limit_bytes = Reading<std::uint64_t>::fail(
        any_limit_file ? ReadStatus::not_available
                       : (limit_err ? status_from_errno(limit_err) : ReadStatus::failed),
        any_limit_file ? 0 : limit_err);
    m.unlimited = any_limit_file;
    m.limit_hit_count = m.limit_peak_bytes = Reading<std::uint64_t>::fail(ReadStatus::not_available);
  }
  if (m.version == 2) {
    m.usage_bytes = read_u64(r, m.directory + "/memory.current");
    m.peak_bytes = read_u64(r, m.directory + "/memory.peak");
  } else {
    m.usage_bytes = read_u64(r, m.directory + "/memory.usage_in_bytes");
    m.peak_bytes = read_u64(r, m.directory + "/memory.max_usage_in_bytes");
  }
  const std::string events = m.directory + (m.version == 2 ? "/memory.events" : "/memory.oom_control");
  if (const int err = r.read(events, 4096); err != 0) {
    m.oom_kill_count = Reading<std::uint64_t>::fail(status_from_errno(err), err);
  } else if (const auto n = parse_oom_kill_count(r.text())) {
    m.oom_kill_count = Reading<std::uint64_t>::of(*n);
  } else {
    m.oom_kill_count = Reading<std::uint64_t>::fail(ReadStatus::not_supported);
  }
  return m;
}

Expected<CgroupCpu> read_cgroup_cpu(std::uint32_t pid, const std::string& proc_root,
                                    const std::string& sys_root) {
  FileReader r;
  auto where = locate_cgroup(r, pid, proc_root, sys_root, "cpu", {"cpu", "cpu,cpuacct", "cpuacct,cpu"});
  if (!where) return std::unexpected(where.error());
  CgroupCpu c;
  c.version = where->version;
  c.path = where->path;
  c.mount = where->mount;
  c.directory = where->dir;
  std::optional<double> effective;
  for (const auto& level : levels(c.directory, c.mount)) {
    std::optional<CgroupCpuMax> lim;
    if (c.version == 2) {
      // No cpu.max: the cpu controller is not enabled for this level (or it is the root): no limit.
      if (r.read(level + "/cpu.max", 4096) == 0) lim = parse_cgroup_cpu_max(r.text());
    } else if (r.read(level + "/cpu.cfs_quota_us", 4096) == 0) {
      const std::string quota(trim(r.text()));
      if (quota.starts_with('-')) {
        lim = CgroupCpuMax{true, 0, 0};
      } else if (const auto q = to_number<std::uint64_t>(quota);
                 q && r.read(level + "/cpu.cfs_period_us", 4096) == 0) {
        if (const auto p = to_number<std::uint64_t>(trim(r.text())); p && *p > 0)
          lim = CgroupCpuMax{false, *q, *p};
      }
    }
    if (!lim || lim->unlimited) continue;
    const double cpus = static_cast<double>(lim->quota_us) / static_cast<double>(lim->period_us);
    if (!effective || cpus < *effective) {
      effective = cpus;
      c.limit_directory = level;
    }
  }
  if (effective) {
    c.limit_cpus = Reading<double>::of(*effective);
  } else {
    c.unlimited = true;
    c.limit_cpus = Reading<double>::fail(ReadStatus::not_available);
  }
  return c;
}

}  // namespace trainmon
