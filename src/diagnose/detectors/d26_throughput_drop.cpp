// SPDX-License-Identifier: Apache-2.0
// D26 throughput-drop (warning): the job's samples/s (steps/s when a rank does not count samples),
// summed over ranks over the trailing window_s, stays under throughput_drop_frac x the run's own
// steady level for throughput_for_s. The steady level is the median rate after
// throughput_warmup_s of steps. Not a drop: stretches where a rank is outside the training loop
// (phase idle: an epoch boundary with evaluation, checkpointing) and stalls with no step at all (a
// hang, D23). The evidence names what changed during the drop (data wait, GPU clocks, another
// process on a job GPU); DiagnosisEngine::run_all adds the findings that overlap it (`related`).
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "diagnose/detectors/train_common.h"
#include "trainmon/diagnose/detectors.h"

namespace trainmon::diagnose {
using namespace detail;

namespace {

struct Interval {
  double t0, t1;
};

/// When rank `r` was outside the training loop (phase idle): from the row (or its phase_t) to the
/// next row that reports another phase.
std::vector<Interval> idle_intervals(const RankSeries& r) {
  std::vector<Interval> out;
  double open = NAN;
  for (const auto& w : r.rows) {
    if (w.phase == TrainPhase::idle) {
      if (na(open)) open = na(w.phase_t) ? w.t : std::min(w.phase_t, w.t);
    } else if (w.phase != TrainPhase::unknown && !na(open)) {
      out.push_back({open, w.t});
      open = NAN;
    }
  }
  if (!na(open)) out.push_back({open, 1e300});
  return out;
}

}  // namespace

std::vector<Finding> detect_throughput_drop(const RunSeries& s, const Thresholds& th) {
  std::vector<Finding> out;
  const auto& ranks = s.train.ranks;
  if (ranks.empty()) return out;
  // The rows with steps as compact columns (train_columns.h, shared with D23, D24, D25).
  const auto cols = train_columns(s);
  bool samples_known = true;
  double first_step = 1e300;
  for (const auto& c : cols->ranks)
    for (std::size_t j = 0; j < c.size(); ++j) {
      samples_known = samples_known && !na(c.samples[j]);
      first_step = std::min(first_step, c.t[j]);
    }
  if (first_step == 1e300) return out;
  std::vector<double> grid = s.t;
  if (grid.empty()) grid = rank_row_times(ranks, false);
  const std::size_t n = grid.size(), R = ranks.size();
  std::vector<double> rate(n, NAN);
  std::vector<std::uint8_t> usable(n, 0);
  std::vector<std::vector<Interval>> idle(R);
  for (std::size_t k = 0; k < R; ++k) idle[k] = idle_intervals(ranks[k]);
  struct Run {
    std::size_t lo = 0, hi = 0, idle = 0;
    double amount = 0;
  };
  std::vector<Run> run(R);
  const double start = first_step + th.throughput_warmup_s;
  for (std::size_t i = 0; i < n; ++i) {
    const double T = grid[i], T0 = T - th.window_s;
    double total = 0;
    bool excluded = T0 < start;
    for (std::size_t k = 0; k < R; ++k) {
      auto& rr = run[k];
      const auto& c = cols->ranks[k];
      const auto& amount = samples_known ? c.samples : c.steps;
      while (rr.hi < c.size() && c.t[rr.hi] <= T + 1e-9) rr.amount += amount[rr.hi++];
      while (rr.lo < rr.hi && c.t[rr.lo] <= T0) rr.amount -= amount[rr.lo++];
      total += std::max(0.0, rr.amount);
      // outside the loop at some point of the window: an evaluation or a checkpoint, not a drop
      auto& iv = idle[k];
      while (rr.idle < iv.size() && iv[rr.idle].t1 <= T0) ++rr.idle;
      if (rr.idle < iv.size() && iv[rr.idle].t0 <= T) excluded = true;
    }
    rate[i] = total / th.window_s;
    usable[i] = !excluded && total > 0;  // no step at all is a stall (D23), not a lower rate
  }
  std::vector<double> steady_v;
  for (std::size_t i = 0; i < n; ++i)
    if (usable[i]) steady_v.push_back(rate[i]);
  if (steady_v.size() < 3) return out;
  const auto steady_it = steady_v.begin() + static_cast<std::ptrdiff_t>(steady_v.size() / 2);
  std::nth_element(steady_v.begin(), steady_it, steady_v.end());
  const double steady = *steady_it;
  if (!(steady > 0)) return out;
  std::vector<std::uint8_t> cond(n, 0);
  for (std::size_t i = 0; i < n; ++i) cond[i] = usable[i] && rate[i] < th.throughput_drop_frac * steady;

  const auto tg = train_gpus(s, th);  // the GPUs the job is known to use, never inferred
  const Word unit = samples_known ? word("samples/s") : word("steps/s");
  for (const auto& ep : episodes(grid, cond, th.throughput_for_s, th.clear_s)) {
    std::vector<double> lv;
    for (std::size_t i = ep.i0; i <= ep.i1; ++i)
      if (cond[i]) lv.push_back(rate[i]);
    const auto level_it = lv.begin() + static_cast<std::ptrdiff_t>(lv.size() / 2);
    std::nth_element(lv.begin(), level_it, lv.end());
    const double level = *level_it;
    const double t0 = grid[ep.i0] - th.window_s, t1 = grid[ep.i1];
    Finding f = make_finding("D26", Severity::warning, t0, t1);
    std::set<unsigned> gpus;
    std::set<std::uint32_t> pids;
    for (const auto& r : ranks) {
      if (r.id.gpu >= 0) gpus.insert(static_cast<unsigned>(r.id.gpu));
      if (r.id.pid) pids.insert(r.id.pid);
    }
    f.gpus.assign(gpus.begin(), gpus.end());
    if (f.gpus.empty()) f.gpus = tg.gpus;
    f.pids.assign(pids.begin(), pids.end());
    put(f.numbers, "rate", level);
    put(f.numbers, "steady_rate", steady);
    put(f.numbers, "level_pct", 100 * level / steady);
    say(f, "{} fell to {} from the run's steady {} ({} %) for {}", unit, num(level, 1), num(steady, 1),
        num(100 * level / steady), dur(t1 - t0));
    // What changed: the data wait, the GPUs' clocks, another process on a job GPU.
    std::vector<Phrase> changes;
    {
      double dd = 0, ds = 0, bd = 0, bs = 0;
      for (const auto& c : cols->ranks) {
        const auto in = rank_window(c, t0, t1);
        const auto before = rank_window(c, start, t0);
        if (in.data_known) {
          dd += in.data_s;
          ds += in.step_s;
        }
        if (before.data_known) {
          bd += before.data_s;
          bs += before.step_s;
        }
      }
      if (ds > 0 && bs > 0) {
        const double now = dd / ds, was = bd / bs;
        put(f.numbers, "data_share_pct", 100 * now);
        put(f.numbers, "data_share_before_pct", 100 * was);
        if (now - was >= 0.1)
          changes.push_back(
              phrase("the data wait rose from {} % to {} % of each step", num(100 * was), num(100 * now)));
      }
    }
    const std::size_t r0 = row_at(s, t0), r1 = s.size() ? std::min(row_at(s, t1), s.size() - 1) : 0;
    if (s.size() > 0 && r0 <= r1) {
      for (auto gi : f.gpus) {
        const auto* g = s.gpu(gi);
        if (!g) continue;
        std::size_t rows = 0, slow = 0;
        for (std::size_t i = r0; i <= r1; ++i) {
          const auto rs = g->clock_reasons[i];
          if (rs == kReasonsNA) continue;
          ++rows;
          slow += (rs & (clock_event::sw_thermal_slowdown | clock_event::hw_thermal_slowdown |
                         clock_event::hw_slowdown | clock_event::hw_power_brake_slowdown)) != 0;
        }
        if (rows && slow * 2 >= rows)
          changes.push_back(phrase("GPU{} slowed down (thermal / hardware slowdown)", gi));
        std::set<std::uint32_t> others;
        for (const auto& p : g->procs)
          if (p.tick >= r0 && p.tick <= r1 && !p.in_job &&
              (na(p.used_mib) || p.used_mib >= th.job_gpu_min_mib))
            others.insert(p.pid);
        for (auto pid : others)
          changes.push_back(phrase("process {} (not the job's) runs on GPU{}", pid, gi));
      }
      const double psi = mean(s.host.psi_mem_some_avg10, r0, r1);
      if (!na(psi) && psi >= th.psi_mem_some_pct)
        changes.push_back(phrase("the host is short of memory (PSI {} %)", num(psi)));
    }
    if (!changes.empty()) {
      Phrase c;
      for (const auto& x : changes) {
        if (!c.empty()) c += phrase("; ");
        c += x;
      }
      say(f, "; meanwhile {}", c);
    }
    f.advice =
        N_("Throughput fell below what this run did before. See the findings overlapping it (related) and "
           "what changed meanwhile; a slowdown that comes back every epoch is the loader restarting its "
           "workers (persistent_workers=True).");
    set_cost(f, 1.0 - level / steady, "measured");
    f.thresholds = {{"throughput_drop_frac", th.throughput_drop_frac},
                    {"throughput_warmup_s", th.throughput_warmup_s},
                    {"throughput_for_s", th.throughput_for_s},
                    {"window_s", th.window_s}};
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace trainmon::diagnose
