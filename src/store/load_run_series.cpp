// SPDX-License-Identifier: Apache-2.0
// The store -> RunSeries conversion mirrors diagnose::append_snapshot column by column (units,
// N/A rules, which processes form the job) so that `trainmon diagnose` finds what `trainmon run`
// found live.
#include "trainmon/store/load_run_series.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <string_view>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "trainmon/diagnose/train_message.h"
#include "trainmon/store/job_gpus.h"
#include "trainmon/store/train_rows.h"

namespace trainmon::store {
namespace {

using diagnose::kNA;
constexpr double kMiB = 1048576.0;

/// Column positions by name, remembered per call site: a direct-mapped cache keyed by the address
/// of the name (the callers pass string literals), falling back to field_index on a miss. Reading
/// a long run asks for ~40 columns of millions of rows; a hash of the name per cell made a 3-day
/// 8-GPU run take minutes to load.
class ColumnCache {
 public:
  explicit ColumnCache(SeriesKind kind) : kind_(kind) {}
  std::optional<std::size_t> index(std::string_view name) const {
    const auto key = reinterpret_cast<std::uintptr_t>(name.data());
    Slot& s = slots_[(key >> 3) % slots_.size()];
    if (s.data != name.data() || s.size != name.size()) {
      s.data = name.data();
      s.size = name.size();
      s.index = field_index(kind_, name);
    }
    return s.index;
  }

 private:
  struct Slot {
    const char* data = nullptr;
    std::size_t size = 0;
    std::optional<std::size_t> index;
  };
  SeriesKind kind_;
  mutable std::array<Slot, 128> slots_{};
};

/// One decoded row: its time and a getter by column name (kNull when absent or N/A).
struct RowView {
  const Chunk* chunk;
  std::size_t row;
  std::size_t stride;  // columns of the original kind (aggregated chunks hold 3x)
  const ColumnCache* columns;
  std::int64_t raw(std::string_view name) const {
    auto i = columns->index(name);
    if (!i || *i >= stride || *i >= chunk->columns) return kNull;
    return chunk->at(row, *i);
  }
  bool has(std::string_view name) const { return raw(name) != kNull; }
  /// Whether this row's chunk holds the column at all (chunks written before it have fewer).
  bool holds(std::string_view name) const {
    auto i = columns->index(name);
    return i && *i < stride && *i < chunk->columns;
  }
  float scaled(std::string_view name, double factor) const {
    auto v = raw(name);
    return v == kNull ? kNA : static_cast<float>(static_cast<double>(v) * factor);
  }
  float mib(std::string_view name) const { return scaled(name, 1.0 / kMiB); }
  float pct100(std::string_view name) const { return scaled(name, 0.01); }
  float plain(std::string_view name) const { return scaled(name, 1.0); }
};

/// Calls fn(t_ms, RowView) for every row of a series.
template <class F>
Expected<void> for_each_row(Store& store, const SeriesInfo& s, F&& fn) {
  const std::size_t width = fields_of(s.kind).size();
  const ColumnCache columns(s.kind);
  return store.read_series(s.id, [&](const Chunk& c, bool aggregated) {
    // An aggregated chunk holds means, minima, maxima of the original columns: use the means.
    const std::size_t stride = aggregated ? std::min(width, c.columns / 3) : std::min(width, c.columns);
    for (std::size_t r = 0; r < c.rows(); ++r) fn(c.t_ms[r], RowView{&c, r, stride, &columns});
  });
}

}  // namespace

Expected<diagnose::RunSeries> load_run_series(Store& store, std::int64_t run_id) {
  auto info = store.get_run(run_id);
  if (!info) return std::unexpected(info.error());
  auto series = store.list_series(run_id);
  if (!series) return std::unexpected(series.error());

  diagnose::RunSeries out;
  const std::int64_t start_ns = info->start_unix_ns;
  auto secs = [start_ns](std::int64_t t_ms) {
    return static_cast<double>(t_ms * 1'000'000 - start_ns) / 1e9;
  };

  // ---- the timeline: every tick has a host row (GPU rows as a fallback) ----
  std::vector<std::int64_t> ticks;
  for (auto kind : {SeriesKind::host, SeriesKind::gpu}) {
    for (const auto& s : *series) {
      if (s.kind != kind) continue;
      if (auto r = for_each_row(store, s, [&](std::int64_t t, const RowView&) { ticks.push_back(t); }); !r)
        return std::unexpected(r.error());
    }
    if (!ticks.empty()) break;
  }
  std::sort(ticks.begin(), ticks.end());
  ticks.erase(std::unique(ticks.begin(), ticks.end()), ticks.end());
  std::unordered_map<std::int64_t, std::size_t> row_of;
  std::vector<double> times;
  times.reserve(ticks.size());
  for (std::size_t i = 0; i < ticks.size(); ++i) {
    row_of.emplace(ticks[i], i);
    times.push_back(secs(ticks[i]));
  }
  auto tick_of = [&](std::int64_t t_ms) -> std::optional<std::size_t> {
    auto it = row_of.find(t_ms);
    if (it == row_of.end()) return std::nullopt;
    return it->second;
  };

  // GPUs first (so their columns exist), then the rows.
  for (const auto& s : *series) {
    if ((s.kind == SeriesKind::gpu || s.kind == SeriesKind::gpu_process) && s.gpu_index)
      diagnose::ensure_gpu(out, *s.gpu_index);
  }
  diagnose::append_empty_rows(out, times);
  for (const auto& g : info->gpus) {
    if (auto* gs = const_cast<diagnose::GpuSeries*>(out.gpu(g.index)); gs && gs->name.empty())
      gs->name = g.name;
  }

  const bool is_job = info->kind == "run";
  if (is_job) std::fill(out.job.workers.begin(), out.job.workers.end(), 0.f);

  // Root of the job: the child of the recorder seen first. Helpers that the command's shell started
  // before it exec'ed trainmon are the recorder's children as well, seen from the same first tick:
  // among those, the one running the run's command, then the one started last (the recorder forked
  // the command after they existed). Picking a helper made a zombie tick of the real root look like
  // the job's memory dropping offline (D3 missed while the live pass saw it).
  std::uint32_t root_pid = 0;
  struct RootRank {
    std::int64_t first_t = INT64_MAX;
    bool runs_command = false;
    std::uint64_t start_time_ticks = 0;
    bool operator<(const RootRank& o) const {  // "better root than o"
      if (first_t != o.first_t) return first_t < o.first_t;
      if (runs_command != o.runs_command) return runs_command;
      return start_time_ticks > o.start_time_ticks;
    }
  };
  RootRank root_rank;
  const std::string command0 = info->command.empty() ? std::string() : info->command.front();
  const auto runs_command = [&](const std::string& cmdline) {
    return !command0.empty() && cmdline.starts_with(command0) &&
           (cmdline.size() == command0.size() || cmdline[command0.size()] == ' ');
  };

  std::vector<std::pair<unsigned, diagnose::GpuProcTick>> procs;
  for (const auto& s : *series) {
    Expected<void> r{};
    switch (s.kind) {
      case SeriesKind::gpu: {
        auto& g = diagnose::ensure_gpu(out, s.gpu_index.value_or(0));
        r = for_each_row(store, s, [&](std::int64_t t, const RowView& v) {
          auto row = tick_of(t);
          if (!row) return;
          const std::size_t i = *row;
          const auto responsive = v.raw("responsive");
          const auto device_state = v.raw("device_state");  // NULL in stores written before it
          if (device_state != kNull) {
            // no permission: the GPU answered and refused this user; not a failure (D14)
            g.state[i] = device_state == kDeviceStateOk || device_state == kDeviceStateNoPermission
                             ? diagnose::GpuState::ok
                         : device_state == kDeviceStateLost    ? diagnose::GpuState::lost
                         : device_state == kDeviceStateTimeout ? diagnose::GpuState::timeout
                                                               : diagnose::GpuState::failed;
          } else if (v.holds("device_state") && responsive == kNull) {
            // The sampler did not judge the GPU this tick (its answer came after the tick, which
            // waits at most 3/4 of the interval): as the live diagnosis does, not a failure.
            g.state[i] = diagnose::GpuState::ok;
          } else if (responsive == 1) {
            g.state[i] = diagnose::GpuState::ok;
          } else if (responsive == 0) {
            g.state[i] = diagnose::GpuState::failed;
          } else {
            // N/A: either not judged (fields present) or the GPU did not answer (no fields).
            g.state[i] = v.has("memory_used_bytes") || v.has("utilization_gpu_pct")
                             ? diagnose::GpuState::ok
                             : diagnose::GpuState::failed;
          }
          g.util_gpu_pct[i] = v.plain("utilization_gpu_pct");
          g.util_mem_pct[i] = v.plain("utilization_memory_pct");
          g.mem_used_mib[i] = v.mib("memory_used_bytes");
          g.mem_reserved_mib[i] = v.mib("memory_reserved_bytes");
          g.mem_total_mib[i] = v.mib("memory_total_bytes");
          g.power_w[i] = v.scaled("power_draw_mw", 1e-3);
          g.power_limit_w[i] = v.has("enforced_power_limit_mw") ? v.scaled("enforced_power_limit_mw", 1e-3)
                                                                : v.scaled("power_limit_mw", 1e-3);
          g.temp_c[i] = v.plain("temperature_gpu_c");
          g.temp_slowdown_c[i] = v.plain("temperature_slowdown_c");
          g.sm_clock_max_mhz[i] = v.plain("clocks_max_sm_mhz");
          g.pcie_gen_max[i] = v.plain("pcie_link_gen_max");
          g.pcie_width_max[i] = v.plain("pcie_link_width_max");
          g.sm_clock_mhz[i] = v.plain("clocks_sm_mhz");
          const auto reasons = v.raw("clocks_event_reasons_active");
          g.clock_reasons[i] = reasons == kNull ? diagnose::kReasonsNA : static_cast<std::uint64_t>(reasons);
          g.viol_power_s[i] = v.scaled("violation_power_ns", 1e-9);
          g.viol_thermal_s[i] = v.scaled("violation_thermal_ns", 1e-9);
          g.viol_hw_brake_s[i] = v.scaled("violation_hw_power_brake_ns", 1e-9);
          if (const auto e = v.raw("total_energy_mj"); e != kNull)
            g.energy_j[i] = static_cast<double>(e) / 1e3;
          g.ecc_uncorrected_volatile[i] = v.plain("ecc_uncorrected_volatile");
          g.ecc_corrected_volatile[i] = v.plain("ecc_corrected_volatile");
          const auto sbe = v.raw("retired_pages_sbe"), dbe = v.raw("retired_pages_dbe");
          if (sbe != kNull || dbe != kNull)
            g.retired_pages[i] = static_cast<float>((sbe == kNull ? 0 : sbe) + (dbe == kNull ? 0 : dbe));
          g.retired_pending[i] = v.plain("retired_pages_pending");
          g.remapped_unc[i] = v.plain("remapped_rows_uncorrectable");
          g.remapped_cor[i] = v.plain("remapped_rows_correctable");
          g.remapped_pending[i] = v.plain("remapped_rows_pending");
          g.remapped_failure[i] = v.plain("remapped_rows_failure");
          g.pcie_gen[i] = v.plain("pcie_link_gen_current");
          g.pcie_width[i] = v.plain("pcie_link_width_current");
          g.gpm_sm_pct[i] = v.pct100("gpm_sm_util_pct");
          g.gpm_tensor_pct[i] = v.pct100("gpm_tensor_util_pct");
          g.gpm_dram_pct[i] = v.pct100("gpm_dram_bw_util_pct");
        });
        break;
      }
      case SeriesKind::gpu_util_hr: {
        auto& g = diagnose::ensure_gpu(out, s.gpu_index.value_or(0));
        r = for_each_row(store, s, [&](std::int64_t t, const RowView& v) {
          const double ht = secs(t);
          if (!g.hires_util.t.empty() && ht <= g.hires_util.t.back()) return;
          const auto val = v.raw("utilization_gpu_pct");
          if (val == kNull || val < 0 || val > 100) return;  // N/A, or impossible (as append_snapshot)
          g.hires_util.t.push_back(ht);
          g.hires_util.value.push_back(static_cast<float>(val));
        });
        break;
      }
      case SeriesKind::host: {
        auto& h = out.host;
        r = for_each_row(store, s, [&](std::int64_t t, const RowView& v) {
          auto row = tick_of(t);
          if (!row) return;
          const std::size_t i = *row;
          h.cpu_busy_pct[i] = v.pct100("cpu_busy_pct");
          h.cpu_iowait_pct[i] = v.pct100("cpu_iowait_pct");
          h.cpu_core_max_pct[i] = v.pct100("cpu_max_core_busy_pct");
          const auto cpus = v.raw("cpu_count_online");
          h.cpu_count[i] = cpus == kNull || cpus == 0 ? kNA : static_cast<float>(cpus);
          h.mem_available_mib[i] = v.mib("memory_available_bytes");
          h.mem_total_mib[i] = v.mib("memory_total_bytes");
          const auto cached = v.raw("memory_cached_bytes"), buffers = v.raw("memory_buffers_bytes");
          if (cached != kNull || buffers != kNull)
            h.mem_cached_mib[i] = static_cast<float>(
                static_cast<double>((cached == kNull ? 0 : cached) + (buffers == kNull ? 0 : buffers)) /
                kMiB);
          h.swap_used_mib[i] = v.mib("swap_used_bytes");
          h.psi_mem_some_avg10[i] = v.pct100("pressure_memory_some_avg10_pct");
          h.psi_io_some_avg10[i] = v.pct100("pressure_io_some_avg10_pct");
          h.disk_read_bps[i] = v.plain("disk_read_bytes_per_s");
          out.job.oom_kills[i] = v.plain("job_oom_kills");
          out.job.memory_limit_mib[i] = v.mib("job_memory_limit_bytes");
        });
        break;
      }
      case SeriesKind::process: {
        if (!s.in_job || !s.pid) break;
        if (s.ppid != static_cast<std::uint32_t>(info->recorder_pid)) break;
        RootRank rank{INT64_MAX, runs_command(s.cmdline), s.start_time_ticks};
        r = for_each_row(store, s,
                         [&](std::int64_t t, const RowView&) { rank.first_t = std::min(rank.first_t, t); });
        if (rank.first_t != INT64_MAX && rank < root_rank) {
          root_rank = rank;
          root_pid = *s.pid;
        }
        break;
      }
      case SeriesKind::gpu_process: {
        if (!s.gpu_index || !s.pid) break;
        r = for_each_row(store, s, [&](std::int64_t t, const RowView& v) {
          auto row = tick_of(t);
          if (!row) return;
          diagnose::GpuProcTick pt;
          pt.tick = static_cast<std::uint32_t>(*row);
          pt.pid = *s.pid;
          pt.used_mib = v.mib("used_memory_bytes");
          pt.sm_util_pct = v.plain("sm_util_pct");
          const auto hv = v.raw("host_visibility");
          pt.host = hv == kNull || hv < 0 || hv > static_cast<std::int64_t>(HostVisibility::exited)
                        ? HostVisibility::unknown
                        : static_cast<HostVisibility>(hv);
          // A pid the join did not match to the job's local process is not the job's, whatever the
          // series says (stores written before the recorder checked this marked it by number).
          pt.in_job = s.in_job && (pt.host == HostVisibility::unknown || joined_to_host(pt.host));
          procs.emplace_back(*s.gpu_index, pt);
        });
        break;
      }
      case SeriesKind::train_rank: break;  // read below, with the ranks
    }
    if (!r) return std::unexpected(r.error());
  }
  std::stable_sort(procs.begin(), procs.end(), [](const auto& a, const auto& b) {
    return std::tie(a.second.tick, a.second.pid) < std::tie(b.second.tick, b.second.pid);
  });
  for (auto& [gpu, pt] : procs) diagnose::ensure_gpu(out, gpu).procs.push_back(pt);

  // The ranks' identities first: the job pass below keeps each rank's own CPU.
  auto ranks = store.train_ranks(run_id);
  if (!ranks) return std::unexpected(ranks.error());
  for (const auto& r : *ranks) out.train.upsert(r);

  // ---- the job's process tree (second pass: the root is known now) ----
  if (is_job) {
    std::vector<bool> any_rss(ticks.size()), any_cpu(ticks.size()), root_alive(ticks.size(), root_pid == 0);
    std::vector<double> rss(ticks.size()), cpu(ticks.size());
    for (const auto& s : *series) {
      if (s.kind != SeriesKind::process || !s.in_job || !s.pid) continue;
      const bool root = *s.pid == root_pid;
      const bool rank_proc = std::any_of(out.train.ranks.begin(), out.train.ranks.end(),
                                         [&](const diagnose::RankSeries& rk) { return rk.id.pid == *s.pid; });
      auto pit = std::lower_bound(out.job.procs.begin(), out.job.procs.end(), *s.pid,
                                  [](const diagnose::JobProcess& jp, std::uint32_t v) { return jp.pid < v; });
      if (pit == out.job.procs.end() || pit->pid != *s.pid) {
        pit = out.job.procs.insert(pit, diagnose::JobProcess{});
        pit->pid = *s.pid;
        pit->first_t = 1e300;
        pit->last_t = -1e300;
      }
      auto& jp = *pit;
      jp.ppid = s.ppid;
      jp.comm = s.comm;
      std::vector<std::pair<std::uint32_t, float>> cpu_rows, rss_rows;
      auto r = for_each_row(store, s, [&](std::int64_t t, const RowView& v) {
        auto row = tick_of(t);
        if (!row) return;
        const std::size_t i = *row;
        // Zombies have released their memory: left out, as append_snapshot does.
        if (const auto st = v.raw("state"); st == 'Z' || st == 'X') return;
        jp.first_t = std::min(jp.first_t, times[i]);
        jp.last_t = std::max(jp.last_t, times[i]);
        if (const auto c = v.raw("cpu_pct"); rank_proc && c != kNull)
          cpu_rows.emplace_back(static_cast<std::uint32_t>(i),
                                static_cast<float>(static_cast<double>(c) / 100.0));
        if (const auto b = v.raw("rss_bytes"); b != kNull) {
          rss[i] += static_cast<double>(b) / kMiB;
          any_rss[i] = true;
          rss_rows.emplace_back(static_cast<std::uint32_t>(i),
                                static_cast<float>(static_cast<double>(b) / kMiB));
        }
        if (const auto c = v.raw("cpu_pct"); c != kNull) {
          cpu[i] += static_cast<double>(c) / 100.0;
          any_cpu[i] = true;
        }
        if (root) {
          root_alive[i] = true;
          out.job.main_cpu_pct[i] = v.pct100("cpu_pct");
        } else {
          out.job.workers[i] += 1;
        }
      });
      if (!r) return std::unexpected(r.error());
      // several series of one pid (a reused pid): one process record, rows in time order
      for (auto& [i, c] : cpu_rows) {
        auto at = std::upper_bound(jp.ticks.begin(), jp.ticks.end(), i);
        jp.cpu_pct.insert(jp.cpu_pct.begin() + (at - jp.ticks.begin()), c);
        jp.ticks.insert(at, i);
      }
      for (auto& [i, m] : rss_rows) {
        auto at = std::upper_bound(jp.rss_rows.begin(), jp.rss_rows.end(), i);
        jp.rss_mib.insert(jp.rss_mib.begin() + (at - jp.rss_rows.begin()), m);
        jp.rss_rows.insert(at, i);
      }
    }
    std::erase_if(out.job.procs, [](const diagnose::JobProcess& p) { return p.first_t > p.last_t; });
    for (std::size_t i = 0; i < ticks.size(); ++i) {
      // After the main process exited, what is left is not the job (as append_snapshot).
      out.job.rss_mib[i] = any_rss[i] && root_alive[i] ? static_cast<float>(rss[i]) : kNA;
      out.job.cpu_pct[i] = any_cpu[i] && root_alive[i] ? static_cast<float>(cpu[i]) : kNA;
      if (!root_alive[i]) out.job.workers[i] = kNA;
    }
  }

  // ---- events ----
  auto events = store.gpu_events(run_id);
  if (!events) return std::unexpected(events.error());
  for (const auto& e : *events) {
    out.gpu_events.push_back(
        {static_cast<double>(e.time_unix_ns - start_ns) / 1e9, e.gpu_index, e.event_type, e.xid});
  }
  auto train = store.train_events(run_id);
  if (!train) return std::unexpected(train.error());
  for (const auto& e : *train) {
    auto m = diagnose::parse_train_event(e.json);
    if (!m) continue;  // written by this program, so only a newer protocol's event would be skipped
    // The row's time is the event's time on the run's clock (mapped to Unix time when stored).
    diagnose::append_train_event(
        out, diagnose::to_diagnose_event(*m, static_cast<double>(e.time_unix_ns - start_ns) / 1e9));
  }
  // ---- the training loop's step timing, per rank ----
  const std::int64_t start_ms = start_ns / 1'000'000;
  for (const auto& s : *series) {
    if (s.kind != SeriesKind::train_rank) continue;
    diagnose::TrainRank id;
    id.key = s.rank_key;
    auto& rank = out.train.upsert(id);
    const std::size_t width = fields_of(SeriesKind::train_rank).size();
    auto r = store.read_series(s.id, [&](const Chunk& c, bool aggregated) {
      const std::size_t stride = aggregated ? std::min(width, c.columns / 3) : std::min(width, c.columns);
      for (std::size_t i = 0; i < c.rows(); ++i) {
        std::span<const std::int64_t> row(c.values.data() + i * c.columns, stride);
        rank.rows.push_back(train_window_from_row(c.t_ms[i], row, start_ms));
      }
    });
    if (!r) return std::unexpected(r.error());
  }

  // ---- the stacks asked for (D23) ----
  auto stacks = store.train_stacks(run_id);
  if (!stacks) return std::unexpected(stacks.error());
  for (const auto& st : *stacks) {
    diagnose::append_train_stack(
        out, diagnose::TrainStackRec{static_cast<double>(st.time_unix_ns - start_ns) / 1e9, st.rank_key,
                                     st.pid, st.finding, st.text});
  }
  // Impossible readings are not evidence (the rule append_snapshot applies live).
  if (out.size() > 0) diagnose::drop_impossible(out, 0, out.size() - 1);

  // ---- facts ----
  auto& f = out.facts;
  if (info->exit_signal) {
    f.signal = info->exit_signal;
  } else if (info->exit_code) {
    f.exit_status = info->exit_code;
  }
  f.oom_killed = info->status == "oom_killed";
  // The job's cgroup limit and where the OOM verdict put the kill (recorder::RunSummary's JSON keys
  // "cgroup".memory_limit_bytes and "oom_at_cgroup_limit").
  if (const auto sj = nlohmann::json::parse(info->summary_json, nullptr, false); sj.is_object()) {
    f.oom_at_cgroup_limit = sj.value("oom_at_cgroup_limit", false);
    if (const auto k = sj.find("oom_kills"); k != sj.end() && k->is_number())
      f.oom_kills_at_end = k->get<double>();
    if (const auto c = sj.find("cgroup"); c != sj.end() && c->is_object()) {
      if (const auto b = c->find("memory_limit_bytes"); b != c->end() && b->is_number())
        f.cgroup_memory_limit_mib = b->get<double>() / kMiB;
    }
  }
  f.gpus = job_gpus(*info);
  f.root_pid = root_pid;
  return out;
}

}  // namespace trainmon::store
