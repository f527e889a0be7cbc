// SPDX-License-Identifier: Apache-2.0
// The usage ledger's arithmetic (per tick, formulas in the header) and its grouping over the store.
#include "trainmon/store/usage_ledger.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "trainmon/store/store.h"

namespace trainmon::store {

std::vector<UsageShare> usage_shares(const UsageGpuTick& gpu, double dt_s, double idle_util_pct) {
  std::vector<UsageShare> out;
  std::size_t k = 0;
  for (const auto& h : gpu.holders) k += h.used_memory_bytes > 0 ? 1 : 0;
  if (k == 0 || !(dt_s > 0)) return out;
  bool all_sm = true;
  double sm_sum = 0;
  for (const auto& h : gpu.holders) {
    if (h.used_memory_bytes == 0) continue;
    if (h.sm_util_pct) {
      sm_sum += std::clamp(*h.sm_util_pct, 0.0, 100.0);
    } else {
      all_sm = false;
    }
  }
  const double n = static_cast<double>(k);
  bool idle = false;
  if (gpu.utilization_gpu_pct) {
    idle = *gpu.utilization_gpu_pct < idle_util_pct;
  } else if (all_sm) {
    idle = sm_sum < idle_util_pct;
  }
  for (const auto& h : gpu.holders) {
    if (h.used_memory_bytes == 0) continue;
    UsageShare s;
    s.gpu_index = gpu.gpu_index;
    s.pid = h.pid;
    s.held_s = dt_s / n;
    s.memory_gib_s = static_cast<double>(h.used_memory_bytes) / (1024.0 * 1024.0 * 1024.0) * dt_s;
    if (all_sm) {
      s.busy_s = dt_s * std::clamp(*h.sm_util_pct, 0.0, 100.0) / 100.0;
    } else if (gpu.utilization_gpu_pct) {
      s.busy_s = dt_s * std::clamp(*gpu.utilization_gpu_pct, 0.0, 100.0) / 100.0 / n;
    }
    if (idle) s.idle_s = dt_s / n;
    if (gpu.energy_j && *gpu.energy_j > 0) {
      s.energy_j = all_sm && sm_sum > 0 ? *gpu.energy_j * std::clamp(*h.sm_util_pct, 0.0, 100.0) / sm_sum
                                        : *gpu.energy_j / n;
    }
    out.push_back(s);
  }
  return out;
}

std::vector<UsageGpuTick> usage_ticks_of(const Snapshot& snap,
                                         std::span<const std::optional<double>> energy_j) {
  std::vector<UsageGpuTick> out;
  out.reserve(snap.gpus.size());
  for (std::size_t i = 0; i < snap.gpus.size(); ++i) {
    const auto& g = snap.gpus[i];
    UsageGpuTick t;
    t.gpu_index = g.index;
    if (g.utilization_gpu_pct.ok()) t.utilization_gpu_pct = static_cast<double>(*g.utilization_gpu_pct);
    if (i < energy_j.size()) t.energy_j = energy_j[i];
    for (const auto& p : snap.gpu_processes) {
      if (p.gpu_index != g.index || !p.used_memory_bytes.ok() || *p.used_memory_bytes == 0) continue;
      UsageHolderTick h;
      h.pid = p.pid;
      h.used_memory_bytes = *p.used_memory_bytes;
      if (p.sm_util_pct.ok()) h.sm_util_pct = static_cast<double>(*p.sm_util_pct);
      t.holders.push_back(h);
    }
    out.push_back(std::move(t));
  }
  return out;
}

std::optional<UsageGroup> parse_usage_group(std::string_view text) noexcept {
  if (text == "user") return UsageGroup::user;
  if (text == "job") return UsageGroup::job;
  if (text == "pod") return UsageGroup::pod;
  if (text == "gpu") return UsageGroup::gpu;
  return std::nullopt;
}

std::string_view usage_group_name(UsageGroup g) noexcept {
  switch (g) {
    case UsageGroup::user: return "user";
    case UsageGroup::job: return "job";
    case UsageGroup::pod: return "pod";
    case UsageGroup::gpu: return "gpu";
  }
  return "user";
}

std::string usage_job_key(const ProcessAttribution& a, bool in_job, std::string_view run_kind,
                          std::string_view run_name) {
  std::string key = a.job_key();
  if (!key.empty()) return key;
  if (in_job && run_kind == "run") return "run:" + std::string(run_name);
  return {};
}

namespace {

std::string group_key(const SeriesUsage& u, UsageGroup by) {
  const auto& a = u.series.attribution;
  switch (by) {
    case UsageGroup::user: return u.series.user;
    case UsageGroup::job: return usage_job_key(a, u.series.in_job, u.run_kind, u.run_name);
    case UsageGroup::pod:
      if (a.pod_uid.empty()) return {};
      if (!a.pod_namespace.empty() && !a.pod_name.empty()) return a.pod_namespace + "/" + a.pod_name;
      return a.pod_uid;
    case UsageGroup::gpu: return u.series.gpu_index ? std::to_string(*u.series.gpu_index) : std::string();
  }
  return {};
}

void add(UsageRow& r, const SeriesUsage& u) {
  r.held_h += u.held_s / 3600.0;
  r.busy_h += u.busy_s / 3600.0;
  r.idle_h += u.idle_s / 3600.0;
  r.memory_gib_h += u.memory_gib_s / 3600.0;
  r.energy_kwh += u.energy_j / 3.6e6;
  if (u.ticks > 0) {
    r.first_ms = r.first_ms ? std::min(r.first_ms, u.first_ms) : u.first_ms;
    r.last_ms = std::max(r.last_ms, u.last_ms);
  }
}

}  // namespace

Expected<UsageLedger> usage_ledger(Store& store, const UsageQuery& query) {
  UsageLedger out;
  auto series = store.usage_by_series(query.since_ms, query.until_ms);
  if (!series) return std::unexpected(series.error());
  auto cover = store.usage_coverage(query.since_ms, query.until_ms);
  if (!cover) return std::unexpected(cover.error());
  out.covered_from_ms = cover->usage_from_ms;
  out.covered_to_ms = cover->usage_to_ms;
  out.downsampled_from_ms = cover->downsampled_from_ms;
  out.downsampled_to_ms = cover->downsampled_to_ms;
  out.runs_without_usage_data = cover->runs_without_usage;

  std::map<std::string, UsageRow> rows;
  std::map<std::string, std::set<std::pair<std::int64_t, std::uint32_t>>> procs;
  std::set<std::pair<std::int64_t, std::uint32_t>> all_procs;
  std::map<std::string, std::int64_t> uuid_run;  // --by gpu: the newest run that named the UUID
  std::set<std::int64_t> runs;
  for (const auto& u : *series) {
    const std::string key = group_key(u, query.by);
    UsageRow& r = rows[key];
    r.key = key;
    if (query.by == UsageGroup::gpu && !u.gpu_uuid.empty()) {
      auto [it, fresh] = uuid_run.try_emplace(key, u.series.run_id);
      if (fresh || u.series.run_id >= it->second) {
        it->second = u.series.run_id;
        r.gpu_uuid = u.gpu_uuid;
      }
    }
    add(r, u);
    add(out.total, u);
    const std::pair<std::int64_t, std::uint32_t> proc{u.series.run_id, u.series.pid.value_or(0)};
    procs[key].insert(proc);
    all_procs.insert(proc);
    runs.insert(u.series.run_id);
  }
  for (auto& [key, r] : rows) {
    r.processes = static_cast<std::int64_t>(procs[key].size());
    out.rows.push_back(std::move(r));
  }
  out.total.processes = static_cast<std::int64_t>(all_procs.size());
  out.runs = static_cast<std::int64_t>(runs.size());
  // Worst offenders first: most idle GPU-hours, then most held, then by key (stable output).
  std::sort(out.rows.begin(), out.rows.end(), [](const UsageRow& a, const UsageRow& b) {
    return std::tie(b.idle_h, b.held_h, a.key) < std::tie(a.idle_h, a.held_h, b.key);
  });
  return out;
}

}  // namespace trainmon::store
