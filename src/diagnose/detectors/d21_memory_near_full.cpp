// SPDX-License-Identifier: Apache-2.0
// D21 gpu-memory-near-full: memory used (+ driver-reserved) at or above near_full_pct of total for
// near_full_for_s (MISSION §6's 95 % OOM warning), and, at the end of the series, a forecast: with
// at least forecast_min_pct used and a rising linear fit (R^2 >= leak_min_r2) over the last
// forecast_window_s that reaches full within forecast_horizon_s.
#include <fmt/format.h>

#include "diagnose/advice.h"
#include "diagnose/detail.h"
#include "trainmon/diagnose/detectors.h"

namespace trainmon::diagnose {
using namespace detail;

std::vector<Finding> detect_memory_near_full(const RunSeries& s, const Thresholds& th) {
  std::vector<Finding> out;
  const std::size_t n = s.size();
  if (n == 0) return out;
  for (const auto& g : s.gpus) {
    std::vector<float> used(n, kNA);
    std::vector<std::uint8_t> cond(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
      if (na(g.mem_used_mib[i])) continue;
      used[i] = g.mem_used_mib[i] + (na(g.mem_reserved_mib[i]) ? 0.f : g.mem_reserved_mib[i]);
      const float total = g.mem_total_mib[i];
      cond[i] = !na(total) && total > 0 && 100.0 * used[i] / total >= th.near_full_pct;
    }
    const double total = last_of(g.mem_total_mib, 0, n - 1);
    for (const auto& ep : episodes(s.t, cond, th.near_full_for_s, th.clear_s)) {
      Finding f = make_finding("D21", Severity::warning, s.t[ep.i0], s.t[ep.i1]);
      f.gpus = {g.index};
      const double peak = max_of(used, ep.i0, ep.i1);
      put(f.numbers, "peak_used_mib", peak);
      put(f.numbers, "total_mib", total);
      say(f, "GPU{} memory at {} % ({} of {} MiB) for {} (>= {} %)", g.index, num(100.0 * peak / total),
          num(peak), num(total), dur(s.t[ep.i1] - s.t[ep.i0]), num(th.near_full_pct));
      f.advice = advice::kD21NearFull;
      f.thresholds = {{"near_full_pct", th.near_full_pct}, {"near_full_for_s", th.near_full_for_s}};
      out.push_back(std::move(f));
    }
    // forecast over the last window
    const std::size_t a = row_at(s, s.t[n - 1] - th.forecast_window_s);
    const double now = last_of(used, a, n - 1);
    if (na(now) || na(total) || total <= 0 || 100.0 * now / total < th.forecast_min_pct ||
        100.0 * now / total >= th.near_full_pct || s.t[n - 1] - s.t[a] < 0.5 * th.forecast_window_s)
      continue;
    const auto fit = fit_column(s.t, used, a, n - 1);
    if (!fit.ok() || fit.slope <= 0 || fit.r2 < th.leak_min_r2) continue;
    const double eta = (total - now) / fit.slope;
    if (eta > th.forecast_horizon_s) continue;
    Finding f = make_finding("D21", Severity::warning, s.t[a], s.t[n - 1]);
    f.gpus = {g.index};
    put(f.numbers, "used_mib", now);
    put(f.numbers, "total_mib", total);
    put(f.numbers, "slope_mib_per_h", fit.slope * 3600);
    put(f.numbers, "eta_s", eta);
    say(f, "GPU{} memory at {} % and rising {} MiB/h (R² {}): full in about {}", g.index,
        num(100.0 * now / total), num(fit.slope * 3600), num(fit.r2, 2), dur(eta));
    f.advice = N_("Memory will run out at this rate: find what grows (D5), lower the batch or enable AMP.");
    f.thresholds = {{"forecast_min_pct", th.forecast_min_pct},
                    {"forecast_window_s", th.forecast_window_s},
                    {"forecast_horizon_s", th.forecast_horizon_s},
                    {"leak_min_r2", th.leak_min_r2}};
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace trainmon::diagnose
