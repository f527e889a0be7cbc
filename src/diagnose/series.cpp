// SPDX-License-Identifier: Apache-2.0
#include "trainmon/diagnose/series.h"

#include "diagnose/detail.h"
#include "trainmon/core/timeline.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <unordered_set>

namespace trainmon::diagnose {
namespace {

template <class G, class F>
void for_each_float(G& g, F&& f) {
  for (auto* c : {&g.util_gpu_pct,           &g.util_mem_pct,     &g.mem_used_mib,
                  &g.mem_reserved_mib,       &g.mem_total_mib,    &g.power_w,
                  &g.power_limit_w,          &g.temp_c,           &g.temp_slowdown_c,
                  &g.sm_clock_mhz,           &g.sm_clock_max_mhz, &g.viol_power_s,
                  &g.viol_thermal_s,         &g.viol_hw_brake_s,  &g.ecc_uncorrected_volatile,
                  &g.ecc_corrected_volatile, &g.retired_pages,    &g.retired_pending,
                  &g.remapped_unc,           &g.remapped_cor,     &g.remapped_pending,
                  &g.remapped_failure,       &g.pcie_gen,         &g.pcie_width,
                  &g.pcie_gen_max,           &g.pcie_width_max,   &g.gpm_sm_pct,
                  &g.gpm_tensor_pct,         &g.gpm_dram_pct})
    f(*c);
}

template <class H, class F>
void for_each_host(H& h, F&& f) {
  for (auto* c : {&h.cpu_busy_pct, &h.cpu_iowait_pct, &h.cpu_core_max_pct, &h.cpu_count, &h.mem_available_mib,
                  &h.mem_total_mib, &h.mem_cached_mib, &h.swap_used_mib, &h.psi_mem_some_avg10,
                  &h.psi_io_some_avg10, &h.disk_read_bps})
    f(*c);
}

template <class J, class F>
void for_each_job(J& j, F&& f) {
  for (auto* c : {&j.rss_mib, &j.cpu_pct, &j.main_cpu_pct, &j.workers, &j.oom_kills, &j.memory_limit_mib})
    f(*c);
}

constexpr double kMiB = 1048576.0;

template <class T>
float mib(const Reading<T>& r) {
  return r.ok() ? static_cast<float>(static_cast<double>(r.value) / kMiB) : kNA;
}
template <class T>
float val(const Reading<T>& r, double scale = 1.0) {
  return r.ok() ? static_cast<float>(static_cast<double>(r.value) * scale) : kNA;
}
float flag(const Reading<bool>& r) {
  return r.ok() ? (r.value ? 1.f : 0.f) : kNA;
}

GpuState state_of(const GpuSample& g) {
  if (g.responsive.ok()) return g.responsive.value ? GpuState::ok : GpuState::failed;
  switch (g.responsive.status) {
    case ReadStatus::gpu_lost: return GpuState::lost;
    case ReadStatus::timeout: return GpuState::timeout;
    case ReadStatus::not_collected:
      return GpuState::ok;  // sampler did not judge: trust the fields
    // The driver answered and refused this user (NVML_ERROR_NO_PERMISSION): the fields are N/A, the
    // GPU is not lost. A permission problem is never a hardware alarm (D14), in any view.
    case ReadStatus::no_permission: return GpuState::ok;
    default: return GpuState::failed;
  }
}

}  // namespace

const JobProcess* JobSeries::proc(std::uint32_t pid) const noexcept {
  auto it = std::lower_bound(procs.begin(), procs.end(), pid,
                             [](const JobProcess& p, std::uint32_t v) { return p.pid < v; });
  return it != procs.end() && it->pid == pid ? &*it : nullptr;
}

JobProcessKind job_process_kind(const RunSeries& s, const JobProcess& p) {
  auto is_main = [&](std::uint32_t pid) {
    if (pid == 0) return false;
    if (pid == s.facts.root_pid) return true;
    return std::any_of(s.train.ranks.begin(), s.train.ranks.end(),
                       [&](const RankSeries& r) { return r.id.pid == pid; });
  };
  if (is_main(p.pid)) return JobProcessKind::main;
  if (p.comm == "pt_data_worker") return JobProcessKind::worker;
  if (is_main(p.ppid)) {
    // fork()ed multiprocessing workers keep their parent's program name (DataLoader's default on Linux);
    // a Python child of the main process is one too (the store keeps the name a process had when first
    // seen: a main process started by `sh -c 'exec python ...'` may be stored as "sh").
    const JobProcess* parent = s.job.proc(p.ppid);
    if ((parent && !parent->comm.empty() && parent->comm == p.comm) || p.comm.starts_with("python"))
      return JobProcessKind::worker;
  }
  return JobProcessKind::other;
}

std::string_view job_process_kind_name(JobProcessKind k) noexcept {
  switch (k) {
    case JobProcessKind::main: return N_("main process");
    case JobProcessKind::worker: return N_("DataLoader worker");
    case JobProcessKind::other: break;
  }
  return N_("process");
}

float job_process_rss_at(const JobProcess& p, std::size_t row) {
  auto it = std::upper_bound(p.rss_rows.begin(), p.rss_rows.end(), row);
  if (it == p.rss_rows.begin()) return kNA;
  return p.rss_mib[static_cast<std::size_t>(it - p.rss_rows.begin()) - 1];
}

const GpuSeries* RunSeries::gpu(unsigned index) const noexcept {
  for (const auto& g : gpus)
    if (g.index == index) return &g;
  return nullptr;
}

GpuSeries& ensure_gpu(RunSeries& s, unsigned index) {
  for (auto& g : s.gpus)
    if (g.index == index) return g;
  auto it = std::lower_bound(s.gpus.begin(), s.gpus.end(), index,
                             [](const GpuSeries& g, unsigned i) { return g.index < i; });
  GpuSeries g;
  g.index = index;
  const std::size_t n = s.size();
  for_each_float(g, [n](std::vector<float>& c) { c.assign(n, kNA); });
  g.state.assign(n, GpuState::absent);
  g.clock_reasons.assign(n, kReasonsNA);
  g.energy_j.assign(n, std::numeric_limits<double>::quiet_NaN());
  return *s.gpus.insert(it, std::move(g));
}

void append_empty_rows(RunSeries& s, const std::vector<double>& times) {
  const std::size_t n = s.size() + times.size();
  s.t.insert(s.t.end(), times.begin(), times.end());
  for (auto& g : s.gpus) {
    for_each_float(g, [n](std::vector<float>& c) { c.resize(n, kNA); });
    g.state.resize(n, GpuState::absent);
    g.clock_reasons.resize(n, kReasonsNA);
    g.energy_j.resize(n, std::numeric_limits<double>::quiet_NaN());
  }
  for_each_host(s.host, [n](std::vector<float>& c) { c.resize(n, kNA); });
  for_each_job(s.job, [n](std::vector<float>& c) { c.resize(n, kNA); });
}

void append_snapshot(RunSeries& s, const Snapshot& snap, const JobContext& ctx) {
  // The row's time, and where a wall-clock reading of this tick lies (core/timeline.h): from the
  // monotonic clock when the caller gives its start, else from the wall clock as read.
  const bool mono = ctx.run_start_monotonic_ns.has_value();
  const Timeline timeline{ctx.run_start_unix_ns, ctx.run_start_monotonic_ns.value_or(0)};
  const double t = mono ? timeline.elapsed_s(snap.monotonic_ns)
                        : static_cast<double>(snap.time_unix_ns - ctx.run_start_unix_ns) / 1e9;
  // Kept between the previous row (less the slack of buffered readings) and about one interval
  // after this one.
  const double lo = s.t.empty() ? -std::numeric_limits<double>::infinity()
                                : std::min(s.t.back(), t) - static_cast<double>(kWallReadingSlackNs) / 1e9;
  const double hi = s.t.empty() ? t + 1.0 : t + std::max(0.0, t - s.t.back());
  auto wall_t = [&](std::int64_t wall_ns) {
    if (!mono) return static_cast<double>(wall_ns - ctx.run_start_unix_ns) / 1e9;
    return std::clamp(t + static_cast<double>(wall_ns - snap.time_unix_ns) / 1e9, lo, hi);
  };
  const std::size_t row = s.size();
  for (const auto& gs : snap.gpus) ensure_gpu(s, gs.index);
  append_empty_rows(s, {t});

  // ---- GPUs ------------------------------------------------------------------------------------
  for (const auto& gs : snap.gpus) {
    GpuSeries& g = ensure_gpu(s, gs.index);
    const GpuStaticInfo* info = gs.info.get();
    if (g.name.empty() && info && info->name.ok()) g.name = info->name.value;
    g.state[row] = state_of(gs);
    g.util_gpu_pct[row] = val(gs.utilization_gpu_pct);
    g.util_mem_pct[row] = val(gs.utilization_memory_pct);
    g.mem_used_mib[row] = mib(gs.memory_used_bytes);
    g.mem_reserved_mib[row] = mib(gs.memory_reserved_bytes);
    g.mem_total_mib[row] = gs.memory_total_bytes.ok() ? mib(gs.memory_total_bytes)
                           : info                     ? mib(info->memory_total_bytes)
                                                      : kNA;
    g.power_w[row] = val(gs.power_draw_mw, 1e-3);
    g.power_limit_w[row] = gs.enforced_power_limit_mw.ok() ? val(gs.enforced_power_limit_mw, 1e-3)
                                                           : val(gs.power_limit_mw, 1e-3);
    g.temp_c[row] = val(gs.temperature_gpu_c);
    if (info) {
      g.temp_slowdown_c[row] = val(info->temperature_slowdown_c);
      g.sm_clock_max_mhz[row] = val(info->clocks_max_sm_mhz);
      g.pcie_gen_max[row] = val(info->pcie_link_gen_max);
      g.pcie_width_max[row] = val(info->pcie_link_width_max);
    }
    g.sm_clock_mhz[row] = val(gs.clocks_sm_mhz);
    g.clock_reasons[row] =
        gs.clocks_event_reasons_active.ok() ? gs.clocks_event_reasons_active.value : kReasonsNA;
    g.viol_power_s[row] = val(gs.violation_power_ns, 1e-9);
    g.viol_thermal_s[row] = val(gs.violation_thermal_ns, 1e-9);
    g.viol_hw_brake_s[row] = val(gs.violation_hw_power_brake_ns, 1e-9);
    if (gs.total_energy_mj.ok()) g.energy_j[row] = static_cast<double>(gs.total_energy_mj.value) / 1e3;
    g.ecc_uncorrected_volatile[row] = val(gs.ecc_uncorrected_volatile);
    g.ecc_corrected_volatile[row] = val(gs.ecc_corrected_volatile);
    if (gs.retired_pages_sbe.ok() || gs.retired_pages_dbe.ok())
      g.retired_pages[row] =
          static_cast<float>(gs.retired_pages_sbe.value_or(0) + gs.retired_pages_dbe.value_or(0));
    g.retired_pending[row] = flag(gs.retired_pages_pending);
    g.remapped_unc[row] = val(gs.remapped_rows_uncorrectable);
    g.remapped_cor[row] = val(gs.remapped_rows_correctable);
    g.remapped_pending[row] = flag(gs.remapped_rows_pending);
    g.remapped_failure[row] = flag(gs.remapped_rows_failure);
    g.pcie_gen[row] = val(gs.pcie_link_gen_current);
    g.pcie_width[row] = val(gs.pcie_link_width_current);
    g.gpm_sm_pct[row] = val(gs.gpm_sm_util_pct);
    g.gpm_tensor_pct[row] = val(gs.gpm_tensor_util_pct);
    g.gpm_dram_pct[row] = val(gs.gpm_dram_bw_util_pct);
    for (const auto& hv : gs.gpu_utilization_samples) {
      const double ht = wall_t(static_cast<std::int64_t>(hv.time_us) * 1000);
      if (!g.hires_util.t.empty() && ht <= g.hires_util.t.back()) continue;  // keep ascending, no repeats
      if (!(hv.value >= 0 && hv.value <= 100)) continue;                     // impossible: not evidence
      g.hires_util.t.push_back(ht);
      g.hires_util.value.push_back(static_cast<float>(hv.value));
    }
  }

  // ---- the job's process tree --------------------------------------------------------------------
  std::unordered_set<std::uint32_t> job;
  if (!ctx.pids.empty()) {
    job.insert(ctx.pids.begin(), ctx.pids.end());
  } else if (ctx.root_pid != 0) {
    job.insert(ctx.root_pid);
    std::unordered_map<std::uint32_t, std::vector<std::uint32_t>> children;
    for (const auto& p : snap.processes) children[p.ppid].push_back(p.pid);
    std::vector<std::uint32_t> stack{ctx.root_pid};
    while (!stack.empty()) {
      const auto pid = stack.back();
      stack.pop_back();
      for (auto c : children[pid])
        if (job.insert(c).second) stack.push_back(c);
    }
  }
  if (ctx.root_pid != 0) job.insert(ctx.root_pid);

  for (const auto& gp : snap.gpu_processes) {
    GpuSeries& g = ensure_gpu(s, gp.gpu_index);
    GpuProcTick pt;
    pt.tick = static_cast<std::uint32_t>(row);
    pt.pid = gp.pid;
    pt.used_mib = mib(gp.used_memory_bytes);
    pt.sm_util_pct = val(gp.sm_util_pct);
    pt.host = gp.host;
    // A number the join did not match to the local process is another namespace's, not the job's
    // (unknown: not joined at all, as in stores that predate the join).
    pt.in_job = (gp.host == HostVisibility::unknown || joined_to_host(gp.host)) && job.contains(gp.pid);
    g.procs.push_back(pt);
  }

  // The job lasts as long as its main process: a tick that sees it exited (a zombie, or gone) while
  // helpers it left behind still run is after the job's end, not a drop in its memory.
  const bool root_alive =
      ctx.root_pid == 0 ||
      std::any_of(snap.processes.begin(), snap.processes.end(), [&](const ProcessSample& p) {
        return p.pid == ctx.root_pid && p.state != 'Z' && p.state != 'X';
      });
  // Each process of the job: when it lives (a rank's liveness, D23) and a rank's own CPU (D24, D25).
  if (!job.empty()) {
    for (const auto& p : snap.processes) {
      if (!job.contains(p.pid) || p.state == 'Z' || p.state == 'X') continue;
      auto it = std::lower_bound(s.job.procs.begin(), s.job.procs.end(), p.pid,
                                 [](const JobProcess& jp, std::uint32_t v) { return jp.pid < v; });
      if (it == s.job.procs.end() || it->pid != p.pid) {
        it = s.job.procs.insert(it, JobProcess{});
        it->pid = p.pid;
        it->first_t = t;
      }
      it->last_t = t;
      it->ppid = p.ppid;
      if (it->comm != p.comm) it->comm = p.comm;
      if (p.rss_bytes.ok()) {
        it->rss_rows.push_back(static_cast<std::uint32_t>(row));
        it->rss_mib.push_back(mib(p.rss_bytes));
      }
      if (!p.cpu_pct.ok()) continue;
      const bool rank = std::any_of(s.train.ranks.begin(), s.train.ranks.end(),
                                    [&](const RankSeries& r) { return r.id.pid == p.pid; });
      if (rank) {
        it->ticks.push_back(static_cast<std::uint32_t>(row));
        it->cpu_pct.push_back(static_cast<float>(p.cpu_pct.value));
      }
    }
  }
  if (!job.empty() && root_alive) {
    double rss = 0, cpu = 0, workers = 0;
    bool any_rss = false, any_cpu = false;
    for (const auto& p : snap.processes) {
      // A zombie has exited and released its memory; counting its 0 B would end every run with a
      // drop to 0 (what job_totals in recorder/session.cpp also leaves out).
      if (!job.contains(p.pid) || p.state == 'Z' || p.state == 'X') continue;
      if (p.rss_bytes.ok()) {
        rss += static_cast<double>(p.rss_bytes.value) / kMiB;
        any_rss = true;
      }
      if (p.cpu_pct.ok()) {
        cpu += p.cpu_pct.value;
        any_cpu = true;
      }
      if (p.pid == ctx.root_pid) {
        s.job.main_cpu_pct[row] = val(p.cpu_pct);
      } else {
        workers += 1;
      }
    }
    s.job.rss_mib[row] = any_rss ? static_cast<float>(rss) : kNA;
    s.job.cpu_pct[row] = any_cpu ? static_cast<float>(cpu) : kNA;
    s.job.workers[row] = static_cast<float>(workers);
  }
  if (ctx.cgroup_oom_kills) s.job.oom_kills[row] = static_cast<float>(*ctx.cgroup_oom_kills);
  if (ctx.memory_limit_mib) s.job.memory_limit_mib[row] = static_cast<float>(*ctx.memory_limit_mib);

  // ---- host ------------------------------------------------------------------------------------
  const HostSample& h = snap.host;
  s.host.cpu_busy_pct[row] = static_cast<float>(h.cpu_total.busy_pct);
  s.host.cpu_iowait_pct[row] = static_cast<float>(h.cpu_total.iowait_pct);
  if (!h.cpus.empty()) {
    double m = 0;
    for (const auto& c : h.cpus) m = std::max(m, c.times.busy_pct);
    s.host.cpu_core_max_pct[row] = static_cast<float>(m);
  }
  s.host.cpu_count[row] = h.cpu_count_online ? static_cast<float>(h.cpu_count_online) : kNA;
  s.host.mem_available_mib[row] = mib(h.memory.available_bytes);
  s.host.mem_total_mib[row] = mib(h.memory.total_bytes);
  if (h.memory.cached_bytes.ok() || h.memory.buffers_bytes.ok())
    s.host.mem_cached_mib[row] = static_cast<float>(
        static_cast<double>(h.memory.cached_bytes.value_or(0) + h.memory.buffers_bytes.value_or(0)) / kMiB);
  s.host.swap_used_mib[row] = mib(h.memory.swap_used_bytes);
  s.host.psi_mem_some_avg10[row] = val(h.pressure_memory.some_avg10_pct);
  s.host.psi_io_some_avg10[row] = val(h.pressure_io.some_avg10_pct);
  if (!h.disks.empty()) {
    double r = 0;
    for (const auto& d : h.disks) r += d.read_bytes_per_s;
    s.host.disk_read_bps[row] = static_cast<float>(r);
  }

  // ---- NVML events -------------------------------------------------------------------------------
  for (const auto& e : snap.events) {
    s.gpu_events.push_back({wall_t(e.time_unix_ns), e.gpu_index, e.event_type, e.xid});
  }
  if (ctx.root_pid != 0) s.facts.root_pid = ctx.root_pid;
  drop_impossible(s, row, row);
}

void drop_impossible(RunSeries& s, std::size_t row0, std::size_t row1) {
  if (s.size() == 0 || row0 >= s.size()) return;
  row1 = std::min(row1, s.size() - 1);
  for (auto& g : s.gpus) {
    for (std::size_t row = row0; row <= row1; ++row) {
      const float total = g.mem_total_mib[row];
      if (!std::isnan(total) && total > 0) {
        const float slack = total * 1.0001f;  // rounding of bytes to MiB
        float& used = g.mem_used_mib[row];
        float& reserved = g.mem_reserved_mib[row];
        if (used > slack) used = kNA;
        if (reserved > slack) reserved = kNA;
        if (!std::isnan(used) && !std::isnan(reserved) && used + reserved > slack) used = reserved = kNA;
      }
      for (auto* c : {&g.util_gpu_pct, &g.util_mem_pct, &g.gpm_sm_pct, &g.gpm_tensor_pct, &g.gpm_dram_pct}) {
        float& v = (*c)[row];
        if (v < 0.f || v > 100.f) v = kNA;
      }
      for (auto* c : {&g.temp_c, &g.temp_slowdown_c})
        if ((*c)[row] >= kImpossibleGpuTempC || (*c)[row] < -100.f) (*c)[row] = kNA;
    }
    // the processes of these rows (the list is ordered by tick)
    for (auto it = g.procs.rbegin(); it != g.procs.rend() && it->tick >= row0; ++it) {
      if (it->tick > row1) continue;
      const float total = g.mem_total_mib[it->tick];
      if (!std::isnan(total) && total > 0 && it->used_mib > total * 1.0001f) it->used_mib = kNA;
      if (it->sm_util_pct < 0.f || it->sm_util_pct > 100.f) it->sm_util_pct = kNA;
    }
  }
}

void append_train_stack(RunSeries& s, TrainStackRec rec) {
  auto it = std::upper_bound(s.stacks.begin(), s.stacks.end(), rec.t,
                             [](double t, const TrainStackRec& e) { return t < e.t; });
  s.stacks.insert(it, std::move(rec));
}

void append_train_event(RunSeries& s, TrainEvent ev) {
  auto it = std::upper_bound(s.train_events.begin(), s.train_events.end(), ev.t,
                             [](double t, const TrainEvent& e) { return t < e.t; });
  s.train_events.insert(it, std::move(ev));
}

RunSeries slice(const RunSeries& s, double t0, double t1) {
  RunSeries out;
  const auto lo = static_cast<std::size_t>(std::lower_bound(s.t.begin(), s.t.end(), t0) - s.t.begin());
  const auto hi = static_cast<std::size_t>(std::upper_bound(s.t.begin(), s.t.end(), t1) - s.t.begin());
  const std::size_t a = lo, b = std::max(lo, hi);
  out.t.assign(s.t.begin() + static_cast<std::ptrdiff_t>(a), s.t.begin() + static_cast<std::ptrdiff_t>(b));
  auto cut = [a, b](auto& dst, const auto& src) {
    dst.assign(src.begin() + static_cast<std::ptrdiff_t>(a), src.begin() + static_cast<std::ptrdiff_t>(b));
  };
  for (const auto& g : s.gpus) {
    GpuSeries ng;
    ng.index = g.index;
    ng.name = g.name;
    // copy columns pairwise
    auto src_cols = std::vector<const std::vector<float>*>{};
    for_each_float(g, [&](const std::vector<float>& c) { src_cols.push_back(&c); });
    std::size_t k = 0;
    for_each_float(ng, [&](std::vector<float>& c) { cut(c, *src_cols[k++]); });
    cut(ng.state, g.state);
    cut(ng.clock_reasons, g.clock_reasons);
    cut(ng.energy_j, g.energy_j);
    for (std::size_t i = 0; i < g.hires_util.t.size(); ++i) {
      if (g.hires_util.t[i] < t0 || g.hires_util.t[i] > t1) continue;
      ng.hires_util.t.push_back(g.hires_util.t[i]);
      ng.hires_util.value.push_back(g.hires_util.value[i]);
    }
    for (const auto& p : g.procs) {
      if (p.tick < a || p.tick >= b) continue;
      GpuProcTick q = p;
      q.tick = static_cast<std::uint32_t>(p.tick - a);
      ng.procs.push_back(q);
    }
    out.gpus.push_back(std::move(ng));
  }
  {
    std::vector<const std::vector<float>*> src;
    for_each_host(s.host, [&](const std::vector<float>& c) { src.push_back(&c); });
    std::size_t k = 0;
    for_each_host(out.host, [&](std::vector<float>& c) { cut(c, *src[k++]); });
  }
  {
    std::vector<const std::vector<float>*> src;
    for_each_job(s.job, [&](const std::vector<float>& c) { src.push_back(&c); });
    std::size_t k = 0;
    for_each_job(out.job, [&](std::vector<float>& c) { cut(c, *src[k++]); });
  }
  for (const auto& e : s.gpu_events)
    if (e.t >= t0 && e.t <= t1) out.gpu_events.push_back(e);
  for (const auto& e : s.train_events)
    if (e.t >= t0 && e.t <= t1) out.train_events.push_back(e);
  out.train = slice(s.train, t0, t1);
  for (const auto& p : s.job.procs) {
    if (p.last_t < t0 || p.first_t > t1) continue;
    JobProcess q;
    q.pid = p.pid;
    q.first_t = std::max(p.first_t, t0);
    q.last_t = std::min(p.last_t, t1);
    for (std::size_t i = 0; i < p.ticks.size(); ++i) {
      if (p.ticks[i] < a || p.ticks[i] >= b) continue;
      q.ticks.push_back(static_cast<std::uint32_t>(p.ticks[i] - a));
      q.cpu_pct.push_back(p.cpu_pct[i]);
    }
    q.ppid = p.ppid;
    q.comm = p.comm;
    for (std::size_t i = 0; i < p.rss_rows.size(); ++i) {
      if (p.rss_rows[i] < a || p.rss_rows[i] >= b) continue;
      q.rss_rows.push_back(static_cast<std::uint32_t>(p.rss_rows[i] - a));
      q.rss_mib.push_back(p.rss_mib[i]);
    }
    out.job.procs.push_back(std::move(q));
  }
  for (const auto& st : s.stacks)
    if (st.t >= t0 && st.t <= t1) out.stacks.push_back(st);
  out.facts = s.facts;
  return out;
}

namespace detail {

std::vector<const float*> float_columns(const RunSeries& s) {
  std::vector<const float*> out;
  for (const auto& g : s.gpus)
    for_each_float(g, [&](const std::vector<float>& c) { out.push_back(c.data()); });
  for_each_host(s.host, [&](const std::vector<float>& c) { out.push_back(c.data()); });
  for_each_job(s.job, [&](const std::vector<float>& c) { out.push_back(c.data()); });
  std::erase(out, nullptr);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace detail

}  // namespace trainmon::diagnose
