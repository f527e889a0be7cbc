// SPDX-License-Identifier: Apache-2.0
// GPU process ↔ host process join by (pid, start time); see the rules in gpu_process_join.h.
#include "trainmon/sampler/gpu_process_join.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>

namespace trainmon {

namespace {

/// PROC_PID_INIT_INO (include/linux/proc_ns.h): the inode of the initial PID namespace.
constexpr std::string_view kInitPidNamespaceLink = "pid:[4026531836]";

/// An NVML name that NVML can only have read from the local process `p` (its comm, its argv[0] or
/// the basename of argv[0]).
bool name_is_local(std::string_view name, const ProcessSample& p) {
  if (name.empty()) return false;
  if (name == p.comm) return true;
  const std::string_view cmd = p.cmdline;
  const std::string_view argv0 = cmd.substr(0, cmd.find(' '));
  if (name == argv0 || name == cmd) return true;
  if (cmd.starts_with(name) && cmd.size() > name.size() && cmd[name.size()] == ' ') return true;
  const auto slash = argv0.rfind('/');
  return slash != std::string_view::npos && name == argv0.substr(slash + 1);
}

/// Whether `pid` exists in this process's PID namespace although /proc did not show it (hidepid):
/// kill(pid, 0) succeeds or fails with EPERM; ESRCH means there is no such process.
bool exists_but_hidden(std::uint32_t pid) {
  if (pid == 0 || pid > static_cast<std::uint32_t>(INT_MAX)) return false;
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

}  // namespace

GpuJoinStats join_gpu_processes(std::vector<GpuProcessSample>& gpu_processes,
                                std::vector<ProcessSample>& host_processes, GpuJoinMemory& memory,
                                double now_boot_s, const GpuJoinOptions& options) {
  GpuJoinStats stats;
  // Not matched: gone only where the /proc shows every process of the initial namespace.
  const auto unmatched = [&](GpuProcessSample& g, bool pid_missing) {
    const bool gone = options.host_pid_namespace == true &&
                      !(pid_missing && options.probe_missing_pids && exists_but_hidden(g.pid));
    g.host = gone ? HostVisibility::exited : HostVisibility::not_visible;
    ++(gone ? stats.exited : stats.not_visible);
  };
  // A refused local process with the same number: its name is not the GPU process's.
  const auto refuse = [&](GpuProcessSample& g, const ProcessSample& p) {
    if (g.process_name.ok() && name_is_local(*g.process_name, p))
      g.process_name = Reading<std::string>::fail(ReadStatus::not_available);
  };
  try {
    std::unordered_map<std::uint32_t, std::size_t> by_pid;
    by_pid.reserve(host_processes.size());
    for (std::size_t i = 0; i < host_processes.size(); ++i) by_pid.emplace(host_processes[i].pid, i);
    // Rule 5: the processes of trainmon's own namespace by their number there (NSpid[own_level]).
    const std::size_t level = options.own_level;
    const auto ours = [&](const ProcessSample& p) { return level > 0 && p.nspid.size() > level; };
    std::unordered_map<std::uint32_t, std::size_t> by_own_pid;
    if (level > 0)
      for (std::size_t i = 0; i < host_processes.size(); ++i)
        if (ours(host_processes[i]) &&
            std::binary_search(options.own_namespace_pids.begin(), options.own_namespace_pids.end(),
                               host_processes[i].pid))
          by_own_pid.emplace(host_processes[i].nspid[level], i);

    // Rule 1: first sightings, and pids listed again after a gap start over.
    for (const auto& g : gpu_processes) {
      auto [it, inserted] = memory.entries.try_emplace(g.pid);
      GpuJoinEntry& e = it->second;
      if (inserted || now_boot_s - e.last_seen_boot_s > options.forget_after_s) {
        e = GpuJoinEntry{now_boot_s, now_boot_s, std::nullopt};
      }
      e.last_seen_boot_s = now_boot_s;
    }

    for (auto& g : gpu_processes) {
      auto h = by_pid.find(g.pid);
      if (g.pid == 0) {
        g.host = HostVisibility::not_visible;
        ++stats.not_visible;
        continue;
      }
      // Rule 5: numbered in trainmon's own namespace, unless a process of that namespace has this
      // number in /proc too (then the driver numbers as /proc does).
      bool by_nspid = false;
      if (const auto l = by_own_pid.find(g.pid);
          l != by_own_pid.end() && (h == by_pid.end() || !ours(host_processes[h->second]))) {
        h = by_pid.find(host_processes[l->second].pid);
        by_nspid = h != by_pid.end();
      }
      if (options.host_pid_namespace == false && !by_nspid) {  // rule 4: our numbers are not NVML's
        g.host = HostVisibility::not_visible;
        ++stats.not_visible;
        if (h != by_pid.end()) refuse(g, host_processes[h->second]);
        continue;
      }
      if (h == by_pid.end()) {
        unmatched(g, true);
        continue;
      }
      ProcessSample& p = host_processes[h->second];
      GpuJoinEntry& e = memory.entries[g.pid];
      const bool reused_since_bound =
          e.bound_start_ticks && *e.bound_start_ticks != p.start_time_ticks;  // rule 3
      const bool started_after_listed =
          p.start_time_boot_s > e.first_seen_boot_s + options.start_tolerance_s;  // 2
      if (reused_since_bound || started_after_listed || p.state == 'X') {
        unmatched(g, false);
        if (p.state != 'X') {
          ++stats.pid_reused;
          refuse(g, p);
        }
        continue;
      }
      e.bound_start_ticks = p.start_time_ticks;
      if (by_nspid) g.pid = p.pid;  // rule 5: the /proc number from here on
      if (p.state == 'Z') {
        g.host = HostVisibility::zombie;
        ++stats.zombie;
      } else {
        g.host = HostVisibility::visible;
        ++stats.visible;
      }
      if (!g.process_name.ok() && !p.comm.empty()) g.process_name = Reading<std::string>::of(p.comm);
      if (std::find(p.gpu_indices.begin(), p.gpu_indices.end(), g.gpu_index) == p.gpu_indices.end()) {
        p.gpu_indices.insert(std::upper_bound(p.gpu_indices.begin(), p.gpu_indices.end(), g.gpu_index),
                             g.gpu_index);
      }
      if (g.used_memory_bytes.ok()) {
        p.gpu_memory_bytes =
            Reading<std::uint64_t>::of(p.gpu_memory_bytes.value_or(0) + *g.used_memory_bytes);
      } else if (!p.gpu_memory_bytes.ok()) {
        p.gpu_memory_bytes =
            Reading<std::uint64_t>::fail(g.used_memory_bytes.status, g.used_memory_bytes.code);
      }
    }

    for (auto it = memory.entries.begin(); it != memory.entries.end();) {
      if (now_boot_s - it->second.last_seen_boot_s > options.forget_after_s)
        it = memory.entries.erase(it);
      else
        ++it;
    }
  } catch (...) {
    // Allocation failure: leave the remaining processes at `unknown`.
  }
  return stats;
}

ProcPidNamespace detect_proc_pid_namespace(const std::string& proc_root) {
  ProcPidNamespace ns;
  const auto link = [&](const std::string& path) -> std::optional<std::string> {
    char buf[64] = {};
    const ssize_t n = ::readlink(path.c_str(), buf, sizeof buf - 1);
    if (n <= 0) return std::nullopt;
    return std::string(buf, static_cast<std::size_t>(n));
  };
  // NSpid of self: one entry when the tree is our own namespace (Linux >= 4.1 has the line).
  std::optional<std::size_t> nspid_entries;
  {
    std::ifstream in(proc_root + "/self/status");
    for (std::string line; in && std::getline(in, line);) {
      if (!line.starts_with("NSpid:")) continue;
      std::size_t n = 0;
      bool in_word = false;
      for (char c : std::string_view(line).substr(6)) {
        const bool digit = c >= '0' && c <= '9';
        if (digit && !in_word) ++n;
        in_word = digit;
      }
      nspid_entries = n;
      break;
    }
  }
  ns.own = nspid_entries == 1u;
  ns.self_depth = nspid_entries && *nspid_entries > 1 ? *nspid_entries - 1 : 0;
  if (const auto init = link(proc_root + "/1/ns/pid")) {
    ns.initial = *init == kInitPidNamespaceLink;
  } else if (ns.own || !nspid_entries) {  // no NSpid line (Linux < 4.1): as before, our own tree
    if (const auto self = link(proc_root + "/self/ns/pid")) ns.initial = *self == kInitPidNamespaceLink;
  }
  return ns;
}

std::vector<std::uint32_t> proc_pids_by_nspid(const std::string& proc_root, std::size_t level,
                                              const std::vector<std::uint32_t>& local_pids) {
  std::vector<std::uint32_t> out;
  if (level == 0 || local_pids.empty()) return out;
  try {
    const auto ns_link = [](const std::filesystem::path& p) {
      char buf[64] = {};
      const ssize_t n = ::readlink(p.c_str(), buf, sizeof buf - 1);
      return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
    };
    const std::string own_ns = ns_link(std::filesystem::path(proc_root) / "self" / "ns" / "pid");
    if (own_ns.empty()) return out;
    std::error_code ec;
    for (std::filesystem::directory_iterator it(proc_root, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::ifstream in(it->path() / "status");
      for (std::string line; in && std::getline(in, line);) {
        if (!line.starts_with("NSpid:")) continue;
        std::istringstream words(line.substr(6));
        std::vector<std::uint32_t> ids;
        for (std::uint64_t v = 0; ids.size() <= level && words >> v;)
          ids.push_back(static_cast<std::uint32_t>(v));
        if (ids.size() > level &&
            std::find(local_pids.begin(), local_pids.end(), ids[level]) != local_pids.end() &&
            ns_link(it->path() / "ns" / "pid") == own_ns)
          out.push_back(static_cast<std::uint32_t>(std::stoul(name)));
        break;
      }
    }
  } catch (...) {
    // Allocation failure or an odd name: what was found so far.
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace trainmon
