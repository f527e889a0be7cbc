// SPDX-License-Identifier: Apache-2.0
// D24 straggler-rank (warning): NVIDIA's relative performance score (nvidia-resiliency-ext straggler
// detection: the best rank is the reference) per rank over windows of straggler_window_s:
//   score = fastest rank's median step time / this rank's median step time,
// and, because in a job that synchronises every step every rank's step lasts as long as the slowest
// one's, also the share of the step a rank spends waiting for data beyond the typical rank's
// (lower median over ranks): score = 1 - that excess / its median step time. A rank whose score
// stays under straggler_score_frac for straggler_for_s is a straggler: the finding names its rank,
// host, GPU, its score, and the likely cause from what else is known of it: its GPU throttled or
// clocked below its maximum, its data wait above the others', its process CPU-bound, another
// process on its GPU. Cost: every step waits for it, so fixing it gives 1 / score.
// With collective timing (protocol v3: each step's wait inside collectives), ranks are also scored on
// their compute per step (step - data wait - collective wait), as nvidia-resiliency-ext scores its
// sections: score = the fastest rank's median compute / its own, under straggler_compute_frac for
// straggler_compute_for_s. In a synchronous job the fast ranks spend the difference waiting in the
// collectives, so the step-time score sees nothing there; the cost is that difference over the step
// (fixing it shortens every rank's step by it).
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "diagnose/advice.h"
#include "diagnose/detectors/train_common.h"
#include "trainmon/diagnose/detectors.h"

namespace trainmon::diagnose {
using namespace detail;

namespace {

struct Score {
  double score = NAN;
  double median_s = NAN;       ///< this rank's median step
  double fastest_s = NAN;      ///< the fastest rank's median step
  double data_excess_s = NAN;  ///< data wait beyond the typical rank's
  bool by_data = false;        ///< the data-wait score was the lower one
  double compute_score = NAN;  ///< fastest compute / this rank's (protocol v3), NaN without comm figures
  double compute_s = NAN;      ///< this rank's median compute per step
  double fastest_compute_s = NAN;
  /// Which test holds in this window (0 none): 1 the step or data-wait score, 2 the compute score.
  [[nodiscard]] int kind(const Thresholds& th) const {
    if (!na(score) && score < th.straggler_score_frac) return 1;
    if (!na(compute_score) && compute_score < th.straggler_compute_frac) return 2;
    return 0;
  }
};

}  // namespace

std::vector<Finding> detect_straggler(const RunSeries& s, const Thresholds& th) {
  std::vector<Finding> out;
  const auto& ranks = s.train.ranks;
  if (ranks.size() < 2) return out;
  double t_lo = 1e300, t_hi = -1e300;
  for (const auto& r : ranks)
    if (!r.rows.empty()) {
      t_lo = std::min(t_lo, r.rows.front().t);
      t_hi = std::max(t_hi, r.rows.back().t);
    }
  if (t_hi < t_lo) return out;
  // Reports every quarter window (nvidia-resiliency-ext reports every report_time_interval).
  const double step = th.straggler_window_s / 4;
  std::vector<double> grid;
  for (double t = t_lo + th.straggler_window_s; t <= t_hi + 1e-9; t += step) grid.push_back(t);
  if (grid.empty()) return out;
  const std::size_t n = grid.size(), R = ranks.size();
  std::vector<std::vector<Score>> sc(R, std::vector<Score>(n));
  // Each rank's window (grid[i] - straggler_window_s, grid[i]] slides forward: its steps and the
  // step-weighted medians of its rows' p50 step time and data wait (rank_window's figures), each row
  // with steps added and removed once.
  struct Slide {
    const RankStepColumns* c = nullptr;  // the rows with steps (train_columns.h, shared with D23, D25, D26)
    std::size_t lo = 0, hi = 0;
    double in_steps = 0;
    std::optional<SlidingWeightedMedian> step_med, data_med, compute_med;
  };
  const auto cols = train_columns(s);
  std::vector<Slide> slide(R);
  for (std::size_t k = 0; k < R; ++k) {
    auto& z = slide[k];
    z.c = &cols->ranks[k];
    z.step_med.emplace(z.c->step_v);  // the values rank_window weighs
    z.data_med.emplace(z.c->data_v);
    z.compute_med.emplace(z.c->compute_v);
  }
  std::vector<double> compute_median(R, NAN);
  std::vector<RankWindow> w(R);
  std::vector<double> data;
  for (std::size_t i = 0; i < n; ++i) {
    double fastest = NAN, fastest_compute = NAN;
    std::size_t with_compute = 0;
    data.clear();
    const double t0 = grid[i] - th.straggler_window_s, t1 = grid[i];
    for (std::size_t k = 0; k < R; ++k) {
      auto& z = slide[k];
      const auto& zt = z.c->t;
      const auto& zs = z.c->steps;
      for (; z.hi < zt.size() && zt[z.hi] <= t1; ++z.hi) {
        z.in_steps += zs[z.hi];
        z.step_med->add(z.hi, zs[z.hi]);
        z.data_med->add(z.hi, zs[z.hi]);
        z.compute_med->add(z.hi, zs[z.hi]);
      }
      for (; z.lo < z.hi && zt[z.lo] <= t0; ++z.lo) {
        z.in_steps -= zs[z.lo];
        z.step_med->add(z.lo, zs[z.lo], -1);
        z.data_med->add(z.lo, zs[z.lo], -1);
        z.compute_med->add(z.lo, zs[z.lo], -1);
      }
      w[k].steps = z.in_steps;
      w[k].step_median_s = z.step_med->median();
      w[k].data_median_s = z.data_med->median();
      compute_median[k] = z.compute_med->median();
      if (w[k].steps < th.straggler_min_steps || na(w[k].step_median_s) || w[k].step_median_s <= 0) continue;
      fastest = na(fastest) ? w[k].step_median_s : std::min(fastest, w[k].step_median_s);
      if (!na(w[k].data_median_s)) data.push_back(w[k].data_median_s);
      if (!na(compute_median[k])) {
        ++with_compute;
        fastest_compute =
            na(fastest_compute) ? compute_median[k] : std::min(fastest_compute, compute_median[k]);
      }
    }
    if (na(fastest)) continue;
    double typical_data = NAN;  // lower median
    if (!data.empty()) {
      const auto mid = data.begin() + static_cast<std::ptrdiff_t>((data.size() - 1) / 2);
      std::nth_element(data.begin(), mid, data.end());
      typical_data = *mid;
    }
    for (std::size_t k = 0; k < R; ++k) {
      if (w[k].steps < th.straggler_min_steps || na(w[k].step_median_s) || w[k].step_median_s <= 0) continue;
      Score x;
      x.median_s = w[k].step_median_s;
      x.fastest_s = fastest;
      x.score = fastest / x.median_s;
      if (!na(typical_data) && !na(w[k].data_median_s) && data.size() >= 2) {
        x.data_excess_s = std::max(0.0, w[k].data_median_s - typical_data);
        const double by_data = 1.0 - x.data_excess_s / x.median_s;
        if (by_data < x.score) {
          x.score = by_data;
          x.by_data = true;
        }
      }
      if (with_compute >= 2 && !na(compute_median[k]) && compute_median[k] > 0) {
        x.compute_s = compute_median[k];
        x.fastest_compute_s = fastest_compute;
        x.compute_score = fastest_compute / compute_median[k];
      }
      sc[k][i] = x;
    }
  }

  for (std::size_t k = 0; k < R; ++k) {
    std::vector<std::uint8_t> cond(n, 0);
    bool timed_comm = false;  // the rank's collective wait is measured: the compute score's hold applies
    for (std::size_t i = 0; i < n; ++i) {
      cond[i] = sc[k][i].kind(th) != 0;
      timed_comm = timed_comm || !na(sc[k][i].compute_score);
    }
    const double hold = timed_comm ? th.straggler_compute_for_s : th.straggler_for_s;
    for (const auto& ep : episodes(grid, cond, hold, th.straggler_window_s)) {
      const auto& id = ranks[k].id;
      // The episode's figures: its windows' medians. A compute straggler when most of its windows
      // hold by the compute score alone.
      std::vector<double> scores, med, fast, excess, cscores, comp, fast_comp;
      bool by_data = false;
      std::size_t by_compute = 0, held = 0;
      for (std::size_t i = ep.i0; i <= ep.i1; ++i) {
        if (!cond[i]) continue;
        ++held;
        by_compute += sc[k][i].kind(th) == 2;
      }
      const bool compute_kind = by_compute * 2 > held;
      for (std::size_t i = ep.i0; i <= ep.i1; ++i) {
        if (!cond[i]) continue;
        if (compute_kind) {
          if (na(sc[k][i].compute_score)) continue;
          cscores.push_back(sc[k][i].compute_score);
          comp.push_back(sc[k][i].compute_s);
          fast_comp.push_back(sc[k][i].fastest_compute_s);
          med.push_back(sc[k][i].median_s);
          continue;
        }
        scores.push_back(sc[k][i].score);
        med.push_back(sc[k][i].median_s);
        fast.push_back(sc[k][i].fastest_s);
        if (!na(sc[k][i].data_excess_s)) excess.push_back(sc[k][i].data_excess_s);
        by_data = by_data || sc[k][i].by_data;
      }
      auto median_of = [](std::vector<double> v) {
        if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
      };
      const double m = median_of(med), fastest = median_of(fast), ex = median_of(excess), c = median_of(comp),
                   fastest_c = median_of(fast_comp);
      const double score = compute_kind ? median_of(cscores) : median_of(scores);
      const double t0 = grid[ep.i0] - th.straggler_window_s, t1 = grid[ep.i1];
      Finding f = make_finding("D24", Severity::warning, std::max(t0, t_lo), t1);
      if (id.gpu >= 0) f.gpus = {static_cast<unsigned>(id.gpu)};
      if (id.pid) f.pids = {id.pid};
      put(f.numbers, "rank", id.rank);
      put(f.numbers, "score", score);
      put(f.numbers, "step_median_s", m);
      put(f.numbers, "fastest_step_median_s", fastest);
      put(f.numbers, "data_excess_s", ex);
      put(f.numbers, "compute_median_s", c);
      put(f.numbers, "fastest_compute_median_s", fastest_c);
      const double slower = 1.0 / score;
      say(f, "{} has a relative performance score of {} (< {}) over {}: ", rank_name(id), num(score, 2),
          num(compute_kind ? th.straggler_compute_frac : th.straggler_score_frac, 2), dur(t1 - f.start_s));
      // The compute straggler's cost: every rank waits for it in the collectives, so fixing it
      // shortens every step by the difference.
      const double wait_share =
          compute_kind && !na(m) && m > 0 ? std::clamp((c - fastest_c) / m, 0.0, 1.0) : NAN;
      if (compute_kind) {
        put(f.numbers, "others_wait_share_pct", 100 * wait_share);
        say(f,
            "its compute takes {} ms a step, the fastest rank's {} ms: it is {}x slower, and the other ranks "
            "wait {} ms of each {}-ms step for it in the collectives",
            num(1e3 * c), num(1e3 * fastest_c), num(slower, 1), num(1e3 * (c - fastest_c)), num(1e3 * m));
      } else if (by_data && !na(ex))
        say(f,
            "every rank's step takes {} ms, but this rank waits {} ms longer for data "
            "than the others, who wait for it in the collective",
            num(1e3 * m), num(1e3 * ex));
      else
        say(f,
            "its median step takes {} ms, the fastest rank's {} ms: it is {}x slower "
            "than the others, and every step waits for it",
            num(1e3 * m), num(1e3 * fastest), num(slower, 1));
      // The likely cause, from what else is known about this rank.
      const std::size_t r0 = row_at(s, f.start_s);
      const std::size_t r1 = s.size() ? std::min(row_at(s, t1), s.size() - 1) : 0;
      std::vector<Phrase> causes;
      std::string advice;
      const GpuSeries* g = id.gpu >= 0 ? s.gpu(static_cast<unsigned>(id.gpu)) : nullptr;
      if (g && s.size() > 0 && r0 <= r1) {
        std::size_t rows = 0, thermal = 0, power = 0, hw = 0;
        for (std::size_t i = r0; i <= r1; ++i) {
          const auto rs = g->clock_reasons[i];
          if (rs == kReasonsNA) continue;
          ++rows;
          thermal += (rs & (clock_event::sw_thermal_slowdown | clock_event::hw_thermal_slowdown)) != 0;
          power += (rs & clock_event::sw_power_cap) != 0;
          hw += (rs & (clock_event::hw_slowdown | clock_event::hw_power_brake_slowdown)) != 0;
        }
        const double clk = mean(g->sm_clock_mhz, r0, r1), clk_max = last_of(g->sm_clock_max_mhz, r0, r1);
        put(f.numbers, "sm_clock_mhz", clk);
        put(f.numbers, "sm_clock_max_mhz", clk_max);
        const Word why = rows && thermal * 2 >= rows ? word("thermal slowdown")
                         : rows && hw * 2 >= rows    ? word("hardware slowdown")
                         : rows && power * 2 >= rows ? word("power cap")
                                                     : Word{};
        if (!why.id.empty() || (!na(clk) && !na(clk_max) && clk < th.throttle_clock_frac * clk_max)) {
          causes.push_back(phrase(
              "its GPU{} is {}{}", g->index,
              !why.id.empty() ? phrase("throttled ({})", why) : phrase("clocked below its maximum"),
              !na(clk) && !na(clk_max) ? phrase(" at {} of {} MHz", num(clk), num(clk_max)) : Phrase{}));
          advice = N_(
              "Cool or power that GPU (airflow, fan curves, PSU cables; `nvidia-smi -q -d PERFORMANCE` shows "
              "why it slows down), or move the job off it.");
        }
        // another process on its GPU
        std::set<std::uint32_t> others;
        for (const auto& p : g->procs)
          if (p.tick >= r0 && p.tick <= r1 && !p.in_job &&
              (na(p.used_mib) || p.used_mib >= th.job_gpu_min_mib))
            others.insert(p.pid);
        if (!others.empty()) {
          std::string list;
          for (auto pid : others) list += (list.empty() ? "" : ", ") + fmt::format("{}", pid);
          causes.push_back(phrase("another process shares its GPU{} (pid {})", g->index, list));
          if (advice.empty())
            advice =
                N_("Another program runs on this rank's GPU: move it (or the job) elsewhere; `trainmon top` "
                   "shows it.");
        }
      }
      if (by_data && !na(ex)) {
        causes.push_back(phrase("its data wait is higher than the other ranks'"));
        if (advice.empty()) advice = diagnose::advice::kD24DataWait;
      }
      const double cpu = id.pid && s.size() > 0 && r0 <= r1 ? proc_cpu(s, id.pid, r0, r1) : NAN;
      put(f.numbers, "process_cpu_pct", cpu);
      if (!na(cpu) && cpu >= th.main_pinned_pct) {
        causes.push_back(phrase("its process is CPU-bound ({} % of one core)", num(cpu)));
        if (advice.empty())
          advice =
              N_("This rank's process uses a full core: it does extra work on the CPU (logging, metrics, "
                 "evaluation, data preparation on rank 0?); move that work off the step or into workers.");
      }
      if (!causes.empty()) {
        Phrase c;
        for (const auto& x : causes) {
          if (!c.empty()) c += phrase("; ");
          c += x;
        }
        say(f, "; likely cause: {}", c);
      }
      if (advice.empty())
        advice = std::string(compute_kind ? diagnose::advice::kD24Compute : diagnose::advice::kD24Straggler);
      f.advice = advice;
      set_cost(f, compute_kind ? wait_share : 1.0 - score, "measured");
      f.thresholds = {{"straggler_score_frac", th.straggler_score_frac},
                      {"straggler_window_s", th.straggler_window_s},
                      {"straggler_for_s", th.straggler_for_s},
                      {"straggler_min_steps", th.straggler_min_steps}};
      if (timed_comm) {
        f.thresholds["straggler_compute_frac"] = th.straggler_compute_frac;
        f.thresholds["straggler_compute_for_s"] = th.straggler_compute_for_s;
      }
      out.push_back(std::move(f));
    }
  }
  return out;
}

}  // namespace trainmon::diagnose
