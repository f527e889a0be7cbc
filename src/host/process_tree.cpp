// SPDX-License-Identifier: Apache-2.0
#include "trainmon/host/process_tree.h"

#include <algorithm>
#include <tuple>

namespace trainmon {

std::vector<std::size_t> process_tree_indices(std::span<const ProcessSample> processes,
                                              std::uint32_t root_pid,
                                              std::optional<std::uint64_t> root_start_ticks) {
  std::vector<std::size_t> out;
  // (ppid, pid, index), sorted: the children of one parent are a contiguous run in pid order.
  std::vector<std::tuple<std::uint32_t, std::uint32_t, std::size_t>> children;
  std::optional<std::size_t> root;
  children.reserve(processes.size());
  for (std::size_t i = 0; i < processes.size(); ++i) {
    if (processes[i].pid == root_pid && !root) root = i;
    if (processes[i].pid != processes[i].ppid) children.emplace_back(processes[i].ppid, processes[i].pid, i);
  }
  std::sort(children.begin(), children.end());
  if (!root) return out;
  if (root_start_ticks && processes[*root].start_time_ticks != *root_start_ticks) return out;
  std::vector<bool> taken(processes.size(), false);
  out.push_back(*root);
  taken[*root] = true;
  for (std::size_t next = 0; next < out.size(); ++next) {
    const ProcessSample& parent = processes[out[next]];
    auto it =
        std::lower_bound(children.begin(), children.end(), std::make_tuple(parent.pid, 0u, std::size_t{0}));
    for (; it != children.end() && std::get<0>(*it) == parent.pid; ++it) {
      const std::size_t c = std::get<2>(*it);
      if (taken[c] || processes[c].start_time_ticks < parent.start_time_ticks) continue;
      taken[c] = true;
      out.push_back(c);
    }
  }
  return out;
}

ProcessTreeTotals process_tree_totals(std::span<const ProcessSample> processes,
                                      std::span<const std::size_t> indices) {
  ProcessTreeTotals t;
  for (const std::size_t i : indices) {
    if (i >= processes.size()) continue;
    const ProcessSample& p = processes[i];
    ++t.process_count;
    if (p.state == 'Z') ++t.zombie_count;
    if (p.rss_bytes)
      t.rss_bytes += *p.rss_bytes;
    else
      ++t.rss_missing;
    if (p.cpu_pct)
      t.cpu_pct += *p.cpu_pct;
    else
      ++t.cpu_missing;
    if (p.num_threads) t.threads += *p.num_threads;
    if (p.read_bytes && p.write_bytes) {
      t.read_bytes += *p.read_bytes;
      t.write_bytes += *p.write_bytes;
      t.read_bytes_per_s += p.read_bytes_per_s.value_or(0);
      t.write_bytes_per_s += p.write_bytes_per_s.value_or(0);
    } else {
      ++t.io_missing;
    }
    t.cpu_time_s += p.cpu_time_s;
  }
  return t;
}

}  // namespace trainmon
