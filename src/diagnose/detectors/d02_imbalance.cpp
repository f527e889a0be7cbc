// SPDX-License-Identifier: Apache-2.0
// D2 ddp-imbalance: in a multi-GPU job every GPU holds the job, yet their mean utilisations differ
// by more than imbalance_spread_pct while the busiest is at least imbalance_high_pct (MISSION §4 D2).
// GPUs the job does not hold at all are D8's case, not this one. In a synchronous job the slow GPU is
// often the busiest one and the others wait for it: when the busiest GPU is throttled (thermal,
// hardware slowdown or power cap reasons on at least half of the rows) or clocked below
// throttle_clock_frac of its maximum, the finding names it as the straggler and advises on that GPU,
// not on the data loader. Rows the training loop's own timing covers are D24's (the measured
// straggler score), so they are left out here: one problem, one finding.
#include <algorithm>

#include <fmt/format.h>

#include "diagnose/advice.h"
#include "diagnose/detail.h"
#include "diagnose/detectors/train_common.h"
#include "trainmon/diagnose/detectors.h"

namespace trainmon::diagnose {
using namespace detail;

std::vector<Finding> detect_imbalance(const RunSeries& s, const Thresholds& th) {
  const ProcPresence presence = proc_presence(s);
  std::vector<Finding> out;
  const auto jg = job_gpus(s, th);
  if (jg.size() < 2) return out;
  std::vector<const GpuSeries*> gs;
  std::vector<std::vector<float>> roll;
  std::vector<GpuUse> use;
  for (auto idx : jg) {
    const auto* g = s.gpu(idx);
    if (!g) return out;
    gs.push_back(g);
    roll.push_back(rolling_mean(s.t, g->util_gpu_pct, th.window_s));
    use.push_back(gpu_use(s, *g, th, presence));
  }
  const std::size_t n = s.size();
  std::vector<std::uint8_t> cond(n, 0);
  const auto timed = timed_rows(s, th.window_s);
  for (std::size_t i = 0; i < n; ++i) {
    if (timed[i]) continue;
    float lo = 1e9f, hi = -1e9f;
    bool ok = true;
    for (std::size_t k = 0; k < gs.size() && ok; ++k) {
      if (na(roll[k][i]) || !use[k].used[i])
        ok = false;
      else {
        lo = std::min(lo, roll[k][i]);
        hi = std::max(hi, roll[k][i]);
      }
    }
    cond[i] = ok && hi >= th.imbalance_high_pct && hi - lo > th.imbalance_spread_pct;
  }
  for (const auto& ep : episodes(s.t, cond, th.imbalance_for_s, th.clear_s)) {
    Finding f = make_finding("D2", Severity::warning, s.t[ep.i0], s.t[ep.i1]);
    std::size_t khi = 0, klo = 0;
    std::vector<double> means;
    for (std::size_t k = 0; k < gs.size(); ++k) {
      means.push_back(mean(gs[k]->util_gpu_pct, ep.i0, ep.i1));
      put(f.numbers, fmt::format("gpu{}_mean_util_pct", gs[k]->index), means.back());
      if (means[k] > means[khi]) khi = k;
      if (means[k] < means[klo]) klo = k;
      f.gpus.push_back(gs[k]->index);
    }
    const double spread = means[khi] - means[klo];
    put(f.numbers, "spread_pct", spread);
    const double main_cpu = mean(s.job.main_cpu_pct, ep.i0, ep.i1);
    put(f.numbers, "main_cpu_pct", main_cpu);
    say(f, "GPU{} mean {} % over {} while GPU{} {} %; spread {} points > {}", gs[klo]->index, num(means[klo]),
        dur(s.t[ep.i1] - s.t[ep.i0]), gs[khi]->index, num(means[khi]), num(spread),
        num(th.imbalance_spread_pct));
    if (!na(main_cpu)) say(f, "; main process at {} % CPU (100 % = one core)", num(main_cpu));
    // Is the busiest GPU the straggler? Its clock event reasons and its clock against its maximum.
    const GpuSeries& busy = *gs[khi];
    std::size_t rows = 0, thermal = 0, hw = 0, power = 0;
    for (std::size_t i = ep.i0; i <= ep.i1; ++i) {
      const auto r = busy.clock_reasons[i];
      if (r == kReasonsNA) continue;
      ++rows;
      thermal += (r & (clock_event::sw_thermal_slowdown | clock_event::hw_thermal_slowdown)) != 0;
      hw += (r & (clock_event::hw_slowdown | clock_event::hw_power_brake_slowdown)) != 0;
      power += (r & clock_event::sw_power_cap) != 0;
    }
    const double clk = mean(busy.sm_clock_mhz, ep.i0, ep.i1),
                 clk_max = last_of(busy.sm_clock_max_mhz, ep.i0, ep.i1);
    const bool low_clock = !na(clk) && !na(clk_max) && clk_max > 0 && clk < th.throttle_clock_frac * clk_max;
    const Word why = rows && thermal * 2 >= rows              ? word("thermal slowdown")
                     : rows && hw * 2 >= rows                 ? word("hardware slowdown")
                     : rows && power * 2 >= rows && low_clock ? word("power cap")
                                                              : Word{};
    if (!why.id.empty() || low_clock) {
      put(f.numbers, "straggler_gpu", busy.index);
      put(f.numbers, "sm_clock_mhz", clk);
      put(f.numbers, "sm_clock_max_mhz", clk_max);
      say(f, "; GPU{} is the busiest because it is the slowest: {}{}, and the others wait for it every step",
          busy.index, !why.id.empty() ? phrase("throttled ({})", why) : phrase("clocked below its maximum"),
          !na(clk) && !na(clk_max) ? phrase(" at {} of {} MHz", num(clk), num(clk_max)) : Phrase{});
      advise(f, advice::kD2Straggler, busy.index);
      // The job runs at the straggler's clock: fixing it gives at most max / now (estimated).
      if (!na(clk) && !na(clk_max) && clk > 0 && clk < clk_max) set_cost(f, 1.0 - clk / clk_max, "estimated");
    } else {
      f.advice = std::string(advice::kD2Imbalance);
      // The GPUs below the busiest one wait: the share of GPU time lost (estimated).
      double sum = 0;
      for (double m : means) sum += m;
      if (means[khi] > 0)
        set_cost(f, 1.0 - sum / static_cast<double>(means.size()) / means[khi], "estimated");
    }
    f.thresholds = {{"imbalance_spread_pct", th.imbalance_spread_pct},
                    {"imbalance_high_pct", th.imbalance_high_pct},
                    {"imbalance_for_s", th.imbalance_for_s},
                    {"throttle_clock_frac", th.throttle_clock_frac},
                    {"window_s", th.window_s}};
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace trainmon::diagnose
