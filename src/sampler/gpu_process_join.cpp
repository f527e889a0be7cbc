// SPDX-License-Identifier: Apache-2.0
// GPU process ↔ host process join by (pid, start time); see the rules in gpu_process_join.h.
#include "trainmon/sampler/gpu_process_join.h"

#include <unistd.h>

#include <algorithm>
#include <climits>

namespace trainmon {

GpuJoinStats join_gpu_processes(std::vector<GpuProcessSample>& gpu_processes,
                                std::vector<ProcessSample>& host_processes, GpuJoinMemory& memory,
                                double now_boot_s, const GpuJoinOptions& options) {
  GpuJoinStats stats;
  try {
    std::unordered_map<std::uint32_t, std::size_t> by_pid;
    by_pid.reserve(host_processes.size());
    for (std::size_t i = 0; i < host_processes.size(); ++i) by_pid.emplace(host_processes[i].pid, i);

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
      const auto h = by_pid.find(g.pid);
      if (g.pid == 0 || h == by_pid.end() || options.host_pid_namespace == false) {  // rule 4
        g.host = HostVisibility::not_visible;
        ++stats.not_visible;
        continue;
      }
      ProcessSample& p = host_processes[h->second];
      GpuJoinEntry& e = memory.entries[g.pid];
      const bool reused_since_bound =
          e.bound_start_ticks && *e.bound_start_ticks != p.start_time_ticks;  // rule 3
      const bool started_after_listed =
          p.start_time_boot_s > e.first_seen_boot_s + options.start_tolerance_s;  // 2
      if (reused_since_bound || started_after_listed || p.state == 'X') {
        g.host = HostVisibility::not_visible;
        ++stats.not_visible;
        if (p.state != 'X') ++stats.pid_reused;
        continue;
      }
      e.bound_start_ticks = p.start_time_ticks;
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

std::optional<bool> detect_host_pid_namespace(const std::string& proc_root) {
  char buf[64] = {};
  const std::string link = proc_root + "/self/ns/pid";
  const ssize_t n = ::readlink(link.c_str(), buf, sizeof buf - 1);
  if (n <= 0) return std::nullopt;
  return std::string_view(buf, static_cast<std::size_t>(n)) == "pid:[4026531836]";
}

}  // namespace trainmon
