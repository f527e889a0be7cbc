// SPDX-License-Identifier: Apache-2.0
// D12 clock-throttle: clocks_event_reasons.active (NVML-NOTES §6.2) names a power, thermal or
// hardware slowdown on a GPU under load (utilisation >= busy_util_pct, GpuIdle bit clear) for
// throttle_for_s. One finding per GPU and cause; evidence adds the clock vs its maximum, the
// temperature vs the slowdown threshold and the growth of the violation counters. Thermal and
// hardware slowdowns are warnings. Holding the power cap under full load is what a busy GPU does:
// it is a finding (info) only when it costs, i.e. the mean SM clock stays under
// throttle_clock_frac of the maximum ("nothing to do" is not a finding).
#include <array>

#include <fmt/format.h>

#include "diagnose/advice.h"
#include "diagnose/detail.h"
#include "trainmon/diagnose/detectors.h"

namespace trainmon::diagnose {
using namespace detail;

std::vector<Finding> detect_throttle(const RunSeries& s, const Thresholds& th) {
  std::vector<Finding> out;
  struct Cause {
    const char* name;
    std::uint64_t mask;
    Severity sev;
    std::vector<float> GpuSeries::*viol;
    std::string_view advice;
  };
  static const std::array<Cause, 3> kCauses{{
      {N_("power cap"), clock_event::sw_power_cap, Severity::info, &GpuSeries::viol_power_s,
       advice::kD12PowerCap},
      {N_("thermal"), clock_event::sw_thermal_slowdown | clock_event::hw_thermal_slowdown, Severity::warning,
       &GpuSeries::viol_thermal_s, advice::kD12Thermal},
      {N_("hardware slowdown"), clock_event::hw_slowdown | clock_event::hw_power_brake_slowdown,
       Severity::warning, &GpuSeries::viol_hw_brake_s, advice::kD12Hardware},
  }};
  const std::size_t n = s.size();
  for (const auto& g : s.gpus) {
    for (const auto& cause : kCauses) {
      std::vector<std::uint8_t> cond(n, 0);
      bool any = false;
      for (std::size_t i = 0; i < n; ++i) {
        const auto r = g.clock_reasons[i];
        if (r == kReasonsNA || (r & clock_event::gpu_idle)) continue;
        const float u = g.util_gpu_pct[i];
        cond[i] = (r & cause.mask) && !na(u) && u >= th.busy_util_pct;
        any = any || cond[i];
      }
      if (!any) continue;
      for (const auto& ep : episodes(s.t, cond, th.throttle_for_s, th.clear_s)) {
        Finding f = make_finding("D12", cause.sev, s.t[ep.i0], s.t[ep.i1]);
        f.gpus = {g.index};
        std::size_t hits = 0, rows = 0;
        for (std::size_t i = ep.i0; i <= ep.i1; ++i) {
          ++rows;
          hits += cond[i];
        }
        const double clk = mean(g.sm_clock_mhz, ep.i0, ep.i1),
                     clk_max = last_of(g.sm_clock_max_mhz, ep.i0, ep.i1);
        const bool below = !na(clk) && !na(clk_max) && clk_max > 0 && clk < th.throttle_clock_frac * clk_max;
        if (cause.sev == Severity::info && !below) continue;  // at the cap with full clocks: healthy
        if (!na(clk) && !na(clk_max) && clk_max > 0 && clk < clk_max)
          set_cost(f, 1.0 - clk / clk_max, "estimated");  // throughput scales at most with the clock
        const double temp = max_of(g.temp_c, ep.i0, ep.i1), slow = last_of(g.temp_slowdown_c, ep.i0, ep.i1);
        const auto& viol = g.*(cause.viol);
        // Cumulative: a drop is a reset of the counter (driver reload), not negative time.
        const double dv = counter_span(viol, ep.i0, ep.i1).increase;
        const double span = s.t[ep.i1] - s.t[ep.i0];
        put(f.numbers, "active_share_pct", 100.0 * static_cast<double>(hits) / static_cast<double>(rows));
        put(f.numbers, "sm_clock_mhz", clk);
        put(f.numbers, "sm_clock_max_mhz", clk_max);
        put(f.numbers, "temp_max_c", temp);
        put(f.numbers, "temp_slowdown_c", slow);
        put(f.numbers, "violation_s", dv);
        put(f.numbers, "reason_mask", static_cast<double>(cause.mask));
        say(f, "GPU{} throttled by {} under load for {} ({} % of samples)", g.index, word(cause.name),
            dur(span), num(100.0 * static_cast<double>(hits) / static_cast<double>(rows)));
        if (!na(clk) && !na(clk_max)) say(f, "; SM clock {} of {} MHz", num(clk), num(clk_max));
        if (!na(temp)) say(f, "; temperature up to {} °C", num(temp));
        if (!na(slow)) say(f, " (slowdown at {} °C)", num(slow));
        if (!na(dv)) say(f, "; violation counter +{} s", num(dv, 1));
        f.advice = cause.advice;
        f.thresholds = {{"throttle_for_s", th.throttle_for_s},
                        {"busy_util_pct", th.busy_util_pct},
                        {"throttle_clock_frac", th.throttle_clock_frac}};
        out.push_back(std::move(f));
      }
    }
  }
  return out;
}

}  // namespace trainmon::diagnose
